package collectives

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/topology"
	"github.com/simtrain/simtrain/sim/units"
)

// twoLeaves is 8 DGX H100 on a fat-tree of two leaves (4 nodes each) under
// one spine, every leaf's 32 uplinks merged into one link and divided by
// oversubscription: at 32:1 each leaf has one 50 GB/s uplink, exactly one
// NDR NIC's rate.
func twoLeaves(t *testing.T, over float64) *topology.Cluster {
	return cluster(t, topology.Spec{GPU: "h100-sxm", Nodes: 8, Network: "fat-tree", Oversubscription: over})
}

// TestStaticShareHandComputed: two 2-rank groups, {0, 32} and {1, 33}, each
// with one GPU under leaf 0 and one under leaf 1. Their rings cross the
// leaves both ways; both upward transfers (0→32, 1→33) share leaf 0's
// single uplink, so at 32:1 (uplink = one NIC rate) each gets half its NIC
// rate: share 1/2 for ring, tree and all-to-all alike, and an all_gather
// of S takes S/2 / (net/2) instead of S/2 / net on the wire. At 16:1 the
// uplink carries both at full rate (share 1). A group alone shares with
// nobody (share 1).
func TestStaticShareHandComputed(t *testing.T) {
	groups := [][]int{{0, 32}, {1, 33}}
	for _, tc := range []struct {
		over, want float64
	}{{32, 0.5}, {16, 1}, {64, 0.25}} {
		c := twoLeaves(t, tc.over)
		sh, err := StaticShares(c, groups, true)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range sh {
			if math.Abs(s.Ring-tc.want) > 1e-12 || math.Abs(s.Tree-tc.want) > 1e-12 || math.Abs(s.Direct-tc.want) > 1e-12 {
				t.Errorf("%g:1 group %v: share %+v, want %g", tc.over, groups[i], s, tc.want)
			}
		}
		alone, err := StaticShares(c, groups[:1], true)
		if err != nil {
			t.Fatal(err)
		}
		if want := math.Min(1, 2*tc.want); alone[0].Ring != want {
			t.Errorf("%g:1 one group alone: ring share %g, want %g", tc.over, alone[0].Ring, want)
		}
	}

	// The cost: only the wire time changes, by exactly S/2/(net·share) −
	// S/2/net, with the algorithm and protocol the uncontended tuner chose.
	c := twoLeaves(t, 32)
	g, err := NewGroup(c, groups[0])
	if err != nil {
		t.Fatal(err)
	}
	sh, _ := StaticShares(c, groups, true)
	h := g.WithShare(sh[0])
	_, _, _, net := g.Bandwidths()
	const S = 1 << 30
	free, err := g.Cost(AllGather, Auto, S)
	if err != nil {
		t.Fatal(err)
	}
	slow, err := h.Cost(AllGather, Auto, S)
	if err != nil {
		t.Fatal(err)
	}
	want := free.Time + engine.Seconds(S/2/(net*0.5)-S/2/net)
	if d := slow.Time - want; d < -2 || d > 2 || slow.Algo != free.Algo || slow.Proto != free.Proto {
		t.Errorf("contended all_gather %v (%s/%s), want %v (%s/%s)", slow.Time, slow.Algo, slow.Proto, want, free.Algo, free.Proto)
	}
	if g.Share() != noContention || h.Share() != (Share{0.5, 0.5, 0.5}) {
		t.Errorf("shares: original %+v, copy %+v", g.Share(), h.Share())
	}
}

// TestStaticShareMatchesFlow: groups playing the same collective at once on
// an oversubscribed fabric take, at flow fidelity, what their contended
// analytic cost says (within 3%): the static load is what the fabric's
// max-min sharing settles on when every transfer of the pattern is active.
func TestStaticShareMatchesFlow(t *testing.T) {
	c := cluster(t, topology.Spec{GPU: "h100-sxm", Nodes: 16, Network: "fat-tree", Oversubscription: 8})
	// Eight 4-rank groups on rail j, one rank on each of nodes 0, 4, 8, 12
	// (four leaves): every ring edge crosses leaves.
	var groups [][]int
	for j := 0; j < 8; j++ {
		groups = append(groups, []int{j, 32 + j, 64 + j, 96 + j})
	}
	sh, err := StaticShares(c, groups, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []Op{AllGather, AllReduce} {
		const S = 512 << 20
		e := engine.New()
		f := network.New(e, c.Bandwidths(), c.Latencies(), network.Flow)
		r := NewRunner(e, f, network.Flow, c)
		rec := &recorder{}
		var worst engine.Time
		for i, ranks := range groups {
			g, err := NewGroup(c, ranks)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Start(g, op, Auto, units.Bytes(S), rec, int64(i)); err != nil {
				t.Fatal(err)
			}
			cost, err := g.WithShare(sh[i]).Cost(op, Auto, S)
			if err != nil {
				t.Fatal(err)
			}
			worst = max(worst, cost.Time)
		}
		e.Run()
		flow := rec.at[len(rec.at)-1]
		t.Logf("%s: analytic %v flow %v shares[0] %+v", op, worst, flow, sh[0])
		if d := float64(worst)/float64(flow) - 1; math.Abs(d) > 0.03 {
			t.Errorf("%s: analytic with static shares %v, flow %v (%+.1f%%); shares %+v", op, worst, flow, 100*d, sh)
		}
		free, _ := NewGroup(c, groups[0])
		fc, _ := free.Cost(op, Auto, S)
		if fc.Time >= flow*9/10 {
			t.Errorf("%s: the fabric should be contended here: uncontended %v, flow %v", op, fc.Time, flow)
		}
	}
}

// TestStaticShareErrors: bad ranks are NewGroup's errors.
func TestStaticShareErrors(t *testing.T) {
	c := twoLeaves(t, 1)
	for _, g := range [][]int{{}, {0, 0}, {-1}, {1 << 20}} {
		if _, err := StaticShares(c, [][]int{g}, true); err == nil {
			t.Errorf("%v: no error", g)
		}
	}
	sh, err := StaticShares(c, [][]int{seq(8)}, true)
	if err != nil || sh[0] != noContention {
		t.Errorf("one node: %+v %v, want no contention", sh, err)
	}
}

// TestStaticSharesScratchReuse: staticLoad keeps its counters between
// calls; a call gives the same shares whatever ran before it, on a larger
// or smaller cluster, and after a call that failed on a bad group.
func TestStaticSharesScratchReuse(t *testing.T) {
	small, big := twoLeaves(t, 32), twoLeaves(t, 64)
	groups := [][]int{{0, 32}, {1, 33}, {2, 40, 3}}
	fresh := func(c *topology.Cluster) []Share {
		sh, err := StaticShares(c, groups, true)
		if err != nil {
			t.Fatal(err)
		}
		return sh
	}
	wantSmall, wantBig := fresh(small), fresh(big)
	for round := 0; round < 3; round++ {
		if _, err := StaticShares(small, [][]int{{0, 32}, {5, 5}}, false); err == nil {
			t.Fatal("a repeated rank: no error")
		}
		if _, err := SendShares(big, [][2]int{{0, 63}, {8, 40}}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			c    *topology.Cluster
			want []Share
		}{{small, wantSmall}, {big, wantBig}} {
			if got := fresh(tc.c); !slices.Equal(got, tc.want) {
				t.Fatalf("round %d: shares %v, want %v", round, got, tc.want)
			}
		}
	}
}

// TestSendSharesWithoutArrangement: pairs routed for sends alone (which
// skip the arrangement) get the shares they get when another pattern is
// routed with them (which arranges every group), on clusters where pairs
// cross pods, rails and NVL72 domains, in either domain order, with pairs
// inside one domain among them.
func TestSendSharesWithoutArrangement(t *testing.T) {
	for _, spec := range []topology.Spec{
		{GPU: "h100-sxm", Nodes: 8, Network: "clos", PodGPUs: 32, Oversubscription: 7},
		{GPU: "h100-sxm", Nodes: 4},
		{GPU: "gb200", Nodes: 36},
	} {
		c := cluster(t, spec)
		n := c.NumGPUs()
		var pairs [][]int
		for a := 0; a < n; a++ {
			pairs = append(pairs, []int{a, (a*7 + 13) % n}, []int{(a*5 + 3) % n, a})
		}
		pairs = slices.DeleteFunc(pairs, func(p []int) bool { return p[0] == p[1] })
		alone, err := staticLoad(c, pairs, []pattern{patSend})
		if err != nil {
			t.Fatal(err)
		}
		arranged, err := staticLoad(c, pairs, []pattern{patSend, patRing})
		if err != nil {
			t.Fatal(err)
		}
		low := 1.0
		for i := range pairs {
			if alone[i][patSend] != arranged[i][patSend] {
				t.Fatalf("%s: pair %v: send share %v alone, %v arranged", spec.GPU, pairs[i], alone[i][patSend], arranged[i][patSend])
			}
			low = min(low, alone[i][patSend])
		}
		if spec.Oversubscription > 1 && low >= 1 {
			t.Errorf("no pair contended on the oversubscribed Clos")
		}
	}
}

// referenceShares is the static-load share as StaticShares documents it,
// computed the plain way: every cross-domain transfer of every group
// routed in full (Cluster.AppendRoute) and its network links picked out by
// kind, each link's load counted, and a transfer's share read on its links
// against its group's closed-form rate split among the group's transfers
// leaving or entering its GPUs.
func referenceShares(t *testing.T, c *topology.Cluster, groups [][]int, pats []pattern) [][numPatterns]float64 {
	t.Helper()
	type xfer struct {
		a, b  int
		links []int32
	}
	out := make([][numPatterns]float64, len(groups))
	for i := range out {
		out[i] = [numPatterns]float64{1, 1, 1, 1}
	}
	for _, p := range pats {
		load := map[int32]int{}
		xfers := make([][]xfer, len(groups))
		lead := make([][2]int, len(groups))
		for i, ranks := range groups {
			order, domOff, _ := arrange(c, ranks)
			a := arrangement{order, domOff}
			if a.domains() < 2 {
				continue
			}
			lead[i] = [2]int{a.member(0, 0), a.member(1, 0)}
			add := func(x, y, ch int) {
				var net []int32
				for _, l := range c.AppendRoute(nil, x, y, routeHash(x, y, ch)) {
					if c.Links()[l].Kind == topology.LinkNetwork {
						net = append(net, l)
						load[l]++
					}
				}
				xfers[i] = append(xfers[i], xfer{x, y, net})
			}
			if p == patSend {
				if c.DomainOf(ranks[0]) != c.DomainOf(ranks[1]) {
					add(ranks[0], ranks[1], 0)
				}
				continue
			}
			ppn := len(ranks)
			for d := 0; d < a.domains(); d++ {
				ppn = min(ppn, a.domSize(d))
			}
			a.crossings(p, ppn, add)
		}
		for i, xs := range xfers {
			if len(xs) == 0 {
				continue
			}
			net, _ := netRate(c, lead[i][0], lead[i][1], nil)
			fanOut, fanIn := map[int]int{}, map[int]int{}
			for _, x := range xs {
				fanOut[x.a]++
				fanIn[x.b]++
			}
			share := 1.0
			for _, x := range xs {
				alone := net / float64(max(fanOut[x.a], fanIn[x.b]))
				for _, l := range x.links {
					share = min(share, float64(c.Links()[l].Bandwidth)*c.NIC.Comm.Efficiency/float64(load[l])/alone)
				}
			}
			out[i][p] = share
		}
	}
	return out
}

// TestStaticLoadEqualsReference: staticLoad's shares (network links from
// Cluster.AppendNetworkRoute, bandwidths from the dense array, counters
// kept between calls) equal referenceShares bit for bit for every pattern,
// on data-parallel groups across nodes and pods, tensor-and-data groups
// with several ranks a node, pipeline pairs and ragged groups: a rail
// network with PXN, an oversubscribed Clos in pods, two NICs per GPU, four
// GPUs a NIC, PCIe-only nodes, NVLink bridges, NVL72 and a mixed cluster;
// groups inside one node or one NVL72 domain among them.
func TestStaticLoadEqualsReference(t *testing.T) {
	h100, err := hardware.LookupGPU("h100-sxm")
	if err != nil {
		t.Fatal(err)
	}
	h200, err := hardware.LookupGPU("h200")
	if err != nil {
		t.Fatal(err)
	}
	contended := false
	for _, spec := range []topology.Spec{
		{GPU: "h100-sxm", Nodes: 8},
		{GPU: "h100-sxm", Nodes: 16, Network: "clos", PodGPUs: 32, Oversubscription: 7},
		{GPU: "h100-sxm", Nodes: 6, Network: "fat-tree", NICsPerNode: 16},
		{GPU: "h100-sxm", Nodes: 6, NICsPerNode: 2},
		{GPU: "l40s", Nodes: 4},
		{GPU: "h100-pcie", Nodes: 4},
		{GPU: "gb200", Nodes: 36},
		{GPU: "h100-sxm", Nodes: 3, Groups: []topology.NodeGroup{{GPU: h100, Nodes: 1}, {GPU: h200, Nodes: 2}}},
	} {
		c := cluster(t, spec)
		n, gpn := c.NumGPUs(), c.GPUsPerNode()
		var dp, wide, pairs, ragged [][]int
		for j := 0; j < gpn; j++ { // GPU j of every node
			var g []int
			for r := j; r < n; r += gpn {
				g = append(g, r)
			}
			dp = append(dp, g)
		}
		for start := 0; start+2*gpn <= n; start += 2 * gpn { // two nodes' halves
			var g []int
			for r := start; r < start+2*gpn; r += 2 {
				g = append(g, r)
			}
			wide = append(wide, g)
		}
		for a := 0; a < n; a++ {
			if b := (a + n/2 + 1) % n; b != a {
				pairs = append(pairs, []int{a, b})
			}
		}
		for a := 0; a+2*gpn < n; a += gpn + 1 {
			ragged = append(ragged, []int{a, a + 1, a + gpn + 1, a + 2*gpn})
		}
		// One node's GPUs and two nodes' (one NVL72 domain, two
		// elsewhere), among data-parallel groups: groups inside one domain
		// are skipped without an arrangement (oneDomain).
		var intra [][]int
		for _, w := range []int{gpn, 2 * gpn} {
			for start := 0; start+w <= n; start += w {
				var g []int
				for r := start; r < start+w; r++ {
					g = append(g, r)
				}
				intra = append(intra, g)
			}
		}
		intra = append(intra, dp...)
		for _, tc := range []struct {
			groups [][]int
			pats   []pattern
		}{
			{dp, []pattern{patRing, patTree, patAllToAll}},
			{wide, []pattern{patRing, patTree, patAllToAll}},
			{ragged, []pattern{patRing, patTree}},
			{intra, []pattern{patRing, patTree, patAllToAll}},
			{pairs, []pattern{patSend}},
			{pairs, []pattern{patSend, patRing}},
		} {
			got, err := staticLoad(c, tc.groups, tc.pats)
			if err != nil {
				t.Fatal(err)
			}
			want := referenceShares(t, c, tc.groups, tc.pats)
			for i := range want {
				for p := range want[i] {
					if math.Float64bits(got[i][p]) != math.Float64bits(want[i][p]) {
						t.Fatalf("%+v: group %v pattern %d: share %v, reference %v", spec, tc.groups[i], p, got[i][p], want[i][p])
					}
					contended = contended || want[i][p] < 1
				}
			}
		}
	}
	if !contended {
		t.Fatal("no group contended: the comparison proves little")
	}
}

// TestScratchesKeptAcrossGC: the scratch a call leaves is the one the next
// call gets, garbage collections between them (a sync.Pool would have
// dropped it), and callers running at once get distinct scratches and the
// shares a lone call gets.
func TestScratchesKeptAcrossGC(t *testing.T) {
	c := twoLeaves(t, 64)
	groups := [][]int{{0, 32}, {1, 33}, {2, 40, 3}}
	want, err := StaticShares(c, groups, true)
	if err != nil {
		t.Fatal(err)
	}
	sc := scratches.get()
	scratches.put(sc)
	runtime.GC()
	runtime.GC()
	if got := scratches.get(); got != sc {
		t.Error("the scratch was not kept across two collections")
	} else {
		scratches.put(got)
	}
	a, b := scratches.get(), scratches.get()
	if a == b {
		t.Error("two callers at once got one scratch")
	}
	scratches.put(a)
	scratches.put(b)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for w := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				got, err := StaticShares(c, groups, true)
				if err == nil && !slices.Equal(got, want) {
					err = fmt.Errorf("shares %v, want %v", got, want)
				}
				if err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := len(scratches.free); n > runtime.GOMAXPROCS(0) {
		t.Errorf("%d scratches kept, more than GOMAXPROCS", n)
	}
}

// TestMeanSendShare: MeanSendShare is the mean of SendShares' shares in
// pair order, 1 for pairs inside one domain or no pairs, an error for a
// rank off the cluster, and it allocates nothing once the scratch is warm.
func TestMeanSendShare(t *testing.T) {
	over := cluster(t, topology.Spec{GPU: "h100-sxm", Nodes: 8, Network: "clos", PodGPUs: 32, Oversubscription: 7})
	flat := cluster(t, topology.Spec{GPU: "h100-sxm", Nodes: 4})
	var cross [][2]int // every GPU of the first half to its mirror in the second
	for a := 0; a < over.NumGPUs()/2; a++ {
		cross = append(cross, [2]int{a, a + over.NumGPUs()/2})
	}
	for _, tc := range []struct {
		name    string
		c       *topology.Cluster
		pairs   [][2]int
		want    float64 // NaN: the mean of SendShares
		wantErr bool
	}{
		{"no pairs", flat, nil, 1, false},
		{"inside one node", flat, [][2]int{{0, 1}, {2, 3}}, 1, false},
		{"one cross-node pair alone", flat, [][2]int{{0, 8}}, 1, false},
		{"oversubscribed clos", over, cross, math.NaN(), false},
		{"rank off the cluster", flat, [][2]int{{0, 999}}, 0, true},
	} {
		got, err := MeanSendShare(tc.c, tc.pairs)
		if (err != nil) != tc.wantErr {
			t.Fatalf("%s: err %v, want error %v", tc.name, err, tc.wantErr)
		}
		if tc.wantErr {
			continue
		}
		want := tc.want
		if math.IsNaN(want) {
			sh, err := SendShares(tc.c, tc.pairs)
			if err != nil {
				t.Fatal(err)
			}
			sum := 0.0
			for _, f := range sh {
				sum += f
			}
			want = sum / float64(len(sh))
			if want >= 1 {
				t.Fatalf("%s: no contention to compare (mean %v)", tc.name, want)
			}
		}
		if got != want {
			t.Errorf("%s: MeanSendShare %v, want %v", tc.name, got, want)
		}
	}
	// AllocsPerRun runs at GOMAXPROCS 1, so put keeps one scratch: with two
	// left by earlier tests (sized for other clusters), the warm-up's would be
	// dropped and the first counted call would size the other one afresh. An
	// empty stack makes the warm-up's scratch the one every counted call takes.
	drainScratches()
	if n := testing.AllocsPerRun(10, func() { _, _ = MeanSendShare(over, cross) }); n != 0 {
		t.Errorf("MeanSendShare: %v allocations a call, want 0", n)
	}
}

// drainScratches empties the scratch stack, so that the next caller makes
// the scratch it then keeps.
func drainScratches() {
	scratches.mu.Lock()
	defer scratches.mu.Unlock()
	clear(scratches.free)
	scratches.free = scratches.free[:0]
}

// groupNetRate skips netRate's route where no host link can lower the NIC
// rate, and equals netRate bit for bit on every pair of clusters where it
// does and where it does not. By hand: 8 × H100 SXM with one 400G NIC a
// GPU, NIC rate 50 GB/s × 0.94 = 47 GB/s; the host links' floor is PCIe
// Gen5 x16, 63 GB/s × 0.8 = 50.4 GB/s (NVLink, 450 GB/s × 0.822, is
// higher), so the shortcut holds and the rate is 47 GB/s. L40S has no
// NVLink and PCIe Gen4 (31.5 GB/s × 0.8 = 25.2 GB/s): the floor is below
// the NIC rate, netRate routes, and the rate is the PCIe link's 25.2 GB/s.
func TestGroupNetRateEqualsNetRate(t *testing.T) {
	for _, tc := range []struct {
		spec     topology.Spec
		short    bool
		wantRate float64
	}{
		{topology.Spec{GPU: "h100-sxm", Nodes: 8}, true, 47e9},
		{topology.Spec{GPU: "l40s", Nodes: 4}, false, 25.2e9},
		{topology.Spec{GPU: "a100-40gb", Nodes: 4, NIC: "ib-hdr-200"}, true, 24e9},
		{topology.Spec{GPU: "h100-sxm", Nodes: 6, NICsPerNode: 2}, true, 11.75e9},
		{topology.Spec{GPU: "gb200", Nodes: 36}, true, 47e9},
		{topology.Spec{GPU: "h100-sxm", Nodes: 16, Network: "clos", PodGPUs: 32, Oversubscription: 7}, true, 47e9},
	} {
		c := cluster(t, tc.spec)
		net := float64(c.NICBandwidthPerGPU()) * c.NIC.Comm.Efficiency
		if short := hostFloor(c, &c.GPU.Comm) >= net; short != tc.short {
			t.Errorf("%+v: shortcut %v, want %v (floor %g, NIC rate %g)", tc.spec, short, tc.short, hostFloor(c, &c.GPU.Comm), net)
		}
		n, gpn := c.NumGPUs(), c.GPUsPerNode()
		checked := 0
		for a := 0; a < n; a++ {
			for _, b := range []int{(a + gpn) % n, (a + n/2 + 1) % n, (a + 3*gpn + 1) % n} {
				if c.DomainOf(a) == c.DomainOf(b) {
					continue
				}
				got, _ := groupNetRate(c, a, b, nil)
				want, _ := netRate(c, a, b, nil)
				if math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("%+v: %d→%d: groupNetRate %v, netRate %v", tc.spec, a, b, got, want)
				}
				if math.Abs(got-tc.wantRate) > 1e-6*tc.wantRate {
					t.Fatalf("%+v: %d→%d: rate %v, by hand %v", tc.spec, a, b, got, tc.wantRate)
				}
				checked++
			}
		}
		if checked == 0 {
			t.Fatalf("%+v: no pair across domains", tc.spec)
		}
	}
}

// TestArrangeIntoEqualsArrange: arrangeInto over dirty buffers with room
// gives arrange's order, offsets and members, written in those buffers
// and capped at their ends; staticLoadWith's arrangements are carved from
// its scratch (the reference comparison above checks its shares).
func TestArrangeIntoEqualsArrange(t *testing.T) {
	for _, spec := range []topology.Spec{
		{GPU: "h100-sxm", Nodes: 8},
		{GPU: "gb200", Nodes: 36},
		{GPU: "h100-sxm", Nodes: 6, NICsPerNode: 2},
	} {
		c := cluster(t, spec)
		n, gpn := c.NumGPUs(), c.GPUsPerNode()
		var groups [][]int
		for j := 0; j < gpn; j++ {
			var g []int
			for r := n - 1 - j; r >= 0; r -= gpn { // descending: the sort has work
				g = append(g, r)
			}
			groups = append(groups, g)
		}
		for a := 0; a+2*gpn < n; a += gpn + 1 {
			groups = append(groups, []int{a + 2*gpn, a + 1, a + gpn + 1, a})
		}
		dirty := func(k int) []int32 {
			b := make([]int32, k)
			for i := range b {
				b[i] = -7
			}
			return b
		}
		ms, order, offs := make([]member, n), dirty(n+1), dirty(n+2)
		for _, g := range groups {
			wo, wd, wm := arrange(c, g)
			go_, gd, gm := arrangeInto(c, g, ms, order[1:], offs[2:])
			if !slices.Equal(go_, wo) || !slices.Equal(gd, wd) || !slices.Equal(gm, wm) {
				t.Fatalf("%+v %v: arrangeInto %v %v, arrange %v %v", spec, g, go_, gd, wo, wd)
			}
			if &go_[0] != &order[1] || &gd[0] != &offs[2] || cap(go_) != len(go_) || cap(gd) != len(gd) {
				t.Fatalf("%+v %v: not carved from the buffers given, capped", spec, g)
			}
		}
		sc := new(loadScratch)
		if _, err := staticLoadWith(sc, c, groups, []pattern{patRing}); err != nil {
			t.Fatal(err)
		}
		if want := totalRanks(groups); cap(sc.orders) != want || len(sc.orders) == 0 {
			t.Fatalf("%+v: scratch orders len %d cap %d, want cap %d", spec, len(sc.orders), cap(sc.orders), want)
		}
	}
}

// LowestStaticShareFor is, per field, the least of StaticSharesFor's
// shares (no contention for no groups), for every selection of patterns,
// on contended and uncontended group sets; its errors are
// StaticSharesFor's.
func TestLowestStaticShareFor(t *testing.T) {
	c := twoLeaves(t, 32)
	contended := false
	for _, groups := range [][][]int{
		nil,
		{seq(8)},
		{{0, 32}, {1, 33}, {2, 40, 3}},
		{{0, 32, 1, 33}, {2, 34}, {4, 36, 5, 37, 6, 38}, {8, 40}},
		{{0, 32}, {5, 5}}, // a repeated rank: an error
	} {
		for pats := Patterns(0); pats <= RingPattern|TreePattern|AllToAllPattern; pats++ {
			all, wantErr := StaticSharesFor(c, groups, pats)
			got, err := LowestStaticShareFor(c, groups, pats)
			if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
				t.Fatalf("%v, patterns %b: error %v, StaticSharesFor's %v", groups, pats, err, wantErr)
			}
			if err != nil {
				continue
			}
			want := noContention
			for _, sh := range all {
				want = Share{Ring: min(want.Ring, sh.Ring), Tree: min(want.Tree, sh.Tree), Direct: min(want.Direct, sh.Direct)}
			}
			if got != want {
				t.Errorf("%v, patterns %b: %+v, the least of %v is %+v", groups, pats, got, all, want)
			}
			contended = contended || got != noContention
		}
	}
	if !contended {
		t.Error("no group set contended: the least of nothing was compared")
	}
}
