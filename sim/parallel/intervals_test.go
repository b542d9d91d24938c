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
// copying the rest against appending each interval; the walk's last ends
// against End per task.

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
		{200, 30, 2000, 4}, {100, 60, 900, 3}, // skips of 0 to 7 (skipFew) and a few of 8 or more
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

// TestSkipFew: how many of 8 intervals (ends increasing) end by t, for
// every t from before the first end to just under the eighth, against a
// count one by one (lm35: it fails with any halving's test strict or its
// step wrong).
func TestSkipFew(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 1))
	for trial := 0; trial < 500; trial++ {
		b := randomMerged(rng, 8, 1+rng.IntN(4), 1+rng.IntN(4))
		if len(b) < 8 {
			continue
		}
		r := (*[8]interval)(b[:8])
		for t0 := b[0].a - 1; t0 < r[7].b; t0++ {
			want := 0
			for want < 8 && r[want].b <= t0 {
				want++
			}
			if got := skipFew(r, t0); got != want {
				t.Fatalf("%v, t %d: %d, want %d", *r, t0, got, want)
			}
		}
	}
}

// TestUnionIntervalsEqualsAppend: the same list, onto empty and onto
// non-empty dst (whose last interval the union may widen), one list
// much longer than the other, either empty; unionRuns (lm35) the same,
// also on lists that merge into few runs (gaps shorter than the
// intervals, so that runs take many of each list, alternating) and on
// a dst whose last interval starts after the lists' first.
func TestUnionIntervalsEqualsAppend(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 3))
	for trial := 0; trial < 6000; trial++ {
		na, nb := rng.IntN(60), rng.IntN(60)
		if trial%3 == 0 {
			nb = rng.IntN(4)
		}
		gap, length := 1+rng.IntN(30), 1+rng.IntN(30)
		if trial%5 == 1 {
			gap, length = 1+rng.IntN(6), 4+rng.IntN(12)
		}
		a := randomMerged(rng, na, gap, length)
		b := randomMerged(rng, nb, 1+rng.IntN(gap), 1+rng.IntN(length))
		var dst []interval
		if trial%4 == 0 {
			dst = randomMerged(rng, 1+rng.IntN(3), 5, 40)
		}
		want := unionIntervalsAppend(slices.Clone(dst), a, b)
		for _, f := range []struct {
			name  string
			union func(dst, a, b []interval) []interval
		}{{"unionIntervals", unionIntervals}, {"unionRuns", unionRuns}} {
			got := f.union(slices.Clone(dst), a, b)
			if !slices.Equal(got, want) {
				t.Fatalf("trial %d: %s %v onto %v ∪ %v: %v, appending %v", trial, f.name, dst, a, b, got, want)
			}
			if got := f.union(make([]interval, 0, 1), b, a); !slices.Equal(got, unionIntervalsAppend(nil, a, b)) {
				t.Fatalf("trial %d: %s %v ∪ %v not symmetric: %v", trial, f.name, b, a, got)
			}
		}
	}
}

// TestWalkEnds: the walk's last end (lastEnd: st.End, and listBoth's for
// the fast paths' tasks unless plain) and its copy engine's transfers'
// (copyEnd), which statsPeriodic reads after walking the prefix, are End's
// maxima (at least 0) over the tasks not a transfer and
// over the transfers: random kinds, tasks not ended, of no length, and
// transfers first, last and alone.
func TestWalkEnds(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 4))
	for trial := 0; trial < 2000; trial++ {
		n := rng.IntN(40)
		tasks, state := make([]Task, n), make([]taskState, n)
		for j := range tasks {
			tasks[j].Kind = Kind(rng.IntN(int(KindHostCopy) + 1))
			if rng.IntN(3) == 0 {
				tasks[j].Kind = KindHostCopy
			}
			tasks[j].Group = GroupKind(rng.IntN(int(NumGroupKinds)))
			if rng.IntN(8) != 0 {
				state[j].start = 1 + engine.Time(rng.IntN(1000))
				state[j].end = state[j].start + engine.Time(rng.IntN(3)*rng.IntN(100))
			}
		}
		var all, notCopy engine.Time
		for j := range tasks {
			if tasks[j].Kind == KindHostCopy {
				all = max(all, state[j].End())
			} else {
				notCopy = max(notCopy, state[j].End())
			}
		}
		x := &Executor{inst: []instance{{prog: &Program{Tasks: tasks}, state: state}}}
		for _, plain := range []bool{false, true} {
			wk := x.newWalker(0, false, true)
			wk.plain = plain
			wk.walk(0, int32(n), 0)
			end, ok := wk.lastEnd()
			if !ok || end != notCopy || wk.copyEnd != all {
				t.Fatalf("trial %d plain %v: end %d (%v), transfers' %d; End per task %d and %d", trial, plain, end, ok, wk.copyEnd, notCopy, all)
			}
			if plain && wk.st.End != notCopy {
				t.Fatalf("trial %d: a plain walk's st.End %d, End per task %d", trial, wk.st.End, notCopy)
			}
		}
	}
}

// clipIntervalsEvery and lengthOfEach are clipIntervals and lengthOf as
// they were: every interval clipped, one interval a turn.
func clipIntervalsEvery(dst, v []interval, lo, hi engine.Time) []interval {
	for _, x := range v {
		a, b := max(x.a, lo), min(x.b, hi)
		if a < b {
			dst = append(dst, interval{a, b})
		}
	}
	return dst
}

func lengthOfEach(v []interval) engine.Time {
	var total engine.Time
	for _, x := range v {
		total += x.b - x.a
	}
	return total
}

// TestClipAndLengthEqualsEvery: windows before, across, inside and past
// lists of 0 to 300 intervals, onto an empty dst and one with intervals;
// lengths of lists of every length mod 4.
func TestClipAndLengthEqualsEvery(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 5))
	for trial := 0; trial < 4000; trial++ {
		v := randomMerged(rng, rng.IntN(300), 1+rng.IntN(20), rng.IntN(20))
		span := engine.Time(1)
		if len(v) > 0 {
			span = v[len(v)-1].b + 1
		}
		lo := engine.Time(rng.IntN(int(span)+40)) - 20
		hi := lo + engine.Time(rng.IntN(int(span)/2+5))
		var dst []interval
		if trial%3 == 0 {
			dst = []interval{{-50, -40}}
		}
		want := clipIntervalsEvery(slices.Clone(dst), v, lo, hi)
		if got := clipIntervals(slices.Clone(dst), v, lo, hi); !slices.Equal(got, want) {
			t.Fatalf("trial %d: %v in [%d, %d): %v, clipping each %v", trial, v, lo, hi, got, want)
		}
		if got, want := lengthOf(v), lengthOfEach(v); got != want {
			t.Fatalf("trial %d: length of %v %d, one by one %d", trial, v, got, want)
		}
	}
}
