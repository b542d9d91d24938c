package parallel

import (
	"fmt"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/simtrain/simtrain/sim/engine"
)

// Launch-queue waits after a failed shortened play (issue 18, build27).
// After a shortened play fails, the full step (or a longer shortened play)
// is built in the same Arena, and its programs begin with the failed
// play's common prefixes (Fork): ≈ 0.68 M of the ≈ 6 M tasks the 70B
// sweep's builds walk in setQueueWaits (≈ 72 instructions a task) were
// walked twice. The walk over a task reads only the tasks before it — their
// kinds, streams and issue times — and the host's queue bound and
// per-kernel costs, so where those agree on a prefix, its waits, self
// waits and launch-queue entries are the failed play's, which Detach
// copies with the rest of the prefix; the walk then starts after it.

// queuePrefix is what setQueueWaits takes of a failed shortened play's
// program for the full step's (Fork.queuePrefix): its first len(hot)
// tasks' records (kind, stream, issue time and queue wait), each stream's
// launch-queue entries of those tasks, their self waits (nil when the
// program had none) and the walk's queue bound and per-kernel costs.
type queuePrefix struct {
	hot   []hotTask
	queue [NumStreams][]queueEntry
	qself []int32
	qrest []engine.Time
	qlim  int64
	perK  [2]int64
	// own says the program's first len(hot) records are byte copies of
	// hot, made by its build and not written since (Fork.builtPrefix).
	own bool
}

// resumeQueues sets the walk's state to what it is after pre's tasks when
// they are this program's first (every kind, stream and issue time equal,
// the same queue bound q and per-kernel costs, and room for their
// entries), copying their queue waits, self waits and entries, and
// returns how many tasks that covers and whether any of them waits; else
// 0 (the walk starts at the first task and rewrites every wait it
// wrote). Each stream's entries end where the walk's would, its launches
// are its last entry's end, and its search starts at the first entry not
// done before its next launch (the walk's own start lies at or before it
// and after every entry a later search skips: the ends only grow, so the
// searches find the same entries); its last task of no launches is left
// unknown (prevMet finds it when needed).
//
//go:noinline
func (p *Program) resumeQueues(st *[streamSlots]streamQueue, pre *queuePrefix, q int64, perK [2]int64) (int, bool) {
	c := len(pre.hot)
	if c == 0 || c > len(p.Tasks) || pre.qlim != q || pre.perK != perK {
		return 0, false
	}
	for s := range pre.queue {
		if len(pre.queue[s]) > len(st[s].q) || p.arena != nil && !p.arena.queue.above(pre.queue[s]) {
			return 0, false // (or parked where this build's lists now lie: Fork.Detach)
		}
	}
	// Every record compared as sameHot does, its issue time's word and
	// the kind's and stream's bytes of its last, OR-ed without a branch a
	// task, the queue waits copied before the result is known (refused,
	// the walk from the first task rewrites every wait): 20 → ≈ 12
	// instructions a task, the prefix's 0.68 M on the 70B sweep (issue
	// 18, fail49).
	tasks, hot := p.hot[:c], pre.hot[:c] // (the program's records: setQueueWaits)
	var d uint64
	var waits int32
	if pre.own {
		// The program's records are hot's bytes (its build copied
		// them: Fork.builtPrefix): nothing to compare or copy, only
		// whether any waits, and, on the same word (hostAfter,
		// queueAfter: sameHot's third), whether every wait lies in
		// the prefix, which Resume then need not test again
		// (prefixSource.below; issue 18, fork50b).
		// (four records an iteration, each one's third word at byte
		// 32·i + 16 of the records: ≈ 10 → 5 instructions a record)
		k := laneBias(int32(c) + 1)
		var o, w uint64
		base := unsafe.Add(unsafe.Pointer(unsafe.SliceData(tasks)), 16)
		n4 := uintptr(c&^3) * 32
		for b := uintptr(0); b < n4; b += 128 {
			v0, v1 := *(*uint64)(unsafe.Add(base, b)), *(*uint64)(unsafe.Add(base, b+32))
			v2, v3 := *(*uint64)(unsafe.Add(base, b+64)), *(*uint64)(unsafe.Add(base, b+96))
			o |= v0 | v1 | v2 | v3
			w |= (v0 + k) | (v1 + k) | (v2 + k) | (v3 + k)
		}
		for i := c &^ 3; i < c; i++ {
			v := (*[4]uint64)(unsafe.Pointer(&tasks[i]))[2]
			o |= v
			w |= v + k
		}
		if o&hotQueueAfterMask != 0 {
			waits = 1
		}
		p.prefix.below = (o|w)&laneSigns == 0
	} else {
		mask := hotKindStreamMask
		for i := range hot {
			x, y := (*[4]uint64)(unsafe.Pointer(&tasks[i])), (*[4]uint64)(unsafe.Pointer(&hot[i]))
			d |= (x[1] ^ y[1]) | (x[3]^y[3])&mask
			w := hot[i].queueAfter
			tasks[i].queueAfter = w
			waits |= w
		}
	}
	if d != 0 {
		return 0, false // a kind, stream or issue time differs
	}
	queued := waits != 0
	if pre.qself != nil && slices.ContainsFunc(pre.qself[:c], func(v int32) bool { return v != 0 }) {
		p.queueWaitBufs(len(p.Tasks))
		copy(p.qself, pre.qself[:c])
		copy(p.qrest, pre.qrest[:c])
		queued = true
	}
	for s := range pre.queue {
		e, sq := pre.queue[s], &st[s]
		n := copy(sq.q, e)
		sq.n, sq.head, sq.done, sq.last = n, 0, 0, 0
		if n > 0 {
			sq.done = e[n-1].end()
			first := sq.done - q
			sq.head, _ = slices.BinarySearchFunc(e, first, func(x queueEntry, v int64) int {
				if x.end() <= v {
					return -1
				}
				return 1
			})
		}
	}
	return c, queued
}

// hotKindStreamMask keeps a hotTask's kind and stream bytes (26 and 28)
// of the word loaded from its byte 24 (whatever the byte order).
var hotKindStreamMask = func() uint64 {
	m := [8]byte{2: 0xff, 4: 0xff}
	return *(*uint64)(unsafe.Pointer(&m))
}()

// hotQueueAfterMask keeps a hotTask's queueAfter bytes (20 to 23) of the
// word loaded from its byte 16 (whatever the byte order).
var hotQueueAfterMask = func() uint64 {
	m := [8]byte{4: 0xff, 5: 0xff, 6: 0xff, 7: 0xff}
	return *(*uint64)(unsafe.Pointer(&m))
}()

var (
	_ = [1]struct{}{}[unsafe.Offsetof(hotTask{}.issue)-8]
	_ = [1]struct{}{}[unsafe.Offsetof(hotTask{}.kind)-26]
	_ = [1]struct{}{}[unsafe.Offsetof(hotTask{}.stream)-28]
	_ = [1]struct{}{}[unsafe.Sizeof(hotTask{}.kind)-1]
	_ = [1]struct{}{}[unsafe.Sizeof(hotTask{}.stream)-1]
)

// prevMet is 1 + the last task before c on stream s that setQueueWaits'
// walk meets (any but a receive), or 0: a stream's previous task when the
// walk has met none of its tasks since it started at c.
//
//go:noinline
func (p *Program) prevMet(c int, s Stream) int32 {
	for t := c - 1; t >= 0; t-- {
		if task := &p.hot[t]; task.stream == s && queueClass[task.kind] != queueNone {
			return int32(t) + 1
		}
	}
	return 0
}

// queuePrefixChecks, when set, makes BuildAfter walk every program it
// walked after a copied prefix again from its first task and compare
// (SetQueuePrefixChecks).
var queuePrefixChecks struct {
	on              atomic.Bool
	progs, resumed  atomic.Int64
	tasks, prefixed atomic.Int64
	bad             atomic.Int64
	first           atomic.Value
}

// SetQueuePrefixChecks turns BuildAfter's checks of the launch-queue walks
// that started after a copied prefix on or off, and returns the counts so
// far: programs given a prefix, of them walked after it, their tasks and
// how many of those were in prefixes, and the first mismatch found.
// Tests only: it walks each such program twice.
func SetQueuePrefixChecks(on bool) (progs, resumed, tasks, prefixed int64, err error) {
	queuePrefixChecks.on.Store(on)
	if e, ok := queuePrefixChecks.first.Load().(error); ok {
		err = e
	}
	c := &queuePrefixChecks
	return c.progs.Load(), c.resumed.Load(), c.tasks.Load(), c.prefixed.Load(), err
}

// checkQueueWalks walks p from its first task again, plainly
// (rewalkQueues), when its walk started after a prefix (given one: pre) or
// took copied ranges, and compares every task's queue wait (its
// record's), the self waits, the lists and the queued flag with what that
// walk left, for each of the checks that is on (SetQueuePrefixChecks,
// SetQueueCopyChecks): it counts the programs and tasks and records the
// first mismatch in each.
func checkQueueWalks(p *Program, h *HostModel, pre bool) {
	from, copied := p.qfrom, p.qcopied
	cp, cc := &queuePrefixChecks, &queueCopyChecks
	prefixOn, copyOn := pre && cp.on.Load(), cc.on.Load()
	if prefixOn {
		cp.progs.Add(1)
		if from > 0 {
			cp.resumed.Add(1)
			cp.tasks.Add(int64(len(p.Tasks)))
			cp.prefixed.Add(int64(from))
		}
	}
	if copyOn && copied > 0 {
		cc.progs.Add(1)
		cc.tasks.Add(int64(len(p.Tasks)))
		cc.copied.Add(int64(copied))
	}
	prefixOn = prefixOn && from > 0
	copyOn = copyOn && copied > 0
	if !prefixOn && !copyOn {
		return
	}
	err := rewalkQueues(p, h, fmt.Sprintf("prefix %d, %d tasks copied", from, copied), "after the prefix and copies")
	if err == nil {
		return
	}
	if prefixOn && cp.bad.Add(1) == 1 {
		cp.first.Store(err)
	}
	if copyOn && cc.bad.Add(1) == 1 {
		cc.first.Store(err)
	}
}

// rewalkQueues walks p's launch queues again from its first task, with
// neither a prefix nor its copied ranges (copyQueues), and reports the
// first difference between what that walk leaves and what p held: a
// task's queue wait (its record's), the self waits, the lists or the
// queued flag (an error naming the program by what and its way by how).
// p is left as the plain walk leaves it.
func rewalkQueues(p *Program, h *HostModel, what, how string) error {
	waits := make([]int32, len(p.Tasks))
	for i := range p.Tasks {
		waits[i] = int32(p.QueueAfter(i) + 1)
	}
	qself, qrest := slices.Clone(p.qself), slices.Clone(p.qrest)
	var queue [NumStreams][]queueEntry
	for s := range p.queue {
		queue[s] = slices.Clone(p.queue[s])
	}
	queued := p.queued
	copies := p.copies
	p.copies = nil
	p.setQueueWaits(h, nil)
	p.copies = copies
	for i := range p.Tasks {
		if w := int32(p.QueueAfter(i) + 1); w != waits[i] {
			return fmt.Errorf("stage %d (%s): task %d waits for %d %s, %d walked whole", p.Stage, what, i, waits[i]-1, how, w-1)
		}
	}
	if (qself == nil) != (p.qself == nil) || !slices.Equal(qself, p.qself) || !slices.Equal(qrest, p.qrest) {
		return fmt.Errorf("stage %d (%s): self waits differ", p.Stage, what)
	}
	for s := range queue {
		if !slices.Equal(queue[s], p.queue[s]) {
			return fmt.Errorf("stage %d (%s): stream %d's launch-queue list differs", p.Stage, what, s)
		}
	}
	if queued != p.queued {
		return fmt.Errorf("stage %d (%s): queued %v %s, %v walked whole", p.Stage, what, queued, how, p.queued)
	}
	return nil
}
