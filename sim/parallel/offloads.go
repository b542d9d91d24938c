package parallel

// offloadTable is the builder's record of offloaded activations: for a
// layer (global index) and a micro-batch, the copies that took the layer's
// inputs to the host and back (hostCopies). Entries are made (set) and
// read (get), never removed; length counts those made since the last
// reset, as len of the Go map it replaces did.
//
// Why not a map: a stage of an offloading layout makes one entry per layer
// and micro-batch (DeepSeek-V3 on GB200, pp 4: ≈ 2,000 a stage), and the
// builder made a new map for every stage of every build. Growing it was
// ≈ 10% of the CPU of a 72-point DeepSeek-V3 layout sweep (perf of the
// command: mapassign's rehashing, new tables and their first touch, and
// clearing them), where rows by layer, indexed by micro-batch and kept
// from build to build, cost an index (issue 18, round 58).
type offloadTable struct {
	rows []offloadRow // by layer
	// touched are the layers whose rows hold entries made since the last
	// reset, in the order first made (reset clears only those).
	touched []int32
	n       int // entries made since the last reset
	// other holds the entries of a negative layer or micro-batch, which
	// rows cannot index (none is made: offload and copyOffloads take a
	// schedule entry's micro-batch and a chunk's layer).
	other map[int64]hostCopies
}

// offloadRow is one layer's entries by micro-batch: e[:hi] may hold
// entries made since the last reset, the rest is zero.
type offloadRow struct {
	e  []offloadEntry
	hi int
}

// offloadEntry is a table entry, made when set.
type offloadEntry struct {
	c    hostCopies
	made bool
}

// length is the number of entries made since the last reset.
func (t *offloadTable) length() int { return t.n }

// get returns layer l's entry of micro-batch mb, and whether it was made.
func (t *offloadTable) get(l, mb int) (hostCopies, bool) {
	if l < 0 || mb < 0 {
		c, ok := t.other[offloadKey(l, mb)]
		return c, ok
	}
	if l >= len(t.rows) || mb >= t.rows[l].hi {
		return hostCopies{}, false
	}
	e := &t.rows[l].e[mb]
	return e.c, e.made
}

// set makes (or replaces) layer l's entry of micro-batch mb.
func (t *offloadTable) set(l, mb int, c hostCopies) {
	if l < 0 || mb < 0 {
		if t.other == nil {
			t.other = map[int64]hostCopies{}
		}
		k := offloadKey(l, mb)
		if _, ok := t.other[k]; !ok {
			t.n++
		}
		t.other[k] = c
		return
	}
	if l >= len(t.rows) {
		t.rows = append(t.rows, make([]offloadRow, l+1-len(t.rows))...)
	}
	r := &t.rows[l]
	if r.hi == 0 {
		t.touched = append(t.touched, int32(l))
	}
	if mb >= len(r.e) {
		// (room for the micro-batches after mb, which the next passes
		// offload: grown once a layer for a step, kept for the next)
		r.e = append(r.e, make([]offloadEntry, max(mb+1, 2*len(r.e), 16)-len(r.e))...)
	}
	r.hi = max(r.hi, mb+1)
	e := &r.e[mb]
	if !e.made {
		t.n++
	}
	*e = offloadEntry{c: c, made: true}
}

// reset removes every entry, keeping the rows' storage.
func (t *offloadTable) reset() {
	for _, l := range t.touched {
		r := &t.rows[l]
		clear(r.e[:r.hi])
		r.hi = 0
	}
	t.touched = t.touched[:0]
	t.n = 0
	clear(t.other)
}
