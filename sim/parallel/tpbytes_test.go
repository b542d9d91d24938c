package parallel

import (
	"testing"

	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/workload"
)

// TestTPBytesTwoCases: tpBytes' two sizes worked out once a stage
// (setTPBytes) answer every op and placement as the formula does
// (tpBytesOf): an all-gather inside a layer, and everything else. It
// fails when setTPBytes swaps or shares the two, or when some other op
// or an all-gather outside a layer differed from the reduction's size.
func TestTPBytesTwoCases(t *testing.T) {
	ops := []collectives.Op{collectives.AllReduce, collectives.AllGather, collectives.ReduceScatter,
		collectives.AllToAll, collectives.Broadcast, collectives.Reduce, collectives.Send}
	dtypes := []workload.Dtype{workload.BF16, workload.FP16, workload.FP32, workload.FP8, workload.FP4,
		workload.MXFP4, workload.NVFP4}
	recipes := []workload.FP8Recipe{workload.FP8Tensorwise, workload.FP8Rowwise, workload.FP8Blockwise}
	n := 0
	for _, dt := range dtypes {
		for _, rc := range recipes {
			for _, cp := range []int{0, 1, 3} {
				cfg := &StepConfig{}
				cfg.Shape.Dtype, cfg.Shape.FP8Recipe, cfg.Shape.CP = dt, rc, cp
				cfg.Shape.MicroBatch, cfg.Shape.Seq, cfg.Model.Hidden = 3, 4097, 8192
				b := &builder{cfg: cfg}
				b.setTPBytes()
				for _, op := range ops {
					for _, in := range []bool{false, true} {
						if got, want := b.tpBytes(op, in), tpBytesOf(cfg, op, in); got != want {
							t.Errorf("%v %v cp %d: tpBytes(%v, %v) = %v, want %v", dt, rc, cp, op, in, got, want)
						}
						n++
					}
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no case run")
	}
}
