package parallel

import (
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/workload"
)

// TestRecomputeEvery: full recomputation of every k-th layer, counted per
// pipeline rank in model order (torchtitan's selective layer
// checkpointing). Four layers, two micro-batches: without pipelining,
// every 2nd layer is layers 1 and 3; at pp 2 each rank holds two layers and
// recomputes its second (1 on rank 0, 3 on rank 1); every 3rd leaves only
// layer 2 without pipelining and nothing at pp 2. k = 0 recomputes all.
func TestRecomputeEvery(t *testing.T) {
	recomputed := func(pp, every int) []int {
		l, err := NewLayout(1, 1, 1, 1, pp, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
		if err != nil {
			t.Fatal(err)
		}
		chunks, err := Partition(4, pp, 1, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		cfg := &StepConfig{Layout: l, Model: testModel(t, 4), Recompute: workload.RecomputeFull, RecomputeEvery: every,
			Shape:    workload.Shape{MicroBatch: 1, Seq: 128, Dtype: workload.BF16, FlashAttention: true},
			Schedule: pipeline.OneFOneB, Virtual: 1, Microbatches: 2, Chunks: chunks, Optimizer: "adamw",
			ParamDtype: workload.BF16, GradDtype: workload.BF16, MasterDtype: workload.FP32, Steps: 1,
			LayerParams: func(int) (float64, float64) { return 1e6, 0 },
		}
		progs, err := Build(cfg, blockPricer{})
		if err != nil {
			t.Fatal(err)
		}
		var layers []int
		for _, p := range progs {
			for _, task := range p.Tasks {
				if task.Name.String() == "attn_recompute" && task.Micro == 0 {
					layers = append(layers, int(task.Layer))
				}
			}
		}
		slices.Sort(layers)
		return layers
	}
	for _, c := range []struct {
		pp, every int
		want      []int
	}{
		{1, 0, []int{0, 1, 2, 3}},
		{1, 2, []int{1, 3}},
		{2, 2, []int{1, 3}},
		{1, 3, []int{2}},
		{2, 3, nil},
	} {
		if got := recomputed(c.pp, c.every); !slices.Equal(got, c.want) {
			t.Errorf("pp %d every %d: recomputed layers %v, want %v", c.pp, c.every, got, c.want)
		}
	}
}
