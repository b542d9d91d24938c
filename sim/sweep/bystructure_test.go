package sweep

import (
	"slices"
	"testing"
)

// TestByStructure: byStructure keeps every worker's part of the points
// (newShares' split) as a set and its costs with its points, puts each
// part's points of one structure key next to each other (each key's run
// starting where its first point stood, the rest in their order), and on
// the 70B layout sweep makes at least 100 pairs of neighbours of one key
// (none in index order).
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
	for _, workers := range []int{1, 2, 3} {
		got, gc := sw.byStructure(idx, costs, workers)
		for w := range workers {
			lo, hi := len(idx)*w/workers, len(idx)*(w+1)/workers
			a, b := slices.Clone(idx[lo:hi]), slices.Clone(got[lo:hi])
			slices.Sort(a)
			slices.Sort(b)
			if !slices.Equal(a, b) {
				t.Fatalf("%d workers: part %d holds other points", workers, w)
			}
			// one run per key within the part
			seen := map[uint64]int{}
			for k := lo; k < hi; k++ {
				kk, ok := key(got[k])
				if !ok {
					continue
				}
				if last, in := seen[kk]; in && last != k-1 {
					t.Errorf("%d workers: point %d's key runs twice in part %d", workers, got[k], w)
				}
				seen[kk] = k
			}
		}
		for k, i := range got {
			if gc[k] != sw.pointCost(i) {
				t.Fatalf("%d workers: point %d moved without its cost", workers, i)
			}
		}
		if workers == 2 {
			if n, n0 := pairs(got), pairs(idx); n < 100 || n0 != 0 {
				t.Errorf("neighbours of one key: %d ordered, %d in index order", n, n0)
			}
		}
	}
}
