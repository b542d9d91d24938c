// Package numfmt formats the numbers simtrain shows people — in the CLI's
// tables and in the HTML report — one way: three significant digits in
// plain decimal notation, thousands grouped, a unit that keeps durations
// short, dollars with a sign. Never %g's exponents (issue 21).
package numfmt

import (
	"math"
	"strconv"
	"strings"
)

// Sig formats v with 3 significant digits in plain decimal notation; values
// of 1,000 and more are rounded to an integer and grouped.
func Sig(v float64) string { return Digits(v, 3) }

// Digits formats v with n significant digits in plain decimal notation;
// values of 10ⁿ and more are rounded to an integer and grouped.
func Digits(v float64, n int) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return "0"
	}
	d := n - 1 - int(math.Floor(math.Log10(math.Abs(v))))
	if d < 0 {
		return Grouped(math.Round(v))
	}
	return strconv.FormatFloat(v, 'f', d, 64)
}

// Seconds4 is Seconds with 4 significant digits, for step times that
// layouts are compared by.
func Seconds4(s float64) string {
	return WithTimeUnit(s, func(v float64) string { return Digits(v, 4) })
}

// Grouped formats the integer part of v with thousands separators.
func Grouped(v float64) string {
	s := strconv.FormatFloat(math.Round(math.Abs(v)), 'f', 0, 64)
	var b strings.Builder
	if v < 0 {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Seconds formats a duration in seconds with a unit that keeps it short
// (ns, µs, ms, s, h).
func Seconds(s float64) string { return WithTimeUnit(s, Sig) }

// WithTimeUnit picks the unit of a duration in seconds (ns, µs, ms, s, h)
// and formats the number in it with f.
func WithTimeUnit(s float64, f func(float64) string) string {
	switch a := math.Abs(s); {
	case a == 0:
		return "0 s"
	case a < 1e-6:
		return f(s*1e9) + " ns"
	case a < 1e-3:
		return f(s*1e6) + " µs"
	case a < 1:
		return f(s*1e3) + " ms"
	case a < 3600:
		return f(s) + " s"
	default:
		return f(s/3600) + " h"
	}
}

// USD formats dollars: grouped whole dollars from $1,000 up, three
// significant digits below.
func USD(v float64) string {
	if math.Abs(v) >= 1000 {
		return "$" + Grouped(v)
	}
	return "$" + Sig(v)
}

// Pct formats a fraction as a percentage with one decimal.
func Pct(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + "%" }

// GB formats bytes as decimal gigabytes (10⁹ bytes).
func GB(b float64) string { return Sig(b/1e9) + " GB" }

// GiB formats bytes as binary gigabytes (2³⁰ bytes), the unit of the GPU
// memory figures that frameworks log.
func GiB(b float64) string { return Sig(b/(1<<30)) + " GiB" }
