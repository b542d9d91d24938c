package simulation

import (
	"math"
	"strings"
	"testing"
)

// TestMTPField: model.mtp_layers keeps run ids at 0, adds the module's
// layer to the last pipeline stage (the step grows, the first stage's
// memory does not), gives the last stage a copy of the untied embedding
// (V·h/tp more weights there), counts the module in the model FLOPs, and
// rejects bad values with a one-line error naming the field.
func TestMTPField(t *testing.T) {
	pp := []string{"parallel.tp", "4", "parallel.pp", "2", "training.global_batch", "32"}
	base, zero, mtp := runWith(t, pp), runWith(t, pp, "model.mtp_layers", "0"), runWith(t, pp, "model.mtp_layers", "1")
	if base.RunID != zero.RunID || base.RunID == mtp.RunID {
		t.Errorf("run ids: default %s, explicit 0 %s, mtp 1 %s", base.RunID, zero.RunID, mtp.RunID)
	}
	if !(mtp.StepTimeS > base.StepTimeS) || !(mtp.ModelFLOPsPerStep > base.ModelFLOPsPerStep) {
		t.Errorf("mtp 1: step %v s, model FLOPs %v; without: %v s, %v", mtp.StepTimeS, mtp.ModelFLOPsPerStep, base.StepTimeS, base.ModelFLOPsPerStep)
	}
	if base.Memory[0].Total != mtp.Memory[0].Total {
		t.Errorf("first stage memory %v → %v; the module lives on the last stage", base.Memory[0].Total, mtp.Memory[0].Total)
	}
	// llama3-8b: one more layer (218.1M params) plus the embedding copy
	// (128256·4096) and eh_proj (2·4096²), split by tp 4, in bf16 weights.
	w0, w1 := base.Memory[1].Weights, mtp.Memory[1].Weights
	layer := 4096.0*(4096+2*1024)*1 + 4096*4096 + 3*4096*14336
	want := (layer + 128256*4096 + 2*4096*4096) / 4 * 2
	if got := w1 - w0; math.Abs(got-want) > 0.01*want {
		t.Errorf("last stage weights +%.4g bytes, want ≈ +%.4g", got, want)
	}
	checkParseErrors(t, nil, []parseErrorCase{
		{[]string{"model.mtp_layers", "-1"}, "model.mtp_layers: must be between 0"},
		{[]string{"model.mtp_layers", "17"}, "model.mtp_layers: must be between 0"},
	})
}

// TestSoftwareLineNamesRound9Features: the run's software line says when
// multi-token prediction, offloading, FP8 parameter gathers and BF16 end
// layers are on, so a reader of the summary sees what was priced.
func TestSoftwareLineNamesRound9Features(t *testing.T) {
	s := parseWith(t, nil, "model.mtp_layers", "1", "training.precision", "fp8", "training.fp8_param_gather", "true",
		"training.bf16_layers_at_start", "1", "training.bf16_layers_at_end", "2",
		"training.offload_modules", "[attn_norm, core_attn]", "training.offload_optimizer", "true")
	sw := s.Software()
	for _, want := range []string{"(fp8 param gather)", "(bf16 layers: first 1, last 2)", "mtp 1", "offload attn_norm+core_attn", "offload optimizer"} {
		if !strings.Contains(sw, want) {
			t.Errorf("software line %q lacks %q", sw, want)
		}
	}
	if sw := parseWith(t, nil).Software(); strings.Contains(sw, "mtp") || strings.Contains(sw, "offload") {
		t.Errorf("default software line %q names a feature that is off", sw)
	}
}
