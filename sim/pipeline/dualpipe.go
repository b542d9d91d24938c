package pipeline

import "fmt"

// DualPipe is DeepSeek-V3's bidirectional pipeline schedule (DeepSeek-AI,
// DeepSeek-V3 technical report, arXiv:2412.19437 §3.2.1, Fig. 5, Table 2;
// the step structure below is that of deepseek-ai/DualPipe's reference
// implementation). Two copies of the model run in opposite directions on
// the Bidirectional placement: half of the micro-batches enter at stage 0,
// the other half at stage p−1, and each stage holds one chunk of each copy.
// In the steady state each stage runs the forward of one micro-batch
// together with the backward of another (Step.Overlap), so the all-to-all
// and pipeline communication of each runs under the computation of the
// other; the warm-up and cool-down split backwards into input and weight
// gradients (zero-bubble) to fill the gaps.
//
// With F, B and W the times of a chunk's forward, full backward and
// weight-gradient pass, and F&B that of an overlapped forward and backward
// pair, Table 2 gives, against 1F1B's (p−1)(F+B) bubble and p micro-batches
// of activations:
//
//	bubble (p/2 − 1)(F&B + B − 3W), parameters 2×, activations p + 1
//
// activations counted in chunk-micro-batches (a stage's chunk is 1/p of
// the layers, as for 1F1B), so InFlight is (p+1)/2 of the stage's two
// chunks. p must be even and m even and at least 2p (the reference
// implementation asserts both).
//
// The gradients of the two copies of a model chunk (stage s and stage
// p−1−s) must be summed before the optimizer step; that exchange is not
// modelled (each stage reduces both chunks' gradients over its own
// data-parallel group).
var DualPipe Schedule = dualPipe{}

func init() { register(50, DualPipe) }

type dualPipe struct{}

func (dualPipe) Name() string { return "dualpipe" }

func (s dualPipe) Check(sh Shape) error {
	if err := onlyInterleavedVirtual(s, sh); err != nil {
		return err
	}
	if sh.Stages < 2 || sh.Stages%2 != 0 {
		return fmt.Errorf("parallel.pp: dualpipe needs an even pp >= 2 (have %d; valid with odd pp: dualpipe-v, 1f1b, zero-bubble)", sh.Stages)
	}
	if sh.Microbatches > 0 && (sh.Microbatches%2 != 0 || sh.Microbatches < 2*sh.Stages) {
		return fmt.Errorf("training.global_batch: dualpipe needs an even number of micro-batches per pipeline, at least 2*pp = %d (have %d = global_batch/(dp*micro_batch))", 2*sh.Stages, sh.Microbatches)
	}
	return nil
}

func (dualPipe) Placement(sh Shape) Placement { return Bidirectional(sh.Stages) }

// Order is DualPipe's order on stage s: the two directions form two
// half-pipelines of p/2 ranks each, stage s at rank min(s, p−1−s) of its
// half, its own direction's chunk first.
func (dualPipe) Order(sh Shape, stage int) []Step {
	p, half := sh.Stages, sh.Microbatches/2
	second := 0
	if stage >= p/2 {
		second = 1
	}
	h := min(stage, p-1-stage)
	// Phase x of the reference code is the copy x XOR second: the first
	// half of the stages starts with copy 0, the second with copy 1.
	// Copy d runs micro-batches d·m/2 … (d+1)·m/2 − 1 on chunk slot d.
	return dualOrder(p/2, h, half, func(phase, i int) (mb, chunk int) {
		d := phase ^ second
		return d*half + i, d
	})
}

func (dualPipe) InFlight(sh Shape, _ int) float64 {
	if sh.Stages <= 1 {
		return 1
	}
	return float64(sh.Stages+1) / 2
}

// dualOrder is the step sequence of DualPipe's reference implementation
// for rank h of a chain of n ranks with M micro-batches per phase; slot
// maps (phase, the phase's i-th micro-batch) to a micro-batch and chunk.
// Phase 0 is the rank's first chunk to run, phase 1 the other. The eight
// parts (warm-up forwards, paired forwards, zero-bubble backwards with
// forwards, the overlapped steady state, and their mirror images) follow
// dualpipe.py's step(): the counts below are its step_1 … step_8.
func dualOrder(n, h, M int, slot func(phase, i int) (mb, chunk int)) []Step {
	out := make([]Step, 0, 6*M)
	var fNext, bNext [2]int
	var wQueue []Step
	f := func(phase int, overlap bool) {
		mb, c := slot(phase, fNext[phase])
		fNext[phase]++
		out = append(out, Step{Phase: PhaseF, Microbatch: mb, Chunk: c, Overlap: overlap})
	}
	b := func(phase int, zb bool) {
		mb, c := slot(phase, bNext[phase])
		bNext[phase]++
		st := Step{Phase: PhaseB, Microbatch: mb, Chunk: c}
		if zb {
			st.Phase = PhaseI
			wQueue = append(wQueue, Step{Phase: PhaseW, Microbatch: mb, Chunk: c})
		}
		out = append(out, st)
	}
	w := func() { // weight gradients run first in, first out
		out = append(out, wQueue[0])
		wQueue = wQueue[1:]
	}
	fb := func(fPhase, bPhase int) {
		f(fPhase, true)
		b(bPhase, false)
	}
	middle := h == n-1 // the rank where the two directions meet
	for range 2 * (n - h - 1) {
		f(0, false)
	}
	for range h + 1 {
		f(0, false)
		f(1, false)
	}
	for range n - h - 1 {
		b(1, true)
		w()
		f(1, false)
	}
	for i := range M - 2*n + h + 1 {
		if i == 0 && middle {
			// not overlapped, "to further reduce bubble size"
			f(0, false)
			b(1, false)
		} else {
			fb(0, 1)
		}
		fb(1, 0)
	}
	for range n - h - 1 {
		b(1, false)
		fb(1, 0)
	}
	// the second half of these backwards splits off its weight gradients
	zb := false
	for i := range h + 1 {
		if i == (h+1)/2 && h%2 == 1 {
			zb = true
		}
		b(1, zb)
		if i == (h+1)/2 && h%2 == 0 {
			zb = true
		}
		b(0, zb)
	}
	for range n - h - 1 {
		w()
		b(0, true)
	}
	for range h + 1 {
		w()
	}
	return out
}
