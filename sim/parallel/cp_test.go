package parallel

import (
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/workload"
)

// cpPricer makes every priced block of a layer take one millisecond and
// every CP collective cp.
type cpPricer struct{ cp engine.Time }

func (cpPricer) OpsTime(ops []workload.Op) engine.Time {
	return unitPricer{unit: engine.Millisecond}.OpsTime(ops)
}

func (p cpPricer) CommTime(k GroupKind, _ int, _ collectives.Op, _ float64) engine.Time {
	if k == GroupCP {
		return p.cp
	}
	return 0
}

func (cpPricer) SendTime(int, int, float64) engine.Time { return 0 }

// cpProgram builds one step of a 2-layer GQA model (16 query heads, 4 KV
// heads of 64) at CP 2, sequence 128, two micro-batches, full recomputation.
func cpProgram(t *testing.T, impl workload.CPImpl, repeat bool, pr Pricer) (engine.Time, *Program) {
	t.Helper()
	m := workload.Model{Name: "gqa", Layers: 2, Hidden: 1024, Heads: 16, KVHeads: 4, Vocab: 32000}
	m.Fill()
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	l, err := NewLayout(1, 2, 1, 1, 1, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
	if err != nil {
		t.Fatal(err)
	}
	chunks, _ := Partition(2, 1, 1, 0, 0)
	cfg := &StepConfig{Layout: l, Model: m, Recompute: workload.RecomputeFull,
		Shape: workload.Shape{MicroBatch: 1, Seq: 128, Dtype: workload.BF16, CP: 2, FlashAttention: true,
			RepeatKV: repeat, CPImpl: impl},
		Schedule: OneFOneB, Virtual: 1, Microbatches: 2, Chunks: chunks, Optimizer: "adamw",
		ParamDtype: workload.BF16, GradDtype: workload.BF16, MasterDtype: workload.FP32, Steps: 1,
		LayerParams: func(int) (float64, float64) { return 1e6, 0 },
	}
	return stepEnd(t, cfg, pr)
}

// TestCPPyTorchRing checks the task graph of PyTorch's ring attention
// against the all-gather implementation, by hand. K and V of the full
// sequence at this rank's heads: 2·128·4·64·2 = 131,072 bytes, or 524,288
// repeated to 16 heads. Forward and recomputed forward all-gather them;
// the backward all-gathers them again and rotates one rank's fp32 dK and
// dV (2·64·16·64·4 = 524,288 bytes) after each of the two steps — the
// first as an all-gather of 2 × that, the last as one more ring step, also
// 2 × that in the all-gather convention — where the all-gather
// implementation reduce-scatters dK and dV once. The attention's input
// gradient waits for the last rotation.
func TestCPPyTorchRing(t *testing.T) {
	count := func(p *Program) map[string][]float64 {
		n := map[string][]float64{}
		for _, task := range p.Tasks {
			if task.Group == GroupCP && task.Kind.IsComm() {
				n[task.Name] = append(n[task.Name], task.Bytes)
			}
		}
		return n
	}
	const layerMBs = 2 * 2
	rep := func(b float64) []float64 { return slices.Repeat([]float64{b}, layerMBs) }
	for _, c := range []struct {
		impl   workload.CPImpl
		repeat bool
		want   map[string][]float64
	}{
		{workload.CPAllGather, false, map[string][]float64{
			"cp_kv_gather": rep(131072), "cp_kv_recompute_gather": rep(131072), "cp_kv_grad_scatter": rep(131072)}},
		{workload.CPAllGather, true, map[string][]float64{
			"cp_kv_gather": rep(524288), "cp_kv_recompute_gather": rep(524288), "cp_kv_grad_scatter": rep(524288)}},
		{workload.CPPyTorch, true, map[string][]float64{
			"cp_kv_gather": rep(524288), "cp_kv_recompute_gather": rep(524288), "cp_kv_bwd_gather": rep(524288),
			"cp_dkv_rotate": rep(1048576), "cp_dkv_rotate_last": rep(1048576)}},
	} {
		_, p := cpProgram(t, c.impl, c.repeat, cpPricer{})
		got := count(p)
		if len(got) != len(c.want) {
			t.Errorf("%v repeat %v: CP collectives %v, want %v", c.impl, c.repeat, got, c.want)
			continue
		}
		for name, b := range c.want {
			if !slices.Equal(got[name], b) {
				t.Errorf("%v repeat %v: %s bytes %v, want %v", c.impl, c.repeat, name, got[name], b)
			}
		}
		if c.impl != workload.CPPyTorch {
			continue
		}
		for i, task := range p.Tasks {
			if task.Name != "attn_pre_bwd" {
				continue
			}
			waits := false
			for _, d := range p.Deps(i) {
				waits = waits || p.Tasks[d].Name == "cp_dkv_rotate_last"
			}
			if !waits {
				t.Errorf("attn_pre_bwd (layer %d, micro-batch %d) does not wait for the last dK/dV rotation", task.Layer, task.Micro)
			}
		}
	}
	// With CP collectives that take time, PyTorch's ring exposes more of
	// them (the backward's gather and its last rotation) than the
	// all-gather implementation's reduce-scatter.
	a, _ := cpProgram(t, workload.CPAllGather, true, cpPricer{cp: 3 * engine.Millisecond})
	b, _ := cpProgram(t, workload.CPPyTorch, true, cpPricer{cp: 3 * engine.Millisecond})
	if !(b > a) {
		t.Errorf("step with PyTorch's ring %v, with all-gather %v: want longer", b, a)
	}
}
