package workload

import (
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/units"
)

// totals sums an op list: FLOPs, bytes read, bytes written and op count.
func totals(ops []Op) [4]float64 {
	var t [4]float64
	for _, o := range ops {
		t[0] += o.FLOPs
		t[1] += o.BytesRead
		t[2] += o.BytesWritten
		t[3]++
	}
	return t
}

// compiledTotals sums, for the last layer of preset p at shape s, the
// forward and backward layer ops, the full and per-op selective recompute
// lists and the head ops.
func compiledTotals(t *testing.T, p string, s Shape) [4]float64 {
	t.Helper()
	m, err := Preset(p)
	if err != nil {
		t.Fatal(err)
	}
	l := m.Layers - 1
	var ops []Op
	ops = append(ops, m.LayerOps(l, s, Forward)...)
	ops = append(ops, m.LayerOps(l, s, Backward)...)
	ops = append(ops, m.RecomputeOps(l, s, RecomputeFull)...)
	ops = append(ops, m.RecomputeOps(l, s, RecomputeSelectiveOp)...)
	ops = append(ops, m.HeadOps(s, Forward)...)
	ops = append(ops, m.HeadOps(s, Backward)...)
	return totals(ops)
}

var goldenShapes = map[string]Shape{
	"flash":        {MicroBatch: 2, Seq: 4096, Dtype: BF16, FlashAttention: true},
	"tp4sp":        {MicroBatch: 1, Seq: 2048, Dtype: BF16, TP: 4, SP: true, FlashAttention: true},
	"unfused-fp32": {MicroBatch: 1, Seq: 1024, Dtype: FP32},
}

// TestCompiledUnchanged pins the compiled pricing (Eager and EagerNorm
// false) bit for bit: the totals were printed by the same summation on the
// builder before eager.go existed (commit 554592c).
func TestCompiledUnchanged(t *testing.T) {
	golden := []struct {
		name                string
		flops, read, writes float64
		ops                 int
	}{
		{"llama3-8b/flash", 4.2672486088704e+13, 1.9861241856e+10, 1.0876125184e+10, 53},
		{"llama3-8b/tp4sp", 2.62837567488e+12, 2.086754304e+09, 1.059223552e+09, 53},
		{"llama3-8b/unfused-fp32", 5.266142396416e+12, 1.28136192e+10, 6.436196352e+09, 64},
		{"gpt3-1.3b/flash", 9.495199612928e+12, 8.02029568e+09, 4.640473088e+09, 57},
		{"gpt3-1.3b/tp4sp", 5.74122622976e+11, 7.27773184e+08, 4.04860928e+08, 57},
		{"gpt3-1.3b/unfused-fp32", 1.153058209792e+12, 4.399857664e+09, 2.554396672e+09, 72},
		{"nemotron-15b/flash", 1.07947426316288e+14, 3.6202872832e+10, 1.9045810176e+10, 53},
		{"nemotron-15b/tp4sp", 6.688732086272e+12, 4.199673856e+09, 2.096345088e+09, 53},
		{"nemotron-15b/unfused-fp32", 1.3391550742528e+13, 2.725462016e+10, 1.3308592128e+10, 64},
		{"qwen3-30b-a3b/flash", 2.0840907276288e+13, 2.3430463488e+10, 1.2122750976e+10, 74},
		{"qwen3-30b-a3b/tp4sp", 1.263901999104e+12, 2.906830848e+09, 1.341216768e+09, 74},
		{"qwen3-30b-a3b/unfused-fp32", 2.537195044864e+12, 1.763305472e+10, 7.418826752e+09, 85},
		{"deepseek-v3/flash", 9.34442172416e+13, 1.17736308736e+11, 4.8267886592e+10, 104},
		{"deepseek-v3/tp4sp", 5.833079914496e+12, 2.3999469568e+10, 8.47686656e+09, 104},
		{"deepseek-v3/unfused-fp32", 1.134009647104e+13, 1.7636923392e+11, 5.9944464384e+10, 115},
	}
	for _, g := range golden {
		p, sh, _ := strings.Cut(g.name, "/")
		got := compiledTotals(t, p, goldenShapes[sh])
		want := [4]float64{g.flops, g.read, g.writes, float64(g.ops)}
		if got != want {
			t.Errorf("%s: FLOPs, read, written, ops = %v, want %v", g.name, got, want)
		}
	}
}

// smallLlama is a Llama-style layer small enough for hand arithmetic:
// h 64, 4 heads of 16, 2 KV heads, SwiGLU inner width 128.
func smallLlama() Model {
	m := Model{Name: "llama-test", Layers: 1, Hidden: 64, Heads: 4, KVHeads: 2, FFN: 128, Vocab: 256,
		Activation: "swiglu", Norm: "rmsnorm"}
	m.Fill()
	return m
}

// module sums the ops of one module (name or name_…) in ops.
func module(ops []Op, name string) [4]float64 {
	var sel []Op
	for _, o := range ops {
		if o.Name == name || strings.HasPrefix(o.Name, name+"_") {
			sel = append(sel, o)
		}
	}
	t := totals(sel)
	t[0] = 0 // FLOPs are not part of the hand table
	return t
}

// TestEagerLlamaLayer checks the bytes and kernel counts of one small Llama
// layer's elementwise modules, eager against compiled. Micro-batch 1, seq 8:
// t = 8 tokens; a = 2 (bf16), 4 (fp32).
//
// RMSNorm over n = 8·64 = 512 elements in r = 8 rows (eager.go table):
//
//	eager bf16  fwd  8 kernels, read 20n+12r = 10336, write 16n+12r = 8288
//	            bwd 16 kernels, read 54n+24r = 27840, write 38n+16r = 19584
//	eager fp32  (no casts) fwd 6 kernels, read 16n+12r = 8288, write 12n+12r = 6240
//	            bwd 14 kernels, read 56n+24r = 28864, write 36n+16r = 18560
//	compiled    fwd read a·n = 1024, write a·n + 4r = 1056
//	            bwd read 2a·n + 4r = 2080, write a·n = 1024
//
// RoPE on q 8·4·16 = 512 and k 8·2·16 = 256 elements, freqs_cis 4·16·8 =
// 512 bytes per product kernel: eager reads (a+4+4)·768 + 2·512 = 8704 and
// writes (4+4+a)·768 = 7680 in 6 kernels each way; compiled reads and
// writes a·768 = 1536 in one.
//
// SwiGLU on n = 8·128 = 1024: eager fwd 2 kernels, read 3a·n = 6144, write
// 2a·n = 4096; bwd 3 kernels, read 6a·n = 12288, write 3a·n = 6144.
// Compiled fwd read 2a·n = 4096, write a·n = 2048; bwd read 3a·n = 6144,
// write 2a·n = 4096.
func TestEagerLlamaLayer(t *testing.T) {
	m := smallLlama()
	base := Shape{MicroBatch: 1, Seq: 8, Dtype: BF16, FlashAttention: true}
	eager := base
	eager.Eager, eager.EagerNorm = true, true
	fp32 := eager
	fp32.Dtype = FP32
	fusedNorm := eager
	fusedNorm.EagerNorm = false
	type want struct {
		mod       string
		pass      Pass
		read, wr  float64
		n         int
		shape     Shape
		shapeName string
	}
	cases := []want{
		{"attn_norm", Forward, 10336, 8288, 8, eager, "eager"},
		{"attn_norm", Backward, 27840, 19584, 16, eager, "eager"},
		{"mlp_norm", Forward, 10336, 8288, 8, eager, "eager"},
		{"mlp_norm", Backward, 27840, 19584, 16, eager, "eager"},
		{"attn_norm", Forward, 8288, 6240, 6, fp32, "eager fp32"},
		{"attn_norm", Backward, 28864, 18560, 14, fp32, "eager fp32"},
		{"attn_norm", Forward, 1024, 1056, 1, base, "compiled"},
		{"attn_norm", Backward, 2080, 1024, 1, base, "compiled"},
		{"attn_norm", Forward, 1024, 1056, 1, fusedNorm, "eager, fused norm"},
		{"rope", Forward, 8704, 7680, 6, eager, "eager"},
		{"rope", Backward, 8704, 7680, 6, eager, "eager"},
		{"rope", Forward, 1536, 1536, 1, base, "compiled"},
		{"rope", Backward, 1536, 1536, 1, base, "compiled"},
		{"rope", Forward, 8704, 7680, 6, fusedNorm, "eager, fused norm"},
		{"act", Forward, 6144, 4096, 2, eager, "eager"},
		{"act", Backward, 12288, 6144, 3, eager, "eager"},
		{"act", Forward, 4096, 2048, 1, base, "compiled"},
		{"act", Backward, 6144, 4096, 1, base, "compiled"},
		// Residual adds are one add kernel (and one gradient accumulation)
		// either way: 2a·n read, a·n written.
		{"attn_residual", Forward, 2048, 1024, 1, eager, "eager"},
		{"mlp_residual", Backward, 2048, 1024, 1, eager, "eager"},
	}
	for _, c := range cases {
		got := module(m.LayerOps(0, c.shape, c.pass), c.mod)
		if w := [4]float64{0, c.read, c.wr, float64(c.n)}; got != w {
			t.Errorf("%s %s pass %d: read, written, kernels = %v, %v, %v; want %v, %v, %v",
				c.shapeName, c.mod, c.pass, got[1], got[2], got[3], c.read, c.wr, c.n)
		}
	}
	// The final norm goes through the same builder.
	if got := module(m.HeadOps(eager, Backward), "final_norm"); got[1] != 27840 || got[3] != 16 {
		t.Errorf("eager final_norm backward read %v in %v kernels, want 27840 in 16", got[1], got[3])
	}
}

// TestEagerBlocksContiguous: the eager kernels keep every block's ops
// contiguous in both passes (the step simulator inserts collectives at
// block boundaries), and each module's backward kernels run together where
// its fused backward ran.
func TestEagerBlocksContiguous(t *testing.T) {
	for _, p := range []string{"llama3-8b", "qwen3-30b-a3b", "deepseek-v3"} {
		m, _ := Preset(p)
		s := Shape{MicroBatch: 1, Seq: 4096, Dtype: BF16, TP: 2, SP: true, FlashAttention: true, Eager: true, EagerNorm: true}
		l := m.Layers - 1
		for _, pass := range []Pass{Forward, Backward} {
			seen := map[Block]bool{}
			ops := m.LayerOps(l, s, pass)
			for i, o := range ops {
				if o.Pass != pass {
					t.Errorf("%s: %s has pass %d in pass %d", p, o.Name, o.Pass, pass)
				}
				if i > 0 && ops[i-1].Block == o.Block {
					continue
				}
				if seen[o.Block] {
					t.Errorf("%s pass %d: block %d not contiguous at %s", p, pass, o.Block, o.Name)
				}
				seen[o.Block] = true
			}
		}
	}
}

// TestEagerRecompute: recomputation replays the eager forward kernels. Per-op
// selective checkpointing recomputes every memory-bound kernel, so its
// memory-bound ops are exactly the layer's forward memory-bound ops; full
// recompute is the forward list.
func TestEagerRecompute(t *testing.T) {
	m, _ := Preset("llama3-8b")
	s := Shape{MicroBatch: 1, Seq: 8192, Dtype: BF16, FlashAttention: true, Eager: true, EagerNorm: true}
	mem := func(ops []Op) (names []string, bytes float64) {
		for _, o := range ops {
			if o.Class == ClassMemory {
				names = append(names, o.Name)
				bytes += o.Bytes()
			}
		}
		return
	}
	fn, fb := mem(m.LayerOps(0, s, Forward))
	sn, sb := mem(m.RecomputeOps(0, s, RecomputeSelectiveOp))
	if strings.Join(fn, ",") != strings.Join(sn, ",") || fb != sb {
		t.Errorf("selective-op recomputes %v (%g B), want the forward's %v (%g B)", sn, sb, fn, fb)
	}
	if len(fn) != 8+6+1+8+2+1 {
		t.Errorf("%d eager forward memory kernels, want 26 (norm 8, rope 6, residual 1, norm 8, SwiGLU 2, residual 1)", len(fn))
	}
	if got, want := totals(m.RecomputeOps(0, s, RecomputeFull)), totals(m.LayerOps(0, s, Forward)); got != want {
		t.Errorf("full recompute %v, forward %v", got, want)
	}
}

// TestEagerLayerNormGELU: nn.LayerNorm and F.gelu are single ATen kernels,
// so an eager GPT layer costs what the compiled one does.
func TestEagerLayerNormGELU(t *testing.T) {
	m := smallGPT()
	s := Shape{MicroBatch: 2, Seq: 64, Dtype: BF16, FlashAttention: true}
	e := s
	e.Eager, e.EagerNorm = true, true
	for _, pass := range []Pass{Forward, Backward} {
		if a, b := totals(m.LayerOps(0, s, pass)), totals(m.LayerOps(0, e, pass)); a != b {
			t.Errorf("pass %d: compiled %v, eager %v", pass, a, b)
		}
	}
}

// TestEagerTimeLlama3_8B prices the eager overhead of one Llama 3 8B layer on
// an H100-like device (3.35 TB/s × 0.887 HBM efficiency, 2.2 µs per kernel;
// hardware-facts §4b, §4e) per token: it must lie between the bytes-only
// bound and the bytes + launches bound, and be positive for every module.
func TestEagerTimeLlama3_8B(t *testing.T) {
	m, _ := Preset("llama3-8b")
	d := Device{Peak: [8]units.FLOPPerSecond{FP32: 67e12, BF16: 989e12}, HBMBandwidth: 3.35e12, HBMEff: 2.97 / 3.35,
		SMs: 132, MatmulEffBF16: 0.8, AttnEff: 0.5, AttnBwdEff: 0.4, KernelOverhead: FittedKernelOverhead}
	s := Shape{MicroBatch: 1, Seq: 8192, Dtype: BF16, FlashAttention: true}
	e := s
	e.Eager, e.EagerNorm = true, true
	sum := func(sh Shape) (tm, bytes float64, n int) {
		for _, p := range []Pass{Forward, Backward} {
			for _, o := range m.LayerOps(0, sh, p) {
				if o.Class == ClassMemory {
					tm += d.OpTime(o, BF16)
					bytes += o.Bytes()
					n++
				}
			}
		}
		return
	}
	tc, bc, nc := sum(s)
	te, be, ne := sum(e)
	bw := float64(d.HBMBandwidth) * d.HBMEff
	extra := te - tc
	lo := (be - bc) / bw
	hi := lo + float64(ne-nc)*d.KernelOverhead
	if !(extra >= lo*(1-1e-9) && extra <= hi*(1+1e-9)) {
		t.Errorf("eager extra %g s outside [%g, %g]", extra, lo, hi)
	}
	// Bytes per token: norms 2·(4096·(128−10) + (64−8) row bytes) = 966768,
	// RoPE (4096+1024)·(40−8) + 4 products · 4·128 freqs = 165888, SwiGLU
	// 14336·(28−16) = 172032: 1304688.
	if got := (be - bc) / 8192; got != 1304688 {
		t.Errorf("eager extra bytes per token %v, want 1304688", got)
	}
}

// TestEagerGPT2Layer checks Hugging Face GPT-2's eager kernels (gelu_new and
// the unfused _attn) by hand on a small layer: h 64, 4 heads of 16, MLP 256,
// micro-batch 1, seq 8 (t = 8 tokens), fp16 (a = 2) under autocast and fp32.
//
// gelu_new on n = 8·256 = 2048 (eager.go table, w = 4): forward 10 kernels
// reading 40n = 81920 and writing 36n = 73728; backward 15 kernels reading
// 70n = 143360 and writing 48n = 98304. In fp32 the five casts vanish:
// forward 8 kernels reading 4+4+4+8+4+4+4+8 = 40n = 81920, writing 32n =
// 65536; backward 11 kernels reading 8+8+8+4+4+4+4+8+4+8+8 = 68n = 139264,
// writing 44n = 90112.
//
// Attention: q = k = v = o = 8·4·16 = 512 elements, e = 4·8·8 = 256 scores,
// mask m = 64. attn_heads forward copies Q and K (2 kernels, 2·2·512 = 2048
// each way), backward one cat of the three gradients (3·2·512 = 3072 each
// way). attn_softmax forward reads 2e + m + (2e+m) + 2e + 4e + 4e = 3712
// and writes 2e + m + 2e + 4e + 4e + 2e = 3648 in 6 kernels; backward reads
// 2e + 8e + 4e + (2e+m) + 2e = 4672, writes 4e + 4e + 2e + 2e + 2e = 3584
// in 5. attn_v copies V forward (1024 each way), attn_merge copies the
// output forward and its gradient backward (1024 each way).
func TestEagerGPT2Layer(t *testing.T) {
	m := Model{Name: "gpt2-test", Layers: 1, Hidden: 64, Heads: 4, FFN: 256, Vocab: 256,
		Activation: "gelu_new", Norm: "layernorm", Bias: true, Dropout: true}
	m.Fill()
	eager := Shape{MicroBatch: 1, Seq: 8, Dtype: FP16, Eager: true, EagerNorm: true}
	fp32 := eager
	fp32.Dtype = FP32
	cases := []struct {
		name     string
		s        Shape
		mod      string
		pass     Pass
		read, wr float64
		n        int
	}{
		{"fp16", eager, "act", Forward, 81920, 73728, 10},
		{"fp16", eager, "act", Backward, 143360, 98304, 15},
		{"fp32", fp32, "act", Forward, 81920, 65536, 8},
		{"fp32", fp32, "act", Backward, 139264, 90112, 11},
		{"fp16", eager, "attn_heads", Forward, 2048, 2048, 2},
		{"fp16", eager, "attn_heads", Backward, 3072, 3072, 1},
		{"fp16", eager, "attn_softmax", Forward, 3712, 3648, 6},
		{"fp16", eager, "attn_softmax", Backward, 4672, 3584, 5},
		{"fp16", eager, "attn_v", Forward, 1024, 1024, 1},
		{"fp16", eager, "attn_v", Backward, 0, 0, 0},
		{"fp16", eager, "attn_merge", Forward, 1024, 1024, 1},
		{"fp16", eager, "attn_merge", Backward, 1024, 1024, 1},
	}
	for _, c := range cases {
		got := module(m.LayerOps(0, c.s, c.pass), c.mod)
		if w := [4]float64{0, c.read, c.wr, float64(c.n)}; got != w {
			t.Errorf("%s %s pass %d: read, written, kernels = %v, %v, %v; want %v, %v, %v",
				c.name, c.mod, c.pass, got[1], got[2], got[3], c.read, c.wr, c.n)
		}
	}
	// Compiled (or Megatron's fused kernels): one GELU kernel and one
	// scale-mask-softmax kernel each way, as before.
	comp := eager
	comp.Eager, comp.EagerNorm = false, false
	if got := module(m.LayerOps(0, comp, Forward), "act"); got[3] != 1 {
		t.Errorf("compiled gelu_new: %v kernels, want 1", got[3])
	}
	if got := module(m.LayerOps(0, comp, Backward), "attn_softmax"); got[3] != 1 {
		t.Errorf("compiled unfused softmax backward: %v kernels, want 1", got[3])
	}
	// Memory: eager keeps gelu_new's three fp32 tensors (3·4·8·256 =
	// 24576 bytes) and the fp32 softmax output (2 more bytes for each of
	// the 256 scores) on top of the fused accounting.
	if d := m.LayerActivationBytes(0, eager, RecomputeNone) - m.LayerActivationBytes(0, comp, RecomputeNone); d != 24576+512 {
		t.Errorf("eager keeps %v bytes more than compiled, want %v", d, 24576+512)
	}
	// The GEMMs are the same either way.
	gemms := func(s Shape) float64 {
		return sumFLOPs(append(m.LayerOps(0, s, Forward), m.LayerOps(0, s, Backward)...), ClassGEMM)
	}
	if a, b := gemms(comp), gemms(eager); a != b {
		t.Errorf("GEMM FLOPs compiled %v, eager %v", a, b)
	}
}

// TestAutocastWeightCasts: under torch.autocast every linear layer's fp32
// weight is cast to 16 bits before its GEMM (4 bytes read, 2 written per
// weight) and its gradient cast back after the wgrad (2 read, 4 written).
// The small GPT-2 layer (h 64, MLP 256) has weights qkv 64×192, out 64×64,
// fc1 64×256, fc2 256×64: 12288 + 4096 + 16384 + 16384 = 49152 elements,
// so 196608 bytes read and 98304 written forward in 4 kernels, the reverse
// backward; the attention's batched products get none, fp32 and bf16
// without autocast get none, and each cast's backward follows its GEMM's
// wgrad.
func TestAutocastWeightCasts(t *testing.T) {
	m := Model{Name: "gpt2-test", Layers: 1, Hidden: 64, Heads: 4, FFN: 256, Vocab: 256,
		Activation: "gelu_new", Norm: "layernorm", Bias: true, Dropout: true}
	m.Fill()
	casts := func(ops []Op) [4]float64 {
		var sel []Op
		for _, o := range ops {
			if strings.HasSuffix(o.Name, "_autocast") || strings.HasSuffix(o.Name, "_autocast_bwd") {
				sel = append(sel, o)
			}
		}
		t := totals(sel)
		t[0] = 0
		return t
	}
	s := Shape{MicroBatch: 1, Seq: 8, Dtype: FP16, Eager: true, Autocast: true}
	if got, want := casts(m.LayerOps(0, s, Forward)), [4]float64{0, 196608, 98304, 4}; got != want {
		t.Errorf("forward casts %v, want %v", got, want)
	}
	if got, want := casts(m.LayerOps(0, s, Backward)), [4]float64{0, 98304, 196608, 4}; got != want {
		t.Errorf("backward casts %v, want %v", got, want)
	}
	bwd := m.LayerOps(0, s, Backward)
	for i, o := range bwd {
		if strings.HasSuffix(o.Name, "_autocast_bwd") {
			gemm := strings.TrimSuffix(o.Name, "_autocast_bwd")
			if i == 0 || bwd[i-1].Name != gemm+"_wgrad" {
				t.Errorf("%s does not follow %s_wgrad", o.Name, gemm)
			}
		}
	}
	// The LM head's weight (vocab × h) is cast too.
	if got := casts(m.HeadOps(s, Forward)); got[1] != 4*256*64 {
		t.Errorf("lm_head cast reads %v bytes, want %v", got[1], 4*256*64)
	}
	for _, off := range []Shape{{MicroBatch: 1, Seq: 8, Dtype: FP32, Autocast: true}, {MicroBatch: 1, Seq: 8, Dtype: BF16}} {
		if got := casts(m.LayerOps(0, off, Forward)); got[3] != 0 {
			t.Errorf("dtype %v autocast %v: %v casts, want none", off.Dtype, off.Autocast, got[3])
		}
	}
}

// TestAutocastGradAccumulate: with gradient accumulation, AccumulateGrad
// adds each fp32 weight gradient into .grad (8 bytes read, 4 written per
// element) on (m−1)/m of the micro-batches, priced on the gradient casts.
// The layer's 49152 weight elements: the backward casts read 98304 +
// share·8·49152 and write 196608 + share·4·49152 bytes; the forward casts
// and every other op are unchanged; without autocast (bf16 weights, or
// fp32 compute) the share adds nothing.
func TestAutocastGradAccumulate(t *testing.T) {
	m := Model{Name: "gpt2-test", Layers: 1, Hidden: 64, Heads: 4, FFN: 256, Vocab: 256,
		Activation: "gelu_new", Norm: "layernorm", Bias: true, Dropout: true}
	m.Fill()
	const w = 49152.0
	sum := func(ops []Op, cast bool) [2]float64 {
		var t [2]float64
		for _, o := range ops {
			if strings.HasSuffix(o.Name, "_autocast_bwd") == cast {
				t[0] += o.BytesRead
				t[1] += o.BytesWritten
			}
		}
		return t
	}
	base := Shape{MicroBatch: 1, Seq: 8, Dtype: FP16, Eager: true, Autocast: true}
	rest := sum(m.LayerOps(0, base, Backward), false)
	fwd := totals(m.LayerOps(0, base, Forward))
	for _, tc := range []struct {
		name        string
		dtype       Dtype
		autocast    bool
		share       float64
		read, write float64
	}{
		{"one micro-batch", FP16, true, 0, 98304, 196608},
		{"accumulation 4", FP16, true, 0.75, 98304 + 0.75*8*w, 196608 + 0.75*4*w},
		{"accumulation 32, bf16", BF16, true, 31.0 / 32, 98304 + 31.0/32*8*w, 196608 + 31.0/32*4*w},
		{"no autocast", BF16, false, 0.75, 0, 0},
		{"fp32 compute", FP32, true, 0.75, 0, 0},
	} {
		s := base
		s.Dtype, s.Autocast, s.GradAccumulate = tc.dtype, tc.autocast, tc.share
		if got := sum(m.LayerOps(0, s, Backward), true); got != [2]float64{tc.read, tc.write} {
			t.Errorf("%s: backward casts read/write %v, want [%v %v]", tc.name, got, tc.read, tc.write)
		}
		if tc.dtype != FP16 || !tc.autocast {
			continue
		}
		if got := sum(m.LayerOps(0, s, Backward), false); got != rest {
			t.Errorf("%s: other backward ops %v, want %v unchanged", tc.name, got, rest)
		}
		if got := totals(m.LayerOps(0, s, Forward)); got != fwd {
			t.Errorf("%s: forward %v, want %v unchanged", tc.name, got, fwd)
		}
	}
}

// TestAutocastFP32Stream: under autocast the residual stream is fp32. The
// small GPT-2 layer at 8 tokens has e = 8·64 = 512 stream elements: each
// input norm reads 4e and writes 4e plus 8 bytes of statistics per token
// (64), then a cast writes the 2-byte GEMM input (and the backward casts
// the input gradient back); each residual add reads the 2-byte branch and
// the 4-byte stream and writes 4e, and its backward reads the fork's two
// fp32 gradients and the sum (3·4e) and writes the fp32 sum and the
// branch's 2-byte gradient. Without autocast the same ops run at 2 bytes
// and there is no cast.
func TestAutocastFP32Stream(t *testing.T) {
	m := Model{Name: "gpt2-test", Layers: 1, Hidden: 64, Heads: 4, FFN: 256, Vocab: 256,
		Activation: "gelu_new", Norm: "layernorm", Bias: true, Dropout: true}
	m.Fill()
	const e = 512.0
	find := func(ops []Op, name string) (Op, bool) {
		for _, o := range ops {
			if o.Name == name {
				return o, true
			}
		}
		return Op{}, false
	}
	for _, tc := range []struct {
		autocast    bool
		name        string
		pass        Pass
		read, write float64 // -1: the op must not exist
	}{
		{true, "attn_norm", Forward, 4 * e, 4*e + 64},
		{true, "attn_norm_cast", Forward, 4 * e, 2 * e},
		{true, "mlp_norm_cast_bwd", Backward, 2 * e, 4 * e},
		{true, "mlp_norm_bwd", Backward, 8*e + 64, 4 * e},
		{true, "attn_residual", Forward, 6 * e, 4 * e},
		{true, "mlp_residual_bwd", Backward, 12 * e, 6 * e},
		{false, "attn_norm", Forward, 2 * e, 2*e + 64},
		{false, "attn_norm_cast", Forward, -1, -1},
		{false, "attn_residual", Forward, 4 * e, 2 * e},
		{false, "mlp_residual_bwd", Backward, 4 * e, 2 * e},
	} {
		s := Shape{MicroBatch: 1, Seq: 8, Dtype: FP16, Eager: true, Autocast: tc.autocast}
		o, ok := find(m.LayerOps(0, s, tc.pass), tc.name)
		switch {
		case tc.read < 0 && ok:
			t.Errorf("autocast %v: %s present, want none", tc.autocast, tc.name)
		case tc.read >= 0 && !ok:
			t.Errorf("autocast %v: no %s", tc.autocast, tc.name)
		case ok && (o.BytesRead != tc.read || o.BytesWritten != tc.write):
			t.Errorf("autocast %v: %s read/write %v/%v, want %v/%v", tc.autocast, tc.name, o.BytesRead, o.BytesWritten, tc.read, tc.write)
		}
	}
	// The final norm's output is cast for the LM head too.
	if _, ok := find(m.HeadOps(Shape{MicroBatch: 1, Seq: 8, Dtype: FP16, Autocast: true}, Forward), "final_norm_cast"); !ok {
		t.Error("no final_norm_cast in the head")
	}
}

// TestGradAccumulateAdd: without autocast the gradient accumulation's add
// is a kernel of its own after each linear's wgrad GEMM, reading
// 2·width and writing width bytes per element of the shard it adds, on
// the share of the micro-batches that accumulate. The small GPT-2 layer's
// linears hold 12288 + 4096 + 16384 + 16384 = 49152 weight elements.
func TestGradAccumulateAdd(t *testing.T) {
	m := Model{Name: "gpt2-test", Layers: 1, Hidden: 64, Heads: 4, FFN: 256, Vocab: 256,
		Activation: "gelu_new", Norm: "layernorm", Bias: true, Dropout: true}
	m.Fill()
	for _, tc := range []struct {
		name                 string
		dtype                Dtype
		autocast             bool
		share, width, shard  float64
		adds                 int
		flops, read, written float64
	}{
		{"one micro-batch", FP32, false, 0, 4, 1, 0, 0, 0, 0},
		// DDP/one GPU, fp32 weights, accumulation 8: 7/8 of 12 B per weight
		{"fp32, accumulation 8", FP32, false, 7.0 / 8, 4, 1, 4, 43008, 344064, 172032},
		// 16-bit weights without autocast: 2-byte .grad, accumulation 4
		{"bf16 weights, accumulation 4", BF16, false, 0.75, 2, 1, 4, 36864, 147456, 73728},
		// FSDP's sharded fp32 add over dp 4, accumulation 2
		{"fsdp shard 1/4, accumulation 2", BF16, false, 0.5, 4, 0.25, 4, 6144, 49152, 24576},
		// width 0 means fp32, shard 0 the whole gradient
		{"defaults", FP32, false, 0.5, 0, 0, 4, 24576, 196608, 98304},
		// under autocast the add rides on the cast: no kernel of its own
		{"autocast", BF16, true, 0.75, 4, 1, 0, 0, 0, 0},
	} {
		s := Shape{MicroBatch: 1, Seq: 8, Dtype: tc.dtype, Eager: true, Autocast: tc.autocast,
			GradAccumulate: tc.share, GradAccumWidth: tc.width, GradAccumShard: tc.shard}
		ops := m.LayerOps(0, s, Backward)
		var n int
		var got [3]float64
		for i, o := range ops {
			if !strings.HasSuffix(o.Name, "_grad_acc") {
				continue
			}
			n++
			got[0] += o.FLOPs
			got[1] += o.BytesRead
			got[2] += o.BytesWritten
			if want := strings.TrimSuffix(o.Name, "_grad_acc") + "_wgrad"; i == 0 || ops[i-1].Name != want {
				t.Errorf("%s: %s not right after %s", tc.name, o.Name, want)
			}
			if o.Class != ClassMemory || o.Pass != Backward {
				t.Errorf("%s: %s class %v pass %v", tc.name, o.Name, o.Class, o.Pass)
			}
		}
		if n != tc.adds || got != [3]float64{tc.flops, tc.read, tc.written} {
			t.Errorf("%s: %d adds flops/read/written %v, want %d %v", tc.name, n, got, tc.adds,
				[3]float64{tc.flops, tc.read, tc.written})
		}
		for _, o := range m.LayerOps(0, s, Forward) {
			if strings.HasSuffix(o.Name, "_grad_acc") {
				t.Errorf("%s: forward has %s", tc.name, o.Name)
			}
		}
	}
}
