package engine

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestEarlyQueueHandComputed pushes a few events with ties and checks the
// sorted array's layout and the pop order by hand.
func TestEarlyQueueHandComputed(t *testing.T) {
	var q earlyQueue
	at := []Time{30, 10, 20, 10, 40, 20}
	for i, a := range at {
		q.push(event{at: a, key: uint64(i+1) << handlerBits, arg: int64(i)})
	}
	// (time, sequence) order: 10 (arg 1), 10 (3), 20 (2), 20 (5), 30 (0), 40 (4).
	want := []int64{1, 3, 2, 5, 0, 4}
	var got []int64
	for _, e := range q.ev[q.head:] {
		got = append(got, e.arg)
	}
	if q.heap || !slices.Equal(got, want) {
		t.Fatalf("array %v (heap %v), want %v sorted", got, q.heap, want)
	}
	if x := q.pop(); x.arg != 1 || q.head != 1 {
		t.Fatalf("pop %d with head %d, want 1 with head 1", x.arg, q.head)
	}
	// A later push at a time already queued goes after the events there.
	q.push(event{at: 20, key: 7 << handlerBits, arg: 6})
	got = got[:0]
	for q.len() > 0 {
		got = append(got, q.pop().arg)
	}
	if want := []int64{3, 2, 5, 6, 0, 4}; !slices.Equal(got, want) {
		t.Errorf("popped %v, want %v", got, want)
	}
	if q.len() != 0 {
		t.Errorf("emptied queue holds %d events", q.len())
	}
	// Popped events' places are taken back when the array is full: a
	// queue of three events, pushed and popped 10,000 times, keeps the
	// storage it took first (2·sortedMax events).
	for i := range 10_003 {
		q.push(event{at: Time(100 + i), key: uint64(8+i) << handlerBits})
		if i >= 3 {
			if x := q.pop(); x.at != Time(100+i-3) {
				t.Fatalf("pop %d: at %d, want %d", i, x.at, 100+i-3)
			}
		}
	}
	if q.len() != 3 || cap(q.ev) != 2*sortedMax {
		t.Errorf("after 10,000 pushes and pops: %d events in storage for %d, want 3 in %d", q.len(), cap(q.ev), 2*sortedMax)
	}
}

// TestEarlyQueueAgainstReference grows and shrinks the queue across
// sortedMax and sortedMin many times, with ties, and checks every pop
// against a sorted reference, and that both forms were used.
func TestEarlyQueueAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var q earlyQueue
	var ref []event
	var seq uint64
	var now Time
	heapPops, sortedPops, switches := 0, 0, 0
	wasHeap := false
	for round := 0; round < 40; round++ {
		// Alternate phases that fill past sortedMax and drain below sortedMin.
		target := rng.IntN(sortedMin)
		if round%2 == 0 {
			target = sortedMax + rng.IntN(2*sortedMax)
		}
		for steps := 0; steps < 2000 && (round%2 == 0) == (len(ref) < target); steps++ {
			if len(ref) < target && (len(ref) == 0 || rng.IntN(4) != 0) || round%2 == 1 && len(ref) > target && rng.IntN(4) == 0 {
				seq++
				x := event{at: now + Time(rng.IntN(8)), key: seq << handlerBits, arg: int64(seq)}
				q.push(x)
				i, _ := slices.BinarySearchFunc(ref, x, func(a, b event) int {
					if a.before(&b) {
						return -1
					}
					return 1
				})
				ref = slices.Insert(ref, i, x)
			} else if len(ref) > 0 {
				if q.heap {
					heapPops++
				} else {
					sortedPops++
				}
				x := q.pop()
				if x != ref[0] {
					t.Fatalf("round %d: popped %+v, want %+v", round, x, ref[0])
				}
				ref = ref[1:]
				now = x.at
			}
			if q.len() != len(ref) {
				t.Fatalf("round %d: len %d, want %d", round, q.len(), len(ref))
			}
			if q.heap != wasHeap {
				switches++
				wasHeap = q.heap
			}
		}
	}
	if heapPops == 0 || sortedPops == 0 || switches < 10 {
		t.Errorf("pops %d as a heap, %d sorted, %d switches: both forms must be exercised", heapPops, sortedPops, switches)
	}
	t.Logf("pops: %d heap, %d sorted; %d switches", heapPops, sortedPops, switches)
}

// TestAtInsertsAsPush: Engine.At puts an event into early's sorted array
// itself (insert, inlined) while the queue holds a few events; the array
// must be exactly what earlyQueue.push builds from the same events,
// through the places push takes back (makeRoom) and the switch to a heap
// past sortedMax, where At hands over to push.
func TestAtInsertsAsPush(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	e := New()
	var c counter
	h := e.Register(&c)
	var ref earlyQueue
	var seq uint64
	sawHeap, sawWrap, prevLen, prevHeap := false, false, 0, false
	for step := range 3000 {
		// Phases that fill the array past sortedMax (a heap) and then
		// drain it and hover, sorted, while its storage wraps.
		pushP := 5 // of 10: draining, then about level
		if step%1000 < 100 && ref.len() < heapMax-8 {
			pushP = 9 // filling past sortedMax, short of heapMax
		}
		if ref.len() == 0 || rng.IntN(10) < pushP {
			at := e.Now() + 1 + Time(rng.IntN(40)) // some ties
			e.At(at, h, int64(step))
			seq++
			ref.push(event{at: at, key: seq<<handlerBits | uint64(h), arg: int64(step)})
		} else {
			want := ref.pop()
			if n := e.RunUntil(want.at); n == 0 {
				t.Fatalf("step %d: nothing ran up to %v", step, want.at)
			}
			for ref.len() > 0 && ref.min().at == want.at {
				ref.pop() // RunUntil ran every event at that time
			}
		}
		sawHeap = sawHeap || e.q.early.heap
		// Sorted, the storage's length drops only when makeRoom moves
		// the events down.
		sawWrap = sawWrap || !e.q.early.heap && !prevHeap && len(e.q.early.ev) < prevLen
		prevLen, prevHeap = len(e.q.early.ev), e.q.early.heap
		if e.q.early.heap != ref.heap || !slices.Equal(e.q.early.ev[e.q.early.head:], ref.ev[ref.head:]) {
			t.Fatalf("step %d: engine's early (heap %v) %v, push's (heap %v) %v", step, e.q.early.heap, e.q.early.ev[e.q.early.head:], ref.heap, ref.ev[ref.head:])
		}
	}
	if e.q.bucketing || !sawHeap || !sawWrap {
		t.Fatalf("bucketing %v, heap seen %v, storage wrapped %v: want no bucketing, both others", e.q.bucketing, sawHeap, sawWrap)
	}
}

// TestAfterEventOnEveryPath: the AfterEvent hook runs after every event,
// whether RunUntil takes it from early's sorted array in place, from the
// zero-delay FIFO, from the heap or from bucket 0 in place, and sees the
// event's time.
func TestAfterEventOnEveryPath(t *testing.T) {
	for _, pending := range []int{3, sortedMax + 10, heapMax + 10} {
		e := New()
		var log []int64
		c := &chain{e: e, log: &log}
		c.h = e.Register(c)
		for i := range pending {
			e.At(Time(5+i%4), c.h, int64(i)) // arg 1 schedules a zero-delay event
		}
		var hooks int
		var last Time
		e.SetAfterEvent(func(now Time) {
			hooks++
			if now < last {
				t.Errorf("%d pending: hook at %v after %v", pending, now, last)
			}
			last = now
		})
		n := e.Run()
		if want := uint64(pending + 1); n != want || uint64(hooks) != want {
			t.Errorf("%d pending: %d events, %d hooks, want %d of each", pending, n, hooks, want)
		}
	}
}

// roomDriver schedules, from each event it handles, zero to two more
// (zero-delay ones included), steering the number pending through phases
// of a few events (early sorted), a few dozen (past sortedMax: early a
// heap) and a hundred or a few hundred (past heapMax: bucketing). The same driver runs
// on an Engine and on a naive reference queue (at: nil).
type roomDriver struct {
	h       HandlerID
	rng     *rand.Rand
	handled int
	pending int
	log     []event                 // (at, arg) of each handled event, in order
	at      func(t Time, arg int64) // schedules an event
	after   func()                  // called at the end of each event, if set
}

func (d *roomDriver) Handle(now Time, arg int64) {
	d.log = append(d.log, event{at: now, arg: arg})
	d.handled++
	d.pending--
	// (a heap of 120 leaves the sorted array storage larger than sortedCap)
	target := [...]int{4, 40, 4, 120, 6, 400, 10}[d.handled/3000%7]
	n := d.rng.IntN(2) // 0 or 1: hover
	if d.pending < target {
		n = 2
	} else if d.pending > target {
		n = 0
	}
	for range n {
		var dt Time
		if d.rng.IntN(8) != 0 { // an eighth are zero-delay events
			dt = Time(1 + d.rng.IntN(60)) // ties
		}
		d.pending++
		d.at(now+dt, arg*3+int64(n))
	}
	if d.after != nil {
		d.after()
	}
}

// TestRoomKeepsOrder: earlyQueue.room lets At insert and run take events
// in place; with the queue moving between early's sorted array, its heap
// and the buckets (and a Save and Restore now and then, which clear room),
// whenever room is set early must be sorted with storage room and the
// queue not bucketing, and the events must run in (time, sequence) order,
// as a naive queue runs them.
func TestRoomKeepsOrder(t *testing.T) {
	const total = 21000
	e := New()
	d := &roomDriver{rng: rand.New(rand.NewPCG(7, 8))}
	d.h = e.Register(d)
	d.at = func(at Time, arg int64) { e.At(at, d.h, arg) }
	check := func(where string) {
		q := &e.q.early
		if q.room != 0 && (q.heap || e.q.bucketing || q.room != min(cap(q.ev), sortedCap) || e.q.n != 0 || q.head == 0) {
			t.Fatalf("%s: room %d with heap %v, bucketing %v, cap %d, %d bucketed, head %d", where, q.room, q.heap, e.q.bucketing, cap(q.ev), e.q.n, q.head)
		}
		if !q.heap && len(q.ev) > sortedCap {
			t.Fatalf("%s: sorted array over %d places: %d", where, sortedCap, len(q.ev))
		}
		// insertAbove's bound: the last popped event is not after the clock.
		if !q.heap && q.head > 0 && q.ev[q.head-1].at > e.Now() {
			t.Fatalf("%s: the event before head at %v, after now %v", where, q.ev[q.head-1].at, e.Now())
		}
	}
	d.after = func() { check("after an event") } // (not the AfterEvent hook, which holds room at 0)
	var sawHeap, sawBucketing, sawSorted bool
	for i := range 4 {
		d.pending++
		e.At(Time(1+i), d.h, int64(i))
	}
	var snap Snapshot
	for limit := Time(50); d.handled < total && e.Pending() > 0; limit += 50 {
		e.RunUntil(limit)
		check("after RunUntil")
		sawHeap = sawHeap || e.q.early.heap
		sawBucketing = sawBucketing || e.q.bucketing
		sawSorted = sawSorted || e.q.early.room != 0
		if limit%1000 == 0 {
			e.Save(&snap)
			e.Restore(&snap)
			check("after Restore")
		}
	}
	if !sawHeap || !sawBucketing || !sawSorted {
		t.Fatalf("heap seen %v, bucketing %v, room set %v: want all", sawHeap, sawBucketing, sawSorted)
	}

	// The reference: a slice searched for its (time, sequence) minimum.
	type pend struct {
		ev  event
		seq int
	}
	var q []pend
	ref := &roomDriver{rng: rand.New(rand.NewPCG(7, 8))}
	seq := 0
	ref.at = func(at Time, arg int64) { seq++; q = append(q, pend{event{at: at, arg: arg}, seq}) }
	for i := range 4 {
		ref.pending++
		ref.at(Time(1+i), int64(i))
	}
	for len(ref.log) < len(d.log) && len(q) > 0 {
		m := 0
		for j := range q {
			if q[j].ev.at < q[m].ev.at || q[j].ev.at == q[m].ev.at && q[j].seq < q[m].seq {
				m = j
			}
		}
		x := q[m].ev
		q = slices.Delete(q, m, m+1)
		ref.Handle(x.at, x.arg)
	}
	if !slices.Equal(d.log, ref.log) {
		for i := range min(len(d.log), len(ref.log)) {
			if d.log[i] != ref.log[i] {
				t.Fatalf("event %d: engine ran (%v, %d), reference (%v, %d)", i, d.log[i].at, d.log[i].arg, ref.log[i].at, ref.log[i].arg)
			}
		}
		t.Fatalf("engine ran %d events, reference %d", len(d.log), len(ref.log))
	}
}

// TestInsertAboveEveryPlace: insertAbove, which walks from the back
// until an event's time is not after the new one's, with the last popped
// event (before head) as the walk's bound, leaves the storage exactly as
// the bounded walk (insert) does, for every head from 1 to 6 and every
// pending count that fits, the new event before all, between, tied with
// and after the pending ones; the popped places below head are not
// touched. (It fails if the walk stops at a tie's first event, `>`
// for `>=`, or passes head.)
func TestInsertAboveEveryPlace(t *testing.T) {
	const popped = 10 // the popped events' time: the clock, before every new one
	for head := 1; head <= 6; head++ {
		for pending := 0; pending <= 9; pending++ {
			// pending events at times 20, 20, 30, 30, 40, ... (ties)
			var base []event
			for k := range head {
				base = append(base, event{at: popped - Time(head-1-k), key: uint64(k+1) << handlerBits})
			}
			for k := range pending {
				base = append(base, event{at: 20 + 10*Time(k/2), key: uint64(head+k+1) << handlerBits, arg: int64(k)})
			}
			for _, at := range []Time{popped + 1, 15, 20, 25, 30, 40, 20 + 10*Time(pending/2), 1000} {
				x := event{at: at, key: uint64(100) << handlerBits, arg: -1}
				want := earlyQueue{ev: append(make([]event, 0, 16), base...), head: head}
				want.insert(x)
				got := earlyQueue{ev: append(make([]event, 0, 16), base...), head: head}
				got.insertAbove(x)
				if got.head != head || !slices.Equal(got.ev, want.ev) {
					t.Fatalf("head %d, %d pending, new at %d: storage %v, want %v", head, pending, at, got.ev, want.ev)
				}
				if !slices.Equal(got.ev[:head], base[:head]) {
					t.Fatalf("head %d, %d pending, new at %d: popped places %v changed, were %v", head, pending, at, got.ev[:head], base[:head])
				}
			}
		}
	}
}

// TestMakeRoomKeepsLastPopped: makeRoom's move, for every head its caller
// allows (full storage of sortedCap places, fewer than sortedMax pending),
// keeps the last popped event at 0 and the pending ones from 1 (head 1,
// insertAbove's bound: room needs head > 0) and sets room to 0, and its
// growth leaves head and the popped places as they were; an insertion then gives the order
// the bounded walk (insert) gives. (It fails with the move to 0, head 0.)
func TestMakeRoomKeepsLastPopped(t *testing.T) {
	for _, c := range []struct{ capacity, head int }{
		{sortedCap, sortedCap - sortedMax + 1}, {sortedCap, 40}, {sortedCap, sortedCap - 1}, {sortedCap, sortedCap},
		{8, 3}, {8, 8},
	} {
		var base []event
		for k := range c.capacity {
			base = append(base, event{at: Time(10 + k), key: uint64(k+1) << handlerBits, arg: int64(k)})
		}
		q := earlyQueue{ev: append(make([]event, 0, c.capacity), base...), head: c.head, room: c.capacity}
		q.makeRoom()
		wantHead, wantRoom, wantEv := 1, 0, base[c.head-1:]
		if c.capacity < sortedCap {
			wantHead, wantRoom, wantEv = c.head, c.capacity, base // grown: nothing moved (push sets room after)
		}
		if q.head != wantHead || q.room != wantRoom || !slices.Equal(q.ev, wantEv) || cap(q.ev) < min(len(q.ev)+1, sortedCap) {
			t.Fatalf("cap %d, head %d: head %d, room %d, storage %v (cap %d), want head %d, room %d, %v",
				c.capacity, c.head, q.head, q.room, q.ev, cap(q.ev), wantHead, wantRoom, wantEv)
		}
		// between the pending events where there are some: not before the last popped one
		x := event{at: max(Time(10+c.capacity-2), base[c.head-1].at), key: uint64(1000) << handlerBits, arg: -1}
		want := earlyQueue{ev: append(make([]event, 0, len(q.ev)+1), q.ev...), head: q.head}
		want.insert(x)
		q.insertAbove(x)
		if !slices.Equal(q.ev, want.ev) {
			t.Fatalf("cap %d, head %d: after the insertion %v, want %v", c.capacity, c.head, q.ev, want.ev)
		}
	}
}

// TestRoomNeedsPopped: room, which lets At insert in place with
// insertAbove (bounded by the event before head), stays 0 while no event
// was popped since the storage was reset, restored or last moved to 0
// (head 0), and is set by the first push after a pop. (It fails if
// setRoom sets room at head 0.)
func TestRoomNeedsPopped(t *testing.T) {
	for _, c := range []struct {
		name  string
		reset func(e *Engine) // after an event was popped
	}{
		{"new", nil},
		{"reset", func(e *Engine) { e.Reset() }},
		{"restore", func(e *Engine) { var s Snapshot; e.Save(&s); e.Restore(&s) }},
	} {
		e := New()
		h := e.Register(&counter{})
		if c.reset != nil {
			e.At(1, h, 0)
			e.At(2, h, 0)
			e.RunUntil(1)
			c.reset(e)
			if len(e.handlers) == 0 {
				h = e.Register(&counter{})
			}
		}
		for k := range 3 {
			e.At(Time(10+k), h, int64(k))
			if q := &e.q.early; q.room != 0 {
				t.Fatalf("%s: push %d with head %d: room %d, want 0", c.name, k, q.head, q.room)
			}
		}
		e.RunUntil(10)
		e.At(20, h, 9)
		if q := &e.q.early; q.room == 0 || q.head == 0 {
			t.Fatalf("%s: after a pop and a push: room %d, head %d, want both > 0", c.name, q.room, q.head)
		}
	}
}
