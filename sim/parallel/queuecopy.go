package parallel

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Launch-queue waits of copied ranges (issue 18, q31). Most of a build's
// tasks are bulk copies of earlier ranges (Program.copies: copyLayers,
// copyPass), with their source's kinds, streams and issue times, so each
// copied task has its source task's launches. setQueueWaits' walk spends
// ≈ 72 instructions a task finding those launches again (a kind's class,
// a division) and appending them one task at a time; copyQueues takes
// them from the source's entries in the lists instead, a stream at a
// time.

// copyQueues sets the queue waits, list entries and self waits of the
// copied ranges that begin cs (Program.copies from the walk's position
// on) as setQueueWaits' walk would, the streams' state st being the
// walk's after the tasks before cs[0].at, and returns how many ranges it
// took (0: none, the walk goes over cs[0]) and whether some task of them
// waits. It takes cs[0] with the chain of ranges after it that each copy
// the one before, right after it, with its length (a run of layer
// copies), when every task of cs[0]'s source is a receive (no launches,
// no wait) or has launches; it changes nothing otherwise.
//
// A copied task has its source's kind, stream and issue time (copySeg),
// so its launches. Then a stream's entries for the copy are the source's
// run of entries moved by the copy's offset (at − src) in tasks and by the
// stream's launches between the two ranges' starts (the copy's first task
// starts where the stream's launches stand, the source's first where its
// entry before the run ends); each range of the chain moves the one
// before by its length and by the run's launches. Each copied task's wait
// follows from the launches before it on its stream, the end of the entry
// before its own, by the walk's own search. The streams are independent
// in the walk (each task's wait and entry read only its stream's state),
// so taking them one at a time gives the walk's waits, entries, search
// starts and launches; a stream's last task of no launches
// (streamQueue.last) does not change: the ranges have none. streams lists
// the streams whose lists may hold entries (the program's streams with
// tasks); cur carries what the calls before left (copyCursor).
//
//go:noinline
func (p *Program) copyQueues(st *[streamSlots]streamQueue, streams []Stream, cs []copySeg, q int64, cur *copyCursor) (int, bool) {
	if p.qwide != nil {
		return 0, false // (its ends are not the entries': walkWide)
	}
	c := cs[0]
	at, src, n := c.at, c.src, c.n
	// the chain: ranges each copying the one before, right after it
	k, end := 1, at+n
	for k < len(cs) && cs[k].src == cs[k-1].at && cs[k].at == end && cs[k].n == n {
		k++
		end += n
	}
	pp := p.p2p
	i := cur.p2p
	for i < len(pp) && pp[i] < at {
		i++
	}
	cur.p2p = i
	var runs [NumStreams]entryRun
	nr, big := -1, false
	for r := range cur.taken {
		if t := &cur.taken[r]; t.at == src && t.n == n && n > 0 {
			// a range taken before: its runs are the source's, and its
			// tasks receives or of launches
			runs, nr, big = t.runs, t.nr, t.big
			break
		}
	}
	if nr < 0 {
		// the receives among the copy's tasks (Program.p2p, in task order)
		covered := int32(0)
		for j := i; j < len(pp) && pp[j] < at+n; j++ {
			if p.hot[pp[j]].kind == KindRecv {
				covered++
			}
		}
		// each stream's run of source entries: the walk has passed every
		// task before at, so at most at − src of a list's entries are the
		// source's or later
		nr = 0
		for _, s := range streams {
			e := st[s&(streamSlots-1)].q[:st[s&(streamSlots-1)].n]
			if len(e) == 0 || e[len(e)-1].id < src {
				continue
			}
			a := entryAt(e, max(0, len(e)-int(at-src)), len(e), src)
			b := len(e)
			if src+n < at {
				b = entryAt(e, a, min(len(e), a+int(n)), src+n)
			}
			if a < b {
				runs[nr] = entryRun{s, int32(a), int32(b)}
				nr++
			}
			covered += int32(b - a)
		}
		if covered != n {
			return 0, false
		}
		if p.qbig { // some source task may have more launches than the queue
			for _, r := range runs[:nr] {
				e, d0 := st[r.s&(streamSlots-1)].q, int64(0)
				if r.lo > 0 {
					d0 = e[r.lo-1].end()
				}
				big = big || bigRun(e[r.lo:r.hi], d0, q)
			}
		}
	}
	// the copies' last ends must stay under what an entry holds (the
	// walk goes over a range that passes it, exactly: walkWide); a
	// program whose issue times bound its launches below it (qnarrow:
	// the 70B sweep's) skips the test (+5.6 M instructions of 3,700 M
	// on -bench Sweep70BAll, cachegrind)
	if !p.qnarrow && !copiesFit(st, runs[:nr], k) {
		return 0, false
	}
	for ; i < len(pp) && pp[i] < end; i++ {
		if t := &p.hot[pp[i]]; t.kind == KindRecv {
			t.queueAfter = 0
		}
	}
	queued := false
	t := &cur.taken[cur.next%uint(len(cur.taken))]
	cur.next++
	t.at, t.n, t.nr, t.big = at, end-at, nr, big
	rc := runCopy{unsafe.Pointer(unsafe.SliceData(p.hot)), uintptr(len(p.hot)), q}
	for ri, r := range runs[:nr] {
		sq := &st[r.s&(streamSlots-1)]
		e := sq.q
		d0 := int64(0)
		if r.lo > 0 {
			d0 = e[r.lo-1].end()
		}
		m := int(r.hi - r.lo)
		m0, m1 := sq.n, sq.n+k*m
		done0 := sq.done
		copyRun(sq, m0, int(r.lo), m, done0-d0, at-src, &rc)
		if k > 1 { // each later range: the one before, moved (forward, overlapping)
			copyRun(sq, m0+m, m0, m1-m0-m, e[r.hi-1].end()-d0, n, &rc)
		}
		if big {
			// copySelves reads the stream's state before the entries
			head, done := sq.head, sq.done
			sq.done = done0
			if p.copySelves(sq, m0, m1, q) {
				queued = true
			}
			sq.head, sq.done = head, done
		}
		// the launches before the last entry are the most before any of
		// them: some task waits when that one does
		if m1-1 > m0 {
			done0 = e[m1-2].end()
		}
		queued = queued || done0 >= q
		sq.n = m1
		t.runs[ri] = entryRun{r.s, int32(m0), int32(m1)}
	}
	return k, queued
}

// copiesFit reports whether k copies of each run, one after another on
// their streams after the launches st holds, end under queueWide.
//
//go:noinline
func copiesFit(st *[streamSlots]streamQueue, runs []entryRun, k int) bool {
	for _, r := range runs {
		sq := &st[r.s&(streamSlots-1)]
		d := sq.q[r.hi-1].end()
		if r.lo > 0 {
			d -= sq.q[r.lo-1].end()
		}
		if sq.done+int64(k)*d >= queueWide {
			return false
		}
	}
	return true
}

// copyCursor is what copyQueues carries from one call to the next: the
// first entry of Program.p2p not before the ranges passed, and the last
// few regions it took (taken, the latest at next−1), each with its runs
// of entries: a pass copied from the pass copied before it finds its
// source's runs there.
type copyCursor struct {
	p2p   int
	next  uint
	taken [4]takenCopy
}

// takenCopy is a region [at, at+n) of tasks copyQueues took, the runs of
// its entries in its streams' lists (runs[:nr]), and whether some task of
// it may have more launches than the queue holds (big: a self wait).
type takenCopy struct {
	at, n int32
	nr    int
	big   bool
	runs  [NumStreams]entryRun
}

// entryRun is a run [lo, hi) of stream s's list entries.
type entryRun struct {
	s      Stream
	lo, hi int32
}

// bigRun reports whether some entry of run e, whose launches start at d0,
// adds more launches than the queue's q (a self wait).
func bigRun(e []queueEntry, d0, q int64) bool {
	for i := range e {
		end := e[i].end()
		if end-d0 > q {
			return true
		}
		d0 = end
	}
	return false
}

// runCopy is what copyRun's calls of one copyQueues share: the program's
// task records (tp, nt of them) and the queue q (in launches).
type runCopy struct {
	tp unsafe.Pointer
	nt uintptr
	q  int64
}

// copyRun appends to stream state sq's list e = sq.q, at e[m0:], the n
// entries from e[lo] on, each moved by d launches and shift tasks, in
// order (the source may lie just before, overlapping: each entry is read
// after the write that made it), and sets the queue wait of each one's
// task (of c's records) as the walk does, the stream's launches before
// e[m0] being sq.done and its search starting at entry sq.head; it leaves
// in sq.head and sq.done where the search stands and the launches after
// the entries (sq.n is the caller's).
//
// It takes seven words, all in registers, and reads and writes the
// search's state in sq: with the list, the source and the tasks as
// slices and the state as values (fifteen words, six of them passed on
// the stack), copyQueues' loop over the runs cost ≈ 160 instructions a
// stream run, most of them moving and spilling those values around the
// calls; it calls copyQuiet only when the stream's launches stand below
// the queue's. On the 70B sweep (cachegrind, `Sweep70BAll` 1x; ≈ 150 k
// runs, 161 k calls): copyQueues 39.9 → 33.1 M, copyRun 12.0 → 15.5 M,
// copyQuiet 20.2 → 19.2 M (lists48).
//
// Its loops (copyQuiet, then copyWaiting once the stream's launches reach
// the queue's) read and write through unsafe.Add, without bounds checks
// but each copied task's index (checked against c.nt): dst and the
// source are checked here, and the search's bound is proved once a run
// (see below). In one bounds-checked loop over indices the compiler kept
// more values than the registers and spilled and reloaded four of them
// per entry: on the 70B sweep (cachegrind, `Sweep70BAll` 1x) copyRun was
// 111.4 M instructions, ≈ 22 an entry before the queue fills and ≈ 45
// after (1.11 M and 1.80 M entries); now ≈ 17 and ≈ 20 (+ 3 for each
// further entry the search passes; post48).
func copyRun(sq *streamQueue, m0, lo, n int, d int64, shift int32, c *runCopy) {
	if n == 0 {
		return
	}
	e, head := sq.q, sq.head
	src := e[lo : lo+n]
	dst := e[m0 : m0+n]
	// Both loops walk byte offsets from −(n−1) entries up to 0 from the
	// runs' last entries (copyWaiting), each a function of its own: with
	// the first loop here the compiler reloaded three values it keeps for
	// after the loop in every iteration.
	sp := unsafe.Pointer(&src[n-1])
	dp := unsafe.Pointer(&dst[n-1])
	tp, nt, q := c.tp, c.nt, c.q
	o, done := -(n-1)*int(entrySize), sq.done
	if done < q { // (else every task waits: no call)
		o, done = copyQuiet(dp, sp, o, tp, nt, done, d, shift, q)
		if o > 0 {
			sq.done = done
			return
		}
	}
	// The search reads e[head:] without bounds checks: it stops at the
	// first entry whose launches end after first = done − q, and the last
	// entry written (e[last]) ends at done, after first (q > 0), so no
	// search passes it; head starts at or before it (checked here), and
	// the entry each search stops at stays at or before the last written.
	k := n - 1 + o/int(entrySize) // the entries moved
	last := m0 + k - 1
	if q <= 0 || head < 0 || head > last || e[last].end() != done {
		panic(badRun(head, last, done, q))
	}
	sq.head, sq.done = copyWaiting(unsafe.SliceData(e), head, (*queueEntry)(unsafe.Add(dp, o)), (*queueEntry)(unsafe.Add(sp, o)), n-k, tp, nt, done, d, shift, q)
}

// copyQuiet is copyRun's first loop: it moves the entries of src to dst
// (the runs' last entries) from byte offset o up to 0, each moved by d
// launches and shift tasks, while the stream's launches stand below the
// queue's q (no task waits: the tasks' waits, of tasks tp[:nt], 0), and
// returns the offset of the first entry it did not move (> 0: none left)
// and the launches after those it moved.
//
//go:noinline
func copyQuiet(dp, sp unsafe.Pointer, o int, tp unsafe.Pointer, nt uintptr, done, d int64, shift int32, q int64) (int, int64) {
	for ; o <= 0 && done < q; o += int(entrySize) {
		x := (*queueEntry)(unsafe.Add(sp, o))
		id := x.id + shift
		if uintptr(id) >= nt {
			panic(badTask(id, nt))
		}
		(*hotTask)(unsafe.Add(tp, uintptr(id)*hotSize)).queueAfter = 0
		done = x.end() + d
		*(*queueEntry)(unsafe.Add(dp, o)) = qEntry(done, id)
	}
	return o, done
}

// copyWaiting is copyRun's second loop, every task of it waiting: it
// moves the n entries of the list e from src[0] to dst[0] (addresses; each
// entry read after the write that made it where they overlap) as
// copyQuiet does, and sets each one's task's wait to the entry its search,
// from list entry head, stops at; it returns the search's entry and the
// launches after the last entry. The loop walks byte offsets from −(n−1)
// entries up to 0 from the last entry of each range and the search a
// pointer into the list: with indices or a count up to n the loop's values
// were one more than the registers (cachegrind: ≈ 24 instructions an
// entry with a value reloaded, against ≈ 45 in copyRun's loop before).
//
//go:noinline
func copyWaiting(e *queueEntry, head int, dst, src *queueEntry, n int, tp unsafe.Pointer, nt uintptr, done, d int64, shift int32, q int64) (int, int64) {
	hp := unsafe.Add(unsafe.Pointer(e), uintptr(head)*entrySize)
	sp := unsafe.Add(unsafe.Pointer(src), uintptr(n-1)*entrySize) // the last entries
	dp := unsafe.Add(unsafe.Pointer(dst), uintptr(n-1)*entrySize)
	first := done - q // the launch the next task's first must wait for
	for o := -(n - 1) * int(entrySize); o <= 0; o += int(entrySize) {
		x := (*queueEntry)(unsafe.Add(sp, o))
		id := x.id + shift
		for (*queueEntry)(hp).end() <= first {
			hp = unsafe.Add(hp, entrySize)
		}
		if uintptr(id) >= nt {
			panic(badTask(id, nt))
		}
		(*hotTask)(unsafe.Add(tp, uintptr(id)*hotSize)).queueAfter = (*queueEntry)(hp).id + 1
		done := x.end() + d
		*(*queueEntry)(unsafe.Add(dp, o)) = qEntry(done, id)
		first = done - q
	}
	return int((uintptr(hp) - uintptr(unsafe.Pointer(e))) / entrySize), first + q
}

// entrySize and hotSize are a queueEntry's and a hotTask's sizes in bytes
// (copyRun's offsets).
const (
	entrySize = unsafe.Sizeof(queueEntry{})
	hotSize   = unsafe.Sizeof(hotTask{})
)

// badTask is the panic of a copied entry whose task is not the program's.
func badTask(id int32, n uintptr) string {
	return fmt.Sprintf("parallel: copied queue entry of task %d, program of %d", id, n)
}

// badRun is the panic of a copyRun whose search could leave the list: its
// start past the last entry written, or that entry not ending at the
// stream's launches (a call in copyRun's panicking branch, which keeps no
// value live: called as a function that panics, the loops' values were
// spilled around it).
func badRun(head, last int, done, q int64) string {
	return fmt.Sprintf("parallel: copyRun search from entry %d, last entry %d (launches %d, queue %d)", head, last, done, q)
}

// copySelves records the self waits of the entries e[m0:m1] of stream
// state sq's list of more launches than the queue's q, as the walk does
// (queueSelf: the task before each on the stream is the entry before it,
// or for the first, the stream's last task before them), and reports
// whether it recorded any. sq holds the state before e[m0].
//
//go:noinline
func (p *Program) copySelves(sq *streamQueue, m0, m1 int, q int64) bool {
	e := sq.q
	done := sq.done
	n, any := sq.n, false
	for m := m0; m < m1; m++ {
		if k := e[m].end() - done; k > q {
			sq.n = m
			task := &p.hot[e[m].id]
			last := sq.prev()
			if int(last) <= p.qfrom {
				last = p.prevMet(p.qfrom, task.stream)
			}
			if last > 0 {
				p.queueSelf(int(e[m].id), last, task.issue, k, q)
				any = true
			}
		}
		done = e[m].end()
	}
	sq.n = n
	return any
}

// entryAt is the first index in [lo, hi) of list e whose task is v or
// later (hi when none), given that the entries before lo are for tasks
// before v: the lists are in task order.
func entryAt(e []queueEntry, lo, hi int, v int32) int {
	for lo < hi {
		h := int(uint(lo+hi) >> 1)
		if e[h].id < v {
			lo = h + 1
		} else {
			hi = h
		}
	}
	return lo
}

// queueCopyChecks, when set, makes BuildAfter walk every program whose
// walk took copied ranges (copyQueues) again plainly and compare
// (SetQueueCopyChecks).
var queueCopyChecks struct {
	on                   atomic.Bool
	progs, tasks, copied atomic.Int64
	bad                  atomic.Int64
	first                atomic.Value
}

// SetQueueCopyChecks turns BuildAfter's checks of the launch-queue walks
// that took copied ranges from their sources' entries on or off, and
// returns the counts so far: programs whose walk took some, their tasks,
// how many of those it took, and the first mismatch found. Tests only: it
// walks each such program twice.
func SetQueueCopyChecks(on bool) (progs, tasks, copied int64, err error) {
	queueCopyChecks.on.Store(on)
	c := &queueCopyChecks
	if e, ok := c.first.Load().(error); ok {
		err = e
	}
	return c.progs.Load(), c.tasks.Load(), c.copied.Load(), err
}
