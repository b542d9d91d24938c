package parallel

import "fmt"

// Schedule names a pipeline schedule.
type Schedule uint8

const (
	GPipe Schedule = iota
	OneFOneB
	Interleaved
	ZeroBubble
)

var scheduleNames = []string{"gpipe", "1f1b", "interleaved", "zero-bubble"}

func (s Schedule) String() string { return scheduleNames[s] }

// ParseSchedule parses a parallel.schedule value.
func ParseSchedule(s string) (Schedule, error) {
	for i, n := range scheduleNames {
		if n == s {
			return Schedule(i), nil
		}
	}
	return 0, fmt.Errorf("parallel.schedule: unknown schedule %q (valid: gpipe, 1f1b, interleaved, zero-bubble)", s)
}

// Phase is what a pipeline step does with one micro-batch on one chunk.
type Phase uint8

const (
	PhaseF Phase = iota // forward
	PhaseB              // backward (input and weight gradients together, or input only under zero-bubble)
	PhaseW              // weight-gradient pass split out by zero-bubble schedules
)

func (p Phase) String() string { return [...]string{"F", "B", "W"}[p] }

// Step is one entry of a stage's pipeline order.
type Step struct {
	Phase      Phase
	Microbatch int
	Chunk      int
}

// Order returns the sequence of pipeline steps stage s (0-based, of p) runs
// for m micro-batches and v chunks per rank. The order is what each rank
// issues; when each step actually runs is decided by the simulation from the
// data dependencies between stages.
//
//   - GPipe: every forward, then every backward (Huang et al. 2019).
//   - 1F1B: p−s−1 warm-up forwards, then alternate one forward and one
//     backward, then drain the backwards (PipeDream-Flush, Narayanan et al.
//     2021). At most p−s micro-batches are in flight on stage s.
//   - Interleaved 1F1B: Megatron-LM's schedule for v chunks per rank
//     (Narayanan et al. SC21 §2.2): forwards visit chunks in groups of p
//     micro-batches, 2(p−s−1) + (v−1)p warm-up forwards, then 1F1B.
//   - Zero-bubble (after ZB-H1, Qi et al., arXiv:2401.10241): 1F1B with each
//     backward split into B (input gradient, on the critical path) and W
//     (weight gradient). Each W runs right after its B, once the gradient has
//     been sent upstream, so every hop of the backward critical path costs
//     T_B instead of T_B+T_W: the bubble is (p−1)(T_F+T_B) instead of 1F1B's
//     (p−1)(T_F+T_B+T_W), with 1F1B's activation memory. (The paper's
//     hand-tuned ZB-H1 also moves early stages' W passes into cool-down
//     gaps to reach (p−1)(T_F+T_B−T_W); a static order cannot know those
//     gaps, so that refinement is not modelled.)
func Order(sched Schedule, p, s, m, v int) []Step {
	if p <= 1 && sched == Interleaved {
		sched = OneFOneB
	}
	var out []Step
	switch sched {
	case GPipe:
		for c := 0; c < v; c++ {
			for mb := 0; mb < m; mb++ {
				out = append(out, Step{PhaseF, mb, c})
			}
		}
		for c := v - 1; c >= 0; c-- {
			for mb := 0; mb < m; mb++ {
				out = append(out, Step{PhaseB, mb, c})
			}
		}
	case OneFOneB, ZeroBubble:
		warm := min(p-s-1, m)
		for mb := 0; mb < warm; mb++ {
			out = append(out, Step{PhaseF, mb, 0})
		}
		lag := 0
		nextW := 0
		emitW := func(upTo int) {
			for ; nextW <= upTo && nextW < m; nextW++ {
				out = append(out, Step{PhaseW, nextW, 0})
			}
		}
		for mb := warm; mb < m; mb++ {
			out = append(out, Step{PhaseF, mb, 0})
			b := mb - warm
			out = append(out, Step{PhaseB, b, 0})
			if sched == ZeroBubble {
				emitW(b - lag)
			}
		}
		for b := m - warm; b < m; b++ {
			out = append(out, Step{PhaseB, b, 0})
			if sched == ZeroBubble {
				// In the cool-down each B is followed by one deferred W.
				emitW(nextW)
			}
		}
		if sched == ZeroBubble {
			emitW(m - 1)
		}
	case Interleaved:
		total := m * v
		chunkOf := func(k int, forward bool) int {
			c := (k / p) % v
			if !forward {
				c = v - 1 - c
			}
			return c
		}
		mbOf := func(k int) int { return (k/(p*v))*p + k%p }
		warm := min((p-s-1)*2+(v-1)*p, total)
		if m%p != 0 {
			// Megatron requires m % p == 0 here; with a remainder, fall back
			// to the safe all-warm-up form (validated earlier for the usual case).
			warm = total
		}
		f, b := 0, 0
		for ; f < warm; f++ {
			out = append(out, Step{PhaseF, mbOf(f), chunkOf(f, true)})
		}
		for f < total {
			out = append(out, Step{PhaseF, mbOf(f), chunkOf(f, true)})
			f++
			out = append(out, Step{PhaseB, mbOf(b), chunkOf(b, false)})
			b++
		}
		for b < total {
			out = append(out, Step{PhaseB, mbOf(b), chunkOf(b, false)})
			b++
		}
	}
	return out
}

// InFlight is the largest number of micro-batches whose activations stage s
// holds at once under the order (forwards done whose backward has not run),
// counted in chunk-micro-batches.
func InFlight(steps []Step) int {
	cur, peak := 0, 0
	for _, st := range steps {
		switch st.Phase {
		case PhaseF:
			cur++
			peak = max(peak, cur)
		case PhaseB:
			cur--
		}
	}
	return peak
}
