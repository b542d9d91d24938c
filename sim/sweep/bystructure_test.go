package sweep

import (
	"slices"
	"testing"
)

// TestByStructure: byStructure keeps the points as a set and its costs
// with its points, puts all points of one structure key next to each other
// over the whole list (each key's run starting where its first point
// stood, the rest in their order), marks each run's later points tied,
// and on the 70B layout sweep makes a neighbour of every point that
// repeats a key: 400 pairs (none in index order; the points pruned for
// memory have keys too), all 400 within one part of two workers'
// (newShares cuts at run boundaries; grouped within each part, as
// before, 2 workers made 264 and left 136 pairs' keys split between the
// parts).
func TestByStructure(t *testing.T) {
	sw, err := Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	idx := sw.ShardIndices(0, 1)
	costs := make([]uint64, len(idx))
	for k, i := range idx {
		costs[k] = sw.pointCost(i)
	}
	key := func(i int) (uint64, bool) {
		if sw.points[i].err != "" {
			return 0, false
		}
		s := sw.plans[i].Load()
		l, err := s.NewLayout()
		if err != nil {
			return 0, false
		}
		return s.StepConfig(l).StructureKey()
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
		if _, in := seen[kk]; in != tied[k] {
			t.Errorf("point %d: tied %v, want %v", i, tied[k], in)
		}
		seen[kk] = k
	}
	if n, n0 := pairs(got), pairs(idx); n != 400 || n0 != 0 {
		t.Errorf("neighbours of one key: %d ordered, %d in index order; want 400 and 0", n, n0)
	}
	sh := newShares(got, gc, tied, 2)
	p0, p1 := sh.part(0), sh.part(1)
	if n := pairs(p0) + pairs(p1); n != 400 || len(p0)+len(p1) != len(got) || len(p0) < len(got)/2 {
		t.Errorf("neighbours of one key within two workers' parts (%d and %d points): %d, want 400", len(p0), len(p1), n)
	}
}
