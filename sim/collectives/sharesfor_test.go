package collectives

import (
	"testing"

	"github.com/simtrain/simtrain/sim/topology"
	"github.com/simtrain/simtrain/sim/units"
)

// contendedGroups are groups of one kind on oversubscribed fabrics whose
// ring, tree and all-to-all shares are all below 1 (checked by the tests
// that use them, so that a pattern left unrouted shows).
func contendedGroups(t *testing.T) []struct {
	name   string
	c      *topology.Cluster
	groups [][]int
} {
	t.Helper()
	// Eight 4-rank groups on rail j, one rank on each of nodes 0, 4, 8, 12
	// of an 8:1 fat-tree (four leaves): every edge of every pattern
	// crosses leaves.
	var rails [][]int
	for j := 0; j < 8; j++ {
		rails = append(rails, []int{j, 32 + j, 64 + j, 96 + j})
	}
	// Four 16-rank groups of two whole nodes each on a 7:1 Clos of 32-GPU
	// pods: several ranks a domain (ppn 8), rings and trees on every rail.
	var pairsOfNodes [][]int
	for g := 0; g < 4; g++ {
		var ranks []int
		for _, node := range []int{g, g + 4} {
			for l := 0; l < 8; l++ {
				ranks = append(ranks, 8*node+l)
			}
		}
		pairsOfNodes = append(pairsOfNodes, ranks)
	}
	return []struct {
		name   string
		c      *topology.Cluster
		groups [][]int
	}{
		{"rails on a fat-tree 8:1", cluster(t, topology.Spec{GPU: "h100-sxm", Nodes: 16, Network: "fat-tree", Oversubscription: 8}), rails},
		{"node pairs on a clos 7:1", cluster(t, topology.Spec{GPU: "h100-sxm", Nodes: 8, Network: "clos", PodGPUs: 32, Oversubscription: 7}), pairsOfNodes},
	}
}

// StaticSharesFor, for every set of patterns, gives StaticShares' share for
// each pattern it routes and exactly 1 for each it does not: a routed
// pattern's figure does not depend on which others are routed with it (the
// pricer routes the tree pattern late, alone; TestTreeShareAskedLate in
// sim/simulation checks what it then records).
func TestStaticSharesForEachPattern(t *testing.T) {
	for _, tc := range contendedGroups(t) {
		all, err := StaticShares(tc.c, tc.groups, true)
		if err != nil {
			t.Fatal(err)
		}
		low := Share{1, 1, 1}
		for _, s := range all {
			low = Share{min(low.Ring, s.Ring), min(low.Tree, s.Tree), min(low.Direct, s.Direct)}
		}
		if low.Ring >= 1 || low.Tree >= 1 || low.Direct >= 1 {
			t.Fatalf("%s: shares %+v: some pattern uncontended, nothing to tell apart", tc.name, low)
		}
		for pats := Patterns(0); pats <= RingPattern|TreePattern|AllToAllPattern; pats++ {
			got, err := StaticSharesFor(tc.c, tc.groups, pats)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range all {
				want := Share{1, 1, 1}
				if pats&RingPattern != 0 {
					want.Ring = s.Ring
				}
				if pats&TreePattern != 0 {
					want.Tree = s.Tree
				}
				if pats&AllToAllPattern != 0 {
					want.Direct = s.Direct
				}
				if got[i] != want {
					t.Errorf("%s, patterns %03b, group %d: %+v, want %+v", tc.name, pats, i, got[i], want)
				}
			}
		}
		// StaticShares without all-to-all is StaticSharesFor ring and tree.
		noA2A, err := StaticShares(tc.c, tc.groups, false)
		if err != nil {
			t.Fatal(err)
		}
		rt, err := StaticSharesFor(tc.c, tc.groups, RingPattern|TreePattern)
		if err != nil {
			t.Fatal(err)
		}
		for i := range noA2A {
			if noA2A[i] != rt[i] {
				t.Errorf("%s group %d: StaticShares %+v, StaticSharesFor %+v", tc.name, i, noA2A[i], rt[i])
			}
		}
	}
	// Errors are StaticShares' whatever the patterns.
	c := twoLeaves(t, 32)
	for _, pats := range []Patterns{0, TreePattern, RingPattern | AllToAllPattern} {
		if _, err := StaticSharesFor(c, [][]int{{0, 0}}, pats); err == nil {
			t.Errorf("patterns %03b: a repeated rank accepted", pats)
		}
	}
}

// Only ReadsTreeShare's ops read Share.Tree: on a group spanning domains,
// a tree share of 1/4 leaves every other op's cost, at every algorithm it
// accepts and several sizes, exactly the uncontended one, while an
// all-reduce's changes for some algorithm and size (else the test could not
// fail: a reader missed by ReadsTreeShare would price with a tree share
// never routed).
func TestTreeShareReadByAllReduceOnly(t *testing.T) {
	for _, tc := range contendedGroups(t) {
		g, err := NewGroup(tc.c, tc.groups[0])
		if err != nil {
			t.Fatal(err)
		}
		if g.Domains() < 2 {
			t.Fatalf("%s: the group spans %d domain", tc.name, g.Domains())
		}
		free := g.WithShare(Share{1, 1, 1})
		tree := g.WithShare(Share{Ring: 1, Tree: 0.25, Direct: 1})
		for op := Op(0); op < numOps; op++ {
			changed := false
			for a := Auto; a < numAlgos; a++ {
				for _, bytes := range []units.Bytes{1 << 10, 1 << 20, 64 << 20, 1 << 30} {
					c1, err1 := free.Cost(op, a, bytes)
					c2, err2 := tree.Cost(op, a, bytes)
					if (err1 == nil) != (err2 == nil) {
						t.Fatalf("%s %s/%s: errors %v and %v", tc.name, op, a, err1, err2)
					}
					if err1 != nil {
						continue
					}
					if c1 != c2 {
						changed = true
						if !ReadsTreeShare(op) {
							t.Errorf("%s %s/%s of %v bytes: %+v uncontended, %+v with the tree share", tc.name, op, a, bytes, c1, c2)
						}
					}
				}
			}
			if ReadsTreeShare(op) && !changed {
				t.Errorf("%s %s: no algorithm or size reads the tree share", tc.name, op)
			}
		}
	}
}
