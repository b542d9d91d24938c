package workload

import (
	"fmt"
	"strings"
)

// preset is one catalog entry; build returns a fresh Model so callers may
// modify the MoE and MLA blocks of their copy.
type preset struct {
	name  string
	build func() Model
}

// gpt3 builds a GPT-3 family member (Brown et al. 2020, arXiv:2005.14165,
// Table 2.1: n_layers, d_model, n_heads, context 2048). GPT-3 is GPT-2's
// architecture: learned positions, pre-LayerNorm, GELU MLP of 4·d_model,
// biases, tied input/output embeddings, dropout. The BPE vocabulary of 50257
// is padded to 51200 as Megatron-LM does (and issue 3 requires).
func gpt3(name string, layers, hidden, heads int, note string) preset {
	src := "Brown et al. 2020 (arXiv:2005.14165) Table 2.1; vocab 50257 padded to 51200 (Megatron-LM)"
	if note != "" {
		src += "; " + note
	}
	return preset{name, func() Model {
		return Model{Name: name, Layers: layers, Hidden: hidden, Heads: heads, Vocab: 51200,
			Activation: "gelu", Norm: "layernorm", TiedEmbeddings: true, Bias: true,
			MaxPositions: 2048, Dropout: true, Source: src}
	}}
}

// llama builds a Llama-family member: RMSNorm, SwiGLU, RoPE, no biases,
// untied embeddings.
func llama(name string, layers, hidden, heads, kv, ffn, vocab int, src string) preset {
	return preset{name, func() Model {
		return Model{Name: name, Layers: layers, Hidden: hidden, Heads: heads, KVHeads: kv,
			FFN: ffn, Vocab: vocab, Activation: "swiglu", Norm: "rmsnorm", Source: src}
	}}
}

// catalog is ordered by family; PresetNames returns this order.
var catalog = []preset{
	gpt3("gpt3-125m", 12, 768, 12, ""),
	gpt3("gpt3-350m", 24, 1024, 16, ""),
	gpt3("gpt3-1.3b", 24, 2048, 16, "Table 2.1 lists 24 heads of d_head 128, which does not tile d_model 2048; we keep d_head 128, i.e. 16 heads"),
	gpt3("gpt3-2.7b", 32, 2560, 32, ""),
	gpt3("gpt3-6.7b", 32, 4096, 32, ""),
	gpt3("gpt3-13b", 40, 5120, 40, "Table 2.1's d_model 5140 is not a multiple of its 40 heads; we use 5120 (40 × d_head 128) as Megatron-LM does"),
	gpt3("gpt3-175b", 96, 12288, 96, ""),

	llama("llama2-7b", 32, 4096, 32, 32, 11008, 32000,
		"Touvron et al. 2023 (arXiv:2307.09288) Table 1; meta-llama/Llama-2-7b-hf config.json"),
	llama("llama2-13b", 40, 5120, 40, 40, 13824, 32000,
		"Touvron et al. 2023 (arXiv:2307.09288) Table 1; meta-llama/Llama-2-13b-hf config.json"),
	llama("llama2-70b", 80, 8192, 64, 8, 28672, 32000,
		"Touvron et al. 2023 (arXiv:2307.09288) Table 1 (GQA); meta-llama/Llama-2-70b-hf config.json"),
	llama("llama3-8b", 32, 4096, 32, 8, 14336, 128256,
		"Llama Team 2024 (arXiv:2407.21783) Table 3; meta-llama/Meta-Llama-3-8B config.json"),
	llama("llama3-70b", 80, 8192, 64, 8, 28672, 128256,
		"Llama Team 2024 (arXiv:2407.21783) Table 3; meta-llama/Meta-Llama-3-70B config.json"),
	llama("llama3-405b", 126, 16384, 128, 8, 53248, 128256,
		"Llama Team 2024 (arXiv:2407.21783) Table 3; meta-llama/Llama-3.1-405B config.json"),

	{"mixtral-8x7b", func() Model {
		m := llama("", 32, 4096, 32, 8, 14336, 32000, "").build()
		m.Name = "mixtral-8x7b"
		m.MoE = &MoE{Experts: 8, TopK: 2}
		m.Source = "Jiang et al. 2024 (arXiv:2401.04088) Table 1; mistralai/Mixtral-8x7B-v0.1 config.json (46.7B total, 12.9B active)"
		return m
	}},
	{"mixtral-8x22b", func() Model {
		m := llama("", 56, 6144, 48, 8, 16384, 32768, "").build()
		m.Name = "mixtral-8x22b"
		m.MoE = &MoE{Experts: 8, TopK: 2}
		m.Source = "Mistral AI, Mixtral 8x22B release (141B total, 39B active); mistralai/Mixtral-8x22B-v0.1 config.json"
		return m
	}},
	{"qwen3-30b-a3b", func() Model {
		m := llama("", 48, 2048, 32, 4, 6144, 151936, "").build()
		m.Name, m.HeadDim, m.QKNorm = "qwen3-30b-a3b", 128, true
		m.MoE = &MoE{Experts: 128, TopK: 8, ExpertFFN: 768}
		m.Source = "Qwen Team 2025 (arXiv:2505.09388) Table 2; Qwen/Qwen3-30B-A3B config.json (30.5B total, 3.3B active)"
		return m
	}},
	{"qwen3-235b-a22b", func() Model {
		m := llama("", 94, 4096, 64, 4, 12288, 151936, "").build()
		m.Name, m.HeadDim, m.QKNorm = "qwen3-235b-a22b", 128, true
		m.MoE = &MoE{Experts: 128, TopK: 8, ExpertFFN: 1536}
		m.Source = "Qwen Team 2025 (arXiv:2505.09388) Table 2; Qwen/Qwen3-235B-A22B config.json (235B total, 22B active)"
		return m
	}},

	{"gpt-oss-120b", func() Model {
		return gptOSS("gpt-oss-120b", 36, 128)
	}},
	{"gpt-oss-20b", func() Model {
		return gptOSS("gpt-oss-20b", 24, 32)
	}},

	{"nemotron-15b", func() Model {
		return Model{Name: "nemotron-15b", Layers: 32, Hidden: 6144, Heads: 48, KVHeads: 8,
			FFN: 24576, Vocab: 256000, Activation: "relu2", Norm: "layernorm",
			Source: "Nemotron-4 15B, Parmar et al. 2024 (arXiv:2402.16819) Table 1 (3.2B embedding + 12.5B non-embedding)"}
	}},
	{"nemotron-340b", func() Model {
		return Model{Name: "nemotron-340b", Layers: 96, Hidden: 18432, Heads: 96, KVHeads: 8,
			FFN: 73728, Vocab: 256000, Activation: "relu2", Norm: "layernorm",
			Source: "Nemotron-4 340B, NVIDIA 2024 (arXiv:2406.11704) Table 1 (9.4B embedding + 331.6B non-embedding)"}
	}},

	{"deepseek-v3", func() Model {
		return Model{Name: "deepseek-v3", Layers: 61, Hidden: 7168, Heads: 128, KVHeads: 128,
			HeadDim: 192, FFN: 18432, Vocab: 129280, Activation: "swiglu", Attention: "mla", Norm: "rmsnorm",
			MLA:    &MLA{QLoRARank: 1536, KVLoRARank: 512, RopeHeadDim: 64, NopeHeadDim: 128, VHeadDim: 128},
			MoE:    &MoE{Experts: 256, TopK: 8, ExpertFFN: 2048, SharedExperts: 1, DenseLayers: 3},
			Source: "DeepSeek-AI 2024 (arXiv:2412.19437) §4.2; deepseek-ai/DeepSeek-V3 config.json (671B total, 37B active; the 14B multi-token-prediction module is not counted)"}
	}},
}

// PresetNames lists the catalog names, grouped by family.
func PresetNames() []string {
	names := make([]string, len(catalog))
	for i, p := range catalog {
		names[i] = p.name
	}
	return names
}

// Preset returns a catalog model with defaults filled; the error lists names.
func Preset(name string) (Model, error) {
	k := strings.ToLower(strings.TrimSpace(name))
	for _, p := range catalog {
		if p.name == k {
			m := p.build()
			m.Fill()
			return m, nil
		}
	}
	return Model{}, fmt.Errorf("unknown model preset %q (valid: %s)", name, strings.Join(PresetNames(), ", "))
}

// gptOSS is OpenAI's gpt-oss architecture (OpenAI 2025, "gpt-oss-120b &
// gpt-oss-20b Model Card", arXiv:2508.10925, Table 1 and §2.1;
// openai/gpt-oss-120b and -20b config.json): residual width 2880, 64 query
// heads and 8 key/value heads of 64, every MoE layer top-4 with experts of
// width 2880 (SwiGLU), biases in the attention and expert projections,
// o200k_harmony vocabulary 201,088, untied embeddings, and attention that
// alternates a 128-token band with full causal attention, starting banded
// (layer_types sliding, full, …). The learned attention sinks (one scalar
// per head) are not costed.
func gptOSS(name string, layers, experts int) Model {
	return Model{Name: name, Layers: layers, Hidden: 2880, Heads: 64, KVHeads: 8, HeadDim: 64,
		FFN: 2880, Vocab: 201088, Activation: "swiglu", Norm: "rmsnorm", Bias: true,
		AttentionWindow: 128, FullAttentionEvery: 2,
		MoE:    &MoE{Experts: experts, TopK: 4, ExpertFFN: 2880},
		Source: "OpenAI 2025, gpt-oss model card (arXiv:2508.10925) Table 1; openai/" + name + " config.json (sliding_window 128, layer_types alternating sliding/full)"}
}
