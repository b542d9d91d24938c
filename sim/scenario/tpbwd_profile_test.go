package scenario

import "testing"

// TestMegatronDeepSpeedTPBwd checks the megatron-deepspeed profile's
// parallel.overlap.tp_bwd: with sequence parallelism Megatron-DeepSpeed's
// column-parallel backward issues its all-gather and reduce-scatter
// asynchronously (megatron/core/tensor_parallel/layers.py @ cc3a94c6), so
// the profile turns the overlap on; without it (the all-reduce path,
// switched off by the scripts' --no-async-tensor-model-parallel-allreduce)
// it stays off, and an explicit value wins over the profile.
func TestMegatronDeepSpeedTPBwd(t *testing.T) {
	for _, c := range []struct {
		name string
		kv   []string
		want bool
	}{
		{"no framework, sp", []string{"parallel.tp", "2", "parallel.sp", "true"}, false},
		{"megatron-deepspeed, sp", []string{"training.framework", "megatron-deepspeed", "parallel.tp", "2", "parallel.sp", "true"}, true},
		{"megatron-deepspeed, no sp", []string{"training.framework", "megatron-deepspeed", "parallel.tp", "2"}, false},
		{"megatron-deepspeed, sp, explicit false", []string{"training.framework", "megatron-deepspeed", "parallel.tp", "2", "parallel.sp", "true", "parallel.overlap.tp_bwd", "false"}, false},
		{"megatron-lm, sp (not this profile's default)", []string{"training.framework", "megatron-lm", "parallel.tp", "2", "parallel.sp", "true"}, false},
	} {
		p, err := parse(c.kv...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := p.Parallel.Overlap.TPBwd != nil && *p.Parallel.Overlap.TPBwd; got != c.want {
			t.Errorf("%s: tp_bwd %v, want %v", c.name, got, c.want)
		}
	}
}
