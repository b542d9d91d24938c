package topology

import (
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/hardware"
)

// AppendNetworkRoute is AppendRoute with every link but the network ones
// left out, for every ordered pair of ranks and several ECMP hashes on
// every builder and intra-node kind (rail with PXN, rails crossed at a
// spine, Clos pods oversubscribed, two NICs per GPU, GPUs sharing a NIC,
// PCIe-only and NVLink-bridge nodes, 4-GPU boards, NVL72, a single switch,
// three tiers) and on a mixed cluster; and it appends to what dst held.
func TestNetworkRouteIsRouteFiltered(t *testing.T) {
	h100, err := hardware.LookupGPU("h100-sxm")
	if err != nil {
		t.Fatal(err)
	}
	h200, err := hardware.LookupGPU("h200")
	if err != nil {
		t.Fatal(err)
	}
	specs := append([]Spec{}, specsSmall...)
	specs = append(specs,
		Spec{GPU: "h100-sxm", Nodes: 3, Groups: []NodeGroup{{GPU: h100, Nodes: 1}, {GPU: h200, Nodes: 2}}},
		Spec{GPU: "h100-sxm", Nodes: 2080, GPUsPerNode: 1, NICsPerNode: 1, Network: "fat-tree"}, // three tiers
		Spec{GPU: "gb200", Nodes: 36, Network: "single-switch"})
	networkLinks := 0
	for _, s := range specs {
		c := mustBuild(t, s)
		n := c.NumGPUs()
		step := max(1, n/97) // every pair on small clusters, a spread sample on large ones
		var full, want, got []int32
		for a := 0; a < n; a += step {
			for b := 0; b < n; b += max(1, step-1) {
				for _, h := range []uint64{0, 1, 2, 7, 1 << 40} {
					full = c.AppendRoute(full[:0], a, b, h)
					want = want[:0]
					for _, l := range full {
						if c.Links()[l].Kind == LinkNetwork {
							want = append(want, l)
						}
					}
					got = c.AppendNetworkRoute(append(got[:0], -1), a, b, h)
					if got[0] != -1 || !slices.Equal(got[1:], want) {
						t.Fatalf("%+v: %d→%d hash %d: network route %v, route's network links %v", s, a, b, h, got, want)
					}
					networkLinks += len(want)
				}
			}
		}
	}
	if networkLinks == 0 {
		t.Fatal("no route crossed the network")
	}
}
