package sim

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
		if got := parseWith(t, fsdp, c.kv...).paramDtype(); got != c.want {
			t.Errorf("%v: parameters gathered as %v, want %v", c.kv, got, c.want)
		}
	}
	if got := parseWith(t, nil, "training.precision", "tf32").paramDtype(); got != workload.FP32 {
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
