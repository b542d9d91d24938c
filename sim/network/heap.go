package network

import "github.com/simtrain/simtrain/sim/engine"

// finishHeap is an indexed 4-ary min-heap of flow slots ordered by
// (finish, seq), unique per flow, so the order in which flows leave it does
// not depend on the heap's shape. Each item carries its key, so sifting
// compares items without loading the flows (a flow's record is on another
// cache line); at[fi] is flow fi's index, so a changed finish time is
// repaired in O(log n) without searching. Four children per node halve the
// depth of a binary heap for the price of three comparisons per level on
// one or two cache lines.
type finishHeap struct {
	items []finishItem
	at    []int32 // at[fi]: index of flow slot fi in items, -1 when absent
}

type finishItem struct {
	finish engine.Time
	seq    uint64
	flow   int32
}

func (a finishItem) before(b finishItem) bool {
	return a.finish < b.finish || (a.finish == b.finish && a.seq < b.seq)
}

func (h *finishHeap) len() int               { return len(h.items) }
func (h *finishHeap) min() int32             { return h.items[0].flow }
func (h *finishHeap) minFinish() engine.Time { return h.items[0].finish }

// addSlot makes room for one more flow slot, absent from the heap.
func (h *finishHeap) addSlot() { h.at = append(h.at, -1) }

func (h *finishHeap) set(i int, it finishItem) {
	h.items[i] = it
	h.at[it.flow] = int32(i)
}

// update inserts flow fi with key (finish, seq) or restores the order
// after its finish changed.
func (h *finishHeap) update(fi int32, finish engine.Time, seq uint64) {
	it := finishItem{finish, seq, fi}
	i := int(h.at[fi])
	if i < 0 {
		h.items = append(h.items, it)
		h.up(len(h.items)-1, it)
		return
	}
	if i > 0 && it.before(h.items[(i-1)/4]) {
		h.up(i, it)
	} else {
		h.down(i, it)
	}
}

// pop removes the minimum.
func (h *finishHeap) pop() int32 {
	top := h.items[0].flow
	n := len(h.items) - 1
	last := h.items[n]
	h.items = h.items[:n]
	h.at[top] = -1
	if n > 0 {
		h.downUp(last)
	}
	return top
}

// downUp places it at the root's hole the bottom-up way: the hole goes
// down to a leaf along the least children, then it rises from there. The
// item a pop puts at the root is the heap's last, which mostly belongs
// near the leaves, so this spares down's comparison with it at every level
// for a few at the end (keys are unique: the same heap order, the same
// pops).
func (h *finishHeap) downUp(it finishItem) {
	items, at := h.items, h.at
	n := len(items)
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		var best int
		if c+3 < n {
			// leastChild's four children, inlined (a call per level
			// otherwise: it is too large for the compiler to inline).
			kids := (*[4]finishItem)(items[c : c+4])
			b := 0
			bf, bs := kids[0].finish, kids[0].seq
			if f := kids[1].finish; f < bf || f == bf && kids[1].seq < bs {
				b, bf, bs = 1, f, kids[1].seq
			}
			if f := kids[2].finish; f < bf || f == bf && kids[2].seq < bs {
				b, bf, bs = 2, f, kids[2].seq
			}
			if f := kids[3].finish; f < bf || f == bf && kids[3].seq < bs {
				b = 3
			}
			best = c + b
		} else {
			best, _, _ = leastChild(items, c)
		}
		items[i] = items[best]
		at[items[i].flow] = int32(i)
		i = best
	}
	for i > 0 {
		p := (i - 1) / 4
		if pf := items[p].finish; it.finish > pf || it.finish == pf && it.seq > items[p].seq {
			break
		}
		items[i] = items[p]
		at[items[i].flow] = int32(i)
		i = p
	}
	items[i] = it
	at[it.flow] = int32(i)
}

// up places it at hole i and sifts it towards the root.
func (h *finishHeap) up(i int, it finishItem) {
	for i > 0 {
		p := (i - 1) / 4
		if !it.before(h.items[p]) {
			break
		}
		h.set(i, h.items[p])
		i = p
	}
	h.set(i, it)
}

// down places it at hole i and sifts it towards the leaves.
func (h *finishHeap) down(i int, it finishItem) {
	items, at := h.items, h.at
	n := len(items)
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		// The least of up to four children, compared on local copies
		// of the keys.
		best, bf, bs := leastChild(items, c)
		if bf > it.finish || bf == it.finish && bs > it.seq {
			break
		}
		items[i] = items[best]
		at[items[i].flow] = int32(i)
		i = best
	}
	items[i] = it
	at[it.flow] = int32(i)
}

// leastChild returns the least of the children items[c:c+4] (fewer at the
// end of the heap) with its key. Four children, the usual case, are
// compared unrolled on one bounds check: a loop over them was ≈ 40% of
// the heap's instructions (cachegrind, BenchmarkFlow/llama3-405b-2048).
func leastChild(items []finishItem, c int) (best int, bf engine.Time, bs uint64) {
	if c+3 >= len(items) {
		best, bf, bs = c, items[c].finish, items[c].seq
		for k := c + 1; k < len(items); k++ {
			if f := items[k].finish; f < bf || f == bf && items[k].seq < bs {
				best, bf, bs = k, f, items[k].seq
			}
		}
		return best, bf, bs
	}
	kids := (*[4]finishItem)(items[c : c+4])
	b := 0
	bf, bs = kids[0].finish, kids[0].seq
	if f := kids[1].finish; f < bf || f == bf && kids[1].seq < bs {
		b, bf, bs = 1, f, kids[1].seq
	}
	if f := kids[2].finish; f < bf || f == bf && kids[2].seq < bs {
		b, bf, bs = 2, f, kids[2].seq
	}
	if f := kids[3].finish; f < bf || f == bf && kids[3].seq < bs {
		b, bf, bs = 3, f, kids[3].seq
	}
	return c + b, bf, bs
}

// shareHeap is a binary min-heap of (fair share, link) pairs for
// progressive filling; ties break on the link id so the fill order is
// deterministic.
type shareHeap struct {
	items []shareItem
}

type shareItem struct {
	key  float64
	link int32
}

func (h *shareHeap) push(key float64, link int32) {
	h.items = append(h.items, shareItem{})
	items := h.items
	i := len(items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if pk := items[p].key; pk < key || pk == key && items[p].link < link {
			break
		}
		items[i] = items[p]
		i = p
	}
	items[i] = shareItem{key, link}
}

func (h *shareHeap) pop() (float64, int32) {
	top := h.items[0]
	n := len(h.items) - 1
	last := h.items[n]
	h.items = h.items[:n]
	if n > 0 {
		h.down(0, last)
	}
	return top.key, top.link
}

// down places it at hole i and sifts it towards the leaves.
func (h *shareHeap) down(i int, it shareItem) {
	items := h.items
	n := len(items)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		// The lesser child, compared on local copies of the keys.
		ck, cl := items[c].key, items[c].link
		if r := c + 1; r < n {
			if rk, rl := items[r].key, items[r].link; rk < ck || rk == ck && rl < cl {
				c, ck, cl = r, rk, rl
			}
		}
		if ck > it.key || ck == it.key && cl > it.link {
			break
		}
		items[i] = shareItem{ck, cl}
		i = c
	}
	items[i] = it
}

// keep drops every item whose link live rejects and restores the heap
// order over the rest (Floyd's bottom-up build, O(n)). Keys are unique, so
// the remaining items leave in the order they would have.
func (h *shareHeap) keep(live func(link int32) bool) {
	items := h.items[:0]
	for _, it := range h.items {
		if live(it.link) {
			items = append(items, it)
		}
	}
	h.items = items
	for i := len(items)/2 - 1; i >= 0; i-- {
		h.down(i, items[i])
	}
}
