package topology

import (
	"reflect"
	"strings"
	"testing"
)

// names lists the devices a route visits, starting at its source.
func names(c *Cluster, route []int32) []string {
	if len(route) == 0 {
		return nil
	}
	out := []string{c.Devices()[c.Links()[route[0]].From].Name}
	for _, e := range route {
		out = append(out, c.Devices()[c.Links()[e].To].Name)
	}
	return out
}

// Hand-written routes, device by device.
func TestRoutesByHand(t *testing.T) {
	for _, r := range []struct {
		spec     Spec
		src, dst int
		want     string
	}{
		// NVSwitch node: one hop up, one down.
		{Spec{GPU: "h100-sxm", Nodes: 1}, 0, 5, "n0/gpu0 domain0/nvswitch n0/gpu5"},
		// Same rail, same SU: the rail leaf joins the two nodes.
		{Spec{GPU: "h100-sxm", Nodes: 4}, 0, 8, "n0/gpu0 n0/pcie0 n0/nic0 leaf0 n1/nic0 n1/pcie0 n1/gpu0"},
		// Different rails: PXN over NVLink to n0/gpu3, then rail 3.
		{Spec{GPU: "h100-sxm", Nodes: 4}, 0, 11, "n0/gpu0 domain0/nvswitch n0/gpu3 n0/pcie1 n0/nic3 leaf3 n1/nic3 n1/pcie1 n1/gpu3"},
		// Rail 1's NIC shares GPU 0's PCIe switch: no detour needed.
		{Spec{GPU: "h100-sxm", Nodes: 4}, 0, 9, "n0/gpu0 n0/pcie0 n0/nic1 leaf1 n1/nic1 n1/pcie0 n1/gpu1"},
		// PCIe-only node: shared switch, or through the host.
		{Spec{GPU: "l40s", Nodes: 1}, 0, 1, "n0/gpu0 n0/pcie0 n0/gpu1"},
		{Spec{GPU: "l40s", Nodes: 1}, 0, 2, "n0/gpu0 n0/pcie0 n0/host n0/pcie1 n0/gpu2"},
		// NVLink-bridged pairs.
		{Spec{GPU: "h100-pcie", Nodes: 1}, 0, 1, "n0/gpu0 n0/gpu1"},
		{Spec{GPU: "h100-pcie", Nodes: 1}, 5, 4, "n0/gpu5 n0/gpu4"},
		{Spec{GPU: "h100-pcie", Nodes: 1}, 1, 6, "n0/gpu1 n0/pcie0 n0/host n0/pcie3 n0/gpu6"},
		// 4-GPU HGX H200 board: one direct cable per pair, either way;
		// other nodes' GPUs over the rails.
		{Spec{GPU: "h200", Nodes: 2, GPUsPerNode: 4, IntraNode: "nvlink-mesh"}, 0, 3, "n0/gpu0 n0/gpu3"},
		{Spec{GPU: "h200", Nodes: 2, GPUsPerNode: 4, IntraNode: "nvlink-mesh"}, 6, 5, "n1/gpu2 n1/gpu1"},
		{Spec{GPU: "h200", Nodes: 2, GPUsPerNode: 4, IntraNode: "nvlink-mesh"}, 1, 5, "n0/gpu1 n0/pcie0 n0/nic1 leaf1 n1/nic1 n1/pcie0 n1/gpu1"},
		// MI300X: the XGMI mesh as one logical switch.
		{Spec{GPU: "mi300x", Nodes: 1}, 0, 7, "n0/gpu0 domain0/xgmi n0/gpu7"},
		// Fat tree without PXN: own NICs, leaves of nodes 0 and 5 differ.
		{Spec{GPU: "h100-sxm", Nodes: 10, Network: "fat-tree"}, 0, 43, "n0/gpu0 n0/pcie0 n0/nic0 leaf0 spine* leaf1 n5/nic3 n5/pcie1 n5/gpu3"},
		// NVL72: across trays of one rack over NVLink.
		{Spec{GPU: "gb200", Nodes: 18}, 3, 70, "n0/gpu3 domain0/nvswitch n17/gpu2"},
		// Rail-optimized PCIe nodes: rails are crossed at a spine.
		{Spec{GPU: "l40s", Nodes: 2}, 0, 11, "n0/gpu0 n0/pcie0 n0/nic0 leaf0 spine* leaf3 n1/nic3 n1/pcie1 n1/gpu3"},
		// Two racks of GB200 behind one single switch.
		{Spec{GPU: "gb200", Nodes: 36, Network: "single-switch"}, 0, 72, "n0/gpu0 n0/pcie0 n0/nic0 leaf0 n18/nic0 n18/pcie0 n18/gpu0"},
	} {
		c := mustBuild(t, r.spec)
		got := names(c, c.AppendRoute(nil, r.src, r.dst, 0))
		want := strings.Fields(r.want)
		ok := len(got) == len(want)
		for i := 0; ok && i < len(want); i++ {
			if w, found := strings.CutSuffix(want[i], "*"); found {
				ok = strings.HasPrefix(got[i], w)
			} else {
				ok = got[i] == want[i]
			}
		}
		if !ok {
			t.Errorf("%+v %d→%d:\n got %v\nwant %v", r.spec, r.src, r.dst, got, want)
		}
	}
}

// A same-rail route's line rates and latency, by hand: four Gen5 PCIe hops
// (115 ns, 63 GB/s) and two NDR links (500 ns, 50 GB/s).
func TestRouteBandwidthLatency(t *testing.T) {
	c := mustBuild(t, Spec{GPU: "h100-sxm", Nodes: 4})
	route := c.AppendRoute(nil, 0, 8, 0)
	bottleneck, lat := 1e300, int64(0)
	for _, e := range route {
		bottleneck = min(bottleneck, float64(c.Bandwidths()[e]))
		lat += int64(c.Latencies()[e])
	}
	if bottleneck != 50e9 || lat != 4*115+2*500 {
		t.Errorf("bottleneck %g latency %dns, want 5e10 and 1460ns", bottleneck, lat)
	}
}

// checkChain fails unless route leads from GPU src to GPU dst without
// visiting a device twice.
func checkChain(t *testing.T, c *Cluster, route []int32, src, dst int) {
	t.Helper()
	if src == dst {
		if len(route) != 0 {
			t.Fatalf("%d→%d: non-empty route %v", src, dst, route)
		}
		return
	}
	at := c.GPUDevice[src]
	seen := map[int32]bool{at: true}
	for _, e := range route {
		if e < 0 || int(e) >= len(c.Links()) || c.Links()[e].From != at {
			t.Fatalf("%d→%d: broken chain at link %d in %v", src, dst, e, names(c, route))
		}
		at = c.Links()[e].To
		if seen[at] {
			t.Fatalf("%d→%d: revisits %s in %v", src, dst, c.Devices()[at].Name, names(c, route))
		}
		seen[at] = true
	}
	if at != c.GPUDevice[dst] {
		t.Fatalf("%d→%d: ends at %s", src, dst, c.Devices()[at].Name)
	}
}

// Every route on every small cluster is a connected chain of the right
// length: the BFS shortest distance, or, for a PXN route, 2 (the NVLink hop
// to the proxy GPU) plus the shortest distance from the proxy.
func TestRoutesAreShortestChains(t *testing.T) {
	specs := append([]Spec{}, specsSmall...)
	// A three-tier radix-64 fabric: 2080 one-GPU nodes on 65 leaves.
	specs = append(specs, Spec{GPU: "h100-sxm", Nodes: 2080, GPUsPerNode: 1, NICsPerNode: 1, Network: "fat-tree"})
	for _, s := range specs {
		c := mustBuild(t, s)
		n := c.NumGPUs()
		nv := len(c.Devices())
		queue := make([]int32, nv)
		dists := map[int][]int32{}
		distFrom := func(r int) []int32 {
			if d, ok := dists[r]; ok {
				return d
			}
			d := make([]int32, nv)
			c.bfs(int32(r), d, queue, false)
			dists[r] = d
			return d
		}
		step := 1
		if n > 600 {
			step = 97 // sample sources on the big one
		}
		buf := make([]int32, 0, 16)
		pxnSeen := false
		for src := 0; src < n; src += step {
			d := distFrom(src)
			for dst := range n {
				for _, h := range []uint64{0, 1, 5, 1 << 40} {
					route := c.AppendRoute(buf[:0], src, dst, h)
					checkChain(t, c, route, src, dst)
					if src == dst {
						continue
					}
					// PXN: GPU → NVSwitch → proxy GPU (hop 2), or GPU → proxy
					// GPU over a mesh cable (hop 1), the proxy being src's
					// node's GPU with dst's local index.
					proxy, hop := -1, 0
					if first := c.Links()[route[0]].To; len(route) > 2 && int(c.Links()[route[1]].To) < n && c.Devices()[first].Kind == KindNVSwitch {
						proxy, hop = int(c.Links()[route[1]].To), 2
					} else if len(route) > 1 && c.Devices()[first].Kind == KindGPU {
						proxy, hop = int(first), 1
					}
					if hop > 0 {
						if !c.l.pxn || c.NodeOf(proxy) != c.NodeOf(src) || proxy%c.GPUsPerNode() != dst%c.GPUsPerNode() || c.DomainOf(src) == c.DomainOf(dst) {
							t.Fatalf("%+v %d→%d: unexpected detour %v", s, src, dst, names(c, route))
						}
						if want := hop + int(distFrom(proxy)[dst]); len(route) != want || len(route) > int(d[dst])+2 {
							t.Fatalf("%+v %d→%d: PXN route %d links, want %d: %v", s, src, dst, len(route), want, names(c, route))
						}
						// Within one leaf group the PXN path is a shortest path;
						// only crossing the spines makes it longer (doc.go).
						if len(route) != int(d[dst]) && !strings.Contains(strings.Join(names(c, route), " "), "spine") {
							t.Fatalf("%+v %d→%d: PXN route %d links without a spine, BFS says %d", s, src, dst, len(route), d[dst])
						}
						pxnSeen = true
						continue
					}
					if len(route) != int(d[dst]) {
						t.Fatalf("%+v %d→%d hash %d: %d links, BFS says %d: %v", s, src, dst, h, len(route), d[dst], names(c, route))
					}
				}
			}
		}
		if c.l.pxn && c.Domains() > 1 && c.NICsPerNode() > 1 && !pxnSeen {
			t.Errorf("%+v: no PXN route seen", s)
		}
	}
}

func TestRouteDeterministic(t *testing.T) {
	c := mustBuild(t, Spec{GPU: "h100-sxm", Nodes: 40})
	for _, p := range [][3]int{{0, 300, 0}, {5, 270, 9}, {17, 18, 3}} {
		a := c.AppendRoute(nil, p[0], p[1], uint64(p[2]))
		for range 20 {
			if b := c.AppendRoute(nil, p[0], p[1], uint64(p[2])); !reflect.DeepEqual(a, b) {
				t.Fatalf("route %v changed: %v vs %v", p, a, b)
			}
		}
		// A fresh build routes the same way.
		if b := mustBuild(t, c.Spec).AppendRoute(nil, p[0], p[1], uint64(p[2])); !reflect.DeepEqual(a, b) {
			t.Fatalf("route %v differs across builds", p)
		}
	}
}

// ECMP: consecutive hashes of one pair visit every equal-cost uplink.
func TestECMPSpread(t *testing.T) {
	// Two SUs (16 leaves, 8 spines): node 0 → node 33 on rail 0 crosses a spine.
	c := mustBuild(t, Spec{GPU: "h100-sxm", Nodes: 40})
	spines := map[string]bool{}
	for h := range uint64(8) {
		spines[names(c, c.AppendRoute(nil, 0, 33*8, h))[4]] = true
	}
	if len(spines) != 8 {
		t.Errorf("8 hashes used spines %v, want all 8", spines)
	}
	// Pairs that all pass hash 0 still spread (the per-pair mix).
	spines = map[string]bool{}
	for l := range 8 {
		for node := 32; node < 40; node++ {
			spines[names(c, c.AppendRoute(nil, l, node*8+l, 0))[4]] = true
		}
	}
	if len(spines) < 6 {
		t.Errorf("64 pairs at hash 0 used only %d spines", len(spines))
	}

	// Three tiers (16 SUs: 4 pods of 32 leaves, 32 spines each, 2 cores per
	// plane): 64 hashes visit every spine of the source pod and every core.
	c = mustBuild(t, Spec{GPU: "h100-sxm", Nodes: 512})
	spines, cores := map[string]bool{}, map[string]bool{}
	for h := range uint64(64) {
		n := names(c, c.AppendRoute(nil, 0, 511*8, h))
		if len(n) != 11 || !strings.HasPrefix(n[5], "core") {
			t.Fatalf("route %v", n)
		}
		spines[n[4]] = true
		cores[n[5]] = true
	}
	if len(spines) != 32 || len(cores) != 64 {
		t.Errorf("64 hashes used %d spines and %d cores, want 32 and 64", len(spines), len(cores))
	}

	// Two NICs per GPU: the hash picks the NIC, the same offset on both ends.
	c = mustBuild(t, Spec{GPU: "h100-sxm", Nodes: 2, NICsPerNode: 16})
	nics := map[string]bool{}
	for h := range uint64(2) {
		n := names(c, c.AppendRoute(nil, 3, 11, h))
		nics[n[2]+">"+n[4]] = true
	}
	if !nics["n0/nic6>n1/nic6"] || !nics["n0/nic7>n1/nic7"] {
		t.Errorf("NIC choices %v", nics)
	}
}

func TestAppendRouteNoAlloc(t *testing.T) {
	c := mustBuild(t, Spec{GPU: "h100-sxm", Nodes: 512})
	buf := make([]int32, 0, 16)
	allocs := testing.AllocsPerRun(1000, func() {
		buf = c.AppendRoute(buf[:0], 3, 4000, 77)
		buf = c.AppendRoute(buf[:0], 3, 5, 77)
	})
	if allocs != 0 {
		t.Errorf("AppendRoute allocates %v times per call pair", allocs)
	}
	// Appends after what is there.
	r := c.AppendRoute([]int32{-7}, 0, 1, 0)
	if r[0] != -7 || len(r) != 3 {
		t.Errorf("AppendRoute does not append: %v", r)
	}
}
