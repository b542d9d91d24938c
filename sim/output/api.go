// Package output writes simtrain's results: Arrow IPC files (uncompressed,
// Feather v2) that pandas/polars/DuckDB open, and Chrome/Perfetto traces.
// Every file is written to a temporary name and renamed, so a killed run
// never leaves half a file.
//
// API CONTRACT (stubs written before implementation; relied on by the CLI).
package output

// SchemaVersion is stored as "schema_version" in every file's metadata; bump
// it on any change to a column's name, type or meaning.
const SchemaVersion = "1"

// TimelineRow is one executed task on one rank.
type TimelineRow struct {
	Step       int32
	Rank       int32
	Node       int32
	Stream     string // dictionary-encoded (TimelineDicts.Stream)
	Kind       string // dictionary-encoded (TimelineDicts.Kind)
	Name       string // plain string
	Layer      int32  // -1 when not a layer op
	Microbatch int32  // -1 when not per micro-batch
	Chunk      int32  // virtual pipeline chunk, -1 when none
	StartNs    int64
	EndNs      int64
	FLOPs      float64
	Bytes      float64
	Group      string // dictionary-encoded (TimelineDicts.Group): "", tp, cp, ep, dp, pp
}

// TimelineDicts fixes the dictionaries of the dictionary-encoded columns
// before the first batch (the IPC file format allows one per column).
type TimelineDicts struct {
	Stream, Kind, Group []string
}
