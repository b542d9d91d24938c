package collectives

import (
	"math"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/units"
)

func profile(t testing.TB, gpu string) *hardware.CommProfile {
	t.Helper()
	g, err := hardware.LookupGPU(gpu)
	if err != nil {
		t.Fatal(err)
	}
	return &g.Comm
}

// shapeGroup is a Group with a hand-made shape and no cluster, for testing
// the closed form on its own.
func shapeGroup(sh shape) *Group { return &Group{sh: sh, ranks: make([]int, sh.n)} }

const (
	KiB = 1 << 10
	MiB = 1 << 20
	GiB = 1 << 30
)

// H100 shapes: one 8-GPU NVSwitch node (ring 370, p2p 374, NVLS 308.57 GB/s
// per port) and 2 of them over NDR (47 GB/s per GPU).
func h100Node(t testing.TB) shape {
	return shape{n: 8, domains: 1, ppnMin: 8, ppnMax: 8, treeDeg: 0,
		intraBW: 370e9, p2pBW: 374e9, a2aBW: 374e9 / 7, nvlsBW: 450e9 * 0.6857142857142857, netBW: 47e9, p: profile(t, "h100-sxm")}
}

func TestClosedFormHandComputed(t *testing.T) {
	h := h100Node(t)
	h2 := h
	h2.n, h2.domains, h2.treeDeg, h2.sendCross, h2.ringCross = 16, 2, 2, true, true
	// 64 DGX H100 over 8 x NDR 400 (512 ranks): the FSDP data-parallel
	// group of llm-foundry's MPT runs at 512 GPUs.
	h64 := h
	h64.n, h64.domains, h64.treeDeg = 512, 64, 4
	a4 := shape{n: 32, domains: 4, ppnMin: 8, ppnMax: 8, treeDeg: 4,
		intraBW: 231.58e9, p2pBW: 237.5e9, a2aBW: 237.5e9 / 7, netBW: 24e9, p: profile(t, "a100-80gb")}
	cases := []struct {
		name  string
		sh    shape
		op    Op
		algo  Algo
		bytes float64
		want  engine.Time // ns, rounded up
		proto Proto
	}{
		// Ring all_reduce, Simple, 8 GiB on 8 H100: L0 12 µs + base 8.4 +
		// 2(n-1)=14 NVLink hops x 3.4 µs + ramp 30 µs (saturated) +
		// 8 GiB x 2*7/8 / 370 GB/s = 0.0407260690 s.
		{"ring AR 8xH100 8GiB", h, AllReduce, Ring, 8 * GiB, 40726070, Simple},
		// NVLS all_reduce, 8 GiB: 12 + 25 + 30 µs + 8 GiB x 9/8 / 308.571 GB/s
		// = 0.0313844699 s (busbw 478.98 GB/s).
		{"nvls AR 8xH100 8GiB", h, AllReduce, NVLS, 8 * GiB, 31384470, Simple},
		// Ring LL, 64 KiB: 12 + 6.6 + 14 x 0.6 µs; LL rate min(141, 0.5*370)
		// = 141 GB/s on 2 of 24 channels (threshold 8*8 bytes per thread:
		// 65536/(512*64) = 2 channels' worth):
		// 65536 x 1.75 / (141e9 x 2/24) = 9.7606 µs -> 36.7607 µs.
		{"ring AR 8xH100 64KiB", h, AllReduce, Ring, 64 * KiB, 36761, LL},
		// Tree all_reduce, Simple, 1 GiB on one node: physical 2S/370;
		// busBw = min(0.92*370, 24*38.7) = 340.4, algBw 170.2 GB/s (no
		// correction above 256 MiB); latency 8.4 + 2*(7*4.0) µs; + 12 + 30.
		{"tree AR 8xH100 1GiB", h, AllReduce, Tree, 1 * GiB, 6415107, Simple},
		// 4 DGX A100 over HDR, ring Simple 8 GiB: rate min(231.58*8/7,
		// 8*24) = 192 GB/s; latency 1.4 x (8.4 + 56 x max(3.4, 3 x 2.0) +
		// 6 x 14) µs (plateau; AMD host overhead 2 µs) + 12 + ramp 180 µs;
		// + 8 GiB x 2*31/32 / 192 GB/s = 0.0874740427 s (busbw 190.26).
		{"ring AR 4xDGX-A100 8GiB", a4, AllReduce, Ring, 8 * GiB, 87474043, Simple},
		// The same group all-gathering 24 MiB, a TP-32 sequence-parallel
		// activation (Megatron-DeepSpeed GPT-30B at 2k tokens): LL128 at
		// min(0.6 x 231.58*8/7 = 158.798 (scale-up side, A100's one-node
		// LL128 fit), 0.92 x 8 x 24 = 176.64 (NIC side, NCCL's factor))
		// = 158.798 GB/s; latency 12 + 14 + 28 x max(1.9, 2.0) + 3 x 4.0 µs
		// = 94 µs; + 24 MiB x 31/32 / 158.798 GB/s = 153.525 µs -> 247.525 µs.
		// (Simple: 12 + 8.4 + 28 x 6.0 + 3 x 14 + ramp 180 x 24.4/72 µs +
		// 127.0 µs = 418 µs.) Before the NIC side got NCCL's factor the
		// whole rate took 0.6: 0.6 x 192 = 115.2 GB/s, 305.6 µs.
		{"ring AG 4xDGX-A100 24MiB", a4, AllGather, Auto, 24 * MiB, 247525, LL128},
		// all_to_all on 2 H100 nodes, 1 GiB Simple: max(7/16 S/374,
		// 8/16 S/47) = 8/16 S/47; latency 8.4 + 14 (net hop) + 8 remote
		// peers x 3 x 1 µs + 12 + 30 µs.
		{"a2a 2xH100 1GiB", h2, AllToAll, Direct, 1 * GiB, 11511186, Simple},
		// all_gather of one MPT-1b block in bf16 (100,679,680 B) over 64
		// DGX H100 nodes, NCCL's ring model at 512 ranks (tuning.cc, the
		// same at v2.19 and 2.30): rate min(370*8/7, 8*47) = 376 GB/s.
		// LL128 (Auto's pick): 12 + 14 + (511-63) x max(1.9, 1.0) + 63 x
		// 4.0 µs = 1129.2 µs, + S x 511/512 / (0.92 x 376 GB/s) = 290.48 µs
		// -> 1419.68 µs (busbw 70.8 GB/s: latency is 80%). Simple would
		// take 12 + 8.4 + 448 x max(3.4, 3 x 1.0) + 63 x 14 + ramp 30 µs
		// + S x 511/512 / 376 GB/s = 2722.8 µs, so NCCL's model picks LL128.
		{"ring AG 64xDGX-H100 96MiB", h64, AllGather, Auto, 100679680, 1419681, LL128},
		// The same for reduce_scatter of its fp32 gradients (201,359,360
		// B): 1129.2 µs + S x 511/512 / 345.92 GB/s = 580.96 µs.
		{"ring RS 64xDGX-H100 192MiB", h64, ReduceScatter, Auto, 201359360, 1710162, LL128},
	}
	for _, c := range cases {
		g := shapeGroup(c.sh)
		got, err := g.Cost(c.op, c.algo, units.Bytes(c.bytes))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		// 2 ns: floating-point evaluation order around the round-up.
		if d := got.Time - c.want; d < -2 || d > 2 || got.Proto != c.proto {
			t.Errorf("%s: got %d ns %s, want %d ns %s", c.name, got.Time, got.Proto, c.want, c.proto)
		}
	}
}

func TestChanFrac(t *testing.T) {
	cases := []struct {
		bytes float64
		p     Proto
		ring  bool
		n     int
		want  float64
	}{
		// 1 KiB Simple, 24 channels of 512 threads, 64 bytes per thread:
		// 1024/(24*512*64) is below one channel of 64 threads, the floor.
		{1024, Simple, true, 8, 64.0 / (24 * 512)},
		// Ring LL threshold is 8 per thread times 8 ranks = 64: 64 KiB is
		// 65536/(512*64) = 2 channels' worth.
		{64 * KiB, LL, true, 8, 2.0 / 24},
		// Tree LL threshold stays 8: 64 KiB is 16 channels' worth.
		{64 * KiB, LL, false, 8, 16.0 / 24},
		// 48 KiB ring LL: 1.5 channels' worth (continuous).
		{48 * KiB, LL, true, 8, 1.5 / 24},
		// LL128 keeps at least 320 threads: 1 KiB gives 320/(24*640).
		{1024, LL128, true, 8, 320.0 / (24 * 640)},
		// Large messages use everything.
		{1 * GiB, LL128, true, 8, 1},
	}
	for _, c := range cases {
		if got := chanFrac(c.bytes, 24, c.p, c.ring, c.n); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("chanFrac(%v, %s, ring=%v) = %v, want %v", c.bytes, c.p, c.ring, got, c.want)
		}
	}
}

func TestDoubleBinaryTree(t *testing.T) {
	// NCCL's btree over 14 ranks (trees.cc illustration): 0 -> 8;
	// 8 -> 4, 12; 4 -> 2, 6; 12 -> 10, 13; 2 -> 1, 3; 6 -> 5, 7; 10 -> 9, 11.
	want := []int{-1, 2, 4, 2, 8, 6, 4, 6, 0, 10, 12, 10, 8, 12}
	for r, p := range want {
		if got := btreeParent(14, r); got != p {
			t.Errorf("btreeParent(14, %d) = %d, want %d", r, got, p)
		}
	}
	// Tree 1 mirrors for even n: parent of r is 13 - parent0(13 - r).
	if got := dtreeParent(14, 13, 1); got != -1 {
		t.Errorf("mirrored root: parent %d", got)
	}
	// 5 mirrors to 8, whose parent 0 mirrors back to 13.
	if got := dtreeParent(14, 5, 1); got != 13 {
		t.Errorf("dtreeParent(14, 5, 1) = %d, want 13", got)
	}
	// Odd n shifts by one: tree 1 over 3 ranks is the chain 1 -> 0 -> 2.
	for r, p := range []int{1, -1, 0} {
		if got := dtreeParent(3, r, 1); got != p {
			t.Errorf("dtreeParent(3, %d, 1) = %d, want %d", r, got, p)
		}
	}
	// Degrees: d=2: 0<->1 in both trees; d=3: tree 0 is 0 -> 2 -> 1 and
	// tree 1 is 1 -> 0 -> 2, so ranks 0 and 2 have 3 edges; d=4: tree 0 is
	// 0 -> 2 -> {1, 3}, tree 1 is 3 -> 1 -> {2, 0}: ranks 1 and 2 have 4.
	for d, want := range map[int]int{1: 0, 2: 2, 3: 3, 4: 4, 16: 4, 1000: 4} {
		if got := treeDegree(d); got != want {
			t.Errorf("treeDegree(%d) = %d, want %d", d, got, want)
		}
	}
}

// TestRingBWAcrossDomains checks the multi-domain ring rate against the
// hardware-facts §2d rule, n_NIC x per-NIC bandwidth.
func TestRingBWAcrossDomains(t *testing.T) {
	cases := []struct {
		name       string
		intra, net float64
		ppn, doms  int
		want       float64
	}{
		{"DGX A100 8xHDR", 231.58e9, 24e9, 8, 4, 192e9},   // NIC-bound: 8 x 24
		{"H100 8xNDR", 370e9, 47e9, 8, 4, 376e9},          // NIC-bound: 8 x 47 < 370*8/7
		{"one GPU per node", 370e9, 47e9, 1, 16, 47e9},    // only the NIC
		{"intra-bound", 100e9, 47e9, 4, 2, 100e9 * 4 / 3}, // 133 < 4 x 47
		{"single domain", 370e9, 47e9, 8, 1, 370e9},
		{"PCIe node", 25.2e9, 47e9, 8, 2, 25.2e9}, // the NIC path shares the GPU's PCIe link
	}
	for _, c := range cases {
		s := shape{domains: c.doms, ppnMin: c.ppn, ppnMax: c.ppn, intraBW: c.intra, netBW: c.net, pcie: c.name == "PCIe node"}
		if got := s.ringBW(); math.Abs(got-c.want) > 1 {
			t.Errorf("%s: ringBW = %.4g, want %.4g", c.name, got, c.want)
		}
	}
}

// TestAutoIsMinimum: Auto returns the cheapest of the algorithms one can ask
// for by name (NCCL's selection rule, hardware-facts §3f).
func TestAutoIsMinimum(t *testing.T) {
	h := h100Node(t)
	h4 := h
	h4.n, h4.domains, h4.treeDeg = 32, 4, 4
	for _, sh := range []shape{h, h4} {
		g := shapeGroup(sh)
		for op := AllReduce; op < numOps; op++ {
			for b := 1.0; b <= 16*GiB; b *= 4 {
				auto, err := g.Cost(op, Auto, units.Bytes(b))
				if err != nil {
					t.Fatal(err)
				}
				best := engine.Forever
				for a := Ring; a < numAlgos; a++ {
					if a == Hierarchical {
						continue // never chosen by Auto
					}
					if c, err := g.Cost(op, a, units.Bytes(b)); err == nil && c.Time < best {
						best = c.Time
					}
				}
				if auto.Time != best {
					t.Errorf("%s n=%d %v B: auto %v, best named %v", op, sh.n, b, auto.Time, best)
				}
			}
		}
	}
}

// TestHierarchicalIsSumOfPhases: hierarchical all_reduce on 4x8 equals an
// intra-node reduce_scatter of S, an inter-node all_reduce of S/8 on 4 ranks
// and an intra-node all_gather of S, each priced as its own ring.
func TestHierarchicalIsSumOfPhases(t *testing.T) {
	h4 := h100Node(t)
	h4.n, h4.domains, h4.treeDeg = 32, 4, 4
	node := h100Node(t)
	rail := h4
	rail.n, rail.ppnMin, rail.ppnMax = 4, 1, 1
	for _, b := range []float64{64 * KiB, 16 * MiB, 4 * GiB} {
		got, err := shapeGroup(h4).Cost(AllReduce, Hierarchical, units.Bytes(b))
		if err != nil {
			t.Fatal(err)
		}
		rs, _ := shapeGroup(node).Cost(ReduceScatter, Ring, units.Bytes(b))
		ar, _ := shapeGroup(rail).Cost(AllReduce, Ring, units.Bytes(b/8))
		ag, _ := shapeGroup(node).Cost(AllGather, Ring, units.Bytes(b))
		if want := rs.Time + ar.Time + ag.Time; math.Abs(float64(got.Time-want)) > 3 {
			t.Errorf("%v B: hierarchical %v, phases %v+%v+%v", b, got.Time, rs.Time, ar.Time, ag.Time)
		}
	}
}

func TestCostErrors(t *testing.T) {
	h := h100Node(t)
	noNVLS := h
	noNVLS.nvlsBW = 0
	cases := []struct {
		sh    shape
		op    Op
		algo  Algo
		bytes float64
	}{
		{h, AllReduce, Direct, 1},         // direct does not reduce
		{h, Broadcast, Tree, 1},           // broadcast is ring only (NCCL)
		{h, AllToAll, Ring, 1},            // all_to_all is direct only
		{noNVLS, AllReduce, NVLS, 1},      // no NVLink SHARP
		{h, AllReduce, Auto, -1},          // negative size
		{h, AllReduce, Auto, math.NaN()},  // not a number
		{h, AllReduce, Auto, math.Inf(1)}, // not finite
		{h, numOps, Auto, 1},
		{h, AllReduce, numAlgos, 1},
	}
	for _, c := range cases {
		if _, err := shapeGroup(c.sh).Cost(c.op, c.algo, units.Bytes(c.bytes)); err == nil {
			t.Errorf("%s/%s %v: no error", c.op, c.algo, c.bytes)
		}
	}
	one := h
	one.n, one.ppnMin, one.ppnMax = 1, 1, 1
	if _, err := shapeGroup(one).Cost(Send, Auto, 1); err == nil {
		t.Error("send on one rank: no error")
	}
	// Nothing to move costs nothing.
	for _, c := range []struct {
		sh    shape
		bytes float64
	}{{one, GiB}, {h, 0}} {
		got, err := shapeGroup(c.sh).Cost(AllReduce, Auto, units.Bytes(c.bytes))
		if err != nil || got.Time != 0 || got.AlgBW != 0 || got.Algo != Ring {
			t.Errorf("n=%d %v B: %+v %v", c.sh.n, c.bytes, got, err)
		}
	}
}

// TestMonotone: more bytes never take less time, for every op and algorithm.
func TestMonotone(t *testing.T) {
	h := h100Node(t)
	h4 := h
	h4.n, h4.domains, h4.treeDeg = 32, 4, 4
	for _, sh := range []shape{h, h4} {
		g := shapeGroup(sh)
		for op := AllReduce; op < numOps; op++ {
			for a := Auto; a < numAlgos; a++ {
				var prev engine.Time
				for b := 1.0; b <= 64*GiB; b *= 1.5 {
					c, err := g.Cost(op, a, units.Bytes(b))
					if err != nil {
						break
					}
					if c.Time < prev {
						t.Errorf("%s/%s n=%d: %v B takes %v < %v", op, a, sh.n, b, c.Time, prev)
					}
					prev = c.Time
				}
			}
		}
	}
}

func TestCostAllocatesNothing(t *testing.T) {
	g := shapeGroup(h100Node(t))
	allocs := testing.AllocsPerRun(100, func() {
		for _, b := range []float64{1 * KiB, 1 * MiB, 1 * GiB} {
			if _, err := g.Cost(AllReduce, Auto, units.Bytes(b)); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs != 0 {
		t.Errorf("Cost allocates %v times per call", allocs)
	}
}
