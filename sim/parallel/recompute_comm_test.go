package parallel

import (
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/workload"
)

// tpRecomputeConfig is a TP-2 step of `layers` layers of hidden 1024 and
// mbs micro-batches of one 128-token sequence under recompute mode r.
func tpRecomputeConfig(t *testing.T, r workload.Recompute, sp bool, layers, mbs int) *StepConfig {
	t.Helper()
	l, err := NewLayout(2, 1, 1, 1, 1, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
	if err != nil {
		t.Fatal(err)
	}
	chunks, _ := Partition(layers, 1, 1, 0, 0)
	return &StepConfig{Layout: l, Model: testModel(t, layers), Recompute: r,
		Shape:    workload.Shape{MicroBatch: 1, Seq: 128, Dtype: workload.BF16, TP: 2, SP: sp, FlashAttention: true},
		Schedule: pipeline.OneFOneB, Virtual: 1, Microbatches: mbs, Chunks: chunks, Optimizer: "adamw",
		ParamDtype: workload.BF16, GradDtype: workload.BF16, MasterDtype: workload.FP32, Steps: 1,
		LayerParams: func(int) (float64, float64) { return 1e6, 0 },
	}
}

// recomputeComm counts the collectives of the recomputed forward (tasks
// whose name says recompute) and their message bytes, per layer and
// micro-batch.
func recomputeComm(t *testing.T, cfg *StepConfig, layerMBs int) (calls, bytes float64) {
	t.Helper()
	_, prog := stepEnd(t, cfg, blockPricer{})
	for _, task := range prog.Tasks {
		if task.Kind.IsComm() && strings.Contains(task.Name, "recompute") {
			calls++
			bytes += task.Bytes
		}
	}
	return calls / float64(layerMBs), bytes / float64(layerMBs)
}

// TestRecomputeCollectivesPerLayer counts, by hand, the TP collectives one
// recomputed layer issues per micro-batch, for every recompute mode, with
// and without sequence parallelism, under a reentrant checkpoint
// (RecomputeToOutput: Megatron-Core's CheckpointFunction reruns the layer
// to its output) and PyTorch's non-reentrant one (stops before the MLP's
// closing reduction). Hidden 1024, one sequence of 128 tokens in bf16:
// every TP collective moves the whole 128 × 1024 × 2 = 262,144-byte
// activation (nccl-tests size convention).
func TestRecomputeCollectivesPerLayer(t *testing.T) {
	const act = 128 * 1024 * 2
	const layers, mbs = 3, 2
	for _, c := range []struct {
		r         workload.Recompute
		sp, toOut bool
		calls     float64 // all-gathers + reduce-scatters / all-reduces
	}{
		// attention gather, attention reduce-scatter, MLP gather, MLP reduce-scatter
		{workload.RecomputeFull, true, true, 4},
		{workload.RecomputeFull, true, false, 3},
		// attention all-reduce, MLP all-reduce
		{workload.RecomputeFull, false, true, 2},
		{workload.RecomputeFull, false, false, 1},
		// the two gathers feeding the recomputed projections; without SP
		// the attention's all-reduce (the MLP reads its output)
		{workload.RecomputeSelectiveOp, true, true, 2},
		{workload.RecomputeSelectiveOp, false, true, 1},
		{workload.RecomputeSelectiveOp, false, false, 1},
		// the attention core alone: no collective
		{workload.RecomputeSelective, true, true, 0},
		{workload.RecomputeSelective, false, true, 0},
		{workload.RecomputeNone, true, true, 0},
	} {
		cfg := tpRecomputeConfig(t, c.r, c.sp, layers, mbs)
		cfg.RecomputeToOutput = c.toOut
		calls, bytes := recomputeComm(t, cfg, layers*mbs)
		if calls != c.calls || bytes != c.calls*act {
			t.Errorf("%v sp=%v to_output=%v: %g collectives, %g bytes per layer; want %g, %g",
				c.r, c.sp, c.toOut, calls, bytes, c.calls, c.calls*act)
		}
	}
}

// TestRecomputeMoEAllToAll: a fully recomputed MoE layer redoes its
// dispatch and combine all-to-alls (Megatron-Core reruns the whole
// TransformerLayer, MoE layer included), the same bytes as its forward's;
// selective recompute of the attention core redoes none.
func TestRecomputeMoEAllToAll(t *testing.T) {
	for _, c := range []struct {
		r     workload.Recompute
		calls float64
	}{
		{workload.RecomputeFull, 2},
		{workload.RecomputeSelective, 0},
	} {
		cfg := moeConfig(t, false)
		cfg.Recompute, cfg.RecomputeToOutput = c.r, true
		_, prog := stepEnd(t, cfg, blockPricer{})
		var fwd float64
		for _, task := range prog.Tasks {
			if task.Name == "ep_dispatch" || task.Name == "ep_combine" {
				fwd += task.Bytes
			}
		}
		const layerMBs = 2 * 1
		calls, bytes := recomputeComm(t, cfg, layerMBs)
		if calls != c.calls || bytes != c.calls/2*fwd/layerMBs {
			t.Errorf("%v: %g all-to-alls, %g bytes per layer recomputed; want %g, %g", c.r, calls, bytes, c.calls, c.calls/2*fwd/layerMBs)
		}
	}
}
