package parallel

import (
	"fmt"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/units"
	"github.com/simtrain/simtrain/sim/workload"
)

// alphaBetaPricer prices every collective as α + bytes/β (β in bytes per
// ns) and compute as one unit per block.
type alphaBetaPricer struct {
	unitPricer
	alpha engine.Time
	beta  float64
}

func (p alphaBetaPricer) CommTime(_ GroupKind, _ int, _ collectives.Op, b units.Bytes) engine.Time {
	return p.alpha + engine.Time(float64(b)/p.beta+0.5)
}

// zero3Config is a two-layer model of params parameters per layer under
// ZeRO-3 over DP 4, micro-batches of one 128-token sequence.
func zero3Config(t *testing.T, params float64, microbatches int) *StepConfig {
	t.Helper()
	l, err := NewLayout(1, 1, 1, 4, 1, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := Partition(2, 1, 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return &StepConfig{Layout: l, Model: testModel(t, 2),
		Shape:    workload.Shape{MicroBatch: 1, Seq: 128, Dtype: workload.BF16, TP: 1, CP: 1, EP: 1, FlashAttention: true},
		Schedule: pipeline.OneFOneB, Virtual: 1, Microbatches: microbatches, Chunks: chunks, Optimizer: "adamw", Zero: 3,
		ParamDtype: workload.BF16, GradDtype: workload.BF16, MasterDtype: workload.FP32, Steps: 1,
		LayerParams: func(int) (float64, float64) { return params, 0 },
	}
}

// TestZero3GatherGranularity: DeepSpeed-style gathers split each layer's
// parameter all-gather into ⌈P / bucket⌉ calls of P/calls parameters, every
// call paying the fixed cost α again, so a layer's gathers take
// calls·α + 2P/β instead of α + 2P/β; FSDP's (bucket 0) is one call.
func TestZero3GatherGranularity(t *testing.T) {
	const P = 1e6 // parameters per layer
	for _, tc := range []struct {
		bucket float64
		calls  int
	}{{0, 1}, {2e6, 1}, {5e5, 2}, {3e5, 4}, {1e5, 10}} {
		cfg := zero3Config(t, P, 1)
		cfg.Zero3GatherParams = tc.bucket
		pr := alphaBetaPricer{alpha: 20 * engine.Microsecond, beta: 10} // 10 B/ns = 10 GB/s
		progs, err := Build(cfg, pr)
		if err != nil {
			t.Fatal(err)
		}
		calls := map[int32]int{}
		var dur engine.Time
		for _, task := range progs[0].Tasks {
			if task.Name.String() == "fsdp_param_gather_fwd" && task.Layer == 0 {
				calls[task.Micro]++
				dur += task.Dur
				if want := 2 * P / float64(tc.calls); task.Bytes != want {
					t.Errorf("bucket %g: a call moves %g B, want %g", tc.bucket, task.Bytes, want)
				}
			}
		}
		want := engine.Time(tc.calls)*pr.alpha + engine.Time(2*P/pr.beta+0.5)
		if calls[-1] != tc.calls || dur < want-engine.Time(tc.calls) || dur > want+engine.Time(tc.calls) {
			t.Errorf("bucket %g: layer 0 forward gathers %d calls taking %v, want %d calls, %v", tc.bucket, calls[-1], dur, tc.calls, want)
		}
	}
}

// TestZero3GradSyncLast: FSDP reduce-scatters a layer's gradients once per
// micro-batch (4 micro-batches × 2 layers = 8 calls of 2P bytes in bf16);
// with Zero3GradSyncLast (FSDP2's set_requires_gradient_sync(False) on all
// but the last micro-batch) only the last micro-batch's backward does
// (2 calls, the same size each: the accumulated gradient), while the
// parameter all-gathers stay one per layer per micro-batch and pass.
func TestZero3GradSyncLast(t *testing.T) {
	const P = 1e6 // parameters per layer
	for _, tc := range []struct {
		last              bool
		scatters, gathers int
	}{{false, 8, 16}, {true, 2, 16}} {
		cfg := zero3Config(t, P, 4)
		cfg.Zero3GradSyncLast = tc.last
		progs, err := Build(cfg, alphaBetaPricer{alpha: 20 * engine.Microsecond, beta: 10})
		if err != nil {
			t.Fatal(err)
		}
		scatters, gathers := 0, 0
		for _, task := range progs[0].Tasks {
			if task.Layer < 0 || task.Layer > 1 {
				continue // the embedding's and head's own gathers and scatters
			}
			switch task.Name.String() {
			case "fsdp_grad_scatter":
				scatters++
				if task.Bytes != 2*P {
					t.Errorf("last %v: a gradient reduce-scatter moves %g B, want %g", tc.last, task.Bytes, 2*P)
				}
				if tc.last && task.Micro != 3 {
					t.Errorf("last %v: layer %d reduce-scatters on micro-batch %d, want only the last (3)", tc.last, task.Layer, task.Micro)
				}
			case "fsdp_param_gather_fwd", "fsdp_param_gather_bwd":
				gathers++
			}
		}
		if scatters != tc.scatters || gathers != tc.gathers {
			t.Errorf("last %v: %d gradient reduce-scatters and %d parameter gathers, want %d and %d", tc.last, scatters, gathers, tc.scatters, tc.gathers)
		}
	}
}

// TestZero3BackwardPrefetch: a ZeRO-3 backward with parameter prefetch
// (Overlap.ParamGather and Zero3BackwardPrefetch) issues layer 0's all-gather as layer 1's backward
// begins, ahead of layer 1's gradient reduce-scatter on the DP stream, so
// with every collective taking C = 300 µs and a layer's backward 2 ms
// (two 1 ms blocks) layer 0's backward starts the moment layer 1's ends.
// Without prefetch the gather is issued when layer 0's backward begins,
// behind layer 1's reduce-scatter, which waits for layer 1's backward:
// layer 0 starts 2C = 600 µs after layer 1 ends (the reduce-scatter, then
// the gather).
func TestZero3BackwardPrefetch(t *testing.T) {
	const C = 300 * engine.Microsecond
	for _, tc := range []struct {
		prefetch bool
		gap      engine.Time
	}{{true, 0}, {false, 2 * C}} {
		cfg := zero3Config(t, 1e6, 1)
		cfg.Model.TiedEmbeddings = true // no output-layer parameters to gather
		cfg.Overlap.ParamGather = true
		cfg.Zero3BackwardPrefetch = tc.prefetch
		pr := alphaBetaPricer{unitPricer: unitPricer{unit: engine.Millisecond}, alpha: C, beta: 1e15}
		progs, err := Build(cfg, pr)
		if err != nil {
			t.Fatal(err)
		}
		x := NewSymmetric(engine.New(), cfg.Layout, progs)
		if err := x.Run(); err != nil {
			t.Fatal(err)
		}
		_, _, prog, start, end := x.Instance(0)
		var end1, start0 engine.Time = -1, -1
		gather0, scatter1 := -1, -1
		for i, task := range prog.Tasks {
			switch {
			case task.Kind == KindBackward && task.Layer == 1:
				end1 = max(end1, end[i])
			case task.Kind == KindBackward && task.Layer == 0 && start0 < 0:
				start0 = start[i]
			case task.Name.String() == "fsdp_param_gather_bwd" && task.Layer == 0:
				gather0 = i
			case task.Name.String() == "fsdp_grad_scatter" && task.Layer == 1:
				scatter1 = i
			}
		}
		if gather0 < 0 || scatter1 < 0 || end1 < 0 || start0 < 0 {
			t.Fatalf("prefetch %v: layer 0's gather %d, layer 1's scatter %d, backward end %v, start %v: missing", tc.prefetch, gather0, scatter1, end1, start0)
		}
		if got := start0 - end1; got != tc.gap {
			t.Errorf("prefetch %v: layer 0's backward starts %v after layer 1's ends, want %v", tc.prefetch, got, tc.gap)
		}
		if before := gather0 < scatter1; before != tc.prefetch {
			t.Errorf("prefetch %v: layer 0's gather (task %d) issued before layer 1's reduce-scatter (task %d): %v", tc.prefetch, gather0, scatter1, before)
		}
	}
}

// opPricer prices a GEMM op gemm and any other op other, so a block's
// GEMM share is known by hand.
type opPricer struct{ gemm, other engine.Time }

func (p opPricer) OpsTime(_ int, ops []workload.Op) engine.Time {
	var t engine.Time
	for _, op := range ops {
		if op.Class == workload.ClassGEMM {
			t += p.gemm
		} else {
			t += p.other
		}
	}
	return t
}
func (opPricer) CommTime(GroupKind, int, collectives.Op, units.Bytes) engine.Time { return 0 }
func (opPricer) SendTime(int, int, units.Bytes) engine.Time                       { return 0 }

// TestGEMMShare: a compute task's GEMMShare is its GEMM ops' time over its
// duration in 1/65535ths, counting only GEMMs whose 128×128 output tiles
// reach StepConfig.GEMMSMs. Each op priced 3 µs if a GEMM, 1 µs if not:
// a task of g GEMMs and o other ops has share ⌊3g·65535 / (3g + o)⌋. The
// test model's GEMMs (128 tokens, hidden 1024) have 1×8 tiles or more, so
// GEMMSMs 1000 counts none of them.
func TestGEMMShare(t *testing.T) {
	for _, sms := range []int{0, 1000} {
		cfg := zero3Config(t, 1e6, 1)
		cfg.GEMMSMs = sms
		progs, err := Build(cfg, opPricer{gemm: 3 * engine.Microsecond, other: engine.Microsecond})
		if err != nil {
			t.Fatal(err)
		}
		ops := cfg.Model.LayerOps(0, cfg.Shape, workload.Forward)
		var g, o int64
		for _, op := range ops {
			if op.Block == workload.BlockMLP {
				if op.Class == workload.ClassGEMM {
					g++
				} else {
					o++
				}
			}
		}
		want := uint16(3 * g * 65535 / (3*g + o))
		if sms > 0 {
			want = 0
		}
		found := false
		for _, task := range progs[0].Tasks {
			if task.Name.String() == "mlp_fwd" && task.Layer == 0 {
				found = true
				if task.GEMMShare != want {
					t.Errorf("GEMMSMs %d: mlp_fwd GEMMShare %d, want %d (%d GEMMs, %d other ops)", sms, task.GEMMShare, want, g, o)
				}
			}
		}
		if !found || g == 0 {
			t.Fatalf("GEMMSMs %d: no mlp_fwd task or no MLP GEMM", sms)
		}
	}
}

// copyPricer prices a framework's memory-bound copy (an op named fsdp_…
// for FSDP's, ddp_… for DDP's reducer) at 10 bytes per ns of the bytes it
// reads and writes, every other block as unitPricer, and every collective
// 300 µs.
type copyPricer struct{ unitPricer }

func (copyPricer) CommTime(GroupKind, int, collectives.Op, units.Bytes) engine.Time {
	return 300 * engine.Microsecond
}

func (p copyPricer) OpsTime(stage int, ops []workload.Op) engine.Time {
	if len(ops) == 1 && (strings.HasPrefix(ops[0].Name, "fsdp_") || strings.HasPrefix(ops[0].Name, "ddp_")) {
		return engine.Time((ops[0].BytesRead + ops[0].BytesWritten) / 10)
	}
	return p.unitPricer.OpsTime(stage, ops)
}

// TestFSDPCopies: the memory-bound copies PyTorch FSDP makes around its
// collectives (StepConfig.FSDPVersion), counted and sized by hand for two
// layers of P = 1e6 parameters over DP 4, one micro-batch, bf16 parameters
// and autograd gradients (g = 2 B), at 10 B/ns:
//   - FSDP2 copies every gathered byte out of the all-gather buffer before
//     each forward and backward use (read 2P, write 2P: 4e6 B, 400 µs):
//     2 layers × 2 passes, plus the embedding's 2 (32,000 × 1,024 = 32.768e6
//     parameters: 131.072e6 B, 13.1072 ms); and concatenates each unit's
//     gradients into the reduce-scatter input in the reduce dtype before
//     the reduce-scatter (read 2P, write rP: 6e6 B in fp32, 4e6 in bf16).
//   - FSDP1 has no copy-out; before each reduce-scatter it concatenates
//     the flat gradient (read and write 2P), casts it to the reduce dtype
//     when that differs (read 2P, write 4P) and predivides it (read and
//     write rP): 18e6 B in fp32, 8e6 B in bf16.
//   - Version 0 issues none.
//
// Every copy is on the compute stream; a copy-out starts after its
// all-gather ends, a unit's compute after its copy-out ends, and its
// reduce-scatter after its gradient copies end.
func TestFSDPCopies(t *testing.T) {
	const P = 1e6
	const emb = 32000 * 1024.0
	for _, tc := range []struct {
		version       int
		grad          workload.Dtype
		copyOuts      int
		gradName      string
		gradBytes     float64 // per layer
		gradPerUnitOf float64 // the embedding's, in units of P
	}{
		{0, workload.FP32, 0, "", 0, 0},
		{2, workload.FP32, 6, "fsdp_grad_copy_in", 6 * P, 6},
		{2, workload.BF16, 6, "fsdp_grad_copy_in", 4 * P, 4},
		{1, workload.FP32, 0, "fsdp_grad_prep", 18 * P, 18},
		{1, workload.BF16, 0, "fsdp_grad_prep", 8 * P, 8},
	} {
		cfg := zero3Config(t, P, 1)
		cfg.Model.TiedEmbeddings = true // no output-layer parameters to gather
		cfg.FSDPVersion, cfg.GradDtype = tc.version, tc.grad
		progs, err := Build(cfg, copyPricer{unitPricer{unit: engine.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		x := NewSymmetric(engine.New(), cfg.Layout, progs)
		if err := x.Run(); err != nil {
			t.Fatal(err)
		}
		_, _, prog, start, end := x.Instance(0)
		name := func(v int, g workload.Dtype) string { return fmt.Sprintf("version %d, reduce %v", v, g) }
		copyOuts, grads := 0, 0
		copyEnd := map[[2]int32]engine.Time{} // (layer, kind) → end of its copy-out
		gradEnd := map[int32]engine.Time{}    // layer → end of its gradient copies
		for i, task := range prog.Tasks {
			switch task.Name.String() {
			case "fsdp_copy_out":
				copyOuts++
				want := 4 * P
				if task.Layer < 0 {
					want = 4 * emb
				}
				if task.Stream != StreamCompute || task.Bytes != want || task.Dur != engine.Time(want/10) {
					t.Errorf("%s: layer %d copy-out on %v moves %g B in %v, want compute, %g B in %v", name(tc.version, tc.grad), task.Layer, task.Stream, task.Bytes, task.Dur, want, engine.Time(want/10))
				}
				copyEnd[[2]int32{task.Layer, int32(task.Kind)}] = end[i]
			case "fsdp_grad_copy_in", "fsdp_grad_prep":
				grads++
				want := tc.gradBytes
				if task.Layer < 0 {
					want = tc.gradPerUnitOf * emb
				}
				if task.Name.String() != tc.gradName || task.Stream != StreamCompute || task.Bytes != want || task.Dur != engine.Time(want/10) {
					t.Errorf("%s: layer %d %s on %v moves %g B in %v, want %s on compute, %g B in %v", name(tc.version, tc.grad), task.Layer, task.Name.String(), task.Stream, task.Bytes, task.Dur, tc.gradName, want, engine.Time(want/10))
				}
				gradEnd[task.Layer] = end[i]
			}
		}
		wantGrads := 3 // two layers and the embedding
		if tc.version == 0 {
			wantGrads = 0
		}
		if copyOuts != tc.copyOuts || grads != wantGrads {
			t.Errorf("%s: %d copy-outs and %d gradient copies, want %d and %d", name(tc.version, tc.grad), copyOuts, grads, tc.copyOuts, wantGrads)
		}
		gatherEnd := map[[2]int32]engine.Time{} // (layer, kind of the pass) → end of its all-gather
		for i, task := range prog.Tasks {
			switch task.Name.String() {
			case "fsdp_param_gather_fwd":
				gatherEnd[[2]int32{task.Layer, int32(KindForward)}] = end[i]
			case "fsdp_param_gather_bwd":
				gatherEnd[[2]int32{task.Layer, int32(KindBackward)}] = end[i]
			}
		}
		for i, task := range prog.Tasks {
			switch {
			case task.Name.String() == "fsdp_copy_out":
				if e, ok := gatherEnd[[2]int32{task.Layer, int32(task.Kind)}]; !ok || start[i] < e {
					t.Errorf("%s: layer %d copy-out starts at %v, before its all-gather ends at %v (found %v)", name(tc.version, tc.grad), task.Layer, start[i], e, ok)
				}
			case task.Stream == StreamCompute && (task.Kind == KindForward || task.Kind == KindBackward) && !strings.HasPrefix(task.Name.String(), "fsdp_") &&
				(task.Layer >= 0 || strings.HasPrefix(task.Name.String(), "embedding")): // layer -1 is the embedding's and the head's
				if e, ok := copyEnd[[2]int32{task.Layer, int32(task.Kind)}]; ok && start[i] < e {
					t.Errorf("%s: %s of layer %d starts at %v, before its copy-out ends at %v", name(tc.version, tc.grad), task.Name.String(), task.Layer, start[i], e)
				}
			case task.Name.String() == "fsdp_grad_scatter":
				e, ok := gradEnd[task.Layer]
				if tc.version != 0 && (!ok || start[i] < e) {
					t.Errorf("%s: layer %d reduce-scatter starts at %v, before its gradient copies end at %v (found %v)", name(tc.version, tc.grad), task.Layer, start[i], e, ok)
				}
			}
		}
	}
}
