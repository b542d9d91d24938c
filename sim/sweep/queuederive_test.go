package sweep

import (
	"context"
	"testing"

	"github.com/simtrain/simtrain/sim/parallel"
)

// On every point of the 70B sweep (one worker: its arena reused from point
// to point), the queue waits copied ranges take from their sources
// (deriveQueueWaits) equal the walk's: parallel.SetQueueChecks derives and
// walks every program with copied ranges and compares waits, launch lists
// and QueueSelf; and some tasks were derived.
func TestSweepQueueWaitsDerived(t *testing.T) {
	if testing.Short() {
		t.Skip("plays the 70B sweep")
	}
	sw, err := Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	idx := make([]int, sw.Len())
	for i := range idx {
		idx[i] = i
	}
	p0, t0, _ := parallel.SetQueueChecks(true)
	defer parallel.SetQueueChecks(false)
	d0 := parallel.DerivedQueueTasks()
	if err := sw.Run(context.Background(), idx, 1, func(PointResult) error { return nil }); err != nil {
		t.Fatal(err)
	}
	p1, t1, err := parallel.SetQueueChecks(false)
	if err != nil {
		t.Fatal(err)
	}
	d := parallel.DerivedQueueTasks() - d0
	t.Logf("%d points: %d programs, %d tasks checked; %d tasks derived", len(idx), p1-p0, t1-t0, d)
	if d == 0 || p1-p0 == 0 {
		t.Errorf("%d programs checked, %d tasks derived", p1-p0, d)
	}
}
