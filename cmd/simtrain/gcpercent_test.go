package main

import (
	"os"
	"testing"
)

// TestPointsGCPercent checks the collector's setting for a sweep's points:
// the user's GOGC when set, 100 where some point plays every rank, 800
// after a small load, 200 after a large one or one whose size is unknown.
func TestPointsGCPercent(t *testing.T) {
	cases := []struct {
		name   string
		env    string // GOGC, "" unset
		user   int
		loaded uint64
		every  bool // some point plays every rank
		want   int
	}{
		{"70B sweep's load", "", 400, 2_822_176, false, 800},
		{"at the bound", "", 400, smallLoadBytes, false, 800},
		{"just above", "", 400, smallLoadBytes + 1, false, 200},
		{"large load", "", 400, 300 << 20, false, 200},
		{"unknown size", "", 400, ^uint64(0), false, 200},
		{"every rank, small load", "", 400, 2_822_176, true, 100},
		{"every rank, large load", "", 400, 300 << 20, true, 100},
		{"user's GOGC", "150", 150, 1 << 20, false, 150},
		{"user's GOGC, every rank", "800", 800, 1 << 20, true, 800},
		{"user's GOGC off", "off", -1, 300 << 20, false, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.env != "" {
				t.Setenv("GOGC", c.env)
			} else if v, ok := os.LookupEnv("GOGC"); ok {
				t.Setenv("GOGC", v) // restored after the test
				os.Unsetenv("GOGC")
			}
			if got := pointsGCPercent(c.user, c.loaded, c.every); got != c.want {
				t.Errorf("pointsGCPercent(%d, %d, %v) = %d, want %d", c.user, c.loaded, c.every, got, c.want)
			}
		})
	}
}

// TestHeapObjectBytes checks the load's heap reading is a plausible size:
// more than nothing, less than the unknown marker.
func TestHeapObjectBytes(t *testing.T) {
	keep := make([]byte, 1<<20)
	n := heapObjectBytes()
	if n < 1<<20 || n == ^uint64(0) {
		t.Errorf("heapObjectBytes = %d with a 1 MiB object live", n)
	}
	_ = keep[len(keep)-1]
}
