// Package output writes simtrain's results and reads them back.
//
// # Files
//
// Tables are Arrow IPC files in the file format (Feather v2, ".arrow"), written
// uncompressed with github.com/apache/arrow-go/v18: the Arrow JavaScript reader
// cannot decode compressed IPC buffers and polars can memory-map only
// uncompressed files (go-notes.md §1a, "Interop and schema advice"). Parquet
// with zstd is available for archives through [WriteParquet].
//
// A table's schema comes from a Go struct: every field tagged `arrow:"name"`
// is one column, in field order. Supported field types and their Arrow types:
//
//	int, int64 → int64      int32 → int32      uint64 → uint64
//	float64    → float64    bool  → bool       string → utf8
//	*T for any of these     → the same type, nullable (nil is null)
//
// A string field tagged `arrow:"name,dict"` becomes dictionary<int16, utf8>
// (dictionary<int32, utf8> when it has more than 32,767 distinct values).
// The IPC file format allows one dictionary per column for the whole file
// (a second, different dictionary fails with "Dictionary replacement detected"),
// so the dictionary is fixed before the first batch: [WriteTable] uses the
// sorted distinct values of the column, [TimelineWriter] the lists in
// [TimelineDicts]. Every batch then carries the very same dictionary.
//
// Batches hold at most [BatchRows] rows (64Ki), the lower end of the
// 64k–1M rows per batch that notebook readers handle well.
//
// Every file's schema metadata holds "schema_version" = [SchemaVersion] plus
// the caller's keys (written in sorted key order, so equal inputs give
// byte-identical files).
//
// # Atomic writes
//
// A file is written to "PATH.tmp-PID-N" in the same directory, flushed,
// fsync'ed, closed and renamed over PATH; the directory is then fsync'ed. On
// any error the temporary file is removed and PATH is left as it was (absent,
// or the previous complete file). A killed process can leave only a stale
// ".tmp-" file, never a truncated PATH: an IPC file without its footer is
// unreadable, so this matters.
//
// # Traces
//
// [WriteTrace] and [TraceWriter] write the Chrome Trace Event Format (JSON
// object form) that ui.perfetto.dev and chrome://tracing open: one process per
// node, one thread per (rank, stream), one complete ("X") event per timeline
// row with ts and dur in microseconds. Times are integer nanoseconds in the
// simulator, so they are printed exactly as fixed-point microseconds with
// three decimals (1234567 ns → 1234.567). Perfetto's JSON importer requires
// the slices on one track to nest; simtrain's rows on one (rank, stream)
// never overlap at all, because a stream runs its ops one after another.
// [CheckNoOverlap] verifies that assumption on a set of rows.
package output
