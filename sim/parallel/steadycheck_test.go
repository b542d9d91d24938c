package parallel

import (
	"reflect"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
)

// Each replication check is made once per play (steadyCheck): RunSteady
// records the programs' checks and, when the units' times pass, that they
// did; Replicate after that play checks only the events and the host
// thread, and decides as Replicate after a whole play without a record
// (same answer, refusal, replicas and extra events). A record is not used
// for another plan (another count of unplayed copies: its extra events),
// nor for another play: the same executor resumed from the Fork its play
// saved, or a new executor resumed from it and played on, each with the
// replicated unit's last task 1 ns later (the Fork holds it ended), so
// that the units no longer repeat, must refuse. Cases: a two-stage 1F1B pipeline of 48 micro-batches,
// without a host thread and with the last stage's thread 1% slower than
// the period (the host check refuses) and 15% slower (host-bound,
// replicates).
func TestSteadyCheckOncePerPlay(t *testing.T) {
	const m = 48
	h1, _ := unitHost(t, m, 1)
	_, p := unitHost(t, m, 0)
	pr := unitPricer{unit: engine.Millisecond}
	for _, slower := range []float64{0, 1.01, 1.15} {
		host := HostModel{}
		if slower > 0 {
			k := engine.Time(float64(p) * slower / float64(h1))
			host = HostModel{On: true, KernelFwd: k, KernelBwd: k}
		}
		cfg := steadyConfig(t, m, host)
		plan, ok := PlanSteady(cfg, 8)
		if !ok {
			t.Fatalf("%v: PlanSteady refused", slower)
		}
		short := *cfg
		short.Microbatches = plan.Played
		build := func() *Executor {
			progs, err := Build(&short, pr)
			if err != nil {
				t.Fatal(err)
			}
			x := NewSymmetric(engine.New(), short.Layout, progs)
			x.CountEvents()
			return x
		}
		// The reference: a whole play, no early check, no record of times.
		whole := build()
		if err := whole.Run(); err != nil {
			t.Fatal(err)
		}
		wantOK := whole.Replicate(plan)
		x := build()
		var f Fork
		failed, err := x.RunSteady(plan, &f)
		if err != nil || failed {
			t.Fatalf("%v: RunSteady failed %v (%v)", slower, failed, err)
		}
		if !x.steady.plans(plan) || !x.steady.timedFor(x) {
			t.Fatalf("%v: after RunSteady the record holds the plan %v, the play's times %v", slower, x.steady.plans(plan), x.steady.timedFor(x))
		}
		if got := x.Replicate(plan); got != wantOK || x.Refusal() != whole.Refusal() || !reflect.DeepEqual(x.rep, whole.rep) || x.ExtraEvents() != whole.ExtraEvents() {
			t.Errorf("%v: Replicate from the record %v %q %+v (%d events), after a whole play %v %q %+v (%d)", slower,
				got, x.Refusal(), x.rep, x.ExtraEvents(), wantOK, whole.Refusal(), whole.rep, whole.ExtraEvents())
		}
		if !wantOK {
			if slower != 1.01 {
				t.Fatalf("%v: refused (%q)", slower, whole.Refusal())
			}
			continue
		}
		// Another plan of the same played step (two more micro-batches,
		// two more copies), asked of a play recorded for the first.
		more := *cfg
		more.Microbatches = m + 2
		plan2, ok := PlanSteady(&more, 8)
		if !ok || plan2.Played != plan.Played || plan2.Extra != plan.Extra+2 {
			t.Fatalf("%v: plan of %d micro-batches %+v, %v", slower, m+2, plan2, ok)
		}
		x2 := build()
		if failed, err := x2.RunSteady(plan, nil); err != nil || failed || !x2.steady.timedFor(x2) {
			t.Fatalf("%v: RunSteady failed %v (%v)", slower, failed, err)
		}
		if !x2.Replicate(plan2) || !whole.Replicate(plan2) || x2.ExtraEvents() != whole.ExtraEvents() || x2.ExtraEvents() <= x.ExtraEvents() {
			t.Errorf("%v: Replicate of another plan: %d extra events, after a whole play %d (the first plan's %d)", slower, x2.ExtraEvents(), whole.ExtraEvents(), x.ExtraEvents())
		}
		// Another play: x itself, and a new executor, resumed from the
		// Fork x's play saved, the replicated unit's tasks not yet started
		// then made 1 µs longer.
		if saved, _, _ := f.Saved(); !saved {
			t.Fatalf("%v: no Fork saved", slower)
		}
		for k, y := range []*Executor{x, build()} {
			if err := y.Resume(&f); err != nil {
				t.Fatalf("%v: Resume %d: %v", slower, k, err)
			}
			// The unit's tasks ended at the save: another play's times,
			// the last one 1 ns later.
			moved := 0
			for i := range y.inst {
				st := &y.inst[i].state[x.steady.reps[i].b-1]
				if st.end != 0 {
					st.start++
					st.end++
					moved++
				}
			}
			if moved == 0 {
				t.Fatalf("%v: no stage's unit had ended at the save", slower)
			}
			// x's own state past the prefixes is its play's (Resume is for
			// a new executor): x is checked as resumed, y played on.
			if k == 1 {
				if err := y.RunResumed(); err != nil {
					t.Fatal(err)
				}
			}
			if y.steady.timedFor(y) || y.Replicate(plan) || y.Refusal() != "units do not repeat" {
				t.Errorf("%v: resumed play %d with a slower unit: record used %v, replicated %v (%q), want refused", slower, k, y.steady.timedFor(y), y.Replicated(), y.Refusal())
			}
		}
	}
}
