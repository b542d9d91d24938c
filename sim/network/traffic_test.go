package network

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/units"
)

// TestTrafficHandComputed: four links of 1 GB/s (a byte a nanosecond).
// Round 1 (scale 2): 100 bytes over links 0 and 1 and 100 bytes over link
// 2, all at time 0: the three links share one history, so one state;
// link 3 is never crossed. Round 2 (scale 3, at 100 ns): 50 bytes over
// link 0 alone. Totals: link 0 has (100·2 + 50·3) bytes, (100·2 + 50·3)
// ns busy; links 1 and 2 100·2 each; link 3 nothing.
func TestTrafficHandComputed(t *testing.T) {
	e := engine.New()
	bw := []units.BytesPerSecond{gbps, gbps, gbps, gbps}
	f := NewTraffic(e, bw, make([]engine.Time, len(bw)))
	f.Start([]int32{0, 1}, 100, nil, 0)
	f.Start([]int32{2}, 100, nil, 0)
	if got := f.tr.n; got != 2 { // the zero state and the one after 100 bytes from time 0
		t.Fatalf("%d states after round 1's crossings, want 2", got)
	}
	e.Run()
	if ls, before := f.Listed(); !slices.Equal(ls, []int32{0, 1, 2}) || before[0] != (LinkFigures{}) {
		t.Fatalf("Listed %v %v, want links 0, 1, 2 from zero", ls, before)
	}
	f.FoldTraffic(2)
	if f.Pending(0) {
		t.Fatal("link 0 still pending after the fold")
	}
	if e.Now() != 100 {
		t.Fatalf("round 1 ends at %d ns, want 100", e.Now())
	}
	f.Start([]int32{0}, 50, nil, 0)
	e.Run()
	f.FoldTraffic(3)
	bytes, busy := f.Traffic()
	wantB := []float64{350, 200, 200, 0}
	wantT := []int64{350, 200, 200, 0}
	if !slices.Equal(bytes, wantB) || !slices.Equal(busy, wantT) {
		t.Fatalf("Traffic %v B %v ns, want %v and %v", bytes, busy, wantB, wantT)
	}
	if f.LinkBytes(0) != 150 || f.LinkBusy(0) != 150 || f.LinkBytes(3) != 0 {
		t.Fatalf("link 0 carries %v B busy %v ns, link 3 %v B; want 150, 150, 0", f.LinkBytes(0), f.LinkBusy(0), f.LinkBytes(3))
	}
}

// TestTrafficEqualsFoldChanged plays the same random rounds on a plain
// analytic fabric, folding FoldChanged's figures into two arrays as
// links.arrow's reconstruction did, and on a traffic-mode fabric: overlapping
// routes, equal and unequal sizes, starts in several phases per round,
// Listed after the first phase and Repeat onto links not yet crossed (the
// node-shift shortcut's calls). Every figure read on the way and the final
// totals must be the same bits.
func TestTrafficEqualsFoldChanged(t *testing.T) {
	const nl = 40
	bw := make([]units.BytesPerSecond, nl)
	lat := make([]engine.Time, nl)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range bw {
		bw[i] = units.BytesPerSecond([]float64{gbps, 2.5 * gbps, 3 * gbps}[i%3])
		lat[i] = engine.Time(i % 4)
	}
	ea, eb := engine.New(), engine.New()
	fa, fb := New(ea, bw, lat, Analytic), NewTraffic(eb, bw, lat)
	fa.TrackChanges()
	wantB, wantT := make([]float64, nl), make([]int64, nl)
	for round := range 60 {
		scale := float64(1 + rng.IntN(5))
		sizes := []float64{1e6, 1e6 / 3, 7.25e5, 1e6}
		for phase := range 1 + rng.IntN(3) {
			for range 1 + rng.IntN(12) {
				first := rng.IntN(nl / 2)
				route := []int32{int32(first), int32(first + nl/2)} // the same pairs of links often: shared histories
				if rng.IntN(3) == 0 {
					route = append(route, int32((first+7)%(nl/2)))
				}
				size := units.Bytes(sizes[rng.IntN(len(sizes))] * (1 + float64(round%3)))
				fa.Start(route, size, nil, 0)
				fb.Start(route, size, nil, 0)
			}
			ea.Run()
			eb.Run()
			la, pa := fa.Listed()
			lb, pb := fb.Listed()
			if !slices.Equal(la, lb) || !slices.Equal(pa, pb) {
				t.Fatalf("round %d phase %d: Listed %v %v, plain %v %v", round, phase, lb, pb, la, pa)
			}
			if phase == 0 && len(la) > 0 && rng.IntN(2) == 0 {
				for range 3 { // Repeat a crossed link onto one not crossed yet
					src := la[rng.IntN(len(la))]
					dst := rng.IntN(nl)
					if fa.Pending(dst) {
						continue
					}
					var before LinkFigures
					for j, l := range la {
						if l == src {
							before = pa[j]
						}
					}
					fa.Repeat(dst, int(src), before.Busy)
					fb.Repeat(dst, int(src), before.Busy)
					la, pa = fa.Listed()
				}
			}
		}
		for l := range nl {
			if math.Float64bits(float64(fa.LinkBytes(l))) != math.Float64bits(float64(fb.LinkBytes(l))) ||
				fa.LinkBusy(l) != fb.LinkBusy(l) || fa.Pending(l) != fb.Pending(l) {
				t.Fatalf("round %d link %d: %v B %v ns pending %v, plain %v B %v ns pending %v", round, l,
					fb.LinkBytes(l), fb.LinkBusy(l), fb.Pending(l), fa.LinkBytes(l), fa.LinkBusy(l), fa.Pending(l))
			}
		}
		fa.FoldChanged(func(l int32, p, cur LinkFigures) {
			if cur.Bytes != p.Bytes || cur.Busy != p.Busy {
				wantB[l] += (cur.Bytes - p.Bytes) * scale
				wantT[l] += int64(engine.Time(float64(cur.Busy-p.Busy) * scale))
			}
		})
		fb.FoldTraffic(scale)
	}
	gotB, gotT := fb.Traffic()
	for l := range nl {
		if math.Float64bits(gotB[l]) != math.Float64bits(wantB[l]) || gotT[l] != wantT[l] {
			t.Fatalf("link %d: %v B %d ns, plain fabric and fold %v B %d ns", l, gotB[l], gotT[l], wantB[l], wantT[l])
		}
	}
	if fb.Unbounded() {
		t.Fatal("Unbounded without a zero-bandwidth link")
	}
	if int(fb.tr.n) >= 60*nl {
		t.Errorf("%d states for %d links over 60 rounds: histories are not shared", fb.tr.n, nl)
	}
}

// TestTrafficUnbounded: a transfer over a zero-bandwidth link never ends,
// so the plain fabric keeps the link listed across folds; traffic mode
// reports Unbounded and gives no totals (links.arrow's reconstruction then
// plays again on a plain fabric).
func TestTrafficUnbounded(t *testing.T) {
	e := engine.New()
	f := NewTraffic(e, []units.BytesPerSecond{gbps, 0}, make([]engine.Time, 2))
	f.Start([]int32{0}, 10, nil, 0)
	e.Run()
	f.FoldTraffic(1)
	if f.Unbounded() {
		t.Fatal("Unbounded before any zero-bandwidth transfer")
	}
	f.Start([]int32{0, 1}, 10, nil, 0)
	e.Run()
	f.FoldTraffic(1)
	if !f.Unbounded() {
		t.Fatal("a transfer that never ends left the fabric bounded")
	}
	if b, busy := f.Traffic(); b != nil || busy != nil {
		t.Fatalf("Traffic gave %v %v when unbounded, want nil", b, busy)
	}
}
