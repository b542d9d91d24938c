// Package engine is simtrain's discrete-event kernel: integer simulated time,
// a priority queue with a total (time, sequence) order, and a run loop.
//
// The kernel knows nothing about GPUs, links or models. Components register a
// Handler once and then schedule events as (time, handler, argument) triples;
// the argument is an int64 the component interprets (a task index, a flow id
// with a generation counter, ...). Events are 24-byte plain values in a radix
// heap on their time that keeps equal times in sequence order (queue.go), so
// scheduling and executing an event allocates nothing once the queue's
// buckets have grown.
//
// Determinism: events at the same time run in the order they were scheduled
// (the sequence number breaks ties), and zero-delay events scheduled for the
// current instant go through a FIFO that never touches the queue, which keeps
// that same order. There are no goroutines, no wall clock and no I/O here.
//
// Cancellation is lazy and belongs to the component: it keeps a generation
// counter, packs it into the argument, and ignores events whose generation is
// stale (the approach ns-3 and htsim use). The kernel never searches its queue.
package engine

import (
	"errors"
	"fmt"
	"math"
)

// Time is simulated time in integer nanoseconds. int64 spans 292 years, so a
// whole training run fits; integers keep results bit-identical across runs.
type Time int64

// Units of Time.
const (
	Nanosecond  Time = 1
	Microsecond Time = 1000
	Millisecond Time = 1000 * Microsecond
	Second      Time = 1000 * Millisecond
)

// Forever is a time later than any event.
const Forever Time = math.MaxInt64

// Seconds converts a duration in seconds to Time, rounding up to a whole
// nanosecond so that a positive duration never becomes zero. Negative, NaN
// and infinite inputs are clamped to 0 and Forever respectively.
func Seconds(s float64) Time {
	if !(s > 0) { // also catches NaN
		return 0
	}
	ns := s * 1e9
	if ns >= float64(math.MaxInt64) {
		return Forever
	}
	t := Time(ns)
	if float64(t) < ns {
		t++
	}
	return t
}

// Add returns t+d saturated to [-Forever, Forever]: a sum that int64
// nanoseconds cannot hold becomes Forever (or -Forever) instead of
// wrapping around to a time in the past.
func (t Time) Add(d Time) Time {
	s := t + d
	// Signed overflow happened iff both operands have the same sign and
	// the sum's sign differs from it.
	switch {
	case t > 0 && d > 0 && s < 0:
		return Forever
	case t < 0 && d < 0 && (s >= 0 || s == math.MinInt64):
		return -Forever
	}
	return s
}

// ErrTimeOverflow is reported by Engine.Err when an event was scheduled at
// or beyond Forever: the simulated time no longer fits int64 nanoseconds
// (about 292 years).
var ErrTimeOverflow = errors.New("simulated time exceeds what int64 nanoseconds can hold (about 292 years)")

// Seconds returns t in seconds.
func (t Time) Seconds() float64 { return float64(t) / 1e9 }

// Microseconds returns t in microseconds.
func (t Time) Microseconds() float64 { return float64(t) / 1e3 }

// String formats t with a unit that keeps it readable.
func (t Time) String() string {
	switch {
	case t >= Second || t <= -Second:
		return fmt.Sprintf("%.6gs", t.Seconds())
	case t >= Millisecond || t <= -Millisecond:
		return fmt.Sprintf("%.6gms", float64(t)/1e6)
	case t >= Microsecond || t <= -Microsecond:
		return fmt.Sprintf("%.6gµs", float64(t)/1e3)
	default:
		return fmt.Sprintf("%dns", int64(t))
	}
}

// Handler receives the events scheduled for it. Handle runs at simulated time
// now with the argument given when the event was scheduled.
type Handler interface {
	Handle(now Time, arg int64)
}

// HandlerID names a registered Handler. It is an index, so events stay
// pointer-free.
type HandlerID int32

// event is one pending event. It holds no pointers, so the garbage collector
// never scans the queue. key packs the sequence number (high 48 bits) above
// the handler id (low 16 bits): sequence numbers are unique, so ordering by
// key is ordering by sequence, and the event stays 24 bytes instead of 32.
type event struct {
	at  Time
	key uint64
	arg int64
}

// handlerBits is the width of the handler id inside event.key.
const handlerBits = 16

func (a *event) before(b *event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.key < b.key
}

func (a *event) handler() HandlerID { return HandlerID(a.key & (1<<handlerBits - 1)) }

// Engine is the simulation kernel. The zero value is not usable; call New.
type Engine struct {
	now      Time
	seq      uint64  // the last event's sequence number, shifted into key's place (<< handlerBits)
	q        queue   // events after now, and at now scheduled before it
	fifo     []event // zero-delay events at now, in schedule order
	fifoHead int     // fifo's next event; run empties fifo when it is read out
	handlers []Handler
	executed uint64
	stopped  bool
	overflow bool // an event was scheduled at Forever (ErrTimeOverflow)
	// afterEvent, when set (SetAfterEvent), runs after every event; tests
	// use it to check invariants at every instant of a simulation.
	afterEvent func(now Time)
	// hooked: SetAfterEvent set a hook since the last event's hook call
	// (or the last Run's start); runAll calls it after the event that set
	// it, which its in-place path ran without testing the hook.
	hooked bool
}

// New returns an empty engine at time 0.
func New() *Engine {
	return &Engine{fifo: make([]event, 0, 256)}
}

// Reset returns the engine to the state New gives (time 0, no events, no
// handlers), keeping its queue's storage: for a goroutine that runs one
// simulation after another.
func (e *Engine) Reset() {
	clear(e.handlers)
	e.q.reset()
	*e = Engine{q: e.q, fifo: e.fifo[:0], handlers: e.handlers[:0]}
}

// Register adds a handler and returns the id to schedule events for it. An
// engine holds at most 65,536 handlers.
func (e *Engine) Register(h Handler) HandlerID {
	if len(e.handlers) == 1<<handlerBits {
		panic("engine: more than 65536 handlers")
	}
	e.handlers = append(e.handlers, h)
	return HandlerID(len(e.handlers) - 1)
}

// Now is the current simulated time.
func (e *Engine) Now() Time { return e.now }

// Executed is the number of events run so far.
func (e *Engine) Executed() uint64 { return e.executed }

// Pending is the number of events waiting to run.
func (e *Engine) Pending() int { return e.q.len() + len(e.fifo) - e.fifoHead }

// At schedules an event for handler h at time t with argument arg. A time in
// the past is a programming error and panics: causality is the one invariant
// the kernel enforces itself. A time at Forever (a saturated sum: see
// Time.Add) cannot be simulated: the event is dropped, Err reports
// ErrTimeOverflow and Run stops after the current event.
func (e *Engine) At(t Time, h HandlerID, arg int64) {
	if t <= e.now || t == Forever {
		e.atNow(t, h, arg)
		return
	}
	e.seq += 1 << handlerBits
	x := event{at: t, key: e.seq | uint64(h), arg: arg}
	// The common case, in this function: the queue holds a few events,
	// none bucketed, in early's sorted array, which has room and an event
	// popped (one comparison: earlyQueue.room); the insertion is inlined
	// here, without queue.push's and earlyQueue.push's calls, as
	// insertAbove (t is after now, so after the popped event's time).
	if q := &e.q.early; len(q.ev) < q.room {
		q.insertAbove(x)
		return
	}
	if e.q.bucketing && t >= e.q.last {
		e.q.bucket(x) // queue.push's case for many pending events, without its call
		return
	}
	e.q.push(x)
}

// atNow is At for a time not after now, or at Forever.
func (e *Engine) atNow(t Time, h HandlerID, arg int64) {
	if t < e.now {
		panic(fmt.Sprintf("engine: event scheduled at %v, before now %v", t, e.now))
	}
	if t == Forever {
		e.overflow, e.stopped = true, true
		e.hold()
		return
	}
	e.seq += 1 << handlerBits
	e.fifo = append(e.fifo, event{at: t, key: e.seq | uint64(h), arg: arg})
	e.hold()
}

// hold sets the queue's hold (queue.hold) from the FIFO, stopped and the
// AfterEvent hook, and room (setRoom) from it: whatever makes the FIFO hold
// events, stops the engine, sets the hook or undoes any of them calls it,
// so that room != 0 says the FIFO is empty, the engine not stopped and no
// hook set, and runAll's loop tests room alone (none of these is on the
// path of a sweep point's events).
func (e *Engine) hold() {
	e.q.hold = len(e.fifo) != 0 || e.stopped || e.afterEvent != nil
	e.q.setRoom()
}

// SetAfterEvent makes f run after every event (nil: none). While it is
// set, room is held at 0 (hold), so that runAll's in-place path, which
// tests room alone, never skips it; run's paths call it. A handler may set
// or clear it: set by a handler, it runs after that event too (hooked).
func (e *Engine) SetAfterEvent(f func(now Time)) {
	e.afterEvent, e.hooked = f, f != nil
	e.hold()
}

// AfterEvent is the function SetAfterEvent set, nil if none.
func (e *Engine) AfterEvent() func(now Time) { return e.afterEvent }

// After schedules an event d after now; a negative d is treated as zero,
// and a time past Forever saturates to it (see At).
func (e *Engine) After(d Time, h HandlerID, arg int64) {
	if d < 0 {
		d = 0
	}
	e.At(e.now.Add(d), h, arg)
}

// Err is ErrTimeOverflow once an event could not be scheduled because its
// time does not fit int64 nanoseconds, else nil. Run does not continue
// after it: the simulation's later times would be meaningless.
func (e *Engine) Err() error {
	if e.overflow {
		return ErrTimeOverflow
	}
	return nil
}

// Stop makes Run return after the event being handled. It holds room at 0
// (hold), so that runAll's loop, which tests room alone, leaves the
// in-place path. Not inlined: it is rare (a watched play's end), and its
// stores inlined into symEnds.Handle moved that function's branch padding,
// +6.9 M assembler NOPs run on the 70B sweep (docs/design.md, play50b).
//
//go:noinline
func (e *Engine) Stop() {
	e.stopped = true
	e.hold()
}

// Run executes events in (time, sequence) order until none remain or Stop is
// called. It returns the number of events executed by this call.
func (e *Engine) Run() uint64 {
	start := e.executed
	e.runAll()
	return e.executed - start
}

// runAll is run(Forever) with the in-place path (run's first branch) in a
// loop of its own, which has no limit to reload and test after each
// handler's call (3 instructions an event, ≈ 16 M on the 70B sweep's
// 5.47 M events: docs/design.md, play50). When that path does not apply
// (zero-delay events in the FIFO, early's storage full or a heap), run
// takes the events up to the next one's time, in the same order as
// run(Forever) would, and the loop resumes after; once the queue buckets
// (it does until a reset) run(Forever) takes the rest, so that a play of
// many pending events (--all-ranks) runs run's loop as before. room != 0
// says the FIFO is empty and the engine not stopped (hold), so that the
// in-place path tests room alone, and stopped only where it does not
// apply, and no AfterEvent hook (SetAfterEvent; hooked: one set by the
// event just run, called after it); the loop's three tests an event went
// (runAll 191.6 → 147.8 M instructions on the 70B sweep, docs/design.md,
// play50b).
func (e *Engine) runAll() {
	e.stopped, e.hooked = e.overflow, false
	e.hold()
	for {
		eq := &e.q.early
		if eq.room != 0 {
			h := eq.head
			if uint(h) >= uint(len(eq.ev)) {
				return // no event pending (room != 0: nothing bucketed)
			}
			ev := &eq.ev[h]
			at, key, arg := ev.at, ev.key, ev.arg // read before the handler pushes
			eq.head = h + 1
			e.now = at
			e.executed++
			e.handlers[key&(1<<handlerBits-1)].Handle(at, arg)
			continue
		}
		if e.hooked {
			// The hook was set by the event just run in place (it was
			// not set before it: room was not 0), after which it runs.
			e.hooked = false
			e.afterEvent(e.now)
			continue
		}
		if e.stopped || !e.runSome() {
			return
		}
	}
}

// runSome is runAll's other case: with the queue bucketing, run(Forever)
// takes every event left (false: runAll returns); else run takes the
// events up to the next one's time (false: none was pending). Not
// bucketing, early holds every queued event; the FIFO's events are at
// now, and run takes the queued ones at now before them where they were
// scheduled first.
func (e *Engine) runSome() bool {
	if e.q.bucketing {
		e.run(Forever)
		return false
	}
	limit := e.now
	if len(e.fifo) == 0 {
		if e.q.early.len() == 0 {
			return false
		}
		limit = e.q.early.min().at
	}
	e.run(limit)
	return true
}

// RunUntil executes every event with time <= limit (or until Stop) and leaves
// later ones pending. The clock stays at the last executed event.
func (e *Engine) RunUntil(limit Time) uint64 {
	start := e.executed
	e.run(limit)
	return e.executed - start
}

// run is RunUntil's loop. It returns nothing, so the loop carries no
// count across the handlers' calls: only e and limit are reloaded after
// each call.
func (e *Engine) run(limit Time) {
	e.stopped = e.overflow
	e.hold()
	// (hooked is runAll's: run calls the hook after every event itself)
	for !e.stopped {
		if eq := &e.q.early; len(e.fifo) == 0 && eq.room != 0 {
			// A few pending events, none bucketed (room != 0: early is
			// sorted and the queue is not bucketing, so it holds every
			// event), no zero-delay one (the FIFO is emptied, not just
			// read, when its last event runs): early's sorted minimum
			// is the next event, taken here in place (no call, no copy
			// of the event through the stack); if early is empty or
			// its minimum is after limit, no event is due. (room is 0
			// also for a moment after a reset or Restore, until the
			// next push: the other branch takes those events.)
			h := eq.head
			if uint(h) >= uint(len(eq.ev)) {
				break
			}
			ev := &eq.ev[h]
			at, key, arg := ev.at, ev.key, ev.arg // read before the handler pushes
			if at > limit {
				break
			}
			eq.head = h + 1 // earlyQueue.push moves the events down when ev is full
			e.now = at
			e.executed++
			e.handlers[key&(1<<handlerBits-1)].Handle(at, arg)
		} else {
			if e.q.mask[0]&1 != 0 {
				// Many pending events, bucketed, the earliest in
				// bucket 0: runBucket0 takes them in place while
				// early and the FIFO are empty, in a loop of its
				// own (tested here, in the loop above it cost the
				// path above an instruction or two an event).
				switch e.runBucket0(limit) {
				case bucket0Done:
					continue
				case bucket0Stop:
					return
				}
			}
			var ev event
			if e.fifoHead < len(e.fifo) && e.fifoFirst() {
				ev = e.fifo[e.fifoHead]
				e.fifoHead++
				if e.fifoHead == len(e.fifo) {
					e.fifo = e.fifo[:0]
					e.fifoHead = 0
					e.hold()
				}
			} else if x, ok := e.q.popUntil(limit); ok {
				ev = x
				e.now = ev.at
			} else {
				break
			}
			e.executed++
			e.handlers[ev.handler()].Handle(e.now, ev.arg)
		}
		if e.afterEvent != nil {
			e.hooked = false
			e.afterEvent(e.now)
		}
	}
}

// runBucket0's results: it ran no event, since the FIFO or early holds
// one (bucket0None); it ran events until that changed or the queue
// emptied (bucket0Done); it stopped at an event after limit or at Stop
// (bucket0Stop).
const (
	bucket0None = iota
	bucket0Done
	bucket0Stop
)

// runBucket0 runs events from bucket 0 (not empty) in place, as run's
// other paths would: while the FIFO and early are empty, bucket 0's head is
// the next event (the earliest queued, at last: popUntil's case), and when
// bucket 0 empties settle brings the next time's events there. It runs
// AfterEvent after each event and returns when the FIFO or early receives
// an event, the queue empties, an event is after limit or Stop is called.
// The 405B --all-ranks run takes all of its 22.8 M events here.
func (e *Engine) runBucket0(limit Time) int {
	q := &e.q
	r := bucket0None
	for len(e.fifo) == 0 && q.early.head == len(q.early.ev) {
		if q.mask[0]&1 == 0 {
			if q.n == 0 {
				return r
			}
			q.settle() // the next time's events into bucket 0
		}
		b0 := q.buckets[0]
		h := q.head0
		if uint(h) >= uint(len(b0)) {
			return r // not reached: bucket 0 is not empty
		}
		ev := &b0[h]
		at, key, arg := ev.at, ev.key, ev.arg
		if at > limit {
			return bucket0Stop
		}
		q.n--
		if h+1 == len(b0) {
			q.buckets[0] = q.buckets[0][:0]
			q.head0 = 0
			if q.mask[0] &^= 1; q.mask[0] == 0 {
				q.words &^= 1
			}
		} else {
			q.head0 = h + 1
		}
		e.now = at
		e.executed++
		e.handlers[key&(1<<handlerBits-1)].Handle(at, arg)
		if e.afterEvent != nil {
			e.hooked = false
			e.afterEvent(e.now)
		}
		if e.stopped {
			return bucket0Stop
		}
		r = bucket0Done
	}
	return r
}

// fifoFirst reports whether the FIFO's first zero-delay event runs
// before the queue's: unless one queued for this same instant was
// scheduled earlier.
func (e *Engine) fifoFirst() bool {
	return !(e.q.hasAt(e.now) && e.q.min().before(&e.fifo[e.fifoHead]))
}

// binHeap is a binary heap of 24-byte events (the queue's early events). Which child of a node is
// smaller is a coin toss the branch predictor cannot learn, so pop turns
// that comparison into an index (b2i) instead of a branch. While the heap
// fits in the core's caches pop works bottom-up (Floyd): it moves the hole
// from the root to a leaf along the smaller children, one comparison per
// level, then sifts the last element up from there, which it rarely climbs
// because it came from the bottom. A large heap would pay a cache miss for
// each level it descends needlessly, so there pop sifts down as before and
// stops as soon as the last element fits, with a branch, which lets the core
// fetch the next level while the comparison resolves. At 1,000 pending
// events this runs the hold benchmark about 1.3× faster than the plain
// sift-down it replaced; a 4-ary heap (with the same branch-free choice) was
// as fast at 1,000 but slower at 1,000,000 (README, Performance).

// bottomUpMax is the largest heap pop handles bottom-up: 4,096 events are
// 96 KiB, inside a core's L2 cache.
const bottomUpMax = 4096

type binHeap []event

func (bh *binHeap) push(ev event) {
	h := append(*bh, ev)
	i := len(h) - 1
	// Move the hole up instead of swapping: one write per level.
	for i > 0 {
		p := (i - 1) >> 1
		if !ev.before(&h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = ev
	*bh = h
}

func (bh *binHeap) pop() event {
	h := *bh
	top := h[0]
	n := len(h) - 1
	last := h[n]
	h = h[:n]
	if n == 0 {
		*bh = h
		return top
	}
	i := 0
	if n <= bottomUpMax {
		for {
			l := 2*i + 1
			if l+1 < n {
				c := l + b2i(h[l+1].before(&h[l]))
				h[i] = h[c]
				i = c
				continue
			}
			if l < n {
				h[i] = h[l]
				i = l
			}
			break
		}
		for i > 0 {
			p := (i - 1) >> 1
			if !last.before(&h[p]) {
				break
			}
			h[i] = h[p]
			i = p
		}
	} else {
		for {
			l := 2*i + 1
			if l >= n {
				break
			}
			c := l
			if r := l + 1; r < n && h[r].before(&h[l]) {
				c = r // a branch: predicted, it lets the core fetch the next level early
			}
			if !h[c].before(&last) {
				break
			}
			h[i] = h[c]
			i = c
		}
	}
	h[i] = last
	*bh = h
	return top
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
