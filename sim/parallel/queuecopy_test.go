package parallel

import (
	"math"
	"testing"
	"unsafe"
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
	tasks, copied, inRanges, refused, copiedSelfs := 0, 0, 0, 0, 0
	eachQueueBuild(t, []bool{false}, func(name string, p *Program, h *HostModel) {
		sameQueueWaits(t, name, p, h)
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
		if err := rewalkQueues(p, h, name, "from the copies"); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%d tasks, %d in copied ranges, %d of them taken from their sources' entries; %d programs with ranges refused; %d self waits set in copies", tasks, inRanges, copied, refused, copiedSelfs)
	if copied < tasks/2 || refused == 0 || copiedSelfs == 0 {
		t.Errorf("%d of %d tasks copied, %d programs with ranges refused, %d self waits in copies: a case is missing", copied, tasks, refused, copiedSelfs)
	}
}

// entryAt finds the first entry of a task at or after v within its
// bounds, and bigRun the entries that add more launches than the queue.
func TestEntryAtAndBigRun(t *testing.T) {
	e := []queueEntry{qEntry(3, 2), qEntry(5, 4), qEntry(9, 5), qEntry(20, 9)}
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

// A queue entry keeps its end in two 32-bit halves (queueEntry): every
// end, including those past 32 bits and negative ones, comes back as
// stored, with its id, and an entry is 12 bytes (4 of an int64's
// alignment's padding saved per entry).
func TestQueueEntryHalves(t *testing.T) {
	for _, c := range []struct {
		end int64
		id  int32
	}{
		{0, 0}, {1, 7}, {1<<31 - 1, 1}, {1 << 31, 2}, {1<<32 - 1, 3}, {1 << 32, 4},
		{1<<32 + 5, 1<<31 - 1}, {1<<62 + 12345, 9}, {math.MaxInt64, 10}, {-1, 11}, {math.MinInt64, -1},
	} {
		e := qEntry(c.end, c.id)
		if e.end() != c.end || e.id != c.id {
			t.Errorf("qEntry(%d, %d) reads back end %d, id %d", c.end, c.id, e.end(), e.id)
		}
	}
	if s := unsafe.Sizeof(queueEntry{}); s != 12 {
		t.Errorf("a queueEntry is %d bytes, want 12", s)
	}
}
