package parallel

import (
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
)

// TestNoHostWaitsIsExact: on programs built with and without an arena
// (layer and pass copies), with the host modelled or not, launch queues of
// none, one or four launches and one to three steps (the step boundary's
// host wait), Program.noHostWaits is set exactly when a plain scan of the
// tasks finds no host wait (it is never set on a program with one, which
// CheckHot reports), and the host walk's variant without the test
// (hostRun, and in the every-rank play hostTo) plays every task with the
// same start, end and issue as the walk with it (the flag cleared). It fails if add stops clearing the flag
// or build stops setting it, or if hostRun's loop without the tests (taken
// where the program has no QueueSelf wait either) issues differently; it
// counts the programs that loop walks with launch-queue waits (QueueAfter),
// and fails if there are none, or if such a program has a receive with a
// launch-queue wait (CheckHot: that loop tests the kind only of tasks
// without one).
func TestNoHostWaitsIsExact(t *testing.T) {
	pr := unitPricer{unit: 20 * engine.Microsecond}
	flagged, waited, fastQueued, recvChecked := 0, 0, 0, 0
	eachHostBuild(t, func(c hostBuildCase, host HostModel, cfg *StepConfig) {
		progs, err := Build(cfg, pr)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range progs {
			none := true
			for i := range p.Tasks {
				if p.HostAfter(i) >= 0 {
					none = false
				}
			}
			if p.noHostWaits != none {
				t.Fatalf("%+v, %+v: stage %d: noHostWaits %v, a scan finds none: %v", c, host, p.Stage, p.noHostWaits, none)
			}
			if none {
				flagged++
				if _, err := CheckHot(p); err != nil { // (a receive has no launch-queue wait, as hostRun's loop without the tests needs)
					t.Fatalf("%+v, %+v: stage %d: %v", c, host, p.Stage, err)
				}
				for i := range p.Tasks {
					if p.Tasks[i].Kind == KindRecv && len(p.hot) == len(p.Tasks) {
						p.hot[i].queueAfter = 1 // (CheckHot must see it)
						if _, err := CheckHot(p); err == nil {
							t.Fatalf("%+v, %+v: stage %d: CheckHot found no launch-queue wait on receive %d", c, host, p.Stage, i)
						}
						p.hot[i].queueAfter = 0
						recvChecked++
						break
					}
				}
				if hostWalk(p) == hostNoWaits && p.Hosted {
					for i := range p.Tasks {
						if p.QueueAfter(i) >= 0 {
							fastQueued++
							break
						}
					}
				}
				continue
			}
			waited++
			p.noHostWaits = true
			if _, err := CheckHot(p); err == nil {
				t.Fatalf("%+v, %+v: stage %d: CheckHot found no host wait", c, host, p.Stage)
			}
			p.noHostWaits = false
		}
		play := func() (start, end, issued [][]engine.Time) {
			x := NewSymmetric(engine.New(), cfg.Layout, progs)
			if err := x.Run(); err != nil {
				t.Fatal(err)
			}
			for i := range x.Instances() {
				s, e, is := x.Times(i, nil, nil, nil)
				start, end, issued = append(start, s), append(end, e), append(issued, is)
			}
			if c.pp > 1 {
				return // (the every-rank play needs a runner)
			}
			// Every rank (NewFull, whose host walk is hostTo): its rows
			// follow the symmetric instances'.
			full, err := NewFull(engine.New(), cfg.Layout, progs, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := full.Run(); err != nil {
				t.Fatal(err)
			}
			for r := range cfg.Layout.World() {
				s, e, is := full.Times(r, nil, nil, nil)
				start, end, issued = append(start, s), append(end, e), append(issued, is)
			}
			return
		}
		s0, e0, i0 := play()
		flags := make([]bool, len(progs))
		for k, p := range progs {
			flags[k], p.noHostWaits = p.noHostWaits, false
		}
		s1, e1, i1 := play()
		for k, p := range progs {
			p.noHostWaits = flags[k]
		}
		for i := range s0 {
			for _, pair := range [][2][]engine.Time{{s0[i], s1[i]}, {e0[i], e1[i]}, {i0[i], i1[i]}} {
				if !slices.Equal(pair[0], pair[1]) {
					t.Fatalf("%+v, %+v: instance %d: the walk without the host-wait test plays %v, with it %v", c, host, i, pair[0], pair[1])
				}
			}
		}
	})
	t.Logf("%d programs without a host wait, %d with; %d walked without either test with launch-queue waits", flagged, waited, fastQueued)
	if recvChecked == 0 {
		t.Errorf("no receive in a program without host waits: CheckHot's receive check not tried")
	}
	if flagged == 0 || waited == 0 || fastQueued == 0 {
		t.Errorf("%d programs without a host wait, %d with; %d walked without either test with launch-queue waits", flagged, waited, fastQueued)
	}
}

// hostBuildCase is a step the host-thread tests build: its layout,
// micro-batches, steps and schedule, whether it is built into an arena
// (layers and passes copied) and whether passes are emitted, not copied.
type hostBuildCase struct {
	tp, dp, pp, m, steps int
	sched                pipeline.Schedule
	arena, emitPass      bool
}

// eachHostBuild calls f with the step config of every hostBuildCase (one
// to three steps, the optimizer's loop over 8 tensors, one arena per case
// shared by its builds) under no host model and host models with launch
// queues of none, one, four and 128 launches (the last deep enough that on
// one step's programs no task outlaunches it: launch-queue waits without
// QueueSelf's, as on the 70B sweep).
func eachHostBuild(t *testing.T, f func(c hostBuildCase, host HostModel, cfg *StepConfig)) {
	t.Helper()
	hosts := []HostModel{{}}
	for _, q := range []int{0, 1, 4, 128} {
		hosts = append(hosts, HostModel{On: true, KernelFwd: 3 * engine.Microsecond, KernelBwd: 2 * engine.Microsecond,
			Call: 5 * engine.Microsecond, Queue: q})
	}
	for _, c := range []hostBuildCase{
		{1, 1, 1, 2, 1, pipeline.OneFOneB, false, false},
		{1, 1, 1, 4, 3, pipeline.OneFOneB, false, false},
		{1, 1, 1, 4, 3, pipeline.OneFOneB, true, false},
		{1, 1, 1, 4, 2, pipeline.OneFOneB, true, true},
		{1, 1, 4, 8, 1, pipeline.OneFOneB, true, false},
		{1, 1, 4, 16, 2, pipeline.OneFOneB, true, true},
		{1, 1, 3, 6, 2, pipeline.ZeroBubble, false, false},
		{1, 1, 3, 6, 2, pipeline.ZeroBubble, true, false},
		{2, 2, 2, 8, 1, pipeline.OneFOneB, true, true},
		{2, 1, 2, 8, 2, pipeline.OneFOneB, true, false},
	} {
		var arena *Arena
		if c.arena {
			arena = new(Arena)
		}
		for _, host := range hosts {
			_, cfg := stepConfig(t, c.tp, c.dp, c.pp, c.m, c.sched)
			cfg.Host, cfg.Steps, cfg.OptimizerTensors = host, c.steps, 8
			cfg.Arena, cfg.EmitEveryPass = arena, c.emitPass
			f(c, host, cfg)
		}
	}
}

// TestHostWalkFacts: instance.walk holds the program's host-walk facts
// (Program.noHostWaits; QueueSelf waits present), which hostRun reads in
// place of the Program's fields: hand-computed on the four combinations,
// and set by NewSymmetric on each instance from its own program (built
// programs with launch queues, so QueueSelf waits among them, or not).
func TestHostWalkFacts(t *testing.T) {
	for _, c := range []struct {
		noWaits, qself bool
		want           uint8
	}{
		{false, false, 0},
		{true, false, hostNoWaits},
		{false, true, hostQSelf},
		{true, true, hostNoWaits | hostQSelf},
	} {
		p := &Program{noHostWaits: c.noWaits}
		if c.qself {
			p.qself = []int32{0}
		}
		if got := hostWalk(p); got != c.want {
			t.Errorf("noHostWaits %v, qself %v: walk %b, want %b", c.noWaits, c.qself, got, c.want)
		}
	}
	pr := unitPricer{unit: 20 * engine.Microsecond}
	kinds := map[uint8]int{}
	for _, q := range []int{0, 1, 4} {
		for _, steps := range []int{1, 2} {
			_, cfg := stepConfig(t, 1, 1, 2, 4, pipeline.OneFOneB)
			cfg.Host = HostModel{On: true, KernelFwd: 3 * engine.Microsecond, KernelBwd: 2 * engine.Microsecond, Call: 5 * engine.Microsecond, Queue: q}
			cfg.Steps = steps
			progs, err := Build(cfg, pr)
			if err != nil {
				t.Fatal(err)
			}
			x := NewSymmetric(engine.New(), cfg.Layout, progs)
			for i := range x.inst {
				in := &x.inst[i]
				want := uint8(0)
				if in.prog.noHostWaits {
					want |= hostNoWaits
				}
				if in.prog.qself != nil {
					want |= hostQSelf
				}
				if in.walk != want {
					t.Fatalf("queue %d, %d steps: stage %d walk %b, want %b", q, steps, i, in.walk, want)
				}
				kinds[in.walk]++
			}
		}
	}
	t.Logf("instances by walk facts: %v", kinds)
}
