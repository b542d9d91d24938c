package workload

import (
	"slices"
	"testing"
)

// TestAttentionUnpad checks llm-foundry's unpadded flash path by hand on
// MPT-1B's layer shape (hidden 2048, 16 heads of 128, bf16) at micro-batch
// 12 and sequence 2048: T = 24,576 rows of 2,048 values, so one of Q, K, V
// or the output is x = T·2048·2 bytes. Forward: three gathers (read and
// write x each) before the kernel, a zero-fill (write x) and an index_put
// (read and write x) after it; backward: the output's gather, the kernel's
// backward, then a zero-fill and a scatter (read x, write 2x) for each of
// Q, K and V. Nothing else in the layer changes.
func TestAttentionUnpad(t *testing.T) {
	m := Model{Name: "mpt-1b", Layers: 24, Hidden: 2048, Heads: 16, FFN: 8192, Vocab: 50368,
		Activation: "gelu", Norm: "layernorm", TiedEmbeddings: true, MaxPositions: 2048}
	m.Fill()
	s := Shape{MicroBatch: 12, Seq: 2048, Dtype: BF16, FlashAttention: true}
	u := s
	u.AttentionUnpad = true
	x := 24576.0 * 2048 * 2
	core := func(sh Shape, p Pass) (names []string, read, write float64) {
		for _, o := range m.LayerOps(0, sh, p) {
			if o.Block == BlockAttnCore && o.Class == ClassMemory {
				names = append(names, o.Name)
				read += o.BytesRead
				write += o.BytesWritten
			}
		}
		return
	}
	fn, fr, fw := core(u, Forward)
	if want := []string{"unpad_gather_q", "unpad_gather_k", "unpad_gather_v", "pad_zeros", "pad_index_put"}; !slices.Equal(fn, want) || fr != 4*x || fw != 5*x {
		t.Errorf("forward %v read %g write %g, want %v read %g write %g", fn, fr, fw, want, 4*x, 5*x)
	}
	bn, br, bw := core(u, Backward)
	want := []string{"pad_gather_bwd", "unpad_zeros_q_bwd", "unpad_scatter_q_bwd", "unpad_zeros_k_bwd", "unpad_scatter_k_bwd", "unpad_zeros_v_bwd", "unpad_scatter_v_bwd"}
	if !slices.Equal(bn, want) || br != 4*x || bw != 7*x {
		t.Errorf("backward %v read %g write %g, want %v read %g write %g", bn, br, bw, want, 4*x, 7*x)
	}
	var pos []string
	for _, o := range m.LayerOps(0, u, Backward) {
		if o.Block == BlockAttnCore {
			pos = append(pos, o.Name)
		}
	}
	if i := slices.Index(pos, "flash_attn_bwd"); i != 1 {
		t.Errorf("backward order %v: the kernel's backward must follow the output's gather and precede the scatters", pos)
	}
	// Without a fused kernel there is nothing to unpad.
	s.FlashAttention, u.FlashAttention = false, false
	if a, b := m.LayerOps(0, s, Forward), m.LayerOps(0, u, Forward); len(a) != len(b) {
		t.Errorf("unfused attention: %d ops with unpad, %d without", len(b), len(a))
	}
}
