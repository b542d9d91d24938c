package workload

import (
	"fmt"
	"strings"
)

// Valid values of the string knobs of Model.
var (
	activations = []string{"gelu", "gelu_new", "swiglu", "relu2"}
	attentions  = []string{"mha", "mla"}
	norms       = []string{"layernorm", "rmsnorm"}
)

// ActivationNames, AttentionNames and NormNames list the values of
// model.activation, model.attention and model.norm (fresh slices).
func ActivationNames() []string { return append([]string(nil), activations...) }
func AttentionNames() []string  { return append([]string(nil), attentions...) }
func NormNames() []string       { return append([]string(nil), norms...) }

// Fill sets the defaults of scenario-format.md for zero fields: KVHeads =
// Heads, HeadDim = Hidden/Heads (when it divides), FFN = 4·Hidden,
// Activation gelu, Attention mha (mla when MLA is set), Norm layernorm, and
// for MoE ExpertFFN = FFN and CapacityFactor 1. Fill never fails; Validate
// reports what Fill could not repair.
func (m *Model) Fill() {
	if m.KVHeads == 0 {
		m.KVHeads = m.Heads
	}
	if m.HeadDim == 0 && m.Heads > 0 && m.Hidden > 0 && m.Hidden%m.Heads == 0 {
		m.HeadDim = m.Hidden / m.Heads
	}
	if m.FFN == 0 {
		m.FFN = 4 * m.Hidden
	}
	if m.Activation == "" {
		m.Activation = "gelu"
	}
	if m.Attention == "" {
		m.Attention = "mha"
		if m.MLA != nil {
			m.Attention = "mla"
		}
	}
	if m.Norm == "" {
		m.Norm = "layernorm"
	}
	if m.MoE != nil {
		if m.MoE.ExpertFFN == 0 {
			m.MoE.ExpertFFN = m.FFN
		}
		if m.MoE.CapacityFactor == 0 {
			m.MoE.CapacityFactor = 1
		}
	}
}

// Validate checks the architecture (call Fill first). Errors are one line and
// name the scenario field: "model.kv_heads: 5 does not divide model.heads 64".
func (m Model) Validate() error {
	pos := func(field string, v int) error {
		if v <= 0 {
			return fmt.Errorf("%s: %d must be positive", field, v)
		}
		return nil
	}
	for _, c := range []struct {
		f string
		v int
	}{{"model.layers", m.Layers}, {"model.hidden", m.Hidden}, {"model.heads", m.Heads},
		{"model.kv_heads", m.KVHeads}, {"model.ffn", m.FFN}, {"model.vocab", m.Vocab}} {
		if err := pos(c.f, c.v); err != nil {
			return err
		}
	}
	if m.Heads%m.KVHeads != 0 {
		return fmt.Errorf("model.kv_heads: %d does not divide model.heads %d", m.KVHeads, m.Heads)
	}
	if m.HeadDim == 0 && m.Attention != "mla" {
		return fmt.Errorf("model.head_dim: model.hidden %d is not divisible by model.heads %d; set model.head_dim", m.Hidden, m.Heads)
	}
	if m.HeadDim < 0 {
		return fmt.Errorf("model.head_dim: %d must be positive", m.HeadDim)
	}
	if m.MaxPositions < 0 {
		return fmt.Errorf("model.max_positions: %d must not be negative", m.MaxPositions)
	}
	if m.MTPLayers < 0 {
		return fmt.Errorf("model.mtp_layers: %d must not be negative (0 = no multi-token prediction)", m.MTPLayers)
	}
	if m.AttentionWindow < 0 {
		return fmt.Errorf("model.attention_window: %d must not be negative (0 = full attention)", m.AttentionWindow)
	}
	if m.FullAttentionEvery < 0 {
		return fmt.Errorf("model.full_attention_every: %d must not be negative (0 = every layer windowed)", m.FullAttentionEvery)
	}
	if m.FullAttentionEvery > 0 && m.AttentionWindow == 0 {
		return fmt.Errorf("model.full_attention_every: %d needs model.attention_window > 0", m.FullAttentionEvery)
	}
	if err := oneOf("model.activation", m.Activation, activations); err != nil {
		return err
	}
	if err := oneOf("model.attention", m.Attention, attentions); err != nil {
		return err
	}
	if err := oneOf("model.norm", m.Norm, norms); err != nil {
		return err
	}
	if m.Attention == "mla" {
		if m.MLA == nil {
			return fmt.Errorf("model.mla: required when model.attention is mla (kv_lora_rank, rope_head_dim, nope_head_dim, v_head_dim)")
		}
		for _, c := range []struct {
			f string
			v int
		}{{"model.mla.kv_lora_rank", m.MLA.KVLoRARank}, {"model.mla.rope_head_dim", m.MLA.RopeHeadDim},
			{"model.mla.nope_head_dim", m.MLA.NopeHeadDim}, {"model.mla.v_head_dim", m.MLA.VHeadDim}} {
			if err := pos(c.f, c.v); err != nil {
				return err
			}
		}
		if m.MLA.QLoRARank < 0 {
			return fmt.Errorf("model.mla.q_lora_rank: %d must not be negative (0 = no query compression)", m.MLA.QLoRARank)
		}
	}
	if e := m.MoE; e != nil {
		if err := pos("model.moe.experts", e.Experts); err != nil {
			return err
		}
		if e.TopK <= 0 || e.TopK > e.Experts {
			return fmt.Errorf("model.moe.top_k: %d must be between 1 and model.moe.experts %d", e.TopK, e.Experts)
		}
		if err := pos("model.moe.expert_ffn", e.ExpertFFN); err != nil {
			return err
		}
		if e.SharedExperts < 0 {
			return fmt.Errorf("model.moe.shared_experts: %d must not be negative", e.SharedExperts)
		}
		if e.DenseLayers < 0 || e.DenseLayers > m.Layers {
			return fmt.Errorf("model.moe.dense_layers: %d must be between 0 and model.layers %d", e.DenseLayers, m.Layers)
		}
		if !(e.CapacityFactor > 0) {
			return fmt.Errorf("model.moe.capacity_factor: %v must be positive", e.CapacityFactor)
		}
	}
	return nil
}

func oneOf(field, v string, valid []string) error {
	for _, s := range valid {
		if v == s {
			return nil
		}
	}
	return fmt.Errorf("%s: unknown value %q (valid: %s)", field, v, strings.Join(valid, ", "))
}

// IsMoELayer reports whether layer (0-based) has a routed-expert MLP: the
// model has MoE and the layer is past the DenseLayers dense ones.
func (m Model) IsMoELayer(layer int) bool {
	return m.MoE != nil && layer >= 0 && layer < m.StackLayers() && m.specLayer(layer) >= m.MoE.DenseLayers
}

// StackLayers is the number of transformer layers a step runs: the
// decoder's Layers and one per multi-token-prediction module, numbered
// after them.
func (m Model) StackLayers() int { return m.Layers + max(m.MTPLayers, 0) }

// IsMTPLayer reports whether layer is the transformer layer of a
// multi-token-prediction module (Model.MTPLayers).
func (m Model) IsMTPLayer(layer int) bool { return layer >= m.Layers && layer < m.StackLayers() }

// specLayer is the decoder layer whose kind layer has: itself, or for a
// multi-token-prediction layer the decoder's last layer (Megatron-Core
// builds the MTP block from the last decoder layer's spec,
// get_gpt_mtp_block_spec; DeepSeek-V3's MTP modules are MoE layers).
func (m Model) specLayer(layer int) int {
	if layer >= m.Layers {
		return m.Layers - 1
	}
	return layer
}

// Window returns the sliding attention window of layer (0-based) in tokens,
// 0 for a full-attention layer (Model.AttentionWindow, FullAttentionEvery).
func (m Model) Window(layer int) int {
	if m.AttentionWindow <= 0 {
		return 0
	}
	layer = m.specLayer(layer)
	if k := m.FullAttentionEvery; k > 0 && (layer+1)%k == 0 {
		return 0
	}
	return m.AttentionWindow
}

// causalKeys is the mean number of keys a query attends to in a causal
// sequence of seq tokens with sliding window w (0 = none): query i (0-based)
// sees min(i+1, w) keys, so the mean is (seq+1)/2 without a window and
// (w(w+1)/2 + (seq−w)·w)/seq when w < seq.
func causalKeys(seq, w int) float64 {
	s := float64(seq)
	if w <= 0 || w >= seq {
		return (s + 1) / 2
	}
	fw := float64(w)
	return (fw*(fw+1)/2 + (s-fw)*fw) / s
}

// attnDims are the per-head widths of attention.
type attnDims struct {
	heads, kvHeads int // query heads; key/value heads as the attention kernel sees them
	qk, v          int // per-head query/key and value widths
}

// dims returns the attention widths: for MLA the kernel sees Heads key/value
// heads of width nope+rope (keys) and v (values) after the up-projections.
func (m Model) dims() attnDims {
	if m.Attention == "mla" && m.MLA != nil {
		return attnDims{m.Heads, m.Heads, m.MLA.NopeHeadDim + m.MLA.RopeHeadDim, m.MLA.VHeadDim}
	}
	return attnDims{m.Heads, m.KVHeads, m.HeadDim, m.HeadDim}
}

// glu reports whether the MLP is gated (two input projections).
func (m Model) glu() bool { return m.Activation == "swiglu" }

// fc1Width is the output width of the MLP's first projection for inner size f.
func (m Model) fc1Width(f int) int {
	if m.glu() {
		return 2 * f
	}
	return f
}

// normParams is the parameter count of one norm over width w.
func (m Model) normParams(w int) float64 {
	if m.Norm == "rmsnorm" {
		return float64(w)
	}
	return 2 * float64(w) // LayerNorm scale and shift
}

// usesRoPE reports whether rotary embeddings are applied (no learned table).
func (m Model) usesRoPE() bool { return m.MaxPositions == 0 }
