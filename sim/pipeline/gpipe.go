package pipeline

// GPipe runs every forward, then every backward (Huang et al. 2019,
// arXiv:1811.06965): the bubble is (p−1)(T_F+T_B) like 1F1B's, but a stage
// holds all m micro-batches' activations.
var GPipe Schedule = gpipe{}

func init() { register(10, GPipe) }

type gpipe struct{}

func (gpipe) Name() string { return "gpipe" }

func (s gpipe) Check(sh Shape) error { return onlyInterleavedVirtual(s, sh) }

func (gpipe) Placement(sh Shape) Placement { return Interleaving(sh.Stages, max(sh.Virtual, 1)) }

func (gpipe) Order(sh Shape, _ int) []Step {
	m, v := sh.Microbatches, max(sh.Virtual, 1)
	out := make([]Step, 0, 2*m*v)
	for c := 0; c < v; c++ {
		for mb := 0; mb < m; mb++ {
			out = append(out, Step{Phase: PhaseF, Microbatch: mb, Chunk: c})
		}
	}
	for c := v - 1; c >= 0; c-- {
		for mb := 0; mb < m; mb++ {
			out = append(out, Step{Phase: PhaseB, Microbatch: mb, Chunk: c})
		}
	}
	return out
}

// InFlight is m: every forward runs before the first backward.
func (gpipe) InFlight(sh Shape, _ int) float64 {
	if sh.Stages <= 1 {
		return 1
	}
	if sh.Microbatches <= 0 {
		return float64(sh.Stages)
	}
	return float64(sh.Microbatches)
}
