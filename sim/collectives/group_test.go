package collectives

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/topology"
	"github.com/simtrain/simtrain/sim/units"
)

func TestNewGroupErrors(t *testing.T) {
	c := cluster(t, topology.Spec{GPU: "h100-sxm", Nodes: 1})
	if _, err := NewGroup(nil, []int{0}); err == nil {
		t.Error("nil cluster: no error")
	}
	cases := []struct {
		ranks []int
		want  string
	}{
		{nil, "no ranks"},
		{[]int{0, 8}, "outside the cluster"},
		{[]int{-1, 0}, "outside the cluster"},
		{[]int{0, 1, 1}, "appears twice"},
		{make([]int, 9), "larger than the cluster"},
	}
	for _, tc := range cases {
		_, err := NewGroup(c, tc.ranks)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("NewGroup(%v): %v, want one line containing %q", tc.ranks, err, tc.want)
		}
	}
}

func TestGroupShape(t *testing.T) {
	c := cluster(t, topology.Spec{GPU: "h100-sxm", Nodes: 4})
	cases := []struct {
		ranks           []int
		domains, lo, hi int
		rail            bool
	}{
		{[]int{0, 1, 2, 3, 4, 5, 6, 7}, 1, 8, 8, true},
		{[]int{8, 0, 9, 1, 10, 2}, 2, 3, 3, true}, // order does not matter
		{[]int{0, 1, 9}, 2, 1, 2, false},
		{[]int{0, 8, 16, 24}, 4, 1, 1, true}, // one rail across nodes
		{[]int{0, 9}, 2, 1, 1, false},        // different rails
	}
	for _, tc := range cases {
		g, err := NewGroup(c, tc.ranks)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := g.RanksPerDomain()
		if g.Domains() != tc.domains || lo != tc.lo || hi != tc.hi || g.RailAligned() != tc.rail {
			t.Errorf("%v: domains %d ppn %d..%d rail %v, want %d %d..%d %v",
				tc.ranks, g.Domains(), lo, hi, g.RailAligned(), tc.domains, tc.lo, tc.hi, tc.rail)
		}
	}
}

// TestGroupBandwidths checks the probed achievable rates against the
// profiles: H100 ring 450 x 370/450, p2p 450 x 374/450, NVLS port 450 x
// 0.6857, NDR 50 x 47/50; A100 with HDR 25 x 24/25.
func TestGroupBandwidths(t *testing.T) {
	cases := []struct {
		spec                 topology.Spec
		ranks                []int
		ring, p2p, nvls, net float64
	}{
		{topology.Spec{GPU: "h100-sxm", Nodes: 2}, seq(16), 370e9, 374e9, 450e9 * 480 * 8 / 14 * 9 / 8 / 450, 47e9},
		{topology.Spec{GPU: "a100-80gb", Nodes: 2, NIC: "ib-hdr-200"}, seq(16), 231.58e9, 237.5e9, 0, 24e9},
		// A 2-GPU group of H100 PCIe on one NVLink bridge: 300 x 116/300.
		{topology.Spec{GPU: "h100-pcie", Nodes: 1}, []int{0, 1}, 116e9, 116e9, 0, 0},
	}
	for _, tc := range cases {
		g, err := NewGroup(cluster(t, tc.spec), tc.ranks)
		if err != nil {
			t.Fatal(err)
		}
		ring, p2p, nvls, net := g.Bandwidths()
		near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*b+1 }
		if !near(ring, tc.ring) || !near(p2p, tc.p2p) || !near(nvls, tc.nvls) || (tc.net > 0 && !near(net, tc.net)) {
			t.Errorf("%s %v: ring %.4g p2p %.4g nvls %.4g net %.4g, want %.4g %.4g %.4g %.4g",
				tc.spec.GPU, tc.ranks, ring, p2p, nvls, net, tc.ring, tc.p2p, tc.nvls, tc.net)
		}
	}
}

func seq(n int) []int {
	r := make([]int, n)
	for i := range r {
		r[i] = i
	}
	return r
}

// TestPCIeNodes: on a PCIe-only node the ring is limited by PCIe links at
// PCIeEfficiency, uses PCIe hop latencies and no LL128; NVLS is refused with
// the valid choices.
func TestPCIeNodes(t *testing.T) {
	c := cluster(t, topology.Spec{GPU: "l40s", Nodes: 1})
	g := allRanks(t, c)
	ring, _, _, _ := g.Bandwidths()
	if !g.sh.pcie || ring > 0.8*float64(c.GPU.PCIeBandwidth)+1 || ring <= 0 {
		t.Errorf("l40s: pcie %v ring %.4g (PCIe x16 %.4g)", g.sh.pcie, ring, c.GPU.PCIeBandwidth)
	}
	for b := 1.0; b < 16*GiB; b *= 8 {
		cost, err := g.Cost(AllReduce, Auto, units.Bytes(b))
		if err != nil || cost.Proto == LL128 || cost.Algo == NVLS {
			t.Errorf("l40s %v B: %+v %v", b, cost, err)
		}
	}
	_, err := g.Cost(AllReduce, NVLS, GiB)
	if err == nil || !strings.Contains(err.Error(), "l40s has no NVLink SHARP") || !strings.Contains(err.Error(), "valid: auto, ring, tree") {
		t.Errorf("nvls on l40s: %v", err)
	}
}

// TestH100PCIeBridge reproduces nccl#1161: 2 H100 PCIe on an NVLink bridge,
// all_reduce 116 GB/s busbw at 4 GB (the efficiency comes from that figure,
// so this checks the bridge route and the model around it).
func TestH100PCIeBridge(t *testing.T) {
	g, err := NewGroup(cluster(t, topology.Spec{GPU: "h100-pcie", Nodes: 1}), []int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	cost, err := g.Cost(AllReduce, Auto, 4e9)
	if err != nil {
		t.Fatal(err)
	}
	if got := float64(cost.BusBW) / 1e9; math.Abs(got/116-1) > 0.1 {
		t.Errorf("2xH100 PCIe bridge all_reduce 4 GB: busbw %.1f GB/s, measured 116", got)
	}
}

// TestRenumbering is metamorphic: the rank order given and which nodes the
// group sits on do not change the cost of collectives that NCCL reorders
// (everything but send and send_recv).
func TestRenumbering(t *testing.T) {
	c := cluster(t, topology.Spec{GPU: "h100-sxm", Nodes: 4})
	a, err := NewGroup(c, []int{0, 1, 2, 3, 8, 9, 10, 11})
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewGroup(c, []int{27, 17, 24, 26, 16, 18, 25, 19}) // nodes 2 and 3, shuffled
	if err != nil {
		t.Fatal(err)
	}
	for op := AllReduce; op <= Reduce; op++ {
		for algo := Auto; algo < numAlgos; algo++ {
			for _, bytes := range []float64{1 * KiB, 3 * MiB, 5 * GiB} {
				ca, errA := a.Cost(op, algo, units.Bytes(bytes))
				cb, errB := b.Cost(op, algo, units.Bytes(bytes))
				if (errA == nil) != (errB == nil) || ca != cb {
					t.Errorf("%s/%s %v B: %+v (%v) vs %+v (%v)", op, algo, bytes, ca, errA, cb, errB)
				}
			}
		}
	}
}

// TestPointToPoint: send inside a node runs at the p2p rate, across nodes at
// one NIC's; send_recv is as slow as its slowest pair.
func TestPointToPoint(t *testing.T) {
	c := cluster(t, topology.Spec{GPU: "h100-sxm", Nodes: 2})
	cases := []struct {
		ranks []int
		op    Op
		bw    float64
	}{
		{[]int{0, 1}, Send, 374e9},
		{[]int{0, 8}, Send, 47e9},
		{[]int{3, 11}, Send, 47e9},
		{[]int{0, 1, 2, 3}, SendRecv, 374e9},
		{[]int{0, 1, 8, 9}, SendRecv, 47e9},
	}
	for _, tc := range cases {
		g, err := NewGroup(c, tc.ranks)
		if err != nil {
			t.Fatal(err)
		}
		cost, err := g.Cost(tc.op, Auto, 4*GiB)
		if err != nil {
			t.Fatal(err)
		}
		// 4 GiB at the rate plus at most 100 µs of fixed time.
		ideal := 4 * GiB / tc.bw
		if got := cost.Time.Seconds(); got < ideal || got > ideal+100e-6 || cost.Algo != Direct {
			t.Errorf("%s %v: %v (%s), ideal %.6f s", tc.op, tc.ranks, cost.Time, cost.Algo, ideal)
		}
	}
}

func TestUnavailableAlgorithms(t *testing.T) {
	c := cluster(t, topology.Spec{GPU: "h100-sxm", Nodes: 2})
	uneven, err := NewGroup(c, []int{0, 1, 2, 8})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		g    *Group
		op   Op
		algo Algo
		want string
	}{
		{uneven, AllReduce, Hierarchical, "same number of ranks"},
		{uneven, AllReduce, NVLS, "at least 2 ranks in every domain"},
		{allRanks(t, c), AllGather, NVLS, "inside one NVLink domain"},
		{allRanks(t, c), Broadcast, Tree, "does not apply to broadcast (valid: auto, ring)"},
	}
	for _, tc := range cases {
		_, err := tc.g.Cost(tc.op, tc.algo, GiB)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s/%s: %v, want %q", tc.op, tc.algo, err, tc.want)
		}
	}
}

// TestCheckRanksMatchesScan: the pairwise and sort-based checks NewGroup
// uses report exactly what the cluster-sized scan (checkRanksInto)
// reports, on every rank list of up to four entries drawn from -1..8 on an
// 8-GPU cluster and on random lists longer than smallGroup.
func TestCheckRanksMatchesScan(t *testing.T) {
	big := cluster(t, topology.Spec{GPU: "h100-sxm", Nodes: 5})
	rng := rand.New(rand.NewPCG(1, 2))
	var scratch []bool
	for range 2000 {
		ranks := make([]int, smallGroup+1+rng.IntN(24))
		for i := range ranks {
			ranks[i] = i
		}
		rng.Shuffle(len(ranks), func(i, j int) { ranks[i], ranks[j] = ranks[j], ranks[i] })
		switch rng.IntN(3) { // a repeat, a rank off the cluster, or neither
		case 0:
			ranks[1+rng.IntN(len(ranks)-1)] = ranks[rng.IntN(len(ranks))]
		case 1:
			ranks[rng.IntN(len(ranks))] = []int{-1, 40, 99}[rng.IntN(3)]
		}
		want := checkRanksInto(big, ranks, &scratch)
		got := checkRanks(big, ranks)
		if (want == nil) != (got == nil) || (want != nil && want.Error() != got.Error()) {
			t.Fatalf("checkRanks(%v) = %v, the scan says %v", ranks, got, want)
		}
	}
	c := cluster(t, topology.Spec{GPU: "h100-sxm", Nodes: 1})
	var seen []bool
	var walk func(ranks []int)
	walk = func(ranks []int) {
		want := checkRanksInto(c, ranks, &seen)
		got := checkRanks(c, ranks)
		if (want == nil) != (got == nil) || (want != nil && want.Error() != got.Error()) {
			t.Fatalf("checkRanks(%v) = %v, the scan says %v", ranks, got, want)
		}
		if len(ranks) == 4 {
			return
		}
		for r := -1; r <= 8; r++ {
			walk(append(slices.Clone(ranks), r))
		}
	}
	walk(nil)
}

// TestMeshNodeCollectives: on a 4-GPU HGX H200 board (nvlink-mesh, one
// 150 GB/s cable per pair) a 2-GPU group has one pair's cable: ring and p2p
// at 150 x 367.2/450 = 122.4 and 150 x 374/450 = 124.667 GB/s, a third of the
// NVSwitch node's. A 4-GPU group spreads its rings over all six pairs (NCCL
// channels), 3 x 122.4 = 367.2 GB/s, the NVSwitch node's rate. Hand-computed
// costs: everything but the transfer term equals the NVSwitch node's, so a
// ring all_reduce of S = 8 GiB on 2 GPUs takes S x 2(n-1)/n x (1/122.4 -
// 1/367.2) GB/s⁻¹ = 46.78 ms longer, an all_gather S x (n-1)/n x the same =
// 23.39 ms longer, and on 4 GPUs both take the NVSwitch node's time.
func TestMeshNodeCollectives(t *testing.T) {
	mesh := cluster(t, topology.Spec{GPU: "h200", Nodes: 1, GPUsPerNode: 4, IntraNode: "nvlink-mesh"})
	nvs := cluster(t, topology.Spec{GPU: "h200", Nodes: 1, GPUsPerNode: 4})
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*b+1 }
	const S = 8 * GiB
	dRate := 1/122.4e9 - 1/367.2e9
	for _, tc := range []struct {
		ranks     []int
		ring, p2p float64
		extraAR   float64 // seconds over the NVSwitch node: all_reduce, all_gather
		extraAG   float64
	}{
		{[]int{0, 1}, 122.4e9, 374e9 / 3, S * dRate, S / 2 * dRate},
		{[]int{2, 0}, 122.4e9, 374e9 / 3, S * dRate, S / 2 * dRate},
		{[]int{0, 1, 2, 3}, 367.2e9, 374e9 / 3, 0, 0},
	} {
		gm, err := NewGroup(mesh, tc.ranks)
		if err != nil {
			t.Fatal(err)
		}
		gn, err := NewGroup(nvs, tc.ranks)
		if err != nil {
			t.Fatal(err)
		}
		ring, p2p, nvls, _ := gm.Bandwidths()
		if !near(ring, tc.ring) || !near(p2p, tc.p2p) || nvls != 0 {
			t.Errorf("%v: ring %.6g p2p %.6g nvls %.4g, want %.6g %.6g 0", tc.ranks, ring, p2p, nvls, tc.ring, tc.p2p)
		}
		for _, op := range []struct {
			op    Op
			extra float64
		}{{AllReduce, tc.extraAR}, {AllGather, tc.extraAG}} {
			m, err := gm.Cost(op.op, Ring, S)
			if err != nil {
				t.Fatal(err)
			}
			n, err := gn.Cost(op.op, Ring, S)
			if err != nil {
				t.Fatal(err)
			}
			want := float64(n.Time) + op.extra*1e9
			if d := float64(m.Time) - want; d < -2 || d > 2 || m.Proto != n.Proto {
				t.Errorf("%v %v: mesh %d ns %s, want %.0f ns (NVSwitch %d ns %s)", tc.ranks, op.op, m.Time, m.Proto, want, n.Time, n.Proto)
			}
		}
	}
}

// NewGroup's pooled scratch (the rank check's sorted copy, the members,
// the probe's routes) carries nothing from one group into the next: a run
// of groups of different sizes and placements, made one after another on
// one scratch, equals each made on a fresh scratch, errors included.
func TestNewGroupScratchLeaksNothing(t *testing.T) {
	spread := func(n, stride, off int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = off + i*stride
		}
		return out
	}
	dup := spread(20, 1, 0)
	dup[17] = dup[3] // a repeat past smallGroup: the sorted check
	for _, tc := range []struct {
		spec topology.Spec
		runs [][]int
	}{
		{topology.Spec{GPU: "h100-sxm", Nodes: 8}, [][]int{
			spread(64, 1, 0), spread(8, 8, 3), spread(32, 2, 1), dup, spread(2, 9, 5),
			spread(24, 1, 8), {7, 6, 5, 4, 3, 2, 1, 0}, spread(17, 3, 0), spread(4, 1, 60),
		}},
		{topology.Spec{GPU: "mi300x", Nodes: 2}, [][]int{spread(16, 1, 0), spread(4, 2, 1), spread(8, 1, 8), spread(2, 1, 3)}},
		{topology.Spec{GPU: "h100-pcie", Nodes: 2}, [][]int{spread(16, 1, 0), spread(4, 1, 2), spread(3, 5, 0)}},
	} {
		c := cluster(t, tc.spec)
		fresh := func(ranks []int) (*Group, error) {
			scratches.mu.Lock()
			saved := scratches.free
			scratches.free = nil
			scratches.mu.Unlock()
			defer func() {
				scratches.mu.Lock()
				scratches.free = saved
				scratches.mu.Unlock()
			}()
			return NewGroup(c, ranks)
		}
		for round := range 2 { // the second round on scratch grown by the first
			for _, ranks := range tc.runs {
				got, gotErr := NewGroup(c, ranks)
				want, wantErr := fresh(ranks)
				if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
					t.Fatalf("%s round %d, %v: error %v, fresh %v", tc.spec.GPU, round, ranks, gotErr, wantErr)
				}
				if gotErr == nil && !reflect.DeepEqual(got, want) {
					t.Errorf("%s round %d, %v: group %+v, fresh %+v", tc.spec.GPU, round, ranks, *got, *want)
				}
			}
		}
	}
}
