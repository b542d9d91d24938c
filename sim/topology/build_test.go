package topology

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/units"
)

func mustBuild(t testing.TB, s Spec) *Cluster {
	t.Helper()
	c, err := Build(s)
	if err != nil {
		t.Fatalf("Build(%+v): %v", s, err)
	}
	return c
}

func deviceCounts(c *Cluster) map[string]int {
	m := map[string]int{}
	for _, d := range c.Devices() {
		m[d.Kind.String()]++
	}
	return m
}

// tier returns the summary's LinkCount for a tier name (zero if absent).
func tier(s Summary, name string) LinkCount {
	for _, l := range s.Links {
		if l.Tier == name {
			return l
		}
	}
	return LinkCount{}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

// One DGX H100: 8 GPUs on one logical NVSwitch, 4 PCIe switches (2 GPUs + 2
// NICs each), 8 NDR NICs, one rail leaf per NIC and leaves/2 = 4 spines.
func TestBuildDGXH100(t *testing.T) {
	c := mustBuild(t, Spec{GPU: "h100-sxm", Nodes: 1})
	want := map[string]int{"gpu": 8, "nvswitch": 1, "pcie-switch": 4, "host": 1, "nic": 8, "leaf": 8, "spine": 4}
	if got := deviceCounts(c); !reflect.DeepEqual(got, want) {
		t.Errorf("devices %v, want %v", got, want)
	}
	s := c.Summary()
	// Links (cables) by tier: 8 NVLink, 8 GPU-PCIe, 4 PCIe-host, 8 PCIe-NIC,
	// 8 NIC-leaf; each leaf's 32 uplinks spread over 4 spines = 8 cables per
	// pair, merged: 32 links standing for 256 cables of 50 GB/s.
	for _, w := range []LinkCount{
		{Tier: "gpu-nvswitch", Kind: "nvlink", Links: 8, Cables: 8, BytesPerSPerLink: 450e9, TotalBytesPerS: 3.6e12},
		{Tier: "gpu-pcie-switch", Kind: "pcie", Links: 8, Cables: 8, BytesPerSPerLink: 63e9, TotalBytesPerS: 504e9},
		{Tier: "pcie-switch-host", Kind: "pcie", Links: 4, Cables: 4, BytesPerSPerLink: 63e9, TotalBytesPerS: 252e9},
		{Tier: "pcie-switch-nic", Kind: "pcie", Links: 8, Cables: 8, BytesPerSPerLink: 63e9, TotalBytesPerS: 504e9},
		{Tier: "nic-leaf", Kind: "network", Links: 8, Cables: 8, BytesPerSPerLink: 50e9, TotalBytesPerS: 400e9},
		{Tier: "leaf-spine", Kind: "network", Links: 32, Cables: 256, BytesPerSPerLink: 400e9, TotalBytesPerS: 12.8e12},
	} {
		if got := tier(s, w.Tier); got != w {
			t.Errorf("tier %s = %+v, want %+v", w.Tier, got, w)
		}
	}
	// Bisection, GPUs 0-3 vs 4-7 (max flow, by hand):
	//   NVSwitch: 4 × 450 GB/s = 1800 GB/s;
	//   PCIe: GPUs 0-3 leave through 4 GPU→switch links of 63 GB/s = 252; their
	//   switches forward it over 4 NICs (200) plus 2 host uplinks (126), and
	//   the other half receives it the same way (4 × 63 = 252 into GPUs 4-7).
	//   Total 1800 + 252 = 2052 GB/s.
	// Network bisection: only NICs 0-3 lead out of the first half: 4 × 50 = 200.
	if !near(s.BisectionBytesPerS, 2052e9) || !near(s.NetworkBisectionBytesPerS, 200e9) {
		t.Errorf("bisection %g / network %g, want 2.052e12 / 2e11", s.BisectionBytesPerS, s.NetworkBisectionBytesPerS)
	}
	if s.DiameterHops != 2 || s.NetworkTiers != 2 || s.Domains != 1 {
		t.Errorf("diameter %d tiers %d domains %d, want 2, 2, 1", s.DiameterHops, s.NetworkTiers, s.Domains)
	}
	if c.NICBandwidthPerGPU() != 50e9 || !c.NVLS() {
		t.Errorf("NICBandwidthPerGPU %g NVLS %v", c.NICBandwidthPerGPU(), c.NVLS())
	}
}

// Four DGX H100 on a rail-optimized fabric: one (partial) SU, 8 rail leaves
// each serving NIC r of the 4 nodes, 4 spines.
func TestBuildRail4Nodes(t *testing.T) {
	c := mustBuild(t, Spec{GPU: "h100-sxm", Nodes: 4})
	want := map[string]int{"gpu": 32, "nvswitch": 4, "pcie-switch": 16, "host": 4, "nic": 32, "leaf": 8, "spine": 4}
	if got := deviceCounts(c); !reflect.DeepEqual(got, want) {
		t.Errorf("devices %v, want %v", got, want)
	}
	for i := range 32 {
		// NIC i (node i/8, rail i%8) is on leaf i%8.
		if got := c.l.nicLeaf[i]; got != int32(i%8) {
			t.Errorf("NIC %d on leaf %d, want %d", i, got, i%8)
		}
	}
	s := c.Summary()
	// Halves are nodes {0,1} and {2,3}: 16 NICs × 50 GB/s cross; the leaves'
	// 8 × 32 × 50 GB/s of uplinks do not limit it.
	if !near(s.BisectionBytesPerS, 800e9) || !near(s.NetworkBisectionBytesPerS, 800e9) {
		t.Errorf("bisection %g / %g, want 8e11", s.BisectionBytesPerS, s.NetworkBisectionBytesPerS)
	}
	// Farthest GPUs: different nodes and rails, 8 links (PXN: NVLink 2 +
	// PCIe 2 + leaf 2 + PCIe 2, or via a spine: PCIe 2 + 4 + PCIe 2).
	if s.DiameterHops != 8 {
		t.Errorf("diameter %d, want 8", s.DiameterHops)
	}
}

// Two-tier SuperPOD sizes (hardware-facts §6a, B200 RA table).
func TestBuildRailTwoTierSizes(t *testing.T) {
	for _, r := range []struct {
		nodes, leaves, spines, leafSpineCables, leafSpineLinks int
	}{
		{64, 16, 8, 512, 128},    // 2 SU: 4 cables per leaf–spine pair
		{128, 32, 16, 1024, 512}, // 4 SU: 2 cables per pair
		{256, 64, 32, 2048, 2048},
	} {
		c := mustBuild(t, Spec{GPU: "b200", Nodes: r.nodes})
		d := deviceCounts(c)
		s := c.Summary()
		ls := tier(s, "leaf-spine")
		if d["leaf"] != r.leaves || d["spine"] != r.spines || d["core"] != 0 || ls.Cables != r.leafSpineCables || ls.Links != r.leafSpineLinks ||
			tier(s, "nic-leaf").Cables != r.nodes*8 || s.NetworkTiers != 2 {
			t.Errorf("%d nodes: leaves %d spines %d cores %d leaf-spine %+v tiers %d, want %+v", r.nodes, d["leaf"], d["spine"], d["core"], ls, s.NetworkTiers, r)
		}
	}
}

// 64 SUs = 2048 DGX H100 = 16,384 GPUs: three tiers with the §6a counts,
// 512 leaves, 512 spines, 256 cores, 16,384 cables on every tier. The 64
// parallel cables between a spine and the 8 cores of its plane are merged
// 4 per link (4096 spine–core links of 200 GB/s).
func TestBuildRail16K(t *testing.T) {
	c := mustBuild(t, Spec{GPU: "h100-sxm", Nodes: 2048})
	d := deviceCounts(c)
	if d["leaf"] != 512 || d["spine"] != 512 || d["core"] != 256 || d["gpu"] != 16384 {
		t.Errorf("devices %v", d)
	}
	s := c.Summary()
	for _, w := range []LinkCount{
		{Tier: "nic-leaf", Kind: "network", Links: 16384, Cables: 16384, BytesPerSPerLink: 50e9, TotalBytesPerS: 16384 * 50e9},
		{Tier: "leaf-spine", Kind: "network", Links: 16384, Cables: 16384, BytesPerSPerLink: 50e9, TotalBytesPerS: 16384 * 50e9},
		{Tier: "spine-core", Kind: "network", Links: 4096, Cables: 16384, BytesPerSPerLink: 200e9, TotalBytesPerS: 16384 * 50e9},
	} {
		if got := tier(s, w.Tier); got != w {
			t.Errorf("tier %s = %+v, want %+v", w.Tier, got, w)
		}
	}
	// Non-blocking: half the NICs at line rate, 8192 × 50 GB/s = 409.6 TB/s.
	if !near(s.BisectionBytesPerS, 8192*50e9) || s.NetworkTiers != 3 || s.Pods != 16 {
		t.Errorf("bisection %g tiers %d pods %d", s.BisectionBytesPerS, s.NetworkTiers, s.Pods)
	}
	// NIC-PCIe 2 + leaf-spine-core-spine-leaf 6 + 2 = 10 links.
	if s.DiameterHops != 10 {
		t.Errorf("diameter %d, want 10", s.DiameterHops)
	}
}

// Meta's Llama 3 cluster (hardware-facts §6b): 24,576 H100, 3,072-GPU pods
// (192 racks of 2 nodes), 1:7 above the pods.
func TestBuildLlamaClos(t *testing.T) {
	c := mustBuild(t, Spec{GPU: "h100-sxm", Nodes: 3072, Network: "clos", NIC: "roce-400", PodGPUs: 3072, Oversubscription: 7})
	d := deviceCounts(c)
	// 1536 ToRs, 8 pods × 16 CTSW planes, one logical ATSW per plane.
	if d["leaf"] != 1536 || d["spine"] != 128 || d["core"] != 16 {
		t.Errorf("devices %v", d)
	}
	s := c.Summary()
	// The halves are pods 0-3 and 4-7. Inside a pod everything is 1:1; each
	// pod's spines send up (192 ToRs × 50 GB/s × 16 planes) / 7, so the cut
	// is 4 × 3072 × 50e9 / 7 = 87.77 TB/s (the NIC tier would allow 614 TB/s).
	want := 4 * 3072 * 50e9 / 7
	if !near(s.BisectionBytesPerS, want) || s.Pods != 8 || s.NetworkTiers != 3 {
		t.Errorf("bisection %g (want %g) pods %d tiers %d", s.BisectionBytesPerS, want, s.Pods, s.NetworkTiers)
	}
	sc := tier(s, "spine-core")
	// 192 ToR links of 50 GB/s per spine, /7 = 1.371 TB/s per uplink, 28 cables.
	if sc.Links != 128 || !near(sc.BytesPerSPerLink, 192*50e9/7) || sc.Cables != 128*28 {
		t.Errorf("spine-core %+v", sc)
	}
}

// The Llama 3 405B run used 16,384 GPUs of the 3,072-GPU-pod cluster: five
// full pods and a partial sixth of 1,024 GPUs, whose uplinks scale with its
// 64 ToRs instead of 192.
func TestBuildPartialPod(t *testing.T) {
	c := mustBuild(t, Spec{GPU: "h100-sxm", Nodes: 2048, Network: "clos", NIC: "roce-400", PodGPUs: 3072, Oversubscription: 7})
	s := c.Summary()
	if s.Pods != 6 {
		t.Fatalf("pods %d, want 6", s.Pods)
	}
	full, partial := 0, 0
	for _, l := range c.Links() {
		if c.Devices()[l.From].Kind == KindSpine && c.Devices()[l.To].Kind == KindCore {
			switch {
			case near(float64(l.Bandwidth), 192*50e9/7):
				full++
			case near(float64(l.Bandwidth), 64*50e9/7):
				partial++
			default:
				t.Fatalf("spine-core link of %g B/s", l.Bandwidth)
			}
		}
	}
	if full != 5*16 || partial != 16 {
		t.Errorf("spine-core links: %d full-pod, %d partial-pod; want 80 and 16", full, partial)
	}
}

// GB200 NVL72: 18 trays × 4 GPUs form one NVLink domain on one logical switch.
func TestBuildNVL72(t *testing.T) {
	c := mustBuild(t, Spec{GPU: "gb200", Nodes: 18})
	if c.NumGPUs() != 72 || c.GPUsPerNode() != 4 || c.Domains() != 1 {
		t.Fatalf("gpus %d gpn %d domains %d", c.NumGPUs(), c.GPUsPerNode(), c.Domains())
	}
	for r := range 72 {
		if c.DomainOf(r) != 0 || c.NodeOf(r) != r/4 {
			t.Fatalf("rank %d: domain %d node %d", r, c.DomainOf(r), c.NodeOf(r))
		}
	}
	if got := deviceCounts(c)["nvswitch"]; got != 1 {
		t.Errorf("%d NVSwitch devices, want 1", got)
	}
	route := c.AppendRoute(nil, 0, 71, 0)
	if len(route) != 2 || c.Links()[route[0]].Bandwidth != 900e9 || c.Links()[route[0]].Kind != LinkNVLink {
		t.Errorf("route 0→71 %v", route)
	}
	s := c.Summary()
	// Ranks 0-35 vs 36-71: 36 × 900 GB/s through the NVLink switch plus the
	// 36 NICs of the first 9 trays at 50 GB/s = 32.4 + 1.8 TB/s.
	if !near(s.BisectionBytesPerS, 36*900e9+36*50e9) || !near(s.NetworkBisectionBytesPerS, 36*50e9) {
		t.Errorf("bisection %g / %g", s.BisectionBytesPerS, s.NetworkBisectionBytesPerS)
	}
	// Two racks: the second is domain 1 and is reached over the network.
	c2 := mustBuild(t, Spec{GPU: "gb200", Nodes: 36})
	if c2.Domains() != 2 || c2.DomainOf(71) != 0 || c2.DomainOf(72) != 1 {
		t.Errorf("domains %d, DomainOf(71)=%d DomainOf(72)=%d", c2.Domains(), c2.DomainOf(71), c2.DomainOf(72))
	}
	if n := c2.RouteHops(0, 72); n != 6 {
		t.Errorf("0→72 %d hops, want 6 (PCIe, NIC, leaf, NIC, PCIe)", n)
	}
}

func TestBuildDefaultsFilled(t *testing.T) {
	c := mustBuild(t, Spec{GPU: "a100-80gb", Nodes: 2, NIC: "ib-hdr-200"})
	want := Spec{GPU: "a100-80gb", Nodes: 2, GPUsPerNode: 8, IntraNode: "nvswitch", Network: "rail-optimized",
		NIC: "ib-hdr-200", NICGbps: 200, NICsPerNode: 8, Oversubscription: 1}
	if !reflect.DeepEqual(c.Spec, want) {
		t.Errorf("Spec %+v, want %+v", c.Spec, want)
	}
	c = mustBuild(t, Spec{GPU: "h100-sxm", Nodes: 1, NICGbps: 200, NICsPerNode: 4})
	// 4 NICs × 25 GB/s / 8 GPUs.
	if c.NIC.Bandwidth != 25e9 || c.NICBandwidthPerGPU() != 12.5e9 {
		t.Errorf("NIC %g per GPU %g", c.NIC.Bandwidth, c.NICBandwidthPerGPU())
	}
}

func TestBuildErrors(t *testing.T) {
	for _, r := range []struct {
		spec        Spec
		field, want string
	}{
		{Spec{GPU: "h1000", Nodes: 1}, "cluster.gpu", "valid: a100-40gb, a100-80gb, b200"},
		{Spec{GPU: "h100-sxm"}, "cluster.nodes", "> 0"},
		{Spec{GPU: "h100-sxm", Nodes: -3}, "cluster.nodes", "> 0"},
		{Spec{GPU: "h100-sxm", Nodes: 1, GPUsPerNode: -1}, "cluster.gpus_per_node", "between 1 and"},
		{Spec{GPU: "h100-sxm", Nodes: 1, IntraNode: "ring"}, "cluster.intra_node", "valid: nvswitch, pcie, nvlink-pairs, nvlink-mesh"},
		{Spec{GPU: "l40s", Nodes: 1, IntraNode: "nvlink-mesh"}, "cluster.intra_node", "valid for l40s: pcie"},
		{Spec{GPU: "h100-pcie", Nodes: 1, IntraNode: "nvlink-mesh"}, "cluster.intra_node", "valid for h100-pcie: nvlink-pairs, pcie"},
		{Spec{GPU: "h200", Nodes: 1, GPUsPerNode: 8, IntraNode: "nvlink-mesh"}, "cluster.gpus_per_node", "4-GPU h200 board directly: 2 to 4 GPUs, got 8"},
		{Spec{GPU: "h200", Nodes: 1, GPUsPerNode: 1, IntraNode: "nvlink-mesh"}, "cluster.gpus_per_node", "2 to 4 GPUs, got 1"},
		{Spec{GPU: "mi300x", Nodes: 1, GPUsPerNode: 16, IntraNode: "nvlink-mesh"}, "cluster.gpus_per_node", "2 to 8 GPUs, got 16"},
		{Spec{GPU: "l40s", Nodes: 1, IntraNode: "nvswitch"}, "cluster.intra_node", "valid for l40s: pcie"},
		{Spec{GPU: "h100-sxm", Nodes: 1, IntraNode: "nvlink-pairs"}, "cluster.intra_node", "valid for h100-sxm: nvswitch, pcie, nvlink-mesh"},
		{Spec{GPU: "h100-pcie", Nodes: 1, GPUsPerNode: 3}, "cluster.gpus_per_node", "even"},
		{Spec{GPU: "gb200", Nodes: 1, GPUsPerNode: 5}, "cluster.gpus_per_node", "72-GPU NVLink domain"},
		{Spec{GPU: "h100-sxm", Nodes: 1, Network: "torus"}, "cluster.network.kind", "valid: rail-optimized, fat-tree, clos, single-switch"},
		{Spec{GPU: "h100-sxm", Nodes: 1, NIC: "ib-edr"}, "cluster.network.nic", "valid: eth-100, ib-hdr-200"},
		{Spec{GPU: "h100-sxm", Nodes: 1, NICGbps: -1}, "cluster.network.nic_gbps", "between 0 and"},
		{Spec{GPU: "h100-sxm", Nodes: 1, NICGbps: math.NaN()}, "cluster.network.nic_gbps", "between 0 and"},
		{Spec{GPU: "h100-sxm", Nodes: 1, NICsPerNode: 3}, "cluster.network.nics_per_node", "divide or be a multiple"},
		{Spec{GPU: "h100-sxm", Nodes: 1, NICsPerNode: 64}, "cluster.network.nics_per_node", "between 1 and 32"},
		{Spec{GPU: "h100-sxm", Nodes: 1, Oversubscription: 0.5}, "cluster.network.oversubscription", ">= 1"},
		{Spec{GPU: "h100-sxm", Nodes: 1, Oversubscription: math.Inf(1)}, "cluster.network.oversubscription", ">= 1"},
		{Spec{GPU: "h100-sxm", Nodes: 4, PodGPUs: 24}, "cluster.network.pod_gpus", "multiple of"},
		{Spec{GPU: "h100-sxm", Nodes: 4, PodGPUs: 64}, "cluster.network.pod_gpus", "exceeds"},
		{Spec{GPU: "h100-sxm", Nodes: 4, PodGPUs: -8}, "cluster.network.pod_gpus", ">= 0"},
		{Spec{GPU: "h100-sxm", Nodes: 64, PodGPUs: 128}, "cluster.network.pod_gpus", "multiple of 256 GPUs"},
		{Spec{GPU: "h100-sxm", Nodes: 8, Network: "clos", PodGPUs: 64, Oversubscription: 7}, "cluster.network.oversubscription", "whole cluster"},
		{Spec{GPU: "h100-sxm", Nodes: 8, Network: "single-switch", PodGPUs: 16}, "cluster.network.pod_gpus", "single-switch"},
		{Spec{GPU: "h100-sxm", Nodes: 8, Network: "single-switch", Oversubscription: 2}, "cluster.network.oversubscription", "single-switch"},
		{Spec{GPU: "h100-sxm", Nodes: 4, Network: "fat-tree", Oversubscription: 3}, "cluster.network.oversubscription", "single leaf"},
		{Spec{GPU: "h100-sxm", Nodes: 100000}, "cluster.nodes", "131072"},
		{Spec{GPU: "h100-sxm", Nodes: 16384}, "cluster.nodes", "pod_gpus"},
	} {
		_, err := Build(r.spec)
		var se *SpecError
		if !errors.As(err, &se) {
			t.Errorf("Build(%+v) = %v, want a *SpecError", r.spec, err)
			continue
		}
		if se.Field != r.field || !strings.Contains(err.Error(), r.want) || !strings.HasPrefix(err.Error(), r.field+": ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("Build(%+v) = %q, want field %s and %q", r.spec, err, r.field, r.want)
		}
	}
}

// specsSmall covers every builder and intra-node kind on clusters small
// enough for all-pairs checks.
var specsSmall = []Spec{
	{GPU: "h100-sxm", Nodes: 1},
	{GPU: "h100-sxm", Nodes: 3},
	{GPU: "h100-sxm", Nodes: 40},                 // two SUs, second partial
	{GPU: "h100-sxm", Nodes: 6, NICsPerNode: 2},  // 4 GPUs per NIC and PCIe switch
	{GPU: "h100-sxm", Nodes: 4, NICsPerNode: 16}, // 2 NICs per GPU
	{GPU: "h100-sxm", Nodes: 10, Network: "fat-tree"},
	{GPU: "h100-sxm", Nodes: 9, Network: "fat-tree", Oversubscription: 3},
	{GPU: "h100-sxm", Nodes: 12, Network: "clos", PodGPUs: 32, Oversubscription: 7},
	{GPU: "h100-sxm", Nodes: 5, Network: "clos"},
	{GPU: "h100-sxm", Nodes: 7, Network: "single-switch"},
	{GPU: "h100-sxm", Nodes: 64, Network: "rail-optimized", PodGPUs: 256, Oversubscription: 2},
	{GPU: "h100-sxm", Nodes: 2, IntraNode: "pcie"},
	{GPU: "h100-pcie", Nodes: 3},
	{GPU: "h200", Nodes: 3, GPUsPerNode: 4, IntraNode: "nvlink-mesh"}, // HGX H200 4-GPU boards
	{GPU: "h100-pcie", Nodes: 2, Network: "fat-tree", NICsPerNode: 4},
	{GPU: "l40s", Nodes: 3, NICsPerNode: 1},
	{GPU: "l40s", Nodes: 2, GPUsPerNode: 3, NICsPerNode: 3},
	{GPU: "gb200", Nodes: 20},
	{GPU: "mi300x", Nodes: 3},
	{GPU: "a100-80gb", Nodes: 2, GPUsPerNode: 4, Network: "single-switch"},
	{GPU: "h100-sxm", Nodes: 130, GPUsPerNode: 1, NICsPerNode: 1, Network: "fat-tree"}, // 5 leaves, 2 tiers
}

// Every cluster passes gonum's checks (connected, no duplicate cables), and
// DomainOf agrees with the connected components left when network links are
// removed (the BFS definition of a scale-up domain).
func TestValidateAndDomains(t *testing.T) {
	for _, s := range specsSmall {
		c := mustBuild(t, s)
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", s, err)
		}
		dist, queue := make([]int32, len(c.Devices())), make([]int32, len(c.Devices()))
		for r := 0; r < c.NumGPUs(); r += max(1, c.GPUsPerNode()-1) {
			c.bfs(int32(r), dist, queue, true)
			for o := range c.NumGPUs() {
				if (dist[o] >= 0) != (c.DomainOf(o) == c.DomainOf(r)) {
					t.Fatalf("%+v: ranks %d and %d: reachable without network %v, DomainOf %d/%d", s, r, o, dist[o] >= 0, c.DomainOf(r), c.DomainOf(o))
				}
			}
		}
	}
}

// Every GPU shares a PCIe switch with each of its NICs, whatever the ratio.
func TestNICsOnTheirGPUsSwitch(t *testing.T) {
	for _, r := range [][2]int{{8, 8}, {8, 4}, {8, 2}, {8, 1}, {8, 16}, {4, 4}, {3, 3}, {3, 6}, {3, 1}, {1, 1}, {1, 4}, {16, 32}, {6, 2}, {6, 3}} {
		g, n := r[0], r[1]
		c := mustBuild(t, Spec{GPU: "l40s", Nodes: 1, GPUsPerNode: g, NICsPerNode: n})
		for local := range g {
			gs := c.Links()[up(c.l.cGPUPCIe+int32(local))].To
			for m := range n {
				owns := (n >= g && m/(n/g) == local) || (n < g && m == local/(g/n))
				if !owns {
					continue
				}
				if ns := c.Links()[up(c.l.cPCIeNIC+int32(m))].From; ns != gs {
					t.Errorf("g=%d n=%d: GPU %d on %s, its NIC %d on %s", g, n, local, c.Devices()[gs].Name, m, c.Devices()[ns].Name)
				}
			}
		}
	}
}

func TestBuildDeterministic(t *testing.T) {
	s := Spec{GPU: "h100-sxm", Nodes: 300, Network: "fat-tree"}
	a, b := mustBuild(t, s), mustBuild(t, s)
	if !reflect.DeepEqual(a, b) {
		t.Error("two builds of one spec differ")
	}
	da, err := a.DOT()
	if err != nil {
		t.Fatal(err)
	}
	db, _ := b.DOT()
	if string(da) != string(db) {
		t.Error("DOT output differs between builds")
	}
}

func TestDOT(t *testing.T) {
	c := mustBuild(t, Spec{GPU: "h100-sxm", Nodes: 1})
	out, err := c.DOT()
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{"graph cluster {", `"n0/gpu0" [kind=gpu];`, `"domain0/nvswitch" [kind=nvswitch];`, `"n0/gpu0" -- "domain0/nvswitch" [`, "gbytes_per_s=450", "cables=8"} {
		if !strings.Contains(s, want) {
			t.Errorf("DOT lacks %q:\n%s", want, s)
		}
	}
	if g := c.Graph(); g.Nodes().Len() != len(c.Devices()) || g.Edges().Len() != len(c.Links())/2 {
		t.Errorf("Graph has %d nodes %d edges", g.Nodes().Len(), g.Edges().Len())
	}
}

func TestBandwidthsLatencies(t *testing.T) {
	c := mustBuild(t, Spec{GPU: "a100-40gb", Nodes: 2, NIC: "ib-hdr-200"})
	bw, lat := c.Bandwidths(), c.Latencies()
	if len(bw) != len(c.Links()) || len(lat) != len(c.Links()) {
		t.Fatal("lengths")
	}
	for i, l := range c.Links() {
		if bw[i] != l.Bandwidth {
			t.Fatalf("link %d: %g vs %+v", i, bw[i], l)
		}
		// Latency per kind (doc.go): NVLink 25 ns, Gen4 PCIe 105 ns, HDR 600 ns.
		want := map[LinkKind]int64{LinkNVLink: 25, LinkPCIe: 105, LinkNetwork: 600}[l.Kind]
		if int64(lat[i]) != want {
			t.Fatalf("link %d kind %v latency %v, want %dns", i, l.Kind, lat[i], want)
		}
	}
}

// The bandwidth and latency arrays, written beside the links cable by
// cable, hold every link's own values on every shape (rail, fat tree, Clos
// pods, NVL72, meshes, pairs, PCIe-only): its bandwidth, and its kind's
// latency (scale-up, PCIe or NIC latency of the cluster's GPU and NIC), the
// same in both directions of a cable.
func TestBandwidthsLatenciesEveryShape(t *testing.T) {
	for _, s := range specsSmall {
		c := mustBuild(t, s)
		bw, lat := c.Bandwidths(), c.Latencies()
		if len(bw) != len(c.Links()) || len(lat) != len(c.Links()) {
			t.Fatalf("%+v: %d links, %d bandwidths, %d latencies", s, len(c.Links()), len(bw), len(lat))
		}
		for i, l := range c.Links() {
			want := map[LinkKind]int64{LinkNVLink: int64(c.GPU.ScaleUpLatency), LinkXGMI: int64(c.GPU.ScaleUpLatency),
				LinkPCIe: int64(c.GPU.PCIeLatency), LinkNetwork: int64(c.NIC.Latency)}[l.Kind]
			if bw[i] != l.Bandwidth || !(l.Bandwidth > 0) || int64(lat[i]) != want || lat[i] != lat[i^1] {
				t.Fatalf("%+v: link %d: bandwidth %g latency %v (want %dns) vs %+v", s, i, bw[i], lat[i], want, l)
			}
		}
	}
}

// TestCatalogGPUsBuild: every catalog GPU's defaults build a cluster.
func TestCatalogGPUsBuild(t *testing.T) {
	for _, name := range hardware.GPUNames() {
		if _, err := Build(Spec{GPU: name, Nodes: 2}); err != nil {
			t.Errorf("Build(%s, 2 nodes): %v", name, err)
		}
	}
}

// A heterogeneous cluster: node groups hold consecutive nodes in order,
// GPUOf gives each rank its group's GPU, and groups that cannot share the
// first group's node fabric, or do not add up to the nodes, are refused
// naming cluster.node_groups.
func TestNodeGroups(t *testing.T) {
	h100, _ := hardware.LookupGPU("h100-sxm")
	h200, _ := hardware.LookupGPU("h200")
	a100, _ := hardware.LookupGPU("a100-80gb")
	c := mustBuild(t, Spec{GPU: "h100-sxm", Nodes: 3, Groups: []NodeGroup{{GPU: h100, Nodes: 1}, {GPU: h200, Nodes: 2}}})
	for r, want := range map[int]string{0: "h100-sxm", 7: "h100-sxm", 8: "h200", 23: "h200"} {
		if got := c.GPUOf(r).Name; got != want {
			t.Errorf("rank %d on %s, want %s", r, got, want)
		}
	}
	if c.GroupOf(8) != 1 || c.NumGPUs() != 24 {
		t.Errorf("GroupOf(8) %d, GPUs %d", c.GroupOf(8), c.NumGPUs())
	}
	if one := mustBuild(t, Spec{GPU: "h100-sxm", Nodes: 2}); len(one.Groups) != 1 || one.GPUOf(15) != &one.GPU {
		t.Errorf("homogeneous cluster: groups %d", len(one.Groups))
	}
	for _, s := range []Spec{
		{GPU: "h100-sxm", Nodes: 2, Groups: []NodeGroup{{GPU: h100, Nodes: 1}, {GPU: a100, Nodes: 1}}},
		{GPU: "h100-sxm", Nodes: 3, Groups: []NodeGroup{{GPU: h100, Nodes: 1}, {GPU: h200, Nodes: 1}}},
		{GPU: "h100-sxm", Nodes: 1, Groups: []NodeGroup{{GPU: h100, Nodes: 1}, {GPU: h200, Nodes: 0}}},
	} {
		_, err := Build(s)
		var se *SpecError
		if !errors.As(err, &se) || se.Field != "cluster.node_groups" {
			t.Errorf("%+v: error %v, want one naming cluster.node_groups", s.Groups, err)
		}
	}
}

// TestMeshNode: a 4-GPU HGX H200 board as nvlink-mesh has one cable per GPU
// pair (6 per node) at 450/3 = 150 GB/s per direction, and no NVSwitch.
func TestMeshNode(t *testing.T) {
	c, err := Build(Spec{GPU: "h200", Nodes: 2, GPUsPerNode: 4, IntraNode: "nvlink-mesh"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.MeshNode() || c.NVLS() {
		t.Errorf("MeshNode %v NVLS %v, want true false", c.MeshNode(), c.NVLS())
	}
	if got := deviceCounts(c)["nvswitch"]; got != 0 {
		t.Errorf("%d NVSwitch devices, want 0", got)
	}
	// 2 GPUs of such a board: still one 150 GB/s cable between them.
	c2, err := Build(Spec{GPU: "h200", Nodes: 1, GPUsPerNode: 2, IntraNode: "nvlink-mesh"})
	if err != nil {
		t.Fatal(err)
	}
	if l := c2.Links()[c2.AppendRoute(nil, 0, 1, 0)[0]]; l.Bandwidth != 150e9 || l.Kind != LinkNVLink {
		t.Errorf("2 GPUs of a 4-GPU board: link %+v, want 150 GB/s NVLink", l)
	}
	sum := c.Summary()
	if got := sum.Links[0]; got != (LinkCount{Tier: "gpu-gpu", Kind: "nvlink", Links: 12, Cables: 12, BytesPerSPerLink: 150e9, TotalBytesPerS: 1.8e12}) {
		t.Errorf("scale-up tier %+v", got)
	}
	// Every ordered pair of a node is one link, and the 12 ordered pairs
	// of a node use 12 distinct directed links.
	seen := map[int32]bool{}
	for a := range 4 {
		for b := range 4 {
			if a == b {
				continue
			}
			route := c.AppendRoute(nil, 4+a, 4+b, 0)
			if len(route) != 1 || c.Links()[route[0]].From != int32(4+a) || c.Links()[route[0]].To != int32(4+b) || seen[route[0]] {
				t.Errorf("route %d -> %d: %v", 4+a, 4+b, route)
			}
			seen[route[0]] = true
		}
	}
}

// A link record is 24 bytes: a 131,072-GPU cluster holds 1.5 M of them,
// and every route walk reads them (the latency lives in Latencies()).
func TestLinkRecordSize(t *testing.T) {
	if n := unsafe.Sizeof(Link{}); n != 24 {
		t.Errorf("Link is %d bytes, want 24", n)
	}
}

// TestLinkKindOf: the kind read from a link's id is the one its record
// holds, for every link of clusters with each scale-up fabric (NVSwitch,
// NVLink bridges, NVLink mesh, xGMI mesh, PCIe only, NVL72 domains), each
// network and a mixed cluster.
func TestLinkKindOf(t *testing.T) {
	h100, err := hardware.LookupGPU("h100-sxm")
	if err != nil {
		t.Fatal(err)
	}
	h200, err := hardware.LookupGPU("h200")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[LinkKind]bool{}
	for _, s := range []Spec{
		{GPU: "h100-sxm", Nodes: 4},
		{GPU: "h100-pcie", Nodes: 3, IntraNode: "nvlink-pairs"},
		{GPU: "h100-pcie", Nodes: 2, IntraNode: "pcie"},
		{GPU: "h200", Nodes: 2, GPUsPerNode: 4, IntraNode: "nvlink-mesh"},
		{GPU: "mi300x", Nodes: 2},
		{GPU: "mi300x", Nodes: 2, IntraNode: "nvlink-mesh"},
		{GPU: "l40s", Nodes: 2},
		{GPU: "gb200", Nodes: 36},
		{GPU: "h100-sxm", Nodes: 16, Network: "clos", PodGPUs: 32, Oversubscription: 7},
		{GPU: "h100-sxm", Nodes: 6, Network: "fat-tree", NICsPerNode: 16},
		{GPU: "h100-sxm", Nodes: 2, Network: "single-switch"},
		{GPU: "h100-sxm", Nodes: 3, Groups: []NodeGroup{{GPU: h100, Nodes: 1}, {GPU: h200, Nodes: 2}}},
	} {
		c, err := Build(s)
		if err != nil {
			t.Fatalf("%+v: %v", s, err)
		}
		for i, l := range c.Links() {
			kinds[l.Kind] = true
			if got := c.LinkKindOf(int32(i)); got != l.Kind {
				t.Fatalf("%+v: link %d (%s→%s): LinkKindOf %v, record %v", s, i, c.Devices()[l.From].Name, c.Devices()[l.To].Name, got, l.Kind)
			}
		}
	}
	if len(kinds) != 4 {
		t.Errorf("the clusters hold link kinds %v, want all four", kinds)
	}
}

// Build makes only the bandwidths; the link records, the latencies and
// the devices are made on first use, once, whoever asks first and in
// whatever order, with the same contents (issue 18: a 131,072-GPU run that
// writes no links.arrow never makes them).
func TestTablesMadeOnFirstUse(t *testing.T) {
	for _, s := range specsSmall {
		c := mustBuild(t, s)
		if c.links != nil || c.lat != nil || c.devices != nil {
			t.Fatalf("%+v: Build made links %d, latencies %d, devices %d", s, len(c.links), len(c.lat), len(c.devices))
		}
		// Eight goroutines ask at once: one table each, the same slice.
		var wg sync.WaitGroup
		links := make([][]Link, 8)
		lats := make([][]engine.Time, 8)
		devs := make([][]Device, 8)
		for i := range 8 {
			wg.Go(func() { links[i], lats[i], devs[i] = c.Links(), c.Latencies(), c.Devices() })
		}
		wg.Wait()
		for i := range 8 {
			if &links[i][0] != &links[0][0] || &lats[i][0] != &lats[0][0] || &devs[i][0] != &devs[0][0] {
				t.Fatalf("%+v: goroutine %d got other tables", s, i)
			}
		}
		if c.NumLinks() != len(links[0]) || len(lats[0]) != len(links[0]) {
			t.Fatalf("%+v: NumLinks %d, %d links, %d latencies", s, c.NumLinks(), len(links[0]), len(lats[0]))
		}
		// The other order on a fresh build: the same contents.
		d := mustBuild(t, s)
		if !slices.Equal(d.Devices(), devs[0]) || !slices.Equal(d.Latencies(), lats[0]) || !slices.Equal(d.Links(), links[0]) {
			t.Fatalf("%+v: tables differ with the order they are made in", s)
		}
	}
}

// MinBandwidth is the least bandwidth of each kind's links, found by a
// plain scan of the records, and says where a kind has none.
func TestMinBandwidth(t *testing.T) {
	for _, s := range specsSmall {
		c := mustBuild(t, s)
		least := map[LinkKind]units.BytesPerSecond{}
		for _, l := range c.Links() {
			if m, ok := least[l.Kind]; !ok || l.Bandwidth < m {
				least[l.Kind] = l.Bandwidth
			}
		}
		for _, k := range []LinkKind{LinkNVLink, LinkXGMI, LinkPCIe, LinkNetwork, LinkNetwork + 1} {
			want, wantOK := least[k]
			if got, ok := c.MinBandwidth(k); got != want || ok != wantOK {
				t.Errorf("%+v: MinBandwidth(%v) = %g, %v; want %g, %v", s, k, got, ok, want, wantOK)
			}
		}
	}
}
