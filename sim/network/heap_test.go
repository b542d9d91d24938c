package network

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
)

// TestShareHeapOrder: links leave the fill's heap in (share, link) order,
// pushed in any order and pushed again between pops, as progressive
// filling does with a stale key.
func TestShareHeapOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var h shareHeap
	key := map[int32]float64{}
	for l := range int32(3000) {
		key[l] = float64(r.IntN(40))
		h.push(key[l], l)
	}
	prevKey, prevLink := -1.0, int32(-1)
	for len(h.items) > 0 {
		k, l := h.pop()
		if k != key[l] {
			t.Fatalf("link %d popped with key %v, pushed with %v", l, k, key[l])
		}
		if k < prevKey || k == prevKey && l < prevLink {
			t.Fatalf("link %d (key %v) left after link %d (key %v)", l, k, prevLink, prevKey)
		}
		if l%7 == 0 && k < 1000 { // stale: back in with a larger key
			key[l] = k + float64(1+r.IntN(5))
			h.push(key[l], l)
			continue
		}
		prevKey, prevLink = k, l
	}
}

// TestShareHeapKeep: after keep drops some links mid-fill, the others
// leave in the order they would have, as a sort of the survivors gives it.
func TestShareHeapKeep(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var h shareHeap
	var want []shareItem
	for l := range int32(5000) {
		k := float64(r.IntN(60))
		h.push(k, l)
		want = append(want, shareItem{k, l})
	}
	slices.SortFunc(want, func(a, b shareItem) int {
		if c := cmp.Compare(a.key, b.key); c != 0 {
			return c
		}
		return cmp.Compare(a.link, b.link)
	})
	for _, w := range want[:700] {
		if k, l := h.pop(); k != w.key || l != w.link {
			t.Fatalf("popped (%v, %d), want (%v, %d)", k, l, w.key, w.link)
		}
	}
	dead := func(l int32) bool { return l%3 == 0 }
	h.keep(func(l int32) bool { return !dead(l) })
	for _, w := range want[700:] {
		if dead(w.link) {
			continue
		}
		if len(h.items) == 0 {
			t.Fatalf("heap empty, want (%v, %d)", w.key, w.link)
		}
		if k, l := h.pop(); k != w.key || l != w.link {
			t.Fatalf("after keep popped (%v, %d), want (%v, %d)", k, l, w.key, w.link)
		}
	}
	if len(h.items) != 0 {
		t.Fatalf("%d items left after every survivor popped", len(h.items))
	}
}

// TestFinishQueueOrder: inserts, moves and departures in random order, as
// the fabric makes them, with the clock moving on; every popDue returns
// exactly the flows held with finish at or before now, in (finish, seq)
// order, and after every operation CheckQueue holds. Tied finish times are
// the common case, as in a step's collective flows, and some flows share a
// finish time but not a bucket (inserted between others).
func TestFinishQueueOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var q finishQueue
	const slots = 500
	for range slots {
		q.addSlot()
	}
	type key struct {
		finish engine.Time
		seq    uint64
	}
	in := map[int32]key{}
	seq := uint64(0)
	now := engine.Time(0)
	pops := 0
	for op := range 100000 {
		fi := int32(r.IntN(slots))
		switch x := r.IntN(20); {
		case x < 12: // a start, or a new rate for a flow held
			k, ok := in[fi]
			if !ok {
				seq++
				k.seq = seq
			}
			k.finish = now + engine.Time(r.IntN(8)*r.IntN(8))
			in[fi] = k
			q.update(fi, k.finish, k.seq)
		case x < 19: // the clock moves on; the flows due leave
			now += engine.Time(r.IntN(3))
			var want []int32
			for f, k := range in {
				if k.finish <= now {
					want = append(want, f)
				}
			}
			slices.SortFunc(want, func(a, b int32) int {
				ka, kb := in[a], in[b]
				if ka.finish != kb.finish {
					return cmp.Compare(ka.finish, kb.finish)
				}
				return cmp.Compare(ka.seq, kb.seq)
			})
			got := q.popDue(now)
			if !slices.Equal(got, want) {
				t.Fatalf("op %d, now %d: popDue %v, want %v", op, now, got, want)
			}
			if len(got) > 1 {
				pops++
			}
			for _, f := range got {
				delete(in, f)
			}
		default: // a flow leaves early (only the fabric's tests do)
			if _, ok := in[fi]; ok {
				q.remove(fi)
				delete(in, fi)
			}
		}
		if err := q.check(); err != nil {
			t.Fatalf("op %d: %v", op, err)
		}
		if q.len() != len(in) {
			t.Fatalf("op %d: %d held, %d flows in", op, q.len(), len(in))
		}
		if q.len() > 0 {
			least := engine.Forever
			for _, k := range in {
				least = min(least, k.finish)
			}
			if q.minFinish() != least {
				t.Fatalf("op %d: minFinish %d, least finish %d", op, q.minFinish(), least)
			}
		}
	}
	if pops < 1000 {
		t.Errorf("only %d departures of more than one flow: the test does not exercise popDue's order", pops)
	}
}

// BenchmarkFinishQueue: one op is a departure instant of a burst of 8
// equal flows and their 8 successors' arrival at a later time (a step's
// ring flows), on a queue of 600 flows.
func BenchmarkFinishQueue(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	var q finishQueue
	const n = 600
	seq := uint64(0)
	finish := engine.Time(0)
	for i := range n {
		q.addSlot()
		if i%8 == 0 { // bursts of 8 share a finish
			finish = engine.Time(r.IntN(1000))
		}
		seq++
		q.update(int32(i), finish, seq)
	}
	var left []int32
	b.ReportAllocs()
	for b.Loop() {
		now := q.minFinish()
		left = append(left[:0], q.popDue(now)...)
		next := now + engine.Time(1+r.IntN(64)*16)
		for _, fi := range left {
			seq++
			q.update(fi, next, seq)
		}
	}
}

// TestFinishQueueSeqOrder: the flows of one finish time, inserted out of
// order (moved from another finish), leave in seq order by each of
// popDue's three ways: seqs close together (placed by offset), spread
// (packed keys sorted), and too large to pack (a comparison sort).
func TestFinishQueueSeqOrder(t *testing.T) {
	for _, c := range []struct {
		name string
		base uint64
		seqs []uint64
		want []int32
	}{
		{"close", 0, []uint64{9, 3, 7, 1, 8, 2}, []int32{3, 5, 1, 2, 4, 0}},
		{"spread", 0, []uint64{900, 3, 7000, 1, 8000, 2}, []int32{3, 5, 1, 0, 2, 4}},
		{"large", 1 << 50, []uint64{900, 3, 7000, 1, 8000, 2}, []int32{3, 5, 1, 0, 2, 4}},
	} {
		var q finishQueue
		for i, s := range c.seqs {
			q.addSlot()
			q.update(int32(i), 100, c.base+s)
			q.update(int32(i), 50, c.base+s) // moved: a new bucket, its flows out of order
		}
		got := q.popDue(50)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: popDue %v, want %v", c.name, got, c.want)
		}
		if q.len() != 0 || len(q.heap) != 0 {
			t.Errorf("%s: %d flows and %d buckets left", c.name, q.len(), len(q.heap))
		}
	}
}
