package sweep

import (
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/simulation"
)

// TestByStructure: byStructure keeps the points as a set and its costs
// with its points, puts all points of one structure key next to each other
// over the whole list (each key's run starting where its first point
// stood, the rest in their order), marks each run's later points tied,
// and on the 70B layout sweep makes a neighbour of every point that
// repeats a key: 416 pairs (none in index order; the points pruned for
// memory have keys too; 400 keyed by the full step, before sk39), all 416
// within one part of two workers'
// (newShares cuts at run boundaries; grouped within each part, as
// before, 2 workers made 264 and left 136 pairs' keys split between the
// parts).
func TestByStructure(t *testing.T) {
	sw, idx, costs := load70BCosts(t)
	key := func(i int) (uint64, bool) {
		if sw.points[i].err != "" {
			return 0, false
		}
		return simulation.FirstBuildKey(sw.plans[i].Load(), workerOptions, nil)
	}
	pairs := func(order []int) (n int) {
		for k := 1; k < len(order); k++ {
			a, oka := key(order[k-1])
			b, okb := key(order[k])
			if oka && okb && a == b {
				n++
			}
		}
		return n
	}
	got, gc, tied := sw.byStructure(idx, costs)
	a, b := slices.Clone(idx), slices.Clone(got)
	slices.Sort(a)
	slices.Sort(b)
	if !slices.Equal(a, b) {
		t.Fatal("byStructure changed the set of points")
	}
	for k, i := range got {
		if gc[k] != sw.pointCost(i) {
			t.Fatalf("point %d moved without its cost", i)
		}
	}
	// one run per key over the whole list; the others in index order
	seen := map[uint64]int{}
	runLen := map[uint64]int{}
	lastFree := -1
	for k, i := range got {
		kk, ok := key(i)
		if !ok {
			if i < lastFree {
				t.Errorf("point %d without a key moved before %d", i, lastFree)
			}
			lastFree = i
			continue
		}
		if last, in := seen[kk]; in && last != k-1 {
			t.Errorf("point %d's key runs twice", i)
		}
		// tied to the point before within its key's run, in pieces of maxRun
		if want := runLen[kk]%maxRun != 0; tied[k] != want {
			t.Errorf("point %d: tied %v, want %v", i, tied[k], want)
		}
		seen[kk] = k
		runLen[kk]++
	}
	if n, n0 := pairs(got), pairs(idx); n != 416 || n0 != 0 {
		t.Errorf("neighbours of one key: %d ordered, %d in index order; want 416 and 0", n, n0)
	}
	sh := newShares(got, gc, tied, 2)
	p0, p1 := sh.part(0), sh.part(1)
	if n := pairs(p0) + pairs(p1); n != 416 || len(p0)+len(p1) != len(got) || len(p0) < len(got)/2 {
		t.Errorf("neighbours of one key within two workers' parts (%d and %d points): %d, want 416", len(p0), len(p1), n)
	}
}

// TestAutoPointKeys: on the 8B sweep (parallel.tp auto: loading keeps no
// plans) every valid point has the structure key loading kept, equal to
// its plan's first build's (simulation.FirstBuildKey) as Point resolves it,
// and byStructure groups them: each key's points one run (tied in pieces
// of maxRun), with more neighbours of one key than index order.
func TestAutoPointKeys(t *testing.T) {
	sw, err := Load("../../scenarios/sweeps/llama3-8b-gpu-types.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	idx := sw.ShardIndices(0, 1)
	keys := make([]uint64, sw.Len())
	keyed := 0
	for _, i := range idx {
		if sw.points[i].err != "" {
			if sw.points[i].keyed {
				t.Errorf("invalid point %d keyed", i)
			}
			continue
		}
		if i < len(sw.plans) && sw.plans[i].Load() != nil {
			t.Fatalf("point %d: a plan kept (the sweep has an auto field)", i)
		}
		k, ok := sw.structureKey(i)
		if !ok {
			t.Errorf("valid point %d without a key", i)
			continue
		}
		keyed++
		keys[i] = k
	}
	costs := make([]uint64, len(idx))
	got, _, _ := sw.byStructure(idx, costs)
	pairs := func(order []int) (n int) {
		for k := 1; k < len(order); k++ {
			if sw.points[order[k]].keyed && sw.points[order[k-1]].keyed && keys[order[k]] == keys[order[k-1]] {
				n++
			}
		}
		return n
	}
	runs := map[uint64]int{} // a key's last position in got
	for k, i := range got {
		if !sw.points[i].keyed {
			continue
		}
		if last, in := runs[keys[i]]; in && last != k-1 {
			t.Errorf("point %d's key runs twice", i)
		}
		runs[keys[i]] = k
	}
	n, n0 := pairs(got), pairs(idx)
	t.Logf("%d keyed points, %d keys; neighbours of one key: %d ordered, %d in index order", keyed, len(runs), n, n0)
	if n != keyed-len(runs) || n <= n0 {
		t.Errorf("neighbours of one key: %d ordered (want %d), %d in index order", n, keyed-len(runs), n0)
	}
	for _, i := range idx {
		if p := sw.Point(i); p.Err == nil {
			if k, ok := simulation.FirstBuildKey(p.Scenario, workerOptions, nil); !ok || k != keys[i] {
				t.Errorf("point %d: Point's plan has key %x %v, loading kept %x", i, k, ok, keys[i])
			}
		}
	}
}

// TestByStructureRunCap: a key's run longer than maxRun is tied in pieces
// of maxRun, so that two workers share a sweep whose points all have one
// key (each still re-pricing within its pieces); every point is dealt.
func TestByStructureRunCap(t *testing.T) {
	sw := &Sweep{points: make([]sweepPoint, 11)}
	for i := range sw.points {
		sw.points[i] = sweepPoint{key: 7, keyed: true}
	}
	sw.points[3] = sweepPoint{err: "invalid"} // no key: keeps its place
	idx := sw.ShardIndices(0, 1)
	got, gc, tied := sw.byStructure(idx, make([]uint64, len(idx)))
	want := []bool{false, true, true, true, false, true, true, true, false, true, false}
	wantOrder := []int{0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 3}
	if !slices.Equal(got, wantOrder) || !slices.Equal(tied, want) {
		t.Fatalf("order %v tied %v, want %v %v", got, tied, wantOrder, want)
	}
	s := newShares(got, gc, tied, 2)
	n := [2]int{}
	for w := 0; ; w = 1 - w {
		if _, ok := s.next(w); !ok {
			if _, ok := s.next(1 - w); !ok {
				break
			}
			n[1-w]++
			continue
		}
		n[w]++
	}
	if n[0] == 0 || n[1] == 0 || n[0]+n[1] != len(idx) {
		t.Errorf("points dealt to the two workers: %v of %d", n, len(idx))
	}
}

// load70BCosts loads the 1,000-point 70B sweep and returns its points in
// index order with their predicted costs (pointCost), as Run starts.
func load70BCosts(t *testing.T) (*Sweep, []int, []uint64) {
	t.Helper()
	sw, err := Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	idx := sw.ShardIndices(0, 1)
	costs := make([]uint64, len(idx))
	for k, i := range idx {
		costs[k] = sw.pointCost(i)
	}
	return sw, idx, costs
}
