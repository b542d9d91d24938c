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
	return groupDigits(strconv.FormatFloat(math.Round(v), 'f', 0, 64))
}

// groupDigits puts thousands separators into the integer part of a plain
// decimal number: "-1234567.5" becomes "-1,234,567.5".
func groupDigits(s string) string {
	whole, frac, hasFrac := strings.Cut(s, ".")
	var b strings.Builder
	if strings.HasPrefix(whole, "-") {
		whole = whole[1:]
		if strings.Trim(whole, "0") != "" || strings.Trim(frac, "0") != "" {
			b.WriteByte('-') // no "-0"
		}
	}
	for i, c := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if hasFrac {
		b.WriteString("." + frac)
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

// ByteCount is a number of bytes: a modelled float64 or an int64 column
// value (the *_bytes columns of the Arrow files).
type ByteCount interface{ ~int64 | ~float64 }

// GB formats bytes as decimal gigabytes (10⁹ bytes).
func GB[T ByteCount](b T) string { return Sig(float64(b)/1e9) + " GB" }

// GiB formats bytes as binary gigabytes (2³⁰ bytes), the unit of the GPU
// memory figures that frameworks log.
func GiB[T ByteCount](b T) string { return Sig(float64(b)/(1<<30)) + " GiB" }

// Compact formats v with n significant digits in plain decimal notation,
// trailing zeros dropped (2, 0.75, 1.25); values of 10ⁿ and more are
// rounded to an integer and grouped. It replaces %.ng, which switches to
// exponents (5e+05) for large and small values.
func Compact(v float64, n int) string {
	s := Digits(v, n)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// Plain formats v exactly (the shortest decimal that reads back as v),
// without an exponent: for configured values such as 2 bytes per
// parameter or 0.35 MFU that should print as written.
func Plain(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// Bytes formats a byte count in decimal units (B, kB, MB, GB, TB, PB) with
// three significant digits.
func Bytes[T ByteCount](b T) string {
	v := float64(b)
	for _, u := range []struct {
		scale float64
		name  string
	}{{1e15, "PB"}, {1e12, "TB"}, {1e9, "GB"}, {1e6, "MB"}, {1e3, "kB"}} {
		if math.Abs(v) >= u.scale {
			return Compact(v/u.scale, 3) + " " + u.name
		}
	}
	return Compact(v, 4) + " B"
}

// Count formats a count with an M, B or T suffix and four significant digits,
// trailing zeros dropped: 70.55B, 125M, 15T, 512.
func Count(v float64) string {
	for _, u := range []struct {
		scale float64
		name  string
	}{{1e12, "T"}, {1e9, "B"}, {1e6, "M"}} {
		if math.Abs(v) >= u.scale {
			return Compact(v/u.scale, 4) + u.name
		}
	}
	return Compact(v, 4)
}

// Fixed formats v with d decimals and its integer part grouped:
// 12,345.68. For columns read against each other, such as the
// nccl-tests-style table of simtrain collective.
func Fixed(v float64, d int) string { return groupDigits(strconv.FormatFloat(v, 'f', d, 64)) }
