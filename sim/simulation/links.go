package simulation

import (
	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/units"
)

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

// Links returns per-link traffic over the simulated steps. At flow fidelity
// it is what the fabric carried while the step played. At analytic fidelity
// links are not played, so the traffic is reconstructed: every distinct
// collective of every group of every stage is expanded into the transfers
// the flow model would use, played once on an uncontended fabric, and scaled
// by how many times the step issues it. Busy time there is the sum over
// collectives of the time each keeps the link transmitting (collectives of
// one kind are assumed not to overlap each other).
func (r *Result) Links() []LinkStat {
	c := r.Cluster
	out := make([]LinkStat, len(c.Links))
	bytes, busy := r.LinkTraffic()
	for i, l := range c.Links {
		out[i] = LinkStat{ID: i, From: c.Devices[l.From].Name, To: c.Devices[l.To].Name, Kind: l.Kind.String(),
			Bandwidth: float64(l.Bandwidth), Bytes: bytes[i], BusyNs: busy[i]}
	}
	return out
}

// LinkTraffic is Links' bytes and busy time (ns) alone, indexed by the
// cluster's link id, for callers that read the rest from r.Cluster.Links.
func (r *Result) LinkTraffic() (bytes []float64, busyNs []int64) {
	n := len(r.Cluster.Links)
	bytes, busyNs = make([]float64, n), make([]int64, n)
	if r.fabric != nil {
		for i := range n {
			bytes[i] = float64(r.fabric.LinkBytes(i))
			busyNs[i] = int64(r.fabric.LinkBusy(i))
		}
		return bytes, busyNs
	}
	b, t := r.analyticTraffic()
	for i := range n {
		bytes[i], busyNs[i] = b[i], int64(t[i])
	}
	return bytes, busyNs
}

type trafficKey struct {
	kind  parallel.GroupKind
	op    collectives.Op
	bytes float64
	peer  int // send: the peer stage
}

type nopDone struct{}

func (nopDone) CollectiveDone(engine.Time, int64) {}

func (r *Result) analyticTraffic() ([]float64, []engine.Time) {
	c, l := r.Cluster, r.Layout
	n := len(c.Links)
	bytes := make([]float64, n)
	busy := make([]engine.Time, n)
	eng := engine.New()
	fab := network.New(eng, c.Bandwidths(), c.Latencies(), network.Analytic)
	fab.TrackChanges()
	var changed []int32 // links whose figures moved during one collective
	runner := collectives.NewRunner(eng, fab, network.Flow, c)
	prevB := make([]float64, n)
	prevT := make([]engine.Time, n)
	for stage, prog := range r.progs {
		counts := map[trafficKey]int{}
		var keys []trafficKey // first-seen order, for determinism
		for i := range prog.Tasks {
			t := &prog.Tasks[i]
			if !t.Kind.IsComm() || t.Kind == parallel.KindRecv {
				continue
			}
			k := trafficKey{kind: t.Group, op: t.Op, bytes: t.Bytes, peer: -1}
			if t.Kind == parallel.KindSend {
				k.peer = int(t.Peer)
			}
			if counts[k] == 0 {
				keys = append(keys, k)
			}
			counts[k]++
		}
		var groups [parallel.NumGroupKinds][]*collectives.Group
		// sends[peer]: the pair (rank, its peer on stage peer) of every rank
		// of the stage, in rank order; nil where the pair is not a group.
		sends := map[int][]*collectives.Group{}
		for _, k := range keys {
			if k.kind != parallel.GroupPP && groups[k.kind] == nil {
				for _, ranks := range l.Groups(k.kind, stage) {
					if g, err := collectives.NewGroup(c, ranks); err == nil {
						groups[k.kind] = append(groups[k.kind], g)
					}
				}
			}
			if k.peer >= 0 {
				pairs, ok := sends[k.peer]
				if !ok {
					for _, rank := range l.StageRanks(stage) {
						co := l.CoordOf(rank)
						co.PP = k.peer
						g, err := collectives.NewGroup(c, []int{rank, l.RankOf(co)})
						if err != nil {
							g = nil
						}
						pairs = append(pairs, g)
					}
					sends[k.peer] = pairs
				}
				for _, g := range pairs {
					if g != nil {
						_ = runner.Start(g, collectives.Send, collectives.Auto, units.Bytes(k.bytes), nopDone{}, 0)
					}
				}
			} else {
				for _, g := range groups[k.kind] {
					_ = runner.Start(g, k.op, collectives.Auto, units.Bytes(k.bytes), nopDone{}, 0)
				}
			}
			eng.Run()
			scale := float64(counts[k])
			changed = fab.Changed(changed[:0])
			for _, li := range changed {
				i := int(li)
				b, t := float64(fab.LinkBytes(i)), fab.LinkBusy(i)
				if b != prevB[i] || t != prevT[i] {
					bytes[i] += (b - prevB[i]) * scale
					busy[i] += engine.Time(float64(t-prevT[i]) * scale)
					prevB[i], prevT[i] = b, t
				}
			}
		}
	}
	return bytes, busy
}
