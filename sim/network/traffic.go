package network

import (
	"math"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/hugepages"
	"github.com/simtrain/simtrain/sim/units"
)

// Traffic mode (NewTraffic): links.arrow's reconstruction at analytic
// fidelity with links that share a history sharing one state.
//
// A link's analytic figures and its totals are a function of the sequence
// of transfers that crossed it (bytes, start, end) and of the folds after
// each round: two links that were crossed by the same transfers at the same
// times hold the same bits. A 131,072-GPU Llama 3 405B run crosses links
// 5.5 M times over 1.44 M links, yet only ~288 k distinct states ever occur
// and ~4.7 k distinct histories remain at the end (a stage's GPUs do the
// same thing; issue 18). So each link holds the id of a state (4 bytes)
// rather than the state (24 bytes, plus its change mark and totals), states
// are never changed while links share them (a crossing moves a link to the
// state the crossing leads to, made once and remembered in a small
// direct-mapped table), and a round's end folds each state touched in it
// once rather than each link. Every state is computed by exactly the float
// and integer operations the plain fabric applies to a link's record
// (Start, Repeat) and FoldChanged's caller to its totals, in the same order
// for each link, so the figures are the same bits
// (TestLinkTrafficCopiesEqualPlay compares with the plain fabric).
//
// Only what links.arrow's reconstruction uses is offered: Start, Listed,
// Pending, LinkBytes, LinkBusy, Repeat, FoldTraffic and Traffic; Changed and
// FoldChanged do nothing. A transfer that never ends (a zero-bandwidth link)
// makes Unbounded true and the totals are then not kept: the caller plays
// the round again on a plain fabric.

// tstate is one traffic-mode state: a link's analytic figures, whether it
// was crossed since the last fold (marked) with its figures then (before),
// and its totals.
type tstate struct {
	alink
	before LinkFigures
	out    LinkFigures
	marked bool
}

// memoBits sizes the direct-mapped table of remembered transitions.
const memoBits = 15

// chunkBits sizes the chunks states are kept in: a chunk is allocated
// when the last is full and never moves, so the table grows without
// copying (a 131,072-GPU 405B run makes ~400 k states).
const chunkBits = 12

// tmemo is one remembered transition: from state from, the crossing
// (bytes, now, end) leads to state to. A Repeat is remembered with
// repeat set: from is dst's state, src's state in end's place and the
// busy time before in now's.
type tmemo struct {
	from   int32
	to     int32
	bytes  uint64
	now    engine.Time
	end    engine.Time
	round  int32 // the round it was made in, plus one (0: empty)
	repeat bool
}

// traffic is the traffic mode's state (nil on other fabrics).
type traffic struct {
	cls     []int32    // each link's state
	chunks  [][]tstate // the states, state n at chunks[n>>chunkBits][n&(1<<chunkBits-1)]; 0 is the zero state
	n       int32      // how many states
	touched []int32    // states marked since the last fold
	memo    []tmemo
	round   int32 // folds so far, plus one: a memo entry of another round is stale
	// unbounded is set once a transfer never ends (or a link's
	// transmission outlasts a fold): the totals are then unreliable.
	unbounded bool
	before    []LinkFigures // Listed's scratch
}

// NewTraffic returns an Analytic fabric in traffic mode over links with
// the given bandwidths and latencies (New's inputs and rules): it tracks
// the links crossed since the last fold (Listed, Pending, Repeat work as
// after TrackChanges) and accumulates per-link totals (FoldTraffic,
// Traffic).
func NewTraffic(e *engine.Engine, bandwidth []units.BytesPerSecond, latency []engine.Time) *Fabric {
	fb := &Fabric{e: e, fid: Analytic, lat: latency, abw: bandwidth}
	fb.h = e.Register(fabricHandler{fb})
	fb.tr = &traffic{cls: hugepages.Advise(make([]int32, len(bandwidth))), n: 1, round: 1,
		chunks: [][]tstate{make([]tstate, 1<<chunkBits)}, memo: make([]tmemo, 1<<memoBits)}
	return fb
}

// Unbounded reports whether a traffic-mode fabric saw a transfer that
// never ends, so that its totals are not to be used.
func (f *Fabric) Unbounded() bool { return f.tr != nil && f.tr.unbounded }

// memoSlot is the table slot of a transition.
func memoSlot(from int32, bytes uint64, now, end engine.Time) int {
	x := uint64(from)*0x9e3779b97f4a7c15 ^ bytes ^ uint64(now)*0xbf58476d1ce4e5b9 ^ uint64(end)*0x94d049bb133111eb
	x ^= x >> 29
	x *= 0xbf58476d1ce4e5b9
	return int(x >> (64 - memoBits))
}

// newState appends a copy of state s, marked as crossed since the last
// fold, and returns its id. A copy of an unmarked state takes its figures
// now as before (Fabric.markChanged); a marked one's are kept. Every new
// state is listed for the fold (those no link holds any more too: folding
// them changes nothing a link reads).
func (t *traffic) newState(s int32) int32 {
	n := t.n
	if int(n>>chunkBits) == len(t.chunks) {
		t.chunks = append(t.chunks, make([]tstate, 1<<chunkBits))
	}
	t.n++
	a := t.at(n)
	*a = *t.at(s)
	if !a.marked {
		a.marked = true
		a.before = LinkFigures{Bytes: a.bytes, Busy: a.busy}
	}
	t.touched = append(t.touched, n)
	return n
}

// at is state n.
func (t *traffic) at(n int32) *tstate { return &t.chunks[n>>chunkBits][n&(1<<chunkBits-1)] }

// startTraffic is Start's analytic crossing of route in traffic mode.
func (f *Fabric) startTraffic(route []int32, bytes float64, now, end engine.Time) {
	t := f.tr
	bb := math.Float64bits(bytes)
	for _, l := range route {
		s := t.cls[l]
		slot := memoSlot(s, bb, now, end)
		if m := &t.memo[slot]; m.round == t.round && !m.repeat && m.from == s && m.bytes == bb && m.now == now && m.end == end {
			if !t.at(s).marked {
				f.changed = append(f.changed, l)
			}
			t.cls[l] = m.to
			continue
		}
		if !t.at(s).marked {
			f.changed = append(f.changed, l)
		}
		n := t.newState(s)
		t.at(n).alink.cross(bytes, now, end)
		t.memo[slot] = tmemo{from: s, to: n, bytes: bb, now: now, end: end, round: t.round}
		t.cls[l] = n
	}
}

// repeatTraffic is Repeat in traffic mode.
func (f *Fabric) repeatTraffic(dst, src int, srcBusyBefore engine.Time) {
	t := f.tr
	s, from := t.cls[src], t.cls[dst]
	slot := memoSlot(from, uint64(s), srcBusyBefore, -1)
	if m := &t.memo[slot]; m.round == t.round && m.repeat && m.from == from && m.end == engine.Time(s) && m.now == srcBusyBefore {
		if !t.at(from).marked {
			f.changed = append(f.changed, int32(dst))
		}
		t.cls[dst] = m.to
		return
	}
	if !t.at(from).marked {
		f.changed = append(f.changed, int32(dst))
	}
	n := t.newState(from)
	d, sa := &t.at(n).alink, t.at(s).alink
	d.bytes = sa.bytes
	d.busy += sa.busy - srcBusyBefore
	d.busyT = sa.busyT
	t.memo[slot] = tmemo{from: from, to: n, now: srcBusyBefore, end: engine.Time(s), round: t.round, repeat: true}
	t.cls[dst] = n
}

// FoldTraffic ends a round in traffic mode: every link crossed since the
// last fold adds its change since then (its figures now less those before)
// times scale to its totals, exactly as
//
//	if now.Bytes != before.Bytes || now.Busy != before.Busy {
//		bytes[l] += (now.Bytes - before.Bytes) * scale
//		busy[l] += int64(engine.Time(float64(now.Busy-before.Busy) * scale))
//	}
//
// folds FoldChanged's figures into two arrays, and the links are no longer
// listed. Each state is folded once for all the links that hold it. It
// does nothing on other fabrics.
func (f *Fabric) FoldTraffic(scale float64) {
	t := f.tr
	if t == nil {
		return
	}
	now := f.e.Now()
	for _, n := range t.touched {
		a := t.at(n)
		if a.busyT > now {
			t.unbounded = true // still transmitting: the plain fabric keeps it listed
		}
		cur, p := LinkFigures{Bytes: a.bytes, Busy: a.busy}, a.before
		if cur.Bytes != p.Bytes || cur.Busy != p.Busy {
			a.out.Bytes += (cur.Bytes - p.Bytes) * scale
			a.out.Busy += engine.Time(float64(cur.Busy-p.Busy) * scale)
		}
		a.marked = false
	}
	t.touched = t.touched[:0]
	f.changed = f.changed[:0]
	t.round++ // states changed in place: forget the round's transitions
}

// Traffic returns every link's totals (bytes, busy ns) in fresh slices
// indexed by link id; nil, nil on other fabrics or when Unbounded.
func (f *Fabric) Traffic() (bytes []float64, busyNs []int64) {
	t := f.tr
	if t == nil || t.unbounded {
		return nil, nil
	}
	bytes, busyNs = hugepages.Advise(make([]float64, len(t.cls))), hugepages.Advise(make([]int64, len(t.cls)))
	for i, s := range t.cls {
		o := &t.at(s).out
		bytes[i], busyNs[i] = o.Bytes, int64(o.Busy)
	}
	return bytes, busyNs
}

// TrafficAt is link's totals (Traffic's figures for one link); zero on
// other fabrics or when Unbounded.
func (f *Fabric) TrafficAt(link int) (bytes float64, busyNs int64) {
	t := f.tr
	if t == nil || t.unbounded {
		return 0, 0
	}
	o := &t.at(t.cls[link]).out
	return o.Bytes, int64(o.Busy)
}

// listedTraffic is Listed in traffic mode.
func (f *Fabric) listedTraffic() ([]int32, []LinkFigures) {
	t := f.tr
	t.before = t.before[:0]
	for _, l := range f.changed {
		t.before = append(t.before, t.at(t.cls[l]).before)
	}
	return f.changed, t.before
}
