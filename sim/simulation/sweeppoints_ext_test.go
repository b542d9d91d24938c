package simulation_test

import (
	"context"
	"os"
	"testing"

	"github.com/simtrain/simtrain/sim/simulation"
	"github.com/simtrain/simtrain/sim/sweep"
)

// eachSweepPoint calls fn, in index order, with every point of sw that
// `simtrain sweep` would simulate (valid, fitting in memory) and the
// options the sweep runs it with: FiguresOnly, reuse, the point's run id
// and memory estimate.
func eachSweepPoint(sw *sweep.Sweep, reuse *simulation.Reuse, fn func(i int, p *sweep.Point, opt simulation.Options)) {
	for i := 0; i < sw.Len(); i++ {
		if !sw.Valid(i) {
			continue
		}
		p := sw.Point(i)
		mem, fits := p.Scenario.MemoryPerStage()
		if !fits {
			continue
		}
		fn(i, p, simulation.Options{Reuse: reuse, FiguresOnly: true, RunID: p.RunID, Memory: mem})
	}
}

// eachSimulatedPoint runs every point of sw that `simtrain sweep` would
// simulate (valid, fitting in memory) the way the sweep runs it: in index
// order, FiguresOnly, one Reuse for all, with the point's run id and memory
// estimate. It calls fn with each point's index, the point and its result,
// and fails t on a run's error. The report tests measure what the sweep
// plays through it.
func eachSimulatedPoint(t *testing.T, sw *sweep.Sweep, fn func(i int, p *sweep.Point, r *simulation.Result)) {
	t.Helper()
	eachSweepPoint(sw, new(simulation.Reuse), func(i int, p *sweep.Point, opt simulation.Options) {
		r, err := simulation.Run(context.Background(), p.Scenario, opt)
		if err != nil {
			t.Fatalf("point %d: %v", i, err)
		}
		fn(i, p, r)
	})
}

// reportSweep is the report tests' start: the file the environment
// variable env names (the test is skipped without it) and the bundled 70B
// layout sweep, loaded.
func reportSweep(t *testing.T, env string) (string, *sweep.Sweep) {
	t.Helper()
	out := os.Getenv(env)
	if out == "" {
		t.Skip(env + " names the report file")
	}
	sw, err := sweep.Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", sweep.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return out, sw
}
