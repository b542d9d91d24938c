package sweep

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/simulation"
)

// TestLargestFirst: largestFirst moves the runs of the largest points
// (by their largest sweepPoint.work, an invalid point's ignored) to the
// front, largest first, while the costs of their points that will be
// simulated stay within 4/5 of a worker's share (the largest run always;
// a point pruned for memory costs nothing, a point without a plan its
// cost), keeps every run whole with its ties and costs, leaves the others
// in their order, and changes nothing for one worker, an unpredicted cost
// or no estimate at all.
func TestLargestFirst(t *testing.T) {
	pruned, fits := prunedAndFitting(t)
	// runs: [0 1] [2] [3 4] [5] [6] [7]
	tied := []bool{false, true, false, false, true, false, false, false}
	ten := []uint64{9, 11, 10, 12, 8, 10, 10, 10} // 80 in all; runs [0 1] and [3 4] cost 20
	for _, c := range []struct {
		name    string
		work    []int64
		bad     []int // invalid points
		pruned  []int // points whose plan does not fit memory (the others fit, or have none)
		costs   []uint64
		workers int
		want    []int
	}{
		// total 80, share 40, budget 32: [3 4] (90, 20), [6] (60, 10),
		// then [0 1] (50, 20) would pass it
		{"within the budget", []int64{10, 50, 20, 90, 10, 5, 60, 0}, nil, nil, ten, 2, []int{3, 4, 6, 0, 1, 2, 5, 7}},
		// by size [3 4] (90, 20), [6] (60, 10), [5] (50, 10), [2] (30):
		// [5] passes the budget of 32 ...
		{"a run past the budget", []int64{10, 20, 30, 90, 10, 50, 60, 0}, nil, nil, ten, 2, []int{3, 4, 6, 0, 1, 2, 5, 7}},
		// ... but pruned it costs nothing and moves; [2] then passes it
		{"a pruned point costs nothing", []int64{10, 20, 30, 90, 10, 50, 60, 0}, nil, []int{5}, ten, 2, []int{3, 4, 6, 5, 0, 1, 2, 7}},
		// [3 4] with 4 pruned costs 12: [6] 22, [5] 32, [2] would pass
		{"a pruned point of a run", []int64{10, 20, 30, 90, 10, 50, 60, 0}, nil, []int{4}, ten, 2, []int{3, 4, 6, 5, 0, 1, 2, 7}},
		// an invalid point is charged its cost whatever its plan (pointCost
		// gives it 0): [3 4] still costs 20, and [5] passes the budget
		{"an invalid point is not pruned", []int64{10, 20, 30, 90, 10, 50, 60, 0}, []int{4}, []int{4}, ten, 2, []int{3, 4, 6, 0, 1, 2, 5, 7}},
		// budget 21 (3 workers): [3 4] (90, 20) only
		{"a smaller share", []int64{10, 50, 20, 90, 10, 5, 60, 0}, nil, nil, ten, 3, []int{3, 4, 0, 1, 2, 5, 6, 7}},
		// ties of size keep their order: [5] then [6], then [2] (30)
		{"equal sizes", []int64{1, 1, 2, 1, 1, 70, 70, 0}, nil, nil, ten, 2, []int{5, 6, 2, 0, 1, 3, 4, 7}},
		// the largest run, above the budget alone, still moves
		{"one run above the budget", []int64{1, 1, 1, 9, 1, 1, 1, 1}, nil, nil, []uint64{1, 1, 1, 50, 50, 1, 1, 1}, 2, []int{3, 4, 0, 1, 2, 5, 6, 7}},
		// point 3 is invalid: its run's size is point 4's; [6], [0 1]
		{"an invalid point's estimate ignored", []int64{10, 50, 20, 90, 10, 5, 60, 0}, []int{3}, nil, ten, 2, []int{6, 0, 1, 2, 3, 4, 5, 7}},
		{"one worker", []int64{10, 50, 20, 90, 10, 5, 60, 0}, nil, []int{3, 4}, ten, 1, []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{"a cost not predicted", []int64{10, 50, 20, 90, 10, 5, 60, 0}, nil, nil, []uint64{10, 10, 10, 10, 10, unknownCost, 10, 10}, 2, []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{"no estimates", make([]int64, 8), nil, nil, ten, 2, []int{0, 1, 2, 3, 4, 5, 6, 7}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sw := &Sweep{points: make([]sweepPoint, len(c.work)), plans: make([]atomic.Pointer[scenario.Plan], len(c.work))}
			for i, w := range c.work {
				sw.points[i].work = w
				if i%2 == 0 { // the odd points have no plan: their costs count
					sw.plans[i].Store(fits)
				}
			}
			for _, i := range c.pruned {
				sw.plans[i].Store(pruned)
			}
			for _, i := range c.bad {
				sw.points[i].err = "invalid"
			}
			idx := make([]int, len(c.work))
			for k := range idx {
				idx[k] = k
			}
			got, gc, gt := sw.largestFirst(idx, slices.Clone(c.costs), slices.Clone(tied), c.workers)
			if !slices.Equal(got, c.want) {
				t.Fatalf("order %v, want %v", got, c.want)
			}
			for k, i := range got {
				if gc[k] != c.costs[i] || gt[k] != tied[i] {
					t.Errorf("point %d at %d: cost %d tied %v, want %d %v", i, k, gc[k], gt[k], c.costs[i], tied[i])
				}
			}
		})
	}
}

// prunedAndFitting returns a plan of the 70B sweep that does not fit its
// GPUs' memory and one that does.
func prunedAndFitting(t *testing.T) (pruned, fits *scenario.Plan) {
	t.Helper()
	sw, idx, _ := load70BCosts(t)
	for _, i := range idx {
		s := sw.plans[i].Load()
		if sw.points[i].err != "" || s == nil {
			continue
		}
		if _, ok := s.MemoryPerStage(); ok {
			fits = cmpOr(fits, s)
		} else {
			pruned = cmpOr(pruned, s)
		}
	}
	if pruned == nil || fits == nil {
		t.Fatal("the 70B sweep has no pruned point or none that fits")
	}
	return pruned, fits
}

// cmpOr returns a if it is set, else b.
func cmpOr(a, b *scenario.Plan) *scenario.Plan {
	if a != nil {
		return a
	}
	return b
}

// TestPlayedCostPrunesAsEvaluate: on the 70B sweep, playedCost charges
// nothing for exactly the points evaluate prunes for memory (Pruned) and
// its cost for every other, invalid ones included.
func TestPlayedCostPrunesAsEvaluate(t *testing.T) {
	sw, idx, _ := load70BCosts(t)
	pruned := 0
	reuse := new(simulation.Reuse)
	for _, i := range idx {
		c, _ := sw.playedCost([]int{i}, []uint64{7}, nil) // before evaluate takes the plan
		pr, ok := sw.evaluate(context.Background(), i, reuse)
		if !ok {
			t.Fatalf("point %d not evaluated", i)
		}
		if want := pr.Outcome != Pruned; (c == 7) != want {
			t.Errorf("point %d (%v): played cost %d", i, pr.Outcome, c)
		}
		if pr.Outcome == Pruned {
			pruned++
		}
	}
	if pruned == 0 {
		t.Fatal("no pruned point: the test checks nothing")
	}
	t.Logf("%d of %d points pruned", pruned, len(idx))
}

// replayShares deals order (with its costs and ties) through newShares and
// shares.next to workers that take each point's cost to play it (the
// earliest free worker asks first, the lower-numbered on a tie), and
// returns each worker's largest point estimate (sweepPoint.work) and the
// idle tail: how long the first worker to find nothing left waits for the
// last to finish.
func replayShares(sw *Sweep, order []int, costs []uint64, tied []bool, workers int) (largest []int64, tail uint64) {
	cost := make(map[int]uint64, len(order))
	for k, i := range order {
		cost[i] = costs[k]
	}
	s := newShares(order, costs, tied, workers)
	clock, done, largest := make([]uint64, workers), make([]bool, workers), make([]int64, workers)
	idle := uint64(0)
	first := true
	for {
		w := -1
		for u := range clock {
			if !done[u] && (w < 0 || clock[u] < clock[w]) {
				w = u
			}
		}
		if w < 0 {
			break
		}
		i, ok := s.next(w)
		if !ok {
			done[w] = true
			if first {
				idle, first = clock[w], false
			}
			continue
		}
		clock[w] += cost[i]
		largest[w] = max(largest[w], sw.points[i].work)
	}
	return largest, slices.Max(clock) - idle
}

// TestLargestFirstDeals70B: on the 1,000-point 70B sweep, replayed on two
// and three workers with each point taking its predicted cost, the
// largest points moved first (largestFirst) leave every worker but one a
// largest point estimate below what they had in byStructure's order
// alone, with an idle tail no longer, and every key's points still
// neighbours.
func TestLargestFirstDeals70B(t *testing.T) {
	sw, idx, costs := load70BCosts(t)
	order, oc, ot := sw.byStructure(idx, costs)
	for _, workers := range []int{2, 3} {
		lo, lc, lt := sw.largestFirst(order, oc, ot, workers)
		before, tailBefore := replayShares(sw, order, oc, ot, workers)
		after, tailAfter := replayShares(sw, lo, lc, lt, workers)
		t.Logf("%d workers: largest estimates %v, tail %d → %v, tail %d", workers, before, tailBefore, after, tailAfter)
		slices.Sort(before)
		slices.Sort(after)
		if after[workers-1] != before[workers-1] || after[workers-2] >= before[workers-2] {
			t.Errorf("%d workers: sorted largest estimates %v, want the largest as before and the others below %v's", workers, after, before)
		}
		if tailAfter > tailBefore {
			t.Errorf("%d workers: idle tail %d, longer than %d before", workers, tailAfter, tailBefore)
		}
		if a, b := keyPairs(sw, lo), keyPairs(sw, order); a != b {
			t.Errorf("%d workers: %d neighbours of one key, %d before", workers, a, b)
		}
	}
}

// keyPairs counts the neighbours in order that share a structure key.
func keyPairs(sw *Sweep, order []int) (n int) {
	for k := 1; k < len(order); k++ {
		a, oka := sw.structureKey(order[k-1])
		b, okb := sw.structureKey(order[k])
		if oka && okb && a == b {
			n++
		}
	}
	return n
}
