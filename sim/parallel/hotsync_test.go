package parallel

import (
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
)

// setQueueWaits writes the queue waits into the played records, which
// hold them (a Task does not), and leaves every other field of each
// record its task's, on arena builds, also when it runs again on the same
// program with another queue: a queue that fills, then one that never
// does (no task waits, but records hold waits from the call before: they
// must be cleared), then one that fills again.
func TestSetQueueWaitsKeepsHotRecordsInStep(t *testing.T) {
	us := engine.Microsecond
	rerun := []HostModel{
		{On: true, KernelFwd: 5 * us, KernelBwd: 3 * us, Call: 10 * us, Queue: 3},
		{On: true, KernelFwd: 5 * us, KernelBwd: 3 * us, Call: 10 * us, Queue: 1 << 20},
		{On: true, KernelFwd: 2 * us, KernelBwd: 5 * us, Call: us, Queue: 16},
	}
	kept, cleared := 0, 0
	eachQueueBuild(t, []bool{false, true}, func(name string, p *Program, h *HostModel) {
		if !p.keepHot || len(p.hot) != len(p.Tasks) {
			t.Fatalf("%s: no hot records kept (keepHot %v, %d records, %d tasks)", name, p.keepHot, len(p.hot), len(p.Tasks))
		}
		kept++
		check := func(when string) (waits int) {
			t.Helper()
			for i := range p.Tasks {
				h := hotOf(&p.Tasks[i])
				h.issue, h.hostAfter, h.queueAfter = p.hot[i].issue, p.hot[i].hostAfter, p.hot[i].queueAfter
				if p.hot[i] != h {
					t.Fatalf("%s, %s: record %d is %+v, its task's %+v", name, when, i, p.hot[i], h)
				}
				if p.QueueAfter(i) >= 0 {
					waits++
				}
			}
			return waits
		}
		check("built")
		before := 0
		for k := range rerun {
			h := rerun[k]
			p.setQueueWaits(&h, nil)
			w := check("queue " + string(rune('0'+k)))
			if k == 1 && before > 0 {
				if w != 0 {
					t.Fatalf("%s: %d waits with an unbounded queue", name, w)
				}
				cleared++
			}
			before = w
		}
	})
	t.Logf("%d programs, %d with waits cleared by a second call", kept, cleared)
	if cleared == 0 {
		t.Error("no program had waits to clear: a case is missing")
	}
}
