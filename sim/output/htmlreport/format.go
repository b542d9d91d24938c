package htmlreport

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// esc escapes text for HTML and SVG content and attribute values.
func esc(s string) string { return html.EscapeString(s) }

// num formats v with at most prec decimals and no trailing zeros, for SVG
// coordinates (short and deterministic).
func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "0"
	}
	s := strconv.FormatFloat(v, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" || s == "" {
		return "0"
	}
	return s
}

// sig formats v with 3 significant digits, in plain decimal notation.
func sig(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return "0"
	}
	d := 2 - int(math.Floor(math.Log10(math.Abs(v))))
	if d < 0 {
		return grouped(math.Round(v))
	}
	return strconv.FormatFloat(v, 'f', d, 64)
}

// grouped formats the integer part of v with thousands separators.
func grouped(v float64) string {
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

// fmtSeconds formats a duration in seconds with a unit that keeps it short.
func fmtSeconds(s float64) string { return withTimeUnit(s, sig) }

// withTimeUnit picks the unit of a duration in seconds (ns, µs, ms, s, h)
// and formats the number in it with f.
func withTimeUnit(s float64, f func(float64) string) string {
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

// fmtNs formats integer nanoseconds of simulated time.
func fmtNs(ns int64) string { return fmtSeconds(float64(ns) / 1e9) }

// fmtGB formats bytes as decimal gigabytes (10⁹ bytes, as the CLI prints).
func fmtGB(b float64) string { return sig(b/1e9) + " GB" }

// fmtUSD formats dollars.
func fmtUSD(v float64) string {
	if math.Abs(v) >= 1000 {
		return "$" + grouped(v)
	}
	return "$" + sig(v)
}

// fmtPct formats a fraction as a percentage with one decimal.
func fmtPct(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + "%" }

// fmtCount formats a count with thousands separators.
func fmtCount[T ~int | ~int64](n T) string { return grouped(float64(n)) }

// layoutString names a parallel layout as the CLI does.
func layoutString(tp, pp, dp, cp, ep, zero int64, schedule string) string {
	return fmt.Sprintf("tp %d pp %d dp %d cp %d ep %d, zero %d, %s", tp, pp, dp, cp, ep, zero, schedule)
}

// tickNum formats a tick value (a round number by construction) with as
// few digits as it needs: 5, 10, 2.5, 0.25.
func tickNum(v float64) string {
	if v == 0 {
		return "0"
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64) // drop float noise from k*step
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// tickSeconds labels a time tick in the unit fmtSeconds would choose.
func tickSeconds(s float64) string {
	if s == 0 {
		return "0"
	}
	return withTimeUnit(s, tickNum)
}

// tickUSD labels a dollar tick.
func tickUSD(v float64) string {
	if math.Abs(v) >= 1000 {
		return "$" + grouped(v)
	}
	return "$" + tickNum(v)
}
