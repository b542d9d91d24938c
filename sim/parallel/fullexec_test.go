package parallel

import (
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
)

// TestIssueRing: the ring that keeps the issue times of tasks the host
// thread passed before they asked returns each task's time once, whatever
// order the tasks ask in, growing when a slot is still taken (a task that
// asks late, e.g. a gradient reduction waiting behind a long one, while the
// host runs hundreds of tasks ahead).
func TestIssueRing(t *testing.T) {
	for _, c := range []struct {
		name  string
		tasks int
		late  func(u int) bool // tasks that ask only at the end
		lag   int              // the others ask this many passes after theirs
	}{
		{"in order", 1000, func(int) bool { return false }, 0},
		{"lagging", 1000, func(int) bool { return false }, 63},
		{"one late", 1000, func(u int) bool { return u == 5 }, 10},
		{"many late", 3000, func(u int) bool { return u%7 == 3 }, 100},
	} {
		var fi fullInst
		issue := func(u int) engine.Time { return engine.Time(1000*u + 7) }
		got := map[int]engine.Time{}
		take := func(u int) {
			slot := u & (len(fi.ring) - 1)
			got[u] = fi.ring[slot] - 1
			fi.ring[slot] = 0
		}
		for u := 0; u < c.tasks; u++ {
			fi.ringPut(u, issue(u))
			if v := u - c.lag; v >= 0 && !c.late(v) {
				take(v)
			}
		}
		for v := c.tasks - c.lag; v < c.tasks; v++ {
			if !c.late(v) {
				take(v)
			}
		}
		for v := 0; v < c.tasks; v++ {
			if c.late(v) {
				take(v)
			}
		}
		for u := 0; u < c.tasks; u++ {
			if got[u] != issue(u) {
				t.Fatalf("%s: task %d: issue %d, want %d (ring of %d)", c.name, u, got[u], issue(u), len(fi.ring))
			}
		}
		for s, v := range fi.ring {
			if v != 0 {
				t.Fatalf("%s: slot %d still holds %d", c.name, s, v)
			}
		}
	}
}
