package simulation_test

import (
	"context"
	"fmt"
	"math/bits"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/simulation"
	"github.com/simtrain/simtrain/sim/sweep"
)

// keyFieldsSweep varies the layout fields the bundled sweeps keep fixed
// (rank order, expert parallelism and its folding, context parallelism)
// and the cluster, on a small MoE model: layouts that agree in tp, pp and
// dp but not in these must not share price tables.
const keyFieldsSweep = `
name: price-key-fields
scenario:
  name: price-key-fields
  model:
    preset: gpt-oss-20b
  training:
    seq_len: 4096
    global_batch: 64
    micro_batch: 1
    recompute: full
  cluster:
    gpu: h100-sxm
    nodes: 8
  parallel:
    tp: 2
    sp: true
    zero: 3
sweep:
  cluster.nodes: [4, 8]
  parallel.order: [tp-cp-ep-dp-pp, tp-dp-cp-ep-pp]
  parallel.ep: [2, 4]
  parallel.expert_tp: [1, 2]
  parallel.cp: [1, 2]
  parallel.pp: [1, 2]
  training.micro_batch: [1, 2]
`

// Every simulated point of both bundled sweeps, and of keyFieldsSweep,
// run with one Reuse in an order that switches layout (and, where the
// sweep varies it, cluster) at every point, finds in the Reuse exactly the
// price tables a fresh pricer finds: the tables a point takes were filled
// by the same layout's earlier points on the same cluster, under a cache
// that held other layouts' meanwhile (simulation.CheckKeptPrices compares
// every kept entry). Each point's figures also equal a run without a
// Reuse. A key that lets two layouts or clusters share tables fails here.
// The same again on two Reuses sharing a PriceShare, the points dealt
// between them in the Thue–Morse sequence (no period: each layout's
// points land on both), so that a Reuse also takes tables the other put.
func TestKeptPriceTablesEqualFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every point of three sweeps twice")
	}
	dir := "../../scenarios/sweeps"
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("bundled sweeps: %v %v", files, err)
	}
	sweeps := map[string]*sweep.Sweep{}
	for _, f := range files {
		sw, err := sweep.Load(f, sweep.Options{})
		if err != nil {
			t.Fatal(err)
		}
		sweeps[filepath.Base(f)] = sw
	}
	sw, err := sweep.Parse([]byte(keyFieldsSweep), dir, sweep.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sweeps["key fields"] = sw
	for name, sw := range sweeps {
		for _, shared := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s shared %v", name, shared), func(t *testing.T) {
				checkKeptPrices(t, sw, shared)
			})
		}
	}
}

// checkKeptPrices is TestKeptPriceTablesEqualFresh on one sweep, with one
// Reuse or two sharing their prices.
func checkKeptPrices(t *testing.T, sw *sweep.Sweep, shared bool) {
	var n simulation.KeptPriceCounts
	order, layouts := playAgainstFresh(t, sw, shared, func(i int, p *scenario.Plan, reuse *simulation.Reuse) {
		c, err := simulation.CheckKeptPrices(p, reuse)
		if err != nil {
			t.Fatalf("point %d: %v", i, err)
		}
		n.Add(c)
	})
	if layouts < 2 {
		t.Fatalf("%d layouts: nothing to tell apart", layouts)
	}
	if n.Groups == 0 || n.Costs == 0 {
		t.Fatalf("nothing compared: %+v", n)
	}
	t.Logf("%d points, %d layouts; kept entries compared: %+v", len(order), layouts, n)
}

// playAgainstFresh runs sw's simulated points in interleaveLayouts' order
// with one Reuse, or two sharing a PriceShare (the points dealt between
// them in the Thue–Morse sequence), calls check after each point's Run
// with the Reuse that ran it, and fails unless every analytic point's
// figures equal a Run without a Reuse. It returns the order and the number
// of layouts.
func playAgainstFresh(t *testing.T, sw *sweep.Sweep, shared bool, check func(i int, p *scenario.Plan, r *simulation.Reuse)) ([]int, int) {
	t.Helper()
	order, layouts := interleaveLayouts(t, sw)
	reuses := []*simulation.Reuse{new(simulation.Reuse)}
	if shared {
		reuses = append(reuses, new(simulation.Reuse))
		share := new(simulation.PriceShare)
		for _, r := range reuses {
			r.SharePrices(share)
		}
	}
	for k, i := range order {
		reuse := reuses[bits.OnesCount(uint(k))%len(reuses)]
		p := sw.Point(i)
		mem, _ := p.Scenario.MemoryPerStage()
		opt := simulation.Options{FiguresOnly: true, RunID: p.RunID, Memory: mem}
		withReuse := opt
		withReuse.Reuse = reuse
		got, err := simulation.Run(context.Background(), p.Scenario, withReuse)
		if err != nil {
			t.Fatalf("point %d: %v", i, err)
		}
		check(i, p.Scenario, reuse)
		if p.Scenario.Fidelity() != network.Analytic {
			continue
		}
		want, err := simulation.Run(context.Background(), p.Scenario, opt)
		if err != nil {
			t.Fatalf("point %d fresh: %v", i, err)
		}
		if g, w := figuresOf(got), figuresOf(want); !reflect.DeepEqual(g, w) {
			t.Fatalf("point %d: with the Reuse %+v, fresh %+v", i, g, w)
		}
	}
	return order, layouts
}

// interleaveLayouts lists the points `simtrain sweep` simulates (valid,
// fitting) one layout and cluster after another in turn: the first point
// of each, then the second of each, and so on, so that consecutive points
// never share a layout while any other is left. It returns the order and
// the number of layouts.
func interleaveLayouts(t *testing.T, sw *sweep.Sweep) ([]int, int) {
	t.Helper()
	var keys []string
	byKey := map[string][]int{}
	for i := 0; i < sw.Len(); i++ {
		if !sw.Valid(i) {
			continue
		}
		p := sw.Point(i)
		if _, fits := p.Scenario.MemoryPerStage(); !fits {
			continue
		}
		l, err := p.Scenario.NewLayout()
		if err != nil {
			t.Fatal(err)
		}
		spec := p.Scenario.TopologySpec()
		k := fmt.Sprintf("%+v %s %d", *l, spec.GPU, spec.Nodes)
		if byKey[k] == nil {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], i)
	}
	var order []int
	for round := 0; len(order) < sw.Len(); round++ {
		added := false
		for _, k := range keys {
			if pts := byKey[k]; round < len(pts) {
				order = append(order, pts[round])
				added = true
			}
		}
		if !added {
			break
		}
	}
	return order, len(keys)
}

// figuresOf is r's figures alone: no tasks, no pointers to the scenario,
// cluster or layout (a fresh run builds its own), no wall time.
func figuresOf(r *simulation.Result) simulation.Result {
	c := *r
	c.KeepFiguresOnly()
	c.Scenario, c.Cluster, c.Layout = nil, nil, nil
	c.SimWallS = 0
	return c
}

// Reuses on several goroutines sharing one PriceShare take copies of the
// same put tables at once and fill their own: each point's figures equal
// a run without a Reuse (and, under -race, no two goroutines touch one
// table: a copy not taken fails there).
func TestPriceShareConcurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a sweep's points on four goroutines")
	}
	// One cluster: a share keeps the last cluster built and its layouts.
	oneCluster := strings.Replace(keyFieldsSweep, "  cluster.nodes: [4, 8]\n", "", 1)
	sw, err := sweep.Parse([]byte(oneCluster), "../../scenarios/sweeps", sweep.Options{})
	if err != nil {
		t.Fatal(err)
	}
	order, layouts := interleaveLayouts(t, sw)
	if layouts < 2 || len(order) < 2*layouts {
		t.Fatalf("%d points, %d layouts", len(order), layouts)
	}
	first, rest := order[:layouts], order[layouts:] // one point of each layout, then the others
	run := func(i int, reuse *simulation.Reuse) simulation.Result {
		p := sw.Point(i)
		mem, _ := p.Scenario.MemoryPerStage()
		r, err := simulation.Run(context.Background(), p.Scenario, simulation.Options{FiguresOnly: true, RunID: p.RunID, Memory: mem, Reuse: reuse})
		if err != nil {
			t.Errorf("point %d: %v", i, err)
			return simulation.Result{}
		}
		return figuresOf(r)
	}
	want := map[int]simulation.Result{}
	for _, i := range rest {
		want[i] = run(i, nil)
	}
	share := new(simulation.PriceShare)
	reuses := make([]*simulation.Reuse, 5)
	for g := range reuses {
		reuses[g] = new(simulation.Reuse)
		reuses[g].SharePrices(share) // before any run: a share of one Reuse keeps nothing
	}
	for _, i := range first {
		run(i, reuses[4]) // puts every layout's tables
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reuse := reuses[g]
			for k := range rest {
				i := rest[(k+g*len(rest)/4)%len(rest)]
				if got := run(i, reuse); !reflect.DeepEqual(got, want[i]) {
					t.Errorf("goroutine %d, point %d: %+v, fresh %+v", g, i, got, want[i])
				}
			}
		}()
	}
	wg.Wait()
}
