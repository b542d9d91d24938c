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
// time when it passes, and eq is then each task's ahead. Both read the
// QueueSelf wait folded into lo (bound) from `from` on: walk is held to
// the plain walk on the unfolded waits (max(max(y, lo) + issue, self) a
// task, on tasks from `from` on and before it, before their first wait),
// and walkWaits (the walk of frames with other waits) answers as walkCheck.
func TestWalkCheckEqualsWalkThenCheck(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 1))
	h := &hostFrame{p: &Program{}} // (no launch queue: waits looks nothing up)
	pass, fail := 0, 0
	for range 20000 {
		n := 1 + rng.IntN(6)
		ht := make([]hostTask, n)
		y0 := engine.Time(rng.IntN(40))
		plain := y0 // the walk on the waits as made, before bound folds them
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
			c.sync, c.waitFrom = -1, 2 // (copy 1: no wait before `from`)
			if rng.IntN(3) == 0 {
				c.from = 2 // copy 1 is before its `from`: no wait yet
				plain = max(plain+c.issue, c.self)
			} else {
				plain = max(max(plain, c.lo)+c.issue, c.self)
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
		if want != plain {
			t.Fatalf("%+v from %d: walk %d, the plain walk %d", ht, y0, want, plain)
		}
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
		if gotW, okW := h.walkWaits(ht, 1, y0); gotW != got || okW != ok {
			t.Fatalf("%+v from %d: walkWaits (%d, %v), walkCheck (%d, %v)", ht, y0, gotW, okW, got, ok)
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

// hostTask.waitFrom is the first copy whose launch Queue places before the
// task's first is in the step (pos + j·ls − Queue ≥ 0): before it waits
// leaves the thread's time as it is, so walkCheck skips it. On the
// reference test's plays (queues of 1 to 2^20 launches, pp 1, 2 and 4, at
// several copy counts), every task without a synchronisation meets that
// exactly at each copy before `from`, and a direct one's launch lies
// before the unit's. On the frames without other waits before `from`
// (h.waiting unset), walkCheck looks a direct task's holder up itself
// (each stream's scan resuming where its last lookup ended): it answers
// as walkWaits, which looks every wait up through waits, over copies 1
// to e + 2 in order on one frame (as hostRepeats walks them), on a fresh
// frame per copy, and in reverse order on one frame (each stream's scan
// starting again), from several free times.
func TestHostTaskWaitFrom(t *testing.T) {
	checked, skipped, direct, walks, refused, frames, waiting := 0, 0, 0, 0, 0, 0, 0
	hostTasksHook = func(h *hostFrame, ht []hostTask) {
		for k := range ht {
			c := &ht[k]
			if c.sync >= 0 || !h.p.queued {
				if c.waitFrom != 0 {
					t.Fatalf("task %d: waitFrom %d with a synchronisation or no queue", c.t, c.waitFrom)
				}
				continue
			}
			for j := int32(0); j < c.from && j <= h.e+2; j++ {
				x := c.pos + int64(j)*h.ls[c.stream] - h.p.qlim
				if (j < c.waitFrom) != (x < 0) {
					t.Fatalf("task %d copy %d: waitFrom %d, launch x − Queue = %d", c.t, j, c.waitFrom, x)
				}
				if c.direct && x >= h.da[c.stream] {
					t.Fatalf("task %d copy %d before from %d: direct, launch x − Queue = %d ≥ da %d", c.t, j, c.from, x, h.da[c.stream])
				}
				if c.direct && j >= c.waitFrom {
					direct++
				}
				if j < c.waitFrom {
					if got := h.waits(c, j, never); got != never {
						t.Fatalf("task %d copy %d before waitFrom %d: waits %d", c.t, j, c.waitFrom, got)
					}
					skipped++
				}
				checked++
			}
		}
		if h.waiting {
			waiting++
			return
		}
		frames++
		for _, y := range []engine.Time{never, 0, ht[0].played - 1, ht[0].played, ht[0].ready} {
			g, r := *h, *h // (walkCheck's scans move: one frame over the copies in order, one in reverse)
			for j := int32(1); j <= h.e+2; j++ {
				f, w := *h, *h
				want, wantOK := w.walkWaits(ht, j, y)
				if got, ok := f.walkCheck(ht, j, y); got != want || ok != wantOK {
					t.Fatalf("copy %d from %d, a fresh frame: walkCheck (%d, %v), walkWaits (%d, %v)", j, y, got, ok, want, wantOK)
				}
				if got, ok := g.walkCheck(ht, j, y); got != want || ok != wantOK {
					t.Fatalf("copy %d from %d, after the copies before: walkCheck (%d, %v), walkWaits (%d, %v)", j, y, got, ok, want, wantOK)
				}
				walks++
				if !wantOK {
					refused++
				}
			}
			for j := h.e + 2; j >= 1; j-- {
				w := *h
				want, wantOK := w.walkWaits(ht, j, y)
				if got, ok := r.walkCheck(ht, j, y); got != want || ok != wantOK {
					t.Fatalf("copy %d from %d, after the copies after: walkCheck (%d, %v), walkWaits (%d, %v)", j, y, got, ok, want, wantOK)
				}
			}
		}
	}
	defer func() { hostTasksHook = nil }()
	TestHostRepeatsEqualsReference(t)
	t.Logf("%d task copies checked, %d before waitFrom, %d direct; %d frames walked by walkCheck (%d walks, %d refused), %d by walkWaits", checked, skipped, direct, frames, walks, refused, waiting)
	if skipped == 0 || skipped == checked || direct == 0 || refused == 0 || refused == walks {
		t.Errorf("%d of %d task copies before waitFrom, %d direct, %d of %d walks refused, want some of each", skipped, checked, direct, refused, walks)
	}
}
