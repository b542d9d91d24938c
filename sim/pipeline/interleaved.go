package pipeline

import (
	"errors"
	"fmt"
)

// Interleaved is Megatron-LM's interleaved 1F1B for v chunks per stage
// (Narayanan et al. SC21, arXiv:2104.04473 §2.2), on the Interleaving
// placement: forwards visit the chunks in groups of p micro-batches, with
// 2(p−s−1) + (v−1)p warm-up forwards on stage s, then 1F1B. The bubble
// shrinks by v: (p−1)/(v·m) of the work. Megatron requires m to be a
// multiple of p.
var Interleaved Schedule = interleaved{}

func init() { register(30, Interleaved) }

type interleaved struct{}

func (interleaved) Name() string { return "interleaved" }

func (interleaved) Check(sh Shape) error {
	if sh.Stages < 2 {
		return errors.New("parallel.schedule: interleaved needs pp >= 2")
	}
	if sh.Microbatches > 0 && sh.Microbatches%sh.Stages != 0 {
		return fmt.Errorf("training.global_batch: the interleaved schedule needs micro-batches per pipeline (%d = global_batch/(dp*micro_batch)) to be a multiple of pp %d", sh.Microbatches, sh.Stages)
	}
	return nil
}

func (interleaved) Placement(sh Shape) Placement { return Interleaving(sh.Stages, max(sh.Virtual, 1)) }

func (interleaved) Order(sh Shape, stage int) []Step {
	p, m, v := sh.Stages, sh.Microbatches, max(sh.Virtual, 1)
	if p <= 1 {
		return oneFOneBOrder(Shape{Stages: p, Microbatches: m, Virtual: 1}, stage, false)
	}
	total := m * v
	out := make([]Step, 0, 2*total)
	chunkOf := func(k int, forward bool) int {
		c := (k / p) % v
		if !forward {
			c = v - 1 - c
		}
		return c
	}
	mbOf := func(k int) int { return (k/(p*v))*p + k%p }
	warm := min((p-stage-1)*2+(v-1)*p, total)
	if m%p != 0 {
		// Megatron requires m % p == 0 here (Check); with a remainder,
		// fall back to the safe all-warm-up form.
		warm = total
	}
	f, b := 0, 0
	for ; f < warm; f++ {
		out = append(out, Step{Phase: PhaseF, Microbatch: mbOf(f), Chunk: chunkOf(f, true)})
	}
	for f < total {
		out = append(out, Step{Phase: PhaseF, Microbatch: mbOf(f), Chunk: chunkOf(f, true)})
		f++
		out = append(out, Step{Phase: PhaseB, Microbatch: mbOf(b), Chunk: chunkOf(b, false)})
		b++
	}
	for b < total {
		out = append(out, Step{Phase: PhaseB, Microbatch: mbOf(b), Chunk: chunkOf(b, false)})
		b++
	}
	return out
}

// InFlight is 1F1B's p − s times 1 + (p−1)/(p·v): the extra warm-up
// forwards of the other chunks (Korthikanti et al. 2022, arXiv:2205.05198
// §4.2.3).
func (interleaved) InFlight(sh Shape, stage int) float64 {
	n := oneFOneBInFlight(sh, stage)
	if sh.Stages > 1 && sh.Virtual > 1 {
		n *= 1 + float64(sh.Stages-1)/float64(sh.Stages*sh.Virtual)
	}
	return n
}
