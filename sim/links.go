package sim

import "github.com/simtrain/simtrain/sim/engine"

// LinkStat is one directed link's traffic over the simulated steps.
type LinkStat struct {
	ID        int
	From, To  string
	Kind      string
	Bandwidth float64 // bytes/s, line rate
	Bytes     float64
	BusyNs    int64
}

// Symmetric reports whether the run played one representative rank per
// pipeline stage (analytic fidelity) rather than every rank.
func (r *Result) Symmetric() bool { return r.exec.Symmetric() }

// Links returns per-link traffic. At flow fidelity it is what the fabric
// carried; at analytic fidelity nothing contends, so links are not played
// and the list is empty.
func (r *Result) Links() []LinkStat {
	if r.fabric == nil {
		return nil
	}
	c := r.Cluster
	out := make([]LinkStat, 0, len(c.Links))
	for i, l := range c.Links {
		out = append(out, LinkStat{ID: i, From: c.Devices[l.From].Name, To: c.Devices[l.To].Name, Kind: l.Kind.String(),
			Bandwidth: l.Bandwidth, Bytes: r.fabric.LinkBytes(i), BusyNs: int64(r.fabric.LinkBusy(i) / engine.Nanosecond)})
	}
	return out
}
