package parallel

import (
	"slices"
	"testing"
	"unsafe"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
)

// base is the address of s's array (nil when it has no capacity).
func base[T any](s []T) unsafe.Pointer {
	if cap(s) == 0 {
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(s))
}

// forkArrays lists the arrays of a Fork's copies, in a fixed order.
func forkArrays(cp *forkCopy) []unsafe.Pointer {
	return []unsafe.Pointer{base(cp.state), base(cp.need), base(cp.events), base(cp.hot),
		base(cp.depOff), base(cp.deps), base(cp.qself), base(cp.qrest), base(cp.queue)}
}

// A Fork reserved for the full step's tasks saves and detaches shortened
// plays (with and without a host thread, so with and without launch-queue
// waits) in the arrays Reserve made, twice over; the full step resumed
// from the reserved Fork plays the full play's times; an empty Reserve
// after changes nothing, and a smaller one keeps the arrays but drops the
// state (a Resume is refused).
func TestForkReserveKeepsArrays(t *testing.T) {
	for _, host := range []HostModel{{}, {On: true, KernelFwd: 5 * engine.Microsecond, KernelBwd: 5 * engine.Microsecond, Call: 10 * engine.Microsecond, Queue: 4}} {
		const m = 48
		cfg := steadyConfig(t, m, host)
		plan, ok := PlanSteady(cfg, 8)
		if !ok {
			t.Fatal("PlanSteady refused")
		}
		pr := unitPricer{unit: engine.Millisecond}
		progs, err := Build(cfg, pr)
		if err != nil {
			t.Fatal(err)
		}
		tasks := 0
		for _, p := range progs {
			tasks += len(p.Tasks)
		}
		whole := NewSymmetric(engine.New(), cfg.Layout, progs)
		if err := whole.Run(); err != nil {
			t.Fatal(err)
		}
		var f, g Fork
		g.ShareCopies(&f)
		f.Reserve(tasks)
		reserved := forkArrays(f.cp)
		for i, p := range reserved {
			if p == nil {
				t.Fatalf("host %v: array %d not reserved", host.On, i)
			}
		}
		if cap(f.cp.state) != tasks || cap(f.cp.deps) < tasks {
			t.Fatalf("host %v: reserved %d states, %d dependencies for %d tasks", host.On, cap(f.cp.state), cap(f.cp.deps), tasks)
		}
		short := *cfg
		short.Microbatches = plan.Played
		arena := new(Arena)
		short.Arena = arena
		for round := 0; round < 2; round++ {
			sp, err := Build(&short, pr)
			if err != nil {
				t.Fatal(err)
			}
			xs := NewSymmetric(engine.New(), short.Layout, sp)
			xs.CountEvents()
			if _, err := xs.RunSteady(plan, &f); err != nil {
				t.Fatal(err)
			}
			if saved, _, _ := f.Saved(); !saved {
				t.Fatalf("host %v round %d: nothing saved", host.On, round)
			}
			f.Detach()
			if len(f.cp.hot) == 0 || len(f.cp.deps) == 0 || len(f.cp.events) == 0 {
				t.Fatalf("host %v round %d: nothing detached", host.On, round)
			}
			if host.On && (len(f.cp.qself) == 0 || len(f.cp.queue) == 0) {
				t.Fatalf("host %v round %d: no launch-queue waits detached", host.On, round)
			}
			if got := forkArrays(f.cp); !slices.Equal(got, reserved) {
				t.Errorf("host %v round %d: the copies left the reserved arrays", host.On, round)
			}
		}
		full := *cfg
		full.Arena = arena
		fp, err := BuildAfter(&full, pr, &f)
		if err != nil {
			t.Fatal(err)
		}
		resume := func() (*Executor, error) {
			x := NewSymmetric(engine.New(), cfg.Layout, fp)
			return x, x.Resume(&f)
		}
		x, err := resume()
		if err != nil {
			t.Fatal(err)
		}
		if err := x.RunResumed(); err != nil {
			t.Fatal(err)
		}
		for i := range x.inst {
			if !slices.Equal(x.inst[i].state, whole.inst[i].state) {
				t.Errorf("host %v stage %d: the resumed play's times differ from the full play's", host.On, i)
			}
		}
		f.Reserve(0) // nothing reserved, nothing dropped
		if _, err := resume(); err != nil {
			t.Errorf("host %v: Reserve(0) dropped the state: %v", host.On, err)
		}
		f.Reserve(tasks / 2)
		if got := forkArrays(f.cp); !slices.Equal(got, reserved) {
			t.Errorf("host %v: a smaller Reserve replaced the arrays", host.On)
		}
		if _, err := resume(); err != ErrNoResume {
			t.Errorf("host %v: a Resume after Reserve: %v, want ErrNoResume", host.On, err)
		}
	}
}

// eventBuffers carves every instance's event counters from one array, in
// stage order, each capped at its program's tasks and cleared; a later
// execution no larger reuses the array, and one reserved (Arena.Reserve)
// is not replaced.
func TestEventBuffersCarveOneArray(t *testing.T) {
	a := new(Arena)
	a.Reserve(16)
	reserved := base(a.sym.events)
	if reserved == nil || cap(a.sym.events) != 16 {
		t.Fatalf("Reserve(16): events capacity %d", cap(a.sym.events))
	}
	cases := []struct {
		sizes   []int
		offsets []int // hand-computed: running sums of sizes
	}{
		{[]int{3, 0, 5}, []int{0, 3, 3}},
		{[]int{4, 4}, []int{0, 4}},
		{[]int{16}, []int{0}},
		{[]int{2, 2, 2, 1}, []int{0, 2, 4, 6}},
	}
	for ci, c := range cases {
		inst := make([]instance, len(c.sizes))
		for i, n := range c.sizes {
			inst[i].prog = &Program{Tasks: make([]Task, n), arena: a}
		}
		a.eventBuffers(inst)
		if base(a.sym.events) != reserved {
			t.Errorf("case %d: the reserved array was replaced", ci)
		}
		for i, in := range inst {
			n := c.sizes[i]
			if len(in.events) != n || cap(in.events) != n {
				t.Fatalf("case %d stage %d: length %d cap %d, want %d", ci, i, len(in.events), cap(in.events), n)
			}
			if n == 0 {
				continue
			}
			if &in.events[0] != &a.sym.events[c.offsets[i]] {
				t.Errorf("case %d stage %d: not at %d", ci, i, c.offsets[i])
			}
			for k := range in.events {
				if in.events[k] != 0 {
					t.Errorf("case %d stage %d task %d: %d not cleared", ci, i, k, in.events[k])
				}
				in.events[k] = 7 // left for the next case to clear
			}
		}
	}
}

// CountEvents over programs built in an arena, reused step after step
// (deeper and shallower pipelines), counts each task's events as over the
// same step built without one; and Build takes its builder from the arena
// (the arena's builder is the last build's).
func TestCountEventsArenaEqualsFresh(t *testing.T) {
	pr := commPricer{unit: engine.Millisecond, comm: 300 * engine.Microsecond}
	arena := new(Arena)
	for _, c := range []struct{ pp, m int }{{4, 8}, {1, 4}, {2, 8}, {8, 16}, {2, 4}} {
		l, cfg := stepConfig(t, 2, 1, c.pp, c.m, pipeline.OneFOneB)
		play := func(a *Arena) *Executor {
			cc := *cfg
			cc.Arena = a
			progs, err := Build(&cc, pr)
			if err != nil {
				t.Fatal(err)
			}
			if a != nil && a.builder.prog != progs[len(progs)-1] {
				t.Fatalf("pp %d: the arena's builder did not build the last stage", c.pp)
			}
			x := NewSymmetric(engine.New(), l, progs)
			x.CountEvents()
			if err := x.Run(); err != nil {
				t.Fatal(err)
			}
			return x
		}
		want, got := play(nil), play(arena)
		for i := range want.inst {
			if !slices.Equal(got.inst[i].events, want.inst[i].events) || !slices.Equal(got.inst[i].state, want.inst[i].state) {
				t.Fatalf("pp %d m %d stage %d: events or times differ in the arena", c.pp, c.m, i)
			}
		}
	}
}
