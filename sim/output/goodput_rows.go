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
