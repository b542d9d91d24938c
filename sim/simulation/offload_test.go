package simulation

import (
	"slices"
	"testing"
)

// TestOffloadFields: training.offload_modules and training.offload_optimizer
// keep run ids when unset, are written canonically (module order), lower
// the peak memory of a MoE run without shortening its step, and bad values
// are one-line errors naming the field and the valid modules.
func TestOffloadFields(t *testing.T) {
	moe := []string{"model.preset", "qwen3-30b-a3b", "parallel.tp", "1", "parallel.ep", "8", "training.global_batch", "16"}
	base := runWith(t, moe)
	empty := runWith(t, moe, "training.offload_modules", "[]", "training.offload_optimizer", "false")
	off := runWith(t, moe, "training.offload_modules", "[moe_act, expert_fc1]")
	both := runWith(t, moe, "training.offload_modules", "[expert_fc1, moe_act]", "training.offload_optimizer", "true")
	if base.RunID != empty.RunID || base.RunID == off.RunID || off.RunID == both.RunID {
		t.Errorf("run ids: default %s, explicit empty %s, offload %s, with optimizer %s", base.RunID, empty.RunID, off.RunID, both.RunID)
	}
	if !(off.PeakMemBytes < base.PeakMemBytes && both.PeakMemBytes < off.PeakMemBytes) {
		t.Errorf("peak memory: none %v, activations %v, + optimizer %v", base.PeakMemBytes, off.PeakMemBytes, both.PeakMemBytes)
	}
	if off.StepTimeS < base.StepTimeS || both.StepTimeS < off.StepTimeS {
		t.Errorf("steps: none %v, activations %v, + optimizer %v; offloading never speeds up", base.StepTimeS, off.StepTimeS, both.StepTimeS)
	}
	s := parseWith(t, moe, "training.offload_modules", "[moe_act, expert_fc1]")
	if !slices.Equal(s.Training.OffloadModules, []string{"expert_fc1", "moe_act"}) {
		t.Errorf("canonical offload_modules %v", s.Training.OffloadModules)
	}
	checkParseErrors(t, moe, []parseErrorCase{
		{[]string{"training.offload_modules", "[mlp]"}, `training.offload_modules: unknown module "mlp" (valid: attn_norm, qkv_linear, core_attn, attn_proj, mlp_norm, expert_fc1, moe_act)`},
		{[]string{"training.offload_optimizer", "maybe"}, "training.offload_optimizer"},
	})
}
