package workload

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// smallGPT is a GPT-3-style model small enough for exact hand arithmetic.
func smallGPT() Model {
	m := Model{Name: "gpt-test", Layers: 3, Hidden: 256, Heads: 4, Vocab: 1000,
		Activation: "gelu", Norm: "layernorm", Bias: true, TiedEmbeddings: true, MaxPositions: 128, Dropout: true}
	m.Fill()
	return m
}

// sumFLOPs adds the FLOPs of ops of the given class.
func sumFLOPs(ops []Op, class OpClass) float64 {
	f := 0.0
	for _, o := range ops {
		if o.Class == class {
			f += o.FLOPs
		}
	}
	return f
}

// stepGEMMFLOPs is the GEMM FLOPs of one micro-batch through every layer and
// the LM head, forward and backward, plus recompute.
func stepGEMMFLOPs(m Model, s Shape, r Recompute) float64 {
	f := 0.0
	for l := range m.Layers {
		f += sumFLOPs(m.LayerOps(l, s, Forward), ClassGEMM)
		f += sumFLOPs(m.LayerOps(l, s, Backward), ClassGEMM)
		f += sumFLOPs(m.RecomputeOps(l, s, r), ClassGEMM)
	}
	f += sumFLOPs(m.HeadOps(s, Forward), ClassGEMM) + sumFLOPs(m.HeadOps(s, Backward), ClassGEMM)
	return f
}

func near(a, b, rel float64) bool { return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b)) }

// TestMegatronClosedForm: with unfused attention (every score computed) the
// GEMM kernels of a GPT step add up to Megatron's model FLOPs
// 72·B·s·l·h²·(1 + s/6h + V/12lh) (Narayanan et al. 2021, Appendix), and
// with full recompute to the SC21 hardware FLOPs 96·B·s·l·h²·(1 + s/6h +
// V/16lh); ModelFLOPsPerToken and HardwareFLOPsPerToken agree.
func TestMegatronClosedForm(t *testing.T) {
	for _, c := range []struct {
		m    Model
		b, s int
	}{
		{smallGPT(), 2, 128},
		{func() Model { m, _ := Preset("gpt3-175b"); return m }(), 1, 2048},
		{func() Model { m, _ := Preset("gpt3-1.3b"); return m }(), 4, 2048},
	} {
		m := c.m
		B, s, l, h, V := float64(c.b), float64(c.s), float64(m.Layers), float64(m.Hidden), float64(m.Vocab)
		megatron := 72 * B * s * l * h * h * (1 + s/(6*h) + V/(12*l*h))
		sc21 := 96 * B * s * l * h * h * (1 + s/(6*h) + V/(16*l*h))
		sh := Shape{MicroBatch: c.b, Seq: c.s, Dtype: BF16}
		if got := stepGEMMFLOPs(m, sh, RecomputeNone); !near(got, megatron, 1e-12) {
			t.Errorf("%s: GEMM FLOPs %.6g, Megatron %.6g", m.Name, got, megatron)
		}
		if got := m.ModelFLOPsPerToken(c.s) * B * s; !near(got, megatron, 1e-12) {
			t.Errorf("%s: ModelFLOPsPerToken·B·s %.6g, Megatron %.6g", m.Name, got, megatron)
		}
		if got := stepGEMMFLOPs(m, sh, RecomputeFull); !near(got, sc21, 1e-12) {
			t.Errorf("%s: GEMM FLOPs with full recompute %.6g, SC21 %.6g", m.Name, got, sc21)
		}
		if got := m.HardwareFLOPsPerToken(c.s, RecomputeFull) * B * s; !near(got, sc21, 1e-12) {
			t.Errorf("%s: HardwareFLOPsPerToken·B·s %.6g, SC21 %.6g", m.Name, got, sc21)
		}
		// Selective recompute redoes the two attention GEMMs: + 4·B·s²·l·h.
		sel := megatron + 4*B*s*s*l*h
		if got, hw := stepGEMMFLOPs(m, sh, RecomputeSelective), m.HardwareFLOPsPerToken(c.s, RecomputeSelective)*B*s; !near(got, sel, 1e-12) || !near(hw, sel, 1e-12) {
			t.Errorf("%s: selective GEMM FLOPs %.6g, hardware FLOPs %.6g, want %.6g", m.Name, got, hw, sel)
		}
	}
}

// TestSixND: for llama3-8b the model FLOPs per token are 6 × the matmul
// parameters (all but the 0.525B input embedding and 0.27M norm weights)
// plus 12·l·h·s, since 32 heads × (128 + 128) = 2h. At s = 8192:
// 6·7,504,658,432 + 12·32·4096·8192 = 45,027,950,592 + 12,884,901,888.
func TestSixND(t *testing.T) {
	m, _ := Preset("llama3-8b")
	p := m.Params()
	if want := p.Total - 128256*4096 - (2*32+1)*4096; p.Matmul != want {
		t.Errorf("llama3-8b matmul params %.0f, want %.0f", p.Matmul, want)
	}
	want := 45027950592.0 + 12884901888.0
	if got := m.ModelFLOPsPerToken(8192); got != want {
		t.Errorf("ModelFLOPsPerToken = %.0f, want %.0f", got, want)
	}
	// 6·N·D with N the total count is within 7% (the embedding is no matmul).
	if r := 6 * p.Total / (6 * p.Matmul); r < 1.06 || r > 1.08 {
		t.Errorf("6N/6N_matmul = %.3f", r)
	}
	// Selective recompute adds the attention core: 4·l·h·s per token.
	if got := m.HardwareFLOPsPerToken(8192, RecomputeSelective) - want; got != 4*32*4096*8192 {
		t.Errorf("selective adds %.0f", got)
	}
}

// TestFlashAttentionFLOPs: causal FlashAttention executes sl·(s+1)/2 scores
// per head: b=1, s=4096, 32 heads, d=128 → 2·32·4096·2048.5·256 =
// 137,472,507,904 forward, 2.5× that backward.
func TestFlashAttentionFLOPs(t *testing.T) {
	m, _ := Preset("llama3-8b")
	s := Shape{MicroBatch: 1, Seq: 4096, Dtype: BF16, FlashAttention: true}
	fwd := sumFLOPs(m.LayerOps(0, s, Forward), ClassAttention)
	if fwd != 137472507904 {
		t.Errorf("flash forward FLOPs %.0f", fwd)
	}
	if bwd := sumFLOPs(m.LayerOps(0, s, Backward), ClassAttention); bwd != 2.5*fwd {
		t.Errorf("flash backward FLOPs %.0f, want 2.5× forward", bwd)
	}
	// The unfused kernels compute all s² scores: 2·(2·32·4096·4096·128).
	s.FlashAttention = false
	var core float64
	for _, o := range m.LayerOps(0, s, Forward) {
		if o.Block == BlockAttnCore && o.Class == ClassGEMM {
			core += o.FLOPs
		}
	}
	if core != 4*32*4096.0*4096*128 {
		t.Errorf("unfused attention GEMM FLOPs %.0f", core)
	}
}

// TestSplitsConserveWork: splitting by TP, CP or EP divides the per-GPU
// GEMM and attention FLOPs by the degree (metamorphic: the group does the
// same work as one GPU).
func TestSplitsConserveWork(t *testing.T) {
	for _, c := range []struct {
		preset string
		split  Shape
		n      float64
	}{
		{"llama3-8b", Shape{TP: 4}, 4},
		{"llama3-8b", Shape{TP: 4, SP: true}, 4},
		{"llama3-8b", Shape{CP: 2}, 2},
		{"llama3-70b", Shape{TP: 8, CP: 2}, 16},
		{"deepseek-v3", Shape{TP: 2}, 2},  // replicated MLA down projections and router: see below
		{"mixtral-8x7b", Shape{EP: 8}, 1}, // EP: each rank processes its own tokens' worth
	} {
		m, _ := Preset(c.preset)
		base := Shape{MicroBatch: 2, Seq: 4096, Dtype: BF16, FlashAttention: true}
		sp := c.split
		sp.MicroBatch, sp.Seq, sp.Dtype, sp.FlashAttention = 2, 4096, BF16, true
		layer := m.Layers - 1
		for _, class := range []OpClass{ClassGEMM, ClassAttention} {
			one := sumFLOPs(m.LayerOps(layer, base, Forward), class)
			got := sumFLOPs(m.LayerOps(layer, sp, Forward), class) * c.n
			if c.preset == "deepseek-v3" && class == ClassGEMM {
				// q_down (7168×1536), kv_down (7168×576) and the router
				// (7168×256) run on every TP rank.
				tok := 2 * 4096.0
				one += tok * 2 * 7168 * (1536 + 576 + 256) * (c.n - 1)
			}
			if !near(got, one, 1e-9) {
				t.Errorf("%s %+v class %d: %.6g × %v = %.6g, one GPU %.6g", c.preset, c.split, class, got/c.n, c.n, got, one)
			}
		}
	}
}

// TestMoEExpertTokens: mixtral-8x7b, b=1, s=4096, EP 8: each GPU holds one
// expert and receives 4096·top_k 2 = 8192 tokens (balanced); its fc1 is
// 8192×(2·14336)×4096. Capacity factor 1.25 scales the tokens.
func TestMoEExpertTokens(t *testing.T) {
	m, _ := Preset("mixtral-8x7b")
	s := Shape{MicroBatch: 1, Seq: 4096, Dtype: BF16, EP: 8, FlashAttention: true}
	ops := m.LayerOps(0, s, Forward)
	i := slices.IndexFunc(ops, func(o Op) bool { return o.Name == "expert_fc1" })
	if i < 0 || ops[i].M != 8192 || ops[i].N != 28672 || ops[i].K != 4096 || ops[i].Batch != 1 {
		t.Fatalf("expert_fc1 = %+v", ops[i])
	}
	m.MoE.CapacityFactor = 1.25
	s.EP = 2 // 4 local experts, 4096·2·1.25/4 = 2560 tokens each
	ops = m.LayerOps(0, s, Forward)
	i = slices.IndexFunc(ops, func(o Op) bool { return o.Name == "expert_fc1" })
	if ops[i].M != 2560 || ops[i].Batch != 4 || ops[i].FLOPs != 4*2*2560*28672*4096.0 {
		t.Errorf("expert_fc1 with capacity 1.25, EP 2 = %+v", ops[i])
	}
	// Dispatch message: 4096 tokens × 2 × 1.25 × 4096 × 2 bytes.
	if c := m.Comm(s); c.EPDispatch != 4096*2*1.25*4096*2 {
		t.Errorf("EPDispatch %.0f", c.EPDispatch)
	}
	ds, _ := Preset("deepseek-v3")
	ops = ds.LayerOps(5, Shape{MicroBatch: 1, Seq: 4096, Dtype: BF16, EP: 64, FlashAttention: true}, Forward)
	if !slices.ContainsFunc(ops, func(o Op) bool { return o.Name == "shared_fc1" }) ||
		!slices.ContainsFunc(ds.LayerOps(0, Shape{Seq: 4096, Dtype: BF16}, Forward), func(o Op) bool { return o.Name == "fc1" }) {
		t.Error("deepseek-v3: MoE layers need shared experts and the first three dense MLPs")
	}
}

// blockOrder checks that blocks appear contiguously in the given order.
func blockOrder(t *testing.T, name string, ops []Op, want []Block) {
	t.Helper()
	var seen []Block
	for _, o := range ops {
		if len(seen) == 0 || seen[len(seen)-1] != o.Block {
			seen = append(seen, o.Block)
		}
	}
	if !slices.Equal(seen, want) {
		t.Errorf("%s: block sequence %v, want %v", name, seen, want)
	}
}

func TestBlocksAndBackwardOrder(t *testing.T) {
	dense := []Block{BlockAttnPre, BlockAttnCore, BlockAttnPost, BlockMLP}
	moe := []Block{BlockAttnPre, BlockAttnCore, BlockAttnPost, BlockRouter, BlockExperts, BlockCombine}
	rev := func(b []Block) []Block { r := slices.Clone(b); slices.Reverse(r); return r }
	for _, c := range []struct {
		preset string
		layer  int
		want   []Block
	}{
		{"gpt3-175b", 0, dense}, {"llama3-8b", 5, dense}, {"mixtral-8x7b", 0, moe},
		{"deepseek-v3", 0, dense}, {"deepseek-v3", 3, moe}, {"qwen3-30b-a3b", 1, moe}, {"nemotron-15b", 0, dense},
	} {
		m, _ := Preset(c.preset)
		for _, flash := range []bool{true, false} {
			s := Shape{MicroBatch: 1, Seq: 2048, Dtype: BF16, TP: 2, SP: true, FlashAttention: flash}
			fwd, bwd := m.LayerOps(c.layer, s, Forward), m.LayerOps(c.layer, s, Backward)
			blockOrder(t, c.preset+" fwd", fwd, c.want)
			blockOrder(t, c.preset+" bwd", bwd, rev(c.want))
			for _, o := range fwd {
				if o.Pass != Forward || o.FLOPs < 0 || o.BytesRead <= 0 || o.BytesWritten <= 0 {
					t.Errorf("%s %s: %+v", c.preset, o.Name, o)
				}
			}
			// Backward: the forward names reversed; a GEMM gives dgrad then wgrad.
			var names []string
			for i := len(fwd) - 1; i >= 0; i-- {
				if fwd[i].Class == ClassGEMM {
					names = append(names, fwd[i].Name+"_dgrad", fwd[i].Name+"_wgrad")
				} else {
					names = append(names, fwd[i].Name+"_bwd")
				}
			}
			var got []string
			for _, o := range bwd {
				got = append(got, o.Name)
				if o.Pass != Backward {
					t.Errorf("%s: %s has pass %d", c.preset, o.Name, o.Pass)
				}
			}
			if !slices.Equal(got, names) {
				t.Errorf("%s backward order\n got %v\nwant %v", c.preset, got, names)
			}
		}
	}
}

// TestGEMMBackwardShapes: Y[T×N] = X[T×K]·W[K×N]: dgrad is T×K×N, wgrad K×N×T.
func TestGEMMBackwardShapes(t *testing.T) {
	m, _ := Preset("llama3-8b")
	s := Shape{MicroBatch: 1, Seq: 1024, Dtype: BF16, FlashAttention: true}
	bwd := m.LayerOps(0, s, Backward)
	get := func(n string) Op { return bwd[slices.IndexFunc(bwd, func(o Op) bool { return o.Name == n })] }
	d, w := get("fc2_dgrad"), get("fc2_wgrad") // fc2: 1024×4096×14336
	if d.M != 1024 || d.N != 14336 || d.K != 4096 || w.M != 14336 || w.N != 4096 || w.K != 1024 {
		t.Errorf("fc2 dgrad %dx%dx%d wgrad %dx%dx%d", d.M, d.N, d.K, w.M, w.N, w.K)
	}
	// bytes: dgrad reads dY (1024·4096) and W (14336·4096), writes dX (1024·14336), 2 bytes each.
	if d.BytesRead != 2*(1024*4096+14336*4096) || d.BytesWritten != 2*1024*14336 {
		t.Errorf("fc2_dgrad bytes %v / %v", d.BytesRead, d.BytesWritten)
	}
	// FP8 GEMMs read 1-byte inputs and write 2-byte outputs.
	s.Dtype = FP8
	f := m.LayerOps(0, s, Forward)
	q := f[slices.IndexFunc(f, func(o Op) bool { return o.Name == "qkv_proj" })] // 1024×6144×4096
	if q.BytesRead != 1024*4096+4096*6144 || q.BytesWritten != 2*1024*6144 {
		t.Errorf("fp8 qkv_proj bytes %v / %v", q.BytesRead, q.BytesWritten)
	}
}

func TestRecomputeOps(t *testing.T) {
	m, _ := Preset("llama3-8b")
	s := Shape{MicroBatch: 1, Seq: 2048, Dtype: BF16, FlashAttention: true}
	if ops := m.RecomputeOps(0, s, RecomputeSelective); ops != nil {
		t.Errorf("selective recompute with flash attention should add nothing, got %d ops", len(ops))
	}
	if ops := m.RecomputeOps(0, s, RecomputeNone); ops != nil {
		t.Error("none adds ops")
	}
	if full, fwd := m.RecomputeOps(0, s, RecomputeFull), m.LayerOps(0, s, Forward); !slices.Equal(full, fwd) {
		t.Error("full recompute must redo the layer's forward")
	}
	s.FlashAttention = false
	var names []string
	for _, o := range m.RecomputeOps(0, s, RecomputeSelective) {
		names = append(names, o.Name)
	}
	if !slices.Equal(names, []string{"attn_scores", "attn_softmax", "attn_context"}) {
		t.Errorf("selective recompute = %v", names)
	}
}

func TestEmbeddingAndHeadOps(t *testing.T) {
	m, _ := Preset("llama3-8b")
	s := Shape{MicroBatch: 1, Seq: 2048, Dtype: BF16, TP: 8}
	head := m.HeadOps(s, Forward)
	lm := head[slices.IndexFunc(head, func(o Op) bool { return o.Name == "lm_head" })]
	if lm.M != 2048 || lm.N != 16032 || lm.K != 4096 { // 128256/8
		t.Errorf("lm_head %dx%dx%d", lm.M, lm.N, lm.K)
	}
	if len(m.HeadOps(s, Backward)) != 4 || len(m.EmbeddingOps(s, Forward)) != 1 || len(m.EmbeddingOps(s, Backward)) != 1 {
		t.Error("head: norm, lm_head dgrad+wgrad, cross-entropy; embedding: one lookup (no dropout in Llama)")
	}
	// Cross-entropy over e = 2048 × 16032 logits of bf16 training.
	// Fused: read 2e, write 8 bytes per token (loss, log-sum-exp); the
	// backward reads 2e (+8 per token) and writes the 2e gradient.
	// Unfused fp32: the cast reads 2e and writes 4e; the loss reads 4e
	// and writes 4e plus 12 bytes per token; its backward reads 8e (+4 per
	// token for the labels) and writes 8e, the cast back reads 4e and
	// writes 2e.
	e := 2048.0 * 16032
	unfused := s
	unfused.CrossEntropy = CrossEntropyUnfused
	for _, c := range []struct {
		s           Shape
		name        string
		read, write float64
	}{
		{s, "cross_entropy", 2 * e, 8 * 2048},
		{s, "cross_entropy_bwd", 2*e + 8*2048, 2 * e},
		{unfused, "logits_to_fp32", 2 * e, 4 * e},
		{unfused, "cross_entropy", 4 * e, 4*e + 12*2048},
		{unfused, "cross_entropy_bwd", 8*e + 4*2048, 8 * e},
		{unfused, "logits_to_fp32_bwd", 4 * e, 2 * e},
	} {
		var o Op
		for _, x := range append(m.HeadOps(c.s, Forward), m.HeadOps(c.s, Backward)...) {
			if x.Name == c.name {
				o = x
			}
		}
		if o.BytesRead != c.read || o.BytesWritten != c.write {
			t.Errorf("%s (%v): read %g write %g, want %g %g", c.name, c.s.CrossEntropy, o.BytesRead, o.BytesWritten, c.read, c.write)
		}
	}
	// Megatron-LM's unfused vocabulary-parallel cross-entropy, by hand from
	// its kernels (cast, max, subtract, exp, sum, per-token loss, divide;
	// backward: scale, cast back): 24e + 2e read and 16e written forward,
	// 8e read and 4e + 2e written backward = 52 bytes per bf16 logit, plus
	// 4 + 4 + 12 + 4 + 4 + 4 + 4 bytes per token.
	vp := s
	vp.CrossEntropy = CrossEntropyVocabParallel
	var read, write float64
	var names []string
	for _, o := range append(m.HeadOps(vp, Forward), m.HeadOps(vp, Backward)...) {
		if strings.HasPrefix(o.Name, "cross_entropy") {
			read += o.BytesRead
			write += o.BytesWritten
			names = append(names, o.Name)
		}
	}
	want := []string{"cross_entropy_to_fp32", "cross_entropy_max", "cross_entropy_sub_max", "cross_entropy_exp", "cross_entropy_sum",
		"cross_entropy_loss", "cross_entropy_softmax", "cross_entropy_grad_scale_bwd", "cross_entropy_to_act_bwd"}
	if !slices.Equal(names, want) {
		t.Errorf("vocab-parallel kernels %v, want %v", names, want)
	}
	if tok := 2048.0; read+write != 52*e+36*tok {
		t.Errorf("vocab-parallel cross-entropy moves %g bytes, want 52e + 36 per token = %g", read+write, 52*e+36*tok)
	}
	if slices.ContainsFunc(m.HeadOps(Shape{MicroBatch: 1, Seq: 2048, Dtype: FP32, TP: 8, CrossEntropy: CrossEntropyUnfused}, Forward), func(o Op) bool { return o.Name == "logits_to_fp32" }) {
		t.Error("fp32 training needs no cast before the loss")
	}
	g := smallGPT()
	if len(g.EmbeddingOps(s, Forward)) != 2 {
		t.Error("GPT embedding has dropout")
	}
	for _, o := range append(m.EmbeddingOps(s, Forward), head...) {
		if o.Block != BlockEmbedding && o.Block != BlockHead {
			t.Errorf("%s in block %d", o.Name, o.Block)
		}
	}
}

// TestBadShapesDoNotPanic: nonsense input gives empty or zero-size ops.
func TestBadShapesDoNotPanic(t *testing.T) {
	m, _ := Preset("mixtral-8x7b")
	for _, s := range []Shape{{}, {Seq: -5, TP: -1, CP: 0, EP: 100}, {Seq: 1, MicroBatch: 1, TP: 1000}} {
		for _, p := range []Pass{Forward, Backward} {
			_ = m.LayerOps(0, s, p)
			_ = m.EmbeddingOps(s, p)
			_ = m.HeadOps(s, p)
		}
		_ = m.RecomputeOps(0, s, RecomputeFull)
		_ = m.LayerActivationBytes(0, s, RecomputeNone)
	}
	if m.LayerOps(-1, Shape{Seq: 8}, Forward) != nil || m.LayerOps(32, Shape{Seq: 8}, Forward) != nil {
		t.Error("out-of-range layer should give nil")
	}
	var empty Model
	_ = empty.Params()
	_ = empty.LayerOps(0, Shape{Seq: 8}, Forward)
}

// TestFoldedExpertGEMMs: with MoE parallel folding (ETP < TP) the expert
// GEMMs are split by ETP and a GPU's experts see tok·k·cf·etp/tp tokens.
// Mixtral (h 4096, expert FFN 14336, SwiGLU, 8 experts, top-2), 4096
// tokens, SP:
//   - tp 2, ep 8 (unfolded): 1 local expert, 4096·2 = 8192 tokens, fc1
//     width 2·14336/2 = 14336;
//   - tp 2, etp 1, ep 8: 4096·2·1/2 = 4096 tokens, width 2·14336 = 28672
//     (same FLOPs: 8192·14336 = 4096·28672);
//   - tp 4, etp 2, ep 4: 2 local experts, 4096·2·2/4 = 4096 tokens, 2048
//     each, width 2·14336/2 = 14336.
//
// Shared experts stay on TP; ETP ≥ TP (or 0) means no folding.
func TestFoldedExpertGEMMs(t *testing.T) {
	m, _ := Preset("mixtral-8x7b")
	for _, c := range []struct {
		tp, etp, ep    int
		m, n, k, batch int
	}{
		{2, 0, 8, 8192, 14336, 4096, 1},
		{2, 2, 8, 8192, 14336, 4096, 1},
		{2, 4, 8, 8192, 14336, 4096, 1},
		{2, 1, 8, 4096, 28672, 4096, 1},
		{4, 2, 4, 2048, 14336, 4096, 2},
	} {
		s := Shape{MicroBatch: 1, Seq: 4096, Dtype: BF16, TP: c.tp, ETP: c.etp, EP: c.ep, SP: true, FlashAttention: true}
		ops := m.LayerOps(0, s, Forward)
		i := slices.IndexFunc(ops, func(o Op) bool { return o.Name == "expert_fc1" })
		if o := ops[i]; o.M != c.m || o.N != c.n || o.K != c.k || o.Batch != c.batch {
			t.Errorf("tp %d etp %d ep %d: expert_fc1 %d×%d×%d ×%d, want %d×%d×%d ×%d",
				c.tp, c.etp, c.ep, o.M, o.N, o.K, o.Batch, c.m, c.n, c.k, c.batch)
		}
	}
	// DeepSeek-V3's shared expert stays a dense MLP on TP 4: all 4096 tokens
	// (gathered over TP), fc1 width 2·2048/4.
	ds, _ := Preset("deepseek-v3")
	ops := ds.LayerOps(5, Shape{MicroBatch: 1, Seq: 4096, Dtype: BF16, TP: 4, ETP: 1, EP: 64, SP: true, FlashAttention: true}, Forward)
	i := slices.IndexFunc(ops, func(o Op) bool { return o.Name == "shared_fc1" })
	if i < 0 || ops[i].M != 4096 || ops[i].N != 2*ds.MoE.ExpertFFN/4 {
		t.Errorf("shared_fc1 with etp 1 < tp 4: %+v", ops[i])
	}
}

// TestMoEImbalance: the most-loaded EP rank's routed tokens are the mean ×
// capacity factor × imbalance; with imbalance 1.25 its expert GEMMs do
// 1.25× the FLOPs, its dispatch moves 1.25× the bytes and its kept expert
// activations grow by 1.25×; the router, the attention and everything
// outside the expert block do not move. Imbalance below 1 counts as balanced.
func TestMoEImbalance(t *testing.T) {
	m, err := Preset("qwen3-30b-a3b")
	if err != nil {
		t.Fatal(err)
	}
	s := Shape{MicroBatch: 1, Seq: 4096, Dtype: BF16, TP: 1, EP: 8, ETP: 1}
	flops := func(m Model) (experts, other float64) {
		for _, o := range m.LayerOps(0, s, Forward) {
			switch {
			case o.Block == BlockExperts && o.Class == ClassGEMM:
				experts += o.FLOPs
			case o.Block != BlockExperts:
				other += o.FLOPs
			}
		}
		return
	}
	e0, o0 := flops(m)
	a0 := m.LayerActivationBytes(0, s, RecomputeNone)
	base := *m.MoE
	for _, c := range []struct{ imb, want float64 }{{0, 1}, {0.5, 1}, {1, 1}, {1.25, 1.25}} {
		moe := base
		moe.Imbalance = c.imb
		m.MoE = &moe
		e1, o1 := flops(m)
		if math.Abs(e1/e0-c.want) > 1e-3 || math.Abs(o1-o0) > 1e-6*o0 {
			t.Errorf("imbalance %v: expert FLOPs ×%.4f (want ×%v), other %v vs %v", c.imb, e1/e0, c.want, o1, o0)
		}
		if a1 := m.LayerActivationBytes(0, s, RecomputeNone); (c.want == 1) != (a1 == a0) || a1 < a0 {
			t.Errorf("imbalance %v: activations %v, balanced %v", c.imb, a1, a0)
		}
		if got := m.Comm(s).EPDispatch / (float64(4096*base.TopK*m.Hidden) * 2); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("imbalance %v: dispatch ×%v, want ×%v", c.imb, got, c.want)
		}
	}
}
