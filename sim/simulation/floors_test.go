package simulation

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/units"
	"github.com/simtrain/simtrain/sim/workload"
)

// TestCommFloorsBelowPlay holds the floors the pipeline bound counts the
// collectives at in a flow-fidelity play (commFloors) to what the play
// does, on every bundled, validation and holdout scenario of up to 64
// GPUs played at flow fidelity: every collective of every rank lasts at
// least its floor, from its start to its end; the pipeline bound with the
// floors is at most the step's end and at least the bound without them;
// and the floors raise it on most scenarios, so they count. The same for
// each stage's tail (parallel.TailBound, the chain RunBefore's bound
// follows in the play): at most the step's end, at least the stage's
// compute, and over it on most stages.
func TestCommFloorsBelowPlay(t *testing.T) {
	ctx := context.Background()
	var files []string
	for _, f := range scenarioFiles(t) {
		if s, ok := playable(t, f); ok && s.GPUs() <= 64 && s.Sim.Steps == 1 {
			files = append(files, f)
		}
	}
	if testing.Short() && len(files) > 8 {
		files = files[:8]
	}
	tighter, collectives := 0, 0
	stages, tailTighter := 0, 0 // stage programs, and those whose tail is over their compute
	for _, f := range files {
		name := filepath.Base(f)
		s, err := scenario.Load(f, scenario.Overrides("sim.fidelity", "flow")...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		res, err := Run(ctx, s, Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		floors := newPricer(s, res.Cluster, res.Layout, workload.Device{}).commFloors()
		x := res.exec
		var start, end []engine.Time
		stepEnd := engine.Time(0)
		for i := 0; i < x.Instances(); i++ {
			_, _, prog := x.Place(i)
			start, end, _ = x.Times(i, start[:0], end[:0], nil)
			for k := range prog.Tasks {
				task := &prog.Tasks[k]
				stepEnd = max(stepEnd, end[k])
				if !task.Kind.IsComm() || task.Kind == parallel.KindSend || task.Kind == parallel.KindRecv {
					continue
				}
				collectives++
				if f := floors.CommFloor(task.Group, prog.Stage, task.Op, units.Bytes(task.Bytes)); end[k]-start[k] < f {
					t.Fatalf("%s: rank %d's %s (%s on its %s group, %v B) took %v, under its floor %v",
						name, i, task.Name, task.Op, task.Group, task.Bytes, end[k]-start[k], f)
				}
			}
		}
		var cfg parallel.StepConfig
		s.FillStepConfig(&cfg, res.Layout)
		with := parallel.PipelineBound(&cfg, res.progs, false, floors, nil)
		without := parallel.PipelineBound(&cfg, res.progs, false, nil, nil)
		if with > stepEnd || with < without {
			t.Errorf("%s: pipeline bound with the floors %v, without %v, step's end %v", name, with, without, stepEnd)
		}
		if with > without {
			tighter++
		}
		for _, p := range res.progs {
			tail, compute := parallel.TailBound(p, floors), parallel.ComputeBound([]*parallel.Program{p}, nil)
			if tail > stepEnd || tail < compute {
				t.Errorf("%s: stage %d's tail %v, its compute %v, the step's end %v", name, p.Stage, tail, compute, stepEnd)
			}
			stages++
			if tail > compute {
				tailTighter++
			}
		}
		t.Logf("%s: bound %.3f of the step with the floors, %.3f without", name, float64(with)/float64(stepEnd), float64(without)/float64(stepEnd))
	}
	t.Logf("%d scenarios, %d collectives played; the floors raise the bound on %d; %d of %d stages' tails are over their compute", len(files), collectives, tighter, tailTighter, stages)
	if 2*tighter < len(files) || 2*tailTighter < stages {
		t.Errorf("the floors raise the bound on %d of %d scenarios, the tail over the compute on %d of %d stages", tighter, len(files), tailTighter, stages)
	}
}
