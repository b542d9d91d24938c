package pipeline

import (
	"fmt"
	"slices"
	"strings"
)

// Shape is the pipeline a schedule runs: its stages (pipeline ranks), the
// micro-batches of one step, and the virtual stages per rank that the
// scenario asked for (parallel.virtual_stages; only interleaved 1F1B takes
// more than one). Microbatches ≤ 0 means "not known yet" (Check then checks
// only the layout) or, for InFlight, "at least the stages".
type Shape struct {
	Stages, Microbatches, Virtual int
}

// Schedule is one pipeline schedule. It answers everything the rest of the
// simulator asks about a schedule: where the model chunks sit (Placement),
// what each stage issues and in which order (Order: the task graph), and
// how many micro-batches' activations a stage holds at its peak (InFlight:
// the memory model). Implementations are stateless values; a new schedule
// is one file that defines one and registers it (register).
type Schedule interface {
	// Name is the parallel.schedule value.
	Name() string
	// Check reports whether the schedule can run sh; errors name the
	// scenario field at fault and say what would be valid.
	Check(sh Shape) error
	// Placement puts the model chunks on the stages.
	Placement(sh Shape) Placement
	// Order is the sequence of steps stage (0-based) issues in one
	// training step. When each step runs is decided by the simulation from
	// the data dependencies between stages. The slice may be shared
	// between calls (1F1B's and zero-bubble's are): callers must not
	// modify it.
	Order(sh Shape, stage int) []Step
	// InFlight is the closed form of the activations stage holds at its
	// peak, counted in micro-batches through all of the stage's chunks
	// (a stage with v equal chunks holding one chunk-micro-batch holds 1/v).
	InFlight(sh Shape, stage int) float64
}

// Phase is what a step does with one micro-batch on one chunk.
type Phase uint8

const (
	PhaseF Phase = iota // forward
	PhaseB              // backward: input and weight gradients together
	PhaseI              // backward for the input only; its weight gradient is a later PhaseW
	PhaseW              // weight gradient of an earlier PhaseI, split out (zero-bubble schedules)
)

func (p Phase) String() string { return [...]string{"F", "B", "I", "W"}[p] }

// Step is one entry of a stage's order.
type Step struct {
	Phase      Phase
	Microbatch int
	Chunk      int // the chunk's index on this stage
	// Overlap marks a forward that runs together with the next step, a
	// backward of another micro-batch (DualPipe's overlapped forward and
	// backward chunks): the two are issued block by block, alternating, so
	// that each one's communication runs under the other's computation.
	Overlap bool
}

// Peak is the largest number of chunk-micro-batches whose activations the
// steps hold at once: forwards done whose backward (B or I) has not run.
func Peak(steps []Step) int {
	cur, peak := 0, 0
	for _, st := range steps {
		switch st.Phase {
		case PhaseF:
			cur++
			peak = max(peak, cur)
		case PhaseB, PhaseI:
			cur--
		}
	}
	return peak
}

type entry struct {
	pos int
	s   Schedule
}

var registry []entry

// register adds s to the schedules Lookup knows; pos orders the list of
// valid names (the schedules' files register themselves in init).
func register(pos int, s Schedule) {
	registry = append(registry, entry{pos, s})
	slices.SortStableFunc(registry, func(a, b entry) int { return a.pos - b.pos })
}

// Names lists the valid parallel.schedule values (a fresh slice).
func Names() []string {
	out := make([]string, len(registry))
	for i, e := range registry {
		out[i] = e.s.Name()
	}
	return out
}

// Lookup returns the schedule named name; the error names the field and
// lists the valid values.
func Lookup(name string) (Schedule, error) {
	for _, e := range registry {
		if e.s.Name() == name {
			return e.s, nil
		}
	}
	return nil, fmt.Errorf("parallel.schedule: unknown schedule %q (valid: %s)", name, strings.Join(Names(), ", "))
}

// Of returns s, or 1F1B when s is nil (the default schedule).
func Of(s Schedule) Schedule {
	if s == nil {
		return OneFOneB
	}
	return s
}

// onlyInterleavedVirtual is the rule every schedule but interleaved 1F1B
// shares: it runs one chunk per stage of its own choosing, so
// parallel.virtual_stages must stay 1.
func onlyInterleavedVirtual(s Schedule, sh Shape) error {
	if sh.Virtual > 1 {
		return fmt.Errorf("parallel.virtual_stages: %d needs parallel.schedule: interleaved (have %s)", sh.Virtual, s.Name())
	}
	return nil
}

// oneFOneBInFlight is 1F1B's peak on stage s of p: p − s micro-batches,
// capped at m (Narayanan et al. 2021; Korthikanti et al. 2022 §4.2.3), 1
// without pipelining; m ≤ 0 reads as m = p.
func oneFOneBInFlight(sh Shape, s int) float64 {
	p, m := sh.Stages, sh.Microbatches
	if p <= 1 {
		return 1
	}
	if m <= 0 {
		m = p
	}
	return float64(min(max(p-s, 1), m))
}
