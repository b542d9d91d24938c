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
	sw, err := Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	var idx []int
	for i := 0; i < sw.Len(); i += 3 {
		idx = append(idx, i)
	}
	t0, c0, _ := parallel.SetHotChecks(true)
	defer parallel.SetHotChecks(false)
	if err := sw.Run(context.Background(), idx, 1, func(PointResult) error { return nil }); err != nil {
		t.Fatal(err)
	}
	t1, c1, err := parallel.SetHotChecks(false)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d points: %d tasks checked, %d in copied ranges", len(idx), t1-t0, c1-c0)
	if c1-c0 == 0 || t1-t0 < 1_000_000 {
		t.Errorf("%d tasks checked, %d in copied ranges", t1-t0, c1-c0)
	}
}
