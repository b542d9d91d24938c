package sweep

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/simulation"
)

// TestFailedPlaysCost runs the points SIMTRAIN_COST_POINTS lists (indices of
// the 70B sweep, comma-separated; skipped without it) once to warm a Reuse,
// then SIMTRAIN_COST_REPS times more (default 1), shortened as a sweep
// worker plays them (SIMTRAIN_COST_MODE=steady) or whole (whole): a
// diagnostic for issue 18, to profile (-cpuprofile) one way against the
// other.
func TestFailedPlaysCost(t *testing.T) {
	list := os.Getenv("SIMTRAIN_COST_POINTS")
	if list == "" {
		t.Skip("SIMTRAIN_COST_POINTS lists the points")
	}
	sw, err := Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	var idx []int
	for _, f := range strings.Split(list, ",") {
		i, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		idx = append(idx, i)
	}
	steady := os.Getenv("SIMTRAIN_COST_MODE") != "whole"
	reps := 1
	if r, err := strconv.Atoi(os.Getenv("SIMTRAIN_COST_REPS")); err == nil {
		reps = r
	}
	reuse := new(simulation.Reuse)
	costPlays(t, sw, idx, steady, reuse)
	for range reps {
		costPlays(t, sw, idx, steady, reuse)
	}
}

//go:noinline
func costPlays(t *testing.T, sw *Sweep, idx []int, steady bool, reuse *simulation.Reuse) {
	for _, i := range idx {
		p := sw.Point(i)
		if steady {
			if got, _ := sw.evaluate(context.Background(), i, reuse); got.Outcome != Simulated {
				t.Fatalf("point %d: %v", i, got.Outcome)
			}
			continue
		}
		if _, err := simulation.Run(context.Background(), p.Scenario, simulation.Options{Reuse: reuse, RunID: p.RunID}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPointCosts plays each point SIMTRAIN_COST_POINTS lists shortened (as
// a sweep worker) and whole, alternating, SIMTRAIN_COST_REPS times each
// (default 5), and writes each point's least thread CPU time of either
// way to the file SIMTRAIN_COST_OUT names (skipped without it), with what
// the cost model of worthShortening (sim/simulation) is fitted on: the
// point's pp and m, the micro-batches of a first shortened play
// (parallel.PlanSteady at simulation's steadyMargin, 6) and the shortened
// plays and replicated micro-batches of the sweep worker's run: a
// diagnostic for issue 18.
func TestPointCosts(t *testing.T) {
	out, list := os.Getenv("SIMTRAIN_COST_OUT"), os.Getenv("SIMTRAIN_COST_POINTS")
	if out == "" || list == "" {
		t.Skip("SIMTRAIN_COST_OUT names the output file, SIMTRAIN_COST_POINTS the points")
	}
	reps := 5
	if r, err := strconv.Atoi(os.Getenv("SIMTRAIN_COST_REPS")); err == nil {
		reps = r
	}
	sw, err := Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	reuse, whole := new(simulation.Reuse), new(simulation.Reuse)
	var b strings.Builder
	b.WriteString("point\tsteady_us\twhole_us\tpp\tm\tplayed\tplays\treplicated\n")
	for _, f := range strings.Split(list, ",") {
		i, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		best := [2]time.Duration{1 << 62, 1 << 62}
		for r := 0; r <= reps; r++ { // the first of each way warms
			for k, steady := range []bool{true, false} {
				rr := reuse
				if !steady {
					rr = whole
				}
				c0 := threadCPU()
				costPlays(t, sw, []int{i}, steady, rr)
				if c := threadCPU() - c0; r > 0 {
					best[k] = min(best[k], c)
				}
			}
		}
		got, _ := sw.evaluate(context.Background(), i, reuse)
		r := got.Result
		cfg := got.Point.Scenario.StepConfig(r.Layout)
		played := 0
		if st, ok := parallel.PlanSteady(cfg, 6); ok {
			played = st.Played
		}
		fmt.Fprintf(&b, "%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", i, best[0].Microseconds(), best[1].Microseconds(),
			r.Layout.PP, cfg.Microbatches, played, r.SteadyPlays, r.Replicated)
	}
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
