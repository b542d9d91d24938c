package parallel

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
)

// A play over an arena's storage that leaves the task state past the host
// threads unwritten (symBuffers' lazy state, filled with garbage here:
// SetStateChecks) plays as the same step on fresh, cleared storage: every
// task's start, end, issue and event count, the tasks completed, the
// engine's events, RunSteady's failure and saved Fork, Replicate and
// every stage's Stats equal. The steps follow one another on one arena,
// long after short and short after long, with and without a host thread
// (without: the whole state is cleared), whole and shortened (RunSteady
// pauses twice and reads the state past the host thread at the first:
// Fork.save, setWatch), so that a record one play or one point left, or
// one not written yet, would show.
func TestLazyStateEqualsCleared(t *testing.T) {
	defer SetStateChecks(SetStateChecks(true))
	const m = 48
	h1, _ := unitHost(t, m, 1)
	_, period := unitHost(t, m, 0)
	hostAt := func(slower float64) HostModel {
		if slower == 0 {
			return HostModel{}
		}
		k := engine.Time(float64(period) * slower / float64(h1))
		// (a launch queue: the thread parks, not issuing every task
		// at the start)
		return HostModel{On: true, KernelFwd: k, KernelBwd: k, Queue: 4}
	}
	type step struct {
		name   string
		cfg    func() *StepConfig
		pricer Pricer
		steady bool // shortened (PlanSteady, RunSteady with a Fork) or whole (Run)
	}
	var steps []step
	for _, slower := range []float64{1.06, 0, 1.01, 1.15} {
		for _, steady := range []bool{true, false} {
			steps = append(steps, step{fmt.Sprintf("2 stages, host %v, steady %v", slower, steady),
				func() *StepConfig { return steadyConfig(t, m, hostAt(slower)) }, unitPricer{unit: engine.Millisecond}, steady})
		}
	}
	for _, c := range []struct{ pp, m int }{{4, 8}, {1, 8}, {2, 4}, {4, 6}} {
		for _, hosted := range []bool{true, false} {
			steps = append(steps, step{fmt.Sprintf("pp %d m %d host %v", c.pp, c.m, hosted), func() *StepConfig {
				_, cfg := stepConfig(t, 2, 2, c.pp, c.m, pipeline.OneFOneB)
				if hosted {
					cfg.Host = HostModel{On: true, KernelFwd: 300, KernelBwd: 500, Call: 200, Queue: 16}
				}
				return cfg
			}, commPricer{unit: 1000, comm: 700}, false})
		}
	}
	a := new(Arena)
	lazy := 0
	for _, s := range steps {
		type played struct {
			x               *Executor
			failed          bool
			saved           bool
			savedDone, done int
		}
		play := func(arena *Arena) played {
			cfg := s.cfg()
			cfg.Arena = arena
			var plan Steady
			if s.steady {
				var ok bool
				if plan, ok = PlanSteady(cfg, 8); !ok {
					t.Fatalf("%s: PlanSteady refused", s.name)
				}
				cfg.Microbatches = plan.Played
			}
			progs, err := Build(cfg, s.pricer)
			if err != nil {
				t.Fatal(err)
			}
			x := NewSymmetric(engine.New(), cfg.Layout, progs)
			if x.lazy {
				lazy++
			}
			var p played
			p.x = x
			if s.steady {
				x.CountEvents()
				var f Fork
				p.failed, err = x.RunSteady(plan, &f)
				p.saved, p.savedDone, _ = f.Saved()
				if !p.failed {
					x.Replicate(plan)
				}
			} else {
				err = x.Run()
			}
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			return p
		}
		want := play(nil)
		if want.x.lazy {
			t.Fatalf("%s: lazy state without an arena", s.name)
		}
		got := play(a)
		if got.x.lazy {
			t.Errorf("%s: the state is still lazy after the play", s.name)
		}
		if got.failed != want.failed || got.saved != want.saved || got.savedDone != want.savedDone ||
			got.x.Completed() != want.x.Completed() || got.x.eng.Executed() != want.x.eng.Executed() ||
			got.x.Replicated() != want.x.Replicated() {
			t.Errorf("%s: on the arena failed %v, saved %v after %d, %d tasks, %d events, replicated %v; fresh %v, %v after %d, %d, %d, %v",
				s.name, got.failed, got.saved, got.savedDone, got.x.Completed(), got.x.eng.Executed(), got.x.Replicated(),
				want.failed, want.saved, want.savedDone, want.x.Completed(), want.x.eng.Executed(), want.x.Replicated())
		}
		for i := range want.x.inst {
			g, w := &got.x.inst[i], &want.x.inst[i]
			if !reflect.DeepEqual(g.state, w.state) || !reflect.DeepEqual(g.events, w.events) {
				t.Errorf("%s: stage %d: task times or events differ on the arena", s.name, i)
			}
			if gs, ws := got.x.Stats(i), want.x.Stats(i); gs != ws {
				t.Errorf("%s: stage %d: Stats %+v on the arena, %+v fresh", s.name, i, gs, ws)
			}
		}
	}
	if lazy < len(steps)/2 {
		t.Errorf("%d of %d plays left their state lazy: untested", lazy, len(steps))
	}
}
