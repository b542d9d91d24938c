package parallel

import (
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/units"
	"github.com/simtrain/simtrain/sim/workload"
)

// cpPricer makes every priced block of a layer take one millisecond and
// every CP collective cp.
type cpPricer struct{ cp engine.Time }

func (cpPricer) OpsTime(_ int, ops []workload.Op) engine.Time {
	return unitPricer{unit: engine.Millisecond}.OpsTime(0, ops)
}

func (p cpPricer) CommTime(k GroupKind, _ int, _ collectives.Op, _ units.Bytes) engine.Time {
	if k == GroupCP {
		return p.cp
	}
	return 0
}

func (cpPricer) SendTime(int, int, units.Bytes) engine.Time { return 0 }

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
		Schedule: pipeline.OneFOneB, Virtual: 1, Microbatches: 2, Chunks: chunks, Optimizer: "adamw",
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
				n[task.Name.String()] = append(n[task.Name.String()], task.Bytes)
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
		// Transformer Engine's p2p ring: one rank's bf16 K/V (262,144
		// bytes repeated) per step, cp − 1 = 1 step in the all-gather
		// convention cp·s; backward K/V + dK/dV (2s per step), then dK/dV
		// home (cp·s/(cp−1)).
		{workload.CPP2P, true, map[string][]float64{
			"cp_kv_ring": rep(524288), "cp_kv_recompute_ring": rep(524288),
			"cp_kv_dkv_ring": rep(1048576), "cp_dkv_send_last": rep(524288)}},
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
		waitsFor := map[workload.CPImpl][][2]string{
			workload.CPPyTorch: {{"attn_pre_bwd", "cp_dkv_rotate_last"}},
			workload.CPP2P: {{"attn_core_fwd_last", "cp_kv_ring"}, {"attn_core_recompute_last", "cp_kv_recompute_ring"},
				{"attn_core_bwd_last", "cp_kv_dkv_ring"}, {"attn_pre_bwd", "cp_dkv_send_last"}},
		}[c.impl]
		for _, w := range waitsFor {
			found := 0
			for i, task := range p.Tasks {
				if task.Name.String() != w[0] {
					continue
				}
				found++
				waits := false
				for _, d := range p.Deps(i) {
					waits = waits || p.Tasks[d].Name.String() == w[1]
				}
				if !waits {
					t.Errorf("%v: %s (layer %d, micro-batch %d) does not wait for %s", c.impl, w[0], task.Layer, task.Micro, w[1])
				}
			}
			if found != layerMBs {
				t.Errorf("%v: %d %s tasks, want %d", c.impl, found, w[0], layerMBs)
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

// TestRingStepsPipeline checks ringSteps' timing by hand: cp 4 steps of
// compute c = 1 ms each (a 4 ms core) with per-step transfers r end after
// max(c, r)·3 + c: 4 ms when the transfers hide (r = 0.5 ms), 3·2 + 1 = 7
// ms when they do not (r = 2 ms; the all-gather convention's cp·step bytes
// take 3r on the CP stream).
func TestRingStepsPipeline(t *testing.T) {
	for _, c := range []struct {
		ring, want engine.Time
	}{
		{3 * engine.Millisecond / 2, 4 * engine.Millisecond},
		{6 * engine.Millisecond, 7 * engine.Millisecond},
	} {
		l, err := NewLayout(1, 4, 1, 1, 1, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
		if err != nil {
			t.Fatal(err)
		}
		cfg := &StepConfig{Layout: l}
		pr := cpPricer{cp: c.ring}
		b := &builder{cfg: cfg, prog: &Program{}, pr: pr, cache: newBlockCache(cfg, pr, 0, nil)}
		for i := range b.last {
			b.last[i] = -1
		}
		b.tpRecent, b.tpOlder, b.pendingBlock, b.epRecent, b.epOlder, b.reload = -1, -1, -1, -1, -1, -1
		core := blockCost{dur: 4 * engine.Millisecond}
		b.ringSteps(KindForward, "attn_core_fwd", "cp_kv_ring", 0, 0, 0, core, blockCost{}, false, 1, -1)
		b.prog.depOff = append(b.prog.depOff, int32(len(b.prog.deps)))
		b.prog.finish()
		x := NewSymmetric(engine.New(), l, []*Program{b.prog})
		if err := x.Run(); err != nil {
			t.Fatal(err)
		}
		_, _, _, _, end := x.Instance(0)
		if got := slices.Max(end); got != c.want {
			t.Errorf("transfers %v in all: ring ends at %v, want %v", c.ring, got, c.want)
		}
	}
}
