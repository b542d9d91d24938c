package main

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/workload"
)

// runEstimate runs `simtrain estimate args...` and returns stdout.
func runEstimate(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, _, err := runCLI(t, append([]string{"estimate"}, args...)...)
	return out, err
}

// estimateJSON runs an estimate with --format json and decodes its one line.
func estimateJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	out, err := runEstimate(t, append(args, "--format", "json")...)
	if err != nil {
		t.Fatalf("estimate %v: %v", args, err)
	}
	if strings.Count(out, "\n") != 1 {
		t.Fatalf("want one JSON line, got %q", out)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func num(t *testing.T, m map[string]any, key string) float64 {
	t.Helper()
	v, ok := m[key].(float64)
	if !ok {
		t.Fatalf("JSON lacks number %q: %v", key, m)
	}
	return v
}

func relNear(got, want, rel float64) bool { return math.Abs(got-want) <= rel*math.Abs(want) }

// TestEstimateTrain: the course example. 6·70e9·15e12 = 6.3e24 FLOPs;
// 1024 H100 × 989 TFLOP/s (1979/2, dense BF16) × 0.5 = 5.064e17 FLOP/s;
// 6.3e24 / 5.064e17 = 1.244e7 s = 144.0 days.
func TestEstimateTrain(t *testing.T) {
	args := []string{"train", "--params", "70e9", "--tokens", "15e12", "--gpu", "h100-sxm", "--gpus", "1024", "--mfu", "0.5"}
	m := estimateJSON(t, args...)
	if f := num(t, m, "flops"); f != 6.3e24 {
		t.Errorf("flops %v, want 6.3e24", f)
	}
	if d := num(t, m, "days"); math.Abs(d-144) > 1 || !relNear(d, 6.3e24/(1024*989e12*0.5)/86400, 1e-12) {
		t.Errorf("days %v, want 144 (±1)", d)
	}
	if v := num(t, m, "flops_per_s"); v != 1024*989e12*0.5 {
		t.Errorf("flops_per_s %v", v)
	}
	out, err := runEstimate(t, args...)
	if err != nil || !strings.Contains(out, "6.3e24") || !strings.Contains(out, "144 days") {
		t.Errorf("table lacks 6.3e24 FLOPs / 144 days:\n%s", out)
	}
	// With a preset and a sequence length the attention term is added.
	m = estimateJSON(t, "train", "--model", "llama3-8b", "--seq", "8192", "--tokens", "1e12", "--gpu", "h100-sxm", "--gpus", "8", "--mfu", "0.4")
	lm, _ := workload.Preset("llama3-8b")
	if num(t, m, "flops") != lm.ModelFLOPsPerToken(8192)*1e12 {
		t.Errorf("model flops %v", m["flops"])
	}
}

// TestEstimateFit: 8 × 79.11 GiB (what an H100 80GB process can
// allocate) = 679.6 GB; / 12 B = 56.6B, / 16 B = 42.5B (the default,
// mixed-precision AdamW).
func TestEstimateFit(t *testing.T) {
	hbm := 8 * 79.11 * (1 << 30)
	for _, c := range []struct {
		args []string
		want float64
	}{
		{[]string{"--bytes-per-param", "12"}, hbm / 12},
		{[]string{"--bytes-per-param", "16"}, hbm / 16},
		{nil, hbm / 16},
		{[]string{"--optimizer", "adamw", "--precision", "bf16", "--master-dtype", "fp32"}, hbm / 16},
		{[]string{"--optimizer", "sgd"}, hbm / 12}, // 2 + 2 + 4 master + 4 momentum
	} {
		m := estimateJSON(t, append([]string{"fit", "--gpu", "h100-sxm", "--gpus", "8"}, c.args...)...)
		if got := num(t, m, "max_params"); !relNear(got, c.want, 1e-12) {
			t.Errorf("fit %v: max_params %v, want %v", c.args, got, c.want)
		}
		if !strings.Contains(m["note"].(string), "activations") {
			t.Error("fit must say activations are excluded")
		}
	}
	out, _ := runEstimate(t, "fit", "--gpu", "h100-sxm", "--gpus", "8", "--bytes-per-param", "12")
	if !strings.Contains(out, "56.63B parameters") || !strings.Contains(out, "activations") {
		t.Errorf("fit table:\n%s", out)
	}
}

// TestEstimateMemory: 6.7e9 × 16 = 107.2 GB; GPT-2 1.5B × 16 = 24 GB
// (ZeRO paper §3.1); presets report their exact and active counts.
func TestEstimateMemory(t *testing.T) {
	m := estimateJSON(t, "memory", "--params", "6.7e9", "--bytes-per-param", "16")
	if num(t, m, "model_state_bytes") != 6.7e9*16 || num(t, m, "params") != 6.7e9 || num(t, m, "active_params") != 6.7e9 {
		t.Errorf("memory 6.7e9: %v", m)
	}
	m = estimateJSON(t, "memory", "--params", "1.5e9")
	if num(t, m, "model_state_bytes") != 24e9 || num(t, m, "optimizer_bytes") != 18e9 {
		t.Errorf("memory 1.5e9: %v", m)
	}
	for _, c := range []struct{ args, want string }{
		{"--params 6.7e9 --bytes-per-param 16", "107 GB"},
		{"--params 1.5e9", "24 GB"},
	} {
		out, err := runEstimate(t, append([]string{"memory"}, strings.Fields(c.args)...)...)
		if err != nil || !strings.Contains(out, c.want) {
			t.Errorf("memory %s: want %q in\n%s", c.args, c.want, out)
		}
	}
	m = estimateJSON(t, "memory", "--model", "mixtral-8x7b")
	if num(t, m, "params") != 46702792704 || num(t, m, "active_params") != 12879925248 || num(t, m, "model_state_bytes") != 16*46702792704.0 {
		t.Errorf("mixtral memory: %v", m)
	}
	if _, err := runEstimate(t, "memory", "no-such-scenario.yaml"); err == nil || !strings.Contains(err.Error(), "no-such-scenario.yaml") {
		t.Errorf("missing scenario: %v", err)
	}
	// The scenario form: per-stage breakdown of the layout. The 8×H100 FSDP
	// quick start has one stage; weights are 1/8 of 8.03B parameters, kept
	// in fp32 (PyTorch FSDP's shard is the master copy, zero3_impl fsdp).
	m = estimateJSON(t, "memory", "../../scenarios/quickstart.yaml")
	stages, _ := m["stages"].([]any)
	if len(stages) != 1 || m["fits"] != true || num(t, m, "params") != 8030261248 {
		t.Fatalf("scenario memory: %v", m)
	}
	st := stages[0].(map[string]any)
	if w := st["weights_bytes"].(float64); w != 8030261248*4/8.0 {
		t.Errorf("FSDP weights per rank %g, want %g", w, 8030261248*4/8.0)
	}
	if tot := st["total_bytes"].(float64); tot <= st["activations_bytes"].(float64) || tot > 80e9 {
		t.Errorf("total %g", tot)
	}
	// Pipeline stages differ: the 70B 3D layout's first stage holds more
	// micro-batches in flight than its last.
	m = estimateJSON(t, "memory", "../../scenarios/llama3-70b-1024-h100-3d.yaml")
	stages, _ = m["stages"].([]any)
	first, last := stages[0].(map[string]any), stages[len(stages)-1].(map[string]any)
	if len(stages) != 4 || first["activations_bytes"].(float64) <= last["activations_bytes"].(float64) {
		t.Errorf("3D memory stages: %v", stages)
	}
	if _, err := runEstimate(t, "memory", "../../scenarios/quickstart.yaml", "--params", "1e9"); err == nil {
		t.Error("scenario with --params accepted")
	}
}

// TestEstimateOp: the roofline lesson on an H100 at bf16.
func TestEstimateOp(t *testing.T) {
	for _, c := range []struct {
		kind, n string
		ai      float64
		bound   string
	}{
		{"relu", "1048576", 0.25, "memory"},
		{"gelu", "1048576", 5, "memory"},
		{"dot", "1048576", 2 * 1048576.0 / (4*1048576 + 2), "memory"}, // ≈ 0.5
		{"matvec", "4096", 2 * 4096.0 * 4096 / (2 * (4096*4096 + 2*4096)), "memory"},
		{"layernorm", "1048576", 2, "memory"},
		{"softmax", "1048576", 1.25, "memory"},
		{"matmul", "1024", 1024.0 / 3, "compute"}, // n/3 ≈ 341 > 295
	} {
		m := estimateJSON(t, "op", "--kind", c.kind, "--n", c.n, "--dtype", "bf16", "--gpu", "h100-sxm")
		if got := num(t, m, "arithmetic_intensity"); !relNear(got, c.ai, 1e-12) {
			t.Errorf("%s: arithmetic_intensity %v, want %v", c.kind, got, c.ai)
		}
		// 989e12 / 3.35e12 = 295.2 FLOP/byte.
		if got := num(t, m, "accelerator_intensity"); !relNear(got, 989e12/3.35e12, 1e-12) || math.Round(got) != 295 {
			t.Errorf("accelerator_intensity %v, want ≈ 295", got)
		}
		if m["bound"] != c.bound {
			t.Errorf("%s: bound %v, want %s", c.kind, m["bound"], c.bound)
		}
		flops, bytes := num(t, m, "flops"), num(t, m, "bytes")
		if want := math.Max(flops/989e12, bytes/3.35e12); num(t, m, "time_s") != want {
			t.Errorf("%s: time_s %v, want %v", c.kind, m["time_s"], want)
		}
		if num(t, m, "modeled_time_s") < num(t, m, "time_s") {
			t.Errorf("%s: the modeled time beats the roofline", c.kind)
		}
	}
	m := estimateJSON(t, "op", "--kind", "matmul", "--n", "1024", "--gpu", "h100-sxm")
	if math.Round(num(t, m, "arithmetic_intensity")) != 341 {
		t.Errorf("matmul n=1024: %v", m["arithmetic_intensity"])
	}
}

// TestEstimateThroughput: the LLaMA-65B cross-check. 6·65.2e9·380 =
// 1.4866e14 FLOP/s per GPU of 312e12 = 47.6% MFU; 1.4e12 tokens /
// (380 · 2048) tokens/s = 1.799e6 s = 20.8 days.
func TestEstimateThroughput(t *testing.T) {
	m := estimateJSON(t, "throughput", "--params", "65.2e9", "--tokens-per-s-per-gpu", "380", "--gpu", "a100-80gb", "--gpus", "2048", "--tokens", "1.4e12")
	if mfu := num(t, m, "mfu"); !relNear(mfu, 6*65.2e9*380/312e12, 1e-12) || math.Round(mfu*1000) != 476 {
		t.Errorf("mfu %v, want ≈ 0.476", mfu)
	}
	if d := num(t, m, "days"); !relNear(d, 1.4e12/(380*2048)/86400, 1e-12) || math.Round(d) != 21 {
		t.Errorf("days %v, want ≈ 21", d)
	}
	out, _ := runEstimate(t, "throughput", "--params", "65.2e9", "--tokens-per-s-per-gpu", "380", "--gpu", "a100-80gb", "--gpus", "2048", "--tokens", "1.4e12")
	if !strings.Contains(out, "47.6%") || !strings.Contains(out, "20.8 days") {
		t.Errorf("throughput table:\n%s", out)
	}
}

// TestEstimateKV: Llama-3-70B, 8192 tokens, bf16: 2·80·8·128·2 = 327,680 B
// per token × 8192 = 2.68 GB. Decoding in fp16 on one H100 (3.35 TB/s)
// reads 139.0 GB of weights per token: 24.1 tok/s, 23.6 with the 8K cache
// (the course's ≈ 24 tok/s).
func TestEstimateKV(t *testing.T) {
	m := estimateJSON(t, "kv", "--model", "llama3-70b", "--seq", "8192", "--batch", "1", "--dtype", "bf16")
	if num(t, m, "kv_cache_bytes") != 2684354560 {
		t.Errorf("kv_cache_bytes %v", m["kv_cache_bytes"])
	}
	if _, ok := m["tokens_per_s"]; ok {
		t.Error("tokens_per_s without --decode")
	}
	m = estimateJSON(t, "kv", "--model", "llama3-70b", "--seq", "8192", "--dtype", "fp16", "--decode", "--gpu", "h100-sxm")
	tps, w := num(t, m, "tokens_per_s"), num(t, m, "tokens_per_s_weights_only")
	if math.Round(tps) != 24 || math.Round(w) != 24 || !relNear(w, 3.35e12/(2*69503033344.0), 1e-12) {
		t.Errorf("decode tokens/s %v (weights only %v), want ≈ 24", tps, w)
	}
	if m["fits"] != false {
		t.Error("141 GB of fp16 weights do not fit an 80 GB H100")
	}
}

// TestEstimateBadInput: one-line usage errors naming the flag (exit 2).
func TestEstimateBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--params", "-1", "--tokens", "1e12", "--gpu", "h100-sxm", "--gpus", "8", "--mfu", "0.5"}, "--params"},
		{[]string{"train", "--params", "7e9", "--tokens", "1e12", "--gpu", "h100-sxm", "--gpus", "8", "--mfu", "1.5"}, "--mfu"},
		{[]string{"train", "--params", "7e9", "--tokens", "1e12", "--gpu", "tpu", "--gpus", "8", "--mfu", "0.5"}, "--gpu: unknown value \"tpu\" (valid: "},
		{[]string{"train", "--params", "7e9", "--tokens", "1e12", "--gpu", "a100-80gb", "--gpus", "8", "--mfu", "0.5", "--dtype", "fp8"}, "--dtype: a100-80gb has no fp8 support"},
		{[]string{"train", "--model", "llama3-8b", "--params", "7e9", "--tokens", "1e12", "--gpu", "h100-sxm", "--gpus", "8", "--mfu", "0.5"}, "--params and --model"},
		{[]string{"fit", "--gpu", "h100-sxm", "--gpus", "0"}, "--gpus: 0 must be positive"},
		{[]string{"fit", "--gpu", "h100-sxm", "--bytes-per-param", "-4"}, "--bytes-per-param"},
		{[]string{"fit", "--gpu", "h100-sxm", "--optimizer", "lion"}, "--optimizer: unknown value \"lion\" (valid: adamw, adam, sgd, adagrad)"},
		{[]string{"fit"}, "--gpu: required"},
		{[]string{"memory"}, "--model or --params"},
		{[]string{"memory", "--model", "gpt5"}, "--model: unknown model preset \"gpt5\" (valid: gpt3-125m"},
		{[]string{"memory", "--params", "-3"}, "--params"},
		{[]string{"memory", "--params", "1e9", "--precision", "fp64"}, "--precision: unknown dtype \"fp64\""},
		{[]string{"op", "--kind", "conv", "--n", "8", "--gpu", "h100-sxm"}, "--kind: unknown value \"conv\""},
		{[]string{"op", "--kind", "relu", "--n", "-8", "--gpu", "h100-sxm"}, "--n: -8 must be positive"},
		{[]string{"op", "--kind", "matmul", "--n", "8", "--m", "0", "--gpu", "h100-sxm"}, "--m: 0 must be positive"},
		{[]string{"op", "--kind", "relu", "--n", "8"}, "--gpu: required"},
		{[]string{"throughput", "--params", "7e9", "--tokens-per-s-per-gpu", "0", "--gpu", "h100-sxm"}, "--tokens-per-s-per-gpu"},
		{[]string{"kv", "--model", "llama3-70b", "--seq", "-1"}, "--seq: -1 must be positive"},
		{[]string{"kv", "--model", "llama3-70b", "--seq", "8", "--decode"}, "--decode: needs --gpu"},
		{[]string{"kv", "--seq", "8"}, "--model: required"},
		{[]string{"train", "--params", "7e9", "--tokens", "1e12", "--gpu", "h100-sxm", "--gpus", "8", "--mfu", "0.5", "--format", "xml"}, "--format: unknown value \"xml\""},
		{[]string{"train", "--bogus"}, "unknown flag: --bogus"},
	} {
		_, err := runEstimate(t, c.args...)
		var ue *usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("estimate %v: error %v, want a one-line usage error containing %q", c.args, err, c.want)
		}
	}
}

// TestEstimateHelp: every sub-command has an example and a --format flag.
func TestEstimateHelp(t *testing.T) {
	cmd := newEstimateCmd()
	if len(cmd.Commands()) != 6 {
		t.Errorf("%d sub-commands", len(cmd.Commands()))
	}
	for _, c := range cmd.Commands() {
		if c.Example == "" || !strings.Contains(c.Example, "simtrain estimate "+c.Name()) {
			t.Errorf("%s: no example", c.Name())
		}
		if c.InheritedFlags().Lookup("format") == nil {
			t.Errorf("%s: no --format", c.Name())
		}
	}
}

func TestEstimateUnknownSubcommand(t *testing.T) {
	_, err := runEstimate(t, "bogus")
	var ue *usageError
	if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), "fit, kv, memory, op, throughput, train") {
		t.Errorf("estimate bogus: %v", err)
	}
	if out, err := runEstimate(t); err != nil || !strings.Contains(out, "Available Commands") {
		t.Errorf("estimate alone should print help: %v", err)
	}
}

func TestFmtSci(t *testing.T) {
	for v, want := range map[float64]string{6.3e24: "6.3e24", 3.54e6: "3.54e6", 1.5e-7: "1.5e-7", 42: "42", 1e21: "1e21"} {
		if got := fmtSci(v); got != want {
			t.Errorf("fmtSci(%v) = %q, want %q", v, got, want)
		}
	}
}

// On a heterogeneous cluster every stage is checked against its own GPUs:
// the example's stages 0-1 sit on H200 (139.72 GiB usable), 2-3 on H100 SXM,
// and the capacity reported for the run is the smaller.
func TestEstimateMemoryNodeGroups(t *testing.T) {
	h100, _ := hardware.LookupGPU("h100-sxm")
	h200, _ := hardware.LookupGPU("h200")
	m := estimateJSON(t, "memory", "../../scenarios/llama3-70b-h100-h200-pp.yaml")
	stages, _ := m["stages"].([]any)
	if len(stages) != 4 || num(t, m, "capacity_bytes") != float64(h100.HBMUsableBytes) {
		t.Fatalf("memory: %v", m)
	}
	for i, want := range []float64{float64(h200.HBMUsableBytes), float64(h200.HBMUsableBytes), float64(h100.HBMUsableBytes), float64(h100.HBMUsableBytes)} {
		if got := stages[i].(map[string]any)["capacity_bytes"]; got != want {
			t.Errorf("stage %d capacity %v, want %g", i, got, want)
		}
	}
	if st := estimateJSON(t, "memory", "../../scenarios/quickstart.yaml")["stages"].([]any)[0].(map[string]any); st["capacity_bytes"] != nil {
		t.Errorf("a homogeneous scenario's stages report capacity_bytes %v", st["capacity_bytes"])
	}
}
