package pipeline

import (
	"sync"
	"sync/atomic"

	"github.com/simtrain/simtrain/sim/hugepages"
)

// OneFOneB is 1F1B, PipeDream-Flush (Narayanan et al. 2021,
// arXiv:2104.04473 §2.2): stage s of p runs p−s−1 warm-up forwards, then
// alternates one forward and one backward, then drains the backwards. The
// bubble is (p−1)(T_F+T_B) of a step of m(T_F+T_B), the fraction
// (p−1)/(m+p−1); at most p−s micro-batches are in flight on stage s.
var OneFOneB Schedule = oneFOneB{}

func init() { register(20, OneFOneB) }

type oneFOneB struct{}

func (oneFOneB) Name() string { return "1f1b" }

func (s oneFOneB) Check(sh Shape) error { return onlyInterleavedVirtual(s, sh) }

func (oneFOneB) Placement(sh Shape) Placement { return Interleaving(sh.Stages, 1) }

func (oneFOneB) Order(sh Shape, stage int) []Step { return oneFOneBOrder(sh, stage, false) }

func (oneFOneB) InFlight(sh Shape, stage int) float64 { return oneFOneBInFlight(sh, stage) }

// oneFOneBOrder is 1F1B's order on one stage; with splitW (zero-bubble)
// every backward is an input-gradient pass whose weight gradient follows
// it as soon as the next forward allows (see ZeroBubble). The order
// depends on the pipeline and the stage only through the warm-up length
// min(p−stage−1, m), so every stage of every pipeline with the same m and
// warm-up gets the same slice, built once per process (sharedOrders):
// callers must not modify it. Sweep points are many layouts of few
// micro-batch counts, and each built its orders afresh (garb35: ≈ 2.3 MB
// of the 1,000-point 70B sweep's per-point garbage).
func oneFOneBOrder(sh Shape, stage int, splitW bool) []Step {
	m := sh.Microbatches
	warm := min(sh.Stages-stage-1, m)
	if m <= 0 || warm < 0 {
		return buildOneFOneBOrder(m, warm, splitW)
	}
	k := orderKey{m: m, warm: warm, splitW: splitW}
	if o, ok := sharedOrders.Load(k); ok {
		return o.([]Step)
	}
	n := orderLen(m, splitW)
	if sharedSteps.Add(int64(n)) > maxSharedSteps {
		sharedSteps.Add(-int64(n))
		return buildOneFOneBOrder(m, warm, splitW) // the table is full: a fresh order, as before it
	}
	o := fillOneFOneBOrder(sharedRoom(n), m, warm, splitW)
	got, loaded := sharedOrders.LoadOrStore(k, o)
	if loaded { // another goroutine stored it first (its room stays unused)
		sharedSteps.Add(-int64(n))
	}
	return got.([]Step)
}

// sharedRoom returns room for n steps of a shared order (length 0,
// capacity n), carved from blocks of at least roomBlock steps whose pages
// are mapped in one call when the block is made (hugepages.Populate)
// rather than faulted in one at a time as the orders are written: on this
// project's machine, a virtual machine, a first-touch fault costs several
// times the batched mapping, and the 1,000-point 70B sweep's 340 shared
// orders (0.9 MB) took ≈ 250 of its page faults before. The blocks live as
// long as the orders carved from them, which sharedOrders keeps for the
// process; room carved for an order another goroutine stored first is
// left unused (at most one order per goroutine racing for a key).
func sharedRoom(n int) []Step {
	room.mu.Lock()
	defer room.mu.Unlock()
	if len(room.free) < n {
		room.free = hugepages.Populate(make([]Step, max(n, roomBlock)))
	}
	out := room.free[:0:n]
	room.free = room.free[n:]
	return out
}

// roomBlock is the smallest block sharedRoom makes, in steps (128 KiB):
// a process that runs one scenario maps at most that much ahead of its
// orders' needs.
const roomBlock = 4096

var room struct {
	mu   sync.Mutex
	free []Step // the current block's steps not yet handed out
}

// orderLen is the length of a 1F1B order of m micro-batches: m forwards
// and m backwards, and with splitW m weight passes.
func orderLen(m int, splitW bool) int {
	if splitW {
		return 3 * m
	}
	return 2 * m
}

// orderKey is what a 1F1B order depends on (see oneFOneBOrder).
type orderKey struct {
	m, warm int
	splitW  bool
}

// maxSharedSteps bounds the steps sharedOrders holds (32 MB of Steps),
// so that a long-lived process meeting ever new micro-batch counts stops
// storing orders instead of growing without end.
const maxSharedSteps = 1 << 20

var (
	sharedOrders sync.Map     // orderKey → []Step, never modified
	sharedSteps  atomic.Int64 // the steps sharedOrders holds
)

// buildOneFOneBOrder builds the order of a stage with warm warm-up
// forwards of m micro-batches.
func buildOneFOneBOrder(m, warm int, splitW bool) []Step {
	// Exactly m forwards and m backwards, and with splitW m weight
	// passes: the room the order needs, no more (3m for every order left
	// a third of each plain 1F1B order unused, ≈ 1.1 MB over the
	// 1,000-point 70B sweep; garb35).
	return fillOneFOneBOrder(make([]Step, 0, orderLen(m, splitW)), m, warm, splitW)
}

// fillOneFOneBOrder appends the order buildOneFOneBOrder describes to out
// (room for orderLen(m, splitW) steps) and returns it.
func fillOneFOneBOrder(out []Step, m, warm int, splitW bool) []Step {
	bwd := PhaseB
	if splitW {
		bwd = PhaseI
	}
	for mb := 0; mb < warm; mb++ {
		out = append(out, Step{Phase: PhaseF, Microbatch: mb})
	}
	nextW := 0
	emitW := func(upTo int) {
		for ; nextW <= upTo && nextW < m; nextW++ {
			out = append(out, Step{Phase: PhaseW, Microbatch: nextW})
		}
	}
	for mb := warm; mb < m; mb++ {
		out = append(out, Step{Phase: PhaseF, Microbatch: mb})
		b := mb - warm
		out = append(out, Step{Phase: bwd, Microbatch: b})
		if splitW {
			emitW(b)
		}
	}
	for b := m - warm; b < m; b++ {
		out = append(out, Step{Phase: bwd, Microbatch: b})
		if splitW {
			// In the cool-down each B is followed by one deferred W.
			emitW(nextW)
		}
	}
	if splitW {
		emitW(m - 1)
	}
	return out
}
