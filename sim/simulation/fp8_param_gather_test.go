package simulation

import (
	"testing"

	"github.com/simtrain/simtrain/sim/workload"
)

// TestFP8ParamGather: FP8 training gathers its bf16 parameter copy unless
// training.fp8_param_gather says FP8 (Transformer Engine and torchao keep
// bf16 weights; Megatron --fp8-param-gather, torchtitan
// enable_fsdp_float8_all_gather); the field changes the run id only when
// set, an FSDP run's step does not grow with half the gather bytes, and it
// needs precision fp8.
func TestFP8ParamGather(t *testing.T) {
	fsdp := []string{"training.precision", "fp8", "parallel.tp", "1", "parallel.zero", "3", "training.global_batch", "16"}
	for _, c := range []struct {
		kv   []string
		want workload.Dtype
	}{
		{nil, workload.BF16},
		{[]string{"training.fp8_param_gather", "true"}, workload.FP8},
	} {
		if got := parseWith(t, fsdp, c.kv...).StepConfig(nil).ParamDtype; got != c.want {
			t.Errorf("%v: parameters gathered as %v, want %v", c.kv, got, c.want)
		}
	}
	if got := parseWith(t, nil, "training.precision", "tf32").StepConfig(nil).ParamDtype; got != workload.FP32 {
		t.Errorf("tf32: parameters as %v, want fp32", got)
	}
	bf, f8 := runWith(t, fsdp), runWith(t, fsdp, "training.fp8_param_gather", "true")
	off := runWith(t, fsdp, "training.fp8_param_gather", "false")
	if bf.RunID != off.RunID || bf.RunID == f8.RunID {
		t.Errorf("run ids: default %s, false %s, true %s", bf.RunID, off.RunID, f8.RunID)
	}
	if f8.StepTimeS > bf.StepTimeS {
		t.Errorf("step %v s gathering FP8, %v s gathering bf16", f8.StepTimeS, bf.StepTimeS)
	}
	checkParseErrors(t, nil, []parseErrorCase{
		{[]string{"training.fp8_param_gather", "true"}, "training.fp8_param_gather: needs training.precision: fp8, got bf16"},
	})
}

// TestOptimizerStateDtype: bf16 Adam moments (Megatron's precision-aware
// optimizer) take 2 × 2 bytes per parameter where fp32 take 2 × 4, in the
// optimizer memory of a replicated (zero 0) run: the difference is 4 bytes
// × the rank's parameters; fp32 (= master) keeps the run id; fp8 states
// are an error naming the valid dtypes.
func TestOptimizerStateDtype(t *testing.T) {
	one := []string{"parallel.tp", "1", "training.global_batch", "16", "parallel.zero", "0"}
	base, same := runWith(t, one), runWith(t, one, "training.optimizer_state_dtype", "fp32")
	bf := runWith(t, one, "training.optimizer_state_dtype", "bf16")
	if base.RunID != same.RunID || base.RunID == bf.RunID {
		t.Errorf("run ids: default %s, fp32 %s, bf16 %s", base.RunID, same.RunID, bf.RunID)
	}
	m, _ := workload.Preset("llama3-8b")
	if got, want := base.Memory[0].Optimizer-bf.Memory[0].Optimizer, 4*m.Params().Total; got < 0.999*want || got > 1.001*want {
		t.Errorf("optimizer memory −%.4g bytes with bf16 states, want −%.4g", got, want)
	}
	checkParseErrors(t, nil, []parseErrorCase{
		{[]string{"training.optimizer_state_dtype", "fp8"}, `training.optimizer_state_dtype: unknown value "fp8" (valid: fp32, bf16, fp16)`},
	})
}

// TestBF16LayersFields: training.bf16_layers_at_start/_at_end slow an FP8
// step's compute (two of 32 layers lose the FP8 rate), keep run ids at 0, and are
// checked: FP8 only, within the layers.
func TestBF16LayersFields(t *testing.T) {
	fp8 := []string{"training.precision", "fp8", "parallel.tp", "1", "training.global_batch", "16"}
	base, zero := runWith(t, fp8), runWith(t, fp8, "training.bf16_layers_at_start", "0")
	ends := runWith(t, fp8, "training.bf16_layers_at_start", "1", "training.bf16_layers_at_end", "1")
	if base.RunID != zero.RunID || base.RunID == ends.RunID {
		t.Errorf("run ids: default %s, 0 %s, 1/1 %s", base.RunID, zero.RunID, ends.RunID)
	}
	// The GPU's work grows; the step need not: the BF16 layers issue fewer
	// kernels (no casts), which shortens the host's lead at the step start.
	if !(ends.ComputeS > base.ComputeS) {
		t.Errorf("compute %v s with BF16 ends, %v s all FP8", ends.ComputeS, base.ComputeS)
	}
	checkParseErrors(t, nil, []parseErrorCase{
		{[]string{"training.bf16_layers_at_start", "1"}, "training.bf16_layers_at_start: needs training.precision: fp8, got bf16"},
		{[]string{"training.precision", "fp8", "training.bf16_layers_at_end", "33"}, "training.bf16_layers_at_end: must be between 0 and model.layers 32, got 33"},
		{[]string{"training.precision", "fp8", "training.bf16_layers_at_start", "20", "training.bf16_layers_at_end", "20"}, "training.bf16_layers_at_start + bf16_layers_at_end: 40 is more than model.layers 32"},
	})
}
