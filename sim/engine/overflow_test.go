package engine

import (
	"errors"
	"math"
	"math/big"
	"testing"
)

func TestTimeAddSaturates(t *testing.T) {
	for _, c := range []struct{ a, b, want Time }{
		{1, 2, 3},
		{Forever - 1, 1, Forever},
		{Forever - 1, 2, Forever},
		{Forever, Forever, Forever},
		{Second, Forever, Forever},
		{-Forever, -1, -Forever},
		{-5, 3, -2},
		{Forever, -1, Forever - 1},
		{-Forever, -Forever, -Forever},
		{Forever, -Forever, 0},
		{-Forever + 1, -1, -Forever},
		{-3, -Forever, -Forever},
		// Outside [-Forever, Forever]: a sum landing on MinInt64 from
		// two negative operands saturates, any other sum is kept.
		{math.MinInt64 + 1, -1, -Forever},
		{math.MinInt64, 0, math.MinInt64},
		{0, math.MinInt64, math.MinInt64},
		{math.MinInt64, 1, math.MinInt64 + 1},
		{math.MinInt64, math.MinInt64, -Forever},
		{math.MinInt64, Forever, -1},
	} {
		if got := c.a.Add(c.b); got != c.want {
			t.Errorf("%d + %d = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// Every pair of times near the edges of int64 and around zero adds to
// the exact sum clamped to [-Forever, Forever] (computed with big.Int).
func TestTimeAddClampsExactSum(t *testing.T) {
	var vals []Time
	for _, v := range []Time{0, 1, Second, Forever / 2, Forever} {
		for _, d := range []Time{-2, -1, 0, 1, 2} {
			if w := v + d; w >= 0 && w <= Forever {
				vals = append(vals, w, -w)
			}
		}
	}
	lo, hi := big.NewInt(int64(-Forever)), big.NewInt(int64(Forever))
	for _, a := range vals {
		for _, b := range vals {
			sum := new(big.Int).Add(big.NewInt(int64(a)), big.NewInt(int64(b)))
			if sum.Cmp(hi) > 0 {
				sum = hi
			} else if sum.Cmp(lo) < 0 {
				sum = lo
			}
			if got := a.Add(b); int64(got) != sum.Int64() {
				t.Errorf("%d + %d = %d, want %d", a, b, got, sum.Int64())
			}
		}
	}
}

type counter struct{ n int }

func (c *counter) Handle(Time, int64) { c.n++ }

// A capped duration (Seconds clamps to Forever) added to the current time
// wrapped around to a negative time and panicked with "event scheduled at
// -9.2e+09s" (issue 19). Now the sum saturates, the event is not played,
// Run stops and Err reports ErrTimeOverflow.
func TestAfterBeyondForeverStopsWithError(t *testing.T) {
	e := New()
	var c counter
	h := e.Register(&c)
	e.At(10*Second, h, 0)
	e.Run()
	e.After(Seconds(math.Inf(1)), h, 1) // Forever after now
	e.After(Second, h, 2)
	if n := e.Run(); n != 0 {
		t.Errorf("Run played %d events after an overflow", n)
	}
	if !errors.Is(e.Err(), ErrTimeOverflow) {
		t.Fatalf("Err = %v, want ErrTimeOverflow", e.Err())
	}
	if c.n != 1 {
		t.Errorf("handled %d events, want 1", c.n)
	}
}

// The overflow check must not cost an allocation on the hot path.
func TestScheduleAllocatesNothing(t *testing.T) {
	e := New()
	var c counter
	h := e.Register(&c)
	allocs := testing.AllocsPerRun(1000, func() {
		e.After(Microsecond, h, 0)
		e.RunUntil(e.Now() + Microsecond)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per event", allocs)
	}
}
