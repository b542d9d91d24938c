package collectives

import (
	"testing"

	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/topology"
)

// Transfers bounds the flows the runner really starts at flow fidelity,
// for every op and algorithm that applies, inside a node and across nodes.
func TestTransfersBoundFlows(t *testing.T) {
	c := cluster(t, topology.Spec{GPU: "h100-sxm", Nodes: 4})
	node, err := NewGroup(c, seq(8))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []*Group{node, allRanks(t, c)} {
		for op := Op(0); op < numOps; op++ {
			for a := Algo(0); a < numAlgos; a++ {
				want, err := g.Transfers(op, a, GiB)
				if err != nil {
					continue // the algorithm does not apply to op
				}
				_, r := play(t, c, network.Flow, g, op, a, GiB)
				if got := r.Flows(); got > want || (got > 0 && want > 8*got) {
					t.Errorf("%s/%s on %d ranks: %d flows, Transfers %d", op, a, g.Size(), got, want)
				}
			}
		}
	}
}
