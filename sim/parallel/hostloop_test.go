package parallel

import (
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
)

// TestHostRunFromHandle: symEnds.Handle runs the host thread's first walk
// (hostRun) itself when the task the thread waits for ends, and goes on
// through hostIssued and hostAdvanceOn only when the walk issues a task
// whose inputs are in. With the host modelled or not, launch queues of
// one, four or unbounded launches (QueueAfter, QueueSelf) and one to three
// steps (the step boundary's HostAfter): one rank's symmetric play gives
// every task the same start, end and issue time as the every-rank play
// (NewFull, whose host thread is fullMode's hostTo, an independent walk);
// pipelines (whose receives the thread skips), which the every-rank play
// needs a collectives runner for, have every task but a receive issued,
// in program order, no earlier than the ends it waits for (HostAfter,
// QueueAfter) and no later than its start.
func TestHostRunFromHandle(t *testing.T) {
	hosts := []HostModel{{}}
	for _, q := range []int{0, 1, 4} {
		hosts = append(hosts, HostModel{On: true, KernelFwd: 3 * engine.Microsecond, KernelBwd: 2 * engine.Microsecond,
			Call: 5 * engine.Microsecond, Queue: q})
	}
	pr := unitPricer{unit: 20 * engine.Microsecond}
	for _, c := range []struct {
		tp, dp, pp, m, steps int
		sched                pipeline.Schedule
	}{
		{1, 1, 1, 1, 1, pipeline.OneFOneB},
		{1, 1, 1, 2, 2, pipeline.OneFOneB},
		{1, 1, 1, 4, 3, pipeline.OneFOneB},
		{1, 1, 4, 8, 1, pipeline.OneFOneB},
		{1, 1, 3, 6, 2, pipeline.ZeroBubble},
		{1, 1, 2, 4, 2, pipeline.OneFOneB},
	} {
		for _, host := range hosts {
			_, cfg := stepConfig(t, c.tp, c.dp, c.pp, c.m, c.sched)
			cfg.Host, cfg.Steps, cfg.OptimizerTensors = host, c.steps, 8
			progs, err := Build(cfg, pr)
			if err != nil {
				t.Fatal(err)
			}
			hostAfters, queueAfters := 0, 0
			for _, p := range progs {
				for i := range p.Tasks {
					if p.HostAfter(i) >= 0 {
						hostAfters++
					}
					if p.QueueAfter(i) >= 0 {
						queueAfters++
					}
				}
			}
			if host.On && c.steps > 1 && hostAfters == 0 || host.Queue > 0 && queueAfters == 0 {
				t.Fatalf("%+v, %+v: %d host waits, %d queue waits", c, host, hostAfters, queueAfters)
			}
			sym := NewSymmetric(engine.New(), cfg.Layout, progs)
			if err := sym.Run(); err != nil {
				t.Fatal(err)
			}
			for i := range sym.inst {
				_, _, p, ss, se := sym.Instance(i)
				si := sym.Issued(i)
				if (si != nil) != host.On {
					t.Fatalf("%+v, %+v: stage %d: issue times %v", c, host, i, si)
				}
				var free engine.Time
				for k := range si {
					if p.Tasks[k].Kind == KindRecv {
						continue
					}
					late := free + p.Issue(k)
					for _, w := range []int{p.HostAfter(k), p.QueueAfter(k)} {
						if w >= 0 {
							late = max(late, se[w]+p.Issue(k))
						}
					}
					if si[k] < late || si[k] > ss[k] {
						t.Fatalf("%+v, %+v: stage %d task %d %s issued at %d, after %d, started at %d",
							c, host, i, k, p.Tasks[k].Name.String(), si[k], late, ss[k])
					}
					free = si[k]
				}
			}
			if c.pp > 1 {
				continue // (the every-rank play needs a runner)
			}
			progs, err = Build(cfg, pr)
			if err != nil {
				t.Fatal(err)
			}
			full, err := NewFull(engine.New(), cfg.Layout, progs, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := full.Run(); err != nil {
				t.Fatal(err)
			}
			for i := range sym.inst {
				rank, _, p, ss, se := sym.Instance(i)
				si := sym.Issued(i)
				fs, fe, fi := full.Times(rank, nil, nil, nil)
				if len(fs) != len(ss) || len(fi) != len(si) {
					t.Fatalf("%+v, %+v: stage %d: %d tasks, %d issue times, every-rank %d, %d", c, host, i, len(ss), len(si), len(fs), len(fi))
				}
				for k := range ss {
					if ss[k] != fs[k] || se[k] != fe[k] || host.On && si[k] != fi[k] {
						t.Fatalf("%+v, %+v: stage %d task %d %s: [%d, %d] issued %v, every-rank [%d, %d] issued %v",
							c, host, i, k, p.Tasks[k].Name.String(), ss[k], se[k], si, fs[k], fe[k], fi)
					}
				}
			}
		}
	}
}

// TestHostedNoneReadyAtBegin: with a host thread, no task but a receive
// has all its inputs before the thread issues it (need counts the issue:
// fillNeedOf, and the copies' counts taken from their sources'), which is
// why begin does not look for ready tasks on a hosted instance. Checked
// on NewSymmetric's counts of hosted programs built alone and in an Arena
// (copied layers and passes), one to three steps, pipelines of one to
// four stages; programs without a host thread do have ready tasks there.
// It fails if fillNeedOf or fillNeedCopied stop counting the issue.
func TestHostedNoneReadyAtBegin(t *testing.T) {
	pr := unitPricer{unit: 20 * engine.Microsecond}
	for _, c := range []struct {
		tp, dp, pp, m, steps int
		sched                pipeline.Schedule
	}{
		{1, 1, 1, 2, 2, pipeline.OneFOneB},
		{1, 2, 4, 8, 1, pipeline.OneFOneB},
		{1, 1, 3, 6, 3, pipeline.ZeroBubble},
	} {
		for _, on := range []bool{false, true} {
			for _, arena := range []bool{false, true} {
				_, cfg := stepConfig(t, c.tp, c.dp, c.pp, c.m, c.sched)
				cfg.Host = HostModel{On: on, KernelFwd: 3 * engine.Microsecond, KernelBwd: 2 * engine.Microsecond, Call: 5 * engine.Microsecond, Queue: 2}
				cfg.Steps = c.steps
				if arena {
					cfg.Arena = new(Arena)
				}
				progs, err := Build(cfg, pr)
				if err != nil {
					t.Fatal(err)
				}
				x := NewSymmetric(engine.New(), cfg.Layout, progs)
				ready := 0
				for i := range x.inst {
					in := &x.inst[i]
					if in.prog.Hosted != on {
						t.Fatalf("%+v host %v arena %v: stage %d Hosted %v", c, on, arena, i, in.prog.Hosted)
					}
					for k, n := range in.need {
						if n == 0 && in.hot[k].kind != KindRecv {
							ready++
						}
					}
				}
				if on && ready != 0 || !on && ready == 0 {
					t.Errorf("%+v host %v arena %v: %d tasks ready before any issue", c, on, arena, ready)
				}
			}
		}
	}
}
