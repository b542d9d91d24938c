// Package parquet reads and writes flat Parquet files: the subset of the
// format (apache/parquet-format, parquet.thrift and Encodings.md) that
// simtrain's tables need, with no dependency beyond zstd and lz4.
//
// The writer stores one row group per call, one data page (v1) per column
// chunk, zstd-compressed: numbers and booleans PLAIN, strings either PLAIN
// or dictionary-encoded (a PLAIN dictionary page and RLE_DICTIONARY
// indices), definition levels of optional columns in the RLE/bit-packed
// hybrid. The footer carries the logical types (STRING, INTEGER) and the
// legacy converted types, so DuckDB, pyarrow, polars and Spark read the
// same column types.
//
// The reader accepts what common writers produce for flat tables: data
// pages v1 and v2; PLAIN, PLAIN_DICTIONARY, RLE_DICTIONARY and (booleans)
// RLE values; uncompressed, Snappy, gzip, zstd and LZ4_RAW pages. Nested
// columns, other encodings and codecs are errors that name them. Every
// length and offset read from a file is bounds checked: a damaged file is
// an error, never a panic.
//
// It replaces arrow-go's parquet packages, which pull Arrow's compute
// kernels, Apache Thrift (and with it net/http and crypto/tls), Brotli and
// about 90 packages in all into a cold build (issue 18).
package parquet
