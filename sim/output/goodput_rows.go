package output

// GoodputRow is one simulated interruption of one Monte Carlo trial of a
// whole training run (goodput.arrow, written by simtrain goodput). Times are
// integer nanoseconds of wall time from the start of the run.
type GoodputRow struct {
	Trial int32 `arrow:"trial"`
	Seq   int32 `arrow:"seq"` // order within the trial
	AtNs  int64 `arrow:"at_ns"`
	// Kind is "unplanned" (a failure) or "planned" (maintenance).
	Kind string `arrow:"kind,dict"`
	// Cause is the failed component class (gpu, hbm, software, network,
	// nic, host) or "maintenance".
	Cause         string `arrow:"cause,dict"`
	DuringRestart bool   `arrow:"during_restart"`
	LostWorkNs    int64  `arrow:"lost_work_ns"` // training time rolled back
	RestartNs     int64  `arrow:"restart_ns"`   // the restart it starts (a later failure may cut it)
	SpareWaitNs   int64  `arrow:"spare_wait_ns"`
}

// GoodputSummaryRow is the whole-run goodput of one sweep point whose
// scenario has a goodput block (goodput-summary.arrow next to the sweep's
// summary.arrow, joined on run_id by simtrain best).
type GoodputSummaryRow struct {
	RunID string `arrow:"run_id"`
	Name  string `arrow:"name"`
	// EffectiveTrainingFraction is the long-run useful share of wall time;
	// GoodputTokensPerS is tokens_per_s × that.
	EffectiveTrainingFraction float64 `arrow:"effective_training_fraction"`
	GoodputTokensPerS         float64 `arrow:"goodput_tokens_per_s"`
	FailuresPerDay            float64 `arrow:"failures_per_day"`
	CheckpointBytes           int64   `arrow:"checkpoint_bytes"`
	CheckpointWriteS          float64 `arrow:"checkpoint_write_s"`
	CheckpointStallS          float64 `arrow:"checkpoint_stall_s"`    // what a step waits for at each checkpoint
	CheckpointIntervalS       float64 `arrow:"checkpoint_interval_s"` // training time between checkpoints; 0 when nothing fails
	RestartS                  float64 `arrow:"restart_s"`
	SpareNodes                int64   `arrow:"spare_nodes"`
}
