package parallel

import (
	"reflect"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
)

// Resume leaves the event counters past each prefix as CountEvents left
// them only while no engine event has run since (Executor.eventsZero): an
// executor whose engine ran an event after CountEvents (its counters
// written, as a handler would) and then resumes a step from a saved
// prefix counts as one that resumes right after CountEvents, and as that
// step played from the start. (Resume after a whole play is no use: the
// inputs past the prefixes are spent.) With and without a host thread.
func TestResumeClearsCountersAfterAPlay(t *testing.T) {
	const m = 48
	h1, _ := unitHost(t, m, 1)
	_, p := unitHost(t, m, 0)
	for _, slower := range []float64{0, 1.06} {
		host := HostModel{}
		if slower > 0 {
			k := engine.Time(float64(p) * slower / float64(h1))
			host = HostModel{On: true, KernelFwd: k, KernelBwd: k}
		}
		cfg := steadyConfig(t, m, host)
		plan, ok := PlanSteady(cfg, 8)
		plan2, ok2 := PlanSteady(cfg, 16)
		if !ok || !ok2 {
			t.Fatalf("%v: PlanSteady refused", slower)
		}
		build := func(mb int) *Executor {
			c := *cfg
			c.Microbatches = mb
			progs, err := Build(&c, unitPricer{unit: engine.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			return NewSymmetric(engine.New(), c.Layout, progs)
		}
		xs := build(plan.Played)
		xs.CountEvents()
		var f Fork
		if _, err := xs.RunSteady(plan, &f); err != nil {
			t.Fatal(err)
		}
		if saved, _, _ := f.Saved(); !saved {
			t.Fatalf("%v: nothing saved", slower)
		}
		fresh := build(plan2.Played)
		fresh.CountEvents()
		failed0, err := fresh.RunSteady(plan2, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name   string
			before func(x *Executor) // after CountEvents, before Resume
		}{
			{"right after CountEvents", func(*Executor) {}},
			{"after an engine event outside a play", func(x *Executor) {
				in := &x.inst[0]
				for j := range in.events {
					in.events[j] = 7 // as a handler's count would
				}
				x.eng.At(0, x.eng.Register(nopHandler{}), 0)
				x.eng.Run()
			}},
		} {
			y := build(plan2.Played)
			y.CountEvents()
			c.before(y)
			if err := y.Resume(&f); err != nil {
				t.Fatalf("%v %s: %v", slower, c.name, err)
			}
			failed, err := y.RunSteadyResumed(plan2, nil)
			if err != nil || failed != failed0 {
				t.Fatalf("%v %s: failed %v (%v), from the start %v", slower, c.name, failed, err, failed0)
			}
			for i := range y.inst {
				if !reflect.DeepEqual(y.inst[i].events, fresh.inst[i].events) {
					t.Errorf("%v %s: stage %d: the resumed play's event counts differ from the play's from the start", slower, c.name, i)
				}
			}
		}
	}
}

type nopHandler struct{}

func (nopHandler) Handle(engine.Time, int64) {}
