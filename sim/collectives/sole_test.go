package collectives

import (
	"testing"
	"unsafe"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/topology"
	"github.com/simtrain/simtrain/sim/units"
)

// playTwice plays a plan of op on g twice, the second start when the first
// ends, on a fresh engine and fabric: as its transfers, or, with sole, as
// MakeSole's timer (ok false where MakeSole refuses it). It returns the
// two ends and every link's bytes and busy time after them.
func playTwice(t *testing.T, c *topology.Cluster, g *Group, op Op, algo Algo, size units.Bytes, sole bool) (ends []engine.Time, bytes []units.Bytes, busy []engine.Time, ok bool) {
	return playTwiceSums(t, c, g, op, algo, size, sole, false)
}

// playTwiceSums is playTwice with the sole plan's link sums skipped
// (Runner.SkipSoleLinks) where skip is set.
func playTwiceSums(t *testing.T, c *topology.Cluster, g *Group, op Op, algo Algo, size units.Bytes, sole, skip bool) (ends []engine.Time, bytes []units.Bytes, busy []engine.Time, ok bool) {
	t.Helper()
	e := engine.New()
	f := network.New(e, c.Bandwidths(), c.Latencies(), network.Flow)
	f.CheckAlone()
	r := NewRunner(e, f, network.Flow, c)
	if skip {
		r.SkipSoleLinks()
	}
	p, err := r.Plan(g, op, algo, size)
	if err != nil {
		t.Fatal(err)
	}
	if sole && !r.MakeSole(&p) {
		return nil, nil, nil, false
	}
	rec := &recorder{}
	rec.then = func(now engine.Time, tag int64) {
		if tag == 1 {
			if err := r.StartPlan(&p, rec, 2); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := r.StartPlan(&p, rec, 1); err != nil {
		t.Fatal(err)
	}
	e.Run()
	r.FlushSole()
	if len(rec.at) != 2 {
		t.Fatalf("%d ends", len(rec.at))
	}
	if f.AloneClashes() != 0 {
		t.Fatalf("%d clashes", f.AloneClashes())
	}
	for l := range c.NumLinks() {
		bytes = append(bytes, f.LinkBytes(l))
		busy = append(busy, f.LinkBusy(l))
	}
	return rec.at, bytes, busy, true
}

// TestMakeSoleMatchesTransfers: a plan MakeSole turns into one timer ends
// when its transfers would, to the nanosecond, and leaves every link the
// same bytes (to the bit) and busy time, started twice in a row, for
// every op and algorithm on groups inside one NVSwitch domain (a node of
// HGX H100, parts of it, an NVL72 rack) at sizes from bytes to
// gigabytes; plans whose transfers share a link are refused.
func TestMakeSoleMatchesTransfers(t *testing.T) {
	cases := []struct {
		spec  topology.Spec
		ranks []int
	}{
		{topology.Spec{GPU: "h100-sxm", Nodes: 2}, []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{topology.Spec{GPU: "h100-sxm", Nodes: 2}, []int{8, 9, 10, 11}},
		{topology.Spec{GPU: "h100-sxm", Nodes: 2}, []int{3, 6}},
		{topology.Spec{GPU: "b200", Nodes: 1}, []int{0, 2, 4, 6}},
		{topology.Spec{GPU: "gb200", Nodes: 18}, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}},
	}
	accepted, refused := 0, 0
	for _, tc := range cases {
		c := cluster(t, tc.spec)
		g, err := NewGroup(c, tc.ranks)
		if err != nil {
			t.Fatal(err)
		}
		for op := AllReduce; op < numOps; op++ {
			for algo := Auto; algo < numAlgos; algo++ {
				for _, b := range []float64{1, 3000, 3 * MiB, 256 * MiB, 2*GiB + 12345} {
					if _, err := g.Cost(op, algo, units.Bytes(b)); err != nil {
						continue // not applicable here
					}
					wantEnds, wantBytes, wantBusy, _ := playTwice(t, c, g, op, algo, units.Bytes(b), false)
					ends, bytes, busy, ok := playTwice(t, c, g, op, algo, units.Bytes(b), true)
					if !ok {
						refused++
						continue
					}
					accepted++
					name := func() string { return tc.spec.GPU + " " + op.String() + "/" + algo.String() }
					if ends[0] != wantEnds[0] || ends[1] != wantEnds[1] {
						t.Fatalf("%s %v B on %v: sole ends %v, transfers %v", name(), b, tc.ranks, ends, wantEnds)
					}
					for l := range bytes {
						if bytes[l] != wantBytes[l] || busy[l] != wantBusy[l] {
							t.Fatalf("%s %v B on %v: link %d carries %v bytes busy %v sole, %v bytes busy %v as transfers",
								name(), b, tc.ranks, l, bytes[l], busy[l], wantBytes[l], wantBusy[l])
						}
					}
					// With the sums skipped, the same ends and no
					// bytes on any link.
					ends, bytes, busy, _ = playTwiceSums(t, c, g, op, algo, units.Bytes(b), true, true)
					if ends[0] != wantEnds[0] || ends[1] != wantEnds[1] {
						t.Fatalf("%s %v B on %v: sole ends %v with the sums skipped, transfers %v", name(), b, tc.ranks, ends, wantEnds)
					}
					for l := range bytes {
						if bytes[l] != 0 || busy[l] != 0 {
							t.Fatalf("%s %v B on %v: link %d carries %v bytes busy %v with the sums skipped", name(), b, tc.ranks, l, bytes[l], busy[l])
						}
					}
				}
			}
		}
	}
	t.Logf("%d plans played sole, %d refused", accepted, refused)
	if accepted == 0 || refused == 0 {
		t.Fatalf("%d plans played sole, %d refused: the test sees one side only", accepted, refused)
	}
}

// TestMakeSoleRefuses: not at analytic fidelity (a timer already), not
// twice-made differently, and a plan over a network hop is refused where
// its transfers share a link (a ring of two nodes' GPUs shares their
// NICs' links).
func TestMakeSoleRefuses(t *testing.T) {
	c := cluster(t, topology.Spec{GPU: "h100-sxm", Nodes: 2})
	g := allRanks(t, c)
	e := engine.New()
	ra := NewRunner(e, nil, network.Analytic, c)
	p, err := ra.Plan(g, AllReduce, Auto, 64*MiB)
	if err != nil {
		t.Fatal(err)
	}
	if ra.MakeSole(&p) {
		t.Fatal("an analytic plan made sole")
	}
	f := network.New(e, c.Bandwidths(), c.Latencies(), network.Flow)
	rf := NewRunner(e, f, network.Flow, c)
	q, err := rf.Plan(g, AllToAll, Auto, 64*MiB)
	if err != nil {
		t.Fatal(err)
	}
	if rf.MakeSole(&q) {
		t.Fatal("an all-to-all over two nodes made sole: its transfers share links")
	}
	if _, ok := q.Sole(); ok {
		t.Fatal("a refused plan reports sole")
	}
}

// TestMakeSoleSharesShapes: the sole plans of two nodes' tensor-parallel
// groups, equal but for their links, share one copy of their transfers and
// slots (shareShape), and each group's collectives still leave exactly
// their transfers' bytes on its own links and none on the other's.
func TestMakeSoleSharesShapes(t *testing.T) {
	c := cluster(t, topology.Spec{GPU: "h100-sxm", Nodes: 2})
	e := engine.New()
	f := network.New(e, c.Bandwidths(), c.Latencies(), network.Flow)
	r := NewRunner(e, f, network.Flow, c)
	var plans [2]Plan
	for n := range plans {
		g, err := NewGroup(c, []int{8 * n, 8*n + 1, 8*n + 2, 8*n + 3, 8*n + 4, 8*n + 5, 8*n + 6, 8*n + 7})
		if err != nil {
			t.Fatal(err)
		}
		if plans[n], err = r.Plan(g, AllReduce, Auto, 64*MiB); err != nil {
			t.Fatal(err)
		}
		if !r.MakeSole(&plans[n]) {
			t.Fatalf("node %d's plan not made sole", n)
		}
	}
	a, b := plans[0].sole, plans[1].sole
	if unsafe.SliceData(a.flows) != unsafe.SliceData(b.flows) || unsafe.SliceData(a.slots) != unsafe.SliceData(b.slots) {
		t.Fatal("equal plans of two groups keep two copies of their transfers and slots")
	}
	if unsafe.SliceData(a.routes) == unsafe.SliceData(b.routes) || a.acc == b.acc {
		t.Fatal("two groups' plans share their routes or their sums")
	}
	rec := &recorder{}
	if err := r.StartPlan(&plans[1], rec, 1); err != nil {
		t.Fatal(err)
	}
	e.Run()
	r.FlushSole()
	// The same collective as transfers on a fabric of its own.
	e2 := engine.New()
	f2 := network.New(e2, c.Bandwidths(), c.Latencies(), network.Flow)
	r2 := NewRunner(e2, f2, network.Flow, c)
	p2, err := r2.Plan(plans[1].g, AllReduce, Auto, 64*MiB)
	if err != nil {
		t.Fatal(err)
	}
	if err := r2.StartPlan(&p2, &recorder{}, 1); err != nil {
		t.Fatal(err)
	}
	e2.Run()
	carried := 0
	for l := range c.NumLinks() {
		got, want := f.LinkBytes(l), f2.LinkBytes(l)
		if got != want || f.LinkBusy(l) != f2.LinkBusy(l) {
			t.Fatalf("link %d carries %v bytes busy %v after node 1's sole collective, %v busy %v as transfers",
				l, got, f.LinkBusy(l), want, f2.LinkBusy(l))
		}
		if got > 0 {
			carried++
		}
	}
	if carried == 0 {
		t.Fatal("no link carried node 1's collective")
	}
}
