package parallel

import (
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
)

// TestArenaReuse builds and plays a sequence of layouts (growing,
// shrinking, other schedules) in one arena and checks every program and
// every task time against a build and play without one: reused storage
// must never leak a previous layout's tasks, dependencies or times.
func TestArenaReuse(t *testing.T) {
	cases := []struct {
		tp, dp, pp, m int
		sched         pipeline.Schedule
		tpOverlap     bool
	}{
		{2, 2, 4, 8, pipeline.OneFOneB, true},
		{2, 1, 8, 32, pipeline.OneFOneB, false},
		{1, 2, 2, 4, pipeline.GPipe, true},
		{4, 1, 1, 2, pipeline.OneFOneB, false},
		{2, 2, 4, 16, pipeline.ZeroBubble, true},
		{2, 2, 8, 16, pipeline.OneFOneB, true},
	}
	pr := commPricer{unit: engine.Millisecond, comm: 300 * engine.Microsecond}
	arena := new(Arena)
	for _, c := range cases {
		l, cfg := stepConfig(t, c.tp, c.dp, c.pp, c.m, c.sched)
		cfg.Overlap.TPComm = c.tpOverlap
		fresh := *cfg
		want, err := Build(&fresh, pr)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Arena = arena
		got, err := Build(cfg, pr)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%+v: %d programs in the arena, %d without", c, len(got), len(want))
		}
		for s := range want {
			g, w := got[s], want[s]
			if g.Stage != w.Stage || !slices.Equal(g.Tasks, w.Tasks) {
				t.Fatalf("%+v stage %d: tasks differ (%d in the arena, %d without)", c, s, len(g.Tasks), len(w.Tasks))
			}
			for i := range w.Tasks {
				if !slices.Equal(g.Deps(i), w.Deps(i)) || !slices.Equal(g.Succ(i), w.Succ(i)) {
					t.Fatalf("%+v stage %d task %d: deps %v succ %v, without the arena %v %v", c, s, i, g.Deps(i), g.Succ(i), w.Deps(i), w.Succ(i))
				}
			}
		}
		xw := playStep(t, l, want, Interference{}, nil)
		xg := playStep(t, l, got, Interference{}, nil)
		for i := 0; i < xw.Instances(); i++ {
			_, _, _, ws, we := xw.Instance(i)
			_, _, _, gs, ge := xg.Instance(i)
			if !slices.Equal(ws, gs) || !slices.Equal(we, ge) {
				t.Fatalf("%+v instance %d: times differ in the arena", c, i)
			}
		}
	}
}
