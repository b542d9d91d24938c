package main

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/validation"
)

const (
	csvPath = "../../scenarios/validation/published-runs.csv"
	outDir  = "../../scenarios/validation"
)

func loadRows(t *testing.T) []row {
	t.Helper()
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := readRows(f)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestCommittedScenariosAreGenerated: scenarios/validation holds exactly
// what the generator writes from the committed CSV.
func TestCommittedScenariosAreGenerated(t *testing.T) {
	if err := run(csvPath, outDir, true, io.Discard); err != nil {
		t.Fatal(err)
	}
}

// TestGeneratedScenariosParse: every generated file is a valid scenario
// with an expect: block, names are unique, and at least 150 of the 188
// rows are simulated; every other row has a reason.
func TestGeneratedScenariosParse(t *testing.T) {
	rows := loadRows(t)
	if len(rows) != 188 {
		t.Fatalf("%d rows, want 188", len(rows))
	}
	files, skipped := generate(rows)
	if len(files) < 150 || len(files)+len(skipped) != len(rows) {
		t.Errorf("%d scenarios + %d skipped for %d rows", len(files), len(skipped), len(rows))
	}
	for name, doc := range files {
		s, err := scenario.Parse(doc)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if s.Expect == nil || s.Name+".yaml" != name || s.Expect.Group == "" || s.Expect.Source == "" {
			t.Errorf("%s: name %q, expect %+v", name, s.Name, s.Expect)
		}
		if _, err := validation.MeasuredStepTimeS(s); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, s := range skipped {
		if s.reason == "" {
			t.Errorf("line %d skipped without a reason", s.line)
		}
	}
}

// TestTranslate pins how each source family's rows become scenarios.
func TestTranslate(t *testing.T) {
	rows := loadRows(t)
	byLine := func(line int) row { return rows[line-2] }
	for _, c := range []struct {
		line int
		want []string // substrings of the generated YAML
	}{
		// SC21: fp16, full recompute, unfused attention, HDR fat tree,
		// interleaved with v=3, 2021 overlap behaviour.
		{7, []string{"precision: fp16", "recompute: full", "flash_attention: false", "kind: fat-tree", "nic: ib-hdr-200",
			"schedule: interleaved", "virtual_stages: 3", "grad_reduce: false", "p2p: false",
			"tflops_per_gpu: 140", "flops_convention: megatron-sc21"}},
		// Megatron H100 README: distributed optimizer, SP and TP overlap.
		{16, []string{"tied_embeddings: false", "ffn: 32768", "zero: 1", "sp: true", "tp_comm: true", "dp: 48", "flops_convention: model"}},
		// Megatron H100 README, pipelined: PP overlap is the interleaved
		// schedule's (core_r0.8.0 arguments.py); 92/4 = 23 and 112/16 = 7
		// layers per stage admit only 1 layer per virtual stage.
		{16, []string{"schedule: interleaved", "virtual_stages: 42", "p2p: true"}},
		// Megatron's NaN checks (loss read per micro-batch, grad norm read
		// per bucket) are the megatron-lm profile's dated defaults: the
		// rows carry their code's date; SC21's 2021 code predates both;
		// the MoE recipes that pass no_check_for_nan_in_loss_and_grad
		// state false against the profile.
		{12, []string{"\n  framework_date: \"2024-07-15\"\n"}},
		{2, []string{"\n  framework_date: \"2021-08-10\"\n"}},
		{24, []string{"\n  framework_date: \"2026-08-11\"\n"}},
		{23, []string{"\n  loss_readback: false\n", "\n  grad_nan_check: false\n"}},
		{17, []string{"pp: 4", "schedule: interleaved", "virtual_stages: 23", "p2p: true"}},
		{20, []string{"pp: 16", "schedule: interleaved", "virtual_stages: 7"}},
		// Megatron MoE: EP 32 with ETP 1 over TP 2 × DP 16, the recipe's
		// values (MoE parallel folding); 94 layers + 2 = 96 slots, 12 per
		// stage, 3 per virtual stage.
		{24, []string{"preset: qwen3-235b-a22b", "tp: 2", "ep: 32", "expert_tp: 1", "virtual_stages: 4", "first_stage_layers: 11", "last_stage_layers: 11",
			"attention_flops: causal"}},
		// ETP 1 with TP 2 on 128 B300: ep 16 over TP 2 × DP 64.
		{25, []string{"tp: 2", "ep: 16", "expert_tp: 1"}},
		// Megatron MoE on 128 GB300: two racks of 64, EP 64 inside each;
		// the recipe's EP overlap.
		{26, []string{"gpu: gb300", "nodes: 32", "ep: 64", "ep: true", "racks of 64", "fp8_recipe: mxfp8"}},
		// Megatron MoE "FP8 blockwise" (the recipe YAML's fp8_recipe).
		{27, []string{"precision: fp8", "fp8_recipe: blockwise"}},
		// torchtitan AsyncTP table: float8 rowwise and tensorwise rows;
		// the December-2024 and H200 "Float8" rows are tensorwise.
		{59, []string{"precision: fp8", "fp8_recipe: rowwise"}},
		{57, []string{"precision: fp8", "fp8_recipe: tensorwise"}},
		{61, []string{"precision: fp8", "fp8_recipe: tensorwise"}},
		// torchtitan's per-op selective checkpointing.
		{55, []string{"recompute: selective-op", "tp: 8", "sp: true"}},
		// torchtitan 3D: FSDP under PP is the ZeRO-2 schedule; 126
		// layers over 8 stages as 15 + 6·16 + 15.
		{43, []string{"zero: 2", "first_stage_layers: 15", "last_stage_layers: 15", "precision: fp8", "fp8_recipe: tensorwise", "micro_batch: 4", "global_batch: 256"}},
		// torchtitan CP: global batch = local batch × dp.
		{36, []string{"seq_len: 131072", "cp: 4", "dp: 2", "global_batch: 2", "recompute: full", "zero: 3"}},
		// llm-foundry: MPT architecture, FSDP DEFAULT reduces in fp32,
		// 1600 Gb/s RoCE per A100 node, tokens/s per GPU measured.
		{113, []string{"tied_embeddings: true", "grad_dtype: fp32", "nic: roce-200", "zero: 3", "tokens_per_s_per_gpu: 814"}},
		{111, []string{"precision: fp8", "fp8_recipe: delayed", "micro_batch: 56"}},
		{76, []string{"zero: 2", "recompute: none"}},
		// The 2024-01 large-scale sweep: --attn_impl flash (unpadded) for
		// 1b, 3b, 7b and 70b, triton for 13b and 30b.
		{78, []string{"attention_kernel: flash2", "attention_unpad: true"}},
		{68, []string{"attention_kernel: flash2", "attention_unpad: true"}},
		{71, []string{"attention_kernel: triton"}},
		// Megatron-LM without --cross-entropy-loss-fusion (README, SC21);
		// eager torchtitan's unfused PyTorch loss.
		{12, []string{"cross_entropy: vocab-parallel"}},
		{2, []string{"cross_entropy: vocab-parallel"}},
		{31, []string{"fused_loss: false"}},
		// torchtitan 9dec370 does not compile the loss (e8977b007): the
		// December-2024 compiled runs are unfused too, the 2025 ones not.
		{34, []string{"fused_loss: false", "peak_memory_gib: 83.9"}},
		// torchtitan's logged peak reserved memory, where published.
		{31, []string{"peak_memory_gib: 82.4"}},
		{61, []string{"peak_memory_gib: 47.96"}},
		// torchtitan repeats the KV heads before SDPA; its CP is PyTorch's
		// ring attention.
		{48, []string{"attention_repeat_kv: true", "cp: 8", "cp_impl: pytorch"}},
		{66, []string{"attention_repeat_kv: true"}},
		// torchtitan's selective layer checkpointing: every 2nd layer.
		{64, []string{"recompute: full", "recompute_every: 2", "every 2nd layer"}},
		// The DeepSeek-V3 recipe: MTP 1, its layout as first/last 16/13
		// over 4 virtual stages, mla_up_proj recompute, offloading noted.
		// FP8 parameter gathers: the H200 run's flag, torchtitan's float8
		// guide for tensorwise, the MoE recipes' fp8_param_gather.
		{61, []string{"fp8_param_gather: true"}},
		{43, []string{"fp8_param_gather: true"}},
		{27, []string{"fp8_param_gather: true"}},
		// Every row names its framework (training.framework) and states
		// where it departs from that profile: the MoE recipes' fused loss
		// (cross_entropy_loss_fusion: true), compiled torchtitan runs.
		{24, []string{"framework: megatron-lm", "cross_entropy: fused"}},
		{2, []string{"framework: megatron-lm"}},
		{12, []string{"framework: megatron-lm"}},
		{31, []string{"framework: torchtitan"}},
		{113, []string{"framework: llm-foundry"}},
		{23, []string{"mtp_layers: 1", "virtual_stages: 4", "first_stage_layers: 16", "last_stage_layers: 13",
			"recompute_modules: [mla_up_proj]", "ep_sms: 32", "offload_modules: [expert_fc1]", "offload_optimizer: true", "optimizer_state_dtype: bf16"}},
	} {
		sc, why := translate(byLine(c.line))
		if why != "" {
			t.Errorf("line %d skipped: %s", c.line, why)
			continue
		}
		doc := string(sc.YAML())
		for _, w := range c.want {
			if !strings.Contains(doc, w) {
				t.Errorf("line %d lacks %q:\n%s", c.line, w, doc)
			}
		}
	}
	// The Triton tables do not unpad; the rest as commented below.
	for _, c := range []struct {
		line  int
		wrong string
	}{{71, "attention_unpad"}, {100, "attention_unpad"},
		// Llama 2 13B has no grouped-query attention; CP 1 has no ring;
		// Megatron's CP is Transformer Engine's.
		{63, "attention_repeat_kv"}, {34, "cp_impl"}, {24, "attention_repeat_kv"},
		// the README and SC21 rows leave the NaN checks to the profile
		{12, "\n  loss_readback:"}, {2, "\n  grad_nan_check:"}, {24, "\n  loss_readback:"},
		// rowwise float8 and Transformer Engine under FSDP gather bf16
		{59, "fp8_param_gather"}, {111, "fp8_param_gather"}} {
		if sc, _ := translate(byLine(c.line)); sc == nil || strings.Contains(string(sc.YAML()), c.wrong) {
			t.Errorf("line %d: must not write %q", c.line, c.wrong)
		}
	}
	for _, c := range []struct {
		line int
		want string
	}{
		{21, "tensor- and pipeline-parallel sizes are not stated"},
		{30, "cannot be reconstructed"},
	} {
		if _, why := translate(byLine(c.line)); !strings.Contains(why, c.want) {
			t.Errorf("line %d: reason %q, want it to contain %q", c.line, why, c.want)
		}
	}
}

// TestTranslateCompile: torchtitan rows without torch.compile in their
// techniques are eager (compile: false); the April-2024 13B config runs the
// fused_rmsnorm Triton kernel (fused_norm: true), its 70B config the eager
// RMSNorm; compiled rows write compile: true (torchtitan's profile default is
// eager) and no fused_norm.
func TestTranslateCompile(t *testing.T) {
	rows := loadRows(t)
	for _, c := range []struct {
		line              int
		compile, fusedNrm string // the field lines expected; "" = absent
	}{
		{31, "compile: false", ""},
		{32, "compile: true", ""},
		{38, "compile: false", ""},
		{39, "compile: true", ""},
		{63, "compile: false", "fused_norm: true"},
		{65, "compile: false", "fused_norm: true"},
		{66, "compile: false", ""},
		{67, "compile: false", ""},
		{55, "compile: true", ""},
	} {
		sc, why := translate(rows[c.line-2])
		if why != "" {
			t.Errorf("line %d skipped: %s", c.line, why)
			continue
		}
		doc := string(sc.YAML())
		for field, want := range map[string]string{"  compile: ": c.compile, "  fused_norm: ": c.fusedNrm} {
			if want == "" {
				if strings.Contains(doc, field) {
					t.Errorf("line %d writes %q:\n%s", c.line, field, doc)
				}
			} else if !strings.Contains(doc, "  "+want+"\n") {
				t.Errorf("line %d lacks %q:\n%s", c.line, want, doc)
			}
		}
	}
}

func TestHelpers(t *testing.T) {
	notes := "MFU=42.42%; HFU=56.56%; grad_accum=1; mp_mode=DEFAULT"
	if noteField(notes, "mp_mode") != "DEFAULT" || noteField(notes, "grad_accum") != "1" || noteField(notes, "x") != "" {
		t.Error("noteField")
	}
	if atoi("") != 0 || atoi(" 48 ") != 48 || atoi("x") != 0 {
		t.Error("atoi")
	}
}

// TestMegatronLayout reads Megatron-Core layout strings by hand: the
// DeepSeek-V3 GB200 recipe's 16 chunks over pp 4 (first rank E + 4·4
// layers, last rank 3·4 + 1 layers with the MTP module and the loss), an
// even layout, and ones that do not divide or leave the middle uneven.
func TestMegatronLayout(t *testing.T) {
	for _, c := range []struct {
		layout            string
		pp                int
		first, last, virt int
		bad               bool
	}{
		{"Et*4|(tttt|)*14tmL", 4, 16, 13, 4, false},
		{"Ett|tt|tt|ttL", 2, 4, 4, 2, false},
		{"Et|t|tL", 2, 0, 0, 0, true},
		{"Et|ttt|t|tL", 4, 0, 0, 0, true},
	} {
		f, l, v, err := megatronLayout(c.layout, c.pp)
		if c.bad {
			if err == nil {
				t.Errorf("%s over pp %d: no error", c.layout, c.pp)
			}
			continue
		}
		if err != nil || f != c.first || l != c.last || v != c.virt {
			t.Errorf("%s over pp %d = %d, %d, %d, %v; want %d, %d, %d", c.layout, c.pp, f, l, v, err, c.first, c.last, c.virt)
		}
	}
}
