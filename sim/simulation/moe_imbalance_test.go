package simulation

import (
	"testing"
)

// TestMoEImbalanceField checks model.moe.imbalance: unset and 1 are the same
// run (the canonical form leaves it out); 1.5 lengthens the step (the
// most-loaded rank's expert GEMMs and all-to-alls) and raises the peak
// memory without touching the model FLOPs; values below 1 and imbalance
// under capacity padding are one-line errors naming the field.
func TestMoEImbalanceField(t *testing.T) {
	def := parseWith(t, moeKV)
	one := parseWith(t, moeKV, "model.moe.imbalance", "1")
	if def.RunID() != one.RunID() || one.Model.MoE.Imbalance != 0 {
		t.Errorf("imbalance 1 changes the run id or the canonical form: %+v", one.Model.MoE)
	}
	skew := parseWith(t, moeKV, "model.moe.imbalance", "1.5")
	if skew.RunID() == def.RunID() || skew.Model.MoE.Imbalance != 1.5 {
		t.Errorf("run id ignores model.moe.imbalance: %+v", skew.Model.MoE)
	}
	base, slow := runWith(t, moeKV), runWith(t, moeKV, "model.moe.imbalance", "1.5")
	if !(slow.StepTimeS > base.StepTimeS) || !(slow.PeakMemBytes > base.PeakMemBytes) || slow.ModelFLOPsPerStep != base.ModelFLOPsPerStep {
		t.Errorf("imbalance 1.5: step %v s (balanced %v), peak %v (balanced %v), model FLOPs %v (%v)",
			slow.StepTimeS, base.StepTimeS, slow.PeakMemBytes, base.PeakMemBytes, slow.ModelFLOPsPerStep, base.ModelFLOPsPerStep)
	}
	checkParseErrors(t, moeKV, []parseErrorCase{
		{[]string{"model.moe.imbalance", "0.8"}, "model.moe.imbalance: the most-loaded expert-parallel rank's tokens over the mean, must be >= 1"},
		{[]string{"model.moe.dropless", "false", "model.moe.imbalance", "1.2"}, "model.moe.imbalance: applies to dropless routing"},
	})
}
