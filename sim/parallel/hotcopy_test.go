package parallel

import (
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
)

// TestFillHotCopiesByHand: a 5-task hosted program whose tasks 2–3 are a
// copy of tasks 0–1 (copies {at 2, src 0, n 2}) with task 3's host wait and
// task 2's queue wait its own. fillHot must give tasks 2–3 task 0–1's
// duration, issue, kind, stream and flags with their own waits — not the
// source's — and task 4, after the copy, its own record; input counts
// one more than the dependency counts but for the receive; a copied range
// whose source is one task off is caught by CheckHot.
func TestFillHotCopiesByHand(t *testing.T) {
	mk := func() *Program {
		p := &Program{
			Hosted: true,
			arena:  new(Arena),
			Tasks: []Task{
				{Kind: KindForward, Stream: StreamCompute, Dur: 10, GEMMShare: 100},
				{Kind: KindAllReduce, Stream: StreamTP, Group: GroupTP, Dur: 7, SMSized: true},
				{Kind: KindForward, Stream: StreamCompute, Dur: 10, GEMMShare: 100},
				{Kind: KindAllReduce, Stream: StreamTP, Group: GroupTP, Dur: 7, SMSized: true},
				{Kind: KindRecv, Stream: StreamPPRecvAct, Dur: 2},
			},
			// a copy has its source's dependency counts: tasks 1 and 3
			// wait for the task before them
			depOff: []int32{0, 0, 1, 1, 2, 2},
			deps:   []int32{0, 2},
			copies: []copySeg{{at: 2, src: 0, n: 2}},
		}
		p.finish()
		setWaits(p, 1, 1, 0)
		setWaits(p, 2, 0, 1)
		setWaits(p, 3, 3, 0)
		for i, issue := range []engine.Time{3, 1, 3, 1} {
			setIssue(p, i, issue)
		}
		return p
	}
	p := mk()
	hot, need := make([]hotTask, 5), make([]int32, 5)
	fillHot(hot, need, p)
	want := []hotTask{
		{dur: 10, issue: 3, share: 100, kind: KindForward, stream: StreamCompute},
		{dur: 7, issue: 1, hostAfter: 1, kind: KindAllReduce, group: GroupTP, stream: StreamTP, flags: hotSMSized},
		{dur: 10, issue: 3, queueAfter: 1, share: 100, kind: KindForward, stream: StreamCompute},
		{dur: 7, issue: 1, hostAfter: 3, kind: KindAllReduce, group: GroupTP, stream: StreamTP, flags: hotSMSized},
		{dur: 2, kind: KindRecv, stream: StreamPPRecvAct},
	}
	for i := range want {
		want[i].walk = walkKey(want[i].kind, want[i].group, want[i].stream)
		if hot[i] != want[i] {
			t.Errorf("task %d: %+v, want %+v", i, hot[i], want[i])
		}
	}
	if w := []int32{1, 2, 1, 2, 0}; need[0] != w[0] || need[1] != w[1] || need[2] != w[2] || need[3] != w[3] || need[4] != w[4] {
		t.Errorf("need %v, want %v", need, w)
	}
	if c, err := CheckHot(p); err != nil || c != 2 {
		t.Errorf("CheckHot: %d copied, %v", c, err)
	}
	// Off by one: the source a task later (task 1: a collective where a
	// compute is) and the range a task later (task 4, a receive, from task 1).
	for _, bad := range []copySeg{{at: 2, src: 1, n: 1}, {at: 3, src: 0, n: 2}} {
		p := mk()
		p.copies = []copySeg{bad}
		if _, err := CheckHot(p); err == nil {
			t.Errorf("copies %+v: CheckHot found no difference", bad)
		}
	}
	// A list that is not a build's (overlapping its source, past the
	// tasks): fillHot converts the rest from the Tasks.
	for _, odd := range []copySeg{{at: 2, src: 1, n: 2}, {at: 4, src: 0, n: 2}} {
		p := mk()
		p.copies = []copySeg{odd}
		if _, err := CheckHot(p); err != nil {
			t.Errorf("copies %+v: %v", odd, err)
		}
	}
}

// TestFillHotCopiesBuilt: programs built into one arena, as a sweep worker
// builds them (1F1B, interleaved and zero-bubble, hosted with a bounded
// launch queue, layer and pass copies), list copied ranges, and fillHot's
// records equal the ones converted from every Task; every listed range
// with its source moved one task earlier or later (where the source still
// ends before the range) makes CheckHot fail, so the test can catch a
// range that is off by one.
func TestFillHotCopiesBuilt(t *testing.T) {
	pr := commPricer{unit: engine.Millisecond, comm: 300 * engine.Microsecond}
	arena := new(Arena)
	total := 0
	for _, c := range []struct {
		sched    pipeline.Schedule
		pp, m    int
		queue    int
		emitPass bool
	}{
		{pipeline.OneFOneB, 4, 16, 1024, false},
		{pipeline.OneFOneB, 2, 32, 64, false},
		{pipeline.GPipe, 3, 9, 0, false},
		{pipeline.ZeroBubble, 4, 12, 1024, false},
		{pipeline.OneFOneB, 4, 16, 1024, true}, // layer copies only
		{pipeline.OneFOneB, 8, 32, 1024, false},
	} {
		_, cfg := stepConfig(t, 2, 2, c.pp, c.m, c.sched)
		cfg.Host = HostModel{On: true, KernelFwd: 5 * engine.Microsecond, KernelBwd: 5 * engine.Microsecond,
			Call: 10 * engine.Microsecond, Queue: c.queue}
		cfg.Arena, cfg.EmitEveryPass = arena, c.emitPass
		progs, err := Build(cfg, pr)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range progs {
			n, err := CheckHot(p)
			if err != nil {
				t.Fatalf("%s pp %d m %d: %v", c.sched.Name(), c.pp, c.m, err)
			}
			total += n
			copies := p.copies
			for i := range copies {
				for _, d := range []int32{-1, 1} {
					seg := copies[i]
					if seg.src+d < 0 || seg.src+d+seg.n > seg.at {
						continue // not a build's range: fillHot converts from there on
					}
					copies[i].src += d
					if _, err := CheckHot(p); err == nil {
						t.Errorf("%s stage %d: range %+v with its source moved by %d: no difference found", c.sched.Name(), p.Stage, seg, d)
					}
					copies[i] = seg
				}
			}
		}
	}
	if total == 0 {
		t.Error("no copied ranges")
	}
	t.Logf("%d tasks in copied ranges", total)
}
