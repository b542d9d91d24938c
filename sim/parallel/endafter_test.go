package parallel

import (
	"math"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
)

// TestEndAfterIsAddOfClampedDur holds endAfter to now.Add(max(dur, 0)),
// which it replaces on the play's hot path, for clock readings now ≥ 0:
// hand-computed ends, negative durations counted as 0, and saturation at
// Forever when the sum passes MaxInt64.
func TestEndAfterIsAddOfClampedDur(t *testing.T) {
	const maxT = engine.Time(math.MaxInt64)
	cases := []struct {
		now, dur, want engine.Time
	}{
		{0, 0, 0},
		{0, 7, 7},
		{100, 25, 125},
		{100, -5, 100},                   // a negative Dur starts and ends now
		{100, math.MinInt64, 100},        // the most negative one too
		{maxT - 10, 10, maxT},            // exactly MaxInt64: Forever
		{maxT - 10, 11, engine.Forever},  // one past: saturates
		{maxT - 1, maxT, engine.Forever}, // far past
		{maxT / 2, maxT/2 + 1, maxT},     // the largest sum that fits
		{maxT/2 + 1, maxT/2 + 1, engine.Forever},
		{engine.Forever, 0, engine.Forever},
	}
	for _, c := range cases {
		if got := endAfter(c.now, c.dur); got != c.want {
			t.Errorf("endAfter(%d, %d) = %d, want %d", c.now, c.dur, got, c.want)
		}
		if add := c.now.Add(max(c.dur, 0)); add != c.want {
			t.Errorf("case (%d, %d): Add gives %d, the table %d", c.now, c.dur, add, c.want)
		}
	}
}

// TestLaterIsAdd holds later to now.Add(d) for clock readings now ≥ 0 and
// any d: hand-computed sums, negative d (no saturation: the sum may go
// below now, and below 0), and saturation at Forever past MaxInt64.
func TestLaterIsAdd(t *testing.T) {
	const maxT = engine.Time(math.MaxInt64)
	cases := []struct {
		now, d, want engine.Time
	}{
		{0, 0, 0},
		{0, 7, 7},
		{100, 25, 125},
		{100, -5, 95},
		{3, -5, -2},
		{0, math.MinInt64, math.MinInt64},
		{maxT, math.MinInt64, -1},
		{maxT - 10, 10, maxT},
		{maxT - 10, 11, engine.Forever},
		{maxT - 1, maxT, engine.Forever},
		{engine.Forever, 0, engine.Forever},
	}
	for _, c := range cases {
		if got := later(c.now, c.d); got != c.want {
			t.Errorf("later(%d, %d) = %d, want %d", c.now, c.d, got, c.want)
		}
		if add := c.now.Add(c.d); add != c.want {
			t.Errorf("case (%d, %d): Add gives %d, the table %d", c.now, c.d, add, c.want)
		}
	}
}
