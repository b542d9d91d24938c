package engine

import (
	"cmp"
	"math/bits"
	"slices"
)

// queue holds the pending events that are not zero-delay events at now: a
// radix heap on the event time, which works because a simulation only ever
// schedules events at or after the last time it took out (monotone keys).
// Bucket b holds the events whose time first differs from last's in the
// digit and value that b names; bucket 0 holds the events at last itself,
// in schedule order, and is read as a FIFO from head0. Taking the earliest
// event scans the lowest non-empty bucket once and redistributes it into
// lower buckets around its minimum, so an event moves a few times on its
// way out instead of sifting through every level of a binary heap per pop,
// a chain of dependent comparisons; pushing is an append. At 1,000 pending
// events the hold benchmark runs faster than on the binary heap (README,
// Performance).
//
// Ties need no sequence digits: a bucket is a function of an event's time
// and last only, so events at one time always share a bucket; a push
// appends (the newest sequence number last) and settle moves a bucket's
// events in order into buckets that held no event at those times, so
// within a bucket events at one time stay in schedule order, and bucket 0
// pops them in (time, sequence) order. Keying on the 64-bit time alone
// halves the digits an event can move through (the old 128-bit key also
// sorted ties digit by digit on the sequence number).
//
// An event scheduled before last (possible only after min moved last
// ahead of now, e.g. RunUntil stopping at its limit) goes to early (a
// sorted array or a binary heap, early.go), so the order stays exact in
// every case.
//
// Few events pending (a sweep point's representative ranks hold a few
// dozen): until more than heapMax events have been pending at once since
// the last reset, every event goes to early and the buckets stay empty.
// There an event passes once through early instead of through the
// several bucket moves its nanosecond time's digits take (the events of one
// step spread over up to 2^40 ns), which measured faster on the 70B
// sweep's points (docs/design.md, "Speed"). Past heapMax the queue buckets
// from then on, early's events moved into the buckets at once
// (startBucketing; left in early, a run of 1,000 pending events kept
// popping from both and ran the hold benchmark ≈ 30% slower). Which
// structure holds an event never changes the order: both give the
// (time, sequence) minimum, and every lookup takes the earlier of early's
// minimum and bucket 0's head, as it always has.
//
// Large storage circulates: a bucket emptied by settle gives a slice of
// circulateMin events or more to spare, and a bucket that is full takes the
// largest spare when it is larger, so the buckets share storage about the
// size of the most events pending at once instead of each growing to the
// most it ever held (with 16,384 ranks' events pending, that was ≈ 90 MB of
// fresh memory allocated over a run, and its first touch ≈ 8% of the run's
// CPU: issue 18). Smaller slices stay with their bucket, as moving them
// costs more than it saves.
type queue struct {
	last    Time // every bucketed event is at or after it
	head0   int  // bucket 0's next event
	buckets [numBuckets][]event
	mask    [numBuckets / 64]uint64 // bit b: bucket b is not empty
	words   uint64                  // bit w: mask[w] is not 0
	n       int                     // bucketed events not yet popped
	early   earlyQueue              // events before last; every event until bucketing
	spare   [][]event               // empty slices with storage, largest last
	runs    []int32                 // settle's scratch: where its bucket's runs start
	// pushB is bucketOf(pushAt, last): the bucket of the last push's time
	// (bucket), or of last itself (0) after last changed; if it is not 0,
	// its mask bit is set
	pushAt Time
	pushB  int
	// bucketing: more than heapMax events were pending at once since the
	// last reset, and events at or after last go to the buckets
	bucketing bool
	// hold keeps early.room at 0 (setRoom) while the engine's FIFO holds
	// events or the engine is stopped (Engine.hold), so that room alone
	// tells Engine.runAll's loop an event can be taken in place.
	hold bool
}

// heapMax is the most events early holds before the queue starts bucketing.
// Above sortedMax early is a binary heap, which the buckets beat from there
// on: holding 128 or 256 events, 17–18 M events/s on the heap against 27 M
// on the buckets (`-bench 'Hold(64|128|256)$'`); 64 ties. The ranks of a
// small cluster played every one sit there (Mixtral 8x7B on 64 H100 at
// flow fidelity: its plan took 16.4–16.5 s of CPU at 256, 13.5–14.7 s at
// 64, the popping of the heap 9.6% of it; issue 18). A sweep point's
// representative ranks hold 32 at most (earlyQueue) and never bucket;
// at 33 the analytic Mixtral plan on 512 H100 was 4% slower (its points'
// peaks then bucketed for the rest of their plays), at 64 not.
const heapMax = 64

// The time is read in 4-bit digits (16 of them): bucket 16p+v holds the
// events whose highest digit differing from last's is digit p, with value
// v there (v is above last's digit, so v ≥ 1); bucket 0 holds the events
// at last. An event moves at most once per digit on its way down.
const (
	digitBits  = 4
	numDigits  = (64 + digitBits - 1) / digitBits
	numBuckets = (numDigits<<digitBits + 63) &^ 63
)

// bucketOf is the bucket of time t relative to last (t not before last).
func bucketOf(t, last Time) int {
	d := uint64(t ^ last)
	if d == 0 {
		return 0
	}
	p := (bits.Len64(d) - 1) / digitBits
	return p<<digitBits | int(uint64(t)>>(p*digitBits)&(1<<digitBits-1))
}

func (q *queue) len() int { return q.n + q.early.len() }

// push adds x, the latest-scheduled event so far (see earlyQueue.push).
func (q *queue) push(x event) {
	if x.at < q.last || !q.bucketing && q.early.len() < heapMax {
		q.early.push(x)
		q.setRoom()
		return
	}
	if !q.bucketing {
		q.startBucketing()
	}
	q.bucket(x)
}

// setRoom sets early.room (earlyQueue): the places its sorted storage may
// fill, min(cap, sortedCap), while early is sorted, an event was popped
// from it (head > 0: insertAbove's bound), q is not bucketing and not held
// (hold), else 0. It depends on that state alone, so it may be called at
// any time (Engine.hold).
func (q *queue) setRoom() {
	r := 0
	if !q.hold && !q.bucketing && !q.early.heap && q.early.head > 0 {
		r = min(cap(q.early.ev), sortedCap)
	}
	q.early.room = r
}

// startBucketing moves the heap's events into the buckets, in (time,
// sequence) order so that events at one time enter their bucket in schedule
// order, as pushes would have put them: from here early holds only events
// before last, as the radix queue has it. Nothing was bucketed since the
// reset, so last is still 0, before every event.
func (q *queue) startBucketing() {
	q.bucketing = true
	for _, e := range q.early.sorted() {
		q.bucket(e)
	}
	q.early.reset()
}

// bucket puts x, at or after last, into its bucket.
//
// Pushes come in runs of one time too (an every-rank play schedules one
// event per rank of a collective or stage in a row: 84% of the 405B
// --all-ranks run's pushes had the time of the push before), so the last
// push's bucket is kept (pushAt, pushB) and reused for a push at its time,
// without bucketOf and without setting its mask bits: a bucket other than
// 0 that a push filled stays non-empty until settle empties it, and settle
// moves last, which resets pushB to 0 (only bucket 0 empties by popping;
// a push to it always takes the long way). The append writes the bucket's
// length only, and a full bucket is handled in bucketFull, a call after
// which nothing of bucket's is needed (no registers saved around it on
// the common path).
func (q *queue) bucket(x event) {
	b := q.pushB
	if x.at != q.pushAt || b == 0 {
		b = bucketOf(x.at, q.last)
		q.pushAt, q.pushB = x.at, b
		q.mask[b>>6&(len(q.mask)-1)] |= 1 << (b & 63)
		q.words |= 1 << (b >> 6)
	}
	s := &q.buckets[b&(numBuckets-1)]
	n := len(*s)
	if n == cap(*s) {
		q.bucketFull(b, x)
		return
	}
	*s = (*s)[:n+1]
	(*s)[n] = x
	q.n++
}

// bucketFull is bucket's append to bucket b, full: it grows the bucket,
// then appends x.
func (q *queue) bucketFull(b int, x event) {
	q.buckets[b] = append(q.grow(q.buckets[b], 1), x)
	q.n++
}

// circulateMin is the smallest storage, in events (96 KiB), that a bucket
// emptied by settle gives to spare.
const circulateMin = 4096

// grow returns s (without room for more events) moved to a slice of at
// least twice its size (64 events at least) with room for more: the
// smallest such spare, else a new one; s's storage becomes a spare.
func (q *queue) grow(s []event, more int) []event {
	want := max(2*cap(s), 64, len(s)+more)
	k, _ := slices.BinarySearchFunc(q.spare, want, func(sp []event, n int) int { return cmp.Compare(cap(sp), n) })
	var t []event
	if k < len(q.spare) {
		t = append(q.spare[k], s...)
		q.spare = slices.Delete(q.spare, k, k+1)
	} else {
		t = make([]event, len(s), want)
		copy(t, s)
	}
	q.putSpare(s[:0])
	return t
}

// putSpare keeps s's storage (s empty) for a bucket that needs some,
// keeping spare ordered by capacity.
func (q *queue) putSpare(s []event) {
	if cap(s) == 0 {
		return
	}
	i := len(q.spare)
	q.spare = append(q.spare, s)
	for ; i > 0 && cap(q.spare[i-1]) > cap(s); i-- {
		q.spare[i] = q.spare[i-1]
	}
	q.spare[i] = s
}

// hasAt reports whether an event at time now is queued, given that no
// queued event is before now (the engine's clock is the time of the last
// event it took out). After settle, the earliest bucketed events are in
// bucket 0, at last. (Settling here matters once: when the queue starts
// bucketing, the heap's events, some possibly at now, move to buckets
// keyed from last = 0.)
func (q *queue) hasAt(now Time) bool {
	if q.early.len() > 0 && q.early.min().at == now {
		return true
	}
	if q.n == 0 {
		return false
	}
	q.settle()
	return q.last == now
}

// min returns the earliest event; the queue must not be empty.
func (q *queue) min() *event {
	if q.n > 0 {
		q.settle()
		if x := &q.buckets[0][q.head0]; q.early.len() == 0 || !q.early.min().before(x) {
			return x
		}
	}
	return q.early.min()
}

// popUntil removes and returns the earliest event if the queue holds one
// at or before limit; ok is false otherwise.
func (q *queue) popUntil(limit Time) (ev event, ok bool) {
	if q.n > 0 {
		if q.mask[0]&1 == 0 {
			q.settle()
		}
		if x := &q.buckets[0][q.head0]; q.early.len() == 0 || !q.early.min().before(x) {
			if x.at > limit {
				return ev, false
			}
			ev = *x
			q.n--
			if q.head0++; q.head0 == len(q.buckets[0]) {
				q.buckets[0] = q.buckets[0][:0]
				q.head0 = 0
				if q.mask[0] &^= 1; q.mask[0] == 0 {
					q.words &^= 1
				}
			}
			return ev, true
		}
	}
	if q.early.len() == 0 || q.early.min().at > limit {
		return ev, false
	}
	return q.early.pop(), true
}

// settle makes bucket 0 hold the earliest bucketed events (q.n > 0): their
// time becomes last, and the rest of their bucket moves to lower buckets.
//
// The events of one time arrive in runs: an every-rank play schedules the
// same event for each rank of a collective or a symmetric stage one after
// the other (the 405B --all-ranks run: 98% of the events settle moved had
// the time of the event before them, and 72% of the buckets it emptied
// held one time only). So settle moves a bucket run by run: one pass finds
// the minimum and where each run starts; a bucket of one time becomes
// bucket 0 as it is, as a bucket of digit 0 does; otherwise each run of
// equal times goes to its bucket in one copy (one bucketOf and one mask
// update a run), unless most runs are single events (a random hold), which
// move one at a time (moveEach). Runs are moved in bucket order, each run's events in
// order, so every bucket receives exactly the events, in exactly the order,
// that moving them one at a time gave: the (time, sequence) order is the
// same.
func (q *queue) settle() {
	if q.mask[0]&1 != 0 {
		return
	}
	w := bits.TrailingZeros64(q.words)
	b := w<<6 + bits.TrailingZeros64(q.mask[w])
	bs := q.buckets[b]
	if q.mask[w] &^= 1 << (b & 63); q.mask[w] == 0 {
		q.words &^= 1 << w
	}
	// One pass finds the minimum and where each run of one time after
	// the first starts (runs), looking further only where the time
	// changes: a load, a comparison and a predicted branch for an event
	// inside a run (min at every event cost ≈ 15 instructions an event).
	// A bucket of digit 0 holds events at one time.
	// A bucket whose first 2·randomRuns events hold randomRuns run
	// starts (a random hold: nearly every event starts one) stops
	// recording runs there; the rest is read for its minimum only (≈ 10
	// instructions an event instead of ≈ 19) and the bucket moves one
	// event at a time.
	runs := q.runs[:0]
	last := bs[0].at
	each := false
	if b >= 1<<digitBits {
		prev := last
		for i := 1; i < len(bs); i++ {
			if at := bs[i].at; at != prev {
				runs = append(runs, int32(i))
				prev = at
				last = min(last, at)
				if len(runs) == randomRuns && i < 2*randomRuns {
					last = minAt(bs[i+1:], last)
					each = true
					break
				}
			}
		}
	}
	q.last = last
	q.pushAt, q.pushB = last, 0
	if len(runs) == 0 {
		// One time, in order: the bucket becomes bucket 0 (empty) as
		// it is. (runs grew nothing: q.runs stays as it is.)
		q.buckets[0], q.buckets[b] = bs, q.buckets[0]
		q.mask[0] |= 1
		q.words |= 1
		return
	}
	q.runs = runs // the storage append may have grown
	// Every event of bucket b shares last's bits above b's digit, so it
	// lands in a lower bucket, which may take storage from spare, never
	// bs's, while bs is read. Where most events differ in time from the
	// one before (a random hold), they move one at a time, as fast as
	// before runs; else run by run, a single event appended as it is, a
	// run of several in one copy.
	if each || 2*len(runs) >= len(bs) {
		q.moveEach(bs)
		q.release(b, bs)
		return
	}
	i := 0
	for k := 0; k <= len(runs); k++ {
		j := len(bs)
		if k < len(runs) {
			j = int(runs[k])
		}
		nb := bucketOf(bs[i].at, last)
		s := q.buckets[nb]
		if j == i+1 {
			if len(s) == cap(s) {
				s = q.grow(s, 1)
			}
			q.buckets[nb] = append(s, bs[i])
		} else {
			if cap(s)-len(s) < j-i {
				s = q.grow(s, j-i)
			}
			q.buckets[nb] = append(s, bs[i:j]...)
		}
		q.mask[nb>>6] |= 1 << (nb & 63)
		q.words |= 1 << (nb >> 6)
		i = j
	}
	q.release(b, bs)
}

// randomRuns is the number of run starts within settle's first
// 2·randomRuns events of a bucket after which it takes the bucket for a
// random one: it finds the rest's minimum without looking for runs and
// moves the events one at a time (moveEach). Either move gives the same
// buckets in the same order; this only picks the cheaper. (Hold1k: 4
// 834.8 M instructions, 8 840.9 M, against 857.6 M recording every run.
// Two times alternating, A B A B, then long runs, as a few buckets of
// thousands of events in the 405B --all-ranks run, switch too and move
// dearer one at a time: +1.9 M there; a test of the time two events back
// at the switch kept them on runs but cost the run loop an alignment NOP
// an event, +50 M.)
const randomRuns = 4

// minAt returns the earliest of t and the times of es.
func minAt(es []event, t Time) Time {
	for i := range es {
		if at := es[i].at; at < t {
			t = at
		}
	}
	return t
}

// moveEach is settle's move of bs one event at a time, each to its bucket
// relative to last. (A call of its own: in settle, its loop cost settle's
// first pass ≈ 2 instructions an event in registers.)
func (q *queue) moveEach(bs []event) {
	last := q.last
	for i := range bs {
		nb := bucketOf(bs[i].at, last)
		s := q.buckets[nb]
		if len(s) == cap(s) {
			s = q.grow(s, 1)
		}
		q.buckets[nb] = append(s, bs[i])
		q.mask[nb>>6] |= 1 << (nb & 63)
		q.words |= 1 << (nb >> 6)
	}
}

// release empties bucket b, whose events bs settle moved: storage of
// circulateMin events or more goes to spare, less stays with the bucket.
func (q *queue) release(b int, bs []event) {
	if cap(bs) >= circulateMin {
		q.buckets[b] = nil
		q.putSpare(bs[:0])
	} else {
		q.buckets[b] = bs[:0]
	}
}

// reset empties the queue, keeping its buckets' storage.
func (q *queue) reset() {
	for w, m := range q.mask {
		for ; m != 0; m &= m - 1 {
			b := w<<6 + bits.TrailingZeros64(m)
			q.buckets[b] = q.buckets[b][:0]
		}
	}
	q.mask, q.words = [len(q.mask)]uint64{}, 0
	q.n, q.last, q.head0 = 0, 0, 0
	q.pushAt, q.pushB = 0, 0
	q.early.reset()
	q.bucketing, q.hold = false, false
}
