package parallel

import "sync/atomic"

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
	for ; i < len(pp) && pp[i] < end; i++ {
		if t := &p.hot[pp[i]]; t.kind == KindRecv {
			t.queueAfter = 0
		}
	}
	queued := false
	t := &cur.taken[cur.next%uint(len(cur.taken))]
	cur.next++
	t.at, t.n, t.nr, t.big = at, end-at, nr, big
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
		head, done := copyRun(e, m0, e[r.lo:r.hi], p.hot, sq.head, done0, done0-d0, at-src, q)
		if k > 1 { // each later range: the one before, moved (forward, overlapping)
			head, done = copyRun(e, m0+m, e[m0:m1-m], p.hot, head, done, e[r.hi-1].end()-d0, n, q)
		}
		if big && p.copySelves(sq, m0, m1, q) {
			queued = true
		}
		// the launches before the last entry are the most before any of
		// them: some task waits when that one does
		if m1-1 > m0 {
			done0 = e[m1-2].end()
		}
		queued = queued || done0 >= q
		sq.n, sq.head, sq.done = m1, head, done
		t.runs[ri] = entryRun{r.s, int32(m0), int32(m1)}
	}
	return k, queued
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

// copyRun appends to a stream's list e, at e[m0:], the entries of src,
// each moved by d launches and shift tasks, in order (src may lie just
// before, overlapping: each entry is read after the write that made it),
// and sets the queue wait of each one's task as the walk does, the
// stream's launches before e[m0] being done and its search starting at
// entry head; it returns where the search stands and the launches after
// them.
func copyRun(e []queueEntry, m0 int, src []queueEntry, tasks []hotTask, head int, done, d int64, shift int32, q int64) (int, int64) {
	dst := e[m0 : m0+len(src)]
	k := 0
	// while the stream's launches stand below the queue's, no task waits
	for ; k < len(dst) && done < q; k++ {
		x := &src[k] // (through a pointer: end's halves read as one load)
		id := x.id + shift
		tasks[id].queueAfter = 0
		done = x.end() + d
		dst[k] = qEntry(done, id)
	}
	for ; k < len(dst); k++ {
		x := &src[k]
		id := x.id + shift
		first := done - q
		for e[head].end() <= first {
			head++
		}
		tasks[id].queueAfter = e[head].id + 1
		done = x.end() + d
		dst[k] = qEntry(done, id)
	}
	return head, done
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
