package simulation

import (
	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/hugepages"
	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/topology"
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
	links, devs := r.Cluster.Links(), r.Cluster.Devices()
	out := make([]LinkStat, len(links))
	bytes, busy := r.LinkTraffic()
	for i, l := range links {
		out[i] = LinkStat{ID: i, From: devs[l.From].Name, To: devs[l.To].Name, Kind: l.Kind.String(),
			Bandwidth: float64(l.Bandwidth), Bytes: bytes[i], BusyNs: busy[i]}
	}
	return out
}

// LinkTraffic is Links' bytes and busy time (ns) alone, indexed by the
// cluster's link id, for callers that read the rest from r.Cluster.Links().
func (r *Result) LinkTraffic() (bytes []float64, busyNs []int64) {
	if r.fabric != nil {
		n := r.Cluster.NumLinks()
		bytes, busyNs = make([]float64, n), make([]int64, n)
		for i := range n {
			bytes[i] = float64(r.fabric.LinkBytes(i))
			busyNs[i] = int64(r.fabric.LinkBusy(i))
		}
		return bytes, busyNs
	}
	return r.analyticTraffic()
}

// LinkTotals is LinkTraffic as a function of the link id, for callers that
// read each link once (links.arrow's rows): at analytic fidelity it reads
// the reconstruction's states rather than copying them into two link-sized
// arrays first (23 MB at 131,072 GPUs; issue 18). The same figures.
func (r *Result) LinkTotals() func(link int) (bytes float64, busyNs int64) {
	if r.fabric != nil {
		f := r.fabric
		return func(i int) (float64, int64) { return float64(f.LinkBytes(i)), int64(f.LinkBusy(i)) }
	}
	if t, _, _, ok := r.trafficOn(true, true); ok {
		return t.at
	}
	b, busy := r.analyticTraffic()
	return func(i int) (float64, int64) { return b[i], busy[i] }
}

// linkTotals are the reconstruction's totals: on the traffic-mode fabric
// that computed them, or in two arrays.
type linkTotals struct {
	fab   *network.Fabric
	bytes []float64
	busy  []int64
}

func (t linkTotals) at(i int) (float64, int64) {
	if t.fab != nil {
		return t.fab.TrafficAt(i)
	}
	return t.bytes[i], t.busy[i]
}

// arrays returns the totals as two arrays indexed by link id.
func (t linkTotals) arrays() ([]float64, []int64) {
	if t.fab != nil {
		return t.fab.Traffic()
	}
	return t.bytes, t.busy
}

type trafficKey struct {
	kind  parallel.GroupKind
	op    collectives.Op
	bytes float64
	peer  int // send: the peer stage
}

type nopDone struct{}

func (nopDone) CollectiveDone(engine.Time, int64) {}

// stageGroups are one pipeline stage's groups of one kind for
// analyticTraffic, each built when first played.
type stageGroups struct {
	ranks  [][]int
	groups []*collectives.Group
	built  []bool
	// shift[i] is how many nodes group i lies after group 0 when every
	// group sits inside one node and is group 0 moved by whole nodes (rank
	// j of group i is rank j of group 0 plus shift[i] nodes) on a cluster
	// of one GPU type; nil otherwise.
	shift []int
}

func newStageGroups(c *topology.Cluster, ranks [][]int) *stageGroups {
	return &stageGroups{ranks: ranks, groups: make([]*collectives.Group, len(ranks)),
		built: make([]bool, len(ranks)), shift: nodeShifts(c, ranks)}
}

// group is group i, nil where NewGroup refuses its ranks (such a group
// plays nothing, as before).
func (sg *stageGroups) group(c *topology.Cluster, i int) *collectives.Group {
	if !sg.built[i] {
		sg.built[i] = true
		if g, err := collectives.NewGroup(c, sg.ranks[i]); err == nil {
			sg.groups[i] = g
		}
	}
	return sg.groups[i]
}

// nodeShifts is stageGroups.shift.
func nodeShifts(c *topology.Cluster, groups [][]int) []int {
	if len(groups) < 2 || len(c.Groups) > 1 {
		return nil
	}
	gpn := c.GPUsPerNode()
	first := groups[0]
	if len(first) == 0 {
		return nil
	}
	for _, r := range first {
		if c.NodeOf(r) != c.NodeOf(first[0]) {
			return nil
		}
	}
	shift := make([]int, len(groups))
	for i, ranks := range groups[1:] {
		if len(ranks) != len(first) {
			return nil
		}
		d := ranks[0] - first[0]
		if d%gpn != 0 {
			return nil
		}
		for j := range ranks {
			if ranks[j]-first[j] != d {
				return nil
			}
		}
		shift[i+1] = d / gpn
	}
	return shift
}

// analyticTraffic reconstructs links.arrow's traffic at analytic fidelity
// (see Links). Transfers do not interact there, so every group's figures
// are its own play's, except on links that several groups cross in one
// collective, where a link's bytes are a float sum in the order the
// transfers start and its busy time a union of intervals. A group inside
// one node crosses only that node's links (topology routes), so when all
// the groups of a kind are one node's group moved by whole nodes, the first
// is played and each other group's links are given the first's figures
// (Fabric.Repeat through Cluster.ShiftNodes) wherever they held the same
// bytes before, which repeats the same float operations exactly; the others
// are played. Outputs are those of playing every group.
func (r *Result) analyticTraffic() ([]float64, []int64) {
	b, t, _, _ := r.traffic(true)
	return b, t
}

// stageGroupRanks is l.Groups(k, stage) as the run's pricer listed it, or
// listed now where the pricer did not (the same lists either way).
func (r *Result) stageGroupRanks(k parallel.GroupKind, stage int) [][]int {
	if g, ok := r.ranks[[2]int{int(r.Layout.ListedAs(k)), stage}]; ok { // keyed as groupRanks does
		return g
	}
	return r.Layout.Groups(k, stage)
}

// stageRanksOf is l.StageRanks(stage) as the run's pricer listed it, or
// listed now where it did not.
func (r *Result) stageRanksOf(stage int) []int {
	if stage < len(r.stRanks) && r.stRanks[stage] != nil {
		return r.stRanks[stage]
	}
	return r.Layout.StageRanks(stage)
}

// traffic is analyticTraffic; with shortcuts it copies node-shifted
// groups' figures and starts pipeline sends without a group per pair
// (tests compare with playing every group). It also returns how many
// groups' figures it copied and how many sends it started directly.
//
// With shortcuts the fabric runs in traffic mode (network.NewTraffic:
// links with the same history share one state, the same bits); where a
// transfer never ends there (a zero-bandwidth link) the traffic is played
// again on a plain fabric.
func (r *Result) traffic(shortcuts bool) ([]float64, []int64, int, int) {
	if shortcuts {
		if t, copied, direct, ok := r.trafficOn(true, true); ok {
			b, busy := t.arrays()
			return b, busy, copied, direct
		}
	}
	t, copied, direct, _ := r.trafficOn(shortcuts, false)
	return t.bytes, t.busy, copied, direct
}

// trafficOn is traffic on a traffic-mode fabric (classes) or a plain one;
// ok is false where the traffic-mode fabric could not keep the totals.
func (r *Result) trafficOn(shortcuts, classes bool) (_ linkTotals, copied, direct int, ok bool) {
	c, l := r.Cluster, r.Layout
	n := c.NumLinks()
	var bytes []float64
	var busy []int64 // ns: LinkTraffic's type, so it is returned as is
	eng := engine.New()
	var fab *network.Fabric
	if classes {
		fab = network.NewTraffic(eng, c.Bandwidths(), c.Latencies())
	} else {
		bytes, busy = hugepages.Advise(make([]float64, n)), hugepages.Advise(make([]int64, n))
		fab = network.New(eng, c.Bandwidths(), c.Latencies(), network.Analytic)
		fab.TrackChanges()
	}
	// After each collective the fabric hands over every link whose figures
	// moved, each once, beside its figures at the last collective's end (it
	// keeps them for the links it lists, so no link-sized copy is needed):
	// the shortcut lists the first group's links without clearing them
	// (Fabric.Listed), so a link it or a later group crossed is handed over
	// once, with its figures before the collective.
	var scale float64
	fold := func(li int32, p, cur network.LinkFigures) {
		if cur.Bytes != p.Bytes || cur.Busy != p.Busy {
			bytes[li] += (cur.Bytes - p.Bytes) * scale
			busy[li] += int64(engine.Time(float64(cur.Busy-p.Busy) * scale))
		}
	}
	runner := collectives.NewRunner(eng, fab, network.Flow, c)
	pairSends := collectives.NewSends(c, fab)
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
				k.peer = int(t.Peer())
			}
			if counts[k] == 0 {
				keys = append(keys, k)
			}
			counts[k]++
		}
		var groups [parallel.NumGroupKinds]*stageGroups
		// sends[peer]: the pair (rank, its peer on stage peer) of every rank
		// of the stage, in rank order; nil where the pair is not a group.
		sends := map[int][]*collectives.Group{}
		for _, k := range keys {
			if k.peer >= 0 && shortcuts {
				// Each pair's transfer started directly (collectives.Sends),
				// in the same order as the plays below; a pair it refuses
				// plays as a group, as there.
				for _, rank := range r.stageRanksOf(stage) {
					co := l.CoordOf(rank)
					co.PP = k.peer
					peer := l.RankOf(co)
					if pairSends.Start(rank, peer, units.Bytes(k.bytes)) == nil {
						direct++
					} else if g, err := collectives.NewGroup(c, []int{rank, peer}); err == nil {
						_ = runner.Start(g, collectives.Send, collectives.Auto, units.Bytes(k.bytes), nopDone{}, 0)
					}
				}
			} else if k.peer >= 0 {
				pairs, ok := sends[k.peer]
				if !ok {
					for _, rank := range r.stageRanksOf(stage) {
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
			} else if k.kind != parallel.GroupPP { // (a pipeline collective other than a send plays nothing)
				sg := groups[k.kind]
				if sg == nil {
					sg = newStageGroups(c, r.stageGroupRanks(k.kind, stage))
					groups[k.kind] = sg
				}
				first := 0 // the groups [first, len) still to play
				if shortcuts && sg.shift != nil && fab.InFlight() == 0 {
					if g := sg.group(c, 0); g != nil {
						_ = runner.Start(g, k.op, collectives.Auto, units.Bytes(k.bytes), nopDone{}, 0)
						eng.Run()
						changed, before := fab.Listed()
						first = 1
						if fab.InFlight() == 0 { // else a transfer never ends: play the others
							for i := 1; i < len(sg.ranks); i++ {
								if repeatNodeShift(c, fab, changed, before, sg.shift[i]) {
									copied++
									sg.built[i] = true // never played: no group needed
									continue
								}
								if g := sg.group(c, i); g != nil {
									_ = runner.Start(g, k.op, collectives.Auto, units.Bytes(k.bytes), nopDone{}, 0)
								}
							}
							first = len(sg.ranks)
						}
					}
				}
				for i := first; i < len(sg.ranks); i++ {
					if g := sg.group(c, i); g != nil {
						_ = runner.Start(g, k.op, collectives.Auto, units.Bytes(k.bytes), nopDone{}, 0)
					}
				}
			}
			eng.Run()
			if classes {
				fab.FoldTraffic(float64(counts[k]))
				continue
			}
			scale = float64(counts[k])
			fab.FoldChanged(fold)
		}
	}
	if classes {
		if fab.Unbounded() {
			return linkTotals{}, 0, 0, false
		}
		return linkTotals{fab: fab}, copied, direct, true
	}
	return linkTotals{bytes: bytes, busy: busy}, copied, direct, true
}

// repeatNodeShift gives the links of the group shift nodes after the one
// just played (whose links are played, with before their figures before
// the collective) the played group's figures, when each of them held the
// same bytes as its counterpart before and has not moved since, and
// reports whether it did; it changes nothing otherwise. The shifted
// group's transfers would cross the shifted links only, in the same order
// at the same times (the cluster's nodes are alike and the group sits in
// one node).
func repeatNodeShift(c *topology.Cluster, fab *network.Fabric, played []int32, before []network.LinkFigures, shift int) bool {
	for j, l := range played {
		m, ok := c.ShiftNodes(l, shift)
		if !ok || fab.Pending(int(m)) || float64(fab.LinkBytes(int(m))) != before[j].Bytes {
			return false
		}
	}
	for j, l := range played {
		m, _ := c.ShiftNodes(l, shift)
		fab.Repeat(int(m), int(l), before[j].Busy)
	}
	return true
}
