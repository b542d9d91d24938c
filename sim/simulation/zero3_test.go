package simulation

import "testing"

// zero3KV is baseScenario as ZeRO-3 data parallelism over 256 GPUs (32
// nodes), no tensor parallelism: each rank gathers whole layers.
var zero3KV = []string{"cluster.nodes", "32", "parallel.tp", "1", "parallel.dp", "256", "parallel.zero", "3", "training.global_batch", "256"}

// TestZero3PrefetchBucket: parallel.zero3_prefetch_bucket splits each
// layer's ZeRO-3 parameter all-gather into ⌈P / bucket⌉ calls, each paying a
// collective's fixed cost, so DeepSpeed's 5e7 default makes the step's
// gathers slower than FSDP's one call a layer; it counts the calls; bad
// values are one-line errors naming the field.
func TestZero3PrefetchBucket(t *testing.T) {
	fsdp := runWith(t, zero3KV)
	ds := runWith(t, zero3KV, "parallel.zero3_prefetch_bucket", "5e7")
	if !(ds.ExposedCommS[3] > fsdp.ExposedCommS[3]) || !(ds.StepTimeS > fsdp.StepTimeS) {
		t.Errorf("DeepSpeed buckets: step %.6g s, DP %.4g s; FSDP: %.6g s, %.4g s: want slower", ds.StepTimeS, ds.ExposedCommS[3], fsdp.StepTimeS, fsdp.ExposedCommS[3])
	}
	gathers := func(r *Result) (n int) {
		r.Tasks([]int{0}, func(tr TaskRecord) {
			if tr.Name == "fsdp_param_gather_fwd" && tr.Layer == 0 && tr.Step == 0 && tr.Stream == "dp" {
				n++
			}
		})
		return n
	}
	// A Llama 3 8B layer holds 218,112,000 parameters: ⌈2.18e8 / 5e7⌉ = 5.
	if a, b := gathers(fsdp), gathers(ds); a != 1 || b != 5 {
		t.Errorf("layer 0 forward gathers: FSDP %d, DeepSpeed %d, want 1 and 5", a, b)
	}
	checkParseErrors(t, zero3KV, []parseErrorCase{
		{[]string{"parallel.zero3_prefetch_bucket", "-1"}, "parallel.zero3_prefetch_bucket: -1 must be >= 0 parameters"},
		{[]string{"parallel.zero", "1", "parallel.zero3_prefetch_bucket", "5e7"}, "parallel.zero3_prefetch_bucket: needs parallel.zero 3, got zero 1"},
	})
}
