package sweep

import (
	"context"
	"errors"
	"reflect"
	"runtime"
	"testing"

	"github.com/simtrain/simtrain/sim/simulation"
)

// TestRunLentEqualsRun: RunLent emits, for every point, what Run emits
// (outcome, error, point number, name, run id, values, every figure of the
// Result but the played-work counters, its memory list and steps), read
// while emit runs, on one and two
// workers, over sweeps with invalid points, an auto field without a valid
// value, pruned points and the 70B layouts' shortened plays (some failed);
// its points live in stores (TestRunLentReusesStores), Run's in none.
func TestRunLentEqualsRun(t *testing.T) {
	big, err := Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		sw   *Sweep
		idx  []int
	}{
		{"invalid points", parseSweep(t, "sweep:\n  parallel.tp: [3, 8, 4, 2, 1]\n  parallel.pp: [1, 3, 2]\n"), nil},
		{"auto without a value", parseSweep(t, "sweep:\n  cluster.nodes: [1, 2]\n  parallel.tp: {auto: true, min: 16}\n  training.micro_batch: [1, 2, 4]\n"), nil},
		{"70B layouts, every third point", big, nil},
	}
	for k := 0; k < big.Len(); k += 3 {
		cases[2].idx = append(cases[2].idx, k)
	}
	// row is what of pr a caller reads, with the wall time and work
	// counters left out and the plan by name (Run and RunLent resolve
	// their own).
	type row struct {
		outcome  Outcome
		err      string
		index    int
		name     string
		runID    string
		values   []string
		scenario string
		result   *simulation.Result
	}
	rowOf := func(pr PointResult) row {
		r := row{outcome: pr.Outcome, index: pr.Point.Index, name: pr.Point.Name, runID: pr.Point.RunID,
			values: append([]string(nil), pr.Point.Values...), scenario: pr.Point.Scenario.Name}
		if pr.Err != nil {
			r.err = pr.Err.Error()
		}
		if pr.Result != nil {
			res := *pr.Result
			res.SimWallS, res.Scenario, res.Cluster, res.Layout = 0, nil, nil, nil
			// The played-work counters depend on what the worker played
			// before (Run against Run on two workers: point 927's full
			// play resumed 17,539 tasks from its failed shortened play,
			// or none); no output reads them.
			res.PlayedTasks, res.FailedTasks, res.ResumedTasks = 0, 0, 0
			res.Memory = append([]simulation.StageMemory(nil), res.Memory...)
			res.Steps = append([]simulation.StepRecord(nil), res.Steps...)
			r.result = &res
		}
		return r
	}
	for _, tc := range cases {
		idx := tc.idx
		if idx == nil {
			idx = tc.sw.ShardIndices(0, 1)
		}
		want := map[int]row{}
		if err := tc.sw.Run(context.Background(), idx, 2, func(pr PointResult) error {
			if pr.store != nil {
				return errors.New("Run lent a store")
			}
			want[pr.Point.Index] = rowOf(pr)
			return nil
		}); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		outcomes := map[Outcome]int{}
		for _, r := range want {
			outcomes[r.outcome]++
		}
		for _, workers := range []int{1, 2} {
			got := map[int]row{}
			stores := map[*pointStore]bool{}
			err := tc.sw.RunLent(context.Background(), idx, workers, func(pr PointResult) error {
				stores[pr.store] = true
				got[pr.Point.Index] = rowOf(pr)
				return nil
			})
			if err != nil {
				t.Fatalf("%s, %d workers: %v", tc.name, workers, err)
			}
			if len(got) != len(idx) || len(want) != len(idx) {
				t.Fatalf("%s, %d workers: %d and %d points of %d", tc.name, workers, len(got), len(want), len(idx))
			}
			for i, w := range want {
				if g := got[i]; !reflect.DeepEqual(g, w) {
					t.Errorf("%s, %d workers, point %d: lent\n%+v\nowned\n%+v", tc.name, workers, i, g, w)
				}
			}
			if stores[nil] {
				t.Errorf("%s, %d workers: a point not in a store", tc.name, workers)
			}
		}
		t.Logf("%s: %d points, outcomes %v", tc.name, len(idx), outcomes)
	}
}

// TestRunLentReusesStores: RunLent's workers fill the stores handed back
// again: on one CPU (where the count depends on the Go scheduler only, not
// on the machine's load), two workers over a third of the 70B sweep use at
// most a few stores each, for one to four workers. Seen: 2–4; 89–203
// without the workers' yield after each point (Sweep.run), which lets the
// emitting goroutine run.
func TestRunLentReusesStores(t *testing.T) {
	sw, err := Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	var idx []int
	for k := 0; k < sw.Len(); k += 3 {
		idx = append(idx, k)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, workers := range []int{1, 2, 4} {
		stores := map[*pointStore]bool{}
		if err := sw.RunLent(context.Background(), idx, workers, func(pr PointResult) error {
			stores[pr.store] = true
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if stores[nil] || len(stores) > 4*workers {
			t.Errorf("%d workers: %d stores for %d points", workers, len(stores), len(idx))
		}
	}
}
