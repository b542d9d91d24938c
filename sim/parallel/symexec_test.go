package parallel

import (
	"fmt"
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
)

// TestSymExecutorReusedStartsClean: the symmetric executor of programs
// built in an arena is the arena's (symExecutor), and after a shortened
// steady play that counted its events and saved a Fork, the next play
// over the arena's programs (the whole step) starts clean: its times,
// stats, completed and resumed counts, refusal and extra events equal
// those of a play without an arena.
func TestSymExecutorReusedStartsClean(t *testing.T) {
	for _, host := range []HostModel{{}, {On: true, KernelFwd: 5 * engine.Microsecond, KernelBwd: 5 * engine.Microsecond, Call: 10 * engine.Microsecond, Queue: 4}} {
		label := fmt.Sprintf("host %v", host.On)
		cfg := steadyConfig(t, 48, host)
		plan, ok := PlanSteady(cfg, 8)
		if !ok {
			t.Fatal("PlanSteady refused")
		}
		pr := unitPricer{unit: engine.Millisecond}
		arena := new(Arena)
		short := *cfg
		short.Microbatches, short.Arena = plan.Played, arena
		sp, err := Build(&short, pr)
		if err != nil {
			t.Fatal(err)
		}
		var f Fork
		xs := NewSymmetric(engine.New(), short.Layout, sp)
		xs.CountEvents()
		if _, err := xs.RunSteady(plan, &f); err != nil {
			t.Fatal(err)
		}
		if xs.Completed() == 0 {
			t.Fatalf("%s: the shortened play ran nothing", label)
		}
		full := *cfg
		got, want := buildInArenaAndFresh(t, label, &full, pr, arena)
		xg := NewSymmetric(engine.New(), cfg.Layout, got)
		if xg != xs {
			t.Fatalf("%s: a new executor, not the arena's", label)
		}
		xw := NewSymmetric(engine.New(), cfg.Layout, want)
		for _, x := range []*Executor{xg, xw} {
			x.CountEvents()
			if err := x.Run(); err != nil {
				t.Fatal(err)
			}
		}
		if xg.Instances() != xw.Instances() || xg.Completed() != xw.Completed() || xg.Resumed() != xw.Resumed() ||
			xg.Refusal() != xw.Refusal() || xg.ExtraEvents() != xw.ExtraEvents() {
			t.Fatalf("%s: in the arena %d instances, %d completed, %d resumed, refusal %q, %d extra events; without %d, %d, %d, %q, %d", label,
				xg.Instances(), xg.Completed(), xg.Resumed(), xg.Refusal(), xg.ExtraEvents(),
				xw.Instances(), xw.Completed(), xw.Resumed(), xw.Refusal(), xw.ExtraEvents())
		}
		for i := 0; i < xw.Instances(); i++ {
			_, _, _, ws, we := xw.Instance(i)
			_, _, _, gs, ge := xg.Instance(i)
			if !slices.Equal(ws, gs) || !slices.Equal(we, ge) {
				t.Fatalf("%s instance %d: times differ in the arena", label, i)
			}
			if gst, wst := xg.Stats(i), xw.Stats(i); gst != wst {
				t.Fatalf("%s instance %d: stats %+v in the arena, %+v without", label, i, gst, wst)
			}
		}
	}
}
