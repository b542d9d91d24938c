package output

// Schema metadata keys. Every file has MetaSchemaVersion (set by this
// package); the others are written by the caller (simtrain run) and
// documented in results/README.md. Use these names so that the files and the
// documentation agree.
const (
	MetaSchemaVersion = "schema_version" // SchemaVersion of the file's columns
	MetaRunID         = "run_id"         // UUIDv5 of the canonical scenario bytes
	MetaScenario      = "scenario"       // scenario name
	MetaFidelity      = "fidelity"       // analytic | flow
	MetaConfig        = "config"         // the canonical scenario as JSON
	MetaRanks         = "ranks"          // timeline and trace: the ranks the file holds, e.g. "0-7,64-71"
	MetaSymmetric     = "symmetric"      // timeline: "true" when the run exploited symmetry between ranks
)
