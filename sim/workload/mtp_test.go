package workload

import (
	"math"
	"strings"
	"testing"
)

// TestMTPParamsAndFLOPs: one multi-token-prediction module adds, by hand,
// its MoE layer (DeepSeek-V3's 61st layer), eh_proj 2h² and three RMSNorms
// to the parameters, and to the model FLOPs per token 6·(the layer's
// active matmul weights + 2h² + V·h) + 3·its attention — Megatron-LM's
// num_floating_point_operations (training.py at 9c5258f109) less its 18h
// norm term. DeepSeek-V3's model card gives 14B for the module with its
// own embedding and head copies (2·V·h = 1.85B): 11.7 + 1.85 ≈ 13.5B.
func TestMTPParamsAndFLOPs(t *testing.T) {
	base, err := Preset("deepseek-v3")
	if err != nil {
		t.Fatal(err)
	}
	mtp := base
	mtp.MTPLayers = 1
	h, v := 7168.0, 129280.0
	lp := base.layer(60)
	wantAdd := lp.total() + 2*h*h + 3*h
	p0, p1 := base.Params(), mtp.Params()
	if got := p1.Total - p0.Total; math.Abs(got-wantAdd) > 1 {
		t.Errorf("total params +%.0f, want +%.0f", got, wantAdd)
	}
	if got := p1.Total - p0.Total; got < 11.5e9 || got > 11.9e9 {
		t.Errorf("MTP module without embedding/head copies %.2fB, want ≈11.7B", got/1e9)
	}
	if p1.Embedding != p0.Embedding {
		t.Errorf("embedding params changed: %v → %v (MTP shares them)", p0.Embedding, p1.Embedding)
	}
	const seq = 4096
	wantF := 6*(lp.attnMatmul+lp.mlpActive+lp.router+2*h*h+v*h) + 3*base.attnFLOPsPerToken(seq)
	if got := mtp.ModelFLOPsPerToken(seq) - base.ModelFLOPsPerToken(seq); math.Abs(got-wantF) > 1e-6*wantF {
		t.Errorf("model FLOPs per token +%.4g, want +%.4g", got, wantF)
	}
	// Full recompute redoes the MTP layer's forward but not its head.
	wantH := wantF + 2*(lp.attnMatmul+lp.mlpActive+lp.router+2*h*h) + base.attnFLOPsPerToken(seq)
	gotH := mtp.HardwareFLOPsPerToken(seq, RecomputeFull) - base.HardwareFLOPsPerToken(seq, RecomputeFull)
	if math.Abs(gotH-wantH) > 1e-6*wantH {
		t.Errorf("hardware FLOPs per token (full recompute) +%.4g, want +%.4g", gotH, wantH)
	}
	if !mtp.IsMoELayer(61) || !mtp.IsMTPLayer(61) || mtp.IsMTPLayer(60) || base.IsMoELayer(61) || mtp.IsMoELayer(62) {
		t.Error("layer 61 must be the MTP module's MoE layer, and only with mtp_layers 1")
	}
	d, e := mtp.LayerParams(61)
	d60, e60 := mtp.LayerParams(60)
	if e != e60 || math.Abs(d-d60-(2*h*h+3*h)) > 1 {
		t.Errorf("LayerParams(61) = %v, %v; want layer 60's + eh_proj and norms", d, e)
	}
}

// TestMTPOps: the module's layer starts with the embedding lookup, the two
// norms, the concat and eh_proj (M = tokens, N = h/tp, K = 2h), then runs
// layer 60's ops; the head runs once more with its own names; the saved
// activations grow by the inputs kept.
func TestMTPOps(t *testing.T) {
	m, _ := Preset("deepseek-v3")
	m.MTPLayers = 1
	s := Shape{MicroBatch: 1, Seq: 4096, TP: 2, EP: 8, Dtype: BF16, FlashAttention: true}
	ops := m.LayerOps(61, s, Forward)
	want := []string{"mtp_embedding", "mtp_enorm", "mtp_hnorm", "mtp_concat", "mtp_eh_proj"}
	if len(ops) < len(want) {
		t.Fatalf("%d ops", len(ops))
	}
	for i, n := range want {
		if ops[i].Name != n {
			t.Fatalf("op %d = %s, want %s", i, ops[i].Name, n)
		}
	}
	if eh := ops[4]; eh.M != 4096 || eh.N != 7168/2 || eh.K != 2*7168 || eh.Class != ClassGEMM {
		t.Errorf("eh_proj %d×%d×%d class %v", eh.M, eh.N, eh.K, eh.Class)
	}
	rest := m.LayerOps(60, s, Forward)
	if len(ops)-len(want) != len(rest) {
		t.Errorf("MTP layer has %d ops after its inputs, layer 60 has %d", len(ops)-len(want), len(rest))
	}
	if m.LayerOps(62, s, Forward) != nil {
		t.Error("layer 62 is outside the stack")
	}
	heads := 0
	for _, o := range m.HeadOps(s, Backward) {
		if strings.HasSuffix(o.Name, "lm_head_dgrad") {
			heads++
		}
	}
	if heads != 2 {
		t.Errorf("%d LM head passes in the backward, want 2 (main + MTP)", heads)
	}
	extra := m.LayerActivationBytes(61, s, RecomputeNone) - m.LayerActivationBytes(60, s, RecomputeNone)
	tok, h := 4096.0, 7168.0
	if want := 2*tok*h*2 + 2*tok*h*2; math.Abs(extra-want) > 1 {
		t.Errorf("MTP layer keeps %v more bytes, want %v (two inputs + eh_proj's 2h input)", extra, want)
	}
}

// TestRecomputeMLAUpProj: selective recompute of mla_up_proj redoes q_up,
// kv_up (with their FP8 casts) and the RoPE before the backward, and drops
// the query, key and value heads from the saved activations — by hand,
// tokens × heads/tp × (2·192 + 128) bf16 bytes for DeepSeek-V3.
func TestRecomputeMLAUpProj(t *testing.T) {
	m, _ := Preset("deepseek-v3")
	s := Shape{MicroBatch: 1, Seq: 4096, TP: 2, EP: 8, Dtype: BF16, FlashAttention: true,
		RecomputeModules: RecomputeMLAUpProj}
	var names []string
	for _, o := range m.RecomputeOps(10, s, RecomputeSelective) {
		names = append(names, o.Name)
	}
	if strings.Join(names, ",") != "q_up,kv_up,rope" {
		t.Errorf("recomputed ops %v, want q_up, kv_up, rope", names)
	}
	keep := s
	keep.RecomputeModules = RecomputeCoreAttn
	saved := m.LayerActivationBytes(10, keep, RecomputeSelective) - m.LayerActivationBytes(10, s, RecomputeSelective)
	if want := 4096.0 * 64 * (2*192 + 128) * 2; math.Abs(saved-want) > 1 {
		t.Errorf("mla_up_proj saves %v bytes per layer, want %v", saved, want)
	}
	llama, _ := Preset("llama3-8b")
	if ops := llama.RecomputeOps(0, s, RecomputeSelective); len(ops) != 0 {
		t.Errorf("mla_up_proj recomputes %d ops of a non-MLA model", len(ops))
	}
}
