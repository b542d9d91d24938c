package parallel

import (
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/workload"
)

// TestGradBucketSync places Megatron-Core's per-bucket NaN check
// (StepConfig.GradBucketSync): one host read before every DP gradient
// bucket's reduce-scatter, depending on the backward task that completed
// the bucket, and none without it. By hand, 4 layers of 1M parameters in
// 2M-parameter buckets (reduced in backward order, last micro-batch only):
// the output layer's 32.8M parameters (vocabulary 32,000 × hidden 1,024,
// untied) fill a bucket alone, layers 3+2 and 1+0 one each, the embedding
// one: 4 buckets, 4 reads, 4 reduce-scatters; with one bucket for
// everything, 1 read flushed after the backward.
func TestGradBucketSync(t *testing.T) {
	const ms = engine.Time(1e6)
	for _, c := range []struct {
		bucket float64
		stall  engine.Time
		want   int
	}{
		{bucket: 2e6, stall: ms, want: 4},
		{bucket: 1e12, stall: ms, want: 1},
		{bucket: 2e6, stall: 0, want: 0},
	} {
		l, err := NewLayout(1, 1, 1, 2, 1, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
		if err != nil {
			t.Fatal(err)
		}
		chunks, err := Partition(4, 1, 1, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		m := testModel(t, 4)
		m.TiedEmbeddings = false
		cfg := &StepConfig{Layout: l, Model: m,
			Shape:    workload.Shape{MicroBatch: 1, Seq: 512, Dtype: workload.BF16, TP: 1, CP: 1, EP: 1, FlashAttention: true},
			Schedule: pipeline.OneFOneB, Virtual: 1, Microbatches: 2, Chunks: chunks, Optimizer: "adamw", Zero: 1,
			ParamDtype: workload.BF16, GradDtype: workload.FP32, MasterDtype: workload.FP32,
			Overlap: Overlap{GradReduce: true, ParamGather: true}, Steps: 1,
			LayerParams:  func(int) (float64, float64) { return 1e6, 0 },
			BucketParams: c.bucket, GradBucketSync: c.stall,
		}
		progs, err := Build(cfg, unitPricer{unit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		p := progs[0]
		checks, reduces := 0, 0
		for i, task := range p.Tasks {
			switch task.Name.String() {
			case "grad_nan_check":
				checks++
				if task.Kind != KindHostSync || task.Stream != StreamCompute || task.Dur != c.stall {
					t.Errorf("bucket %g: check %d is %v on stream %v for %d ns, want a %d ns compute-stream host sync", c.bucket, checks, task.Kind, task.Stream, task.Dur, c.stall)
				}
				if d := p.Deps(i); len(d) != 1 || p.Tasks[d[0]].Kind != KindBackward || p.Tasks[d[0]].Micro != 1 {
					t.Errorf("bucket %g: check %d depends on %v, want the last micro-batch's backward task", c.bucket, checks, d)
				}
			case "dp_grad_reduce":
				reduces++
				if c.stall == 0 {
					break
				}
				found := false
				for _, d := range p.Deps(i) {
					found = found || p.Tasks[d].Name.String() == "grad_nan_check"
				}
				if !found {
					t.Errorf("bucket %g: reduce-scatter %d does not wait for its bucket's check", c.bucket, reduces)
				}
			}
		}
		if checks != c.want {
			t.Errorf("bucket %g, stall %d: %d checks, want %d", c.bucket, c.stall, checks, c.want)
		}
		if c.stall > 0 && reduces != checks {
			t.Errorf("bucket %g: %d reduce-scatters for %d checks, want one each", c.bucket, reduces, checks)
		}
	}
}
