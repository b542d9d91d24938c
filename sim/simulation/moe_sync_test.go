package simulation

import (
	"github.com/simtrain/simtrain/sim/scenario"
	"math"
	"testing"
)

// TestMoEHostSyncFields checks model.moe.dropless and training.cuda_graphs:
// defaults (dropless, no graphs) that leave run ids unchanged when written
// out, the stall they switch on and off, and one-line errors naming the
// field.
func TestMoEHostSyncFields(t *testing.T) {
	parse := func(kv ...string) *scenario.Plan { return parseWith(t, moeKV, kv...) }
	def := parse()
	explicit := parse("model.moe.dropless", "true", "training.cuda_graphs", "none")
	if def.RunID() != explicit.RunID() || explicit.Training.CUDAGraphs != "" || explicit.Model.MoE.Dropless != nil {
		t.Errorf("defaults written out change the run id or the canonical form: %s %s %+v", def.RunID(), explicit.RunID(), explicit.Model.MoE)
	}
	drop, full := parse("model.moe.dropless", "false"), parse("training.cuda_graphs", "full")
	if drop.RunID() == def.RunID() || full.RunID() == def.RunID() || drop.RunID() == full.RunID() {
		t.Error("run id ignores model.moe.dropless or training.cuda_graphs")
	}
	want := def.GPU().Compute.MoEHostSync
	if want <= 0 || math.Abs(def.MoEHostSync().Seconds()-want) > 1e-9 {
		t.Errorf("dropless default stall %v, want the profile's %v s", def.MoEHostSync(), want)
	}
	if drop.MoEHostSync() != 0 || full.MoEHostSync() != 0 {
		t.Errorf("stall with token dropping %v, under full graphs %v; want 0", drop.MoEHostSync(), full.MoEHostSync())
	}
	dense := parseWith(t, nil, "parallel.tp", "1")
	if dense.MoEHostSync() != 0 {
		t.Errorf("dense model stalls %v", dense.MoEHostSync())
	}
	checkParseErrors(t, moeKV, []parseErrorCase{
		{[]string{"training.cuda_graphs", "partial"}, `training.cuda_graphs: unknown value "partial" (valid: none, full)`},
		{[]string{"model.moe.dropless", "maybe"}, "model.moe.dropless"},
	})
}

// TestMoEHostSyncRun: the stall lengthens the step by the stalls on the
// critical path, is reported as HostSyncS (one per MoE layer and
// micro-batch per step), and is neither compute nor pipeline bubble.
func TestMoEHostSyncRun(t *testing.T) {
	run := func(kv ...string) *Result { return runWith(t, moeKV, kv...) }
	sync, drop := run(), run("model.moe.dropless", "false")
	s := sync.Scenario
	stalls := float64(s.Microbatches()*s.Arch().Layers) * s.MoEHostSync().Seconds()
	if math.Abs(sync.HostSyncS-stalls) > 1e-9 || drop.HostSyncS != 0 {
		t.Errorf("host sync %v s with dropless, want %v; %v s with token dropping, want 0", sync.HostSyncS, stalls, drop.HostSyncS)
	}
	if sync.StepTimeS <= drop.StepTimeS || sync.StepTimeS > drop.StepTimeS+stalls+1e-9 {
		t.Errorf("step %v s dropless vs %v s token dropping; the stalls add at most %v s", sync.StepTimeS, drop.StepTimeS, stalls)
	}
	if sync.ComputeS != drop.ComputeS || sync.BubbleFraction > drop.BubbleFraction+1e-12 {
		t.Errorf("stalls counted as compute (%v vs %v s) or bubble (%v vs %v)", sync.ComputeS, drop.ComputeS, sync.BubbleFraction, drop.BubbleFraction)
	}
}

// TestRecomputeModulesField checks training.recompute_modules: the default
// (core_attn alone, left out of the canonical form), the memory it saves
// on an MoE model with moe_act and layernorm (and that the step does not
// get faster), and one-line errors naming the field.
func TestRecomputeModulesField(t *testing.T) {
	run := func(kv ...string) *Result { return runWith(t, moeKV, kv...) }
	sel := run("training.recompute", "selective")
	core := run("training.recompute", "selective", "training.recompute_modules", "[core_attn]")
	mods := run("training.recompute", "selective", "training.recompute_modules", "[moe_act, layernorm]")
	if sel.RunID != core.RunID || sel.RunID == mods.RunID {
		t.Errorf("run ids: default %s, [core_attn] %s, [moe_act, layernorm] %s", sel.RunID, core.RunID, mods.RunID)
	}
	if !(mods.PeakMemBytes < sel.PeakMemBytes) || mods.StepTimeS < sel.StepTimeS {
		t.Errorf("moe_act+layernorm: peak %v vs %v bytes, step %v vs %v s", mods.PeakMemBytes, sel.PeakMemBytes, mods.StepTimeS, sel.StepTimeS)
	}
	checkParseErrors(t, moeKV, []parseErrorCase{
		{[]string{"training.recompute", "selective", "training.recompute_modules", "[mlp]"},
			`training.recompute_modules: unknown module "mlp" (valid: core_attn, moe_act, layernorm, mla_up_proj)`},
		{[]string{"training.recompute_modules", "[moe_act]"}, "training.recompute_modules: needs training.recompute: selective, got none"},
	})
}
