package network

// finishHeap is an indexed binary min-heap of flow slots ordered by
// (finish, seq); each flow knows its index (flow.hidx), so a changed finish
// time is repaired in O(log n) without searching.
type finishHeap struct {
	flows *[]flow
	items []int32
}

func (h *finishHeap) len() int   { return len(h.items) }
func (h *finishHeap) min() int32 { return h.items[0] }

func (h *finishHeap) less(a, b int32) bool {
	fs := *h.flows
	fa, fb := &fs[a], &fs[b]
	return fa.finish < fb.finish || (fa.finish == fb.finish && fa.seq < fb.seq)
}

func (h *finishHeap) set(i int, fi int32) {
	h.items[i] = fi
	(*h.flows)[fi].hidx = int32(i)
}

// update inserts flow fi or restores the order after its finish changed.
func (h *finishHeap) update(fi int32) {
	i := int((*h.flows)[fi].hidx)
	if i < 0 {
		h.items = append(h.items, fi)
		h.up(len(h.items)-1, fi)
		return
	}
	if i > 0 && h.less(fi, h.items[(i-1)/2]) {
		h.up(i, fi)
	} else {
		h.down(i, fi)
	}
}

// pop removes the minimum.
func (h *finishHeap) pop() int32 {
	top := h.items[0]
	n := len(h.items) - 1
	last := h.items[n]
	h.items = h.items[:n]
	(*h.flows)[top].hidx = -1
	if n > 0 {
		h.down(0, last)
	}
	return top
}

// up places fi at hole i and sifts it towards the root.
func (h *finishHeap) up(i int, fi int32) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(fi, h.items[p]) {
			break
		}
		h.set(i, h.items[p])
		i = p
	}
	h.set(i, fi)
}

// down places fi at hole i and sifts it towards the leaves.
func (h *finishHeap) down(i int, fi int32) {
	n := len(h.items)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h.less(h.items[r], h.items[c]) {
			c = r
		}
		if !h.less(h.items[c], fi) {
			break
		}
		h.set(i, h.items[c])
		i = c
	}
	h.set(i, fi)
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
