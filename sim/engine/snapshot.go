package engine

import "math/bits"

// Snapshot holds an engine's state at one moment: the clock, the sequence
// counter, the events executed so far and the pending events with their
// sequence numbers, so that Restore continues a simulation from there in
// exactly the order it would have run (issue 18: a failed shortened play
// of a replicated step resumes as the full step's play,
// parallel.Executor.Fork). The zero value is empty; a Snapshot reuses its
// storage from one Save to the next.
type Snapshot struct {
	now      Time
	seq      uint64
	executed uint64
	overflow bool
	q        queue
	fifo     []event
	saved    bool
}

// Save copies e's state (not its handlers) into s. Call it between events
// (Run returned).
func (e *Engine) Save(s *Snapshot) {
	s.now, s.seq, s.executed, s.overflow, s.saved = e.now, e.seq, e.executed, e.overflow, true
	s.fifo = append(s.fifo[:0], e.fifo[e.fifoHead:]...)
	copyQueue(&s.q, &e.q)
}

// Saved reports whether s holds a state (Save since the last Clear).
func (s *Snapshot) Saved() bool { return s.saved }

// Clear marks s empty, keeping its storage.
func (s *Snapshot) Clear() { s.saved = false }

// Restore makes e's state the one saved in s: e must hold the same
// handlers, registered in the same order, for the saved events to reach
// them. e's own pending events are dropped.
func (e *Engine) Restore(s *Snapshot) {
	e.now, e.seq, e.executed, e.overflow, e.stopped = s.now, s.seq, s.executed, s.overflow, false
	e.fifo, e.fifoHead = append(e.fifo[:0], s.fifo...), 0
	e.q.reset()
	copyQueue(&e.q, &s.q)
	e.hold()
}

// copyQueue makes dst hold src's events in the same places, keeping dst's
// bucket storage (and its spare slices) where it can.
func copyQueue(dst, src *queue) {
	for w, m := range dst.mask {
		for ; m != 0; m &= m - 1 {
			b := w<<6 + bits.TrailingZeros64(m)
			dst.buckets[b] = dst.buckets[b][:0]
		}
	}
	for w, m := range src.mask {
		for ; m != 0; m &= m - 1 {
			b := w<<6 + bits.TrailingZeros64(m)
			dst.buckets[b] = append(dst.buckets[b][:0], src.buckets[b]...)
		}
	}
	dst.last, dst.head0, dst.mask, dst.words, dst.n, dst.bucketing = src.last, src.head0, src.mask, src.words, src.n, src.bucketing
	dst.pushAt, dst.pushB = src.pushAt, src.pushB
	dst.early.copyFrom(&src.early)
}
