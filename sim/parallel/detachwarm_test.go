package parallel

import (
	"testing"
	"unsafe"

	"github.com/simtrain/simtrain/sim/engine"
)

// A Fork's save and Detach map the pages of every copy they write before
// writing it (warmTo: one madvise per array, not a page fault per page),
// the launch-queue entries' included: after a Detach each copy's warmth
// covers the bytes it holds, in copies reserved large enough to be
// mapped ahead (warmMin). Dropping the queue's warmTo fails it.
func TestDetachMapsCopiesAhead(t *testing.T) {
	skipWithoutPopulate(t)
	const m = 48
	host := HostModel{On: true, KernelFwd: 5 * engine.Microsecond, KernelBwd: 5 * engine.Microsecond, Call: 10 * engine.Microsecond, Queue: 4}
	cfg := steadyConfig(t, m, host)
	plan, ok := PlanSteady(cfg, 8)
	if !ok {
		t.Fatal("PlanSteady refused")
	}
	pr := unitPricer{unit: engine.Millisecond}
	var f Fork
	f.Reserve(1 << 14) // every copy array ≥ warmMin
	short := *cfg
	short.Microbatches = plan.Played
	short.Arena = new(Arena)
	for round := range 2 {
		sp, err := Build(&short, pr)
		if err != nil {
			t.Fatal(err)
		}
		x := NewSymmetric(engine.New(), short.Layout, sp)
		x.CountEvents()
		if _, err := x.RunSteady(plan, &f); err != nil {
			t.Fatal(err)
		}
		if saved, _, _ := f.Saved(); !saved {
			t.Fatalf("round %d: nothing saved", round)
		}
		f.Detach()
		cp := f.cp
		if len(cp.queue) == 0 || len(cp.qself) == 0 {
			t.Fatalf("round %d: no launch-queue entries or waits detached", round)
		}
		for _, c := range []struct {
			name  string
			w     warmth
			at    unsafe.Pointer
			bytes uintptr
		}{
			{"state", cp.warmState, base(cp.state), uintptr(len(cp.state)) * unsafe.Sizeof(taskState{})},
			{"need", cp.warmNeed, base(cp.need), uintptr(len(cp.need)) * 4},
			{"events", cp.warmEvents, base(cp.events), uintptr(len(cp.events)) * 4},
			{"hot", cp.warmHot, base(cp.hot), uintptr(len(cp.hot)) * unsafe.Sizeof(hotTask{})},
			{"depOff", cp.warmDepOff, base(cp.depOff), uintptr(len(cp.depOff)) * 4},
			{"deps", cp.warmDeps, base(cp.deps), uintptr(len(cp.deps)) * 4},
			{"qself", cp.warmQself, base(cp.qself), uintptr(len(cp.qself)) * 4},
			{"qrest", cp.warmQrest, base(cp.qrest), uintptr(len(cp.qrest)) * unsafe.Sizeof(engine.Time(0))},
			{"queue", cp.warmQueue, base(cp.queue), uintptr(len(cp.queue)) * unsafe.Sizeof(queueEntry{})},
		} {
			if c.bytes == 0 {
				t.Errorf("round %d: %s: nothing copied", round, c.name)
			}
			if c.w.base != uintptr(c.at) || c.w.ready < c.bytes {
				t.Errorf("round %d: %s: %d bytes copied, %d mapped ahead (of %#x, the copy's array %#x)",
					round, c.name, c.bytes, c.w.ready, c.w.base, uintptr(c.at))
			}
		}
	}
}
