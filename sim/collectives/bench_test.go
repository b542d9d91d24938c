package collectives

import (
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/topology"
	"github.com/simtrain/simtrain/sim/units"
)

// BenchmarkCost prices one all_reduce with Auto (the step simulator's hot
// call): 8 H100 in a node, and a 1,024-rank data-parallel group over 128
// nodes.
func BenchmarkCost(b *testing.B) {
	for _, bc := range []struct {
		name string
		spec topology.Spec
	}{
		{"8xH100", topology.Spec{GPU: "h100-sxm", Nodes: 1}},
		{"1024xH100", topology.Spec{GPU: "h100-sxm", Nodes: 128}},
	} {
		g := allRanks(b, cluster(b, bc.spec))
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			sizes := [4]float64{4 * KiB, 3 * MiB, 200 * MiB, 2 * GiB}
			for i := 0; b.Loop(); i++ {
				if _, err := g.Cost(AllReduce, Auto, units.Bytes(sizes[i&3])); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkNewGroup analyses a tensor-parallel group of 8 and a
// data-parallel group of 1,024.
func BenchmarkNewGroup(b *testing.B) {
	c := cluster(b, topology.Spec{GPU: "h100-sxm", Nodes: 128})
	tp := seq(8)
	dp := make([]int, 128)
	for i := range dp {
		dp[i] = 8 * i
	}
	for name, ranks := range map[string][]int{"tp8": tp, "dp128": dp, "all1024": seq(1024)} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := NewGroup(c, ranks); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

type nopDone struct{}

func (nopDone) CollectiveDone(engine.Time, int64) {}

// BenchmarkFlowAllReduce plays one ring all_reduce at flow fidelity on 64
// H100 (8 nodes, 512 transfers).
func BenchmarkFlowAllReduce(b *testing.B) {
	c := cluster(b, topology.Spec{GPU: "h100-sxm", Nodes: 8})
	g := allRanks(b, c)
	e := engine.New()
	f := network.New(e, c.Bandwidths(), c.Latencies(), network.Flow)
	r := NewRunner(e, f, network.Flow, c)
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Start(g, AllReduce, Ring, 256*MiB, nopDone{}, 0); err != nil {
			b.Fatal(err)
		}
		e.Run()
	}
}

// BenchmarkStaticShares prices the contention of one pipeline stage of the
// Llama 3 405B layout on Meta's 16K-GPU Clos (3,072-GPU pods, 1:7 above
// them): eight 128-rank DP groups, one GPU per node, and the 1,024 pipeline
// sends between two stages. Run once per (kind, stage) by the pricer.
func BenchmarkStaticShares(b *testing.B) {
	c := cluster(b, topology.Spec{GPU: "h100-sxm", Nodes: 2048, Network: "clos", NIC: "roce-400", PodGPUs: 3072, Oversubscription: 7})
	var dp [][]int
	for j := 0; j < 8; j++ {
		g := make([]int, 128)
		for i := range g {
			g[i] = i*8 + j
		}
		dp = append(dp, g)
	}
	var sends [][2]int
	for r := 2048; r < 3072; r++ {
		sends = append(sends, [2]int{r, r + 1024}) // stage 2 → 3 crosses pods
	}
	b.Run("dp-rings-trees", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := StaticShares(c, dp, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pp-sends", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := SendShares(c, sends); err != nil {
				b.Fatal(err)
			}
		}
	})
}
