package simulation

import (
	"maps"
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/topology"
)

// signatureRef is pricer.signature as first written, with maps.
func signatureRef(c *topology.Cluster, ranks []int) []int {
	perDomain := map[int]int{}
	nodes := map[int]bool{}
	locals := map[int]bool{}
	for _, r := range ranks {
		perDomain[c.DomainOf(r)]++
		nodes[c.NodeOf(r)] = true
		locals[r%c.GPUsPerNode()] = true
	}
	counts := slices.Sorted(maps.Values(perDomain))
	sig := append([]int{len(ranks), len(perDomain), len(nodes), len(locals)}, counts...)
	if len(c.Groups) > 1 {
		sig = append(sig, -1-c.GroupOf(ranks[0]))
	}
	return sig
}

// TestSignatureCounts: the signature counted on sorted copies equals the
// map-counted one on groups inside a node, across nodes, rail-aligned or
// not, unsorted, ragged over NVL72 domains and on a mixed cluster, one
// pricer signing them all in turn (its scratch reused).
func TestSignatureCounts(t *testing.T) {
	h100, _ := hardware.LookupGPU("h100-sxm")
	h200, _ := hardware.LookupGPU("h200")
	for _, spec := range []topology.Spec{
		{GPU: "h100-sxm", Nodes: 8},
		{GPU: "gb200", Nodes: 36},
		{GPU: "l40s", Nodes: 3, NICsPerNode: 1},
		{GPU: "h100-sxm", Nodes: 3, Groups: []topology.NodeGroup{{GPU: h100, Nodes: 1}, {GPU: h200, Nodes: 2}}},
	} {
		c, err := topology.Build(spec)
		if err != nil {
			t.Fatal(err)
		}
		n, gpn := c.NumGPUs(), c.GPUsPerNode()
		groups := [][]int{{0}, {0, 1}, {1, 0}, {n - 1, 0, gpn}, {3, gpn + 3, 2*gpn + 3}, {0, 1, gpn + 2, 2*gpn + 3, 2*gpn + 4}}
		var all, stride []int
		for r := n - 1; r >= 0; r-- {
			all = append(all, r)
			if r%(gpn+1) == 0 {
				stride = append(stride, r)
			}
		}
		groups = append(groups, all, stride)
		p := &pricer{c: c}
		// Twice, the second time backwards: the pricer's scratch goes
		// from large groups to small ones and back.
		for i := range 2 * len(groups) {
			g := groups[i%len(groups)]
			if i >= len(groups) {
				g = groups[2*len(groups)-1-i]
			}
			if got, want := p.signature(g), signatureRef(c, g); !slices.Equal(got, want) {
				t.Fatalf("%+v: group %v: signature %v, want %v", spec, g, got, want)
			}
		}
	}
}
