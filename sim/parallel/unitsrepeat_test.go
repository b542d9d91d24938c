package parallel

import (
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
)

// unitsRepeat, the replication check's loop over the checked units'
// tasks, answers as repeatsRef (the per-task check it replaced) asked of
// each task: on shortened plays of pp 2 and 4 (sends and receives, whose
// matches move with the peer's unit), with and without a host thread,
// over every task of the checked units alone and over their whole range,
// with events and without; and again after each of a task's fields,
// record, first dependency, times or events is moved in the later unit (each
// edit refused by both, the range refused exactly when a task in it is),
// or its first dependency made the earlier task's own (absolute: accepted).
func TestUnitsRepeatEqualsEach(t *testing.T) {
	type edit struct {
		name string
		do   func(x *Executor, i int, n, u int32)
	}
	edits := []edit{
		{"none", func(*Executor, int, int32, int32) {}},
		{"duration", func(x *Executor, i int, n, _ int32) { x.inst[i].prog.Tasks[n].Dur++ }},
		{"name", func(x *Executor, i int, n, _ int32) { x.inst[i].prog.Tasks[n].Name++ }},
		{"layer", func(x *Executor, i int, n, _ int32) { x.inst[i].prog.Tasks[n].Layer++ }},
		{"issue", func(x *Executor, i int, n, _ int32) { x.inst[i].prog.hot[n].issue++ }},
		{"host wait", func(x *Executor, i int, n, _ int32) { x.inst[i].prog.hot[n].hostAfter++ }},
		{"dependency", func(x *Executor, i int, n, _ int32) {
			p := x.inst[i].prog
			if d := p.deps[p.depOff[n]:p.depOff[n+1]]; len(d) > 0 {
				d[0]--
			} else {
				p.Tasks[n].Dur++ // (a task without dependencies: refused as well)
			}
		}},
		{"absolute", func(x *Executor, i int, n, u int32) { // its first dependency the earlier task's own: accepted
			p := x.inst[i].prog
			if d := p.deps[p.depOff[n]:p.depOff[n+1]]; len(d) > 0 {
				d[0] = p.deps[p.depOff[n-u]]
			}
		}},
		{"start", func(x *Executor, i int, n, _ int32) { x.inst[i].state[n].start++ }},
		{"end", func(x *Executor, i int, n, _ int32) { x.inst[i].state[n].end++ }},
		{"events", func(x *Executor, i int, n, _ int32) { x.inst[i].events[n]++ }},
	}
	checked, refused := 0, 0
	for _, pp := range []int{2, 4} {
		for _, host := range []HostModel{{}, {On: true, KernelFwd: engine.Microsecond, KernelBwd: engine.Microsecond, Call: engine.Microsecond, Queue: 64}} {
			cfg := hostConfig(t, 8, host)
			l, err := NewLayout(1, 1, 1, 1, pp, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
			if err != nil {
				t.Fatal(err)
			}
			chunks, err := Partition(8, pp, 1, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Layout, cfg.Chunks, cfg.Microbatches = l, chunks, 32
			plan, ok := PlanSteady(cfg, 8)
			if !ok {
				t.Fatalf("PlanSteady refused pp %d", pp)
			}
			for _, e := range edits {
				for _, at := range []int32{0, 1, 2} { // the edited task: the first, second and third of the last checked unit
					_, short, _, _, _ := playSteady(t, cfg)
					reps, reach, why := short.structure(plan)
					if why != "" {
						t.Fatalf("pp %d: %s", pp, why)
					}
					sends := 0
					for i := range short.inst {
						r := reps[i]
						u := r.b - r.a
						lo := r.b - int32(reach+2)*u
						period := short.inst[i].state[r.a].Start() - short.inst[i].state[r.a-u].Start()
						e.do(short, i, r.a-u+at+u, u) // task r.a−u+at of the last checked unit, one unit later
						for _, events := range []bool{false, true} {
							all := true
							for tk := lo; tk < r.a; tk++ {
								k := short.inst[i].prog.Tasks[tk].Kind
								if k == KindSend || k == KindRecv {
									sends++
								}
								want := short.repeatsRef(i, tk, u, period, reps, events)
								if got := short.unitsRepeat(i, tk, tk+1, u, period, reps, events); got != want {
									t.Fatalf("pp %d %+v, %s: stage %d task %d: unitsRepeat %v, repeatsRef %v", pp, host, e.name, i, tk, got, want)
								}
								all = all && want
							}
							if got := short.unitsRepeat(i, lo, r.a, u, period, reps, events); got != all {
								t.Fatalf("pp %d %+v, %s: stage %d units [%d, %d): unitsRepeat %v, each %v", pp, host, e.name, i, lo, r.a, got, all)
							}
							accept := e.name == "none" || e.name == "absolute" || e.name == "events" && !events
							if !accept && all {
								t.Errorf("pp %d %+v, %s: stage %d accepted an edited task", pp, host, e.name, i)
							}
							if accept && !all {
								t.Errorf("pp %d %+v, %s: stage %d refused units it should accept", pp, host, e.name, i)
							}
							checked++
							if !all {
								refused++
							}
						}
					}
					if sends == 0 {
						t.Fatalf("pp %d: no send or receive in the checked units", pp)
					}
				}
			}
		}
	}
	t.Logf("%d ranges checked, %d refused", checked, refused)
}

// repeatsRef is the replication check's per-task test before steady48
// (the reference): whether task t+u of instance i is task t one unit
// later.
func (x *Executor) repeatsRef(i int, t, u int32, period engine.Time, reps []replica, events bool) bool {
	in := &x.inst[i]
	p := in.prog
	n := t + u
	a, b := p.Tasks[t], p.Tasks[n]
	if a.Micro >= 0 {
		a.Micro = b.Micro
	}
	if a.Kind == KindSend || a.Kind == KindRecv {
		q := reps[a.Peer()]
		a.setP2P(a.Peer(), a.Match()+q.b-q.a)
	}
	if wa, wb := p.waits(int(t)).hostAfter, p.waits(int(n)).hostAfter; wa != wb && (wa <= 0 || wa+u != wb) {
		return false
	}
	if a != b || p.Issue(int(t)) != p.Issue(int(n)) {
		return false
	}
	da, db := p.Deps(int(t)), p.Deps(int(n))
	if len(da) != len(db) {
		return false
	}
	for k := range da {
		if da[k]+u != db[k] && da[k] != db[k] {
			return false
		}
	}
	sa, sb := &in.state[t], &in.state[n]
	if sb.Start() != sa.Start()+period || sb.End() != sa.End()+period || events && in.events[t] != in.events[n] {
		return false
	}
	return (sa.issued == 0) == (sb.issued == 0)
}
