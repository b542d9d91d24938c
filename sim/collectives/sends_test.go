package collectives

import (
	"math"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/topology"
	"github.com/simtrain/simtrain/sim/units"
)

// TestSendsEqualRunner starts the same sends, pair after pair, through
// Sends and through a runner with a group per pair, and compares every
// link's bytes and busy time bit for bit: every ordered pair of ranks of
// clusters with NVSwitch nodes on a rail network (PXN across rails), an
// oversubscribed Clos in pods, two NICs per GPU, PCIe-only nodes, NVLink
// bridges, NVL72 domains of several nodes and two GPU types, at sizes that
// pick the LL protocol (whose volume the runner inflates) and Simple.
func TestSendsEqualRunner(t *testing.T) {
	h200, err := hardware.LookupGPU("h200")
	if err != nil {
		t.Fatal(err)
	}
	h100, err := hardware.LookupGPU("h100-sxm")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		spec topology.Spec
	}{
		{"rail", topology.Spec{GPU: "h100-sxm", Nodes: 3}},
		{"clos-pods", topology.Spec{GPU: "h100-sxm", Nodes: 4, Network: "clos", PodGPUs: 16, Oversubscription: 7}},
		{"two-nics-per-gpu", topology.Spec{GPU: "h100-sxm", Nodes: 2, Network: "fat-tree", NICsPerNode: 16}},
		{"pcie", topology.Spec{GPU: "h100-sxm", Nodes: 2, IntraNode: "pcie"}},
		{"nvlink-pairs", topology.Spec{GPU: "h100-pcie", Nodes: 2}},
		{"nvl72", topology.Spec{GPU: "gb200", Nodes: 36}},
		{"mixed", topology.Spec{GPU: "h100-sxm", Nodes: 2, Groups: []topology.NodeGroup{{GPU: h100, Nodes: 1}, {GPU: h200, Nodes: 1}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster(t, tc.spec)
			ranks := c.NumGPUs()
			step := 1
			if ranks > 32 {
				step = ranks / 29 // a sample of pairs across the domains
			}
			sawLL := false
			// Every pair sends every size in turn, so a kind of pair's
			// cached scale is recomputed whenever the size changes.
			want, got := newTrafficFabric(c), newTrafficFabric(c)
			s := NewSends(c, got.f)
			for a := 0; a < ranks; a += step {
				for b := 0; b < ranks; b += step {
					for _, size := range []float64{0, 1, 1000, 64 << 10, 1 << 20, 256 << 20} {
						g, err := NewGroup(c, []int{a, b})
						serr := s.Start(a, b, units.Bytes(size))
						if (err == nil) != (serr == nil) {
							t.Fatalf("%d→%d: NewGroup error %v, Sends error %v", a, b, err, serr)
						}
						if err != nil {
							continue
						}
						if e, _ := g.estimate(Send, Auto, size); e.proto == LL && size > 0 {
							sawLL = true
						}
						if err := want.r.Start(g, Send, Auto, units.Bytes(size), nopDone{}, 0); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			want.e.Run()
			got.e.Run()
			for l := range c.Links() {
				wb, gb := float64(want.f.LinkBytes(l)), float64(got.f.LinkBytes(l))
				if math.Float64bits(wb) != math.Float64bits(gb) || want.f.LinkBusy(l) != got.f.LinkBusy(l) {
					t.Fatalf("link %d: Sends %v B %d ns, runner %v B %d ns", l, gb, got.f.LinkBusy(l), wb, want.f.LinkBusy(l))
				}
			}
			if !sawLL {
				t.Errorf("no send picked LL")
			}
		})
	}
}

// trafficFabric is an uncontended analytic fabric with a flow-mode runner,
// as links.arrow's traffic uses.
type trafficFabric struct {
	e *engine.Engine
	f *network.Fabric
	r *Runner
}

func newTrafficFabric(c *topology.Cluster) trafficFabric {
	e := engine.New()
	f := network.New(e, c.Bandwidths(), c.Latencies(), network.Analytic)
	return trafficFabric{e: e, f: f, r: NewRunner(e, f, network.Flow, c)}
}
