package output

// SchemaVersion is stored as "schema_version" in every file's metadata; bump
// it on any change to a column's name, type or meaning.
const SchemaVersion = "2"

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
	Bytes      float64 `arrow:"bytes"`
	Group      string  `arrow:"group,dict"` // dictionary-encoded (TimelineDicts.Group): "", tp, cp, ep, dp, pp
}

// TimelineDicts fixes the dictionaries of the dictionary-encoded columns
// before the first batch (the IPC file format allows one per column). Each
// list must hold every value the rows use (including "" where rows use it),
// without duplicates; the order given is the dictionary order.
type TimelineDicts struct {
	Stream, Kind, Group []string
}
