package sweep

import (
	"testing"

	"github.com/simtrain/simtrain/sim/parallel"
)

// Every program of every point of the 70B sweep (one worker) whose
// launch-queue walk took copied ranges from their sources' list entries
// (copyQueues) is walked again plainly from its first task, and every
// task's wait, hot record, self wait, list and the queued flags are
// equal (SetQueueCopyChecks); most of the walked tasks are taken so.
func TestSweepQueueCopiesMatchWalk(t *testing.T) {
	if testing.Short() {
		t.Skip("plays the 70B sweep")
	}
	p0, t0, c0, _ := parallel.SetQueueCopyChecks(true)
	defer parallel.SetQueueCopyChecks(false)
	points := playSweep70B(t, 1)
	p1, t1, c1, err := parallel.SetQueueCopyChecks(false)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d points: %d programs took copied ranges: %d tasks, %d of them copied", points, p1-p0, t1-t0, c1-c0)
	if p1-p0 < 1000 || c1-c0 < 1_000_000 {
		t.Errorf("%d programs took copied ranges, %d tasks", p1-p0, c1-c0)
	}
}
