package sweep

import (
	"testing"

	"github.com/simtrain/simtrain/sim/parallel"
)

// On every point of the 70B sweep (one worker, its arena and Forks reused
// from point to point, as a sweep plays them), each program built after a
// failed shortened play whose launch-queue walk started after the failed
// play's common prefix (parallel.BuildAfter) has the waits, self waits,
// lists and flags of a walk from its first task (SetQueuePrefixChecks),
// and some walks did start after a prefix.
func TestSweepQueuePrefixMatchesWalk(t *testing.T) {
	if testing.Short() {
		t.Skip("plays the 70B sweep")
	}
	p0, r0, t0, f0, _ := parallel.SetQueuePrefixChecks(true)
	defer parallel.SetQueuePrefixChecks(false)
	points := playSweep70B(t, 1)
	p1, r1, t1, f1, err := parallel.SetQueuePrefixChecks(false)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d points: %d programs given a prefix, %d walked after it: %d tasks, %d of them in prefixes", points, p1-p0, r1-r0, t1-t0, f1-f0)
	if r1-r0 < 100 || f1-f0 < 100_000 {
		t.Errorf("%d programs walked after a prefix, %d prefix tasks", r1-r0, f1-f0)
	}
}
