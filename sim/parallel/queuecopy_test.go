package parallel

import (
	"fmt"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
)

// setQueueWaits with copied ranges taken from their sources' list entries
// (copyQueues) leaves what the plain walk leaves (refQueueWaits through
// sameQueueWaits: waits, QueueSelf, queued, lists; and rewalkQueues, the
// walk without the copies: the hot records and flags too), on arena builds
// of several layouts and schedules with passes and layers copied, for
// queues that never fill, fill, and are outlaunched by copied tasks (self
// waits set in copies: copySelves), and with compute tasks of no launches
// (forward or backward kernels free), whose ranges copyQueues refuses and
// the walk goes over. Each of those cases occurs.
func TestQueueWaitsFromCopies(t *testing.T) {
	us := engine.Microsecond
	arena := new(Arena)
	pr := commPricer{unit: engine.Millisecond, comm: 300 * engine.Microsecond}
	hosts := []HostModel{
		{On: true, KernelFwd: 5 * us, KernelBwd: 5 * us, Call: 10 * us, Queue: 1 << 20},
		{On: true, KernelFwd: 5 * us, KernelBwd: 3 * us, Call: 10 * us, Queue: 64},
		{On: true, KernelFwd: 5 * us, KernelBwd: 3 * us, Call: 10 * us, Queue: 4},
		{On: true, KernelFwd: 0, KernelBwd: 7 * us, Call: us, Queue: 2},
		{On: true, KernelFwd: 2 * us, KernelBwd: 0, Call: us, Queue: 1},
	}
	tasks, copied, inRanges, refused, copiedSelfs := 0, 0, 0, 0, 0
	for _, l := range []struct{ tp, dp, pp, m int }{{1, 1, 1, 4}, {2, 2, 4, 16}, {4, 1, 8, 24}, {1, 4, 2, 3}} {
		for _, sched := range []pipeline.Schedule{pipeline.OneFOneB, pipeline.GPipe} {
			for hi, h := range hosts {
				_, cfg := stepConfig(t, l.tp, l.dp, l.pp, l.m, sched)
				cfg.Steps = 2
				cfg.Host = h
				cfg.Arena = arena
				progs, err := Build(cfg, pr)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range progs {
					name := fmt.Sprintf("%+v %v host %d stage %d", l, sched, hi, p.Stage)
					sameQueueWaits(t, name, p, &cfg.Host)
					n := 0
					for _, c := range p.copies {
						n += int(c.n)
					}
					tasks, copied, inRanges = tasks+len(p.Tasks), copied+p.qcopied, inRanges+n
					if p.qcopied < n {
						refused++
					}
					if p.qcopied == n && p.qself != nil {
						for _, c := range p.copies {
							for i := c.at; i < c.at+c.n; i++ {
								if p.qself[i] != 0 {
									copiedSelfs++
								}
							}
						}
					}
					if err := rewalkQueues(p, &cfg.Host, name, "from the copies"); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	t.Logf("%d tasks, %d in copied ranges, %d of them taken from their sources' entries; %d programs with ranges refused; %d self waits set in copies", tasks, inRanges, copied, refused, copiedSelfs)
	if copied < tasks/2 || refused == 0 || copiedSelfs == 0 {
		t.Errorf("%d of %d tasks copied, %d programs with ranges refused, %d self waits in copies: a case is missing", copied, tasks, refused, copiedSelfs)
	}
}

// entryAt finds the first entry of a task at or after v within its
// bounds, and bigRun the entries that add more launches than the queue.
func TestEntryAtAndBigRun(t *testing.T) {
	e := []queueEntry{{3, 2}, {5, 4}, {9, 5}, {20, 9}}
	for _, c := range []struct {
		lo, hi int
		v      int32
		want   int
	}{
		{0, 4, 0, 0}, {0, 4, 2, 0}, {0, 4, 3, 1}, {0, 4, 5, 2}, {0, 4, 6, 3}, {0, 4, 9, 3}, {0, 4, 10, 4},
		{2, 4, 3, 2}, {1, 3, 10, 3}, {2, 2, 0, 2},
	} {
		if got := entryAt(e, c.lo, c.hi, c.v); got != c.want {
			t.Errorf("entryAt(%d, %d, %d) = %d, want %d", c.lo, c.hi, c.v, got, c.want)
		}
	}
	for _, c := range []struct {
		d0, q int64
		want  bool
	}{
		{0, 11, false}, {0, 10, true}, {0, 3, true}, {-10, 12, true}, {2, 11, false},
	} {
		if got := bigRun(e, c.d0, c.q); got != c.want {
			t.Errorf("bigRun(d0 %d, q %d) = %v, want %v", c.d0, c.q, got, c.want)
		}
	}
}
