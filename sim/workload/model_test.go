package workload

import (
	"math"
	"strings"
	"testing"
)

func TestFillDefaults(t *testing.T) {
	m := Model{Layers: 2, Hidden: 1024, Heads: 16, Vocab: 1000, MoE: &MoE{Experts: 4, TopK: 1}}
	m.Fill()
	if m.KVHeads != 16 || m.HeadDim != 64 || m.FFN != 4096 || m.Activation != "gelu" ||
		m.Attention != "mha" || m.Norm != "layernorm" || m.MoE.ExpertFFN != 4096 || m.MoE.CapacityFactor != 1 {
		t.Errorf("Fill defaults wrong: %+v %+v", m, *m.MoE)
	}
	mla := Model{Layers: 1, Hidden: 64, Heads: 2, Vocab: 10, MLA: &MLA{KVLoRARank: 8, RopeHeadDim: 4, NopeHeadDim: 8, VHeadDim: 8}}
	mla.Fill()
	if mla.Attention != "mla" {
		t.Errorf("an MLA block implies attention mla, got %q", mla.Attention)
	}
	if err := mla.Validate(); err != nil {
		t.Errorf("valid MLA model rejected: %v", err)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	base := func() Model {
		m := Model{Layers: 2, Hidden: 1024, Heads: 64, Vocab: 1000}
		m.Fill()
		return m
	}
	for _, c := range []struct {
		edit func(*Model)
		want string
	}{
		{func(m *Model) { m.KVHeads = 5 }, "model.kv_heads: 5 does not divide model.heads 64"},
		{func(m *Model) { m.Layers = 0 }, "model.layers: 0 must be positive"},
		{func(m *Model) { m.Hidden = -1 }, "model.hidden: -1 must be positive"},
		{func(m *Model) { m.Vocab = 0 }, "model.vocab: 0 must be positive"},
		{func(m *Model) { m.Activation = "tanh" }, `model.activation: unknown value "tanh" (valid: gelu, gelu_new, swiglu, relu2)`},
		{func(m *Model) { m.Norm = "batchnorm" }, `model.norm: unknown value "batchnorm" (valid: layernorm, rmsnorm)`},
		{func(m *Model) { m.Attention = "mla" }, "model.mla: required when model.attention is mla"},
		{func(m *Model) { m.Hidden, m.HeadDim = 1000, 0 }, "model.head_dim: model.hidden 1000 is not divisible by model.heads 64"},
		{func(m *Model) { m.MoE = &MoE{Experts: 8, TopK: 9, ExpertFFN: 1, CapacityFactor: 1} }, "model.moe.top_k: 9 must be between 1 and model.moe.experts 8"},
		{func(m *Model) { m.MoE = &MoE{Experts: 8, TopK: 2, ExpertFFN: 1, CapacityFactor: 1, DenseLayers: 3} }, "model.moe.dense_layers: 3 must be between 0 and model.layers 2"},
		{func(m *Model) { m.MoE = &MoE{Experts: 8, TopK: 2, ExpertFFN: 1, CapacityFactor: -1} }, "model.moe.capacity_factor: -1 must be positive"},
	} {
		m := base()
		c.edit(&m)
		err := m.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Validate() = %v, want %q", err, c.want)
		}
	}
	if err := base().Validate(); err != nil {
		t.Errorf("valid model rejected: %v", err)
	}
}

func TestPresetsLoadAndValidate(t *testing.T) {
	names := PresetNames()
	if len(names) != 22 {
		t.Errorf("%d presets, want the 22 of docs/scenario-format.md", len(names))
	}
	for _, n := range names {
		m, err := Preset(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Validate(); err != nil {
			t.Errorf("%s: %v", n, err)
		}
		if m.Name != n || m.Source == "" {
			t.Errorf("%s: name %q, source %q", n, m.Name, m.Source)
		}
	}
	_, err := Preset("gpt5")
	if err == nil || !strings.Contains(err.Error(), "llama3-70b") {
		t.Errorf("unknown preset error should list the names: %v", err)
	}
	// Presets are independent copies: editing one's MoE block leaves the catalog alone.
	a, _ := Preset("mixtral-8x7b")
	a.MoE.Experts = 1
	if b, _ := Preset("mixtral-8x7b"); b.MoE.Experts != 8 {
		t.Error("Preset shares its MoE block between calls")
	}
}

// TestParamCounts checks every preset against its source's figure. A
// figure with three significant digits must match ours rounded to three
// digits (tolerance half a unit of the last digit). Figures the source
// truncates ("37B activated") or rounds to a nickname ("350M") are checked
// against the interval they stand for, stated per row.
func TestParamCounts(t *testing.T) {
	const B = 1e9
	for _, c := range []struct {
		name     string
		lo, hi   float64 // total
		alo, ahi float64 // active (0: dense)
		source   string
	}{
		{"gpt3-175b", 174.55 * B, 174.65 * B, 0, 0, "issue 3: 174.6B with vocab 51200 (Brown et al. Table 2.1: 175.0B)"},
		{"gpt3-13b", 12.5 * B, 13.5 * B, 0, 0, "Table 2.1: 13.0B (we use d_model 5120, not 5140)"},
		{"gpt3-6.7b", 6.65 * B, 6.75 * B, 0, 0, "Table 2.1: 6.7B"},
		{"gpt3-2.7b", 2.65 * B, 2.75 * B, 0, 0, "Table 2.1: 2.7B"},
		{"gpt3-1.3b", 1.25 * B, 1.35 * B, 0, 0, "Table 2.1: 1.3B"},
		{"gpt3-350m", 0.35 * B, 0.36 * B, 0, 0, "Table 2.1: 350M, a nickname: 24×1024 with vocab 51200 gives 356.8M"},
		{"gpt3-125m", 0.125 * B, 0.127 * B, 0, 0, "Table 2.1: 125M (125.2M with vocab 50257; 126.0M padded to 51200)"},
		{"llama2-7b", 6.735 * B, 6.745 * B, 0, 0, "Llama-2-7b-hf: 6.74B"},
		{"llama2-13b", 12.95 * B, 13.05 * B, 0, 0, "Llama-2-13b-hf: 13.0B"},
		{"llama2-70b", 68.95 * B, 69.05 * B, 0, 0, "Llama-2-70b-hf: 69.0B"},
		{"llama3-8b", 8.025 * B, 8.035 * B, 0, 0, "issue 3: 8.03B"},
		{"llama3-70b", 70.55 * B, 70.65 * B, 0, 0, "issue 3: 70.6B"},
		{"llama3-405b", 405.85 * B, 405.95 * B, 0, 0, "issue 3: 405.9B"},
		{"mixtral-8x7b", 46.65 * B, 46.75 * B, 12.85 * B, 12.95 * B, "issue 3, Jiang et al. 2024: 46.7B / 12.9B"},
		{"mixtral-8x22b", 140.5 * B, 141.5 * B, 38.5 * B, 39.5 * B, "Mistral AI: 141B / 39B"},
		{"qwen3-30b-a3b", 30.45 * B, 30.55 * B, 3.3 * B, 3.4 * B, "Qwen3 report: 30.5B / 3.3B activated (truncated; we count 3.35B)"},
		{"qwen3-235b-a22b", 234.5 * B, 235.5 * B, 22 * B, 23 * B, "Qwen3 report: 235B / 22B activated (truncated)"},
		{"nemotron-15b", 15.55 * B, 15.75 * B, 0, 0, "arXiv:2402.16819: 12.5B non-embedding + 3.2B embedding (we count 12.48 + 3.15)"},
		{"nemotron-340b", 340.95 * B, 341.05 * B, 0, 0, "arXiv:2406.11704: 331.6B non-embedding + 9.4B embedding"},
		{"deepseek-v3", 670.5 * B, 671.5 * B, 37 * B, 38 * B, "arXiv:2412.19437: 671B total, 37B activated (truncated; we count 37.55B)"},
	} {
		m, _ := Preset(c.name)
		p := m.Params()
		if p.Total < c.lo || p.Total >= c.hi {
			t.Errorf("%s total %.4gB outside [%.4g, %.4g)B: %s", c.name, p.Total/B, c.lo/B, c.hi/B, c.source)
		}
		if c.ahi == 0 && p.Active != p.Total {
			t.Errorf("%s: dense model with active %.4gB != total", c.name, p.Active/B)
		}
		if c.ahi > 0 && (p.Active < c.alo || p.Active >= c.ahi) {
			t.Errorf("%s active %.4gB outside [%.4g, %.4g)B: %s", c.name, p.Active/B, c.alo/B, c.ahi/B, c.source)
		}
	}
	// Exact counts where the released checkpoints state them.
	for _, c := range []struct {
		name  string
		total float64
	}{
		{"llama3-8b", 8030261248},     // Meta-Llama-3-8B safetensors total
		{"llama2-7b", 6738415616},     // Llama-2-7b-hf
		{"mixtral-8x7b", 46702792704}, // Mixtral-8x7B-v0.1
	} {
		m, _ := Preset(c.name)
		if got := m.Params().Total; got != c.total {
			t.Errorf("%s: %.0f parameters, checkpoint has %.0f", c.name, got, c.total)
		}
	}
	// Nemotron-4 340B's two published halves, to four digits.
	m, _ := Preset("nemotron-340b")
	p := m.Params()
	if math.Abs(p.Embedding/1e9-9.4) > 0.05 || math.Abs((p.Total-p.Embedding)/1e9-331.6) > 0.05 {
		t.Errorf("nemotron-340b: embedding %.4gB, non-embedding %.4gB; want 9.4 / 331.6", p.Embedding/1e9, (p.Total-p.Embedding)/1e9)
	}
}

func TestIsMoELayer(t *testing.T) {
	m, _ := Preset("deepseek-v3")
	for _, c := range []struct {
		layer int
		want  bool
	}{{0, false}, {2, false}, {3, true}, {60, true}, {61, false}, {-1, false}} {
		if got := m.IsMoELayer(c.layer); got != c.want {
			t.Errorf("IsMoELayer(%d) = %v", c.layer, got)
		}
	}
	d, _ := Preset("llama3-8b")
	if d.IsMoELayer(0) {
		t.Error("dense model has MoE layers")
	}
}

func TestLayerParams(t *testing.T) {
	for _, n := range []string{"llama3-8b", "mixtral-8x7b", "deepseek-v3", "gpt3-175b"} {
		m, _ := Preset(n)
		sum := m.embeddingParams() + m.headParams()
		for l := range m.Layers {
			d, e := m.LayerParams(l)
			sum += d + e
			if !m.IsMoELayer(l) && e != 0 {
				t.Errorf("%s layer %d: dense layer with %v expert params", n, l, e)
			}
		}
		if sum != m.Params().Total {
			t.Errorf("%s: layers + embedding + head = %.0f, Params %.0f", n, sum, m.Params().Total)
		}
	}
	m, _ := Preset("mixtral-8x7b")
	// 8 experts × 3·4096·14336 routed; attention 41,943,040 + norms 8192 + router 32,768 dense.
	if d, e := m.LayerParams(0); d != 41943040+8192+32768 || e != 8*3*4096*14336 {
		t.Errorf("mixtral layer 0: dense %.0f expert %.0f", d, e)
	}
	if d, e := m.LayerParams(-1); d != 0 || e != 0 {
		t.Error("out-of-range layer has parameters")
	}
}
