package workload

import "testing"

// TestAttentionHeadDimTiles checks by hand that a fused attention kernel
// executes its head dimension rounded up to a compiled tile. GPT 30B of the
// Megatron-DeepSpeed long-sequence runs: hidden 6144, 64 heads of 96, TP 32
// (2 local heads), micro-batch 1, sequence 4096. Causal FlashAttention runs
// sl·(seq+1)/2 = 4096·2048.5 scores per head, 2·(d_qk + d_v) FLOPs each:
// untiled 2·2·4096·2048.5·192; on Triton's power-of-two tiles (96 → 128)
// 2·2·4096·2048.5·256, 4/3 as much; on FlashAttention-2's tiles (96 is one)
// unchanged; head dimension 80 on FlashAttention-2 runs the 96 tile.
func TestAttentionHeadDimTiles(t *testing.T) {
	gpt := func(hidden, heads int) Model {
		m := Model{Name: "gpt", Layers: 2, Hidden: hidden, Heads: heads, FFN: 4 * hidden, Vocab: 50304,
			Activation: "gelu", Norm: "layernorm", MaxPositions: 4096}
		m.Fill()
		return m
	}
	attnFLOPs := func(m Model, tiles []int) float64 {
		s := Shape{MicroBatch: 1, Seq: 4096, Dtype: FP16, TP: 32, SP: true, FlashAttention: true, AttnHeadDims: tiles}
		for _, o := range m.LayerOps(0, s, Forward) {
			if o.Name == "flash_attn" {
				return o.FLOPs
			}
		}
		t.Fatal("no flash_attn op")
		return 0
	}
	triton := []int{16, 32, 64, 128}
	flash2 := []int{32, 64, 96, 128, 160, 192, 224, 256}
	scores := 2 * 4096 * 2048.5 // local heads × queries × mean keys
	for _, c := range []struct {
		name          string
		hidden, heads int
		tiles         []int
		want          float64
	}{
		{"d96 untiled (cuDNN)", 6144, 64, nil, 2 * scores * 192},
		{"d96 triton", 6144, 64, triton, 2 * scores * 256},
		{"d96 flash2", 6144, 64, flash2, 2 * scores * 192},
		{"d80 flash2", 5120, 64, flash2, 2 * scores * 192},
		{"d128 triton", 8192, 64, triton, 2 * scores * 256},
		{"d160 triton (above the last tile)", 10240, 64, triton, 2 * scores * 320},
	} {
		if got := attnFLOPs(gpt(c.hidden, c.heads), c.tiles); got != c.want {
			t.Errorf("%s: flash_attn FLOPs %g, want %g", c.name, got, c.want)
		}
	}
	if got := headDimTile(17, triton); got != 32 {
		t.Errorf("headDimTile(17, triton) = %d, want 32", got)
	}
}
