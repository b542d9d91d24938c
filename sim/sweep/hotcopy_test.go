package sweep

import (
	"context"
	"testing"

	"github.com/simtrain/simtrain/sim/parallel"
)

// On a spread of the 70B sweep's points (every third, in order, on one
// worker: its arena reused from point to point), the records the symmetric
// executor copies for copied task ranges equal those converted from every
// Task (parallel.SetHotChecks: CheckHot on every program NewSymmetric
// prepares), and some ranges were copied.
func TestSweepHotCopiesMatchTasks(t *testing.T) {
	if testing.Short() {
		t.Skip("plays a third of the 70B sweep")
	}
	t0, c0, _ := parallel.SetHotChecks(true)
	defer parallel.SetHotChecks(false)
	points := playSweep70B(t, 3)
	t1, c1, err := parallel.SetHotChecks(false)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d points: %d tasks checked, %d in copied ranges", points, t1-t0, c1-c0)
	if c1-c0 == 0 || t1-t0 < 1_000_000 {
		t.Errorf("%d tasks checked, %d in copied ranges", t1-t0, c1-c0)
	}
}

// playSweep70B plays every step-th point of the bundled 70B sweep, in
// order, on one worker (its arena and Forks reused from point to point, as
// a sweep plays them), and returns how many points it played.
func playSweep70B(t *testing.T, step int) int {
	t.Helper()
	sw, err := Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	var idx []int
	for i := 0; i < sw.Len(); i += step {
		idx = append(idx, i)
	}
	if err := sw.Run(context.Background(), idx, 1, func(PointResult) error { return nil }); err != nil {
		t.Fatal(err)
	}
	return len(idx)
}
