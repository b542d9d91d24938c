package workload

import (
	"math"
	"testing"

	"github.com/simtrain/simtrain/sim/pipeline"
)

// TestOffloadBytes: by hand, per micro-batch of one DeepSeek-V3 layer at
// 4,096 tokens, TP 1, EP 8: expert_fc1 offloads the routed tokens' FP8
// GEMM input (4,096·8·7,168 bytes with MXFP8's saved FP8 copy, bf16 here:
// ×2), only on MoE layers; core_attn the query, key and value heads, none
// when mla_up_proj recomputes them; full recompute leaves only the layer
// input (attn_norm).
func TestOffloadBytes(t *testing.T) {
	m, _ := Preset("deepseek-v3")
	s := Shape{MicroBatch: 1, Seq: 4096, TP: 1, EP: 8, Dtype: BF16, FlashAttention: true, Offload: OffloadExpertFC1}
	if got, want := m.OffloadBytes(10, s, RecomputeNone), 4096.0*8*7168*2; got != want {
		t.Errorf("expert_fc1 on a MoE layer: %v bytes, want %v", got, want)
	}
	if got := m.OffloadBytes(0, s, RecomputeNone); got != 0 {
		t.Errorf("expert_fc1 on a dense layer: %v bytes, want 0", got)
	}
	s.Offload = OffloadCoreAttn
	qkv := 4096.0 * 128 * (192 + 192 + 128) * 2
	if got := m.OffloadBytes(10, s, RecomputeNone); got != qkv {
		t.Errorf("core_attn: %v bytes, want %v", got, qkv)
	}
	up := s
	up.RecomputeModules = RecomputeMLAUpProj
	if got := m.OffloadBytes(10, up, RecomputeSelective); got != 0 {
		t.Errorf("core_attn with mla_up_proj recomputed: %v bytes, want 0", got)
	}
	s.Offload = OffloadAttnNorm | OffloadCoreAttn | OffloadExpertFC1
	if got, want := m.OffloadBytes(10, s, RecomputeFull), 4096.0*7168*2; got != want {
		t.Errorf("full recompute: %v bytes, want the layer input %v", got, want)
	}
	if (Shape{}).Offload != 0 || m.OffloadBytes(10, Shape{MicroBatch: 1, Seq: 4096, Dtype: BF16}, RecomputeNone) != 0 {
		t.Error("no offload modules must offload nothing")
	}
}

// TestOffloadMemory: the offloaded bytes leave every in-flight
// micro-batch's activations but two layers' worth (the reload ahead of the
// backward); optimizer-state offloading takes master weights and states
// out of the forward/backward peak, and the step's own peak (weights,
// gradients, states) counts when larger.
func TestOffloadMemory(t *testing.T) {
	m, _ := Preset("deepseek-v3")
	in := MemoryInput{Model: m, Shape: Shape{MicroBatch: 1, Seq: 4096, TP: 1, EP: 64, Dtype: BF16, FlashAttention: true},
		Layers: 4, LayerIDs: []int{10, 11, 12, 13}, PP: 4, DP: 64, VirtualStages: 1, Stage: 0, Schedule: pipeline.OneFOneB,
		Microbatches: 32, Zero: 1, Optimizer: "adamw", MasterDtype: FP32, GradDtype: FP32}
	base := StageMemory(in)
	off := in
	off.Shape.Offload = OffloadExpertFC1
	o := StageMemory(off)
	per := m.OffloadBytes(10, off.Shape, RecomputeNone)
	inflight := pipeline.OneFOneB.InFlight(pipeline.Shape{Stages: 4, Microbatches: 32, Virtual: 1}, 0)
	if want := base.Activations - (4*inflight-2)*per; math.Abs(o.Activations-want) > 1 {
		t.Errorf("activations %v, want %v", o.Activations, want)
	}
	opt := in
	opt.OffloadOptimizer = true
	st := StageMemory(opt)
	if st.Optimizer != 0 || st.Activations != base.Activations || !(st.Total < base.Total) {
		t.Errorf("optimizer offload: optimizer %v, activations %v (base %v), total %v (base %v)",
			st.Optimizer, st.Activations, base.Activations, st.Total, base.Total)
	}
	short := opt
	short.Microbatches, short.Shape.Seq = 1, 128 // few activations: the step is the peak
	if sm := StageMemory(short); sm.Activations != 0 || sm.Optimizer == 0 {
		t.Errorf("step peak: optimizer %v, activations %v; want the states and no activations", sm.Optimizer, sm.Activations)
	}
}
