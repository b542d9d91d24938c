package parallel

import (
	"testing"
	"unsafe"

	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/hardware"
)

// The play's per-task record stays two to a cache line.
func TestHotTaskSize(t *testing.T) {
	if n := unsafe.Sizeof(hotTask{}); n != 32 {
		t.Errorf("hotTask is %d bytes, want 32", n)
	}
}

// fillHot copies each Task's played fields and counts its inputs: its
// dependencies, plus its issue on a hosted program unless it is a receive.
func TestFillHot(t *testing.T) {
	fwd := Task{Kind: KindForward, Stream: StreamCompute, Dur: 1000, GEMMShare: 40000}
	ag := Task{Kind: KindAllGather, Stream: StreamTP, Group: GroupTP, Op: collectives.AllGather, Dur: 300,
		CopyEngine: true, SMSized: true}
	rs := Task{Kind: KindReduceScatter, Stream: StreamDP, Group: GroupDP, Op: collectives.ReduceScatter, Dur: 200, SMSized: true}
	recv := Task{Kind: KindRecv, Stream: StreamPPRecvAct, Group: GroupPP, Dur: 50}
	deps := [][]int32{nil, {0}, {0, 1}, nil}
	want := []hotTask{
		{dur: 1000, issue: 7, hostAfter: 3, queueAfter: 2, share: 40000, kind: KindForward, group: GroupTP, stream: StreamCompute},
		{dur: 300, issue: 5, kind: KindAllGather, group: GroupTP, stream: StreamTP, flags: hotCopyEngine | hotSMSized},
		{dur: 200, kind: KindReduceScatter, group: GroupDP, stream: StreamDP, flags: hotSMSized},
		{dur: 50, kind: KindRecv, group: GroupPP, stream: StreamPPRecvAct},
	}
	for i := range want {
		want[i].walk = walkKey(want[i].kind, want[i].group, want[i].stream)
	}
	for _, c := range []struct {
		hosted bool
		need   []int32
	}{
		{false, []int32{0, 1, 2, 0}},
		{true, []int32{1, 2, 3, 0}}, // the receive is started by its send, never issued
	} {
		p := handProgram([]Task{fwd, ag, rs, recv}, deps)
		setWaits(p, 0, 3, 2) // (the waits and issue times are the program's records')
		setIssue(p, 0, 7)
		setIssue(p, 1, 5)
		p.Hosted = c.hosted
		hot, need := make([]hotTask, 4), make([]int32, 4)
		for i := range hot {
			hot[i] = hotTask{dur: -1, flags: 0xff} // stale contents of a reused buffer
		}
		fillHot(hot, need, p)
		for i := range want {
			if hot[i] != want[i] {
				t.Errorf("hosted %v: task %d: hotTask %+v, want %+v", c.hosted, i, hot[i], want[i])
			}
			if need[i] != c.need[i] {
				t.Errorf("hosted %v: task %d needs %d inputs, want %d", c.hosted, i, need[i], c.need[i])
			}
		}
		fillHot(hot, nil, p) // without need: the records alone
		if hot[1] != want[1] {
			t.Errorf("hosted %v: fillHot without need: %+v, want %+v", c.hosted, hot[1], want[1])
		}
	}
}

// An event's argument carries the instance, the task and the computeEnd
// mark without one disturbing the others, up to the largest of each.
func TestPackComputeEnd(t *testing.T) {
	for _, i := range []int{0, 1, 16383, 1<<30 - 1} {
		for _, task := range []int{0, 1, 182471, 1<<32 - 1} {
			for _, mark := range []int64{0, computeEnd} {
				arg := pack(i, task) | mark
				if gi, gt := unpack(arg); gi != i || gt != task {
					t.Errorf("unpack(pack(%d, %d) | %#x) = %d, %d", i, task, mark, gi, gt)
				}
				if (arg&computeEnd != 0) != (mark != 0) {
					t.Errorf("pack(%d, %d) | %#x: mark read as %v", i, task, mark, arg&computeEnd != 0)
				}
			}
		}
	}
}

// packIndex, the successor walk's packing of a successor index read as a
// uint32 (symEnds.Handle), is pack for every such index, and the
// argument's low half is the index again (Handle's in.cur and the rare
// calls read it there instead of keeping the index).
func TestPackIndexIsPack(t *testing.T) {
	for _, i := range []int{0, 1, 16383, 1<<30 - 1} {
		for _, s := range []int{0, 1, 182471, 1<<31 - 1, 1 << 31, 1<<32 - 1} {
			a := packIndex(i, s)
			if want := pack(i, s); a != want {
				t.Errorf("packIndex(%d, %d) = %#x, pack %#x", i, s, a, want)
			}
			if int(uint32(a)) != s || int32(a) != int32(uint32(s)) {
				t.Errorf("packIndex(%d, %d) = %#x: low half %d, as int32 %d", i, s, a, uint32(a), int32(a))
			}
			if gi, gs := unpack(a | computeEnd); gi != i || gs != s {
				t.Errorf("unpack(packIndex(%d, %d) | computeEnd) = %d, %d", i, s, gi, gs)
			}
		}
	}
}

// A compute task whose rate changes schedules a new end each time; the
// ends it superseded still run as events (the engine counts them) but do
// not complete it. Hand-worked on 100 SMs, a 1000 ns task 0 beside a TP
// collective (20 CTAs) on [0, 300] and a DP one (30: the group spans
// domains) on [300, 700]: its end moves 1000 → 1250 (rate 80 at 0) → 1060
// (100 at 300, 76000 SM-ns left) → 1386 (70 at 300: ⌈76000/70⌉ = 1086
// more) → 1180 (100 at 700, 48000 left). Five events for task 0, four of
// them stale, and it ends at 1180, not at the first of them (1000).
func TestComputeEndSuperseded(t *testing.T) {
	p := handProgram([]Task{compute(1000), coll(GroupTP, StreamTP, 300), coll(GroupDP, StreamDP, 400)},
		[][]int32{nil, nil, {1}})
	l, err := NewLayout(1, 1, 1, 2, 1, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New()
	x := NewSymmetric(eng, l, []*Program{p})
	if err := x.SetInterference(Interference{SMs: 100, CommCTAs: hardware.CommCTAs{ScaleUp: 20, ScaleOut: 30, P2P: 2}}, ownDomain{}); err != nil {
		t.Fatal(err)
	}
	x.CountEvents()
	if err := x.Run(); err != nil {
		t.Fatal(err)
	}
	_, _, _, start, end := x.Instance(0)
	wantStart, wantEnd := []engine.Time{0, 0, 300}, []engine.Time{1180, 300, 700}
	for i := range wantEnd {
		if start[i] != wantStart[i] || end[i] != wantEnd[i] {
			t.Errorf("task %d: [%d, %d], want [%d, %d]", i, start[i], end[i], wantStart[i], wantEnd[i])
		}
	}
	if ev := x.inst[0].events; ev[0] != 5 || ev[1] != 1 || ev[2] != 1 {
		t.Errorf("events per task %v, want [5 1 1]", ev)
	}
	if n := eng.Executed(); n != 7 {
		t.Errorf("%d events, want 7", n)
	}
}

// The symmetric play counts each task's awaited inputs down in place
// (instance.need): a dependency's end and, with a host thread, the issue
// count one each, and the task starts at the last. Hand-worked: task 2
// waits for tasks 0 (100 ns) and 1 (50 ns). Hosted (issue 10 ns each, the
// thread runs ahead): 0 and 1 are issued at 10 and 20 and start then, 2 is
// issued at 30 (3 → 2 awaited), 1 ends at 70 (→ 1), 0 at 110 (→ 0), and 2
// starts at 110. Without a host thread: 0 and 1 start at 0, 1 ends at 50
// (2 → 1), 0 at 100 (→ 0), 2 starts at 100.
func TestNeedCountsDown(t *testing.T) {
	l, err := NewLayout(1, 1, 1, 1, 1, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
	if err != nil {
		t.Fatal(err)
	}
	type check struct {
		at    engine.Time
		need  []int32
		start engine.Time // task 2's, -1 not yet
	}
	for _, c := range []struct {
		hosted bool
		checks []check
	}{
		{true, []check{{0, []int32{0, 0, 2}, -1}, {69, []int32{0, 0, 2}, -1}, {70, []int32{0, 0, 1}, -1}, {110, []int32{0, 0, 0}, 110}}},
		{false, []check{{0, []int32{0, 0, 2}, -1}, {50, []int32{0, 0, 1}, -1}, {100, []int32{0, 0, 0}, 100}}},
	} {
		tasks := []Task{compute(100), compute(50), compute(20)}
		p := handProgram(tasks, [][]int32{nil, nil, {0, 1}})
		for i := range tasks {
			setIssue(p, i, 10)
		}
		p.Hosted = c.hosted
		eng := engine.New()
		x := NewSymmetric(eng, l, []*Program{p})
		x.begin()
		for _, k := range c.checks {
			eng.RunUntil(k.at)
			in := &x.inst[0]
			for u, n := range k.need {
				if in.need[u] != n {
					t.Errorf("hosted %v, at %d: task %d awaits %d inputs, want %d", c.hosted, k.at, u, in.need[u], n)
				}
			}
			if s := in.state[2].Start(); s != k.start {
				t.Errorf("hosted %v, at %d: task 2 started at %d, want %d", c.hosted, k.at, s, k.start)
			}
		}
		eng.Run()
		if err := x.ended(); err != nil {
			t.Errorf("hosted %v: %v", c.hosted, err)
		}
	}
}
