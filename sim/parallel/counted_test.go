package parallel

import (
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
)

// TestCountedFollowsEventsAndWatch: instance.counted, the one byte
// symEnds.Handle tests for both the event count (CountEvents) and the
// watch (setWatch), follows them through CountEvents, setWatch and
// clearWatch, on fresh and arena storage; a play watched without counting
// pauses once the watched tasks have ended, as a counted one does, with
// the same times; a counted play, watched or not, counts the same events
// to its end. (It fails if a setter leaves counted unset: a watch-only play
// then runs to its end, a count-only one counts nothing.)
func TestCountedFollowsEventsAndWatch(t *testing.T) {
	const m = 16
	type result struct {
		done   int
		state  [][]taskState
		events [][]int32
	}
	var ref *result // the counted and watched play's pause
	var refEnd *result
	for _, c := range []struct {
		name         string
		count, watch bool
		arena        bool
	}{
		{"both", true, true, false},
		{"watch", false, true, false},
		{"watch, arena", false, true, true},
		{"events", true, false, false},
		{"events, arena", true, false, true},
		{"neither", false, false, false},
	} {
		cfg := steadyConfig(t, m, HostModel{})
		if c.arena {
			cfg.Arena = new(Arena)
		}
		progs, err := Build(cfg, unitPricer{unit: engine.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		x := NewSymmetric(engine.New(), cfg.Layout, progs)
		check := func(where string) {
			for i := range x.inst {
				in := &x.inst[i]
				if want := in.events != nil || in.watch != 0; in.counted != want {
					t.Fatalf("%s, %s: stage %d counted %v with events %v, watch %d", c.name, where, i, in.counted, in.events != nil, in.watch)
				}
			}
		}
		check("made")
		if c.count {
			x.CountEvents()
			check("CountEvents")
		}
		if c.watch {
			if !x.setWatch(func(s int) int { return len(x.inst[s].prog.entries) / 2 }) {
				t.Fatalf("%s: nothing watched", c.name)
			}
			check("setWatch")
		}
		x.begin()
		x.eng.Run()
		r := &result{done: x.done}
		for i := range x.inst {
			r.state = append(r.state, slices.Clone(x.inst[i].state))
			r.events = append(r.events, slices.Clone(x.inst[i].events))
		}
		switch {
		case c.watch && (x.watchLeft != 0 || x.done == x.total):
			t.Fatalf("%s: %d watched tasks left, %d of %d done: want a pause with none left", c.name, x.watchLeft, x.done, x.total)
		case !c.watch && x.done != x.total:
			t.Fatalf("%s: %d of %d done", c.name, x.done, x.total)
		case c.watch && ref == nil:
			ref = r
		case c.watch && (r.done != ref.done || !slices.EqualFunc(r.state, ref.state, slices.Equal)):
			t.Fatalf("%s: paused at %d done, the counted play at %d, or times differ", c.name, r.done, ref.done)
		case c.count && refEnd == nil:
			refEnd = r
		case c.count && !slices.EqualFunc(r.events, refEnd.events, slices.Equal):
			t.Fatalf("%s: events differ from the fresh counted play's", c.name)
		}
		if c.count && r.events[0][0] == 0 {
			t.Fatalf("%s: the first task's events not counted", c.name)
		}
		x.clearWatch()
		check("clearWatch")
	}
}
