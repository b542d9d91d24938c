package parallel

import (
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/workload"
)

// gemmPricer prices every GEMM at 1 ms and every other kernel at 0, and
// every TP collective as tpPricer does: the backward of a dense part is
// then its GEMMs, one millisecond each.
type gemmPricer struct{ tpPricer }

func (gemmPricer) OpsTime(_ int, ops []workload.Op) engine.Time {
	var t engine.Time
	for _, op := range ops {
		if op.Class == workload.ClassGEMM {
			t += engine.Millisecond
		}
	}
	return t
}

// tpLayerConfig is a three-layer dense model on TP 2 (micro-batch 1 × 128
// tokens, one micro-batch) with the overlap rules ov, for the TP schedule
// tests.
func tpLayerConfig(t *testing.T, sp bool, ov Overlap) *StepConfig {
	t.Helper()
	l, err := NewLayout(2, 1, 1, 1, 1, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
	if err != nil {
		t.Fatal(err)
	}
	chunks, _ := Partition(3, 1, 1, 0, 0)
	ov.GradReduce, ov.ParamGather, ov.P2P = true, true, true
	return &StepConfig{Layout: l, Model: testModel(t, 3),
		Shape:    workload.Shape{MicroBatch: 1, Seq: 128, Dtype: workload.BF16, TP: 2, SP: sp, FlashAttention: true},
		Schedule: pipeline.OneFOneB, Virtual: 1, Microbatches: 1, Chunks: chunks, Optimizer: "adamw",
		ParamDtype: workload.BF16, GradDtype: workload.BF16, MasterDtype: workload.FP32, Steps: 1,
		Overlap: ov, LayerParams: func(int) (float64, float64) { return 1e6, 0 },
	}
}

// TestTPAsyncBackward holds Megatron's asynchronous TP backward
// (tpAsyncBackward) to hand-computed times. The MLP backward of layer 1 is
// FC2's dgrad and wgrad (pre, 2 ms), then FC1's dgrad and wgrad (1 ms
// each); the TP collectives take c. With sequence parallelism, from the
// start T of pre: the all-gather of FC1's input runs [T+2, T+2+c] beside
// the dgrad [T+2, T+3]; the reduce-scatter of the input gradient starts at
// max(T+3, T+2+c) and the wgrad with it; the attention's output-gradient
// all-gather follows the reduce-scatter, and the attention's backward waits
// for it (and for the wgrad on its stream). c = 1.5 ms: RS [T+3.5, T+5],
// all-gather [T+5, T+6.5], so the attention starts 6.5 ms after the MLP
// (7 ms without the overlap: 4 ms of GEMMs, 1.5 ms reduce-scatter, 1.5 ms
// all-gather, and no input all-gather). c = 0.5 ms: everything hides, 4 ms.
// Without sequence parallelism the all-reduce [T+3, T+3+c] runs beside the
// wgrad: 4.5 ms at c = 1.5 ms, 4 ms at 0.5 ms (5.5 and 4.5 synchronous).
func TestTPAsyncBackward(t *testing.T) {
	ms := engine.Millisecond
	for _, c := range []struct {
		sp, async bool
		comm, gap engine.Time
	}{
		{true, true, 3 * ms / 2, 13 * ms / 2},
		{true, true, ms / 2, 4 * ms},
		{true, false, 3 * ms / 2, 7 * ms},
		{false, true, 3 * ms / 2, 9 * ms / 2},
		{false, true, ms / 2, 4 * ms},
		{false, false, 3 * ms / 2, 11 * ms / 2},
	} {
		cfg := tpLayerConfig(t, c.sp, Overlap{TPBwd: c.async})
		progs, err := Build(cfg, gemmPricer{tpPricer{c: c.comm}})
		if err != nil {
			t.Fatal(err)
		}
		x := NewSymmetric(engine.New(), cfg.Layout, progs)
		if err := x.Run(); err != nil {
			t.Fatal(err)
		}
		_, _, prog, start, _ := x.Instance(0)
		at := map[string]engine.Time{}
		count := map[string]int{}
		for i, task := range prog.Tasks {
			if task.Layer == 1 && task.Kind != KindForward {
				at[task.Name.String()] = start[i]
				count[task.Name.String()]++
			}
		}
		if got := at["attn_bwd"] - at["mlp_bwd"]; got != c.gap {
			t.Errorf("sp %v async %v, %v collectives: attention backward starts %v after the MLP's, want %v",
				c.sp, c.async, c.comm, got, c.gap)
		}
		gathers := count["tp_mlp_bwd_input_gather"] + count["tp_attn_bwd_input_gather"]
		if want := map[bool]int{true: 2}[c.sp && c.async]; gathers != want {
			t.Errorf("sp %v async %v: %d input all-gathers in the backward, want %d", c.sp, c.async, gathers, want)
		}
		if c.async && (count["fc1_dgrad_bwd"] != 1 || count["qkv_wgrad_bwd"] != 1) {
			t.Errorf("async backward tasks %v", count)
		}
	}
}
