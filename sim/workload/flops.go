package workload

import (
	"fmt"
	"strings"
)

// attnFLOPsPerToken is one layer's forward attention-matrix FLOPs per token
// at sequence length seq by the model-FLOPs convention: QKᵀ and the
// probability-weighted sum over all seq keys (2·seq·heads·d_qk +
// 2·seq·heads·d_v), with no causal discount. For multi-head attention with
// d = h/heads this is 4·seq·h.
func (m Model) attnFLOPsPerToken(seq int) float64 {
	d := m.dims()
	return 2 * float64(seq) * float64(d.heads) * float64(d.qk+d.v)
}

// attnFLOPsAllLayers sums attnFLOPsPerToken over the layers, each at the
// keys it can see: seq, or its sliding window when shorter (the same
// no-causal-discount convention: a query is counted against a full window).
//
// The attention dimensions are read once, not per layer, and without a
// window shorter than seq (Window is 0 or AttentionWindow) every layer
// sees seq keys and the model is not asked per layer: a Model method
// copies the model, and per layer that was most of this function's cost,
// once or twice a point. Each term is the same product attnFLOPsPerToken
// forms, added in the same order.
func (m Model) attnFLOPsAllLayers(seq int) float64 {
	d := m.dims()
	heads, dqv := float64(d.heads), float64(d.qk+d.v)
	n := m.StackLayers()
	var f float64
	if m.AttentionWindow <= 0 || m.AttentionWindow >= seq {
		t := float64(2 * float64(seq) * heads * dqv) // (rounded as attnFLOPsPerToken returns it)
		for range n {
			f += t
		}
		return f
	}
	for l := range n {
		k := seq
		if w := m.Window(l); w > 0 && w < seq {
			k = w
		}
		f += float64(2 * float64(k) * heads * dqv)
	}
	return f
}

// attnFLOPsAllLayersEach is attnFLOPsAllLayers as first written, calling
// attnFLOPsPerToken per layer: the reference its tests compare with.
func (m Model) attnFLOPsAllLayersEach(seq int) float64 {
	var f float64
	for l := 0; l < m.StackLayers(); l++ {
		k := seq
		if w := m.Window(l); w > 0 && w < seq {
			k = w
		}
		f += m.attnFLOPsPerToken(k)
	}
	return f
}

// ModelFLOPsPerToken is the training (forward + backward) FLOPs per token by
// the standard convention (Kaplan et al. 2020; Narayanan et al. 2021 [SC21]
// Appendix; Chowdhery et al. 2022 [PaLM] Appendix B), with no recomputation:
//
//	6·N_matmul + 3·L·attn(seq),  attn(seq) = 2·seq·heads·(d_qk + d_v)
//
// where N_matmul = Params().Matmul (active projection weights, routers and
// the LM head; no embedding lookup, norms or biases) and the attention term
// counts QKᵀ and the weighted sum over the full sequence (no causal
// discount; a sliding-window layer counts its window when shorter). For a GPT (h = heads·d, FFN 4h) this is 72·l·h² + 12·l·h·s +
// 6·h·V per token, i.e. Megatron's 72·B·s·l·h²·(1 + s/6h + V/12lh) per step
// of B·s tokens. Multi-token prediction counts each module's layer,
// eh_proj and pass through the LM head, and its layer's attention, as
// Megatron-LM's num_floating_point_operations does (training.py at
// 9c5258f109: mtp_num_layers added to the layer counts, 2h² per module,
// the logits × (1 + mtp_num_layers); its 3h norm term is left out here
// like every norm). Kernel FLOPs (Op.FLOPs) differ: causal FlashAttention
// skips half the scores and its backward recomputes them.
func (m Model) ModelFLOPsPerToken(seq int) float64 {
	return 6*m.Params().Matmul + 3*m.attnFLOPsAllLayers(seq)
}

// RecomputesLayer reports whether full recomputation applied to every k-th
// layer (training.recompute_every) recomputes the layer at 1-based position
// pos among one rank's layers in model order: torchtitan's selective layer
// checkpointing counts the TransformerBlocks it wraps and checkpoints those
// whose count is a multiple of k (parallelize_llama.py checkpoint_wrapper at
// 613bfd0cf). every ≤ 1 recomputes every layer.
func RecomputesLayer(every, pos int) bool { return every <= 1 || pos%every == 0 }

// HardwareFLOPsPerToken adds the FLOPs of recomputation to
// ModelFLOPsPerToken: selective recompute redoes the attention core
// (+L·attn(seq)); full recompute redoes the forward of every transformer
// layer (+2·(N_matmul − V·h) + L·attn(seq)), which for a GPT gives the SC21
// paper's 96·B·s·l·h²·(1 + s/6h + V/16lh) per step; selective-op redoes
// every second projection matmul of each layer (2 × those weights);
// save-dots reruns no matmul and adds nothing. The convention does not
// depend on the attention kernel: FlashAttention's in-kernel recomputation
// is not counted.
func (m Model) HardwareFLOPsPerToken(seq int, r Recompute) float64 {
	f := m.ModelFLOPsPerToken(seq)
	attn := m.attnFLOPsAllLayers(seq)
	switch r {
	case RecomputeSelective:
		f += attn
	case RecomputeFull:
		heads := float64(1+max(m.MTPLayers, 0)) * float64(m.Vocab) * float64(m.Hidden)
		f += 2*(m.Params().Matmul-heads) + attn
	case RecomputeSelectiveOp:
		f += m.selectiveOpMatmulFLOPsPerToken()
	}
	return f
}

// selectiveOpMatmulFLOPsPerToken is the per-token FLOPs of the projection
// matmuls that per-op selective checkpointing recomputes, summed over the
// layers: 2 × the weights of every second projection of each layer
// (RecomputeOps), routed experts counted at their top-k × capacity share.
func (m Model) selectiveOpMatmulFLOPsPerToken() float64 {
	const seq = 1 << 12 // any length: projection FLOPs are linear in tokens
	s := Shape{MicroBatch: 1, Seq: seq, Dtype: BF16, FlashAttention: true}
	f := 0.0
	for l := 0; l < m.StackLayers(); l++ {
		for _, o := range m.RecomputeOps(l, s, RecomputeSelectiveOp) {
			if o.Class == ClassGEMM && o.Block != BlockAttnCore {
				f += o.FLOPs
			}
		}
	}
	return f / seq
}

// recomputeNames are the scenario spellings of Recompute, in order.
var recomputeNames = [...]string{"none", "selective", "full", "selective-op", "save-dots"}

// RecomputeNames lists the values of training.recompute (a fresh slice).
func RecomputeNames() []string { return append([]string(nil), recomputeNames[:]...) }

// ParseRecompute parses none | selective | full | selective-op | save-dots.
func ParseRecompute(s string) (Recompute, error) {
	for i, n := range recomputeNames {
		if s == n {
			return Recompute(i), nil
		}
	}
	return 0, fmt.Errorf("unknown recompute policy %q (valid: %s)", s, strings.Join(recomputeNames[:], ", "))
}

// String is the scenario spelling.
func (r Recompute) String() string {
	if int(r) < len(recomputeNames) {
		return recomputeNames[r]
	}
	return "recompute(?)"
}
