package sweep

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/simulation"
)

// A cutoff (SetCutoff) changes nothing of the points it does not rule out:
// on the 70B sweep played in order on one worker (its arena, forks and
// engine reused from point to point, a stopped play's storage then taken
// by the next point), with the lazy state filled with garbage
// (parallel.SetStateChecks) and every re-pricing build checked against a
// fresh one (parallel.SetRepriceChecks), every point the median step's
// cutoff leaves has the figures of the sweep without a cutoff, and every
// point it rules out had a longer step there.
func TestCutoffLeavesOtherPointsExact(t *testing.T) {
	if testing.Short() {
		t.Skip("plays the 70B sweep twice")
	}
	load := func() (*Sweep, []int) {
		sw, err := Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", Options{})
		if err != nil {
			t.Fatal(err)
		}
		idx := make([]int, sw.Len())
		for i := range idx {
			idx[i] = i
		}
		return sw, idx
	}
	figures := func(r *simulation.Result) simulation.Result {
		f := *r
		f.Scenario, f.Cluster, f.Layout, f.SimWallS = nil, nil, nil, 0
		return f
	}
	sw, idx := load()
	want := map[string]simulation.Result{}
	var steps []float64
	if err := sw.Run(context.Background(), idx, 1, func(pr PointResult) error {
		if pr.Outcome == Simulated {
			want[pr.Point.Name] = figures(pr.Result)
			steps = append(steps, pr.Result.StepTimeS)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(steps)
	cutoff := steps[len(steps)/2]

	defer parallel.SetStateChecks(parallel.SetStateChecks(true))
	parallel.SetRepriceChecks(true)
	defer parallel.SetRepriceChecks(false)
	sw, idx = load()
	sw.SetCutoff(func(*scenario.Plan) float64 { return cutoff })
	ruled, same := 0, 0
	if err := sw.Run(context.Background(), idx, 1, func(pr PointResult) error {
		if pr.Outcome != Simulated {
			return nil
		}
		w, ok := want[pr.Point.Name]
		switch {
		case !ok:
			t.Errorf("%s: simulated with the cutoff only", pr.Point.Name)
		case pr.Result.RuledOut:
			ruled++
			if !(w.StepTimeS > cutoff) || pr.Result.StepBoundS > w.StepTimeS {
				t.Errorf("%s: ruled out at a cutoff of %v s with a bound of %v s, its step %v s", pr.Point.Name, cutoff, pr.Result.StepBoundS, w.StepTimeS)
			}
		case !reflect.DeepEqual(figures(pr.Result), w):
			t.Errorf("%s: step %v s with the cutoff, %v s without", pr.Point.Name, pr.Result.StepTimeS, w.StepTimeS)
		default:
			same++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := parallel.SetRepriceChecks(false); err != nil {
		t.Errorf("re-pricing build: %v", err)
	}
	t.Logf("%d points simulated; at a cutoff of %v s %d ruled out, %d the same", len(want), cutoff, ruled, same)
	if ruled == 0 || same == 0 || ruled+same != len(want) {
		t.Errorf("%d ruled out and %d the same of %d", ruled, same, len(want))
	}
}
