package parallel

import (
	"math/rand/v2"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
)

// walkCheck folds hostRepeats' per-copy check into the walk: on random
// units (tasks ahead and not, issues landing on, before and after their
// played issue and their inputs' end, waits that hold and do not), it
// answers as walk followed by the check it replaced (eq = played > ready
// || iss > ready, refused when eq and iss ≠ played), with the same free
// time when it passes, and eq is then each task's ahead.
func TestWalkCheckEqualsWalkThenCheck(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 1))
	h := &hostFrame{}
	pass, fail := 0, 0
	for range 20000 {
		n := 1 + rng.IntN(6)
		ht := make([]hostTask, n)
		y0 := engine.Time(rng.IntN(40))
		for k := range ht {
			c := &ht[k]
			c.issue = engine.Time(rng.IntN(4))
			c.lo, c.self = never, never
			if rng.IntN(2) == 0 {
				c.lo = engine.Time(rng.IntN(60))
			}
			if rng.IntN(4) == 0 {
				c.self = engine.Time(rng.IntN(60))
			}
			c.played = engine.Time(rng.IntN(60))
			c.ready = never
			if rng.IntN(4) != 0 {
				c.ready = engine.Time(rng.IntN(60))
			}
			c.bound()
		}
		// the old way: walk, then the check
		want := h.walk(ht, 1, y0, true)
		wantOK := true
		for k := range ht {
			c := &ht[k]
			c.eq = c.played > c.ready || c.iss > c.ready
			if c.eq && c.iss != c.played {
				wantOK = false
				break
			}
		}
		got, ok := h.walkCheck(ht, 1, y0)
		if ok != wantOK || ok && got != want {
			t.Fatalf("%+v from %d: walkCheck (%d, %v), walk and check (%d, %v)", ht, y0, got, ok, want, wantOK)
		}
		if ok {
			pass++
			for k := range ht {
				if ht[k].eq != ht[k].ahead {
					t.Fatalf("%+v: task %d eq %v after a passing copy, ahead %v", ht, k, ht[k].eq, ht[k].ahead)
				}
			}
		} else {
			fail++
		}
	}
	if pass < 1000 || fail < 1000 {
		t.Fatalf("%d passing and %d refused units: want many of each", pass, fail)
	}
}
