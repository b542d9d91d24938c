package parallel

import (
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
)

// setQueueWaits leaves every hot record's queue wait equal to its task's
// (the records set region by region, syncHot) on arena builds, also when
// it runs again on the same program with another queue: a queue that
// fills, then one that never does (no task waits, but records hold waits
// from the call before: they must be cleared), then one that fills again.
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
				if got, want := p.hot[i].queueAfter, p.Tasks[i].queueAfter; got != want {
					t.Fatalf("%s, %s: record %d waits %d, its task %d", name, when, i, got-1, want-1)
				}
				if p.hot[i] != hotOf(&p.Tasks[i]) {
					t.Fatalf("%s, %s: record %d is %+v, its task's %+v", name, when, i, p.hot[i], hotOf(&p.Tasks[i]))
				}
				if p.Tasks[i].queueAfter != 0 {
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

// syncHot copies the waits of its region only, and only when told they
// may differ; hotWaits copies every record's wait and nothing else.
func TestSyncHotCopiesItsRegion(t *testing.T) {
	for n := 0; n <= 19; n++ {
		for _, c := range []struct {
			from, to int
			differ   bool
		}{{0, n, true}, {0, n, false}, {n / 3, n - n/4, true}, {n / 2, n / 2, true}} {
			tasks, hot := make([]Task, n), make([]hotTask, n)
			for i := range tasks {
				tasks[i].queueAfter = int32(2*i + 1)
				hot[i].queueAfter, hot[i].hostAfter = -5, int32(i)
			}
			syncHot(hot, tasks, c.from, c.to, c.differ)
			syncHot(nil, tasks, c.from, c.to, c.differ) // no records: nothing
			for i := range hot {
				want := int32(-5)
				if c.differ && i >= c.from && i < c.to {
					want = tasks[i].queueAfter
				}
				if hot[i].queueAfter != want || hot[i].hostAfter != int32(i) {
					t.Fatalf("n=%d %+v: record %d = %+v, want wait %d", n, c, i, hot[i], want)
				}
			}
		}
	}
}
