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
// scenario, for the whole step's programs and for the shortened ones a
// replicated play builds (their bound is the full step's), and on most
// pipelined ones it is above the compute bound: the terms count.
func TestPipelineBoundBelowStepTime(t *testing.T) {
	ctx := context.Background()
	tighter, deep, shortened, shortTighter := 0, 0, 0, 0
	for _, f := range scenarioFiles(t) {
		s, ok := playable(t, f)
		if !ok || s.Sim.Steps != 1 {
			continue
		}
		name := filepath.Base(f)
		res, err := Run(ctx, s, Options{}) // (played whole: not figures only)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		layout, err := s.NewLayout()
		if err != nil {
			t.Fatal(err)
		}
		var cfg parallel.StepConfig
		s.FillStepConfig(&cfg, layout)
		end := engine.Time(0)
		for i := range res.progs {
			_, ends, _ := res.exec.Times(i, nil, nil, nil)
			for _, e := range ends {
				end = max(end, e)
			}
		}
		bound := parallel.PipelineBound(&cfg, res.progs, true, nil, nil)
		compute := parallel.ComputeBound(res.progs, nil)
		if bound > end {
			t.Errorf("%s: pipeline bound %v after the step's end %v (compute bound %v)", name, bound, end, compute)
		}
		if layout.PP > 1 {
			deep++
			if bound > compute {
				tighter++
			}
		}
		t.Logf("%s: pp %d, compute bound %.3f, pipeline bound %.3f of the step", name, layout.PP,
			float64(compute)/float64(end), float64(bound)/float64(end))
		// The shortened build of a play replicated on its first try.
		short, err := Run(ctx, s, Options{FiguresOnly: true})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if short.Replicated == 0 || short.SteadyPlays != 1 {
			continue
		}
		st, ok := parallel.PlanSteady(&cfg, steadyMargin)
		if !ok {
			t.Fatalf("%s: replicated on its first play, but no plan", name)
		}
		scfg := cfg
		scfg.Microbatches = st.Played
		sb := parallel.PipelineBound(&scfg, short.progs, true, nil, &st)
		sc := parallel.ComputeBound(short.progs, &st)
		if sb > end {
			t.Errorf("%s: shortened build's pipeline bound %v after the full step's end %v (compute bound %v)", name, sb, end, sc)
		}
		shortened++
		if sb > sc {
			shortTighter++
		}
		t.Logf("%s: shortened build, compute bound %.3f, pipeline bound %.3f of the full step", name,
			float64(sc)/float64(end), float64(sb)/float64(end))
	}
	if deep == 0 || tighter < deep/2 {
		t.Errorf("the pipeline bound is above the compute bound on %d of %d pipelined scenarios", tighter, deep)
	}
	if shortened == 0 || shortTighter < shortened/2 {
		t.Errorf("the shortened builds' pipeline bound is above their compute bound on %d of %d", shortTighter, shortened)
	}
}
