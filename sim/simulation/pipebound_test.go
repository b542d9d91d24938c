package simulation

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/parallel"
)

// The pipeline bound (parallel.StageCut's fill and drain terms) is a lower
// bound on the played step of every bundled, validation and holdout
// scenario, and on some of them above the compute bound: the terms count.
func TestPipelineBoundBelowStepTime(t *testing.T) {
	ctx := context.Background()
	tighter, deep := 0, 0
	for _, f := range scenarioFiles(t) {
		s, ok := playable(t, f)
		if !ok || s.Sim.Steps != 1 {
			continue
		}
		name := filepath.Base(f)
		res, err := Run(ctx, s, Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.Replicated > 0 {
			continue // its programs are the shortened step's
		}
		layout, err := s.NewLayout()
		if err != nil {
			t.Fatal(err)
		}
		var cfg parallel.StepConfig
		s.FillStepConfig(&cfg, layout)
		progs := res.progs
		bound := parallel.PipelineBound(&cfg, progs, true)
		compute := parallel.ComputeBound(progs, nil)
		end := engine.Time(0)
		for i := range progs {
			_, ends, _ := res.exec.Times(i, nil, nil, nil)
			for _, e := range ends {
				end = max(end, e)
			}
		}
		if bound > end+1 {
			t.Errorf("%s: pipeline bound %v after the step's end %v (compute bound %v)", name, bound, end, compute)
		}
		if layout.PP > 1 {
			deep++
			if bound > compute {
				tighter++
			}
		}
		t.Logf("%s: pp %d, compute bound %.3f, pipeline bound %.3f of the step", name, layout.PP, float64(compute)/float64(end), float64(bound)/float64(end))
	}
	if deep == 0 || tighter < deep/2 {
		t.Errorf("the pipeline bound is above the compute bound on %d of %d pipelined scenarios", tighter, deep)
	}
}
