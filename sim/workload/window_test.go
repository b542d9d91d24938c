package workload

import (
	"math"
	"strings"
	"testing"
)

// TestCausalKeys: the mean keys per query of causal attention over seq
// tokens with a sliding window w. Hand-computed: seq 8, w 0 → (8+1)/2 = 4.5;
// w 3 → (1+2+3 + 5·3)/8 = 21/8 = 2.625; w ≥ seq is full attention.
func TestCausalKeys(t *testing.T) {
	for _, c := range []struct {
		seq, w int
		want   float64
	}{{8, 0, 4.5}, {8, 3, 2.625}, {8, 8, 4.5}, {8, 100, 4.5}, {4096, 128, (128.0*129/2 + (4096-128)*128) / 4096}} {
		if got := causalKeys(c.seq, c.w); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("causalKeys(%d, %d) = %v, want %v", c.seq, c.w, got, c.want)
		}
	}
}

// TestWindowLayers: GPT-OSS alternates banded and full attention starting
// banded (FullAttentionEvery 2: layers 1, 3, … full); without a window every
// layer is full.
func TestWindowLayers(t *testing.T) {
	m, err := Preset("gpt-oss-120b")
	if err != nil {
		t.Fatal(err)
	}
	for l, want := range []int{128, 0, 128, 0} {
		if got := m.Window(l); got != want {
			t.Errorf("gpt-oss-120b layer %d: window %d, want %d", l, got, want)
		}
	}
	all := Model{AttentionWindow: 4096}
	dense := Model{}
	if all.Window(5) != 4096 || dense.Window(5) != 0 {
		t.Errorf("window-every-layer %d, none %d", all.Window(5), dense.Window(5))
	}
}

// TestWindowedAttentionFLOPs: a banded layer's FlashAttention kernel runs
// causalKeys(seq, w)/((seq+1)/2) of a full layer's FLOPs, its projections
// the same; the model-FLOPs convention counts a banded layer's attention at
// w keys instead of seq.
func TestWindowedAttentionFLOPs(t *testing.T) {
	m, err := Preset("gpt-oss-20b")
	if err != nil {
		t.Fatal(err)
	}
	s := Shape{MicroBatch: 1, Seq: 4096, Dtype: BF16, FlashAttention: true}
	banded, _ := opNamed(m.LayerOps(0, s, Forward), "flash_attn")
	full, _ := opNamed(m.LayerOps(1, s, Forward), "flash_attn")
	want := causalKeys(4096, 128) / causalKeys(4096, 0)
	if got := banded.FLOPs / full.FLOPs; math.Abs(got-want) > 1e-12 || full.FLOPs == 0 {
		t.Errorf("banded/full attention FLOPs %v, want %v", got, want)
	}
	qb, _ := opNamed(m.LayerOps(0, s, Forward), "qkv_proj")
	qf, _ := opNamed(m.LayerOps(1, s, Forward), "qkv_proj")
	if qb.FLOPs != qf.FLOPs {
		t.Error("the window changed the projections")
	}
	noWin := m
	noWin.AttentionWindow, noWin.FullAttentionEvery = 0, 0
	// 12 banded + 12 full layers: the convention saves 12 layers' attention
	// at (4096 − 128) keys, 3 × 2·keys·heads·(d_qk + d_v) per token each.
	d := noWin.ModelFLOPsPerToken(4096) - m.ModelFLOPsPerToken(4096)
	wantD := 12 * 3 * 2 * float64(4096-128) * 64 * (64 + 64)
	if math.Abs(d-wantD) > 1e-6*wantD {
		t.Errorf("model FLOPs saved by the window %v, want %v", d, wantD)
	}
}

// TestWindowValidate: the window fields' errors name the field.
func TestWindowValidate(t *testing.T) {
	m, _ := Preset("llama3-8b")
	m.AttentionWindow = -1
	if err := m.Validate(); err == nil || err.Error()[:len("model.attention_window")] != "model.attention_window" {
		t.Errorf("negative window: %v", err)
	}
	m.AttentionWindow, m.FullAttentionEvery = 0, 2
	if err := m.Validate(); err == nil || err.Error()[:len("model.full_attention_every")] != "model.full_attention_every" {
		t.Errorf("full_attention_every without a window: %v", err)
	}
}

// TestRecomputeModules: Megatron's fine-grained selective recompute. With
// moe_act the routed experts' activation output (te·f·a) is not kept and
// the activation runs again; with layernorm the two norm outputs (2·T·h·a
// without sequence parallelism) are not kept and the norms run again; the
// default (zero) set is the attention core, which adds nothing next to
// FlashAttention.
func TestRecomputeModules(t *testing.T) {
	m, err := Preset("qwen3-30b-a3b")
	if err != nil {
		t.Fatal(err)
	}
	s := Shape{MicroBatch: 1, Seq: 1024, Dtype: BF16, FlashAttention: true}
	base := m.LayerActivationBytes(0, s, RecomputeSelective)
	act, norm := s, s
	act.RecomputeModules = RecomputeMoEAct
	norm.RecomputeModules = RecomputeLayerNorm
	// te = 1024 tokens × top-8 = 8192 rows of the 768-wide activation, 2 B.
	if d := base - m.LayerActivationBytes(0, act, RecomputeSelective); d != 8192*768*2 {
		t.Errorf("moe_act saves %v bytes, want %v", d, 8192*768*2)
	}
	if d := base - m.LayerActivationBytes(0, norm, RecomputeSelective); d != 2*1024*2048*2 {
		t.Errorf("layernorm saves %v bytes, want %v", d, 2*1024*2048*2)
	}
	if m.LayerActivationBytes(0, act, RecomputeNone) != m.LayerActivationBytes(0, s, RecomputeNone) {
		t.Error("modules change the memory without selective recompute")
	}
	names := func(ops []Op) []string {
		var n []string
		for _, o := range ops {
			n = append(n, o.Name)
		}
		return n
	}
	if ops := m.RecomputeOps(0, s, RecomputeSelective); ops != nil {
		t.Errorf("core_attn with flash attention recomputes %v", names(ops))
	}
	both := s
	both.RecomputeModules = RecomputeMoEAct | RecomputeLayerNorm
	got := strings.Join(names(m.RecomputeOps(0, both, RecomputeSelective)), ",")
	if got != "attn_norm,moe_norm,expert_act" {
		t.Errorf("moe_act+layernorm recompute %q, want attn_norm,moe_norm,expert_act", got)
	}
}

// TestFP8SavedInputs: Transformer Engine's FP8 recipes keep a GEMM's
// quantised input for the backward, torchao's the bf16 one. Llama 3 8B at
// micro-batch 1, sequence 1024, no TP: the GEMM inputs kept are the two
// norm outputs (1024 × 4096 each) and the second MLP GEMM's input
// (1024 × 14336); with delayed scaling each is 1 byte instead of 2, with
// MXFP8 1 + 1/32, and tensorwise keeps all of them in bf16.
func TestFP8SavedInputs(t *testing.T) {
	m, err := Preset("llama3-8b")
	if err != nil {
		t.Fatal(err)
	}
	s := Shape{MicroBatch: 1, Seq: 1024, Dtype: FP8, FlashAttention: true}
	tw := m.LayerActivationBytes(0, s, RecomputeNone)
	elems := 2*1024*4096 + 1024*14336.0
	for _, c := range []struct {
		r    FP8Recipe
		save float64
	}{{FP8Delayed, elems}, {FP8Current, elems}, {FP8MXFP8, elems * (1 - 1.0/32)}, {FP8Rowwise, 0}} {
		s.FP8Recipe = c.r
		if d := tw - m.LayerActivationBytes(0, s, RecomputeNone); math.Abs(d-c.save) > 1e-6 {
			t.Errorf("%v keeps %v bytes less than tensorwise, want %v", c.r, d, c.save)
		}
	}
	s.Dtype, s.FP8Recipe = BF16, FP8Tensorwise
	if bf := m.LayerActivationBytes(0, s, RecomputeNone); bf != tw {
		t.Errorf("tensorwise keeps %v bytes, bf16 %v: torchao saves the bf16 inputs", tw, bf)
	}
}
