package main

import (
	"os"
	"runtime"
	"testing"
)

// pointsGCPercent keeps the heap goal at about three times the live heap
// and the workers' reserved storage together (live × (1 + p/100) ≈
// 3 × (live + reserved)), never below 200 and bounded, and gives the
// user's GOGC back whatever the sizes when the environment sets it.
func TestPointsGCPercent(t *testing.T) {
	const mb = 1 << 20
	cases := []struct {
		name           string
		gogc           string // "": unset
		user           int
		live, reserved int64
		want           int
	}{
		{"nothing reserved", "", 100, 15 * mb, 0, 200},
		{"live unknown", "", 100, 0, 180 * mb, 200},
		{"reserved as large as live", "", 100, 20 * mb, 20 * mb, 500},
		{"the 70B sweep's two workers", "", 100, 15 * mb, 180 * mb, 3800},
		{"bounded", "", 100, 1, 1 << 40, 100_000},
		{"the user's GOGC", "150", 150, 15 * mb, 180 * mb, 150},
		{"the user's GOGC=off", "off", -1, 15 * mb, 180 * mb, -1},
		{"the user's GOGC, nothing reserved", "50", 50, 15 * mb, 0, 50},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.gogc != "" {
				t.Setenv("GOGC", c.gogc)
			} else {
				t.Setenv("GOGC", "x") // (restored after the test)
				os.Unsetenv("GOGC")
			}
			got := pointsGCPercent(c.user, c.live, c.reserved)
			if got != c.want {
				t.Fatalf("pointsGCPercent(%d, %d, %d) = %d, want %d", c.user, c.live, c.reserved, got, c.want)
			}
			if c.gogc == "" && c.live > 0 && c.reserved > 0 && got < 100_000 {
				goal := float64(c.live) * (1 + float64(got)/100)
				if three := 3 * float64(c.live+c.reserved); goal < 0.99*three || goal > 1.01*three {
					t.Errorf("heap goal %.4g, want about %.4g", goal, three)
				}
			}
		})
	}
}

// heapLive reads the live heap: after a collection, at least the array the
// test keeps.
func TestHeapLive(t *testing.T) {
	keep := make([]byte, 8<<20)
	runtime.GC() // the live heap as the last collection found it
	if got := heapLive(); got < int64(len(keep)) {
		t.Errorf("heapLive() = %d, below the %d bytes kept", got, len(keep))
	}
	runtime.KeepAlive(keep)
}
