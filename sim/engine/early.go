package engine

import (
	"slices"
	"unsafe"
)

// earlyQueue holds the queue's events that are not bucketed (queue): every
// event until the queue starts bucketing, the events before its last time
// after. It is a sorted array while it holds few events and a binary heap
// while it holds many; both give the (time, sequence) minimum, so which one
// holds the events never changes the order.
//
// Sorted, ev[head:] is in (time, sequence) order: the minimum is read at
// head and taken by moving head on, and a push walks from the back over
// the events later than the new one, moving each up one place. A sweep
// point's representative ranks hold ≈ 8 events at a push on average and
// 32 at most, with ≈ 3.4 of them later than the new one (counted on the
// 70B sweep's points, docs/design.md "Speed", engine21), so a push moves a
// few events where the heap's pop walked every level of the heap and sifted
// the last event back up, with a mispredicted branch or two per pop. In
// the queue-alone hold benchmark (`-bench QueueHold`, the new event's rank
// uniform among the pending ones) the sorted array was faster than the
// heap up to 32 events, no faster at 64 (sitting there, every push moved
// 32 events) and slower beyond, as the events it moves grow linearly.
//
// When a push finds the sorted array's storage full (its first sortedCap
// places taken, or all of them if it has fewer) and sortedMax events or
// more pending, the array turns into a heap as it stands (an array in ascending order is a binary min-heap) and
// stays one until it holds sortedMin events or fewer, when it is sorted
// again: the gap between the two keeps a queue that hovers around one of
// them from switching at every event. The limit is tested only there, not
// at every push, so that Engine.At's in-place insertion tests one bound
// (room); a queue that keeps sortedMax events or more pending turns into a
// heap within sortedCap pushes, and until then the array holds at most
// sortedCap events, whatever storage a heap left it.
//
// room lets Engine.At insert in place with one comparison: while
// len(ev) < room, q is sorted, an event was popped (head > 0: insertAbove's
// bound), its queue is not bucketing and the storage has room for one more
// event; and the engine's FIFO is empty and the engine not stopped
// (queue.hold, Engine.hold), which lets Engine.runAll test room alone. queue.setRoom sets it after every push through queue.push (the
// only way storage grows or the mode changes while the queue is not
// bucketing) to min(cap(ev), sortedCap) while q is sorted, head > 0 and
// its queue is not bucketing, else 0; what else changes the storage or the
// mode (makeRoom, toHeap, reset, copyFrom) sets it to 0, which only sends
// the next At the longer way. makeRoom keeps the last popped event below
// head (head 1), so that a move sends one At the longer way, not every
// one until the next pop; head is 0 with events pending only after a
// reset, a Restore or the heap, until the first pop.
type earlyQueue struct {
	ev   []event // sorted: ev[head:] in order; heap: a binHeap, head 0
	head int
	room int // len(ev) < room: At may insert in place (see above)
	heap bool
}

// A push into full sorted storage (sortedCap places, popped ones included)
// turns earlyQueue into a heap when it holds sortedMax events or more; at
// sortedMin it goes back to a sorted array.
const (
	sortedMax = 32
	sortedMin = sortedMax / 4
	sortedCap = 2 * sortedMax
)

func (q *earlyQueue) len() int { return len(q.ev) - q.head }

// min is the earliest event; q must not be empty.
func (q *earlyQueue) min() *event { return &q.ev[q.head] }

// push adds x, which must be the latest-scheduled event so far (the
// engine's At numbers events in schedule order): among the events at its
// time it goes last, so the walk from the back compares times only.
func (q *earlyQueue) push(x event) {
	if q.heap {
		(*binHeap)(&q.ev).push(x)
		return
	}
	if n := len(q.ev); n >= min(cap(q.ev), sortedCap) { // full
		if n-q.head >= sortedMax {
			q.toHeap(x)
			return
		}
		q.makeRoom()
	}
	q.insert(x)
}

// insert adds x, the latest-scheduled event so far, to q, sorted and with
// room for it (len < cap): among the events at its time x goes last, so
// the walk from the back compares times only. Small enough to be inlined
// into Engine.At.
func (q *earlyQueue) insert(x event) {
	n := len(q.ev)
	s := q.ev[:n+1]
	h := q.head
	// The walk indexes s from 0 and stops at head rather than reslicing
	// s at head, which cost ≈ 7 instructions an insertion in pointer
	// arithmetic (engine23); this check proves 0 <= h for the compiler,
	// so the loop's s[i-1] needs no bounds check.
	_ = s[h:]
	i := n
	for ; i > h && x.at < s[i-1].at; i-- {
		s[i] = s[i-1]
	}
	s[i] = x
	// Extending q.ev in place writes its length only (no pointer, so no
	// write barrier while the collector runs).
	q.ev = q.ev[:n+1]
}

// insertAbove is insert for an x not before the last popped event: q
// sorted, with room for x (len < cap), head > 0 and ev[head-1].at <=
// x.at. The event before head is the last one popped, and an event leaves
// early only to run (Engine.run, popUntil), at a time no later than the
// clock, so for Engine.At's x, after now, it holds; what rewrites the
// places below head (toHeap, reset, copyFrom) sets head to 0, makeRoom's
// move keeps the last popped event below head and its growth copies them
// with the rest. That event
// then stops the walk from the back by its time alone, without the test
// of the index against head (two instructions a round), and the walk
// steps a pointer down the array, which needs no bounds check: ≈ 9
// instructions a moved event instead of 12 (an insertion moves 3.35 on
// the 70B sweep: docs/design.md, play50). Small enough to be inlined into
// Engine.At.
func (q *earlyQueue) insertAbove(x event) {
	n := len(q.ev)
	// The length first (the one check, against the capacity), then the
	// walk from the new last place, through which the compiler would
	// otherwise reload the slice and check it again.
	q.ev = q.ev[:n+1]
	p := unsafe.Add(unsafe.Pointer(unsafe.SliceData(q.ev)), n*int(unsafe.Sizeof(event{})))
	for {
		prev := (*event)(unsafe.Add(p, -int(unsafe.Sizeof(event{}))))
		if x.at >= prev.at {
			break
		}
		*(*event)(p) = *prev
		p = unsafe.Pointer(prev)
	}
	*(*event)(p) = x
}

// makeRoom gives full sorted storage room for one more event: it grows to
// sortedCap events the first time; after, fewer than sortedMax events
// are left, past head ≥ sortedMax popped ones, and moving them down costs
// at most one event per pop. The move keeps the last popped event, at 0,
// with head 1: insertAbove's bound (room needs head > 0), so that the
// pushes after a move insert in place again from the next one on; with
// head 0 every push took queue.push's way and every event run's until the
// next pop (+26 M instructions on the 70B sweep, 99 k moves:
// docs/design.md, play50b).
func (q *earlyQueue) makeRoom() {
	if cap(q.ev) < sortedCap {
		q.ev = slices.Grow(q.ev, sortedCap-len(q.ev))
		return
	}
	q.ev = q.ev[:copy(q.ev, q.ev[q.head-1:])]
	q.head, q.room = 1, 0
}

// toHeap turns q, sorted and holding sortedMax events or more, into a heap
// and pushes x there.
func (q *earlyQueue) toHeap(x event) {
	q.ev = q.ev[:copy(q.ev, q.ev[q.head:])]
	q.head, q.heap, q.room = 0, true, 0
	(*binHeap)(&q.ev).push(x)
}

// pop removes and returns the earliest event; q must not be empty. (Small
// enough to be inlined: the heap's pop is a call.)
func (q *earlyQueue) pop() event {
	if q.heap {
		return q.popHeap()
	}
	x := q.ev[q.head]
	q.head++ // push moves the events down when ev is full
	return x
}

func (q *earlyQueue) popHeap() event {
	x := (*binHeap)(&q.ev).pop()
	if len(q.ev) <= sortedMin {
		q.sort()
	}
	return x
}

// sort makes q a sorted array.
func (q *earlyQueue) sort() {
	slices.SortFunc(q.ev[q.head:], func(a, b event) int {
		if a.before(&b) {
			return -1
		}
		return 1 // keys are unique: never equal
	})
	q.heap = false
}

// sorted returns q's events in (time, sequence) order, leaving q sorted.
func (q *earlyQueue) sorted() []event {
	if q.heap {
		q.sort()
	}
	return q.ev[q.head:]
}

// reset empties q, keeping its storage.
func (q *earlyQueue) reset() { q.ev, q.head, q.heap, q.room = q.ev[:0], 0, false, 0 }

// copyFrom makes q hold src's events in the same order and form.
func (q *earlyQueue) copyFrom(src *earlyQueue) {
	q.ev, q.head, q.heap, q.room = append(q.ev[:0], src.ev[src.head:]...), 0, src.heap, 0
}
