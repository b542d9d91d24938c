// duckdb-gen.mjs — writes the duckdb-*.parquet fixtures of sim/output's
// TestParquetFromDuckDB: one 300-row table in every codec DuckDB offers and
// in both Parquet versions (v2 pages use DELTA_BINARY_PACKED,
// DELTA_LENGTH_BYTE_ARRAY and BYTE_STREAM_SPLIT).
// Usage (with .ci/arrowcheck's node_modules): ROWS=300 node duckdb-gen.mjs DIR
import { DuckDBInstance } from '@duckdb/node-api';
const out = process.argv[2];
const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
await con.run(`CREATE TABLE t AS SELECT
  i::BIGINT AS i64,
  (i * 7 - 20)::INTEGER AS i32,
  CASE WHEN i % 4 = 0 THEN NULL ELSE (i::BIGINT * 1000000007) END AS opt_i64,
  (i / 8.0)::DOUBLE AS f64,
  (i / 4.0)::FLOAT AS f32,
  CASE WHEN i % 5 = 0 THEN NULL ELSE i % 3 = 0 END AS b,
  CASE WHEN i % 6 = 0 THEN NULL ELSE 'kind-' || (i % 4)::VARCHAR END AS s,
  'row ' || i::VARCHAR AS u,
  (i % 2)::UBIGINT AS u64
FROM range(${process.env.ROWS}) r(i)`);
for (const [name, opts] of [
  ['duckdb-snappy-v1', "COMPRESSION snappy"],
  ['duckdb-zstd-v1', "COMPRESSION zstd, ROW_GROUP_SIZE 1000"],
  ['duckdb-gzip-v1', "COMPRESSION gzip"],
  ['duckdb-none-v1', "COMPRESSION uncompressed"],
  ['duckdb-lz4raw-v1', "COMPRESSION lz4_raw"],
  ['duckdb-zstd-v2', "COMPRESSION zstd, PARQUET_VERSION v2"],
  ['duckdb-snappy-v2', "COMPRESSION snappy, PARQUET_VERSION v2"],
]) {
  await con.run(`COPY t TO '${out}/${name}.parquet' (FORMAT parquet, ${opts})`);
  const md = (await con.runAndReadAll(`SELECT DISTINCT path_in_schema, type, encodings, compression FROM parquet_metadata('${out}/${name}.parquet') ORDER BY 1`)).getRows();
  console.log(name, JSON.stringify(md.map(r => [r[0], r[2], r[3]].join(' '))));
}
