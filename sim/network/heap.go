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
		h.down(0, last)
	}
	return top
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
	n := len(h.items)
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		best := c
		for k, end := c+1, min(c+4, n); k < end; k++ {
			if h.items[k].before(h.items[best]) {
				best = k
			}
		}
		if !h.items[best].before(it) {
			break
		}
		h.set(i, h.items[best])
		i = best
	}
	h.set(i, it)
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

func (a shareItem) less(b shareItem) bool {
	return a.key < b.key || (a.key == b.key && a.link < b.link)
}

func (h *shareHeap) push(key float64, link int32) {
	it := shareItem{key, link}
	h.items = append(h.items, it)
	i := len(h.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !it.less(h.items[p]) {
			break
		}
		h.items[i] = h.items[p]
		i = p
	}
	h.items[i] = it
}

func (h *shareHeap) pop() (float64, int32) {
	top := h.items[0]
	n := len(h.items) - 1
	last := h.items[n]
	h.items = h.items[:n]
	if n > 0 {
		i := 0
		for {
			c := 2*i + 1
			if c >= n {
				break
			}
			if r := c + 1; r < n && h.items[r].less(h.items[c]) {
				c = r
			}
			if !h.items[c].less(last) {
				break
			}
			h.items[i] = h.items[c]
			i = c
		}
		h.items[i] = last
	}
	return top.key, top.link
}
