package main

import (
	"testing"
	"time"
)

// TestProgressLine: the run's status line groups the rank-task count by
// thousands and rounds the time to seconds.
func TestProgressLine(t *testing.T) {
	for _, c := range []struct {
		done, total int
		elapsed     time.Duration
		want        string
	}{
		{20150975, 43810816, 48400 * time.Millisecond, "405b: simulating, 45% of 43,810,816 rank-tasks, 48s"},
		{0, 999, 1500 * time.Millisecond, "405b: simulating, 0% of 999 rank-tasks, 2s"},
		{5, 0, time.Second, "405b: simulating, 0% of 0 rank-tasks, 1s"},
	} {
		if got := progressLine("405b", c.done, c.total, c.elapsed); got != c.want {
			t.Errorf("progressLine(%d, %d, %v) = %q, want %q", c.done, c.total, c.elapsed, got, c.want)
		}
	}
}
