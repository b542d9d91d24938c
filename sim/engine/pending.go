package engine

import (
	"math/bits"
	"slices"
)

// PendingEvent is one pending event as AppendPending lists it: its time,
// handler and argument, and (unexported) its sequence number, which
// Replace keeps.
type PendingEvent struct {
	At      Time
	Handler HandlerID
	Arg     int64
	key     uint64
}

// AppendPending appends every pending event to buf in the order Run would
// execute them ((time, sequence) order) and returns it. It changes no
// event and no order; it may settle the queue's lowest bucket, as a look
// at the next event does. For a fast-forward that moves a component's
// future (parallel's per-layer skip): a few dozen events, not a hot path.
func (e *Engine) AppendPending(buf []PendingEvent) []PendingEvent {
	n := len(buf)
	add := func(ev []event) {
		for i := range ev {
			x := &ev[i]
			buf = append(buf, PendingEvent{At: x.at, Handler: x.handler(), Arg: x.arg, key: x.key})
		}
	}
	add(e.fifo[e.fifoHead:])
	add(e.q.early.ev[e.q.early.head:])
	for w, m := range e.q.mask {
		for ; m != 0; m &= m - 1 {
			b := w<<6 + bits.TrailingZeros64(m)
			bs := e.q.buckets[b]
			if b == 0 {
				bs = bs[e.q.head0:]
			}
			add(bs)
		}
	}
	slices.SortFunc(buf[n:], pendingOrder)
	return buf
}

// Replace makes evs the pending events: every event pending now is
// dropped, and each of evs (a listing of AppendPending, its times and
// arguments possibly changed, its handlers not) is scheduled with its own
// sequence number, so that events at one time run in the order they were
// first scheduled, as they would have. A time before now panics, as At's
// does; one at now runs after the events at now already taken out.
// Components use it to move their own pending events (a fast-forward),
// between events (AfterEvent, or after Run returned).
func (e *Engine) Replace(evs []PendingEvent) {
	slices.SortFunc(evs, pendingOrder)
	e.fifo, e.fifoHead = e.fifo[:0], 0
	e.q.reset()
	e.hold()
	for i := range evs {
		p := &evs[i]
		if p.At < e.now || p.At >= Forever {
			panic("engine: Replace: an event before now or at Forever")
		}
		x := event{at: p.At, key: p.key&^(1<<handlerBits-1) | uint64(p.Handler), arg: p.Arg}
		if p.At == e.now {
			e.fifo = append(e.fifo, x) // (in sequence order: evs is sorted)
			continue
		}
		e.q.push(x) // in (time, sequence) order: each the latest at its time
	}
	e.hold()
}

// AddExecuted counts n events as executed (Executed) that no handler ran:
// a fast-forward that derived their effects instead of playing them.
func (e *Engine) AddExecuted(n uint64) { e.executed += n }

// pendingOrder orders pending events as the engine runs them: by time,
// then by sequence number (the key's high bits, above the handler's).
func pendingOrder(a, b PendingEvent) int {
	switch {
	case a.At != b.At:
		if a.At < b.At {
			return -1
		}
		return 1
	case a.key < b.key:
		return -1
	case a.key > b.key:
		return 1
	}
	return 0
}
