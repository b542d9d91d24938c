package collectives

import (
	"fmt"
	"math"
	"testing"

	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/topology"
	"github.com/simtrain/simtrain/sim/units"
)

// cluster builds a cluster or fails the test.
func cluster(t testing.TB, s topology.Spec) *topology.Cluster {
	t.Helper()
	c, err := topology.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// allRanks is the group of every GPU of c.
func allRanks(t testing.TB, c *topology.Cluster) *Group {
	t.Helper()
	ranks := make([]int, c.NumGPUs())
	for i := range ranks {
		ranks[i] = i
	}
	g, err := NewGroup(c, ranks)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// sweep2c is hardware-facts §2c: all_reduce busbw (GB/s) on 8 GPUs, in-place,
// from the Azure AI-benchmarking-guide ([AZ-H100] with NVLS, [AZ-A100]).
// Sizes are powers of two (the guide's "65K", "33M", ... are 2^16, 2^25, ...).
var sweep2c = []struct {
	log2       int
	h100, a100 float64
}{
	{10, 0.07, 0.04}, {12, 0.27, 0.17}, {14, 0.95, 0.67}, {16, 2.72, 2.70},
	{18, 10.86, 10.11}, {20, 43.70, 36.22}, {21, 81.93, 53.54}, {22, 128.73, 71.43},
	{23, 172.13, 89.99}, {24, 234.45, 109.22}, {25, 295.53, 132.77}, {26, 361.78, 166.63},
	{27, 400.61, 174.18}, {28, 423.38, 213.87}, {29, 438.46, 221.58}, {30, 466.35, 228.10},
	{31, 472.36, 230.22}, {32, 475.54, 230.48}, {33, 478.87, 231.58},
}

// TestSweep2c is issue 2's first "must hold": all_reduce busbw on 8xH100 and
// 8xA100 (Auto) within 15% of the measured sweep from 1 MiB to 8 GiB and
// within 2x from 64 KiB to 1 MiB.
func TestSweep2c(t *testing.T) {
	for _, gpu := range []string{"h100-sxm", "a100-80gb"} {
		g := allRanks(t, cluster(t, topology.Spec{GPU: gpu, Nodes: 1}))
		worst := 0.0
		for _, row := range sweep2c {
			want := row.h100
			if gpu == "a100-80gb" {
				want = row.a100
			}
			bytes := math.Ldexp(1, row.log2)
			c, err := g.Cost(AllReduce, Auto, units.Bytes(bytes))
			if err != nil {
				t.Fatal(err)
			}
			got := float64(c.BusBW) / 1e9
			ratio := got / want
			switch {
			case row.log2 >= 20:
				worst = max(worst, math.Abs(ratio-1))
				if math.Abs(ratio-1) > 0.15 {
					t.Errorf("%s 2^%d B: busbw %.2f GB/s, measured %.2f (%+.1f%%, limit 15%%)", gpu, row.log2, got, want, (ratio-1)*100)
				}
			case row.log2 >= 16:
				if ratio < 0.5 || ratio > 2 {
					t.Errorf("%s 2^%d B: busbw %.2f GB/s, measured %.2f (x%.2f, limit 2x)", gpu, row.log2, got, want, ratio)
				}
			}
			t.Logf("%s %12.0f B  %9.2f µs  busbw %7.2f  measured %7.2f  %+6.1f%%  %s/%s", gpu, bytes, c.Time.Microseconds(), got, want, (ratio-1)*100, c.Algo, c.Proto)
		}
		t.Logf("%s: worst busbw error 1 MiB-8 GiB %.1f%%", gpu, worst*100)
	}
}

// TestLargeMessageBusBW is issue 2's second "must hold": large-message busbw
// within 10% of hardware-facts §2a/§2d.
func TestLargeMessageBusBW(t *testing.T) {
	cases := []struct {
		name   string
		spec   topology.Spec
		algo   Algo
		lo, hi float64 // measured range, GB/s
		source string
	}{
		{"8xH100 ring", topology.Spec{GPU: "h100-sxm", Nodes: 1}, Ring, 370, 370, "nccl-tests#212, nccl#1455"},
		{"8xH100 nvls", topology.Spec{GPU: "h100-sxm", Nodes: 1}, NVLS, 480, 480, "nccl-tests#212, [AZ-H100]"},
		{"8xH100 auto", topology.Spec{GPU: "h100-sxm", Nodes: 1}, Auto, 478.87, 478.87, "[AZ-H100]"},
		{"8xA100 auto", topology.Spec{GPU: "a100-80gb", Nodes: 1}, Auto, 231.58, 231.58, "[AZ-A100]"},
		{"8xA100 ring", topology.Spec{GPU: "a100-80gb", Nodes: 1}, Ring, 230, 230, "nccl-tests#175"},
		// DGX A100 with 8 HDR-200 NICs: "we measure 192GB/s AllReduce BusBW" (nccl#812).
		{"2xDGX A100 HDR ring", topology.Spec{GPU: "a100-80gb", Nodes: 2, NIC: "ib-hdr-200"}, Ring, 192, 192, "nccl#812"},
		{"4xDGX A100 HDR auto", topology.Spec{GPU: "a100-80gb", Nodes: 4, NIC: "ib-hdr-200"}, Auto, 192, 192, "nccl#812"},
		{"16xDGX A100 HDR auto", topology.Spec{GPU: "a100-80gb", Nodes: 16, NIC: "ib-hdr-200"}, Auto, 192, 192, "nccl#812"},
		// H100 with 8 NDR-400: 46-48 GB/s per NIC (nccl-tests#290, ring on 2 nodes).
		{"2xH100 NDR ring", topology.Spec{GPU: "h100-sxm", Nodes: 2, NIC: "ib-ndr-400"}, Ring, 370, 385, "nccl-tests#290"},
		{"4xH100 NDR auto", topology.Spec{GPU: "h100-sxm", Nodes: 4, NIC: "ib-ndr-400"}, Auto, 370, 385, "nccl-tests#290"},
		{"16xH100 NDR auto", topology.Spec{GPU: "h100-sxm", Nodes: 16, NIC: "ib-ndr-400"}, Auto, 370, 385, "nccl-tests#290"},
	}
	for _, c := range cases {
		g := allRanks(t, cluster(t, c.spec))
		cost, err := g.Cost(AllReduce, c.algo, 8*GiB)
		if err != nil {
			t.Fatal(err)
		}
		got := float64(cost.BusBW) / 1e9
		if got < 0.9*c.lo || got > 1.1*c.hi {
			t.Errorf("%s: busbw %.1f GB/s, measured %v-%v (%s), limit 10%%", c.name, got, c.lo, c.hi, c.source)
		}
		t.Logf("%-22s 8 GiB busbw %6.1f GB/s (%s/%s), measured %v-%v [%s]", c.name, got, cost.Algo, cost.Proto, c.lo, c.hi, c.source)
	}
}

// TestProfilesComplete: every catalog GPU and NIC has the communication
// parameters the model needs, each with sources.
func TestProfilesComplete(t *testing.T) {
	for _, name := range hardware.GPUNames() {
		g, err := hardware.LookupGPU(name)
		if err != nil {
			t.Fatal(err)
		}
		p := g.Comm
		problems := ""
		check := func(ok bool, what string) {
			if !ok {
				problems += " " + what
			}
		}
		check(p.Library != "", "Library")
		check(p.PCIeEfficiency > 0 && p.PCIeEfficiency <= 1, "PCIeEfficiency")
		if g.ScaleUp != "none" {
			check(p.RingEfficiency > 0 && p.RingEfficiency <= 1, "RingEfficiency")
			check(p.P2PEfficiency > 0 && p.P2PEfficiency <= 1, "P2PEfficiency")
		}
		check(!g.NVLS || (p.NVLSEfficiency > 0 && p.NVLSEfficiency <= 1 && p.NVLSChannels > 0), "NVLSEfficiency/NVLSChannels")
		check(p.LLFraction > 0 && p.LLMaxBW[0] > 0 && p.LLMaxBW[2] > 0, "LL")
		check(p.LL128Fraction >= 0 && p.LL128Fraction <= 1, "LL128Fraction")
		check(p.Channels > 0, "Channels")
		check(p.PerChannelTreeBW[2] > 0, "PerChannelTreeBW")
		check(p.BaseLatency.Ring.Simple > 0 && p.NVLinkLatency.Ring.Simple > 0 && p.NetLatency.Ring.Simple > 0, "latencies")
		// A zero RampTime is a measured "no ramp" (MI300X: AMD's RCCL sweep).
		check(p.NetOverhead > 0 && p.LaunchOverhead >= 0 && p.RampTime >= 0 && p.RampBytes > 0, "overheads")
		check(len(p.Sources) >= 8, "Sources")
		if problems != "" {
			t.Errorf("%s comm profile:%s", name, problems)
		}
	}
	for _, name := range hardware.NICNames() {
		n, err := hardware.LookupNIC(name)
		if err != nil {
			t.Fatal(err)
		}
		if e := n.Comm.Efficiency; !(e > 0 && e <= 1) || len(n.Comm.Sources) == 0 {
			t.Errorf("%s: NIC comm profile %+v", name, n.Comm)
		}
	}
}

// TestEveryGPUPrices: every catalog GPU on its default node prices every op
// with Auto, with busbw below its scale-up line rate (or PCIe for PCIe-only
// nodes) x the in-switch factor, and above zero.
func TestEveryGPUPrices(t *testing.T) {
	for _, name := range hardware.GPUNames() {
		c := cluster(t, topology.Spec{GPU: name, Nodes: 2})
		g := allRanks(t, c)
		for op := AllReduce; op < numOps; op++ {
			cost, err := g.Cost(op, Auto, 1*GiB)
			if err != nil {
				t.Errorf("%s %s: %v", name, op, err)
				continue
			}
			if !(cost.BusBW > 0) || float64(cost.BusBW) > 3*math.Max(float64(c.GPU.ScaleUpBandwidth), float64(c.GPU.PCIeBandwidth)) {
				t.Errorf("%s %s: busbw %.1f GB/s", name, op, cost.BusBW/1e9)
			}
		}
	}
}

func ExampleGroup_Cost() {
	c, _ := topology.Build(topology.Spec{GPU: "h100-sxm", Nodes: 1})
	g, _ := NewGroup(c, []int{0, 1, 2, 3, 4, 5, 6, 7})
	for _, algo := range []Algo{Ring, NVLS} {
		cost, _ := g.Cost(AllReduce, algo, 8<<30)
		fmt.Printf("%s/%s: %.0f µs, busbw %.0f GB/s\n", cost.Algo, cost.Proto, cost.Time.Microseconds(), cost.BusBW/1e9)
	}
	// Output:
	// ring/Simple: 40726 µs, busbw 369 GB/s
	// nvls/Simple: 31384 µs, busbw 479 GB/s
}

// TestMultiNodeNCCLTests holds the closed form to the published multi-node
// nccl-tests figures of host-and-scale-facts §2b (docs/validation.md,
// "Collectives across nodes"): small-message latencies within 1.5x and
// busbw within 25%. NCCL's own model is what is priced; these bound how
// far it is from what the machines measured.
func TestMultiNodeNCCLTests(t *testing.T) {
	cases := []struct {
		name      string
		spec      topology.Spec
		algo      Algo
		bytes     float64
		us, busbw float64 // measured: time (µs) or busbw (GB/s)
		source    string
	}{
		{"2x1 A100 HDR all_reduce 8 B", topology.Spec{GPU: "a100-80gb", Nodes: 2, GPUsPerNode: 1, NIC: "ib-hdr-200"}, Auto, 8, 19.90, 0, "nccl-tests#150"},
		{"2xDGX A100 ring all_reduce 8 B", topology.Spec{GPU: "a100-80gb", Nodes: 2, NIC: "ib-hdr-200"}, Ring, 8, 93.12, 0, "nccl#812"},
		{"3x8 A100 4xHDR all_reduce 128 MB", topology.Spec{GPU: "a100-40gb", Nodes: 3, NIC: "ib-hdr-200", NICsPerNode: 4}, Auto, 128 * MiB, 0, 96, "nccl-tests#119 (peak)"},
		{"2x1 H100 4 NICs tree 32 MiB", topology.Spec{GPU: "h100-sxm", Nodes: 2, GPUsPerNode: 1, NICsPerNode: 4}, Tree, 32 * MiB, 0, 41.52, "nccl-tests#232"},
		{"2x1 H100 4 NICs tree 2 MiB", topology.Spec{GPU: "h100-sxm", Nodes: 2, GPUsPerNode: 1, NICsPerNode: 4}, Tree, 2 * MiB, 0, 22.46, "nccl-tests#232"},
	}
	for _, c := range cases {
		g := allRanks(t, cluster(t, c.spec))
		cost, err := g.Cost(AllReduce, c.algo, units.Bytes(c.bytes))
		if err != nil {
			t.Fatal(err)
		}
		if c.us > 0 {
			got := cost.Time.Microseconds()
			if r := got / c.us; r < 1/1.5 || r > 1.5 {
				t.Errorf("%s: %.1f µs, measured %.1f µs (%s), limit 1.5x", c.name, got, c.us, c.source)
			}
			t.Logf("%-36s %8.1f µs  measured %8.1f  %+6.1f%%  %s/%s [%s]", c.name, got, c.us, (got/c.us-1)*100, cost.Algo, cost.Proto, c.source)
			continue
		}
		got := float64(cost.BusBW) / 1e9
		if r := got / c.busbw; r < 0.75 || r > 1.25 {
			t.Errorf("%s: busbw %.1f GB/s, measured %.1f (%s), limit 25%%", c.name, got, c.busbw, c.source)
		}
		t.Logf("%-36s busbw %6.1f GB/s  measured %6.1f  %+6.1f%%  %s/%s [%s]", c.name, got, c.busbw, (got/c.busbw-1)*100, cost.Algo, cost.Proto, c.source)
	}
}

// sweepMI300X is rccl-tests all_reduce_perf on one 8×MI300X node, busbw in
// GB/s: amd is AMD's "Understanding RCCL Bandwidth and xGMI Performance on
// AMD Instinct MI300X" (ROCm/rocm-blogs,
// blogs/software-tools-optimization/mi300x-rccl-xgmi/README.md, 2025-03-02;
// float sum, out-of-place, one process per GPU, no graphs; RCCL 2.22.3,
// ROCm 6.3.0); azure is the Azure AI-benchmarking-guide's ND MI300X v5
// (Azure_Results/ND_MI300X_v5_results.md, in-place, RCCL 2.22.3; its "65K",
// "33M" ... are 2^16, 2^25 ...), 0 where it stops at 8 GiB.
var sweepMI300X = []struct {
	log2       int
	amd, azure float64
}{
	{16, 8.33, 2.22}, {17, 16.22, 4.18}, {18, 27.20, 7.50}, {19, 37.59, 13.01}, {20, 66.93, 22.41},
	{21, 105.43, 43.41}, {22, 141.91, 82.53}, {23, 175.43, 131.57}, {24, 197.26, 171.46}, {25, 240.57, 230.35},
	{26, 273.66, 266.34}, {27, 294.55, 290.81}, {28, 305.62, 302.80}, {29, 310.46, 308.89}, {30, 314.72, 313.92},
	{31, 316.04, 315.06}, {32, 317.40, 314.85}, {33, 317.96, 316.82}, {34, 318.98, 0},
}

// TestSweepMI300X holds the MI300X (RCCL) all_reduce to AMD's 8-GPU sweep
// within 10% at every size from 64 KiB to 16 GiB (worst −6.1% at 16 MiB,
// −6.0% at 128 KiB), and to Azure's within 15% from 16 MiB (the sizes of FSDP's
// per-layer collectives), as TestSweep2c does for the NVIDIA sweeps;
// Azure's is 2-4x below AMD's under 8 MiB (SR-IOV virtual machines) and is
// not held there. From 512 KiB to 11 MiB RCCL runs MSCCL's all-pairs
// all_reduce (2 steps instead of the ring's 14); below, its LL variant. The
// model was 1.5-1.9x slow below 1 MiB while NCCL's fitted 12 µs launch was
// added to RCCL's base latency, which already carries it; with that launch
// gone the Simple ramp, which the 12 µs stood in for from 16 MiB up, is
// refitted on this sweep (20 µs over 20 MB; comm.launch_overhead and
// ramp_time in mi300x.yaml; TestSmallMI300X for the sizes below 64 KiB).
func TestSweepMI300X(t *testing.T) {
	g := allRanks(t, cluster(t, topology.Spec{GPU: "mi300x", Nodes: 1}))
	worst := 0.0
	for _, row := range sweepMI300X {
		bytes := math.Ldexp(1, row.log2)
		c, err := g.Cost(AllReduce, Auto, units.Bytes(bytes))
		if err != nil {
			t.Fatal(err)
		}
		got := float64(c.BusBW) / 1e9
		for _, m := range []struct {
			src  string
			want float64
		}{{"amd", row.amd}, {"azure", row.azure}} {
			if m.want == 0 {
				continue
			}
			ratio := got / m.want
			limit := 0.10
			if m.src == "azure" {
				if row.log2 < 24 {
					continue
				}
				limit = 0.15
			}
			worst = max(worst, math.Abs(ratio-1))
			if math.Abs(ratio-1) > limit {
				t.Errorf("%s 2^%d B: busbw %.2f GB/s, measured %.2f (%+.1f%%, limit %.0f%%)", m.src, row.log2, got, m.want, (ratio-1)*100, limit*100)
			}
		}
		t.Logf("mi300x %12.0f B  %9.2f µs  busbw %7.2f  amd %7.2f  azure %7.2f  %s/%s", bytes, float64(c.Time.Microseconds()), got, row.amd, row.azure, c.Algo, c.Proto)
	}
	t.Logf("mi300x: worst busbw error (AMD from 64 KiB, Azure from 16 MiB) %.1f%%", worst*100)
}

// TestAllPairsMI300X checks RCCL's MSCCL all-pairs all_reduce by hand on 8
// MI300X (no launch cost on top of RCCL's base latency; RCCL base 12 µs LL,
// 17 µs Simple; XGMI hop 0.8 µs LL, 2.1 µs Simple; ring rate 318.98 GB/s,
// LL half of it; bus bytes 2·7/8 of the size; Simple ramp 20 µs over 20 MB
// of bus bytes): 2 hops instead of the
// ring's 14, LL to 524,287 B, Simple to 11,534,336 B, the ring beyond; only
// on element counts MSCCL's nchunksperloop divides (4-byte elements); never
// on other groups.
func TestAllPairsMI300X(t *testing.T) {
	mi := allRanks(t, cluster(t, topology.Spec{GPU: "mi300x", Nodes: 1}))
	mi4, err := NewGroup(cluster(t, topology.Spec{GPU: "mi300x", Nodes: 1}), []int{0, 1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	mi16 := allRanks(t, cluster(t, topology.Spec{GPU: "mi300x", Nodes: 2}))
	h100 := allRanks(t, cluster(t, topology.Spec{GPU: "h100-sxm", Nodes: 1}))
	const bw = 318.98e9
	for _, c := range []struct {
		name  string
		g     *Group
		bytes float64
		algo  Algo
		proto Proto
		us    float64 // hand-computed time; 0: only the algorithm is checked
	}{
		{"1 KiB, 256 floats: the smallest count the LL XML takes", mi, 1024, Direct, LL, 12 + 2*0.8 + 1024*1.75/(bw/2)*1e6}, // 13.61
		{"64 KiB, LL", mi, 65536, Direct, LL, 12 + 2*0.8 + 65536*1.75/(bw/2)*1e6},                                           // 14.32
		{"524,288 - 2,048 B, LL (512 floats a loop)", mi, 522240, Direct, LL, 12 + 2*0.8 + 522240*1.75/(bw/2)*1e6},          // 19.33
		{"512 KiB, Simple", mi, 524288, Direct, Simple, 17 + 2*2.1 + 524288*1.75/bw*1e6 + 20*524288*1.75/20e6},              // 25.00
		{"4 MiB, Simple", mi, 4 << 20, Direct, Simple, 17 + 2*2.1 + 4194304*1.75/bw*1e6 + 20*4194304*1.75/20e6},             // 51.55
		{"11 MiB, last all-pairs size", mi, 11534336, Direct, Simple, 17 + 2*2.1 + 11534336*1.75/bw*1e6 + 20},               // ramp full from 20 MB of bus bytes
		{"11 MiB + 2 KiB: the ring", mi, 11534336 + 2048, Ring, Simple, 17 + 14*2.1 + 11536384*1.75/bw*1e6 + 20},            // 129.69
		{"4 ranks: no all-pairs XML", mi4, 4 << 20, Ring, 0, 0},
		{"2 nodes: not one XGMI mesh", mi16, 4 << 20, Ring, 0, 0},
		{"NCCL: no MSCCL", h100, 4 << 20, Ring, 0, 0},
		{"512 B: 128 floats, not a multiple of 256", mi, 512, Ring, 0, 0},
		{"1,028 B: 257 floats", mi, 1028, Ring, 0, 0},
		{"66,560 B: 16,640 floats, not a multiple of 512", mi, 66560, Ring, 0, 0},
		{"4 MiB + 1 KiB: not a multiple of 512 floats", mi, 4<<20 + 1024, Ring, 0, 0},
	} {
		got, err := c.g.Cost(AllReduce, Auto, units.Bytes(c.bytes))
		if err != nil {
			t.Fatal(err)
		}
		if c.us == 0 {
			if got.Algo == Direct {
				t.Errorf("%s: all_reduce picked %s/%s, want no all-pairs", c.name, got.Algo, got.Proto)
			}
			continue
		}
		us := float64(got.Time) / 1e3
		if got.Algo != c.algo || got.Proto != c.proto || math.Abs(us-c.us) > 0.01 {
			t.Errorf("%s: %s/%s %.3f µs, want %s/%s %.3f µs", c.name, got.Algo, got.Proto, us, c.algo, c.proto, c.us)
		}
	}
}

// smallMI300X is AMD's rccl-tests all_reduce_perf on 8×MI300X below 64 KiB,
// out-of-place time in µs, no graphs (the sweepMI300X source: AMD,
// "Understanding RCCL Bandwidth and xGMI Performance on AMD Instinct
// MI300X", ROCm/rocm-blogs, 2025-03-02; float sum, RCCL 2.22.3, ROCm 6.3.0).
// 8-64 B (16.1-17.9 µs, 2-16 floats, fewer than one per rank per channel)
// are left out: RCCL's path for them is not modelled.
var smallMI300X = []struct{ bytes, us float64 }{
	{128, 22.94}, {256, 22.93}, {512, 22.91},
	{1024, 13.11}, {2048, 13.09}, {4096, 13.27}, {8192, 13.30}, {16384, 13.54}, {32768, 13.31},
}

// TestSmallMI300X prices small all_reduces on 8 MI300X once: RCCL's base
// latency (12 µs LL, ROCm/rccl tuning.cc) is what AMD's sweep measures
// without graphs, so no launch cost is added to it. From 1 KiB (256 floats,
// the count MSCCL's LL all-pairs XML needs) the collective is all-pairs:
// 12 + 2·0.8 µs plus 1.75·S at 159.49 GB/s; at 128-512 B MSCCL declines and
// RCCL's ring LL runs 14 XGMI hops: 12 + 14·0.8 µs plus 1.75·S at NCCL's
// one-node LL cap (87.7 GB/s, AMD host) on the fewest threads NCCL keeps
// (64 of 24 channels × 512). Both within 10% of every measured row (the
// launch cost NCCL's sweeps fit, 12 µs, added to them made 1-32 KiB
// 1.9-2.0x slow).
func TestSmallMI300X(t *testing.T) {
	g := allRanks(t, cluster(t, topology.Spec{GPU: "mi300x", Nodes: 1}))
	const frac = 64.0 / (24 * 512)
	for _, c := range []struct {
		bytes, us float64
	}{
		{512, 12 + 14*0.8 + 512*1.75/(87.7e9*frac)*1e6}, // 25.16
		{1024, 12 + 2*0.8 + 1024*1.75/(318.98e9/2)*1e6}, // 13.61
	} {
		got, err := g.Cost(AllReduce, Auto, units.Bytes(c.bytes))
		if err != nil {
			t.Fatal(err)
		}
		if us := float64(got.Time) / 1e3; math.Abs(us-c.us) > 0.01 {
			t.Errorf("%.0f B: %.3f µs (%s/%s), hand-computed %.3f µs", c.bytes, us, got.Algo, got.Proto, c.us)
		}
	}
	for _, m := range smallMI300X {
		got, err := g.Cost(AllReduce, Auto, units.Bytes(m.bytes))
		if err != nil {
			t.Fatal(err)
		}
		us := float64(got.Time) / 1e3
		if r := us / m.us; math.Abs(r-1) > 0.10 {
			t.Errorf("%.0f B: %.2f µs (%s/%s), AMD measured %.2f µs (x%.2f, limit 10%%)", m.bytes, us, got.Algo, got.Proto, m.us, r)
		}
		t.Logf("mi300x %6.0f B  %6.2f µs  measured %6.2f  x%.3f  %s/%s", m.bytes, us, m.us, us/m.us, got.Algo, got.Proto)
	}
}
