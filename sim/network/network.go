// Package network is simtrain's fabric: transfers between endpoints over
// routes of directed links.
//
// API CONTRACT (stub written before implementation; relied on by
// sim/collectives and sim).
package network

import (
	"fmt"

	"github.com/simtrain/simtrain/sim/engine"
)

// Fidelity selects how transfers share links.
type Fidelity uint8

const (
	// Analytic gives every transfer its route's bottleneck bandwidth and
	// ignores other traffic (no contention).
	Analytic Fidelity = iota
	// Flow shares every link max-min fairly among the transfers crossing it,
	// re-solving only the links a flow arrival or departure touches.
	Flow
)

func (f Fidelity) String() string {
	if f == Flow {
		return "flow"
	}
	return "analytic"
}

// ParseFidelity parses "analytic" or "flow".
func ParseFidelity(s string) (Fidelity, error) {
	switch s {
	case "analytic":
		return Analytic, nil
	case "flow":
		return Flow, nil
	}
	return 0, fmt.Errorf("unknown fidelity %q (valid: analytic, flow)", s)
}

// Done is told when a transfer has fully arrived.
type Done interface {
	TransferDone(now engine.Time, tag int64)
}

// Fabric plays transfers on links. Create with New.
type Fabric struct {
	// implementation state
}

// New makes a fabric over links with the given per-direction bandwidths
// (bytes/s) and latencies, indexed by link id. The slices are not copied and
// must not change afterwards.
func New(e *engine.Engine, bandwidth []float64, latency []engine.Time, f Fidelity) *Fabric {
	panic("TODO")
}

// Start begins moving bytes along route (link ids, in order; the slice is
// copied). The transfer's last byte arrives at the end of transmission plus
// the sum of the route's latencies; then done.TransferDone(now, tag) is called.
// An empty route (same endpoint) completes after zero time.
func (f *Fabric) Start(route []int32, bytes float64, done Done, tag int64) {
	panic("TODO")
}
