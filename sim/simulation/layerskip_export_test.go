package simulation

import "github.com/simtrain/simtrain/sim/parallel"

// ExecOf is r's executor (nil after KeepFiguresOnly): the layer-skip test
// reads every task's times from it.
func ExecOf(r *Result) *parallel.Executor { return r.exec }
