package network

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
)

// TestFinishHeapOrder: flows leave the completion heap in (finish, seq)
// order whatever the order of their updates, as a sort would give them.
func TestFinishHeapOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var h finishHeap
	const n = 2000
	finish := make([]engine.Time, n)
	for i := range n {
		h.addSlot()
		finish[i] = engine.Time(r.IntN(50))
		h.update(int32(i), finish[i], uint64(i))
	}
	// Move a third of them, some earlier and some later.
	for i := 0; i < n; i += 3 {
		finish[i] = engine.Time(r.IntN(50))
		h.update(int32(i), finish[i], uint64(i))
	}
	prev := int32(-1)
	for h.len() > 0 {
		fi := h.pop()
		if h.at[fi] != -1 {
			t.Fatalf("popped flow %d still has heap index %d", fi, h.at[fi])
		}
		if prev >= 0 && (finish[fi] < finish[prev] || finish[fi] == finish[prev] && fi < prev) {
			t.Fatalf("flow %d (finish %d) left after flow %d (finish %d)", fi, finish[fi], prev, finish[prev])
		}
		prev = fi
	}
}

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

// BenchmarkFinishHeap: one op is a pop and an insert at a later time, on a
// heap of 600 flows with many equal finish times (a step's bursts of
// equal flows), as flow fidelity's departures and arrivals use it.
func BenchmarkFinishHeap(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	var h finishHeap
	const n = 600
	seq := uint64(0)
	for i := range n {
		h.addSlot()
		seq++
		h.update(int32(i), engine.Time(r.IntN(1000)), seq)
	}
	now := engine.Time(0)
	b.ReportAllocs()
	for b.Loop() {
		now = h.minFinish()
		fi := h.pop()
		seq++
		h.update(fi, now+engine.Time(r.IntN(64)*16), seq)
	}
}

// TestFinishHeapInterleaved: inserts, moves and pops in random order, as
// the fabric makes them; every pop is the least (finish, seq) of the flows
// in the heap, and after every operation each item sits below its parent
// and at holds its index. Tied finish times are common, as in a step's
// collective flows.
func TestFinishHeapInterleaved(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var h finishHeap
	const slots = 500
	for range slots {
		h.addSlot()
	}
	in := map[int32]finishItem{}
	seq := uint64(0)
	for op := range 60000 {
		fi := int32(r.IntN(slots))
		switch x := r.IntN(10); {
		case x < 4: // a start, or a new rate for a flow in the heap
			it, ok := in[fi]
			if !ok {
				seq++
				it = finishItem{seq: seq, flow: fi}
			}
			it.finish = engine.Time(r.IntN(64))
			in[fi] = it
			h.update(fi, it.finish, it.seq)
		case len(in) > 0:
			got := h.pop()
			want := finishItem{finish: -1}
			for _, it := range in {
				if want.finish < 0 || it.before(want) {
					want = it
				}
			}
			if got != want.flow {
				t.Fatalf("op %d: popped flow %d, least is flow %d", op, got, want.flow)
			}
			delete(in, got)
		}
		if h.len() != len(in) {
			t.Fatalf("op %d: %d items, %d flows in", op, h.len(), len(in))
		}
		for i, it := range h.items {
			if i > 0 && it.before(h.items[(i-1)/4]) {
				t.Fatalf("op %d: item %d before its parent", op, i)
			}
			if h.at[it.flow] != int32(i) {
				t.Fatalf("op %d: flow %d at %d, index says %d", op, it.flow, i, h.at[it.flow])
			}
		}
	}
}
