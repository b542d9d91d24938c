package parallel

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/workload"
)

// TestLayerCopy builds hand-made steps with and without layer copying: the
// programs must be equal, and the copies are where the layers repeat. With
// 8 layers on one stage and one micro-batch, a layer's forward is attn_fwd
// and mlp_fwd, its backward mlp_bwd and attn_bwd. After layers 0 and 1 the
// builder's two-layers-back compute (fsdpPrev2) still names the embedding,
// which is not a layer, so layer 2 is emitted too and layers 3–7 are
// copied (10 tasks); the backward likewise emits 7, 6, 5 and copies 4–0
// (10). With DP 2 and one-parameter buckets the backward reduces every
// layer's gradients as it goes (dp_grad_reduce), which grows the
// builder's list of DP tasks: only the forward is copied. A chunk of fewer
// than copyMinLayers layers is emitted whole. Layers that
// alternate between recomputed and not (recompute_every 2) are never two
// of one class in a row, and offloaded ones are never copied.
func TestLayerCopy(t *testing.T) {
	cases := []struct {
		name   string
		pp, v  int
		micro  int
		layers int
		edit   func(*StepConfig)
		copied int64 // -1: some, not counted by hand
	}{
		{"one stage, no DP reduction in the backward", 1, 1, 1, 8, func(c *StepConfig) { c.Layout = mustLayout(t, 1, 1) }, 10 + 10},
		{"one stage, DP reduction in the backward", 1, 1, 1, 8, nil, 10},
		{"1F1B pp 2, 4 micro-batches", 2, 1, 4, 16, nil, -1},
		{"interleaved pp 2 v 2", 2, 2, 4, 32, func(c *StepConfig) { c.Schedule = pipeline.Interleaved }, -1},
		{"host model", 2, 1, 4, 16, func(c *StepConfig) { c.Host = HostModel{On: true, Call: 10 * engine.Microsecond} }, -1},
		{"ZeRO-3", 2, 1, 4, 16, func(c *StepConfig) { c.Zero = 3 }, -1},
		{"ZeRO-3, gather overlap", 2, 1, 4, 16, func(c *StepConfig) { c.Zero, c.Overlap.ParamGather = 3, true }, -1},
		{"ZeRO-3, backward prefetch", 2, 1, 4, 16, func(c *StepConfig) {
			c.Zero, c.Overlap.ParamGather, c.Zero3BackwardPrefetch = 3, true, true
		}, -1},
		{"ZeRO-3, FSDP2 copies", 2, 1, 4, 16, func(c *StepConfig) { c.Zero, c.FSDPVersion, c.GradDtype = 3, 2, workload.FP32 }, -1},
		{"ZeRO-3, FSDP1 copies", 2, 1, 4, 16, func(c *StepConfig) { c.Zero, c.FSDPVersion, c.GradDtype = 3, 1, workload.FP32 }, -1},
		{"ZeRO-3, FSDP1 copies, prefetch", 2, 1, 4, 16, func(c *StepConfig) {
			c.Zero, c.FSDPVersion, c.GradDtype = 3, 1, workload.FP32
			c.Overlap.ParamGather, c.Zero3BackwardPrefetch = true, true
		}, -1},
		{"ZeRO-3, FSDP2 copies, prefetch", 2, 1, 4, 16, func(c *StepConfig) {
			c.Zero, c.FSDPVersion, c.GradDtype = 3, 2, workload.FP32
			c.Overlap.ParamGather, c.Zero3BackwardPrefetch = true, true
		}, -1},
		{"full recompute", 2, 1, 4, 16, func(c *StepConfig) { c.Recompute = workload.RecomputeFull }, -1},
		{"4 layers per chunk", 2, 1, 4, 8, nil, 0},
		{"recompute every second layer", 1, 1, 1, 8, func(c *StepConfig) {
			c.Layout = mustLayout(t, 1, 1)
			c.Recompute, c.RecomputeEvery = workload.RecomputeFull, 2
		}, 0},
		{"offloaded activations", 1, 1, 2, 8, func(c *StepConfig) {
			c.Shape.Offload = workload.OffloadExpertFC1
			c.HostD2H, c.HostH2D = 1e12, 1e12
			c.Model.MoE = nil
		}, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			build := func(every bool) ([]*Program, int64) {
				cfg := copyConfig(t, c.pp, c.v, c.micro, c.layers)
				if c.edit != nil {
					c.edit(cfg)
				}
				cfg.EmitEveryLayer = every
				c0 := CopiedTasks()
				progs, err := Build(cfg, unitPricer{unit: engine.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				return progs, CopiedTasks() - c0
			}
			got, copied := build(false)
			want, none := build(true)
			if none != 0 {
				t.Fatalf("EmitEveryLayer copied %d tasks", none)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatal("programs built with layer copying differ from those emitted layer by layer")
			}
			if c.copied >= 0 && copied != c.copied || c.copied < 0 && copied == 0 {
				t.Errorf("copied %d tasks, want %d (-1: some)", copied, c.copied)
			}
		})
	}
}

func mustLayout(t *testing.T, dp, pp int) *Layout {
	t.Helper()
	l, err := NewLayout(1, 1, 1, dp, pp, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func copyConfig(t *testing.T, pp, v, m, layers int) *StepConfig {
	t.Helper()
	chunks, err := Partition(layers, pp, v, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return &StepConfig{Layout: mustLayout(t, 2, pp), Model: testModel(t, layers),
		Shape:    workload.Shape{MicroBatch: 1, Seq: 128, Dtype: workload.BF16, TP: 1, CP: 1, EP: 1, FlashAttention: true},
		Schedule: pipeline.OneFOneB, Virtual: v, Microbatches: m, Chunks: chunks, Optimizer: "adamw",
		ParamDtype: workload.BF16, GradDtype: workload.BF16, MasterDtype: workload.FP32,
		Overlap: Overlap{GradReduce: true, P2P: true}, Steps: 1, BucketParams: 1,
		LayerParams: func(int) (float64, float64) { return 1e6, 0 },
	}
}

// A Task is 48 bytes (the issue time and the host and queue waits live in
// the played records alone: issue 18, build45): the builder writes every
// one (add) and copies most (copyPass, copyLayers); a field placed after
// the 8-byte ones pads it.
func TestTaskSize(t *testing.T) {
	if s := unsafe.Sizeof(Task{}); s != 48 {
		t.Errorf("Task is %d bytes, want 48", s)
	}
}
