package output

// SchemaVersion is stored as "schema_version" in every file's metadata; bump
// it on any change to a column's name, type or meaning. One version covers
// every table, so that a run or sweep directory is read by one rule.
//
// Version 3 (issue 21): one integer type per concept. Indices (rank, node,
// stage, step, micro-batch, layer, chunk, link, trial) are int32: a 16,384-GPU
// cluster is far inside its range and a timeline of millions of rows stays
// small. Counts and sizes (layers, GPUs, parallel degrees, events, bytes)
// and integer nanoseconds are int64. Byte counts are int64 whole bytes
// (rounded from the model's float64), no longer fractional float64. FLOP
// counts stay float64: a step of a large run passes 9.2e18, the int64 limit.
// Version 2 files whose columns changed are refused with
// [SchemaVersionError].
const SchemaVersion = "3"

// TimelineRow is one executed task on one rank (one row of timeline.arrow).
// The arrow tags give the column names; [TimelineWriter] writes the same
// schema as [WriteTable] would, with the dictionaries from [TimelineDicts].
type TimelineRow struct {
	Step       int32   `arrow:"step"`
	Rank       int32   `arrow:"rank"`
	Node       int32   `arrow:"node"`
	Stream     string  `arrow:"stream,dict"` // dictionary-encoded (TimelineDicts.Stream)
	Kind       string  `arrow:"kind,dict"`   // dictionary-encoded (TimelineDicts.Kind)
	Name       string  `arrow:"name"`        // plain string
	Layer      int32   `arrow:"layer"`       // -1 when not a layer op
	Microbatch int32   `arrow:"microbatch"`  // -1 when not per micro-batch
	Chunk      int32   `arrow:"chunk"`       // virtual pipeline chunk, -1 when none
	StartNs    int64   `arrow:"start_ns"`
	EndNs      int64   `arrow:"end_ns"`
	FLOPs      float64 `arrow:"flops"`
	Bytes      int64   `arrow:"bytes"`
	Group      string  `arrow:"group,dict"` // dictionary-encoded (TimelineDicts.Group): "", tp, cp, ep, dp, pp
}

// TimelineDicts fixes the dictionaries of the dictionary-encoded columns
// before the first batch (the IPC file format allows one per column). Each
// list must hold every value the rows use (including "" where rows use it),
// without duplicates; the order given is the dictionary order.
type TimelineDicts struct {
	Stream, Kind, Group []string
}
