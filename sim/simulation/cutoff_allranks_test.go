package simulation

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/scenario"
)

// TestCutoffEveryRank holds Executor.RunBefore's stop in full mode, where
// every rank plays (flow fidelity, and --all-ranks at analytic fidelity),
// to the representative-rank play's rules: a cutoff at the step time
// changes no figure; one a nanosecond or so below it stops the play or,
// where the step ends on a task after every rank's last compute, changes
// no figure; and one well below it rules the point out, by its build's
// bound or on the way. The running bound is checked as often as full mode
// allows (every ranks-a-stage task ends), so that a bound too high
// anywhere in a play stops a step at the cutoff.
func TestCutoffEveryRank(t *testing.T) {
	ctx := context.Background()
	defer parallel.SetCutEvery(parallel.SetCutEvery(1))
	var files []string
	for _, f := range scenarioFiles(t) {
		s, ok := playable(t, f)
		if !ok || s.GPUs() > 64 {
			continue
		}
		files = append(files, f)
	}
	if testing.Short() && len(files) > 8 {
		files = files[:8]
	}
	stopped, stoppedInPlay, near := 0, 0, 0
	runs := 0
	for _, f := range files {
		for _, mode := range []string{"flow", "all-ranks"} {
			var s *scenario.Plan
			var err error
			opt := Options{FiguresOnly: true}
			if mode == "flow" {
				s, err = scenario.Load(f, scenario.Overrides("sim.fidelity", "flow")...)
			} else {
				s, err = scenario.Load(f)
				opt.AllRanks = true
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			name := filepath.Base(f) + " " + mode
			full, err := Run(ctx, s, opt)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			runs++
			with := func(cutoff float64) *Result {
				o := opt
				o.StepCutoffS = cutoff
				r, err := Run(ctx, s, o)
				if err != nil {
					t.Fatalf("%s (cutoff %v s): %v", name, cutoff, err)
				}
				return r
			}
			if r := with(full.StepTimeS); r.RuledOut || !sameFigures(r, full) {
				t.Fatalf("%s: with a cutoff at the step time: ruled out %v, step %v against %v", name, r.RuledOut, r.StepTimeS, full.StepTimeS)
			}
			if r := with(full.StepTimeS * (1 - 1e-9)); r.RuledOut {
				near++
				if !(r.StepBoundS <= full.StepTimeS) {
					t.Fatalf("%s: stopped just below the step with a bound of %v s against a step of %v s", name, r.StepBoundS, full.StepTimeS)
				}
			} else if !sameFigures(r, full) {
				t.Fatalf("%s: a cutoff just below the step changed the figures: step %v against %v", name, r.StepTimeS, full.StepTimeS)
			}
			cutoff := 0.7 * full.StepTimeS
			r := with(cutoff)
			switch {
			case r.RuledOut && !(r.StepBoundS > 0 && r.StepBoundS <= full.StepTimeS):
				t.Fatalf("%s: ruled out with a bound of %v s against a step of %v s", name, r.StepBoundS, full.StepTimeS)
			case r.RuledOut:
				stopped++
				if r.cutInPlay {
					stoppedInPlay++
					// At or past the deadline, and a bound.
					if dl := cutoffDeadline(cutoff, s.Sim.Steps).Seconds() / float64(s.Sim.Steps); r.StepBoundS < dl {
						t.Fatalf("%s: given up in the play with a bound of %v s, under the deadline's %v s", name, r.StepBoundS, dl)
					}
				}
			case !sameFigures(r, full):
				t.Fatalf("%s: a cutoff below the step changed the figures: step %v against %v", name, r.StepTimeS, full.StepTimeS)
			}
		}
	}
	t.Logf("%d plays of %d scenarios; at 0.7 of the step %d ruled out, %d of them in the play; %d stopped a nanosecond below the step", runs, len(files), stopped, stoppedInPlay, near)
	if stoppedInPlay == 0 {
		t.Error("no every-rank play stopped at its cutoff: RunBefore's stop in full mode is untested")
	}
}
