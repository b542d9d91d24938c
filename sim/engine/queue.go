package engine

import (
	"cmp"
	"math/bits"
	"slices"
)

// queue holds the pending events that are not zero-delay events at now: a
// radix heap on the 128-bit key (time, key), which works because a
// simulation only ever schedules events after the last one it took out
// (monotone keys). Bucket b holds the events whose key first differs from
// last's at bit b-1 (bits 0–63: the key, 64–127: the time; bucket 0: last
// itself). Taking the earliest event scans the lowest non-empty bucket
// once and redistributes it into lower buckets around its minimum, so an
// event moves a few times on its way out instead of sifting through every
// level of a binary heap per pop, a chain of dependent comparisons; pushing
// is an append. At 1,000 pending events the hold benchmark runs faster
// than on the binary heap (README, Performance).
//
// An event scheduled before last (possible only after min moved last
// ahead of now, e.g. RunUntil stopping at its limit) goes to early, a
// binary heap, so the order stays exact in every case.
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
	last    event // every bucketed event is after it
	buckets [numBuckets][]event
	mask    [numBuckets / 64]uint64 // bit b: bucket b is not empty
	n       int                     // bucketed events
	early   binHeap                 // events before last
	spare   [][]event               // empty slices with storage, largest last
}

// The key is read in 4-bit digits (32 of them): bucket 16p+v holds the
// events whose highest digit differing from last's is digit p, with value
// v there (v is above last's digit, so v ≥ 1); bucket 0 holds last. An
// event moves at most once per digit on its way down.
const (
	digitBits  = 4
	numBuckets = 128 / digitBits << digitBits
)

// bucketOf is the bucket of x relative to last (x not before last).
func bucketOf(x, last *event) int {
	if d := uint64(x.at ^ last.at); d != 0 {
		p := (bits.Len64(d) - 1) / digitBits
		return (64/digitBits+p)<<digitBits | int(uint64(x.at)>>(p*digitBits)&(1<<digitBits-1))
	}
	d := x.key ^ last.key
	if d == 0 {
		return 0
	}
	p := (bits.Len64(d) - 1) / digitBits
	return p<<digitBits | int(x.key>>(p*digitBits)&(1<<digitBits-1))
}

func (q *queue) len() int { return q.n + len(q.early) }

func (q *queue) push(x event) {
	if x.before(&q.last) {
		q.early.push(x)
		return
	}
	b := bucketOf(&x, &q.last)
	bs := q.buckets[b]
	if len(bs) == cap(bs) {
		bs = q.grow(bs)
	}
	q.buckets[b] = append(bs, x)
	q.mask[b>>6] |= 1 << (b & 63)
	q.n++
}

// circulateMin is the smallest storage, in events (96 KiB), that a bucket
// emptied by settle gives to spare.
const circulateMin = 4096

// grow returns s (full) moved to a slice of at least twice its size (64
// events at least): the smallest such spare, else a new one; s's storage
// becomes a spare.
func (q *queue) grow(s []event) []event {
	want := max(2*cap(s), 64)
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

// hasAt reports whether an event at time now is queued, given that now is
// not after the time of last (the engine's clock is the time of the last
// event it took out, and min only moves last ahead): the bucketed events
// at last's time are in buckets below 64/digitBits<<digitBits (256).
func (q *queue) hasAt(now Time) bool {
	if len(q.early) > 0 && q.early[0].at == now {
		return true
	}
	return q.last.at == now && q.mask[0]|q.mask[1]|q.mask[2]|q.mask[3] != 0
}

// min returns the earliest event; the queue must not be empty.
func (q *queue) min() *event {
	if q.n > 0 {
		q.settle()
		if len(q.early) == 0 || !q.early[0].before(&q.buckets[0][0]) {
			return &q.buckets[0][0]
		}
	}
	return &q.early[0]
}

// popMin removes and returns the earliest event; min must have been called
// since the last push.
func (q *queue) popMin() event {
	if q.n > 0 && (len(q.early) == 0 || !q.early[0].before(&q.buckets[0][0])) {
		x := q.buckets[0][0]
		q.buckets[0] = q.buckets[0][:0]
		q.mask[0] &^= 1
		q.n--
		return x
	}
	return q.early.pop()
}

// settle makes bucket 0 hold the earliest bucketed event (q.n > 0): it
// becomes last, and the rest of its bucket moves to lower buckets.
func (q *queue) settle() {
	if q.mask[0]&1 != 0 {
		return
	}
	b := 0
	for w, m := range q.mask {
		if m != 0 {
			b = w<<6 + bits.TrailingZeros64(m)
			break
		}
	}
	bs := q.buckets[b]
	m := 0
	for i := 1; i < len(bs); i++ {
		if bs[i].before(&bs[m]) {
			m = i
		}
	}
	q.last = bs[m]
	// Every event of bucket b shares last's bits above b-1, so it lands in
	// a lower bucket, which may take storage from spare, never bs's, while
	// bs is read.
	q.mask[b>>6] &^= 1 << (b & 63)
	for i := range bs {
		nb := bucketOf(&bs[i], &q.last)
		s := q.buckets[nb]
		if len(s) == cap(s) {
			s = q.grow(s)
		}
		q.buckets[nb] = append(s, bs[i])
		q.mask[nb>>6] |= 1 << (nb & 63)
	}
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
	q.mask = [len(q.mask)]uint64{}
	q.n, q.last, q.early = 0, event{}, q.early[:0]
}
