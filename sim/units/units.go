// Package units names the physical quantities that cross simtrain's
// package boundaries, as Go's time.Duration names a span of time and
// htsim's simtime_picosec and linkspeed_bps name theirs: a hardware
// record's HBM capacity is Bytes, its bandwidths BytesPerSecond, its peaks
// FLOPPerSecond, and a function taking a message size says so in its type.
// The types are float64 underneath (sizes and rates are fractional in the
// closed forms) and convert explicitly; simulated time stays the engine's
// integer nanoseconds (engine.Time), and hardware latencies are
// time.Duration. Inside a package, arithmetic may drop to float64 where
// the units are plain from the names.
package units

import "strconv"

// Bytes is an amount of data, in bytes (decimal prefixes: 1 GB = 1e9 B).
type Bytes float64

// BytesPerSecond is a data rate in one direction, in bytes per second.
type BytesPerSecond float64

// FLOPPerSecond is a rate of floating-point operations.
type FLOPPerSecond float64

// Seconds converts a transfer of b bytes at rate r to seconds.
func (b Bytes) Seconds(r BytesPerSecond) float64 { return float64(b) / float64(r) }

func (b Bytes) String() string { return scaled(float64(b), "B") }

func (r BytesPerSecond) String() string { return scaled(float64(r), "B/s") }

func (f FLOPPerSecond) String() string { return scaled(float64(f), "FLOP/s") }

// scaled writes x with an SI prefix and three significant digits (80 GB,
// 3.35 TB/s, 989 TFLOP/s).
func scaled(x float64, unit string) string {
	prefixes := []struct {
		p string
		v float64
	}{{"P", 1e15}, {"T", 1e12}, {"G", 1e9}, {"M", 1e6}, {"k", 1e3}}
	for _, p := range prefixes {
		if x >= p.v || -x >= p.v {
			return strconv.FormatFloat(x/p.v, 'g', 3, 64) + " " + p.p + unit
		}
	}
	return strconv.FormatFloat(x, 'g', 3, 64) + " " + unit
}
