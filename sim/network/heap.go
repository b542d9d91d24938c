package network

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
