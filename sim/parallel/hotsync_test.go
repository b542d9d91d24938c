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

// hotCopies writes the copied ranges' records as converting every task
// would (hotOf), whatever the split points setQueueWaits' regions put
// between its calls (ranges written in parts, chains copying a copy, empty
// ranges), and touches no record after the end it is given; a list out of
// the build's order has every record converted by pendingHot.
func TestHotCopiesEqualsConverting(t *testing.T) {
	const n = 60
	// tasks 0-9 emitted, 10-19 a copy of 0-9, 20-29 of 10-19 (a chain),
	// 30-33 emitted, 34-37 of 30-33, an empty range at 38, 38-59 emitted
	// but 45-50 a copy of 20-25
	cs := []copySeg{{10, 0, 10}, {20, 10, 10}, {34, 30, 4}, {38, 0, 0}, {45, 20, 6}}
	mk := func() []Task {
		tasks := make([]Task, n)
		for i := range tasks {
			tasks[i] = Task{Kind: Kind(i % 5), Stream: Stream(i % 3), Group: GroupKind(i % 2), GEMMShare: uint16(7 * i),
				CopyEngine: i%4 == 1, SMSized: i%6 == 2, Issue: engine.Time(100 + i), Dur: engine.Time(1000 + 3*i)}
		}
		for _, c := range cs {
			for i := int32(0); i < c.n; i++ {
				tasks[c.at+i] = tasks[c.src+i]
			}
		}
		for i := range tasks {
			tasks[i].hostAfter, tasks[i].queueAfter = int32(i%7), int32(i%5)
		}
		return tasks
	}
	var copied [n]bool
	for _, c := range cs {
		for i := c.at; i < c.at+c.n; i++ {
			copied[i] = true
		}
	}
	for _, splits := range [][]int{{n}, {0, n}, {5, 15, 25, 40, n}, {12, 12, 13, 36, 47, n}, {1, 2, 3, 4, 11, 21, 22, 35, 44, 46, 49, 50, 59, n}} {
		tasks := mk()
		hot := make([]hotTask, n)
		for i := range hot {
			hot[i] = hotTask{dur: -1, kind: 99}
		}
		p := &Program{Tasks: tasks, hot: hot, keepHot: true, hotPending: true, copies: cs}
		fillHotTasks(hot[:10], tasks[:10])
		fillHotTasks(hot[30:34], tasks[30:34])
		fillHotTasks(hot[38:45], tasks[38:45])
		fillHotTasks(hot[51:], tasks[51:])
		f := p.pendingHot(hot)
		if p.hotPending {
			t.Fatal("pendingHot left hotPending set")
		}
		for _, e := range splits {
			f.to(hot, tasks, e)
			for i := range hot {
				want := hotOf(&tasks[i])
				if i >= e && copied[i] {
					want = hotTask{dur: -1, kind: 99} // not yet written
				}
				if hot[i] != want {
					t.Fatalf("splits %v, after to(%d): record %d = %+v, want %+v", splits, e, i, hot[i], want)
				}
			}
		}
		for i := range hot {
			if want := hotOf(&tasks[i]); hot[i] != want {
				t.Fatalf("splits %v: record %d = %+v, want %+v", splits, i, hot[i], want)
			}
		}
	}
	// out of order (a source not wholly before its copy): every record
	// converted at once, nothing left to the cursor
	tasks := mk()
	hot := make([]hotTask, n)
	p := &Program{Tasks: tasks, hot: hot, keepHot: true, hotPending: true, copies: []copySeg{{10, 5, 10}}}
	f := p.pendingHot(hot)
	if len(f.cs) != 0 {
		t.Fatal("a malformed list left to the cursor")
	}
	for i := range hot {
		if want := hotOf(&tasks[i]); hot[i] != want {
			t.Fatalf("malformed list: record %d = %+v, want %+v", i, hot[i], want)
		}
	}
}
