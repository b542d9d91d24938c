package parallel

import (
	"fmt"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/workload"
)

// walkedHostIssue is Stats.HostIssue as the walk summed it before
// hostIssueSum: task by task over walkFrom's segments (the tasks up to the
// unit's end, each extra copy of the unit, the suffix), a hosted program's
// records but receives.
func walkedHostIssue(x *Executor, i, extra int) engine.Time {
	hot := x.hotTasks(i)
	if !x.inst[i].prog.Hosted {
		return 0
	}
	sum := func(lo, hi int32) (s engine.Time) {
		for _, t := range hot[lo:hi] {
			if t.kind != KindRecv {
				s += t.issue
			}
		}
		return s
	}
	n := int32(len(hot))
	if x.rep == nil {
		return sum(0, n)
	}
	r := x.rep[i]
	s := sum(0, r.b)
	for c := 1; c <= extra; c++ {
		s += sum(r.a, r.b)
	}
	return s + sum(r.b, n)
}

// TestHostIssueSumIsExact: on programs built with and without an arena
// (layer and pass copies, both counted), the host modelled or not, launch
// queues of none, one or four and one to three steps, Program.issueSum is
// the plain sum of the tasks' Issue (receives aside, 0 without a host),
// and every instance's Stats, StatsOfTimes and StatsEveryWait give the
// HostIssue the walk summed task by task, and equal field by field the
// Stats measured with the build's sum refused (issueSumOK false: the
// records summed here). It fails if add, copyLayers or copyPass stops
// counting, or a copy counts its range twice.
func TestHostIssueSumIsExact(t *testing.T) {
	pr := unitPricer{unit: 20 * engine.Microsecond}
	layers0, passes0 := CopiedTasks(), CopiedPassTasks()
	fromBuild := 0
	eachHostBuild(t, func(c hostBuildCase, host HostModel, cfg *StepConfig) {
		fromBuild += checkIssueSum(t, fmt.Sprintf("%+v, %+v", c, host), cfg, pr)
	})
	// layer copies (copyConfig: long chunks), the host on, with and without
	// an arena, ZeRO-3's gathers among the copies
	for _, arena := range []*Arena{nil, new(Arena)} {
		for k, edit := range []func(*StepConfig){
			func(*StepConfig) {},
			func(c *StepConfig) { c.Zero, c.FSDPVersion, c.GradDtype = 3, 1, workload.FP32 },
			func(c *StepConfig) { c.Zero, c.Overlap.ParamGather, c.Zero3BackwardPrefetch = 3, true, true },
			func(c *StepConfig) { c.Schedule = pipeline.Interleaved },
		} {
			v := 1
			if k == 3 {
				v = 2
			}
			cfg := copyConfig(t, 2, v, 4, 16*v)
			edit(cfg)
			cfg.Host = HostModel{On: true, KernelFwd: 3 * engine.Microsecond, KernelBwd: 2 * engine.Microsecond, Call: 10 * engine.Microsecond}
			cfg.Arena = arena
			fromBuild += checkIssueSum(t, fmt.Sprintf("copyConfig %d, arena %v", k, arena != nil), cfg, pr)
		}
	}
	if CopiedTasks() == layers0 || CopiedPassTasks() == passes0 || fromBuild == 0 {
		t.Fatalf("copied %d layer and %d pass tasks, %d instances read the build's sum: want all > 0",
			CopiedTasks()-layers0, CopiedPassTasks()-passes0, fromBuild)
	}
}

// TestHostIssueSumReplicated: a replicated step's HostIssue (the build's
// sum plus the copies' units) is the walk's per-task sum over its
// segments, measured on one period (statsPeriodic) and with every copy
// walked (statsWalk), with the host thread ahead, bound, and queued.
func TestHostIssueSumReplicated(t *testing.T) {
	for _, host := range []HostModel{
		{On: true, KernelFwd: 20 * engine.Microsecond, KernelBwd: 20 * engine.Microsecond, Call: 5 * engine.Microsecond},
		{On: true, KernelFwd: 2 * engine.Millisecond, KernelBwd: 2 * engine.Millisecond},
		{On: true, KernelFwd: 20 * engine.Microsecond, KernelBwd: 20 * engine.Microsecond, Call: 5 * engine.Microsecond, Queue: 16},
	} {
		cfg := steadyConfig(t, 32, host)
		full, short, _, _, why := playSteady(t, cfg)
		if why != "" {
			t.Fatalf("%+v: not replicated: %s", host, why)
		}
		for i := range short.inst {
			extra := short.rep[i].extra
			want := walkedHostIssue(short, i, extra)
			if extra == 0 || want == 0 {
				t.Fatalf("%+v: stage %d: %d copies, HostIssue %v: want both > 0", host, i, extra, want)
			}
			periodic := short.Stats(i)
			short.walkCopies = true
			walk := short.Stats(i)
			short.walkCopies = false
			every := short.StatsEveryWait(i)
			for _, st := range []Stats{periodic, walk, every, full.Stats(i)} {
				if st.HostIssue != want {
					t.Fatalf("%+v: stage %d: HostIssue %v, the walk's per-task sum %v", host, i, st.HostIssue, want)
				}
			}
			if periodic != walk || walk != every {
				t.Fatalf("%+v: stage %d: one period %+v, every copy %+v, every wait %+v", host, i, periodic, walk, every)
			}
		}
	}
}

// checkIssueSum checks TestHostIssueSumIsExact's claims on cfg's programs
// and returns how many instances read the build's sum.
func checkIssueSum(t *testing.T, name string, cfg *StepConfig, pr Pricer) (fromBuild int) {
	t.Helper()
	progs, err := Build(cfg, pr)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range progs {
		var want engine.Time
		for i := range p.Tasks {
			if p.Hosted && p.Tasks[i].Kind != KindRecv {
				want += p.Issue(i)
			}
		}
		if !p.issueSumOK || p.issueSum != want {
			t.Fatalf("%s: stage %d: issueSum %v (ok %v), the tasks' sum %v", name, p.Stage, p.issueSum, p.issueSumOK, want)
		}
	}
	x := NewSymmetric(engine.New(), cfg.Layout, progs)
	if err := x.Run(); err != nil {
		t.Fatal(err)
	}
	for i := range x.Instances() {
		p := x.inst[i].prog
		if p.Hosted && p.keepHot && &x.inst[i].hot[0] == &p.hot[0] {
			fromBuild++
		}
		st := x.Stats(i)
		if want := walkedHostIssue(x, i, 0); st.HostIssue != want || cfg.Host.On != (want > 0) {
			t.Fatalf("%s: instance %d: HostIssue %v, the walk's sum %v", name, i, st.HostIssue, want)
		}
		if every := x.StatsEveryWait(i); every != st {
			t.Fatalf("%s: instance %d: Stats %+v, StatsEveryWait %+v", name, i, st, every)
		}
		ok := p.issueSumOK
		p.issueSumOK = false
		scanned, every := x.Stats(i), x.StatsEveryWait(i)
		p.issueSumOK = ok
		if scanned != st || every != st {
			t.Fatalf("%s: instance %d: Stats %+v, with the records summed %+v and %+v", name, i, st, scanned, every)
		}
	}
	return fromBuild
}
