package parallel

import (
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/units"
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
		if task.Kind.IsComm() && strings.Contains(task.Name.String(), "recompute") {
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
		// save-dots: the projections' outputs (the attention's after its
		// TP reduction) are kept, only elementwise kernels rerun
		{workload.RecomputeSaveDots, true, true, 0},
		{workload.RecomputeSaveDots, false, false, 0},
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
			if task.Name.String() == "ep_dispatch" || task.Name.String() == "ep_combine" {
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

// bytePricer prices an op list at one nanosecond per byte it moves (the
// embedding, output layer and optimizer nothing) and collectives nothing.
type bytePricer struct{}

func (bytePricer) OpsTime(_ int, ops []workload.Op) engine.Time {
	var b float64
	for _, op := range ops {
		if op.Block != workload.BlockEmbedding && op.Block != workload.BlockHead && op.Name != "optimizer" {
			b += op.BytesRead + op.BytesWritten
		}
	}
	return engine.Time(b)
}
func (bytePricer) CommTime(GroupKind, int, collectives.Op, units.Bytes) engine.Time { return 0 }
func (bytePricer) SendTime(int, int, units.Bytes) engine.Time                       { return 0 }

// TestSaveDotsRecomputeTask: under save-dots each layer's backward is
// preceded by one elementwise_recompute task per micro-batch, priced from
// the layer's rerun kernels, and no attention/MLP recompute task. The test
// model (hidden 1024, 16 heads of 64 with RoPE, 4h GELU MLP, LayerNorm,
// TP 2 + SP, 128 tokens, bf16, fused kernels) reruns, per rank: two
// LayerNorms over the 64 sequence-sharded rows (read 64·1024·2, write the
// same plus two fp32 statistics per row: 262,656 bytes each), RoPE on the
// rank's 8 Q and 8 K heads (read and write 128·1024·2 each: 524,288), the
// attention residual over 64 rows (3·64·1024·2 = 393,216) and GELU over
// 128 × 2048 (read and write 128·2048·2 each: 1,048,576): 2,491,392 bytes.
func TestSaveDotsRecomputeTask(t *testing.T) {
	const layers, mbs = 3, 2
	cfg := tpRecomputeConfig(t, workload.RecomputeSaveDots, true, layers, mbs)
	_, prog := stepEnd(t, cfg, bytePricer{})
	n := 0
	for _, task := range prog.Tasks {
		switch task.Name.String() {
		case "elementwise_recompute":
			n++
			if want := engine.Time(2*262656 + 524288 + 393216 + 1048576); task.Dur != want {
				t.Errorf("layer %d: elementwise_recompute %v, want %v", task.Layer, task.Dur, want)
			}
		case "attn_recompute", "mlp_recompute":
			t.Errorf("save-dots emitted %s", task.Name.String())
		}
	}
	if n != layers*mbs {
		t.Errorf("%d elementwise_recompute tasks, want %d", n, layers*mbs)
	}
}
