package parallel

import (
	"math"
	"math/rand/v2"
	"slices"
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

// TestQueueEntryHalves checks that qEntry's entry reads back every end an
// entry holds, [0, queueWide), with its id, and that an entry is 8 bytes
// (issue 18, q851: ends past it are Program.qwide's, TestQueueWide).
func TestQueueEntryHalves(t *testing.T) {
	for _, c := range []struct {
		end int64
		id  int32
	}{
		{0, 0}, {1, 7}, {1<<31 - 1, 1}, {1 << 31, 2}, {1<<32 - 1, 3},
		{1<<32 - 2, 1<<31 - 1}, {12345, -1}, {1 << 30, math.MaxInt32},
	} {
		e := qEntry(c.end, c.id)
		if e.end() != c.end || e.id != c.id {
			t.Errorf("qEntry(%d, %d) reads back end %d, id %d", c.end, c.id, e.end(), e.id)
		}
	}
	if s := unsafe.Sizeof(queueEntry{}); s != 8 {
		t.Errorf("a queueEntry is %d bytes, want 8", s)
	}
	if queueWide != 1<<32 {
		t.Errorf("queueWide %d, want 2^32", int64(queueWide))
	}
}

// plainCopyRun is copyRun as one bounds-checked loop over indices (its
// form before it was split into copyQuiet and copyWaiting): the reference.
func plainCopyRun(e []queueEntry, m0 int, src []queueEntry, tasks []hotTask, head int, done, d int64, shift int32, q int64) (int, int64) {
	for k := range src {
		x := src[k]
		id := x.id + shift
		tasks[id].queueAfter = 0
		if done >= q {
			first := done - q
			for e[head].end() <= first {
				head++
			}
			tasks[id].queueAfter = e[head].id + 1
		}
		done = x.end() + d
		e[m0+k] = qEntry(done, id)
	}
	return head, done
}

// copyRunOn is copyRun given the list, the source run (a part of the
// list), the tasks and the search's state as plainCopyRun takes them.
func copyRunOn(e []queueEntry, m0 int, src []queueEntry, tasks []hotTask, head int, done, d int64, shift int32, q int64) (int, int64) {
	lo := int((uintptr(unsafe.Pointer(unsafe.SliceData(src))) - uintptr(unsafe.Pointer(unsafe.SliceData(e)))) / entrySize)
	sq := &streamQueue{q: e, n: m0, head: head, done: done}
	copyRun(sq, m0, lo, len(src), d, shift, &runCopy{unsafe.Pointer(unsafe.SliceData(tasks)), uintptr(len(tasks)), q})
	return sq.head, sq.done
}

// copyRun (its two loops, the unchecked search and the offsets walked up
// to 0) moves the entries, sets the waits and returns the search's entry
// and the launches as the plain loop does: runs whose queue never fills,
// fills before, inside or at the last entry, of one entry, of none, a
// search starting at the list's first entry or at the walk's own, and a
// run of layer copies (the chain's second call, its source overlapping its
// destination). Every list entry and every task's wait is compared.
func TestCopyRunMatchesPlain(t *testing.T) {
	const tasksN, listN = 400, 160
	rng := rand.New(rand.NewPCG(18, 48))
	cases := 0
	for _, c := range []struct {
		m0, lo, hi int   // the list's first m0 entries; the source run e[lo:hi]
		q          int64 // the queue (in launches)
		chain      int   // ranges of the chain after the first
		walkHead   bool  // the search starts at the walk's entry (else 0)
	}{
		{10, 2, 8, 1 << 40, 0, false}, // never waits
		{10, 2, 8, 1, 0, true},        // every task waits
		{10, 2, 8, 1, 0, false},
		{30, 5, 25, 40, 0, true}, // fills inside the run
		{30, 5, 25, 40, 0, false},
		{30, 20, 30, 60, 0, true},
		{12, 11, 12, 20, 0, true}, // one entry
		{12, 4, 4, 20, 0, true},   // none
		{20, 4, 12, 30, 3, true},  // a chain, its later ranges overlapping
		{20, 4, 12, 70, 4, false},
		{20, 0, 20, 1 << 40, 2, true},
		{40, 10, 40, 90, 2, true},
	} {
		for rep := 0; rep < 4; rep++ {
			e := make([]queueEntry, listN)
			tasks := make([]hotTask, tasksN)
			done := int64(0)
			for i := range c.m0 {
				done += 1 + rng.Int64N(6)
				e[i] = qEntry(done, int32(2*i)+rng.Int32N(2))
			}
			for i := c.m0; i < listN; i++ { // not yet written
				e[i] = qEntry(rng.Int64N(1000), rng.Int32N(tasksN))
			}
			for i := range tasks {
				tasks[i].queueAfter = rng.Int32N(50)
			}
			head := 0
			if c.walkHead && done >= c.q { // where the walk's search stands
				for e[head].end() <= done-c.q {
					head++
				}
			}
			d0 := int64(0)
			if c.lo > 0 {
				d0 = e[c.lo-1].end()
			}
			shift := int32(2*c.m0) - e[max(c.lo, 0)].id
			e2, tasks2 := slices.Clone(e), slices.Clone(tasks)
			m := c.hi - c.lo
			run := func(f func([]queueEntry, int, []queueEntry, []hotTask, int, int64, int64, int32, int64) (int, int64), e []queueEntry, tasks []hotTask) (int, int64) {
				h, dn := f(e, c.m0, e[c.lo:c.hi], tasks, head, done, done-d0, shift, c.q)
				if c.chain > 0 && m > 0 {
					h, dn = f(e, c.m0+m, e[c.m0:c.m0+c.chain*m], tasks, h, dn, e[c.hi-1].end()-d0, shift, c.q)
				}
				return h, dn
			}
			if m > 0 && int(e[c.hi-1].id+shift)+(c.chain+1)*int(shift) >= tasksN {
				t.Fatalf("case %+v: the test's tasks are too few", c)
			}
			h1, d1 := run(copyRunOn, e, tasks)
			h2, d2 := run(plainCopyRun, e2, tasks2)
			if h1 != h2 || d1 != d2 {
				t.Errorf("case %+v: copyRun returned entry %d, launches %d; the plain loop %d, %d", c, h1, d1, h2, d2)
			}
			if !slices.Equal(e, e2) {
				t.Errorf("case %+v: lists differ", c)
			}
			for i := range tasks {
				if tasks[i].queueAfter != tasks2[i].queueAfter {
					t.Errorf("case %+v: task %d waits for %d, the plain loop %d", c, i, tasks[i].queueAfter, tasks2[i].queueAfter)
					break
				}
			}
			cases++
		}
	}
	t.Logf("%d runs", cases)
}

// copyRun refuses, by a panic rather than a read or write outside its
// storage, a search that starts past the last entry written, a stream
// whose launches are not its last entry's, a queue of no launches, and a
// copied entry whose task is not among the tasks (in either loop).
func TestCopyRunRefusesMalformed(t *testing.T) {
	base := []queueEntry{qEntry(2, 0), qEntry(4, 1), qEntry(6, 2), qEntry(8, 3)}
	for _, c := range []struct {
		name       string
		head       int
		done, q    int64
		shift      int32
		ntasks     int
		wantsPanic bool
	}{
		{"well formed", 0, 8, 3, 4, 16, false},
		{"search past the last entry", 4, 8, 3, 4, 16, true},
		{"negative search start", -1, 8, 3, 4, 16, true},
		{"launches not the last entry's", 0, 9, 3, 4, 16, true},
		{"queue of no launches", 0, 8, 0, 4, 16, true},
		{"task past the program (waiting)", 0, 8, 3, 4, 6, true},
		{"task past the program (not waiting)", 0, 8, 100, 4, 6, true},
		{"negative task", 0, 8, 3, -5, 16, true},
	} {
		e := make([]queueEntry, 8)
		copy(e, base)
		tasks := make([]hotTask, c.ntasks)
		panicked := func() (p bool) {
			defer func() { p = recover() != nil }()
			copyRunOn(e, 4, e[0:4], tasks, c.head, c.done, c.done, c.shift, c.q)
			return false
		}()
		if panicked != c.wantsPanic {
			t.Errorf("%s: panicked %v, want %v", c.name, panicked, c.wantsPanic)
		}
	}
}
