package htmlreport

import (
	"math"
)

// axis maps data values onto [p0, p1] pixels, linearly or logarithmically.
type axis struct {
	lo, hi float64
	p0, p1 float64
	log    bool
}

// newAxis spans [lo, hi] with some margin; log is used only when every
// value is positive and hi/lo reaches logRatio (0: never).
func newAxis(lo, hi, p0, p1, logRatio float64) axis {
	a := axis{p0: p0, p1: p1}
	if logRatio > 0 && lo > 0 && hi/lo >= logRatio {
		a.log = true
		a.lo, a.hi = lo/1.15, hi*1.15
		return a
	}
	if hi == lo {
		d := math.Max(math.Abs(lo)*0.1, 1e-9)
		lo, hi = lo-d, hi+d
	}
	pad := (hi - lo) * 0.05
	a.lo, a.hi = lo-pad, hi+pad
	if lo >= 0 && a.lo < 0 {
		a.lo = 0
	}
	return a
}

// pos is the pixel position of v.
func (a axis) pos(v float64) float64 {
	f := 0.0
	if a.log {
		f = (math.Log(v) - math.Log(a.lo)) / (math.Log(a.hi) - math.Log(a.lo))
	} else {
		f = (v - a.lo) / (a.hi - a.lo)
	}
	return a.p0 + f*(a.p1-a.p0)
}

// ticks returns about n tick values inside the axis: 1-2-5 steps on a
// linear axis, powers of ten (with 2 and 5 when the axis spans less than
// three decades) on a log axis.
func (a axis) ticks(n int) []float64 {
	var out []float64
	if a.log {
		e0, e1 := math.Floor(math.Log10(a.lo)), math.Ceil(math.Log10(a.hi))
		mults := []float64{1}
		if e1-e0 <= 3 {
			mults = []float64{1, 2, 5}
		}
		for e := e0; e <= e1; e++ {
			for _, m := range mults {
				if v := m * math.Pow(10, e); v >= a.lo && v <= a.hi {
					out = append(out, v)
				}
			}
		}
		return out
	}
	return linearTicks(a.lo, a.hi, n)
}

// linearTicks returns the multiples of a 1-2-5 step in [lo, hi], about n.
func linearTicks(lo, hi float64, n int) []float64 {
	if hi <= lo || n < 1 {
		return nil
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		out = append(out, math.Round(v/step)*step)
	}
	return out
}
