// Package units names the physical quantities that cross simtrain's
// package boundaries, as Go's time.Duration names a span of time and
// htsim's simtime_picosec and linkspeed_bps name theirs: a hardware
// record's HBM capacity is Bytes, its bandwidths BytesPerSecond, its peaks
// FLOPPerSecond, and a function taking a message size says so in its type
// (network.Fabric.Start, collectives.Group.Cost, parallel.Pricer). The
// types are float64 underneath (sizes and rates are fractional in the
// closed forms) and convert explicitly; they print as plain numbers (no
// String method, so formatted output never changes with a type). Simulated
// time stays the engine's integer nanoseconds (engine.Time), and hardware
// latencies are time.Duration. Inside a package, arithmetic may drop to
// float64 where the units are plain from the names.
package units

// Bytes is an amount of data, in bytes (decimal prefixes: 1 GB = 1e9 B).
type Bytes float64

// BytesPerSecond is a data rate in one direction, in bytes per second.
type BytesPerSecond float64

// FLOPPerSecond is a rate of floating-point operations.
type FLOPPerSecond float64
