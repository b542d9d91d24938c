package pipeline

// ZeroBubble is 1F1B with each backward split into B (input gradient, on
// the critical path) and W (weight gradient), after ZB-H1 (Qi et al. 2024,
// arXiv:2401.10241). Each W runs right after its B, once the gradient has
// been sent upstream, so every hop of the backward critical path costs T_B
// instead of T_B+T_W: the bubble is (p−1)(T_F+T_B) instead of 1F1B's
// (p−1)(T_F+T_B+T_W), with 1F1B's activation memory. (The paper's
// hand-tuned ZB-H1 also moves early stages' W passes into cool-down gaps to
// reach (p−1)(T_F+T_B−T_W); a static order cannot know those gaps, so that
// refinement is not modelled.)
var ZeroBubble Schedule = zeroBubble{}

func init() { register(40, ZeroBubble) }

type zeroBubble struct{}

func (zeroBubble) Name() string { return "zero-bubble" }

func (s zeroBubble) Check(sh Shape) error { return onlyInterleavedVirtual(s, sh) }

func (zeroBubble) Placement(sh Shape) Placement { return Interleaving(sh.Stages, 1) }

func (zeroBubble) Order(sh Shape, stage int) []Step { return oneFOneBOrder(sh, stage, true) }

// InFlight is 1F1B's: ZB-H1 keeps 1F1B's activation memory.
func (zeroBubble) InFlight(sh Shape, stage int) float64 { return oneFOneBInFlight(sh, stage) }
