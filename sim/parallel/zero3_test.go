package parallel

import (
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
			if task.Name == "fsdp_param_gather_fwd" && task.Layer == 0 {
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
			switch task.Name {
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
