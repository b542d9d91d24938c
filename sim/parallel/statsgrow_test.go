package parallel

import (
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
)

// growIntervals keeps a list's intervals, leaves at least twice the room
// asked for past them (a list's first storage is not grown again for the
// few intervals the next chunk puts), and at least doubles the storage,
// whatever the list's fill: a list one interval short of the room is not
// grown by one.
func TestGrowIntervals(t *testing.T) {
	for _, c := range []struct{ size, n, room, least int }{
		{0, 0, 2048, 4096},
		{2048, 1, 2048, 4096},
		{2048, 600, 2048, 4096},
		{4096, 3643, 2048, 8192},
		{100, 100, 2048, 4196},
	} {
		v := make([]interval, c.size)
		for i := range v {
			v[i] = interval{engine.Time(i), engine.Time(i + 1)}
		}
		u := growIntervals(v, c.n, c.room)
		if len(u) < c.least || len(u) < 2*c.size || len(u)-c.n < 2*c.room || len(u) != cap(u) {
			t.Errorf("%+v: grown to %d (cap %d), want ≥ %d with room %d", c, len(u), cap(u), c.least, 2*c.room)
		}
		if !slices.Equal(u[:c.n], v[:c.n]) {
			t.Errorf("%+v: the first %d intervals moved wrong", c, c.n)
		}
	}
}

// Stats over one arena, walked point after point (small, large enough
// for the walk's lists to grow in the arena's scratch, small again, with
// and without a host thread), equal Stats over a fresh executor of the
// same point: nothing a walk leaves in the scratch reaches the next.
func TestStatsScratchAcrossPoints(t *testing.T) {
	a := new(Arena)
	grown := false
	for _, c := range []struct{ pp, m int }{{2, 4}, {1, 96}, {1, 8}, {2, 64}, {1, 2}, {1, 96}} {
		for _, hosted := range []bool{true, false} {
			play := func(arena *Arena) (*Executor, int) { return playOneFOneB(t, arena, c.pp, c.m, hosted) }
			want, n := play(nil)
			got, _ := play(a)
			for i := 0; i < n; i++ {
				if w, g := want.Stats(i), got.Stats(i); w != g {
					t.Errorf("pp %d m %d host %v stage %d: Stats %+v on the arena, %+v fresh", c.pp, c.m, hosted, i, g, w)
				}
				if w, g := want.StatsEveryWait(i), got.StatsEveryWait(i); w != g {
					t.Errorf("pp %d m %d host %v stage %d: StatsEveryWait %+v on the arena, %+v fresh", c.pp, c.m, hosted, i, g, w)
				}
			}
			for _, v := range a.scratch.lists {
				grown = grown || len(v) > 2048
			}
		}
	}
	if !grown {
		t.Error("the walk's lists never grew past their first storage: the growth is untested")
	}
}
