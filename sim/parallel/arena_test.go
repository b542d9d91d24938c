package parallel

import (
	"fmt"
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
		got, want := buildInArenaAndFresh(t, fmt.Sprintf("%+v", c), cfg, pr, arena)
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

// TestLinkP2PTableEqualsMap: pairing pipeline sends with receives through
// the table (recvIndex) gives the programs, and the errors, of the map it
// replaced, on 1F1B, GPipe and zero-bubble steps, with a receive missing
// and with a send whose receive is gone.
func TestLinkP2PTableEqualsMap(t *testing.T) {
	copyProgs := func(progs []*Program) []*Program {
		out := make([]*Program, len(progs))
		for s, p := range progs {
			q := *p
			q.Tasks = slices.Clone(p.Tasks)
			out[s] = &q
		}
		return out
	}
	// unlink undoes a linked build's pairing: a send's Match back to the
	// receiving chunk the builder wrote, a receive's Match and Peer unset.
	unlink := func(progs []*Program) []*Program {
		out := copyProgs(progs)
		for _, p := range out {
			for i := range p.Tasks {
				tk := &p.Tasks[i]
				switch tk.Kind {
				case KindSend:
					tk.setP2P(tk.Peer(), int32(progs[tk.Peer()].Tasks[tk.Match()].Chunk))
				case KindRecv:
					tk.setP2P(-1, -1)
				}
			}
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		sched  pipeline.Schedule
		pp, m  int
		breaks func(progs []*Program)
	}{
		{"1f1b", pipeline.OneFOneB, 4, 8, nil},
		{"gpipe", pipeline.GPipe, 3, 5, nil},
		{"zb", pipeline.ZeroBubble, 4, 6, nil},
		{"missing recv", pipeline.OneFOneB, 4, 8, func(progs []*Program) {
			for i := range progs[2].Tasks {
				if progs[2].Tasks[i].Kind == KindRecv {
					progs[2].Tasks[i].Kind = KindForward
					return
				}
			}
		}},
		{"recv moved", pipeline.OneFOneB, 4, 8, func(progs []*Program) {
			for i := range progs[1].Tasks {
				if progs[1].Tasks[i].Kind == KindRecv {
					progs[1].Tasks[i].Micro = 99
					return
				}
			}
		}},
	} {
		_, built := stepPrograms(t, 2, 2, tc.pp, tc.m, tc.sched, commPricer{unit: engine.Millisecond, comm: engine.Microsecond})
		base := unlink(built)
		if tc.breaks != nil {
			tc.breaks(base)
		}
		a, b := copyProgs(base), copyProgs(base)
		errA, errB := linkP2P(a, nil), linkP2PMap(b)
		if fmt.Sprint(errA) != fmt.Sprint(errB) || (tc.breaks == nil) != (errA == nil) {
			t.Errorf("%s: table error %v, map error %v", tc.name, errA, errB)
		}
		if errA != nil {
			continue
		}
		for s := range a {
			if !slices.Equal(a[s].Tasks, b[s].Tasks) || !slices.Equal(a[s].Tasks, built[s].Tasks) {
				t.Errorf("%s: stage %d paired differently", tc.name, s)
			}
		}
	}
}

// buildInArenaAndFresh builds cfg priced by pr twice, without an arena and
// then in arena (cfg.Arena is left set), fails t (label names the case)
// unless the two builds have the same programs: stages, tasks, and every
// task's dependencies and successors. It returns both builds.
func buildInArenaAndFresh(t *testing.T, label string, cfg *StepConfig, pr Pricer, arena *Arena) (got, want []*Program) {
	t.Helper()
	fresh := *cfg
	fresh.Arena = nil
	want, err := Build(&fresh, pr)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Arena = arena
	got, err = Build(cfg, pr)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d programs in the arena, %d without", label, len(got), len(want))
	}
	for s := range want {
		g, w := got[s], want[s]
		if g.Stage != w.Stage || !slices.Equal(g.Tasks, w.Tasks) {
			t.Fatalf("%s stage %d: tasks differ (%d in the arena, %d without)", label, s, len(g.Tasks), len(w.Tasks))
		}
		for i := range w.Tasks {
			if !slices.Equal(g.Deps(i), w.Deps(i)) || !slices.Equal(g.Succ(i), w.Succ(i)) {
				t.Fatalf("%s stage %d task %d: deps %v succ %v, without the arena %v %v", label, s, i, g.Deps(i), g.Succ(i), w.Deps(i), w.Succ(i))
			}
		}
	}
	return got, want
}
