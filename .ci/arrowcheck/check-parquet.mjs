// check-parquet.mjs — read simtrain's Parquet files with DuckDB.
//
// Usage: node check-parquet.mjs MANIFEST.json
//
// MANIFEST.json is a JSON array of entries
//   {"path": "run/summary.parquet", "arrow": "run/summary.arrow",
//    "columns": ["run_id", ...], "rows": 1}
// with paths relative to the manifest's directory. Each Parquet file is
// opened with DuckDB (@duckdb/node-api: DuckDB's own Parquet reader, sharing
// no code with the Go writer): its column names and row count must match the
// manifest, its key-value metadata must hold schema_version, and every value
// of every row must equal the value apache-arrow decodes from the Arrow file
// of the same table (compared as text: integers, floats, booleans and
// strings print alike in both). One line per file; exit status 0 only if
// every file passes, 1 if any fails, 2 on a usage error.

import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { tableFromIPC } from 'apache-arrow';
import { DuckDBInstance } from '@duckdb/node-api';

const args = process.argv.slice(2);
if (args.length !== 1) {
  console.error('usage: node check-parquet.mjs MANIFEST.json');
  process.exit(2);
}
const manifest = JSON.parse(readFileSync(args[0], 'utf8'));
const base = dirname(args[0]);
const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
const sql = (s) => s.replaceAll("'", "''");
const text = (v) => (v === null || v === undefined ? 'null' : String(v));

let failed = 0;
for (const e of manifest) {
  const path = resolve(base, e.path);
  const problems = [];
  try {
    const desc = (await con.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${sql(path)}')`)).getRows();
    const names = desc.map((r) => r[0]);
    if (JSON.stringify(names) !== JSON.stringify(e.columns)) {
      problems.push(`columns ${JSON.stringify(names)}, want ${JSON.stringify(e.columns)}`);
    }
    const rows = (await con.runAndReadAll(`SELECT * FROM read_parquet('${sql(path)}')`)).getRows();
    if (rows.length !== e.rows) problems.push(`${rows.length} rows, want ${e.rows}`);
    const kv = (await con.runAndReadAll(`SELECT decode(key) FROM parquet_kv_metadata('${sql(path)}')`)).getRows().map((r) => r[0]);
    if (!kv.includes('schema_version')) problems.push('key-value metadata has no schema_version');
    const table = tableFromIPC(readFileSync(resolve(base, e.arrow)));
    let diffs = 0;
    let first = '';
    for (let c = 0; c < names.length && c < table.numCols; c++) {
      const col = table.getChildAt(c);
      for (let r = 0; r < rows.length && r < table.numRows; r++) {
        const a = text(col.get(r));
        const d = text(rows[r][c]);
        if (a !== d) {
          diffs++;
          if (!first) first = `row ${r} column ${names[c]}: DuckDB ${d}, Arrow ${a}`;
        }
      }
    }
    if (diffs > 0) problems.push(`${diffs} values differ from the Arrow file (first: ${first})`);
    if (problems.length === 0) console.log(`ok   ${e.path}: rows=${rows.length} columns=${names.length}, every value equals ${e.arrow}'s`);
  } catch (err) {
    problems.push(`cannot read: ${err.message}`);
  }
  if (problems.length > 0) {
    failed++;
    console.log(`FAIL ${e.path}: ${problems.join('; ')}`);
  }
}
process.exit(failed > 0 ? 1 : 0);
