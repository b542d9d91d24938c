package parallel

import (
	"testing"

	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/workload"
)

// TestPipelineScatterGather: with tensor parallelism a pipeline transfer
// carries 1/tp of the micro-batch's activation per rank, with or without
// sequence parallelism (Megatron-LM's scatter/gather of pipeline tensors,
// SC21 §4.1). Without sequence parallelism the receiving rank then
// all-gathers the whole activation over its TP group before computing;
// with it, the layer's own sequence-parallel all-gather does that.
//
// Activation of one micro-batch: 2·512 tokens × h 1024 × 2 bytes = 2 MiB;
// per send at tp 4: 512 KiB.
func TestPipelineScatterGather(t *testing.T) {
	const act = 2 * 512 * 1024 * 2
	for _, sp := range []bool{false, true} {
		l, err := NewLayout(4, 1, 1, 1, 2, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
		if err != nil {
			t.Fatal(err)
		}
		chunks, err := Partition(4, 2, 1, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		cfg := &StepConfig{Layout: l, Model: testModel(t, 4),
			Shape:    workload.Shape{MicroBatch: 2, Seq: 512, Dtype: workload.BF16, TP: 4, CP: 1, EP: 1, SP: sp, FlashAttention: true},
			Schedule: pipeline.OneFOneB, Virtual: 1, Microbatches: 4, Chunks: chunks, Optimizer: "adamw",
			ParamDtype: workload.BF16, GradDtype: workload.BF16, MasterDtype: workload.FP32,
			Overlap: Overlap{GradReduce: true, ParamGather: true, P2P: true}, Steps: 1,
			LayerParams: func(int) (float64, float64) { return 1e6, 0 },
		}
		progs, err := Build(cfg, unitPricer{unit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		var sends, recvs, gathers int
		for _, p := range progs {
			for _, task := range p.Tasks {
				switch {
				case task.Kind == KindSend || task.Kind == KindRecv:
					if task.Bytes != act/4 {
						t.Errorf("sp=%v: %s carries %g bytes, want %d", sp, task.Name.String(), task.Bytes, act/4)
					}
					if task.Kind == KindSend {
						sends++
					} else {
						recvs++
					}
				case task.Name.String() == "pp_gather_act" || task.Name.String() == "pp_gather_grad":
					gathers++
					if task.Op != collectives.AllGather || task.Group != GroupTP || task.Bytes != act {
						t.Errorf("sp=%v: gather %+v", sp, task)
					}
				}
			}
		}
		// 4 micro-batches cross the one stage boundary forward and back.
		if sends != 8 || recvs != 8 {
			t.Errorf("sp=%v: %d sends, %d receives, want 8 and 8", sp, sends, recvs)
		}
		if want := map[bool]int{false: 8, true: 0}[sp]; gathers != want {
			t.Errorf("sp=%v: %d pipeline gathers, want %d", sp, gathers, want)
		}
	}
}
