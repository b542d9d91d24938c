package topology

import "testing"

// TestPartialRacksSplitEvenly: a rack-scale cluster that does not fill its
// NVL72 racks is spread over the fewest racks that hold it, ceil(trays/racks)
// trays per rack: 128 GB300s are two racks of 16 trays (64 + 64, so EP 64
// fits in a rack), 80 GB200s two of 10 trays, 100 GB200s (25 trays) 13 + 12.
// Full racks and single racks are unchanged.
func TestPartialRacksSplitEvenly(t *testing.T) {
	for _, c := range []struct {
		gpu          string
		nodes        int
		domains      int
		firstOfRack2 int // first rank of domain 1
	}{
		{"gb300", 32, 2, 64},
		{"gb200", 20, 2, 40},
		{"gb200", 25, 2, 52},
		{"gb200", 36, 2, 72},
		{"gb200", 4, 1, -1},
		{"gb200", 54, 3, 72},
		{"gb200", 40, 3, 56}, // 40 trays: 14 + 14 + 12
	} {
		cl := mustBuild(t, Spec{GPU: c.gpu, Nodes: c.nodes})
		if cl.Domains() != c.domains {
			t.Errorf("%s × %d trays: %d domains, want %d", c.gpu, c.nodes, cl.Domains(), c.domains)
			continue
		}
		if c.firstOfRack2 < 0 {
			continue
		}
		if cl.DomainOf(c.firstOfRack2-1) != 0 || cl.DomainOf(c.firstOfRack2) != 1 {
			t.Errorf("%s × %d trays: DomainOf(%d) = %d, DomainOf(%d) = %d; want 0 and 1", c.gpu, c.nodes,
				c.firstOfRack2-1, cl.DomainOf(c.firstOfRack2-1), c.firstOfRack2, cl.DomainOf(c.firstOfRack2))
		}
		// Every rank of a rack reaches every other over NVLink in 2 hops.
		if h := cl.RouteHops(0, c.firstOfRack2-1); h != 2 {
			t.Errorf("%s × %d trays: 0→%d %d hops, want 2 (one NVLink switch)", c.gpu, c.nodes, c.firstOfRack2-1, h)
		}
	}
	// HGX nodes are their own domains whatever the count.
	if cl := mustBuild(t, Spec{GPU: "h100-sxm", Nodes: 3}); cl.Domains() != 3 {
		t.Errorf("3 HGX H100 nodes: %d domains", cl.Domains())
	}
}
