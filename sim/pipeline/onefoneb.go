package pipeline

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
// it as soon as the next forward allows (see ZeroBubble).
func oneFOneBOrder(sh Shape, stage int, splitW bool) []Step {
	p, m := sh.Stages, sh.Microbatches
	bwd := PhaseB
	if splitW {
		bwd = PhaseI
	}
	// Exactly m forwards and m backwards, and with splitW m weight
	// passes: the room the order needs, no more (3m for every order left
	// a third of each plain 1F1B order unused, ≈ 1.1 MB over the
	// 1,000-point 70B sweep; garb35).
	n := 2 * m
	if splitW {
		n = 3 * m
	}
	out := make([]Step, 0, n)
	warm := min(p-stage-1, m)
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
