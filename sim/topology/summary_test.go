package topology

import (
	"encoding/json"
	"regexp"
	"testing"
)

// The diameter from the first and last nodes' GPUs equals the all-pairs
// maximum on every small cluster.
func TestDiameterMatchesAllPairs(t *testing.T) {
	for _, s := range specsSmall {
		c := mustBuild(t, s)
		nv := len(c.Devices())
		dist, queue := make([]int32, nv), make([]int32, nv)
		want := 0
		for r := range c.NumGPUs() {
			c.bfs(int32(r), dist, queue, false)
			for o := range c.NumGPUs() {
				want = max(want, int(dist[o]))
			}
		}
		if got := c.diameter(); got != want {
			t.Errorf("%+v: diameter %d, all-pairs %d", s, got, want)
		}
	}
}

// Bisection on networks whose cut sits above the NICs, by hand. In every
// case the halves are whole nodes, so only network links cross.
func TestBisectionFormulas(t *testing.T) {
	for _, r := range []struct {
		spec Spec
		want float64
		why  string
	}{
		{Spec{GPU: "h100-sxm", Nodes: 64}, 256 * 50e9,
			"non-blocking 2 SUs: the 256 NICs of nodes 0-31 at 50 GB/s"},
		{Spec{GPU: "h100-sxm", Nodes: 8, Network: "fat-tree", Oversubscription: 4}, 32 * 50e9 / 4,
			"2 leaves of 4 nodes; each leaf's 32 uplinks carry 1/4 of 50 GB/s: 400 GB/s"},
		{Spec{GPU: "h100-sxm", Nodes: 64, PodGPUs: 256, Oversubscription: 2}, 32 * 8 * 50e9 / 2,
			"2 pods of one SU; 32 spine planes each send (8 rail leaves × 50 GB/s)/2 up"},
		{Spec{GPU: "h100-sxm", Nodes: 16, Network: "clos", PodGPUs: 32, Oversubscription: 7}, 2 * 32 * 50e9 / 7,
			"4 pods of 2 racks; each pod sends its 32 NICs' 1.6 TB/s / 7 up; 2 pods per half"},
		{Spec{GPU: "h100-sxm", Nodes: 8, Network: "single-switch"}, 32 * 50e9,
			"one switch: the first 4 nodes' 32 NICs"},
		{Spec{GPU: "a100-80gb", Nodes: 4, NIC: "ib-hdr-200", NICsPerNode: 4}, 8 * 25e9,
			"4 HDR NICs per node, 2 nodes per half: 8 × 25 GB/s"},
	} {
		s := mustBuild(t, r.spec).Summary()
		if !near(s.BisectionBytesPerS, r.want) || !near(s.NetworkBisectionBytesPerS, r.want) {
			t.Errorf("%+v: bisection %g / %g, want %g (%s)", r.spec, s.BisectionBytesPerS, s.NetworkBisectionBytesPerS, r.want, r.why)
		}
	}
}

func TestSummaryJSON(t *testing.T) {
	b, err := json.Marshal(mustBuild(t, Spec{GPU: "h100-sxm", Nodes: 2}).Summary())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	snake := regexp.MustCompile(`^[a-z0-9]+(_[a-z0-9]+)*$`)
	for k := range m {
		if !snake.MatchString(k) {
			t.Errorf("key %q is not snake_case", k)
		}
	}
	for _, k := range []string{"gpu", "nodes", "gpus", "devices", "links", "bisection_bytes_per_s", "network_bisection_bytes_per_s", "diameter_hops", "scale_out_bytes_per_s_per_gpu"} {
		if _, ok := m[k]; !ok {
			t.Errorf("summary JSON lacks %q: %s", k, b)
		}
	}
}
