package validation

import (
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/simulation"
	"math"
	"strings"
	"testing"
)

func expectNear(got, want, tol float64) bool { return math.Abs(got-want) <= tol*math.Abs(want) }

// sc21Scenario is Narayanan et al. SC21 Table 1's first row (GPT 1.7B on 32
// A100s, 137 TFLOP/s per GPU by the paper's formula).
const sc21Scenario = `
name: sc21-gpt-1.7b
model: {preset: gpt3-175b, layers: 24, hidden: 2304, heads: 24, kv_heads: 24, ffn: 9216, vocab: 51200}
training: {seq_len: 2048, global_batch: 512, micro_batch: 16, precision: fp16, recompute: full}
cluster: {gpu: a100-80gb, nodes: 4}
expect: {tflops_per_gpu: 137, source: "arXiv:2104.04473 Table 1", flops_convention: megatron-sc21}
`

// smallScenario is a 2-layer MHA model (h 1024, 8 heads of 128, FFN 4096,
// vocabulary 1000, untied, no biases) with sequences of 1024 tokens, 16 per
// step, on one 8-GPU node; its expect: block is appended by each test.
const smallScenario = `
name: small
model: {layers: 2, hidden: 1024, heads: 8, ffn: 4096, vocab: 1000}
training: {seq_len: 1024, global_batch: 16, micro_batch: 2}
cluster: {gpu: h100-sxm, nodes: 1}
`

func parseExpect(t *testing.T, doc string) *scenario.Plan {
	t.Helper()
	s, err := scenario.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSourceFLOPs checks each convention against a hand derivation.
func TestSourceFLOPs(t *testing.T) {
	// SC21 Appendix: F = 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) with
	// B = 512, s = 2048, l = 24, h = 2304, V = 51200:
	// 96·512·2048·24 = 2.4159e9; ·2304² = 1.28245e16;
	// 1 + 2048/13824 + 51200/884736 = 1.206019 → F = 1.546683e16 FLOPs.
	// At 137 TFLOP/s on 32 GPUs: 1.546683e16 / 4.384e15 = 3.5280 s.
	s := parseExpect(t, sc21Scenario)
	wantF := 96.0 * 512 * 2048 * 24 * 2304 * 2304 * (1 + 2048.0/(6*2304) + 51200.0/(16*24*2304))
	f, err := SourceFLOPsPerStep(s)
	if err != nil || !expectNear(f, wantF, 1e-12) || !expectNear(f, 1.546683e16, 1e-6) {
		t.Errorf("sc21 FLOPs %g (%v), want %g", f, err, wantF)
	}
	st, err := MeasuredStepTimeS(s)
	if err != nil || !expectNear(st, wantF/(137e12*32), 1e-12) || !expectNear(st, 3.5280, 1e-4) {
		t.Errorf("sc21 step time %g (%v), want 3.5280 s", st, err)
	}

	// Model FLOPs of the small model per token: matmul weights per layer
	// 4h² + 2·h·ffn = 4,194,304 + 8,388,608 = 12,582,912; two layers plus
	// the LM head V·h = 1,024,000 give N = 26,189,824 and 6N = 157,138,944.
	// Attention: 3 passes × 2 layers × 2·s·heads·(d_qk + d_v) =
	// 6 · 2·1024·8·256 = 25,165,824. Total 182,304,768 per token (full),
	// 157,138,944 + 12,582,912 = 169,721,856 with causal attention.
	// Tokens per step 16·1024 = 16,384.
	for _, c := range []struct {
		extra    string
		perToken float64
	}{
		{"flops_convention: model", 182304768},
		{"flops_convention: model, attention_flops: full", 182304768},
		{"flops_convention: model, attention_flops: causal", 169721856},
		// Hardware FLOPs without recomputation are the model FLOPs.
		{"flops_convention: hardware", 182304768},
	} {
		s := parseExpect(t, smallScenario+"expect: {mfu: 0.4, source: x, "+c.extra+"}\n")
		f, err := SourceFLOPsPerStep(s)
		if err != nil || !expectNear(f, c.perToken*16384, 1e-12) {
			t.Errorf("%s: %g FLOPs (%v), want %g", c.extra, f, err, c.perToken*16384)
		}
		// MFU 0.4 of 8 × 989 TFLOP/s (BF16 dense) → F / 3.1648e15 s.
		st, err := MeasuredStepTimeS(s)
		if err != nil || !expectNear(st, c.perToken*16384/(0.4*989e12*8), 1e-12) {
			t.Errorf("%s: step time %g (%v)", c.extra, st, err)
		}
	}
	// Full recomputation adds a forward of every transformer layer (2 ×
	// 25,165,824 matmul FLOPs, not the head) and one attention pass
	// (2 layers × 2·1024·8·256 = 8,388,608): 182,304,768 + 50,331,648 +
	// 8,388,608 = 241,025,024 per token.
	s = parseExpect(t, strings.Replace(smallScenario, "micro_batch: 2}", "micro_batch: 2, recompute: full}", 1)+
		"expect: {mfu: 0.5, source: x, flops_convention: hardware}\n")
	if f, err := SourceFLOPsPerStep(s); err != nil || !expectNear(f, 241025024*16384, 1e-12) {
		t.Errorf("hardware FLOPs with full recompute %g (%v), want %g", f, err, 241025024.0*16384)
	}
}

// TestMeasuredStepTime covers the two convention-free figures.
func TestMeasuredStepTime(t *testing.T) {
	// tokens/s per GPU: 16·1024 tokens / (2048 tok/s × 8 GPUs) = 1 s.
	s := parseExpect(t, smallScenario+"expect: {tokens_per_s_per_gpu: 2048, source: x}\n")
	if st, err := MeasuredStepTimeS(s); err != nil || st != 1 {
		t.Errorf("tokens: %g (%v), want 1 s", st, err)
	}
	s = parseExpect(t, smallScenario+"expect: {step_time_s: 2.5, source: x}\n")
	if st, err := MeasuredStepTimeS(s); err != nil || st != 2.5 {
		t.Errorf("step time: %g (%v), want 2.5 s", st, err)
	}
}

func TestExpectErrors(t *testing.T) {
	// A bad attention_flops is caught when the scenario is loaded.
	if _, err := scenario.Parse([]byte(smallScenario + "expect: {mfu: 0.4, source: x, attention_flops: half}\n")); err == nil ||
		!strings.Contains(err.Error(), "expect.attention_flops: unknown value \"half\" (valid: full, causal)") {
		t.Errorf("attention_flops: %v", err)
	}
	for _, c := range []struct {
		doc, want string
	}{
		{smallScenario, "no expect: block"},
		{smallScenario + "expect: {mfu: 0.4, source: x, flops_convention: megatron-sc21, attention_flops: causal}\n", "causal does not apply"},
		{strings.Replace(smallScenario, "vocab: 1000}", "vocab: 1000, moe: {experts: 8, top_k: 2}}", 1) +
			"expect: {tflops_per_gpu: 100, source: x, flops_convention: megatron-sc21}\n", "dense GPT models"},
	} {
		s := parseExpect(t, c.doc)
		if _, err := MeasuredStepTimeS(s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want it to contain %q", err, c.want)
		}
	}
}

// TestCompare: a simulated step 25% longer than the measured one is an error
// of +0.25, and the predicted figure is the measured one scaled by the
// inverse time ratio (0.8×), except for a step time, which is the time.
func TestCompare(t *testing.T) {
	for _, c := range []struct {
		expect    string
		metric    string
		predicted float64
	}{
		{"{tokens_per_s_per_gpu: 2048, source: x}", scenario.MetricTokens, 2048 * 0.8},
		{"{step_time_s: 1, source: x}", scenario.MetricStepTime, 1.25},
		{"{mfu: 0.4, source: x, attention_flops: causal}", scenario.MetricMFU, 0.4 * 0.8},
	} {
		s := parseExpect(t, smallScenario+"expect: "+c.expect+"\n")
		measured, err := MeasuredStepTimeS(s)
		if err != nil {
			t.Fatal(err)
		}
		res := &simulation.Result{Scenario: s, StepTimeS: 1.25 * measured}
		got, err := Compare(res)
		if err != nil {
			t.Fatal(err)
		}
		if got.Metric != c.metric || !expectNear(got.Error, 0.25, 1e-12) || !expectNear(got.Predicted, c.predicted, 1e-12) ||
			got.MeasuredStepTimeS != measured || got.PredictedStepTimeS != res.StepTimeS {
			t.Errorf("%s: %+v", c.expect, got)
		}
		if c.metric == scenario.MetricMFU && (got.Convention != "model/causal" || got.SourceFLOPsPerStep != 169721856*16384) {
			t.Errorf("mfu comparison convention %q, FLOPs %g", got.Convention, got.SourceFLOPsPerStep)
		}
	}
	if _, err := Compare(&simulation.Result{Scenario: parseExpect(t, smallScenario+"expect: {step_time_s: 1, source: x}\n")}); err == nil {
		t.Error("a zero simulated step time must be an error")
	}
	if _, err := Compare(nil); err == nil {
		t.Error("nil result must be an error")
	}
}

// TestCompareMemory: a published peak memory (GiB) is compared with the
// simulated allocator reservation of the largest rank (not the device
// peak, which adds the CUDA context and NCCL buffers); 48 GiB simulated against 40 GiB
// published is +20%. Without the field nothing is compared, and a field
// that is not a positive number is rejected with its name.
func TestCompareMemory(t *testing.T) {
	s := parseExpect(t, smallScenario+"expect: {step_time_s: 1, peak_memory_gib: 40, source: x}\n")
	got, err := Compare(&simulation.Result{Scenario: s, StepTimeS: 1, PeakMemBytes: 50 * (1 << 30), PeakReservedBytes: 48 * (1 << 30)})
	if err != nil {
		t.Fatal(err)
	}
	if !got.HasMemory || got.MeasuredMemBytes != 40*(1<<30) || got.PredictedMemBytes != 48*(1<<30) || !expectNear(got.MemError, 0.2, 1e-12) {
		t.Errorf("memory comparison %+v", got)
	}
	got, err = Compare(&simulation.Result{Scenario: parseExpect(t, smallScenario+"expect: {step_time_s: 1, source: x}\n"), StepTimeS: 1, PeakMemBytes: 1e9})
	if err != nil || got.HasMemory || got.MemError != 0 {
		t.Errorf("no published memory: %+v (%v)", got, err)
	}
	for _, v := range []string{"0", "-3", ".inf"} {
		_, err := scenario.Parse([]byte(smallScenario + "expect: {step_time_s: 1, peak_memory_gib: " + v + ", source: x}\n"))
		if err == nil || !strings.Contains(err.Error(), "expect.peak_memory_gib: must be a positive number of GiB") {
			t.Errorf("peak_memory_gib %s: %v", v, err)
		}
	}
}

func TestParallelStyle(t *testing.T) {
	base := `
name: p
model: {preset: mixtral-8x7b}
training: {seq_len: 4096, global_batch: 256}
cluster: {gpu: h100-sxm, nodes: 8}
`
	for _, c := range []struct {
		par, want string
	}{
		{"{}", "dp"},
		{"{zero: 1}", "zero1"},
		{"{zero: 2}", "zero2"},
		{"{zero: 3, tp: 8}", "fsdp+tp"},
		{"{tp: 8, pp: 4, cp: 2, ep: 1}", "tp+pp+cp"},
		{"{tp: 2, pp: 2, ep: 8, zero: 1}", "zero1+tp+pp+ep"},
		{"{tp: 8, pp: 8}", "tp+pp"},
	} {
		s := parseExpect(t, base+"parallel: "+c.par+"\n")
		if got := ParallelStyle(s); got != c.want {
			t.Errorf("%s: %q, want %q", c.par, got, c.want)
		}
	}
}
