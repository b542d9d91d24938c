package simulation

// TwinFigures is r's figures alone, for comparing a run that took a twin's
// play with one that played: no tasks and no pointers to what a run builds
// for itself (scenario, cluster, layout, fabric), no wall time, and
// nothing of how the figures were found (tasks played, TwinPlay).
func TwinFigures(r *Result) Result {
	c := *r
	c.KeepFiguresOnly()
	c.Scenario, c.Cluster, c.Layout, c.fabric = nil, nil, nil, nil
	c.SimWallS = 0
	c.PlayedTasks, c.FailedTasks, c.ResumedTasks, c.TwinPlay = 0, 0, 0, false
	return c
}

// CutInPlay says a RuledOut result was given up in its play, not its build.
func CutInPlay(r *Result) bool { return r.cutInPlay }
