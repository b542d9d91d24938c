package parallel

import (
	"errors"
	"math/rand"
	"reflect"
	"slices"
	"testing"
	"unsafe"

	"github.com/simtrain/simtrain/sim/engine"
)

// A full step resumed from a shortened play's saved state (Fork, Resume)
// is the full step played from the start: every task's start, end and
// issue, and the engine's events, equal. On a two-stage 1F1B pipeline of
// 48 micro-batches played as one of 17, with the last stage's host thread
// 1%, 6% and 15% slower than the period (TestRunSteadyStopsOnlyFailingPlays:
// a play that replicates, one that fails early, one host-bound), and
// without a host thread. The save pauses where the first stage's tasks
// before its last common unit have ended; the host thread has issued past
// the common prefix there, and Resume takes it back. The same state
// resumes a longer shortened play (margin 16) as that play from the
// start, stopped early or not, events counted. A full step that is not the
// shortened one continued (another host's issue times) is refused, the
// executor left as built: played from the start, it gives its own full
// play.
func TestForkResumesAsFullPlay(t *testing.T) {
	const m = 48
	h1, _ := unitHost(t, m, 1)
	_, p := unitHost(t, m, 0)
	for _, slower := range []float64{0, 1.01, 1.06, 1.15} {
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
		sp, err := Build(&short, unitPricer{unit: engine.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		xs := NewSymmetric(engine.New(), short.Layout, sp)
		xs.CountEvents()
		var f Fork
		if _, err := xs.RunSteady(plan, &f); err != nil {
			t.Fatal(err)
		}
		saved, done, _ := f.Saved()
		if !saved || done <= 0 || done > xs.Completed() {
			t.Fatalf("%v: saved %v after %d of the %d tasks played", slower, saved, done, xs.Completed())
		}
		if slower > 0 && f.inst[1].hostNext <= f.inst[1].common {
			t.Errorf("%v: the host thread had not issued past the common prefix (%d ≤ %d): rollback untested", slower, f.inst[1].hostNext, f.inst[1].common)
		}
		full := func(c *StepConfig) *Executor {
			progs, err := Build(c, unitPricer{unit: engine.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			return NewSymmetric(engine.New(), c.Layout, progs)
		}
		whole := full(cfg)
		if err := whole.Run(); err != nil {
			t.Fatal(err)
		}
		x := full(cfg)
		if err := x.Resume(&f); err != nil {
			t.Fatalf("%v: %v", slower, err)
		}
		if err := x.RunResumed(); err != nil {
			t.Fatal(err)
		}
		for i := range x.inst {
			if !reflect.DeepEqual(x.inst[i].state, whole.inst[i].state) {
				t.Errorf("%v: stage %d: the resumed play's times differ from the full play's", slower, i)
			}
		}
		if x.eng.Executed() != whole.eng.Executed() || x.Completed() != whole.Completed() {
			t.Errorf("%v: resumed %d events, %d tasks; full play %d, %d", slower, x.eng.Executed(), x.Completed(), whole.eng.Executed(), whole.Completed())
		}
		// Into a longer shortened play (Settle's second play), its
		// events counted: as that play from the start, stopped early or
		// not, times and events equal.
		plan2, ok := PlanSteady(cfg, 16)
		if !ok {
			t.Fatalf("%v: PlanSteady refused 16", slower)
		}
		short2 := *cfg
		short2.Microbatches = plan2.Played
		fresh, y2 := full(&short2), full(&short2)
		fresh.CountEvents()
		y2.CountEvents()
		failed1, err1 := fresh.RunSteady(plan2, nil)
		if err := y2.Resume(&f); err != nil {
			t.Fatalf("%v: Resume into %d micro-batches: %v", slower, plan2.Played, err)
		}
		failed2, err2 := y2.RunSteadyResumed(plan2, nil)
		if err1 != nil || err2 != nil || failed1 != failed2 || fresh.Completed() != y2.Completed() || fresh.eng.Executed() != y2.eng.Executed() {
			t.Errorf("%v: resumed second play: failed %v, %d tasks, %d events (%v); from the start %v, %d, %d (%v)", slower,
				failed2, y2.Completed(), y2.eng.Executed(), err2, failed1, fresh.Completed(), fresh.eng.Executed(), err1)
		}
		for i := range y2.inst {
			if !reflect.DeepEqual(y2.inst[i].state, fresh.inst[i].state) || !reflect.DeepEqual(y2.inst[i].events, fresh.inst[i].events) {
				t.Errorf("%v: stage %d: the resumed second play's times or events differ", slower, i)
			}
		}
		if !failed1 && fresh.Replicate(plan2) != y2.Replicate(plan2) {
			t.Errorf("%v: Replicate differs on the resumed second play", slower)
		}
		if slower == 0 {
			continue
		}
		// Another step: its tasks' issue times differ in the prefix.
		other := steadyConfig(t, m, HostModel{On: true, KernelFwd: host.KernelFwd + 1, KernelBwd: host.KernelBwd})
		y := full(other)
		if err := y.Resume(&f); !errors.Is(err, ErrNoResume) {
			t.Errorf("%v: Resume on another step: %v, want ErrNoResume", slower, err)
		}
		wantY := full(other)
		if err := wantY.Run(); err != nil {
			t.Fatal(err)
		}
		if err := y.Run(); err != nil {
			t.Fatal(err)
		}
		for i := range y.inst {
			if !reflect.DeepEqual(y.inst[i].state, wantY.inst[i].state) {
				t.Errorf("%v: stage %d: a refused Resume changed the play", slower, i)
			}
		}
	}
}

// Two Forks sharing their copies (ShareCopies): the one detached last
// resumes as the full play from the start; the other, whose copies it
// replaced, is refused (ErrNoResume) with the executor left as built,
// and again after a second Detach (its programs are no longer held).
func TestForkSharedCopies(t *testing.T) {
	cfg, build, forks := saveSharedForks(t, func(int, *[2]Fork) {})
	if forks[0].cp != forks[1].cp {
		t.Fatal("ShareCopies: the Forks do not share their copies")
	}
	forks[0].Detach()
	forks[1].Detach() // replaces forks[0]'s copies
	whole := build(cfg)
	if err := whole.Run(); err != nil {
		t.Fatal(err)
	}
	for _, again := range []bool{false, true} {
		if again {
			forks[0].Detach()
		}
		y := build(cfg)
		if err := y.Resume(&forks[0]); !errors.Is(err, ErrNoResume) {
			t.Errorf("again %v: Resume from the Fork whose copies were replaced: %v, want ErrNoResume", again, err)
		}
		if err := y.Run(); err != nil {
			t.Fatal(err)
		}
		for i := range y.inst {
			if !reflect.DeepEqual(y.inst[i].state, whole.inst[i].state) {
				t.Errorf("again %v: stage %d: a refused Resume changed the play", again, i)
			}
		}
	}
	x := build(cfg)
	if err := x.Resume(&forks[1]); err != nil {
		t.Fatalf("Resume from the Fork detached last: %v", err)
	}
	if err := x.RunResumed(); err != nil {
		t.Fatal(err)
	}
	for i := range x.inst {
		if !reflect.DeepEqual(x.inst[i].state, whole.inst[i].state) {
			t.Errorf("stage %d: the resumed play's times differ from the full play's", i)
		}
	}
	if x.eng.Executed() != whole.eng.Executed() {
		t.Errorf("resumed %d events, full play %d", x.eng.Executed(), whole.eng.Executed())
	}
}

// Resume compares what the play reads of a prefix task (forkTask): a full
// step whose prefix differs from the saved play's only in a field the play
// does not read (FLOPs, layer) resumes, as the full play from the start;
// one whose prefix differs in a duration, an issue time, a kind's flag, a
// receive's match or a dependency is refused (ErrNoResume).
func TestForkComparesWhatThePlayReads(t *testing.T) {
	cfg, plan, build := hostAheadStep(t)
	short := *cfg
	short.Microbatches = plan.Played
	xs := build(&short)
	xs.CountEvents()
	var f Fork
	if _, err := xs.RunSteady(plan, &f); err != nil {
		t.Fatal(err)
	}
	f.Detach()
	whole := build(cfg)
	if err := whole.Run(); err != nil {
		t.Fatal(err)
	}
	// a prefix task of stage 1: its first compute task, and its first receive
	first := func(p *Program, kind func(Kind) bool) int {
		for i := range p.Tasks[:f.inst[1].common] {
			if kind(p.Tasks[i].Kind) {
				return i
			}
		}
		t.Fatal("no such task in the prefix")
		return -1
	}
	isRecv := func(k Kind) bool { return k == KindRecv }
	// and its last receive (Detach lists the prefix's sends and
	// receives from the program's p2p list, to the prefix's end)
	last := func(p *Program, kind func(Kind) bool) int {
		for i := f.inst[1].common - 1; i >= 0; i-- {
			if kind(p.Tasks[i].Kind) {
				return int(i)
			}
		}
		t.Fatal("no such task in the prefix")
		return -1
	}
	for _, c := range []struct {
		name   string
		change func(p *Program)
		resume bool
	}{
		{"FLOPs", func(p *Program) { t := &p.Tasks[first(p, Kind.IsCompute)]; t.setFLOPs(2 * t.FLOPs()) }, true},
		{"layer", func(p *Program) { p.Tasks[first(p, Kind.IsCompute)].Layer += 7 }, true},
		{"duration", func(p *Program) { p.Tasks[first(p, Kind.IsCompute)].Dur++ }, false},
		{"issue", func(p *Program) { p.hot[first(p, Kind.IsCompute)].issue++ }, false},
		{"sm-sized", func(p *Program) { i := first(p, Kind.IsCompute); p.Tasks[i].SMSized = !p.Tasks[i].SMSized }, false},
		{"receive's match", func(p *Program) { t := &p.Tasks[first(p, isRecv)]; t.setP2P(t.Peer(), t.Match()+1) }, false},
		{"last receive's match", func(p *Program) { t := &p.Tasks[last(p, isRecv)]; t.setP2P(t.Peer(), t.Match()+1) }, false},
		{"dependency", func(p *Program) { p.deps[0]++ }, false},
		{"dependency count", func(p *Program) { p.depOff[1]++ }, false},
	} {
		x := build(cfg)
		c.change(x.progs[1])
		fillHot(x.inst[1].hot, x.inst[1].need, x.progs[1]) // as NewSymmetric after the change
		err := x.Resume(&f)
		if c.resume != (err == nil) {
			t.Fatalf("%s: Resume: %v, want resumed %v", c.name, err, c.resume)
		}
		if err != nil {
			if !errors.Is(err, ErrNoResume) {
				t.Errorf("%s: %v, want ErrNoResume", c.name, err)
			}
			continue
		}
		if err := x.RunResumed(); err != nil {
			t.Fatal(err)
		}
		for i := range x.inst {
			if !reflect.DeepEqual(x.inst[i].state, whole.inst[i].state) {
				t.Errorf("%s: stage %d: the resumed play's times differ from the full play's", c.name, i)
			}
		}
	}
}

// hotOf, which Fork's copies use, with the program's issue time and waits
// (Program.waits), is the hotTask fillHot stores, for every task of a
// pipeline with a host thread (sends, receives, compute, SM-sized
// communication).
func TestHotOfIsFillHot(t *testing.T) {
	cfg := steadyConfig(t, 12, HostModel{On: true, KernelFwd: engine.Microsecond, KernelBwd: engine.Microsecond})
	progs, err := Build(cfg, unitPricer{unit: engine.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for s, p := range progs {
		hot := make([]hotTask, len(p.Tasks))
		fillHot(hot, nil, p)
		for i := range p.Tasks {
			got, w := hotOf(&p.Tasks[i]), p.waits(i)
			got.issue, got.hostAfter, got.queueAfter = w.issue, w.hostAfter, w.queueAfter
			if got != hot[i] {
				t.Fatalf("stage %d task %d: hotOf %+v, fillHot %+v", s, i, got, hot[i])
			}
		}
	}
}

// hostAheadStep is the 48-micro-batch step the Fork tests resume: a host
// thread 6% slower per unit than the GPU's period, its steady plan, and a
// builder of symmetric executors for a step config on the unit pricer.
func hostAheadStep(t *testing.T) (*StepConfig, Steady, func(*StepConfig) *Executor) {
	t.Helper()
	const m = 48
	h1, _ := unitHost(t, m, 1)
	_, p := unitHost(t, m, 0)
	k := engine.Time(float64(p) * 1.06 / float64(h1))
	cfg := steadyConfig(t, m, HostModel{On: true, KernelFwd: k, KernelBwd: k})
	plan, ok := PlanSteady(cfg, 8)
	if !ok {
		t.Fatal("PlanSteady refused")
	}
	build := func(c *StepConfig) *Executor {
		progs, err := Build(c, unitPricer{unit: engine.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return NewSymmetric(engine.New(), c.Layout, progs)
	}
	return cfg, plan, build
}

// Resume refuses (ErrNoResume, the executor left as built) a full step in
// which a task past a common prefix has every input at the save: the full
// play would have started it before. Arrivals come from the prefix's
// ended tasks through their successor lists; a task without dependencies
// has them all. Two ways to such a step: the saved prefix cut short,
// before a task of it that had ended (so every input of that task has
// ended); a task past the prefix whose dependencies are dropped from its
// count.
func TestResumeRefusesATaskWithItsInputs(t *testing.T) {
	cfg, plan, build := hostAheadStep(t)
	short := *cfg
	short.Microbatches = plan.Played
	whole := build(cfg)
	if err := whole.Run(); err != nil {
		t.Fatal(err)
	}
	save := func() *Fork {
		xs := build(&short)
		xs.CountEvents()
		f := new(Fork)
		if _, err := xs.RunSteady(plan, f); err != nil {
			t.Fatal(err)
		}
		if saved, _, _ := f.Saved(); !saved {
			t.Fatal("nothing saved")
		}
		f.Detach()
		return f
	}
	for _, c := range []struct {
		name   string
		change func(f *Fork, x *Executor)
	}{
		{"unchanged", func(*Fork, *Executor) {}},
		{"prefix cut before an ended task", func(f *Fork, x *Executor) {
			fi := &f.inst[1]
			p := x.progs[1]
			for u := fi.common - 1; u > 0; u-- {
				if fi.state[u].end != 0 && p.Tasks[u].Kind != KindRecv && p.depCount(int(u)) > 0 {
					fi.common = u
					// the prefix's sends and receives from u on are past it now
					for fi.p2pEnd > fi.p2pAt && f.cp.p2p[fi.p2pEnd-1].t >= u {
						fi.p2pEnd--
					}
					return
				}
			}
			t.Fatal("no ended task in the prefix")
		}},
		{"a task past the prefix without dependencies", func(f *Fork, x *Executor) {
			p := x.progs[0]
			for u := f.inst[0].common; int(u) < len(p.Tasks); u++ {
				if p.Tasks[u].Kind != KindRecv {
					// u's dependencies dropped from the lists
					at, d := p.depOff[u], p.depCount(int(u))
					p.deps = append(p.deps[:at], p.deps[at+d:]...)
					for k := int(u) + 1; k < len(p.depOff); k++ {
						p.depOff[k] -= d
					}
					return
				}
			}
			t.Fatal("no task past the prefix")
		}},
	} {
		f := save()
		x := build(cfg)
		c.change(f, x)
		err := x.Resume(f)
		if c.name == "unchanged" {
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			continue
		}
		if !errors.Is(err, ErrNoResume) {
			t.Fatalf("%s: Resume: %v, want ErrNoResume", c.name, err)
		}
		for i := range x.inst {
			for u, s := range x.inst[i].state {
				if s != (taskState{}) {
					t.Fatalf("%s: stage %d task %d: a refused Resume left state %+v", c.name, i, u, s)
				}
			}
			in := &x.inst[i]
			if want := fillNeed(make([]int32, len(in.need)), in.prog); !reflect.DeepEqual(in.need, want) {
				t.Fatalf("%s: stage %d: a refused Resume left the awaited inputs %v, want %v", c.name, i, in.need, want)
			}
		}
		if c.name == "prefix cut before an ended task" {
			if err := x.Run(); err != nil {
				t.Fatal(err)
			}
			for i := range x.inst {
				if !reflect.DeepEqual(x.inst[i].state, whole.inst[i].state) {
					t.Errorf("%s: stage %d: a refused Resume changed the play", c.name, i)
				}
			}
		}
	}
}

// TestSameHot checks Resume's hotTask comparison against ==: hotTask's
// fields fill its first 31 bytes without holes (sameHot reads the first
// 30; the 31st, walk, follows from kind, group and stream), a change to
// any one field it reads is seen, and walk and padding bytes alone are not.
func TestSameHot(t *testing.T) {
	sameHot := func(a, b []hotTask) bool { same, _ := sameHot(a, b, 1<<31-1); return same }
	ty := reflect.TypeOf(hotTask{})
	var filled uintptr
	for i := range ty.NumField() {
		f := ty.Field(i)
		if f.Offset != filled {
			t.Fatalf("field %s at byte %d, want %d: sameHot no longer covers hotTask", f.Name, f.Offset, filled)
		}
		filled += f.Type.Size()
	}
	if filled != 31 || ty.Size() != 32 || ty.Field(ty.NumField()-1).Name != "walk" {
		t.Fatalf("hotTask fills %d of %d bytes, want 30 and walk of 32", filled, ty.Size())
	}
	base := hotTask{dur: 1e9 + 7, issue: 3, hostAfter: 12, queueAfter: 9, share: 300, kind: KindSend, group: GroupTP, stream: 1, flags: hotSMSized}
	changes := []func(h *hotTask){
		func(h *hotTask) { h.dur++ },
		func(h *hotTask) { h.issue ^= 1 << 40 },
		func(h *hotTask) { h.hostAfter-- },
		func(h *hotTask) { h.queueAfter = 0 },
		func(h *hotTask) { h.share ^= 1 << 15 },
		func(h *hotTask) { h.kind = KindRecv },
		func(h *hotTask) { h.group++ },
		func(h *hotTask) { h.stream ^= 0x80 },
		func(h *hotTask) { h.flags |= hotCopyEngine },
	}
	for n := range 5 { // the change at every position of a slice of n+1
		for k, change := range changes {
			a := make([]hotTask, n+1)
			for i := range a {
				a[i] = base
				a[i].dur += engine.Time(i)
			}
			b := slices.Clone(a)
			if !sameHot(a, b) {
				t.Fatalf("n=%d: equal slices reported different", n)
			}
			change(&b[n])
			if b[n] == a[n] || sameHot(a, b) {
				t.Errorf("n=%d: change %d not seen", n, k)
			}
		}
	}
	a, b := []hotTask{base}, []hotTask{base}
	pad := (*[32]byte)(unsafe.Pointer(&b[0]))
	pad[30], pad[31] = 0xff, 0x01
	if !sameHot(a, b) {
		t.Error("walk and padding bytes alone reported as a difference")
	}
	if sameHot(a, nil) || !sameHot(nil, []hotTask{}) {
		t.Error("lengths")
	}
	if !sameBytes([]int32{1, -2, 3}, []int32{1, -2, 3}) || sameBytes([]int32{1, -2, 3}, []int32{1, -2, 4}) ||
		sameBytes([]engine.Time{5}, []engine.Time{5, 5}) || !sameBytes([]engine.Time{}, nil) || sameBytes([]engine.Time{1 << 40}, []engine.Time{1 << 41}) {
		t.Error("sameBytes")
	}
}

// TestSameHotWaitsBelow checks sameHot's second result, every host and
// queue wait of a below lim, against a plain test, on a task at every
// position of slices of 1 to 5: waits at, just below and far above the
// bound in either field, none, both, and a negative one (refused), and
// bounds of 1, 2, a prefix's and the largest; a second result that does
// not change with a's waits, or reads b's, fails.
func TestSameHotWaitsBelow(t *testing.T) {
	base := hotTask{dur: 7, issue: 3, share: 300, kind: KindOptimizer, stream: 1}
	for _, c := range []struct {
		host, queue, lim int32
		below            bool
	}{
		{0, 0, 1, true},
		{1, 0, 1, false},
		{0, 1, 1, false},
		{1, 1, 2, true},
		{2, 1, 2, false},
		{1, 2, 2, false},
		{4_000, 3_999, 4_001, true},
		{4_001, 0, 4_001, false},
		{0, 4_001, 4_001, false},
		{0, 1 << 30, 4_001, false},
		{-1, 0, 4_001, false},
		{0, -5, 1 << 20, false},
		{1<<31 - 2, 1<<31 - 2, 1<<31 - 1, true},
		{1<<31 - 1, 0, 1<<31 - 1, false},
		{5, 5, 0, false}, // no value is below 0
	} {
		for n := 1; n <= 5; n++ {
			for at := range n {
				a := make([]hotTask, n)
				for i := range a {
					a[i] = base
					a[i].dur += engine.Time(i)
				}
				a[at].hostAfter, a[at].queueAfter = c.host, c.queue
				b := slices.Clone(a)
				same, below := sameHot(a, b, c.lim)
				if !same || below != c.below {
					t.Errorf("waits %d, %d below %d at %d of %d: same %v below %v, want true %v", c.host, c.queue, c.lim, at, n, same, below, c.below)
				}
				b[at].hostAfter, b[at].queueAfter = 0, 0 // b's waits are not read
				if c.host != 0 || c.queue != 0 {
					if same, below := sameHot(a, b, c.lim); same || below != c.below {
						t.Errorf("waits %d, %d below %d at %d of %d, b's cleared: same %v below %v, want false %v", c.host, c.queue, c.lim, at, n, same, below, c.below)
					}
				}
			}
		}
	}
	if same, below := sameHot(nil, nil, 0); !same || !below {
		t.Error("an empty prefix: equal, and every wait below any bound")
	}
}

// TestAllBelow checks Resume's bound test of the prefixes' dependencies
// and self waits against a plain loop: hand-made slices (values at, below
// and far above the bound, in the runs of four and in the tail, a negative
// value, refused, an empty slice, bounds of 0, 1 and the largest) and
// random ones of every length up to 13, so that every position of the runs
// and the tail is tested. It fails when a run's second word or the tail
// is not read, or the bias is off by one.
func TestAllBelow(t *testing.T) {
	plain := func(s []int32, lim int32) bool {
		for _, v := range s {
			if v < 0 || v >= lim {
				return false
			}
		}
		return true
	}
	for _, c := range []struct {
		s    []int32
		lim  int32
		want bool
	}{
		{nil, 0, true},
		{nil, 5, true},
		{[]int32{0}, 0, false},
		{[]int32{0}, 1, true},
		{[]int32{1}, 1, false},
		{[]int32{3, 1, 2, 0, 4}, 5, true},
		{[]int32{3, 1, 2, 0, 5}, 5, false}, // in the tail
		{[]int32{3, 1, 5, 0, 4}, 5, false}, // in a run's second word
		{[]int32{3, 1, 2, 0, 4}, 4, false},
		{[]int32{7, 1, 2, 0, -1, 1}, 9, false},
		{[]int32{-1 << 31, 0, 0, 0}, 9, false},
		{[]int32{1<<31 - 2, 0, 5, 1<<31 - 2}, 1<<31 - 1, true},
		{[]int32{1<<31 - 1, 0, 5, 1}, 1<<31 - 1, false},
		{[]int32{1 << 30, 0, 0, 0, 0, 0, 0, 0}, 1 << 20, false},
	} {
		if got := allBelow(c.s, c.lim); got != c.want || got != plain(c.s, c.lim) {
			t.Errorf("allBelow(%v, %d) = %v, want %v", c.s, c.lim, got, c.want)
		}
	}
	rng := rand.New(rand.NewSource(49))
	for range 3000 {
		s := make([]int32, rng.Intn(14))
		lim := int32(rng.Intn(40))
		for i := range s {
			s[i] = int32(rng.Intn(int(lim) + 2))
		}
		if len(s) > 0 && rng.Intn(4) == 0 {
			s[rng.Intn(len(s))] = max(lim-1, 0) // at the bound's edge
		}
		if got, want := allBelow(s, lim), plain(s, lim); got != want {
			t.Fatalf("allBelow(%v, %d) = %v, want %v", s, lim, got, want)
		}
	}
}

// TestFreePast checks Resume's scan for a task past a prefix that is not a
// receive and has no dependencies (freePast) against the scan of every
// task, on programs whose copied ranges (Program.copies) repeat their
// sources' kinds and dependency counts, as a build's do: a free task
// before the first copy, between copies, after the last, inside a copy of
// a prefix range (found in the copy, which is then scanned), a free
// receive (not counted), a copy across the prefix's end, copies of copies,
// a list that is not a build's, and every prefix length of each. It fails
// when a copy of the prefix is skipped, or the tasks between copies are.
func TestFreePast(t *testing.T) {
	plain := func(p *Program, hot []hotTask, c int) bool {
		for t := c; t < len(p.Tasks); t++ {
			if len(p.Deps(t)) == 0 && hot[t].kind != KindRecv {
				return true
			}
		}
		return false
	}
	type blk struct {
		kind Kind
		deps int32
	}
	busy := []blk{{KindForward, 1}, {KindRecv, 0}, {KindForward, 2}, {KindBackward, 1}, {KindSend, 1}}
	for _, c := range []struct {
		name   string
		n      int
		free   []int // tasks of no dependency (not receives), before the copies repeat them
		copies []copySeg
	}{
		{"none", 12, nil, []copySeg{{5, 0, 5}}},
		{"before the copies", 20, []int{3}, []copySeg{{10, 5, 5}, {15, 10, 5}}},
		{"between copies", 24, []int{14}, []copySeg{{5, 0, 5}, {15, 5, 5}}},
		{"after the last", 20, []int{17}, []copySeg{{5, 0, 5}, {10, 5, 5}}},
		{"in a prefix source", 25, []int{2}, []copySeg{{10, 0, 5}, {15, 10, 5}, {20, 15, 5}}},
		{"across the end", 16, []int{1}, []copySeg{{4, 0, 8}}},
		{"last of a source", 30, []int{9}, []copySeg{{10, 5, 5}, {20, 5, 5}}},
		{"not a build's", 24, []int{21}, []copySeg{{5, 0, 5}, {4, 0, 1}, {20, 0, 4}}},
	} {
		p := &Program{}
		p.Tasks = make([]Task, c.n)
		cnt := make([]int32, c.n)
		for i := range p.Tasks {
			b := busy[(i*3+1)%len(busy)]
			p.Tasks[i].Kind, cnt[i] = b.kind, b.deps
		}
		for _, i := range c.free {
			p.Tasks[i].Kind, cnt[i] = KindOptimizer, 0
		}
		applyCopies(p, cnt, c.copies)
		p.deps = make([]int32, p.depOff[c.n]) // (their values are not read)
		hot := make([]hotTask, c.n)
		fillHotTasks(hot, p.Tasks)
		found := false
		for pre := 0; pre <= c.n; pre++ {
			got, want := freePast(p, hot, pre), plain(p, hot, pre)
			if got != want {
				t.Errorf("%s: prefix %d: %v, want %v", c.name, pre, got, want)
			}
			found = found || want
		}
		if !found && len(c.free) > 0 {
			t.Errorf("%s: no prefix finds a free task: the case tests nothing", c.name)
		}
	}
}

// A Fork keeps every stage's saved prefix state in one array of each kind
// (forkCopy.state, need, events), the stages' windows one after the other and
// each capped at its end, and a second save of the same size reuses the
// arrays (no allocation), still resuming as the full play.
func TestForkSavesInOneArray(t *testing.T) {
	const m = 48
	cfg := steadyConfig(t, m, HostModel{})
	plan, ok := PlanSteady(cfg, 8)
	if !ok {
		t.Fatal("PlanSteady refused")
	}
	short := *cfg
	short.Microbatches = plan.Played
	shortPlay := func() *Executor {
		sp, err := Build(&short, unitPricer{unit: engine.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		x := NewSymmetric(engine.New(), short.Layout, sp)
		x.CountEvents()
		return x
	}
	var f Fork
	var first *taskState
	for round := 0; round < 2; round++ {
		xs := shortPlay()
		if _, err := xs.RunSteady(plan, &f); err != nil {
			t.Fatal(err)
		}
		if saved, _, _ := f.Saved(); !saved || len(f.inst) != 2 {
			t.Fatalf("round %d: saved %v, %d stages", round, saved, len(f.inst))
		}
		at := 0
		for i := range f.inst {
			fi := &f.inst[i]
			c := int(fi.common)
			if c == 0 || len(fi.state) != c || cap(fi.state) != c || cap(fi.need) != c || cap(fi.events) != c {
				t.Fatalf("round %d, stage %d: prefix %d, windows %d/%d, %d, %d", round, i, c, len(fi.state), cap(fi.state), cap(fi.need), cap(fi.events))
			}
			if &fi.state[0] != &f.cp.state[at] || &fi.need[0] != &f.cp.need[at] || &fi.events[0] != &f.cp.events[at] {
				t.Errorf("round %d, stage %d: not the window at %d of the Fork's arrays", round, i, at)
			}
			at += c
		}
		if at != len(f.cp.state) {
			t.Errorf("round %d: windows cover %d of %d", round, at, len(f.cp.state))
		}
		if round == 0 {
			first = &f.cp.state[0]
		} else if &f.cp.state[0] != first {
			t.Error("a save of the same size allocated new storage")
		}
	}
	progs, err := Build(cfg, unitPricer{unit: engine.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	whole := NewSymmetric(engine.New(), cfg.Layout, progs)
	if err := whole.Run(); err != nil {
		t.Fatal(err)
	}
	progs2, err := Build(cfg, unitPricer{unit: engine.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	x := NewSymmetric(engine.New(), cfg.Layout, progs2)
	if err := x.Resume(&f); err != nil {
		t.Fatal(err)
	}
	if err := x.RunResumed(); err != nil {
		t.Fatal(err)
	}
	for i := range x.inst {
		if !slices.Equal(x.inst[i].state, whole.inst[i].state) {
			t.Errorf("stage %d: the resumed play's times differ from the full play's", i)
		}
	}
}

// Two Forks sharing their storage (ShareCopies): a Fork saved and
// detached, whose state the other Fork's save has since replaced, is
// refused (ErrNoResume), the executor left as built; the other resumes.
func TestForkSharedStateReplaced(t *testing.T) {
	cfg, build, forks := saveSharedForks(t, func(i int, forks *[2]Fork) {
		if i == 0 {
			forks[0].Detach() // its copies its own, its state replaced next
		}
	})
	whole := build(cfg)
	if err := whole.Run(); err != nil {
		t.Fatal(err)
	}
	y := build(cfg)
	if err := y.Resume(&forks[0]); !errors.Is(err, ErrNoResume) {
		t.Errorf("Resume from the Fork whose state was replaced: %v, want ErrNoResume", err)
	}
	if err := y.Run(); err != nil {
		t.Fatal(err)
	}
	x := build(cfg)
	if err := x.Resume(&forks[1]); err != nil {
		t.Fatalf("Resume from the Fork saved last: %v", err)
	}
	if err := x.RunResumed(); err != nil {
		t.Fatal(err)
	}
	for i := range x.inst {
		if !reflect.DeepEqual(y.inst[i].state, whole.inst[i].state) || !reflect.DeepEqual(x.inst[i].state, whole.inst[i].state) {
			t.Errorf("stage %d: a refused or a resumed play's times differ from the full play's", i)
		}
	}
}

// saveSharedForks saves hostAheadStep's shortened play into two Forks that
// share their storage (ShareCopies), one after the other, calling after(i)
// once fork i has saved; it returns the full step's config and builder.
func saveSharedForks(t *testing.T, after func(i int, forks *[2]Fork)) (*StepConfig, func(*StepConfig) *Executor, *[2]Fork) {
	t.Helper()
	cfg, plan, build := hostAheadStep(t)
	forks := new([2]Fork)
	forks[1].ShareCopies(&forks[0])
	for i := range forks {
		playShortSaved(t, cfg, plan, build, &forks[i])
		after(i, forks)
	}
	return cfg, build, forks
}

// playShortSaved plays cfg's step shortened to plan (built by build) with
// its events counted, saving its state in f, and fails t when nothing was
// saved. It returns the shortened play's executor.
func playShortSaved(t *testing.T, cfg *StepConfig, plan Steady, build func(*StepConfig) *Executor, f *Fork) *Executor {
	t.Helper()
	short := *cfg
	short.Microbatches = plan.Played
	xs := build(&short)
	xs.CountEvents()
	if _, err := xs.RunSteady(plan, f); err != nil {
		t.Fatal(err)
	}
	if saved, _, _ := f.Saved(); !saved {
		t.Fatal("nothing saved")
	}
	return xs
}

// Detach lists every send and receive of each common prefix, in task
// order, with its peer and match, whether it takes them from the build's
// list (Program.p2pListed) or, for a program without one, from the
// records' kinds: the same list as a walk over the prefix's Tasks.
// Fails when the listed path stops short of the prefix's end.
func TestDetachListsPrefixP2P(t *testing.T) {
	for _, listed := range []bool{true, false} {
		cfg, plan, build := hostAheadStep(t)
		var f Fork
		playShortSaved(t, cfg, plan, build, &f)
		progs := slices.Clone(f.progs)
		for _, p := range progs {
			if !p.p2pListed {
				t.Fatal("a build's program without its p2p list")
			}
			p.p2pListed = listed
		}
		f.Detach()
		n := 0
		for i, p := range progs {
			fi := &f.inst[i]
			var want []forkP2P
			for k := range p.Tasks[:fi.common] {
				if task := &p.Tasks[k]; task.Kind == KindSend || task.Kind == KindRecv {
					want = append(want, forkP2P{int32(k), task.Peer(), task.Match()})
				}
			}
			if got := f.cp.p2p[fi.p2pAt:fi.p2pEnd]; !slices.Equal(got, want) {
				t.Errorf("listed %v stage %d: Detach listed %d sends and receives %v, the prefix holds %d %v", listed, i, len(got), got, len(want), want)
			}
			n += len(want)
		}
		if n == 0 {
			t.Fatalf("listed %v: no sends or receives in the prefixes", listed)
		}
	}
}
