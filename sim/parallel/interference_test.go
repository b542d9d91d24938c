package parallel

import (
	"testing"

	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/units"
	"github.com/simtrain/simtrain/sim/workload"
)

// ownDomain puts every rank in its own scale-up domain, so every group of
// two or more ranks crosses domains.
type ownDomain struct{}

func (ownDomain) DomainOf(r int) int { return r }

// handProgram is a one-stage program of the given tasks and dependencies.
func handProgram(tasks []Task, deps [][]int32) *Program {
	p := &Program{Tasks: tasks}
	for i := range tasks {
		p.depOff = append(p.depOff, int32(len(p.deps)))
		p.deps = append(p.deps, deps[i]...)
	}
	p.depOff = append(p.depOff, int32(len(p.deps)))
	p.finish()
	return p
}

// setWaits gives task i of hand-made program p the host and queue waits
// hostAfter and queueAfter (1 + the task waited for, 0 for none), which
// a program's records hold (Program.hot): p gets records (their other
// fields unused: it keeps none, keepHot) when it has none a task.
func setWaits(p *Program, i int, hostAfter, queueAfter int32) {
	if len(p.hot) != len(p.Tasks) {
		p.hot = make([]hotTask, len(p.Tasks))
	}
	p.hot[i].hostAfter, p.hot[i].queueAfter = hostAfter, queueAfter
}

// setIssue gives task i of hand-made program p the host issue time issue,
// which a program's records hold (Program.hot), as setWaits does its waits.
func setIssue(p *Program, i int, issue engine.Time) {
	if len(p.hot) != len(p.Tasks) {
		p.hot = make([]hotTask, len(p.Tasks))
	}
	p.hot[i].issue = issue
}

func compute(d engine.Time) Task {
	return Task{Kind: KindForward, Stream: StreamCompute, Name: internName("fwd"), Dur: d}
}

// gemm is a compute task of d ns whose GEMMs take share/65535 of it.
func gemm(d engine.Time, share uint16) Task {
	t := compute(d)
	t.GEMMShare = share
	return t
}

func copyEngine(t Task) Task {
	t.CopyEngine = true
	return t
}

func coll(k GroupKind, st Stream, d engine.Time) Task {
	return Task{Kind: KindAllReduce, Stream: st, Group: k, Op: collectives.AllReduce, Name: internName("ar"), Dur: d}
}

// TestInterferenceHand checks the rate model on one compute task of
// D = 1000 ns (task 0) overlapped by collectives, against hand-derived end
// times. With a collective of C ns holding c of the SMs, inside the compute
// task, the task does C·(1 − c/SMs) of its work during the collective and
// the rest at full rate, so it ends at D + C·c/SMs, rounded up to a whole
// nanosecond; a collective longer than the task keeps the rate at
// 1 − c/SMs throughout, so the task ends at D / (1 − c/SMs).
func TestInterferenceHand(t *testing.T) {
	const D = 1000
	tp := func(d engine.Time) Task { return coll(GroupTP, StreamTP, d) }
	dp := func(d engine.Time) Task { return coll(GroupDP, StreamDP, d) }
	ep := func(d engine.Time) Task { return coll(GroupEP, StreamEP, d) }
	cases := []struct {
		name    string
		iv      Interference // ScaleUp: the TP group; ScaleOut: the DP group (it spans two domains)
		tasks   []Task
		deps    [][]int32
		wantEnd engine.Time // of task 0
	}{
		// 400 ns at 0.8 do 320 ns of work; 680 more at full rate: 1080 = D + 400·20/100.
		{"inside", Interference{100, hardware.CommCTAs{ScaleUp: 20, ScaleOut: 30, P2P: 2}, 0, false},
			[]Task{compute(D), tp(400)}, [][]int32{nil, nil}, 1080},
		// 1000 / 0.8 = 1250.
		{"longer", Interference{100, hardware.CommCTAs{ScaleUp: 20, ScaleOut: 30, P2P: 2}, 0, false},
			[]Task{compute(D), tp(2000)}, [][]int32{nil, nil}, 1250},
		// TP on [0,300] at 0.8 (240 ns of work), then DP on [300,700] at 0.7
		// (280), then 480 at full rate: 1180 = D + 300·0.2 + 400·0.3.
		{"sequence, rate changes mid-task", Interference{100, hardware.CommCTAs{ScaleUp: 20, ScaleOut: 30, P2P: 2}, 0, false},
			[]Task{compute(D), tp(300), dp(400)}, [][]int32{nil, nil, {1}}, 1180},
		// TP and DP together on [0,400]: 20 + 30 = 50 CTAs, rate 0.5, 200 ns
		// of work; 800 more: 1200.
		{"concurrent shares add", Interference{100, hardware.CommCTAs{ScaleUp: 20, ScaleOut: 30, P2P: 2}, 0, false},
			[]Task{compute(D), tp(400), dp(400)}, [][]int32{nil, nil, nil}, 1200},
		// 40 + 30 = 70 CTAs are capped at SMs/2 = 50: rate 0.5 as above,
		// 1200 (uncapped, 0.3 would give 1280).
		{"cap at half the SMs", Interference{100, hardware.CommCTAs{ScaleUp: 40, ScaleOut: 30, P2P: 2}, 0, false},
			[]Task{compute(D), tp(400), dp(400)}, [][]int32{nil, nil, nil}, 1200},
		// H100: 24 of 132 SMs. Work 132000 − 400·108 = 88800 SM-ns left at
		// 400 ns, ⌈88800/132⌉ = 673 ns more: 1073 = D + ⌈400·24/132⌉.
		{"rounding up", Interference{132, hardware.CommCTAs{ScaleUp: 24, ScaleOut: 16, P2P: 2}, 0, false},
			[]Task{compute(D), tp(400)}, [][]int32{nil, nil}, 1073},
		// Communication after the compute task does not touch it.
		// A DeepEP/HybridEP kernel holds Interference.EP = 10 SMs, not the
		// NCCL 20: 1000 + 400·10/100 = 1040.
		{"EP backend SMs", Interference{100, hardware.CommCTAs{ScaleUp: 20, ScaleOut: 30, P2P: 2}, 10, false},
			[]Task{compute(D), ep(400)}, [][]int32{nil, nil}, 1040},
		// Without the override the EP all-to-all holds ScaleUp = 20: 1080.
		{"EP NCCL channels", Interference{100, hardware.CommCTAs{ScaleUp: 20, ScaleOut: 30, P2P: 2}, 0, false},
			[]Task{compute(D), ep(400)}, [][]int32{nil, nil}, 1080},
		// An AsyncTP copy-engine transfer (Task.CopyEngine) holds no SMs:
		// the compute task keeps its 1000 ns.
		{"copy engine", Interference{100, hardware.CommCTAs{ScaleUp: 20, ScaleOut: 30, P2P: 2}, 0, false},
			[]Task{compute(D), copyEngine(tp(400))}, [][]int32{nil, nil}, 1000},
		// Beside a DP kernel (30 CTAs: the group spans domains) only that
		// kernel counts: 1000 + 400·30/100 = 1120.
		{"copy engine beside NCCL", Interference{100, hardware.CommCTAs{ScaleUp: 20, ScaleOut: 30, P2P: 2}, 0, false},
			[]Task{compute(D), copyEngine(tp(400)), dp(400)}, [][]int32{nil, nil, nil}, 1120},
		{"no overlap", Interference{100, hardware.CommCTAs{ScaleUp: 20, ScaleOut: 30, P2P: 2}, 0, false},
			[]Task{compute(D), tp(400)}, [][]int32{nil, {0}}, 1000},
		// Persistent GEMMs (Hopper): a task all GEMM (share 65535) beside
		// 20 of 100 SMs runs its one-CTA-per-SM grid in ⌈100/80⌉ = 2
		// waves: rate 1/2, 200 ns of work in the 400; 800 more: 1200.
		{"persistent GEMM", Interference{100, hardware.CommCTAs{ScaleUp: 20, ScaleOut: 30, P2P: 2}, 0, true},
			[]Task{gemm(D, 65535), tp(400)}, [][]int32{nil, nil}, 1200},
		// Longer than the task: 1000 / (1/2) = 2000.
		{"persistent GEMM, longer", Interference{100, hardware.CommCTAs{ScaleUp: 20, ScaleOut: 30, P2P: 2}, 0, true},
			[]Task{gemm(D, 65535), tp(3000)}, [][]int32{nil, nil}, 2000},
		// Half GEMM (32767/65535): time per unit 0.5·2 + 0.5·100/80 =
		// 1.625, rate ⌊100·80·65535 / (32767·2·80 + 32768·100)⌋ = 61
		// SM-ns/ns: 24400 of 100000 in 400 ns, 756 more: 1156.
		{"persistent, half GEMM", Interference{100, hardware.CommCTAs{ScaleUp: 20, ScaleOut: 30, P2P: 2}, 0, true},
			[]Task{gemm(D, 32767), tp(400)}, [][]int32{nil, nil}, 1156},
		// No GEMM in the task: the fluid rate, 1080.
		{"persistent, no GEMM", Interference{100, hardware.CommCTAs{ScaleUp: 20, ScaleOut: 30, P2P: 2}, 0, true},
			[]Task{compute(D), tp(400)}, [][]int32{nil, nil}, 1080},
		// GEMMs that are not persistent (Ampere, Blackwell): fluid, 1080.
		{"GEMM, not persistent", Interference{100, hardware.CommCTAs{ScaleUp: 20, ScaleOut: 30, P2P: 2}, 0, false},
			[]Task{gemm(D, 65535), tp(400)}, [][]int32{nil, nil}, 1080},
		// Off: zero SMs.
		{"off", Interference{},
			[]Task{compute(D), tp(400)}, [][]int32{nil, nil}, 1000},
	}
	for _, c := range cases {
		start, end := runInterfered(t, handProgram(c.tasks, c.deps), c.iv)
		if end[0] != c.wantEnd || start[0] != 0 {
			t.Errorf("%s: compute task [%d, %d], want [0, %d]", c.name, start[0], end[0], c.wantEnd)
		}
		for i := 1; i < len(c.tasks); i++ { // communication keeps its duration
			if end[i]-start[i] != c.tasks[i].Dur {
				t.Errorf("%s: task %d lasts %d, want %d", c.name, i, end[i]-start[i], c.tasks[i].Dur)
			}
		}
	}
}

// TestSetInterferenceErrors: negative counts are an error naming the
// input; a call after Run is an error.
func TestSetInterferenceErrors(t *testing.T) {
	l, _ := NewLayout(1, 1, 1, 1, 1, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
	x := NewSymmetric(engine.New(), l, []*Program{handProgram([]Task{compute(10)}, [][]int32{nil})})
	if err := x.SetInterference(Interference{SMs: -1}, ownDomain{}); err == nil {
		t.Error("negative SMs accepted")
	}
	if err := x.Run(); err != nil {
		t.Fatal(err)
	}
	if err := x.SetInterference(Interference{SMs: 100}, ownDomain{}); err == nil {
		t.Error("SetInterference after Run accepted")
	}
}

// commPricer prices each transformer block at unit and every collective at
// comm, a pipeline send at comm/4: enough communication to overlap.
type commPricer struct{ unit, comm engine.Time }

func (u commPricer) OpsTime(_ int, ops []workload.Op) engine.Time {
	return unitPricer{u.unit}.OpsTime(0, ops)
}
func (u commPricer) CommTime(GroupKind, int, collectives.Op, units.Bytes) engine.Time {
	return u.comm
}
func (u commPricer) SendTime(int, int, units.Bytes) engine.Time { return u.comm / 4 }

// stepPrograms builds a TP×DP×PP step with overlapped TP, DP and pipeline
// communication.
func stepPrograms(tb testing.TB, tp, dp, pp, m int, sched pipeline.Schedule, pr Pricer) (*Layout, []*Program) {
	tb.Helper()
	l, cfg := stepConfig(tb, tp, dp, pp, m, sched)
	progs, err := Build(cfg, pr)
	if err != nil {
		tb.Fatal(err)
	}
	return l, progs
}

// stepConfig is stepPrograms' layout and step configuration.
func stepConfig(tb testing.TB, tp, dp, pp, m int, sched pipeline.Schedule) (*Layout, *StepConfig) {
	tb.Helper()
	l, err := NewLayout(tp, 1, 1, dp, pp, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
	if err != nil {
		tb.Fatal(err)
	}
	layers := 4 * pp
	chunks, err := Partition(layers, pp, 1, 0, 0)
	if err != nil {
		tb.Fatal(err)
	}
	mdl := workload.Model{Name: "test", Layers: layers, Hidden: 1024, Heads: 16, Vocab: 32000}
	mdl.Fill()
	cfg := &StepConfig{Layout: l, Model: mdl,
		Shape:    workload.Shape{MicroBatch: 1, Seq: 128, Dtype: workload.BF16, TP: tp, CP: 1, EP: 1, SP: tp > 1, FlashAttention: true},
		Schedule: sched, Virtual: 1, Microbatches: m, Chunks: chunks, Optimizer: "adamw", Zero: 1,
		ParamDtype: workload.BF16, GradDtype: workload.BF16, MasterDtype: workload.FP32,
		Overlap: Overlap{GradReduce: true, ParamGather: true, P2P: true, TPComm: true}, Steps: 1,
		LayerParams: func(int) (float64, float64) { return 1e6, 0 },
	}
	return l, cfg
}

// playStep runs the programs symmetrically; hook, when set, adjusts the
// executor before Run (the tests' way to force the model's code path).
func playStep(tb testing.TB, l *Layout, progs []*Program, iv Interference, hook func(*Executor)) *Executor {
	tb.Helper()
	x := NewSymmetric(engine.New(), l, progs)
	if err := x.SetInterference(iv, ownDomain{}); err != nil {
		tb.Fatal(err)
	}
	if hook != nil {
		hook(x)
	}
	if err := x.Run(); err != nil {
		tb.Fatal(err)
	}
	return x
}

func lastEnd(x *Executor) engine.Time {
	var end engine.Time
	for i := 0; i < x.Instances(); i++ {
		_, _, _, _, e := x.Instance(i)
		for _, v := range e {
			end = max(end, v)
		}
	}
	return end
}

// TestInterferenceInvariants plays pipelines with overlapped TP, DP and
// send/recv traffic. With every share 0 — the model's code path forced on
// by zeroing its CTA table — every task's start and end are bit-identical
// to the executor without the model. With shares > 0 the step is never
// shorter, a compute task never runs faster than its priced duration, and
// communication keeps its own.
func TestInterferenceInvariants(t *testing.T) {
	h100 := Interference{132, hardware.CommCTAs{ScaleUp: 24, ScaleOut: 16, P2P: 2}, 0, false}
	for _, c := range []struct {
		tp, dp, pp, m int
		sched         pipeline.Schedule
		comm          engine.Time
	}{
		{2, 2, 1, 4, pipeline.OneFOneB, 300 * engine.Microsecond},
		{2, 2, 4, 8, pipeline.OneFOneB, 200 * engine.Microsecond},
		{1, 4, 4, 8, pipeline.ZeroBubble, 700 * engine.Microsecond},
		{4, 2, 2, 6, pipeline.GPipe, 2 * engine.Millisecond},
	} {
		l, progs := stepPrograms(t, c.tp, c.dp, c.pp, c.m, c.sched, commPricer{unit: engine.Millisecond, comm: c.comm})
		base := playStep(t, l, progs, Interference{}, nil)
		zero := playStep(t, l, progs, h100, func(x *Executor) { clear(x.ctas) })
		on := playStep(t, l, progs, h100, nil)
		slower := false
		for i := 0; i < base.Instances(); i++ {
			_, _, p, bs, be := base.Instance(i)
			_, _, _, zs, ze := zero.Instance(i)
			_, _, _, os, oe := on.Instance(i)
			for k := range p.Tasks {
				if bs[k] != zs[k] || be[k] != ze[k] {
					t.Fatalf("%+v stage %d task %d %s: share 0 gives [%d, %d], without the model [%d, %d]",
						c, i, k, p.Tasks[k].Name.String(), zs[k], ze[k], bs[k], be[k])
				}
				d := oe[k] - os[k]
				switch {
				case p.Tasks[k].Kind == KindRecv:
				case p.Tasks[k].Kind.IsComm() && d != p.Tasks[k].Dur:
					t.Errorf("%+v: %s lasts %v, priced %v", c, p.Tasks[k].Name.String(), d, p.Tasks[k].Dur)
				case d < p.Tasks[k].Dur:
					t.Errorf("%+v: compute %s lasts %v < priced %v", c, p.Tasks[k].Name.String(), d, p.Tasks[k].Dur)
				}
				slower = slower || d > p.Tasks[k].Dur
			}
		}
		if b, o := lastEnd(base), lastEnd(on); o < b || !slower {
			t.Errorf("%+v: step %v with interference, %v without (some compute slowed: %v)", c, o, b, slower)
		}
	}
}

// BenchmarkExecutor plays a 4-stage 1F1B step with TP, DP and pipeline
// traffic, without and with the interference model.
func BenchmarkExecutor(b *testing.B) {
	l, progs := stepPrograms(b, 2, 2, 4, 32, pipeline.OneFOneB, commPricer{unit: engine.Millisecond, comm: 300 * engine.Microsecond})
	for _, bc := range []struct {
		name string
		iv   Interference
	}{{"off", Interference{}}, {"on", Interference{132, hardware.CommCTAs{ScaleUp: 24, ScaleOut: 16, P2P: 2}, 0, false}}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				playStep(b, l, progs, bc.iv, nil)
			}
		})
	}
}

// TestHostSyncIgnoresInterference: a host-sync stall (KindHostSync) is
// GPU idle time: a collective in flight does not stretch it, and it holds
// no SMs, so the compute task after it runs at full rate once the
// collective is done. Stall [0, 500] beside a 400 ns TP collective, then
// the 1000 ns compute task: [500, 1500].
func TestHostSyncIgnoresInterference(t *testing.T) {
	stall := Task{Kind: KindHostSync, Stream: StreamCompute, Name: internName("moe_host_sync"), Dur: 500}
	p := handProgram([]Task{stall, compute(1000), coll(GroupTP, StreamTP, 400)}, [][]int32{nil, {0}, nil})
	l, err := NewLayout(1, 1, 1, 2, 1, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
	if err != nil {
		t.Fatal(err)
	}
	x := NewSymmetric(engine.New(), l, []*Program{p})
	if err := x.SetInterference(Interference{100, hardware.CommCTAs{ScaleUp: 20, ScaleOut: 30, P2P: 2}, 0, false}, ownDomain{}); err != nil {
		t.Fatal(err)
	}
	if err := x.Run(); err != nil {
		t.Fatal(err)
	}
	_, _, _, start, end := x.Instance(0)
	if start[0] != 0 || end[0] != 500 || start[1] != 500 || end[1] != 1500 || end[2] != 400 {
		t.Errorf("stall [%d, %d], compute [%d, %d], collective ends %d; want [0, 500], [500, 1500], 400",
			start[0], end[0], start[1], end[1], end[2])
	}
}

// runInterfered plays p alone on a two-rank data-parallel layout with
// interference iv and returns its tasks' start and end times.
func runInterfered(t *testing.T, p *Program, iv Interference) (start, end []engine.Time) {
	t.Helper()
	l, err := NewLayout(1, 1, 1, 2, 1, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
	if err != nil {
		t.Fatal(err)
	}
	x := NewSymmetric(engine.New(), l, []*Program{p})
	if err := x.SetInterference(iv, ownDomain{}); err != nil {
		t.Fatal(err)
	}
	if err := x.Run(); err != nil {
		t.Fatal(err)
	}
	_, _, _, start, end = x.Instance(0)
	return start, end
}

// TestRateIdleIsSMs: with no communication in flight a compute task runs
// at the full SMs whatever its GEMM share, band GEMMs, sized CTAs or the
// persistent-GEMM model; startCompute takes this case without rateOf's
// divisions (its end is then start + Dur exactly), so rateOf must agree.
func TestRateIdleIsSMs(t *testing.T) {
	band := &Program{bands: []taskBand{{task: 0, share: 30000, ctas: 1}}}
	for _, c := range []struct {
		sms        int64
		persistent bool
		share      uint16
		sized      int32
		prog       *Program
	}{
		{132, false, 0, 0, &Program{}},
		{132, true, 0, 0, &Program{}},
		{132, true, 65535, 0, &Program{}},
		{132, true, 32767, 24, &Program{}},
		{100, true, 20000, 0, band},
		{100, false, 20000, 0, band},
		{1, true, 65535, 0, band},
	} {
		x := &Executor{sms: c.sms, capCTAs: int32(c.sms / 2), persistent: c.persistent}
		in := &instance{prog: c.prog, cur: 0, share: c.share, sized: c.sized}
		if r := x.rateOf(in); r != c.sms {
			t.Errorf("%+v: rate %d with nothing in flight, want the SMs %d", c, r, c.sms)
		}
	}
}

// TestSuccessorStartsAsAtBegin plays TestInterferenceHand's compute task
// readied as the successor of a 0 ns host stall instead of at the start:
// symEnds.Handle starts it (its own copy of readySym's start) at time 0 while
// the collectives started by begin are in flight, so its rate comes from
// rateOf, and the hand-derived ends are the same. The collectives, readied
// by symEnds.Handle too where they wait for another task, keep their Dur.
func TestSuccessorStartsAsAtBegin(t *testing.T) {
	const D = 1000
	iv := Interference{100, hardware.CommCTAs{ScaleUp: 20, ScaleOut: 30, P2P: 2}, 0, false}
	tp := func(d engine.Time) Task { return coll(GroupTP, StreamTP, d) }
	dp := func(d engine.Time) Task { return coll(GroupDP, StreamDP, d) }
	stall := Task{Kind: KindHostSync, Stream: StreamCompute, Name: internName("moe_host_sync")}
	cases := []struct {
		name    string
		iv      Interference
		tasks   []Task // after the stall (task 0); the compute task is task 1
		deps    [][]int32
		wantEnd engine.Time // of the compute task
	}{
		// 400 ns at 0.8: D + 400·20/100.
		{"inside", iv, []Task{compute(D), tp(400)}, [][]int32{{0}, nil}, 1080},
		// 1000 / 0.8.
		{"longer", iv, []Task{compute(D), tp(2000)}, [][]int32{{0}, nil}, 1250},
		// TP [0,300] at 0.8, then DP [300,700] at 0.7 (readied by
		// symEnds.Handle beside the running compute task): D + 60 + 120.
		{"rate changes mid-task", iv, []Task{compute(D), tp(300), dp(400)}, [][]int32{{0}, nil, {2}}, 1180},
		// 24 of 132 SMs: D + ⌈400·24/132⌉.
		{"rounding up", Interference{132, hardware.CommCTAs{ScaleUp: 24, ScaleOut: 16, P2P: 2}, 0, false},
			[]Task{compute(D), tp(400)}, [][]int32{{0}, nil}, 1073},
		// Persistent GEMMs, all GEMM: 2 waves beside 20 of 100 SMs.
		{"persistent GEMM", Interference{100, hardware.CommCTAs{ScaleUp: 20, ScaleOut: 30, P2P: 2}, 0, true},
			[]Task{gemm(D, 65535), tp(400)}, [][]int32{{0}, nil}, 1200},
		// A copy-engine transfer holds no SMs.
		{"copy engine", iv, []Task{compute(D), copyEngine(tp(400))}, [][]int32{{0}, nil}, 1000},
		// Nothing in flight when it starts: the full rate, Dur.
		{"alone", iv, []Task{compute(D), tp(400)}, [][]int32{{0}, {1}}, 1000},
		{"off", Interference{}, []Task{compute(D), tp(400)}, [][]int32{{0}, nil}, 1000},
	}
	for _, c := range cases {
		tasks, deps := append([]Task{stall}, c.tasks...), append([][]int32{nil}, c.deps...)
		start, end := runInterfered(t, handProgram(tasks, deps), c.iv)
		if start[0] != 0 || end[0] != 0 {
			t.Errorf("%s: stall [%d, %d], want [0, 0]", c.name, start[0], end[0])
		}
		if start[1] != 0 || end[1] != c.wantEnd {
			t.Errorf("%s: compute task [%d, %d], want [0, %d]", c.name, start[1], end[1], c.wantEnd)
		}
		for i := 2; i < len(tasks); i++ {
			if end[i]-start[i] != tasks[i].Dur {
				t.Errorf("%s: task %d lasts %d, want %d", c.name, i, end[i]-start[i], tasks[i].Dur)
			}
		}
	}
}
