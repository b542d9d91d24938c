package collectives

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/topology"
	"github.com/simtrain/simtrain/sim/units"
)

// recorder records every CollectiveDone.
type recorder struct {
	at   []engine.Time
	tags []int64
	then func(now engine.Time, tag int64)
}

func (r *recorder) CollectiveDone(now engine.Time, tag int64) {
	r.at = append(r.at, now)
	r.tags = append(r.tags, tag)
	if r.then != nil {
		r.then(now, tag)
	}
}

// play runs one collective alone and returns when it finished.
func play(t testing.TB, c *topology.Cluster, fid network.Fidelity, g *Group, op Op, algo Algo, bytes float64) (engine.Time, *Runner) {
	t.Helper()
	e := engine.New()
	f := network.New(e, c.Bandwidths(), c.Latencies(), fid)
	r := NewRunner(e, f, fid, c)
	rec := &recorder{}
	if err := r.Start(g, op, algo, units.Bytes(bytes), rec, 42); err != nil {
		t.Fatal(err)
	}
	if len(rec.at) != 0 {
		t.Fatal("done called inside Start")
	}
	e.Run()
	if len(rec.at) != 1 || rec.tags[0] != 42 {
		t.Fatalf("%s/%s: done called %d times (tags %v)", op, algo, len(rec.at), rec.tags)
	}
	return rec.at[0], r
}

// TestAnalyticRunner: one timer of Cost.Time.
func TestAnalyticRunner(t *testing.T) {
	c := cluster(t, topology.Spec{GPU: "h100-sxm", Nodes: 2})
	g := allRanks(t, c)
	for _, b := range []float64{0, 1, 3 * MiB, 2 * GiB} {
		want, err := g.Cost(AllReduce, Auto, units.Bytes(b))
		if err != nil {
			t.Fatal(err)
		}
		got, r := play(t, c, network.Analytic, g, AllReduce, Auto, b)
		if got != want.Time || r.Flows() != 0 {
			t.Errorf("%v B: done at %v, Cost.Time %v, %d flows", b, got, want.Time, r.Flows())
		}
	}
}

// TestPlanTimed: a Plan's Timed is the time Start's timer waits (analytic
// fidelity, every op, sizes from nothing to gigabytes), ok = false exactly
// where flow fidelity plays transfers, and Plan fails where Start does.
func TestPlanTimed(t *testing.T) {
	c := cluster(t, topology.Spec{GPU: "h100-sxm", Nodes: 2})
	g := allRanks(t, c)
	one, err := NewGroup(c, []int{3})
	if err != nil {
		t.Fatal(err)
	}
	timed := func(fid network.Fidelity, g *Group, op Op, b float64) (engine.Time, bool, error) {
		e := engine.New()
		p, err := NewRunner(e, network.New(e, c.Bandwidths(), c.Latencies(), fid), fid, c).Plan(g, op, Auto, units.Bytes(b))
		d, ok := p.Timed()
		return d, ok, err
	}
	for _, op := range []Op{AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast} {
		for _, b := range []float64{0, 1, 3 * MiB, 2 * GiB} {
			want, _ := play(t, c, network.Analytic, g, op, Auto, b)
			d, ok, err := timed(network.Analytic, g, op, b)
			if err != nil || !ok || d != want {
				t.Errorf("%s %v B: Timed %v, %v, %v; Start's timer %v", op, b, d, ok, err, want)
			}
			_, ok, err = timed(network.Flow, g, op, b)
			if err != nil || ok != (b == 0) {
				t.Errorf("%s %v B at flow fidelity: ok %v, %v (want ok only with nothing to move)", op, b, ok, err)
			}
			_, ok, err = timed(network.Flow, one, op, b)
			if err != nil || !ok {
				t.Errorf("%s %v B on one rank at flow fidelity: ok %v, %v", op, b, ok, err)
			}
		}
	}
	other := cluster(t, topology.Spec{GPU: "h100-sxm", Nodes: 1})
	r := NewRunner(engine.New(), nil, network.Analytic, c)
	for _, tc := range []struct {
		g    *Group
		algo Algo
	}{{nil, Auto}, {allRanks(t, other), Auto}, {g, Direct}} {
		if _, err := r.Plan(tc.g, AllReduce, tc.algo, 1); err == nil {
			t.Errorf("group %p, %s: no error", tc.g, tc.algo)
		}
	}
}

// TestFlowMatchesClosedForm is issue 2's "flow-level expansion agrees with
// the closed form within 2% on uncontended patterns": every op and algorithm
// on one node, across 4 nodes (A100 with HDR, H100 with NDR), with the named
// patterns of the brief among them (single ring, hierarchical across nodes,
// all-to-all). In practice they agree to 0.1%.
func TestFlowMatchesClosedForm(t *testing.T) {
	specs := []topology.Spec{
		{GPU: "h100-sxm", Nodes: 1},
		{GPU: "h100-sxm", Nodes: 4},
		{GPU: "a100-80gb", Nodes: 4, NIC: "ib-hdr-200"},
		{GPU: "l40s", Nodes: 1},
		{GPU: "l40s", Nodes: 2},
		{GPU: "gb200", Nodes: 20}, // an NVL72 rack of 18 trays and a partial one
	}
	worst := 0.0
	for _, spec := range specs {
		c := cluster(t, spec)
		g := allRanks(t, c)
		for op := AllReduce; op < numOps; op++ {
			for algo := Auto; algo < numAlgos; algo++ {
				for _, b := range []float64{256 * MiB, 2 * GiB} {
					want, err := g.Cost(op, algo, units.Bytes(b))
					if err != nil {
						continue // not applicable here
					}
					got, _ := play(t, c, network.Flow, g, op, algo, b)
					d := float64(got)/float64(want.Time) - 1
					worst = max(worst, math.Abs(d))
					if math.Abs(d) > 0.02 {
						t.Errorf("%s x%d %s/%s %v B: flow %v, closed form %v (%+.2f%%)",
							spec.GPU, c.NumGPUs(), op, algo, b, got, want.Time, d*100)
					}
				}
			}
		}
	}
	t.Logf("worst flow/closed-form difference: %.3f%%", worst*100)
}

// TestFlowCounts: O(n) transfers, O(n*ppn) for rings across domains.
func TestFlowCounts(t *testing.T) {
	c := cluster(t, topology.Spec{GPU: "h100-sxm", Nodes: 4})
	g := allRanks(t, c)
	node, err := NewGroup(c, seq(8))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		g     *Group
		op    Op
		algo  Algo
		flows int64
	}{
		{node, AllReduce, Ring, 8},                 // one ring
		{node, AllReduce, NVLS, 16},                // up and down port per GPU
		{node, Broadcast, Ring, 7},                 // chain
		{node, AllToAll, Direct, 56},               // 8 x 7 pairs
		{g, AllReduce, Ring, 32 + 8*4},             // 8 rings over 4 nodes: 8 edges inside each node, 8 crossings after it
		{g, AllReduce, Hierarchical, 32 + 32 + 32}, // 4 rings of 8, 8 rail rings of 4, 4 rings of 8
		{g, AllToAll, Direct, 32*7 + 32*3},         // intra pairs + one per (rank, other node)
		{g, AllReduce, Tree, 4*7*2 + 6*8*2},        // chains + 6 tree edges x 8 rails x 2 ways
	}
	for _, tc := range cases {
		_, r := play(t, c, network.Flow, tc.g, tc.op, tc.algo, GiB)
		if r.Flows() != tc.flows {
			t.Errorf("%s/%s on %d ranks: %d flows, want %d", tc.op, tc.algo, tc.g.Size(), r.Flows(), tc.flows)
		}
	}
}

// TestFlowContention: two all_reduces on the same 8 GPUs at once share every
// link, so each takes about as long as one of twice the size (transmission
// doubles, fixed time does not).
func TestFlowContention(t *testing.T) {
	c := cluster(t, topology.Spec{GPU: "h100-sxm", Nodes: 1})
	g := allRanks(t, c)
	e := engine.New()
	f := network.New(e, c.Bandwidths(), c.Latencies(), network.Flow)
	r := NewRunner(e, f, network.Flow, c)
	rec := &recorder{}
	for tag := int64(0); tag < 2; tag++ {
		if err := r.Start(g, AllReduce, Ring, GiB, rec, tag); err != nil {
			t.Fatal(err)
		}
	}
	e.Run()
	double, err := g.Cost(AllReduce, Ring, 2*GiB)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.at) != 2 || rec.at[0] != rec.at[1] || math.Abs(float64(rec.at[0])/float64(double.Time)-1) > 0.01 {
		t.Errorf("two concurrent 1 GiB all_reduces end at %v, one of 2 GiB takes %v", rec.at, double.Time)
	}
}

// TestRunnerChainingAndDeterminism: a done callback may start the next
// collective (slots are reused), and two identical runs give identical times.
func TestRunnerChainingAndDeterminism(t *testing.T) {
	c := cluster(t, topology.Spec{GPU: "h100-sxm", Nodes: 2})
	g := allRanks(t, c)
	run := func() []engine.Time {
		e := engine.New()
		f := network.New(e, c.Bandwidths(), c.Latencies(), network.Flow)
		r := NewRunner(e, f, network.Flow, c)
		rec := &recorder{}
		ops := []Op{AllReduce, AllGather, AllToAll, ReduceScatter, Broadcast, SendRecv}
		rec.then = func(now engine.Time, tag int64) {
			if next := tag + 1; next < int64(len(ops)) {
				if err := r.Start(g, ops[next], Auto, 64*MiB, rec, next); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := r.Start(g, ops[0], Auto, 64*MiB, rec, 0); err != nil {
			t.Fatal(err)
		}
		e.Run()
		if len(rec.at) != len(ops) || len(r.runs) != 1 {
			t.Fatalf("%d collectives done, %d slots", len(rec.at), len(r.runs))
		}
		return rec.at
	}
	a, b := run(), run()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("run 1 %v, run 2 %v", a, b)
		}
	}
}

func TestRunnerErrors(t *testing.T) {
	c := cluster(t, topology.Spec{GPU: "h100-sxm", Nodes: 1})
	other := cluster(t, topology.Spec{GPU: "h100-sxm", Nodes: 1})
	g := allRanks(t, c)
	e := engine.New()
	rec := &recorder{}
	noFabric := NewRunner(e, nil, network.Flow, c)
	if err := noFabric.Start(g, AllReduce, Auto, 1, rec, 0); err == nil {
		t.Error("flow without fabric: no error")
	}
	r := NewRunner(e, nil, network.Analytic, other)
	for _, err := range []error{
		r.Start(g, AllReduce, Auto, 1, rec, 0),                                        // other cluster
		NewRunner(e, nil, network.Analytic, c).Start(nil, AllReduce, Auto, 1, rec, 0), // no group
		NewRunner(e, nil, network.Analytic, c).Start(g, AllReduce, Auto, 1, nil, 0),   // no done
		NewRunner(e, nil, network.Analytic, c).Start(g, AllReduce, Direct, 1, rec, 0), // bad algo
	} {
		if err == nil {
			t.Error("no error")
		}
	}
	e.Run()
	if len(rec.at) != 0 {
		t.Errorf("failed starts completed %d collectives", len(rec.at))
	}
}

// TestPlanStartsAsStart: one Plan kept and started again and again (the
// first start records its transfers, the others replay them) plays as
// Start called each time, to the nanosecond, the flow and the byte on
// every link (both fidelities, every algorithm and op, sizes from nothing
// to gigabytes, a group over two nodes and a group of one rank); Plan and
// StartPlan fail where Start does.
func TestPlanStartsAsStart(t *testing.T) {
	c := cluster(t, topology.Spec{GPU: "h100-sxm", Nodes: 2})
	one, err := NewGroup(c, []int{3})
	if err != nil {
		t.Fatal(err)
	}
	// chain plays three of op back to back, each started from the done
	// of the one before, with start (Start, or StartPlan of one Plan).
	chain := func(fid network.Fidelity, start func(r *Runner, done Done, tag int64) error) ([]engine.Time, int64, []units.Bytes) {
		e := engine.New()
		f := network.New(e, c.Bandwidths(), c.Latencies(), fid)
		r := NewRunner(e, f, fid, c)
		rec := &recorder{}
		rec.then = func(now engine.Time, tag int64) {
			if tag < 2 {
				if err := start(r, rec, tag+1); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := start(r, rec, 0); err != nil {
			t.Fatal(err)
		}
		e.Run()
		bytes := make([]units.Bytes, f.NumLinks())
		for l := range bytes {
			bytes[l] = f.LinkBytes(l)
		}
		return rec.at, r.Flows(), bytes
	}
	phases := 0 // the most phases a recorded plan held
	for _, fid := range []network.Fidelity{network.Analytic, network.Flow} {
		for _, g := range []*Group{allRanks(t, c), one} {
			for _, op := range []Op{AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast, SendRecv} {
				for algo := range numAlgos {
					for _, b := range []float64{0, 1, 3 * MiB, 2 * GiB} {
						f := network.New(engine.New(), c.Bandwidths(), c.Latencies(), fid)
						if _, err := NewRunner(engine.New(), f, fid, c).Plan(g, op, algo, units.Bytes(b)); err != nil {
							continue // (not applicable: Start fails alike, TestRunnerErrors)
						}
						want, wantFlows, wantBytes := chain(fid, func(r *Runner, done Done, tag int64) error {
							return r.Start(g, op, algo, units.Bytes(b), done, tag)
						})
						var p Plan
						got, gotFlows, gotBytes := chain(fid, func(r *Runner, done Done, tag int64) error {
							if tag == 0 {
								var err error
								if p, err = r.Plan(g, op, algo, units.Bytes(b)); err != nil {
									return err
								}
							}
							return r.StartPlan(&p, done, tag)
						})
						if len(got) != 3 || len(want) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || gotFlows != wantFlows {
							t.Errorf("%v, %d ranks, %s %s %v B: StartPlan ends %v with %d flows, Start %v with %d", fid, g.Size(), op, algo, b, got, gotFlows, want, wantFlows)
						}
						if !slices.Equal(gotBytes, wantBytes) {
							t.Errorf("%v, %d ranks, %s %v B: the links carried other bytes under StartPlan", fid, g.Size(), op, b)
						}
						phases = max(phases, len(p.flows.phasesOrNil()))
					}
				}
			}
		}
	}
	if phases < 2 {
		t.Errorf("no plan of more than %d phase recorded: the hierarchical ones are not covered", phases)
	}
	g := allRanks(t, c)
	other := cluster(t, topology.Spec{GPU: "h100-sxm", Nodes: 1})
	for _, tc := range []struct {
		r    *Runner
		g    *Group
		algo Algo
	}{
		{NewRunner(engine.New(), nil, network.Analytic, c), nil, Auto},   // no group
		{NewRunner(engine.New(), nil, network.Analytic, other), g, Auto}, // other cluster
		{NewRunner(engine.New(), nil, network.Flow, c), g, Auto},         // flow without fabric
		{NewRunner(engine.New(), nil, network.Analytic, c), g, Direct},   // bad algo
	} {
		if _, err := tc.r.Plan(tc.g, AllReduce, tc.algo, 1); err == nil {
			t.Errorf("Plan(group %p, %s) on a %v runner: no error", tc.g, tc.algo, tc.r.fid)
		}
	}
	r := NewRunner(engine.New(), nil, network.Analytic, c)
	p, err := r.Plan(g, AllReduce, Auto, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.StartPlan(&p, nil, 0); err == nil {
		t.Error("StartPlan without a done: no error")
	}
	if err := r.StartPlan(&Plan{}, &recorder{}, 0); err == nil {
		t.Error("StartPlan of a zero Plan: no error")
	}
}

// phasesOrNil is the recorded phases, none for a nil record (a timed plan).
func (pf *planFlows) phasesOrNil() []planPhase {
	if pf == nil {
		return nil
	}
	return pf.phases
}

// TestPlayFloor: PlayFloor is at most the time the runner takes over the
// collective, alone on the fabric and beside a second one, for every op
// and algorithm on single nodes, across nodes and on rail groups, from
// nothing to gigabytes; exactly Start's timer where the runner plays one;
// and close to the play alone where transmission dominates (at least 85%
// of it at 2 GiB: 1,815 cases, the least 88%, an 80-rank ring over a rack
// and a half of GB200), so that it bounds something.
func TestPlayFloor(t *testing.T) {
	specs := []topology.Spec{
		{GPU: "h100-sxm", Nodes: 1},
		{GPU: "h100-sxm", Nodes: 4},
		{GPU: "a100-80gb", Nodes: 4, NIC: "ib-hdr-200"},
		{GPU: "l40s", Nodes: 2},
		{GPU: "gb200", Nodes: 20},
	}
	checked := 0
	for _, spec := range specs {
		c := cluster(t, spec)
		groups := []*Group{allRanks(t, c)}
		if n := c.NumGPUs(); n > 8 {
			gpn := c.GPUsPerNode()
			var rail []int
			for r := 1; r < n; r += gpn {
				rail = append(rail, r)
			}
			for _, ranks := range [][]int{seq(8), rail, {0, 1, gpn, gpn + 1}} {
				g, err := NewGroup(c, ranks)
				if err != nil {
					t.Fatal(err)
				}
				groups = append(groups, g)
			}
		}
		for _, g := range groups {
			for op := AllReduce; op < numOps; op++ {
				for algo := Auto; algo < numAlgos; algo++ {
					for _, b := range []float64{0, 1024, 3 * MiB, 256 * MiB, 2 * GiB} {
						cost, err := g.Cost(op, algo, units.Bytes(b))
						if err != nil {
							continue // not applicable here
						}
						floor, err := g.PlayFloor(network.Flow, op, algo, units.Bytes(b))
						if err != nil {
							t.Fatal(err)
						}
						if a, err := g.PlayFloor(network.Analytic, op, algo, units.Bytes(b)); err != nil || a != cost.Time {
							t.Errorf("%s x%d %s/%s %v B: analytic floor %v, Cost.Time %v (%v)", spec.GPU, g.Size(), op, algo, b, a, cost.Time, err)
						}
						alone, _ := play(t, c, network.Flow, g, op, algo, b)
						pair := playPair(t, c, g, op, algo, b)
						label := func() string {
							return fmt.Sprintf("%s x%d on %d ranks %s/%s %v B", spec.GPU, c.NumGPUs(), g.Size(), op, algo, b)
						}
						if floor > alone || floor > pair {
							t.Errorf("%s: floor %v, played alone %v, beside another %v", label(), floor, alone, pair)
						}
						if b == 2*GiB && g.Size() > 1 && float64(floor) < 0.85*float64(alone) {
							t.Errorf("%s: floor %v under 85%% of the play alone, %v", label(), floor, alone)
						}
						checked++
					}
				}
			}
		}
	}
	t.Logf("%d collectives checked", checked)
}

// playPair runs two copies of one collective at once on the flow fabric
// and returns when the later ended.
func playPair(t testing.TB, c *topology.Cluster, g *Group, op Op, algo Algo, bytes float64) engine.Time {
	t.Helper()
	e := engine.New()
	r := NewRunner(e, network.New(e, c.Bandwidths(), c.Latencies(), network.Flow), network.Flow, c)
	rec := &recorder{}
	for tag := int64(0); tag < 2; tag++ {
		if err := r.Start(g, op, algo, units.Bytes(bytes), rec, tag); err != nil {
			t.Fatal(err)
		}
	}
	e.Run()
	if len(rec.at) != 2 {
		t.Fatalf("%d of 2 collectives done", len(rec.at))
	}
	return max(rec.at[0], rec.at[1])
}
