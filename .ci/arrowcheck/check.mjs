// check.mjs — read simtrain's Arrow IPC files with an independent reader.
//
// Usage: node check.mjs [--expect-fail] MANIFEST.json
//
// MANIFEST.json is a JSON array of entries
//   {"path": "summary.arrow", "columns": ["run_id", ...], "rows": 1}
// where path is relative to the manifest's directory (or absolute), columns
// are the expected column names in order, and rows is the expected row count
// (-1 means "at least one row").
//
// Each file is opened with apache-arrow's tableFromIPC (the JavaScript
// implementation, sharing no code with the Go writer), its column names and
// row count are compared with the manifest, every value of every column is
// decoded (so a bad buffer, offset or dictionary index fails here rather than
// in a user's notebook), the schema metadata must hold schema_version, and
// the column types follow results/README.md's one-integer-type rule: index
// columns (rank, node, stage, step, …) are int32 and byte counts (bytes,
// *_bytes) are int64.
// One line is printed per file; the exit status is 0 only if every file
// passes, 1 if any fails, 2 on a usage or manifest error. With --expect-fail
// (for a manifest of deliberately damaged files, which tests the checker
// itself) the exit status is 0 only if every file fails.

import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { tableFromIPC, Type } from 'apache-arrow';

function usage(msg) {
  console.error(`check.mjs: ${msg}\nusage: node check.mjs [--expect-fail] MANIFEST.json`);
  process.exit(2);
}

const args = process.argv.slice(2);
const expectFail = args[0] === '--expect-fail';
if (expectFail) args.shift();
if (args.length !== 1 || args[0].startsWith('--')) usage('want one manifest path, optionally after --expect-fail');
const manifestPath = args[0];

let manifest;
try {
  manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
} catch (e) {
  usage(`cannot read manifest ${manifestPath}: ${e.message}`);
}
if (!Array.isArray(manifest) || manifest.length === 0) usage(`${manifestPath}: want a non-empty JSON array`);
manifest.forEach((e, i) => {
  if (typeof e?.path !== 'string' || !Array.isArray(e.columns) || !Number.isInteger(e.rows) || e.rows < -1) {
    usage(`${manifestPath} entry ${i}: want {path: string, columns: [string...], rows: integer ≥ -1}`);
  }
});

// checkValues decodes every value of one column and returns how many valid
// (non-null) positions decoded to nothing.
function checkValues(col) {
  let bad = 0;
  for (let r = 0; r < col.length; r++) {
    const v = col.get(r);
    if (col.isValid(r) && (v === undefined || v === null)) bad++;
  }
  return bad;
}

// indexColumns are the columns results/README.md types int32.
const indexColumns = new Set(['rank', 'node', 'stage', 'step', 'layer', 'microbatch', 'chunk', 'link', 'slowest_rank', 'trial', 'seq']);

// typeProblems checks the one-integer-type rule on a schema's fields.
function typeProblems(fields) {
  const out = [];
  const isInt = (t, bits) => t.typeId === Type.Int && t.bitWidth === bits && t.isSigned;
  for (const f of fields) {
    if (indexColumns.has(f.name) && !isInt(f.type, 32)) out.push(`column ${f.name} is ${f.type}, want Int32 (an index)`);
    if ((f.name === 'bytes' || f.name.endsWith('_bytes')) && !isInt(f.type, 64)) out.push(`column ${f.name} is ${f.type}, want Int64 (a byte count)`);
  }
  return out;
}

let failed = 0;
for (const entry of manifest) {
  const path = resolve(dirname(manifestPath), entry.path);
  const problems = [];
  let summary = '';
  try {
    const table = tableFromIPC(readFileSync(path));
    const names = table.schema.fields.map((f) => f.name);
    if (JSON.stringify(names) !== JSON.stringify(entry.columns)) {
      problems.push(`columns ${JSON.stringify(names)}, want ${JSON.stringify(entry.columns)}`);
    }
    if (entry.rows === -1 ? table.numRows < 1 : table.numRows !== entry.rows) {
      problems.push(`${table.numRows} rows, want ${entry.rows === -1 ? 'at least 1' : entry.rows}`);
    }
    for (let i = 0; i < table.numCols; i++) {
      const bad = checkValues(table.getChildAt(i));
      if (bad > 0) problems.push(`column ${names[i]}: ${bad} valid values did not decode`);
    }
    problems.push(...typeProblems(table.schema.fields));
    const version = table.schema.metadata.get('schema_version');
    if (!version) problems.push('schema metadata has no schema_version');
    summary = `rows=${table.numRows} columns=${table.numCols} batches=${table.batches.length} schema_version=${version}`;
  } catch (e) {
    problems.push(`cannot read: ${e.message}`);
  }
  if (problems.length > 0) {
    failed++;
    console.log(`FAIL ${entry.path}: ${problems.join('; ')}`);
  } else {
    console.log(`ok   ${entry.path}: ${summary}`);
  }
}
if (expectFail) {
  const passed = manifest.length - failed;
  if (passed > 0) console.log(`--expect-fail: ${passed} damaged file(s) passed the check`);
  process.exit(passed > 0 ? 1 : 0);
}
process.exit(failed > 0 ? 1 : 0);
