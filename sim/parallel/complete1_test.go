package parallel

import (
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/pipeline"
)

// loopEnds is the every-rank play's task-end handler as it was before
// complete1Full had a body of its own: Executor.Handle and finishFull with
// every one-rank completion made through completeFull's rank loop on a
// one-element slice.
type loopEnds struct{ x *Executor }

func (h loopEnds) Handle(now engine.Time, arg int64) {
	x := h.x
	i, t := unpack(arg)
	in := &x.inst[i]
	one := func(i, t int) { x.completeFull([]int{i}, t, int(x.full.inst[i].stage)) }
	if arg&computeEnd != 0 {
		if int(in.cur) != t || now != in.end {
			return // superseded by a rate change
		}
		in.cur = -1
		one(i, t)
		return
	}
	st := int(x.full.inst[i].stage)
	ft := &x.full.stage[st].task[t]
	switch {
	case ft.kind == KindSend:
		peer, m := x.full.stage[st].prog.Tasks[t].p2p()
		one(i, t)
		one(i+(peer-st)*x.layout.stride[DimPP], m)
	case ft.kind.IsComm():
		x.finishFull(i, t) // completeFull on the members, as before
	default:
		one(i, t)
	}
}

// noGroups makes the groups of a play whose collectives are timed by their
// tasks (TimeByTask), which read no collectives.Group.
type noGroups struct{}

func (noGroups) NewGroup([]int) (*collectives.Group, error) { return nil, nil }

// TestComplete1FullIsCompleteFull: on every-rank plays (data, tensor
// and pipeline parallel, collectives timed by their tasks, sends by a
// fixed cost per size, one to three steps, the host modelled or not, launch queues of
// none, one or four launches, with and without the SM interference model,
// whose compute ends come through Handle's computeEnd path), complete1Full
// plays every task of every rank with the same start, end and issue, the
// same Stats, step ends and task count as completeFull on a one-element
// slice (loopEnds, the play before complete1Full had its own body). It
// fails if complete1Full drops or reorders a part of the completion (the
// host resumption, an ask, the CTAs' release, the step end).
func TestComplete1FullIsCompleteFull(t *testing.T) {
	hosts := []HostModel{{}}
	for _, q := range []int{0, 1, 4} {
		hosts = append(hosts, HostModel{On: true, KernelFwd: 3 * engine.Microsecond, KernelBwd: 2 * engine.Microsecond,
			Call: 5 * engine.Microsecond, Queue: q})
	}
	pr := unitPricer{unit: 20 * engine.Microsecond}
	iv := Interference{SMs: 100, CommCTAs: hardware.CommCTAs{ScaleUp: 20, ScaleOut: 30, P2P: 2}}
	plays := 0
	for _, c := range []struct{ tp, dp, pp, m, steps int }{
		{1, 1, 1, 2, 1},
		{1, 2, 1, 4, 3},
		{2, 2, 1, 4, 2},
		{4, 2, 1, 8, 1},
		{1, 1, 4, 8, 2},
		{2, 2, 2, 4, 1},
	} {
		for _, host := range hosts {
			for _, sms := range []bool{false, true} {
				_, cfg := stepConfig(t, c.tp, c.dp, c.pp, c.m, pipeline.OneFOneB)
				cfg.Host, cfg.Steps, cfg.OptimizerTensors = host, c.steps, 8
				progs, err := Build(cfg, pr)
				if err != nil {
					t.Fatal(err)
				}
				type result struct {
					start, end, issued [][]engine.Time
					stats              []Stats
					stepEnds           []engine.Time
					done               int
				}
				play := func(loop bool) (r result) {
					eng := engine.New()
					x, err := NewFull(eng, cfg.Layout, progs, nil, noGroups{})
					if err != nil {
						t.Fatal(err)
					}
					for k := range GroupKind(NumGroupKinds) {
						x.TimeByTask(k) // (no runner: collectives last their priced time)
					}
					// Sends: each size's cost known on every send group
					// (groupPlan's list), so that no runner is asked.
					var sends []groupCost
					for _, p := range progs {
						for k := range p.Tasks {
							if task := &p.Tasks[k]; task.Kind == KindSend {
								sends = append(sends, groupCost{op: collectives.Send, plan: -1, bytes: task.Bytes, d: 7*engine.Microsecond + engine.Time(task.Bytes)%1000})
							}
						}
					}
					for r := range x.sendTo {
						x.sendTo[r][0].costs, x.sendTo[r][1].costs = sends, sends
					}
					if sms {
						if err := x.SetInterference(iv, ownDomain{}); err != nil {
							t.Fatal(err)
						}
					}
					if loop {
						x.h = eng.Register(loopEnds{x})
						for i := range x.inst {
							x.inst[i].h = x.h
						}
					}
					if err := x.Run(); err != nil {
						t.Fatal(err)
					}
					for i := range cfg.Layout.World() {
						s, e, is := x.Times(i, nil, nil, nil)
						r.start, r.end, r.issued = append(r.start, s), append(r.end, e), append(r.issued, is)
						r.stats = append(r.stats, x.Stats(i))
					}
					r.stepEnds, r.done = x.StepEnds(), x.done
					return r
				}
				a, b := play(false), play(true)
				plays++
				if a.done != b.done || !slices.Equal(a.stepEnds, b.stepEnds) {
					t.Fatalf("%+v, %+v, SMs %v: %d tasks, step ends %v; through the loop %d, %v", c, host, sms, a.done, a.stepEnds, b.done, b.stepEnds)
				}
				for i := range a.start {
					if a.stats[i] != b.stats[i] {
						t.Fatalf("%+v, %+v, SMs %v: rank %d: Stats %+v, through the loop %+v", c, host, sms, i, a.stats[i], b.stats[i])
					}
					for k, pair := range [][2][]engine.Time{{a.start[i], b.start[i]}, {a.end[i], b.end[i]}, {a.issued[i], b.issued[i]}} {
						if !slices.Equal(pair[0], pair[1]) {
							t.Fatalf("%+v, %+v, SMs %v: rank %d: times %d: %v, through the loop %v", c, host, sms, i, k, pair[0], pair[1])
						}
					}
				}
			}
		}
	}
	t.Logf("%d configurations played both ways", plays)
}

// TestAskIssuesAsRepresentative: askAt's walk of the host thread for the
// one task that asks when it is the next to issue (hostTo's loop for that
// task, written out in askAt) gives every rank of an every-rank play the
// starts, ends and issue times of the representative-rank play (NewSymmetric,
// whose host thread is the eager hostAdvance, an independent walk): data
// and tensor parallel, one to three steps, launch queues of none, one, two
// or four launches and an optimizer loop of more launches than they hold
// (QueueAfter and QueueSelf waits), the kernel issue slower or faster than
// the GPU (a GPU slow enough that a task's own launches wait, qrest). It
// fails if askAt skips the HostAfter or QueueAfter wait, drops QueueSelf's
// rest, or does not advance the thread's position or free time (checked).
func TestAskIssuesAsRepresentative(t *testing.T) {
	waits := 0
	for _, c := range []struct{ tp, dp, m, steps int }{
		{1, 1, 2, 1},
		{1, 1, 4, 3},
		{1, 2, 4, 2},
		{2, 2, 4, 2},
	} {
		for _, q := range []int{0, 1, 2, 4} {
			for _, unit := range []engine.Time{engine.Microsecond, 20 * engine.Microsecond, 200 * engine.Microsecond} {
				_, cfg := stepConfig(t, c.tp, c.dp, 1, c.m, pipeline.OneFOneB)
				cfg.Host = HostModel{On: true, KernelFwd: 3 * engine.Microsecond, KernelBwd: 2 * engine.Microsecond,
					Call: 5 * engine.Microsecond, Queue: q}
				cfg.Steps, cfg.OptimizerTensors = c.steps, 8
				progs, err := Build(cfg, unitPricer{unit: unit})
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range progs {
					for k := range p.Tasks {
						if w, _ := p.QueueSelf(k); w >= 0 || p.QueueAfter(k) >= 0 || p.HostAfter(k) >= 0 {
							waits++
						}
					}
				}
				sym := NewSymmetric(engine.New(), cfg.Layout, progs)
				full, err := NewFull(engine.New(), cfg.Layout, progs, nil, noGroups{})
				if err != nil {
					t.Fatal(err)
				}
				for k := range GroupKind(NumGroupKinds) {
					sym.TimeByTask(k)
					full.TimeByTask(k)
				}
				if err := sym.Run(); err != nil {
					t.Fatal(err)
				}
				if err := full.Run(); err != nil {
					t.Fatal(err)
				}
				for i := range sym.Instances() {
					rank, _, _, _, _ := sym.Instance(i)
					ws, we, wi := sym.Times(i, nil, nil, nil)
					fs, fe, fi := full.Times(rank, nil, nil, nil)
					for k, pair := range [][2][]engine.Time{{ws, fs}, {we, fe}, {wi, fi}} {
						if !slices.Equal(pair[0], pair[1]) {
							t.Fatalf("%+v Q=%d unit %v: rank %d: times %d: representative %v, every rank %v", c, q, unit, rank, k, pair[0], pair[1])
						}
					}
				}
			}
		}
	}
	if waits == 0 {
		t.Error("no task waits for the GPU")
	}
	t.Logf("%d tasks with a host wait", waits)
}
