package parallel

import (
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/workload"
)

// hostConfig is one rank (no parallelism) training a dense model of
// `layers` layers for one step of one micro-batch.
func hostConfig(t *testing.T, layers int, host HostModel) *StepConfig {
	t.Helper()
	l, err := NewLayout(1, 1, 1, 1, 1, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := Partition(layers, 1, 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return &StepConfig{Layout: l, Model: testModel(t, layers),
		Shape:    workload.Shape{MicroBatch: 1, Seq: 128, Dtype: workload.BF16, TP: 1, CP: 1, EP: 1, FlashAttention: true},
		Schedule: pipeline.OneFOneB, Virtual: 1, Microbatches: 1, Chunks: chunks, Optimizer: "adamw",
		ParamDtype: workload.BF16, GradDtype: workload.BF16, MasterDtype: workload.FP32,
		Overlap: Overlap{GradReduce: true, ParamGather: true, P2P: true}, Steps: 1,
		LayerParams: func(int) (float64, float64) { return 1e6, 0 }, Host: host,
	}
}

// runHost plays cfg on one rank and returns the step's end and the
// executor.
func runHost(t *testing.T, cfg *StepConfig, pr Pricer) (engine.Time, *Executor) {
	t.Helper()
	x := playSymmetric(t, cfg, pr)
	_, _, prog, start, end := x.Instance(0)
	issued := x.Issued(0)
	var last engine.Time
	hostFree := engine.Time(0)
	for i := range prog.Tasks {
		last = max(last, end[i])
		if cfg.Host.On && prog.Tasks[i].Kind != KindRecv {
			// the host issues in program order, one task at a time, and
			// no task starts before its issue ends
			if begin := issued[i] - prog.Issue(i); begin < hostFree || start[i] < issued[i] {
				t.Fatalf("task %d (%s): issue %v..%v after the host was free at %v, start %v", i, prog.Tasks[i].Name.String(), begin, issued[i], hostFree, start[i])
			}
			hostFree = issued[i]
		}
	}
	return last, x
}

// TestHostBoundChain: every block takes 1 ns on the GPU and every kernel
// 1 ms of host time, so the GPU always waits for the host: the step ends
// when the host has issued every kernel, one millisecond per kernel of the
// workload's op lists (embedding, the layers and the output layer, forward
// and backward, and the optimizer's one), plus the last task's 1 ns.
func TestHostBoundChain(t *testing.T) {
	const layers = 2
	host := HostModel{On: true, KernelFwd: engine.Millisecond, KernelBwd: engine.Millisecond}
	cfg := hostConfig(t, layers, host)
	end, x := runHost(t, cfg, unitPricer{unit: engine.Nanosecond})
	m, s := cfg.Model, cfg.Shape
	kernels := 1 // the optimizer step
	for _, p := range []workload.Pass{workload.Forward, workload.Backward} {
		kernels += len(m.EmbeddingOps(s, p)) + len(m.HeadOps(s, p))
		for l := 0; l < layers; l++ {
			kernels += len(m.LayerOps(l, s, p))
		}
	}
	_, _, prog, _, _ := x.Instance(0)
	lastDur := prog.Tasks[len(prog.Tasks)-1].Dur
	if want := engine.Time(kernels)*engine.Millisecond + lastDur; end != want {
		t.Errorf("host-bound step ends at %v, want %d kernels × 1 ms + %v = %v", end, kernels, lastDur, want)
	}
	off, _ := runHost(t, hostConfig(t, layers, HostModel{}), unitPricer{unit: engine.Nanosecond})
	if off >= engine.Microsecond {
		t.Errorf("without a host thread the step takes %v, want the GPU's few ns", off)
	}
}

// TestHostHiddenByBigKernels: every block takes 1 s on the GPU and every
// kernel 10 µs of host time. The host runs ahead of the GPU from the first
// block on, so the step is the host-free step plus only what the GPU
// waited at the start: the issue of every task up to the first one with
// GPU time (the embedding's forward takes none here).
func TestHostHiddenByBigKernels(t *testing.T) {
	host := HostModel{On: true, KernelFwd: 10 * engine.Microsecond, KernelBwd: 10 * engine.Microsecond, Call: 10 * engine.Microsecond}
	pr := unitPricer{unit: engine.Second}
	off, _ := runHost(t, hostConfig(t, 2, HostModel{}), pr)
	on, x := runHost(t, hostConfig(t, 2, host), pr)
	_, _, prog, _, _ := x.Instance(0)
	var head engine.Time
	for i, task := range prog.Tasks {
		head += prog.Issue(i)
		if task.Dur > 0 {
			break
		}
	}
	if head <= 0 || head > engine.Millisecond {
		t.Fatalf("issue before the first block %v, want a few kernels' 10 µs", head)
	}
	if on != off+head {
		t.Errorf("step with host %v, want %v + %v (the issue before the first block)", on, off, head)
	}
}

// TestHostWaitsAtSync: after a dropless MoE dispatch's host sync the host
// issues nothing until the router's kernels have finished, so the
// dispatch starts no earlier than the router's end plus its own issue.
// With 1 ms blocks and 0.4 ms of host time per call the stall (0.25 ms)
// is shorter than the dispatch's issue: the GPU waits for the host, not
// the stall.
func TestHostWaitsAtSync(t *testing.T) {
	cfg := moeConfig(t, false)
	cfg.MoEHostSync = engine.Millisecond / 4
	cfg.Host = HostModel{On: true, Call: 400 * engine.Microsecond}
	_, x := runHost(t, cfg, blockPricer{a2a: engine.Millisecond / 2})
	_, _, prog, start, end := x.Instance(0)
	issued := x.Issued(0)
	checked := 0
	for i, task := range prog.Tasks {
		if task.Kind != KindHostSync {
			continue
		}
		router := -1
		for _, d := range prog.Deps(i) {
			if prog.Tasks[d].Name.String() == "router_fwd" {
				router = int(d)
			}
		}
		next := i + 1
		if router < 0 || prog.HostAfter(next) != router {
			t.Fatalf("layer %d: the task after the sync waits for task %d, want the router %d", task.Layer, prog.HostAfter(next), router)
		}
		if prog.Tasks[next].Name.String() != "ep_dispatch" {
			t.Fatalf("task after the sync is %s, want ep_dispatch", prog.Tasks[next].Name.String())
		}
		if want := end[router] + cfg.Host.Call; issued[next] != want || start[next] != want {
			t.Errorf("layer %d: dispatch issued at %v, starts at %v, want both at the router's end %v + 0.4 ms", task.Layer, issued[next], start[next], end[router])
		}
		checked++
	}
	if checked != 2 {
		t.Errorf("%d host syncs checked, want 2", checked)
	}
}

// BenchmarkExecutorHost plays BenchmarkExecutor's step with a host thread
// issuing every task at 5 µs: the host runs ahead of the 1 ms blocks, so
// after the step's first tasks no task waits for its issue.
func BenchmarkExecutorHost(b *testing.B) {
	l, progs := stepPrograms(b, 2, 2, 4, 32, pipeline.OneFOneB, commPricer{unit: engine.Millisecond, comm: 300 * engine.Microsecond})
	for _, p := range progs {
		p.Hosted = true
		for i := range p.Tasks {
			if p.Tasks[i].Kind != KindRecv {
				p.hot[i].issue = 5 * engine.Microsecond
			}
		}
	}
	for b.Loop() {
		playStep(b, l, progs, Interference{}, nil)
	}
}

// TestLaunchQueueHand: one long kernel (1000 ns) then N = 5 tiny ones
// (1 ns) on the compute stream, every kernel 10 ns of host time. Without
// a bound the host issues all six by 60 ns and the tiny kernels run
// back to back after the long one: the step ends at 10 + 1000 + 5 =
// 1015. With a queue of Q launches the host issues a task only when the
// launch Q places before its first has finished (the task holding it has
// ended):
//   - Q = 2: tiny 1 issues at 10..20; tiny 2 waits for the long kernel
//     (end 1010) and issues 1010..1020, tiny 1 runs 1010..1011, tiny 2
//     1020..1021; tiny 3 waits for tiny 1 (ended) and issues after tiny
//     2's issue, 1020..1030, and runs 1030..1031; tiny 4 1040..1041,
//     tiny 5 1050..1051: 1051.
//   - Q = 1: every tiny task waits for the one before: tiny 1 issues
//     1010..1020, runs 1020..1021; tiny 2 1021..1031, runs 1031..1032;
//     ... tiny 5 runs 1064..1065: 1065.
//   - Q = 6 or more: never full: 1015.
//
// Then one task of 5 kernels (50 ns of host time, 5 ns on the GPU) after
// the long kernel: unbounded, issued 10..60, it runs 1010..1015. With
// Q = 2 the host issues its first two launches, then one per kernel the
// GPU retires: the GPU reaches them when the long kernel ends at 1010,
// and the last 3 launches (30 ns) end the issue at 1040: it runs
// 1040..1045. With Q = 5 it fits: 1015.
//
// Both executors (representative rank and every rank) must agree.
func TestLaunchQueueHand(t *testing.T) {
	const issue = 10
	for _, c := range []struct {
		q     int
		fused bool // one 5-kernel task instead of five 1-kernel tasks
		want  engine.Time
	}{{0, false, 1015}, {1, false, 1065}, {2, false, 1051}, {6, false, 1015}, {1024, false, 1015},
		{0, true, 1015}, {2, true, 1045}, {5, true, 1015}} {
		build := func() *Program {
			tasks := []Task{compute(1000)}
			deps := [][]int32{nil}
			if c.fused {
				k := compute(5)
				tasks = append(tasks, k)
				deps = append(deps, []int32{0})
			}
			for i := 1; i <= 5 && !c.fused; i++ {
				k := compute(1)
				tasks = append(tasks, k)
				deps = append(deps, []int32{int32(i - 1)})
			}
			p := handProgram(tasks, deps)
			for i := range p.Tasks {
				setIssue(p, i, issue)
			}
			if c.fused {
				setIssue(p, 1, 5*issue)
			}
			p.Hosted = true
			p.setQueueWaits(&HostModel{On: true, KernelFwd: issue, KernelBwd: issue, Call: issue, Queue: c.q}, nil)
			return p
		}
		l, err := NewLayout(1, 1, 1, 1, 1, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
		if err != nil {
			t.Fatal(err)
		}
		sym, full := playBoth(t, l, build)
		ws, we, wi := sym.Times(0, nil, nil, nil)
		fs, fe, fi := full.Times(0, nil, nil, nil)
		var last engine.Time
		for k := range ws {
			last = max(last, we[k])
			if fs[k] != ws[k] || fe[k] != we[k] || fi[k] != wi[k] {
				t.Errorf("Q=%d fused %v task %d: every-rank %v..%v issued %v, representative %v..%v issued %v", c.q, c.fused, k, fs[k], fe[k], fi[k], ws[k], we[k], wi[k])
			}
		}
		if last != c.want {
			t.Errorf("Q=%d fused %v: step ends at %v, want %v", c.q, c.fused, last, c.want)
		}
	}
}

// TestLaunchQueueBuild: a built program with a small launch queue gets
// queue waits (QueueAfter, and QueueSelf for the optimizer's loop of more
// launches than the queue holds), the step is no shorter than unbounded,
// and both executors play it alike.
func TestLaunchQueueBuild(t *testing.T) {
	host := HostModel{On: true, KernelFwd: 10 * engine.Microsecond, KernelBwd: 4 * engine.Microsecond, Call: 10 * engine.Microsecond}
	pr := unitPricer{unit: engine.Microsecond}
	var free engine.Time
	for _, q := range []int{0, 1, 4, 1 << 20} { // 0 first: the unbounded step
		h := host
		h.Queue = q
		cfg := hostConfig(t, 2, h)
		cfg.OptimizerTensors = 8 // a loop of 8 tensors' kernels
		end, x := runHost(t, cfg, pr)
		if q == 0 {
			free = end
		}
		_, _, prog, start, fin := x.Instance(0)
		waits, self := 0, 0
		for i := range prog.Tasks {
			if prog.QueueAfter(i) >= 0 {
				waits++
			}
			if w, _ := prog.QueueSelf(i); w >= 0 {
				self++
			}
		}
		if (q > 0 && q < 1<<20) != (waits > 0) {
			t.Errorf("Q=%d: %d queue waits", q, waits)
		}
		if q == 0 || q >= 1<<20 {
			if self != 0 {
				t.Errorf("Q=%d: %d tasks wait for their own launches", q, self)
			}
		}
		if q == 1 && self == 0 {
			t.Errorf("Q=1: no task waits for its own launches")
		}
		if q > 0 && end < free {
			t.Errorf("Q=%d: step %v shorter than unbounded %v", q, end, free)
		}
		progs, err := Build(cfg, pr)
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
		fs, fe, _ := full.Times(0, nil, nil, nil)
		for k := range fs {
			if fs[k] != start[k] || fe[k] != fin[k] {
				t.Fatalf("Q=%d task %d: every-rank %v..%v, representative %v..%v", q, k, fs[k], fe[k], start[k], fin[k])
			}
		}
	}
}
