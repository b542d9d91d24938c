package parallel

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
)

// The interval algebra's faster forms (issue 18, stats27) against the
// ones they replaced, kept here as references: lengthMinus skipping by
// galloping against the linear skip, unionIntervals writing by index and
// copying the rest against appending each interval, prefixEnds against
// End per task.

// lengthMinusLinear is lengthMinus as it was: b's intervals skipped one
// by one.
func lengthMinusLinear(a, b []interval) engine.Time {
	var total engine.Time
	j := 0
	for _, x := range a {
		cur := x.a
		for j < len(b) && b[j].b <= cur {
			j++
		}
		k := j
		for k < len(b) && b[k].a < x.b {
			if b[k].a > cur {
				total += b[k].a - cur
			}
			cur = max(cur, b[k].b)
			k++
		}
		if cur < x.b {
			total += x.b - cur
		}
	}
	return total
}

// unionIntervalsAppend is unionIntervals as it was.
func unionIntervalsAppend(dst, a, b []interval) []interval {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		var x interval
		if j >= len(b) || (i < len(a) && a[i].a <= b[j].a) {
			x = a[i]
			i++
		} else {
			x = b[j]
			j++
		}
		if n := len(dst); n > 0 && x.a <= dst[n-1].b {
			dst[n-1].b = max(dst[n-1].b, x.b)
			continue
		}
		dst = append(dst, x)
	}
	return dst
}

// randomMerged is a merged list of n intervals whose gaps and lengths
// are drawn up to gap and length: with a short a against a long b, the
// skips reach from none to thousands of b's intervals.
func randomMerged(rng *rand.Rand, n, gap, length int) []interval {
	var v []interval
	at := engine.Time(rng.IntN(gap + 1))
	for ; n > 0; n-- {
		x := interval{at, at + engine.Time(rng.IntN(length+1))}
		v, at = append(v, x), x.b+engine.Time(rng.IntN(gap+1))
	}
	return refMerge(v)
}

// TestLengthMinusEqualsLinear: skips of every size (a few to thousands
// of intervals, so that the gallop and its halving both end at each
// offset), a's intervals ending inside, between and past b's, empty
// lists.
func TestLengthMinusEqualsLinear(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 1))
	sizes := [][4]int{ // a's count and gap, b's count and gap
		{8, 3000, 3000, 4}, {60, 200, 2000, 6}, {40, 10, 40, 10},
		{300, 2, 300, 2}, {0, 5, 50, 5}, {20, 50, 0, 5}, {5, 20000, 4000, 2},
	}
	for trial := 0; trial < 4000; trial++ {
		sz := sizes[trial%len(sizes)]
		a := randomMerged(rng, rng.IntN(sz[0]+1), sz[1], 1+rng.IntN(60))
		b := randomMerged(rng, rng.IntN(sz[2]+1), sz[3], 1+rng.IntN(6))
		if got, want := lengthMinus(a, b), lengthMinusLinear(a, b); got != want {
			t.Fatalf("trial %d (%d and %d intervals): %d, linearly %d", trial, len(a), len(b), got, want)
		}
	}
}

// TestSkipEnded: the first interval from j on that ends after t, for
// every j and t around every end of a list.
func TestSkipEnded(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 2))
	for trial := 0; trial < 300; trial++ {
		b := randomMerged(rng, 1+rng.IntN(70), 3, 4)
		for j := 1; j <= len(b); j++ {
			for _, t0 := range []engine.Time{b[j-1].b, b[len(b)-1].b + 1, b[min(j, len(b)-1)].b, b[min(j+rng.IntN(40), len(b)-1)].b - 1} {
				if b[j-1].b > t0 {
					continue // not skipEnded's case
				}
				want := j
				for want < len(b) && b[want].b <= t0 {
					want++
				}
				if got := skipEnded(b, j, t0); got != want {
					t.Fatalf("%v from %d, t %d: %d, want %d", b, j, t0, got, want)
				}
			}
		}
	}
}

// TestUnionIntervalsEqualsAppend: the same list, onto empty and onto
// non-empty dst (whose last interval the union may widen), one list
// much longer than the other, either empty.
func TestUnionIntervalsEqualsAppend(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 3))
	for trial := 0; trial < 4000; trial++ {
		na, nb := rng.IntN(60), rng.IntN(60)
		if trial%3 == 0 {
			nb = rng.IntN(4)
		}
		a := randomMerged(rng, na, 1+rng.IntN(30), 1+rng.IntN(30))
		b := randomMerged(rng, nb, 1+rng.IntN(30), 1+rng.IntN(30))
		var dst []interval
		if trial%4 == 0 {
			dst = randomMerged(rng, 1+rng.IntN(3), 5, 40)
		}
		want := unionIntervalsAppend(slices.Clone(dst), a, b)
		got := unionIntervals(slices.Clone(dst), a, b)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: %v onto %v ∪ %v: %v, appending %v", trial, dst, a, b, got, want)
		}
		if got := unionIntervals(make([]interval, 0, 1), b, a); !slices.Equal(got, unionIntervalsAppend(nil, a, b)) {
			t.Fatalf("trial %d: %v ∪ %v not symmetric: %v", trial, b, a, got)
		}
	}
}

// TestPrefixEnds: the last end of every task and of those not a copy
// engine's transfer, as End per task gives them (at least 0), with tasks
// not ended (stored 0) and transfers first, last and alone.
func TestPrefixEnds(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 4))
	for trial := 0; trial < 2000; trial++ {
		n := rng.IntN(40)
		hot, state := make([]hotTask, n), make([]taskState, n)
		for j := range hot {
			hot[j].kind = Kind(rng.IntN(int(NumKinds)))
			if rng.IntN(3) == 0 {
				hot[j].kind = KindHostCopy
			}
			if rng.IntN(8) != 0 {
				state[j].end = 1 + engine.Time(rng.IntN(1000))
			}
		}
		var all, notCopy engine.Time
		for j := range hot {
			e := state[j].End()
			all = max(all, e)
			if hot[j].kind != KindHostCopy {
				notCopy = max(notCopy, e)
			}
		}
		if a, nc := prefixEnds(hot, state); a != all || nc != notCopy {
			t.Fatalf("trial %d: %d and %d, End per task %d and %d", trial, a, nc, all, notCopy)
		}
	}
}
