package simulation

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/parallel"
)

// TestComputeBoundBelowStepTime holds parallel.ComputeBound, the bound a
// cutoff rules points out by (Options.StepCutoffS), at or below the step
// time on every bundled, validation and holdout scenario, with the first
// build shortened where a sweep worker's would be (its replicated units
// counted) and whole; and a cutoff at the step time changes no figure,
// one between the bound and the step stops the play on the way or changes
// no figure, and one below the bound rules the point out unplayed.
func TestComputeBoundBelowStepTime(t *testing.T) {
	files := scenarioFiles(t)
	ctx := context.Background()
	// The running bound checked at every task end, not every 512th, so
	// that a bound too high anywhere in a play stops a step at the cutoff.
	defer parallel.SetCutEvery(parallel.SetCutEvery(1))
	shortened, tight, stopped, nearStopped := 0, 0, 0, 0
	for _, f := range files {
		s, ok := playable(t, f)
		if !ok {
			continue
		}
		name := filepath.Base(f)
		for _, figuresOnly := range []bool{true, false} {
			full, err := Run(ctx, s, Options{FiguresOnly: figuresOnly})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := full.Check(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			// The smallest positive cutoff: every point is ruled out,
			// and says its bound.
			out, err := Run(ctx, s, Options{FiguresOnly: figuresOnly, StepCutoffS: 1e-300})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !out.RuledOut || out.StepTimeS != 0 || out.Events != 0 || out.PeakMemBytes != full.PeakMemBytes || out.Fits != full.Fits {
				t.Fatalf("%s: ruled out %v, step %v, events %d, memory %v (want %v)", name, out.RuledOut, out.StepTimeS, out.Events, out.PeakMemBytes, full.PeakMemBytes)
			}
			if !(out.StepBoundS > 0 && out.StepBoundS <= full.StepTimeS) {
				t.Fatalf("%s (figures only %v): bound %v s against a step of %v s", name, figuresOnly, out.StepBoundS, full.StepTimeS)
			}
			if figuresOnly && full.SteadyPlays > 0 {
				shortened++
			}
			if out.StepBoundS > 0.8*full.StepTimeS {
				tight++
			}
			// A cutoff at the step time: played, the same figures.
			same, err := Run(ctx, s, Options{FiguresOnly: figuresOnly, StepCutoffS: full.StepTimeS})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if same.RuledOut || !sameFigures(same, full) {
				t.Fatalf("%s: with a cutoff at the step time: ruled out %v, step %v against %v", name, same.RuledOut, same.StepTimeS, full.StepTimeS)
			}
			// Between the bound and the step: either stopped on the way
			// (the clock past the cutoff with compute left) or played
			// to the same figures.
			mid, err := Run(ctx, s, Options{FiguresOnly: figuresOnly, StepCutoffS: (out.StepBoundS + full.StepTimeS) / 2})
			switch {
			case err != nil:
				t.Fatalf("%s: %v", name, err)
			case mid.RuledOut && !(mid.StepBoundS > 0 && mid.StepBoundS <= full.StepTimeS):
				t.Fatalf("%s: stopped with a bound of %v s against a step of %v s", name, mid.StepBoundS, full.StepTimeS)
			case mid.RuledOut:
				stopped++
			case !sameFigures(mid, full):
				t.Fatalf("%s: a cutoff between bound and step changed the figures: step %v against %v", name, mid.StepTimeS, full.StepTimeS)
			}
			// A nanosecond or so below the step: stopped on the way (the
			// running bound, Executor.checkCut, or the clock), or, where
			// the step ends on a task after its last compute, played to
			// the same figures; a cutoff at the step never stops it
			// (above).
			near, err := Run(ctx, s, Options{FiguresOnly: figuresOnly, StepCutoffS: full.StepTimeS * (1 - 1e-9)})
			switch {
			case err != nil:
				t.Fatalf("%s: %v", name, err)
			case near.RuledOut:
				nearStopped++
			case !sameFigures(near, full):
				t.Fatalf("%s: a cutoff just below the step changed the figures: step %v against %v", name, near.StepTimeS, full.StepTimeS)
			}
			// Just below the bound: ruled out.
			below, err := Run(ctx, s, Options{FiguresOnly: figuresOnly, StepCutoffS: out.StepBoundS * (1 - 1e-9)})
			if err != nil || !below.RuledOut {
				t.Fatalf("%s: a cutoff below the bound %v: ruled out %v, %v", name, out.StepBoundS, below.RuledOut, err)
			}
		}
	}
	t.Logf("%d scenarios; %d first builds shortened; the bound above 80%% of the step on %d runs; %d runs stopped between bound and step, %d just below the step", len(files), shortened, tight, stopped, nearStopped)
	if stopped == 0 {
		t.Error("no play stopped at its cutoff: Executor.RunBefore's stop is untested")
	}
	if shortened == 0 {
		t.Error("no first build was shortened: the replicated units' count is untested")
	}
}

// TestCheckHoldsComputeSerial holds the two facts ComputeBound rests on in
// Result.Check: every compute task runs on the compute stream, never
// shorter than its priced Dur.
func TestCheckHoldsComputeSerial(t *testing.T) {
	_, res := loadAndRun(t, "../../scenarios/quickstart.yaml")
	p := res.progs[0]
	k := -1
	for i := range p.Tasks {
		if p.Tasks[i].Kind.IsCompute() && p.Tasks[i].Dur > 1 {
			k = i
			break
		}
	}
	if k < 0 {
		t.Fatal("no compute task")
	}
	p.Tasks[k].Dur *= 1000 // priced far longer than it ran
	if err := res.Check(); err == nil {
		t.Error("Check passes a compute task that ran shorter than its Dur")
	}
	p.Tasks[k].Dur /= 1000
	p.Tasks[k].Stream = parallel.StreamTP
	if err := res.Check(); err == nil {
		t.Error("Check passes a compute task off the compute stream")
	}
}

// TestCutoffNotUnderVariability: with sim.variability a step's time is its
// played time plus the slowest rank's draw, which may be below it (every
// rank drawn faster than its median), so no bound on the played step
// bounds it: a cutoff is not applied, the figures are the same.
func TestCutoffNotUnderVariability(t *testing.T) {
	s := parseWith(t, variable, "cluster.nodes", "1")
	for _, figuresOnly := range []bool{true, false} {
		want := mustRun(t, s, Options{FiguresOnly: figuresOnly})
		got := mustRun(t, s, Options{FiguresOnly: figuresOnly, StepCutoffS: 1e-300})
		if got.RuledOut || !sameFigures(got, want) {
			t.Errorf("figures only %v: ruled out %v, step %v against %v", figuresOnly, got.RuledOut, got.StepTimeS, want.StepTimeS)
		}
	}
}

// TestComputeLimit: computeLimit is the most computation whose step is not
// over the cutoff, by the comparison a ruled-out point is judged by, so
// that a build's StageCut rules out exactly the points that the whole
// build's bound would: at random cutoffs and steps, at steps that round,
// and at the extremes.
func TestComputeLimit(t *testing.T) {
	over := func(b engine.Time, cutoff float64, steps int) bool { return b.Seconds()/float64(steps) > cutoff }
	rng := rand.New(rand.NewPCG(1, 65))
	cases := [][2]float64{{1e-300, 1}, {1e-9, 3}, {0.1, 3}, {1.0 / 3, 7}, {4.528, 1}, {86400 * 365, 10}}
	for range 2000 {
		cases = append(cases, [2]float64{math.Exp(rng.Float64()*30 - 20), float64(1 + rng.IntN(20))})
	}
	for _, c := range cases {
		cutoff, steps := c[0], int(c[1])
		l := computeLimit(cutoff, steps)
		if over(l, cutoff, steps) || (l < engine.Forever && !over(l+1, cutoff, steps)) {
			t.Fatalf("cutoff %v s over %d steps: limit %d ns (over: %v; one more: %v)", cutoff, steps, l, over(l, cutoff, steps), over(l+1, cutoff, steps))
		}
	}
	if l := computeLimit(1e300, 1); l != engine.Forever {
		t.Errorf("a cutoff beyond any time: limit %d, want Forever", l)
	}
}
