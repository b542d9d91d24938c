package htmlreport

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"

	"github.com/simtrain/simtrain/sim/output/numfmt"
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
func sig(v float64) string { return numfmt.Sig(v) }

// grouped formats the integer part of v with thousands separators.
func grouped(v float64) string { return numfmt.Grouped(v) }

// fmtSeconds formats a duration in seconds with a unit that keeps it short.
func fmtSeconds(s float64) string { return numfmt.Seconds(s) }

// withTimeUnit picks the unit of a duration in seconds and formats the
// number in it with f.
func withTimeUnit(s float64, f func(float64) string) string { return numfmt.WithTimeUnit(s, f) }

// fmtNs formats integer nanoseconds of simulated time.
func fmtNs(ns int64) string { return fmtSeconds(float64(ns) / 1e9) }

// fmtGB formats bytes as decimal gigabytes (10⁹ bytes, as the CLI prints).
func fmtGB(b float64) string { return numfmt.GB(b) }

// fmtUSD formats dollars.
func fmtUSD(v float64) string { return numfmt.USD(v) }

// fmtPct formats a fraction as a percentage with one decimal.
func fmtPct(f float64) string { return numfmt.Pct(f) }

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
