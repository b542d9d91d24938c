package simulation

import "testing"

// TestOptimizerTensorsField checks training.optimizer_tensors: the
// per-tensor loop moves more bytes and launches more kernels than the fused
// pass, so the step is longer, the default 0 keeps the fused pass, and bad
// values name the field.
func TestOptimizerTensorsField(t *testing.T) {
	fused := runWith(t, nil)
	zero := runWith(t, nil, "training.optimizer_tensors", "0")
	loop := runWith(t, nil, "training.optimizer_tensors", "291")
	if zero.StepTimeS != fused.StepTimeS || !(loop.StepTimeS > fused.StepTimeS) {
		t.Errorf("step times fused %g, optimizer_tensors 0 %g, 291 %g: want equal, then longer", fused.StepTimeS, zero.StepTimeS, loop.StepTimeS)
	}
	hf := runWith(t, nil, "training.optimizer_tensors", "291", "training.optimizer_loop", "transformers")
	torch := runWith(t, nil, "training.optimizer_tensors", "291", "training.optimizer_loop", "torch")
	if hf.StepTimeS != loop.StepTimeS || !(torch.StepTimeS > loop.StepTimeS) {
		t.Errorf("step times loop %g, optimizer_loop transformers %g, torch %g: want equal, then longer", loop.StepTimeS, hf.StepTimeS, torch.StepTimeS)
	}
	checkParseErrors(t, nil, []parseErrorCase{
		{[]string{"training.optimizer_loop", "apex"}, `training.optimizer_loop: unknown value "apex" (valid: transformers, torch)`},
		{[]string{"training.optimizer_loop", "torch"}, "training.optimizer_loop: torch needs training.optimizer_tensors > 0"},
		{[]string{"training.optimizer_loop", "torch", "training.optimizer_tensors", "10", "training.optimizer", "adam"}, "training.optimizer_loop: torch is priced for adamw only (have adam)"},
		{[]string{"training.optimizer_tensors", "-1"}, "training.optimizer_tensors: -1 must be >= 0"},
		{[]string{"training.optimizer_tensors", "10", "training.optimizer", "sgd"}, "training.optimizer_tensors: the per-tensor loop is priced for adamw and adam only (have sgd)"},
		{[]string{"training.optimizer_tensors", "10", "parallel.zero", "1"}, "training.optimizer_tensors: the per-tensor loop needs parallel.zero: 0 (have 1)"},
	})
}
