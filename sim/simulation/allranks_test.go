package simulation

import (
	"reflect"
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/scenario"
)

// TestEveryRankCompactPlay: an every-rank play counts each rank's
// statistics as its tasks start and end, issues host work lazily and keeps
// task times only for the ranks asked for (Options.KeepRanks; issue 18).
// On scenarios that exercise every part of it — a host thread that parks
// and one that bounds the step, pipelines (interleaved, DualPipe), ZeRO-3,
// expert parallelism and its DeepEP backend, several steps with
// variability, offloading, flow fidelity — every rank's accumulated Stats
// equal Stats measured on its kept times, the per-step ends equal those
// measured on the times, and a play that keeps no rank's times (or one
// rank's) gives the same figures as one that keeps them all.
func TestEveryRankCompactPlay(t *testing.T) {
	tiny := func(kv ...string) *scenario.Plan {
		s, err := scenario.Parse([]byte(tinyScenario), scenario.Overrides(kv...)...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	cases := []struct {
		name string
		plan func() *scenario.Plan
	}{
		{"quickstart", func() *scenario.Plan { return loadEdited(t, "../../scenarios/quickstart.yaml") }},
		{"mixtral", func() *scenario.Plan { return loadEdited(t, "../../scenarios/mixtral-8x7b-ep8.yaml") }},
		{"mixtral deepep", func() *scenario.Plan {
			return loadEdited(t, "../../scenarios/mixtral-8x7b-ep8.yaml", "parallel.ep_backend", "deepep")
		}},
		{"course memory", func() *scenario.Plan { return loadEdited(t, "../../scenarios/course-8xh100-adamw-memory.yaml") }},
		{"tiny host-bound", func() *scenario.Plan { return tiny() }},
		{"tiny host-bound pp", func() *scenario.Plan {
			return tiny("parallel.dp", "2", "parallel.pp", "4", "training.global_batch", "8")
		}},
		{"tiny host-bound 3 steps", func() *scenario.Plan {
			return tiny("sim.steps", "3", "sim.variability.distribution", "lognormal", "sim.variability.step_cv", "0.05")
		}},
		{"interleaved", func() *scenario.Plan {
			return parseWith(t, nil, "parallel.tp", "2", "parallel.pp", "4", "parallel.schedule", "interleaved", "parallel.virtual_stages", "2")
		}},
		{"dualpipe", func() *scenario.Plan {
			return parseWith(t, nil, "parallel.tp", "2", "parallel.pp", "4", "parallel.schedule", "dualpipe")
		}},
		{"zero3", func() *scenario.Plan { return parseWith(t, nil, "parallel.tp", "2", "parallel.zero", "3") }},
		{"offload", func() *scenario.Plan {
			return parseWith(t, nil, "training.offload_optimizer", "true", "parallel.zero", "1", "sim.steps", "2")
		}},
		{"flow", func() *scenario.Plan { return parseWith(t, nil, "parallel.tp", "4", "sim.fidelity", "flow") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			all := mustRun(t, c.plan(), Options{AllRanks: true})
			x := all.exec
			if x.Symmetric() {
				t.Fatal("played symmetrically")
			}
			ends := make([]engine.Time, all.Scenario.Sim.Steps)
			var start, end, issued []engine.Time
			for i := 0; i < x.Instances(); i++ {
				if got, want := x.Stats(i), x.StatsOfTimes(i); got != want {
					t.Fatalf("rank %d: accumulated stats %+v, measured on the times %+v", i, got, want)
				}
				_, _, prog := x.Place(i)
				start, end, issued = x.Times(i, start[:0], end[:0], issued[:0])
				for k, task := range prog.Tasks {
					if task.Kind != parallel.KindHostCopy && int(task.Step) < len(ends) {
						ends[task.Step] = max(ends[task.Step], end[k])
					}
				}
			}
			if got := x.StepEnds(); !slices.Equal(got, ends) {
				t.Errorf("step ends %v, measured on the times %v", got, ends)
			}
			for _, keep := range [][]int{{}, {0}} {
				some := mustRun(t, c.plan(), Options{AllRanks: true, KeepRanks: func(*Result) []int { return keep }})
				if !sameFigures(all, some) {
					t.Errorf("keeping ranks %v: %+v\nkeeping all: %+v", keep, resultFigures(some), resultFigures(all))
				}
				kept := 0
				for i := 0; i < some.exec.Instances(); i++ {
					if some.exec.HasTimes(i) {
						kept++
					}
				}
				if kept != len(keep) {
					t.Errorf("keeping ranks %v: %d instances have times", keep, kept)
				}
			}
		})
	}
}

// resultFigures is what a run reports, without what is not a result (wall time)
// and without the played tasks.
func resultFigures(r *Result) Result {
	f := *r
	f.SimWallS, f.exec, f.progs, f.fabric = 0, nil, nil, nil
	f.Cluster, f.Layout, f.Scenario = nil, nil, nil
	return f
}

func sameFigures(a, b *Result) bool {
	fa, fb := resultFigures(a), resultFigures(b)
	return reflect.DeepEqual(fa, fb)
}
