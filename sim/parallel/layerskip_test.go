package parallel

import (
	"reflect"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
)

// TestOnlineSkipsClean: on the one-stage step of TestMeasureLayersRepeat
// (4 passes of 6 layers of 2 tasks, reach 1) the check passes on pairs
// (0, 1) and (1, 2), settled when layer 2's mlp_fwd ends; layer 3's
// attn_fwd starts at that instant (played), the rest of layers 3 and 4 is
// skipped and 5, the pass's last, plays: 4 clean skips of 3 tasks, no
// receive anywhere.
func TestOnlineSkipsClean(t *testing.T) {
	p, start, end, events := layerPlay(t, 2)
	got := MeasureOnlineSkips(p, start, end, nil, events)
	want := OnlineSkips{Passes: 4, Fired: 4, Clean: 4, CleanTasks: 12, FirstHit: -1, StateOK: 4}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

// TestOnlineSkipsOutcomes: the same play with its times changed as an
// unseen input would change them. mlp_fwd of pass F0's layer 4 (skipped)
// ending 1 ns late makes F0's skip wrong (its layers did not repeat, and
// no receive explains it); the check of F0 still passes (pairs 0 and 1).
// Layer 1's mlp_fwd 1 ns late breaks pairs (0, 1) and (1, 2) of F0: its
// check passes only at (2, 3), (3, 4), with nothing left to skip. A receive starting inside the skip's window
// makes it a hit, and one ending before it while a receive plays
// beside its first task marks it RecvBeside; at the window's last end (a
// tie) it is still a hit. The state at td (layerStateRepeats) shows no
// cause of the late layer 4 (an input the play did not see: the state
// check passes a wrong skip there), and a receive in flight at td is
// state without a partner a layer back: that pass's state check fails.
func TestOnlineSkipsOutcomes(t *testing.T) {
	p, start, end, events := layerPlay(t, 2)
	e0 := p.entries[0]
	mlp := func(l int32) int32 { return e0 + 1 + l*2 + 1 } // embedding_fwd, l layers of 2, attn_fwd
	for _, l := range []int32{1, 4} {
		if p.Tasks[mlp(l)].Name.String() != "mlp_fwd" || p.Tasks[mlp(l)].Layer != l {
			t.Fatalf("task %d is %s of layer %d, want mlp_fwd of layer %d", mlp(l), p.Tasks[mlp(l)].Name, p.Tasks[mlp(l)].Layer, l)
		}
	}
	// A receive to move: the program has none (one stage), so the
	// optimizer, after every pass, is made one.
	opt := int32(len(p.Tasks) - 1)
	if p.Tasks[opt].Kind != KindOptimizer {
		t.Fatalf("the last task is %s, want the optimizer", p.Tasks[opt].Kind)
	}
	attn3 := mlp(3) - 1
	for _, c := range []struct {
		name string
		recv bool
		edit func(start, end []engine.Time)
		want OnlineSkips
	}{
		{"layer 4 late", false, func(_, end []engine.Time) { end[mlp(4)]++ },
			OnlineSkips{Passes: 4, Fired: 4, Clean: 3, CleanTasks: 9, Wrong: 1, WrongTasks: 3, FirstHit: -1, StateOK: 4, StateWrong: 1,
				WrongWhy: map[string]int{"compute slower beside none, later (pair 3 of 5)": 1}}},
		{"layer 1 late", false, func(_, end []engine.Time) { end[mlp(1)]++ },
			OnlineSkips{Passes: 4, Fired: 3, Clean: 3, CleanTasks: 9, FirstHit: -1, StateOK: 3}},
		{"a receive after the passes", true, func([]engine.Time, []engine.Time) {},
			OnlineSkips{Passes: 4, Fired: 4, Clean: 4, CleanTasks: 12, FirstHit: -1, StateOK: 4}},
		{"a receive inside F0's window", true, func(start, end []engine.Time) {
			start[opt], end[opt] = start[mlp(4)], end[mlp(4)]
		}, OnlineSkips{Passes: 4, Fired: 4, Clean: 3, CleanTasks: 9, Hit: 1, HitTasks: 3, HitEarly: 1, StateOK: 4}},
		{"a receive at F0's window's last end", true, func(start, end []engine.Time) {
			start[opt], end[opt] = end[mlp(4)], end[mlp(4)]+1
		}, OnlineSkips{Passes: 4, Fired: 4, Clean: 3, CleanTasks: 9, Hit: 1, HitTasks: 3, HitEarly: 2, StateOK: 4}},
		{"a receive beside F0's window's first task", true, func(start, end []engine.Time) {
			start[opt], end[opt] = start[attn3]-1, start[attn3]+1
		}, OnlineSkips{Passes: 4, Fired: 4, Clean: 4, CleanTasks: 12, RecvBeside: 1, FirstHit: -1, StateOK: 3}},
	} {
		s, e := append([]engine.Time(nil), start...), append([]engine.Time(nil), end...)
		c.edit(s, e)
		kind := p.Tasks[opt].Kind
		if c.recv {
			p.Tasks[opt].Kind = KindRecv
		}
		got := MeasureOnlineSkips(p, s, e, nil, events)
		p.Tasks[opt].Kind = kind
		want := c.want
		if want.Hit > 0 {
			want.FirstHit = s[opt]
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", c.name, got, want)
		}
	}
}

// TestForeignBound: on a two-stage 1F1B play (4 micro-batches, 6 layers a
// stage, DP 2) the bound of every receive not started at ws, taken at
// every instant a task starts, is at most its start (the bound is one),
// and it clears an empty window at the play's start, where nothing has
// ended and every send waits for a chain of tasks. A receive moved to
// start at ws, before its bound, is reported, as is the sweep's rule
// (OnlineSkips: no violation, proven skips on this play).
func TestForeignBound(t *testing.T) {
	cfg := copyConfig(t, 2, 1, 4, 12)
	x, _ := countedPlay(t, cfg)
	recvs := 0
	for i := range x.inst {
		for t0 := range x.inst[i].state {
			ws := x.inst[i].state[t0].Start()
			if _, _, bad := x.foreignBound(i, ws, ws); bad != 0 {
				t.Fatalf("instance %d at %v: %d receives started before their bound", i, ws, bad)
			}
		}
		for r := range x.inst[i].prog.Tasks {
			if x.inst[i].prog.Tasks[r].Kind == KindRecv {
				recvs++
			}
		}
	}
	if recvs == 0 {
		t.Fatal("no receive in the two-stage play")
	}
	if proven, _, _ := x.foreignBound(1, 0, 0); !proven {
		t.Error("an empty window at the start not cleared")
	}
	rep := x.OnlineSkips()
	if rep.Violations != 0 || rep.Fired == 0 || rep.Proven == 0 {
		t.Errorf("OnlineSkips %+v: want skips fired and proven, no violation", rep)
	}
	// Stage 1's first receive started at 0: before its bound at 0.
	p := x.inst[1].prog
	for r := range p.Tasks {
		if p.Tasks[r].Kind == KindRecv {
			saved := x.inst[1].state[r]
			x.inst[1].state[r].start = 0 + 1
			_, _, bad := x.foreignBound(1, 0, 0)
			x.inst[1].state[r] = saved
			if bad == 0 {
				t.Error("a receive started before its bound not reported")
			}
			break
		}
	}
}
