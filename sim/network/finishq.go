package network

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/simtrain/simtrain/sim/engine"
)

// finishQueue holds the active flows for step's departures, which leave in
// (finish, seq) order. Flows with one finish time share a bucket, and the
// buckets, not the flows, are kept in a heap by finish: a collective's
// flows start at one instant with one size and rate, so they finish
// together. On the bundled 70B flow run 98.5% of the departures leave at
// instants where eight or more leave (eight on average), on the 405B one
// cut to 2,048 GPUs 86%, and DeepSeek-V3's all-to-alls send 2,771 at an
// instant; a heap of flows sifted once for each (issue 18: ≈ 8% of the
// 70B run's instructions, 27% of DeepSeek-V3's).
//
// A flow joins the bucket of the last insertion when that has its finish
// time, else a new one, so one finish time may have more than one bucket.
// A bucket's flows are a list threaded through the flow slots (no storage
// of its own to grow). popDue sorts what leaves by (finish, seq), which is
// the order a heap of flows pops them in (keys are unique), where it is
// not in that order already (a bucket of flows that arrived at one instant
// through the alone shortcut is). A bucket leaves the heap when its last
// flow does, so the heap's least finish is the least flow's.
type finishQueue struct {
	bk    []finishBucket
	free  []int32 // ids of buckets not in use
	heap  []int32 // the buckets in use: a 4-ary min-heap on finish
	at    []finishSlot
	last  int32 // 1 + the bucket the last insertion used; 0: none (or freed since)
	n     int   // flows held
	due   []dueFlow
	keys  []uint64
	place []int32
	out   []int32
}

// finishBucket is the flows of one finish time: a list from head to tail
// through their slots, in the order they joined; hpos is its index in the
// heap.
type finishBucket struct {
	finish     engine.Time
	hpos       int32
	head, tail int32
}

// finishSlot is where flow slot i is held: in bucket b (-1: not held),
// between prev and next (-1: none), with its seq.
type finishSlot struct {
	seq        uint64
	b          int32
	prev, next int32
}

type dueFlow struct {
	finish engine.Time
	seq    uint64
	flow   int32
}

func (q *finishQueue) len() int { return q.n }

// minFinish is the least finish time held; the queue must not be empty.
func (q *finishQueue) minFinish() engine.Time { return q.bk[q.heap[0]].finish }

// addSlot makes room for one more flow slot, not held.
func (q *finishQueue) addSlot() { q.at = append(q.at, finishSlot{b: -1, prev: -1, next: -1}) }

// update holds flow fi with key (finish, seq): inserted, or moved when its
// finish changed.
func (q *finishQueue) update(fi int32, finish engine.Time, seq uint64) {
	if b := q.at[fi].b; b >= 0 {
		if q.bk[b].finish == finish {
			return
		}
		q.remove(fi)
	}
	b := q.last - 1
	if b < 0 || q.bk[b].finish != finish {
		b = q.newBucket(finish)
		q.last = b + 1
	}
	bk := &q.bk[b]
	q.at[fi] = finishSlot{seq: seq, b: b, prev: bk.tail, next: -1}
	if bk.tail >= 0 {
		q.at[bk.tail].next = fi
	} else {
		bk.head = fi
	}
	bk.tail = fi
	q.n++
}

// remove takes held flow fi out of its bucket, and the bucket out of the
// heap when it was the last.
func (q *finishQueue) remove(fi int32) {
	s := q.at[fi]
	bk := &q.bk[s.b]
	if s.prev >= 0 {
		q.at[s.prev].next = s.next
	} else {
		bk.head = s.next
	}
	if s.next >= 0 {
		q.at[s.next].prev = s.prev
	} else {
		bk.tail = s.prev
	}
	q.at[fi] = finishSlot{b: -1, prev: -1, next: -1}
	q.n--
	if bk.head < 0 {
		q.unlink(int(bk.hpos))
		q.freeBucket(s.b)
	}
}

// popDue takes every flow whose finish is at or before now out of the
// queue and returns them in (finish, seq) order; the slice is valid until
// the next popDue.
func (q *finishQueue) popDue(now engine.Time) []int32 {
	due := q.due[:0]
	sorted := true
	for len(q.heap) > 0 {
		b := q.heap[0]
		bk := &q.bk[b]
		if bk.finish > now {
			break
		}
		q.unlink(0)
		for fi := bk.head; fi >= 0; {
			s := &q.at[fi]
			// Buckets leave by finish, so only a bucket's seqs, or
			// two buckets of one finish, can be out of order.
			if k := len(due); k > 0 && due[k-1].finish == bk.finish && due[k-1].seq > s.seq {
				sorted = false
			}
			due = append(due, dueFlow{bk.finish, s.seq, fi})
			next := s.next
			*s = finishSlot{b: -1, prev: -1, next: -1}
			fi = next
		}
		q.freeBucket(b)
	}
	q.n -= len(due)
	out := q.out[:0]
	if sorted {
		for k := range due {
			out = append(out, due[k].flow)
		}
	} else {
		for lo := 0; lo < len(due); {
			hi := lo + 1
			for hi < len(due) && due[hi].finish == due[lo].finish {
				hi++
			}
			out = q.appendBySeq(out, due[lo:hi])
			lo = hi
		}
	}
	q.due, q.out = due, out
	return out
}

// seqBits and indexBits split a sort key: a flow's seq above its index in
// the run being sorted, so that the keys sort as plain integers (no
// comparison function called per comparison: that was ≈ 20% of a
// DeepSeek-V3 flow run).
const (
	indexBits = 22
	seqBits   = 64 - indexBits
)

// appendBySeq appends the flows of run (one finish time) to out in seq
// order. The flows of one burst started together, so their seqs mostly
// span little more than their number: then each is placed at its seq's
// offset in a scratch array and the array read in order, no comparisons
// (sorting was ≈ 13% of a DeepSeek-V3 flow run); else their keys are
// sorted.
func (q *finishQueue) appendBySeq(out []int32, run []dueFlow) []int32 {
	inOrder, small := true, len(run) <= 1<<indexBits
	lo, hi := run[0].seq, run[0].seq
	for k := range run {
		if k > 0 && run[k-1].seq > run[k].seq {
			inOrder = false
		}
		lo, hi = min(lo, run[k].seq), max(hi, run[k].seq)
	}
	if hi >= 1<<seqBits {
		small = false
	}
	switch {
	case inOrder:
		for k := range run {
			out = append(out, run[k].flow)
		}
	case hi-lo < 4*uint64(len(run))+64:
		place := q.place[:0]
		for range hi - lo + 1 {
			place = append(place, -1)
		}
		for k := range run {
			place[run[k].seq-lo] = run[k].flow // (seqs are unique)
		}
		for _, fi := range place {
			if fi >= 0 {
				out = append(out, fi)
			}
		}
		q.place = place
	case small:
		keys := q.keys[:0]
		for k := range run {
			keys = append(keys, run[k].seq<<indexBits|uint64(k))
		}
		slices.Sort(keys)
		for _, key := range keys {
			out = append(out, run[key&(1<<indexBits-1)].flow)
		}
		q.keys = keys
	default:
		slices.SortFunc(run, func(a, b dueFlow) int { return cmp.Compare(a.seq, b.seq) })
		for k := range run {
			out = append(out, run[k].flow)
		}
	}
	return out
}

// newBucket takes a bucket for finish, empty, into the heap.
func (q *finishQueue) newBucket(finish engine.Time) int32 {
	var b int32
	if k := len(q.free); k > 0 {
		b = q.free[k-1]
		q.free = q.free[:k-1]
	} else {
		q.bk = append(q.bk, finishBucket{})
		b = int32(len(q.bk) - 1)
	}
	q.bk[b] = finishBucket{finish: finish, head: -1, tail: -1}
	q.heap = append(q.heap, b)
	q.up(len(q.heap)-1, b)
	return b
}

func (q *finishQueue) freeBucket(b int32) {
	q.free = append(q.free, b)
	if q.last == b+1 {
		q.last = 0
	}
}

// unlink takes the bucket at heap index i out of the heap.
func (q *finishQueue) unlink(i int) {
	n := len(q.heap) - 1
	moved := q.heap[n]
	q.heap = q.heap[:n]
	if i == n {
		return
	}
	if i > 0 && q.bk[moved].finish < q.bk[q.heap[(i-1)/4]].finish {
		q.up(i, moved)
	} else {
		q.down(i, moved)
	}
}

// up places bucket b at heap hole i and sifts it towards the root.
func (q *finishQueue) up(i int, b int32) {
	f := q.bk[b].finish
	for i > 0 {
		p := (i - 1) / 4
		pb := q.heap[p]
		if q.bk[pb].finish <= f {
			break
		}
		q.heap[i] = pb
		q.bk[pb].hpos = int32(i)
		i = p
	}
	q.heap[i] = b
	q.bk[b].hpos = int32(i)
}

// down places bucket b at heap hole i and sifts it towards the leaves.
func (q *finishQueue) down(i int, b int32) {
	f := q.bk[b].finish
	h := q.heap
	for {
		c := 4*i + 1
		if c >= len(h) {
			break
		}
		best, bf := c, q.bk[h[c]].finish
		for k := c + 1; k < min(c+4, len(h)); k++ {
			if kf := q.bk[h[k]].finish; kf < bf {
				best, bf = k, kf
			}
		}
		if bf >= f {
			break
		}
		h[i] = h[best]
		q.bk[h[i]].hpos = int32(i)
		i = best
	}
	h[i] = b
	q.bk[b].hpos = int32(i)
}

// check verifies the queue's structure (CheckInvariants): every bucket in
// the heap holds flows, knows its place and sits below its parent; its
// list runs both ways through slots that name it; and the count matches.
func (q *finishQueue) check() error {
	held := 0
	for i, b := range q.heap {
		bk := &q.bk[b]
		if bk.head < 0 || int(bk.hpos) != i || i > 0 && bk.finish < q.bk[q.heap[(i-1)/4]].finish {
			return fmt.Errorf("bucket %d at index %d out of order or empty", b, i)
		}
		prev := int32(-1)
		for fi := bk.head; fi >= 0; fi = q.at[fi].next {
			if s := q.at[fi]; s.b != b || s.prev != prev {
				return fmt.Errorf("flow slot %d in bucket %d's list names bucket %d, previous %d (want %d)", fi, b, s.b, s.prev, prev)
			}
			if held++; held > len(q.at) {
				return fmt.Errorf("bucket %d's list loops", b)
			}
			prev = fi
		}
		if bk.tail != prev {
			return fmt.Errorf("bucket %d ends at %d, its list at %d", b, bk.tail, prev)
		}
	}
	if held != q.n {
		return fmt.Errorf("%d flows in buckets, count %d", held, q.n)
	}
	return nil
}
