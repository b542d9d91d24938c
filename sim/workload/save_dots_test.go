package workload

import (
	"slices"
	"strings"
	"testing"
)

// TestSaveDotsRecompute pins the save-dots policy (JAX's
// checkpoint_dots_with_no_batch_dims, MaxText's minimal_flash) on one
// Llama 3 8B layer, 4096 tokens in bf16 with FlashAttention and compiled
// (fused) kernels: no GEMM and not the attention kernel is rerun; the
// norms, RoPE, the attention residual add and SwiGLU are, and nothing
// after the closing fc2 (the MLP residual makes the layer output only).
func TestSaveDotsRecompute(t *testing.T) {
	m, _ := Preset("llama3-8b")
	const T, h, f = 4096, 4096, 14336
	s := Shape{MicroBatch: 1, Seq: T, Dtype: BF16, FlashAttention: true}
	var names []string
	bytes := 0.0
	for _, o := range m.RecomputeOps(0, s, RecomputeSaveDots) {
		if o.Class != ClassMemory {
			t.Errorf("%s (class %d) rerun; save-dots reruns memory-bound kernels only", o.Name, o.Class)
		}
		names = append(names, o.Name)
		bytes += o.BytesRead + o.BytesWritten
	}
	if !slices.Equal(names, []string{"attn_norm", "rope", "attn_residual", "mlp_norm", "act"}) {
		t.Errorf("rerun kernels %v", names)
	}
	// HBM traffic by hand, 2-byte activations: each RMSNorm reads x and
	// writes its output plus one fp32 rstd per row (T·h·2 + T·h·2 + 4·T);
	// RoPE reads and writes Q (h wide) and K (1024 wide); the residual
	// reads two T·h tensors and writes one; SwiGLU reads the gate and up
	// outputs (2·T·f) and writes T·f.
	norm := 2.0*T*h*2 + 4*T
	want := 2*norm + 2*T*(h+1024)*2 + 3*T*h*2 + 3*T*f*2
	if bytes != want {
		t.Errorf("rerun kernels move %g bytes, want %g", bytes, want)
	}
	if extra := m.HardwareFLOPsPerToken(T, RecomputeSaveDots) - m.ModelFLOPsPerToken(T); extra != 0 {
		t.Errorf("save-dots adds %g FLOPs per token; it reruns no matmul", extra)
	}

	// Eager (torch.compile off): the modules' ATen kernels rerun instead.
	e := s
	e.Eager = true
	names = names[:0]
	for _, o := range m.RecomputeOps(0, e, RecomputeSaveDots) {
		names = append(names, o.Name)
	}
	if !slices.Contains(names, "act_silu") || !slices.Contains(names, "act_mul") || slices.Contains(names, "act") {
		t.Errorf("eager rerun kernels %v, want SwiGLU's ATen kernels act_silu, act_mul", names)
	}

	// An unfused attention core (batched products: dots with batch
	// dimensions, and the softmax) is rerun; the projections are not.
	g := smallGPT()
	var gemms []string
	for _, o := range g.RecomputeOps(0, Shape{MicroBatch: 1, Seq: 128, Dtype: BF16}, RecomputeSaveDots) {
		if o.Class == ClassGEMM {
			gemms = append(gemms, o.Name)
		}
	}
	if !slices.Equal(gemms, []string{"attn_scores", "attn_context"}) {
		t.Errorf("unfused attention: rerun GEMMs %v, want the two batched products", gemms)
	}
}

// TestSaveDotsActivationBytes: the kept bytes of one Llama 3 8B layer by
// hand, per token (bf16): the layer input 4096, the fused QKV output
// 4096 + 2·1024, the attention output O 4096, the output projection's
// 4096, the gate and up outputs 2·14336 (fc2's output is not kept) =
// 47,104 elements = 94,208 bytes. With TP 8 + SP: input 512, QKV 768,
// O 512, the output projection after its reduce-scatter 512, gate/up 3584
// = 5,888 elements = 11,776 bytes.
func TestSaveDotsActivationBytes(t *testing.T) {
	m, _ := Preset("llama3-8b")
	const T = 4096
	s := Shape{MicroBatch: 1, Seq: T, Dtype: BF16, FlashAttention: true}
	if got, want := m.LayerActivationBytes(0, s, RecomputeSaveDots), T*94208.0; got != want {
		t.Errorf("save-dots activations %g, want %g", got, want)
	}
	tp := s
	tp.TP, tp.SP = 8, true
	if got, want := m.LayerActivationBytes(0, tp, RecomputeSaveDots), T*11776.0; got != want {
		t.Errorf("save-dots TP 8 + SP activations %g, want %g", got, want)
	}
	// Between selective-op (every second projection) and none.
	sel, none := m.LayerActivationBytes(0, s, RecomputeSelectiveOp), m.LayerActivationBytes(0, s, RecomputeNone)
	if sd := m.LayerActivationBytes(0, s, RecomputeSaveDots); !(sel < sd && sd < none) {
		t.Errorf("save-dots keeps %g, want between selective-op %g and none %g", sd, sel, none)
	}
	// Offloading: only the layer input is a module input it keeps.
	o := s
	o.Offload = OffloadAttnNorm | OffloadQKVLinear | OffloadCoreAttn
	if got, want := m.OffloadBytes(0, o, RecomputeSaveDots), float64(T*4096*2); got != want {
		t.Errorf("save-dots offloads %g bytes, want the layer input's %g", got, want)
	}
}

// TestParseSaveDots: the spelling round-trips and a bad value names it.
func TestParseSaveDots(t *testing.T) {
	r, err := ParseRecompute("save-dots")
	if err != nil || r != RecomputeSaveDots || r.String() != "save-dots" {
		t.Errorf("ParseRecompute(save-dots) = %v, %v", r, err)
	}
	if _, err := ParseRecompute("dots"); err == nil || !strings.Contains(err.Error(), "selective-op, save-dots") {
		t.Errorf("ParseRecompute(dots) error %v should list the valid policies", err)
	}
	if !slices.Contains(RecomputeNames(), "save-dots") {
		t.Errorf("RecomputeNames %v lacks save-dots", RecomputeNames())
	}
}
