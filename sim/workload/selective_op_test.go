package workload

import (
	"slices"
	"testing"
)

// TestSelectiveOpRecompute pins per-op selective checkpointing (torchtitan's
// selective_ac_option = "op") on Llama 3 8B: of the projections wq 1, wk 2,
// wv 3, wo 4, w1 5, w3 6, w2 7 the even ones are recomputed, together with
// every memory-bound kernel; the FlashAttention kernel is saved.
func TestSelectiveOpRecompute(t *testing.T) {
	m, _ := Preset("llama3-8b")
	const T = 4096
	s := Shape{MicroBatch: 1, Seq: T, Dtype: BF16, FlashAttention: true}
	ops := m.RecomputeOps(0, s, RecomputeSelectiveOp)
	var gemms, mem []string
	gemmFLOPs := 0.0
	for _, o := range ops {
		switch o.Class {
		case ClassGEMM:
			gemms = append(gemms, o.Name)
			gemmFLOPs += o.FLOPs
		case ClassMemory:
			mem = append(mem, o.Name)
		default:
			t.Errorf("%s (class %d) recomputed; the attention kernel's output is saved", o.Name, o.Class)
		}
	}
	if !slices.Equal(gemms, []string{"k_proj", "out_proj", "fc1_up"}) {
		t.Errorf("recomputed projections %v, want wk, wo, w3", gemms)
	}
	if !slices.Equal(mem, []string{"attn_norm", "rope", "attn_residual", "mlp_norm", "act", "mlp_residual"}) {
		t.Errorf("recomputed memory-bound kernels %v", mem)
	}
	// wk 4096→1024, wo 4096→4096, w3 4096→14336: 2·T·4096·(1024+4096+14336).
	if want := 2.0 * T * 4096 * (1024 + 4096 + 14336); gemmFLOPs != want {
		t.Errorf("recomputed GEMM FLOPs %g, want %g", gemmFLOPs, want)
	}
	// That is 19456/53248 = 36.5% of the layer's forward projection FLOPs.
	fwd := sumFLOPs(m.LayerOps(0, s, Forward), ClassGEMM)
	if r := gemmFLOPs / fwd; !near(r, 19456.0/53248, 1e-12) {
		t.Errorf("recomputed share %.4f of the forward projections", r)
	}

	// TP 8: each linear keeps its own width per rank (wk: one KV head of 128).
	tp := s
	tp.TP, tp.SP = 8, true
	var widths []int
	for _, o := range m.RecomputeOps(0, tp, RecomputeSelectiveOp) {
		if o.Class == ClassGEMM {
			widths = append(widths, o.N)
		}
	}
	if !slices.Equal(widths, []int{128, 4096, 1792}) {
		t.Errorf("TP 8 recomputed widths %v, want [128 4096 1792]", widths)
	}

	// A GPT with unfused attention: q 1, k 2, v 3, out 4, fc1 5, fc2 6, and
	// the score/context products and softmax (not aten.mm) are recomputed.
	g := smallGPT()
	var names []string
	for _, o := range g.RecomputeOps(0, Shape{MicroBatch: 1, Seq: 128, Dtype: BF16}, RecomputeSelectiveOp) {
		if o.Class == ClassGEMM || o.Block == BlockAttnCore {
			names = append(names, o.Name)
		}
	}
	if !slices.Equal(names, []string{"k_proj", "attn_scores", "attn_softmax", "attn_dropout", "attn_context", "out_proj", "fc2"}) {
		t.Errorf("GPT selective-op recompute %v", names)
	}
}

// TestSelectiveOpFLOPsAndMemory: the hardware-FLOPs convention adds the
// recomputed projections, and the activation memory keeps the layer input,
// the saved projection outputs and the attention output.
func TestSelectiveOpFLOPsAndMemory(t *testing.T) {
	m, _ := Preset("llama3-8b")
	// 32 layers × 2 × 4096 × (1024 + 4096 + 14336) FLOPs per token.
	extra := m.HardwareFLOPsPerToken(8192, RecomputeSelectiveOp) - m.ModelFLOPsPerToken(8192)
	if want := 32 * 2 * 4096.0 * 19456; !near(extra, want, 1e-12) {
		t.Errorf("selective-op adds %g FLOPs per token, want %g", extra, want)
	}
	r, err := ParseRecompute("selective-op")
	if err != nil || r != RecomputeSelectiveOp || r.String() != "selective-op" {
		t.Errorf("ParseRecompute(selective-op) = %v, %v", r, err)
	}

	// Per token, bf16: input 4096 + q 4096 + v 1024 + w1 14336 + w2 4096
	// + O 4096 = 31744 values = 63488 bytes.
	s := Shape{MicroBatch: 1, Seq: 2048, Dtype: BF16, FlashAttention: true}
	if got, want := m.LayerActivationBytes(0, s, RecomputeSelectiveOp), 2048*63488.0; got != want {
		t.Errorf("selective-op activations %g, want %g", got, want)
	}
	// TP 8 + SP: input 512 + q 512 + v 128 + w1 1792 + w2 4096 (the
	// partial sums before the reduce-scatter) + O 512 + two reduce-scatter
	// outputs 2·512 = 8576 values = 17152 bytes per token.
	s.TP, s.SP = 8, true
	if got, want := m.LayerActivationBytes(0, s, RecomputeSelectiveOp), 2048*17152.0; got != want {
		t.Errorf("selective-op TP 8 + SP activations %g, want %g", got, want)
	}
	// Between selective (nothing recomputed next to FlashAttention) and full.
	none := m.LayerActivationBytes(0, s, RecomputeNone)
	full := m.LayerActivationBytes(0, s, RecomputeFull)
	if op := m.LayerActivationBytes(0, s, RecomputeSelectiveOp); !(op < none && op > full) {
		t.Errorf("selective-op %g not between full %g and none %g", op, full, none)
	}
}
