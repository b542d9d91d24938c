package parallel

import (
	"slices"
	"testing"
	"unsafe"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
)

// symBuffers carves every stage's state, need and hot from one array each,
// in stage order, each stage's slices capped at its length; it clears the
// state a previous execution left, and a later execution no larger reuses
// the arrays.
func TestSymBuffersCarveOneArray(t *testing.T) {
	a := new(Arena)
	progsOf := func(sizes ...int) []instance {
		inst := make([]instance, len(sizes))
		for i, n := range sizes {
			inst[i].prog = &Program{Tasks: make([]Task, n), arena: a}
		}
		return inst
	}
	cases := []struct {
		sizes   []int
		offsets []int // hand-computed: running sums of sizes
	}{
		{[]int{3, 0, 5}, []int{0, 3, 3}},
		{[]int{4, 4}, []int{0, 4}},
		{[]int{1}, []int{0}},
		{[]int{2, 2, 2, 1}, []int{0, 2, 4, 6}},
	}
	var first *taskState
	for ci, c := range cases {
		inst := progsOf(c.sizes...)
		a.symBuffers(inst)
		base := &a.sym.state[:1][0]
		if ci == 0 {
			first = base
		} else if base != first {
			t.Errorf("case %d: the arrays were reallocated for %d tasks after 8", ci, len(a.sym.state))
		}
		for i, in := range inst {
			n := c.sizes[i]
			if len(in.state) != n || cap(in.state) != n || len(in.need) != n || cap(in.need) != n || len(in.hot) != n || cap(in.hot) != n {
				t.Fatalf("case %d stage %d: lengths/caps %d/%d %d/%d %d/%d, want %d", ci, i,
					len(in.state), cap(in.state), len(in.need), cap(in.need), len(in.hot), cap(in.hot), n)
			}
			if n == 0 {
				continue
			}
			off := int((uintptr(unsafe.Pointer(&in.state[0])) - uintptr(unsafe.Pointer(base))) / unsafe.Sizeof(taskState{}))
			if off != c.offsets[i] || &in.need[0] != &a.sym.need[off] || &in.hot[0] != &a.sym.hot[off] {
				t.Errorf("case %d stage %d: at %d, want %d (need and hot alike)", ci, i, off, c.offsets[i])
			}
			for k := range in.state {
				if in.state[k] != (taskState{}) {
					t.Errorf("case %d stage %d task %d: state %+v not cleared", ci, i, k, in.state[k])
				}
				in.state[k] = taskState{start: 7, end: 8, issued: 9} // left for the next case to clear
			}
		}
	}
}

// NewSymmetric over programs built in an arena, reused point after point
// (deep pipelines after shallow ones and back, with and without a host
// thread), plays each step as over the same step built without one: every
// task's start, end and issue and every stage's Stats equal.
func TestNewSymmetricArenaEqualsFresh(t *testing.T) {
	a := new(Arena)
	for _, c := range []struct{ pp, m int }{{4, 8}, {1, 8}, {2, 4}, {4, 6}, {1, 2}, {2, 8}} {
		for _, hosted := range []bool{false, true} {
			play := func(arena *Arena) (*Executor, int) { return playOneFOneB(t, arena, c.pp, c.m, hosted) }
			want, n := play(nil)
			got, _ := play(a)
			for i := 0; i < n; i++ {
				_, _, _, ws, we := want.Instance(i)
				_, _, _, gs, ge := got.Instance(i)
				if !slices.Equal(ws, gs) || !slices.Equal(we, ge) || !slices.Equal(want.Issued(i), got.Issued(i)) {
					t.Errorf("pp %d m %d host %v stage %d: task times differ with the arena", c.pp, c.m, hosted, i)
				}
				if w, g := want.Stats(i), got.Stats(i); w != g {
					t.Errorf("pp %d m %d host %v stage %d: Stats %+v with the arena, %+v without", c.pp, c.m, hosted, i, g, w)
				}
			}
		}
	}
}

// playOneFOneB builds and plays a 1F1B step of tp 2, dp 2, pp stages and m
// micro-batches on arena (nil: fresh storage), with a host thread when
// hosted, and returns the executor and its number of programs.
func playOneFOneB(t *testing.T, arena *Arena, pp, m int, hosted bool) (*Executor, int) {
	t.Helper()
	l, cfg := stepConfig(t, 2, 2, pp, m, pipeline.OneFOneB)
	cfg.Arena = arena
	if hosted {
		cfg.Host = HostModel{On: true, KernelFwd: 300, KernelBwd: 500, Call: 200, Queue: 16}
	}
	progs, err := Build(cfg, commPricer{unit: 1000, comm: 700})
	if err != nil {
		t.Fatal(err)
	}
	x := NewSymmetric(engine.New(), l, progs)
	if err := x.Run(); err != nil {
		t.Fatal(err)
	}
	return x, len(progs)
}
