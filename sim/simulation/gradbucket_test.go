package simulation

import "testing"

// ddpKV is baseScenario (Llama 3 8B, 218,112,000 parameters a layer) as
// plain data parallelism over 64 GPUs (8 nodes), no tensor parallelism.
var ddpKV = []string{"cluster.nodes", "8", "parallel.tp", "1", "parallel.dp", "64", "parallel.zero", "0", "training.global_batch", "64"}

// TestGradBucket: parallel.grad_bucket sets how many parameters' gradients
// one DP reduction call carries. The builder closes a bucket after the layer
// that fills it, so the calls of a step are the layers grouped greedily
// until each group reaches the bucket: Megatron's default max(40M, 1M·64) =
// 64M takes one layer a call, 5e8 (DeepSpeed) three layers (3 × 218M ≥ 5e8)
// — fewer calls, each priced with its own launch and latency. Bad values are
// one-line errors naming the field.
func TestGradBucket(t *testing.T) {
	calls := func(r *Result) (n int) {
		r.Tasks([]int{0}, func(tr TaskRecord) {
			if tr.Name == "dp_grad_reduce" && tr.Step == 0 && tr.Stream == "dp" {
				n++
			}
		})
		return n
	}
	megatron := runWith(t, ddpKV)
	ds := runWith(t, ddpKV, "parallel.grad_bucket", "5e8")
	whole := runWith(t, ddpKV, "parallel.grad_bucket", "1e12")
	// The backward reaches the output layer (525M parameters, untied) first,
	// then layers 31…0, then the embedding (525M). Default 64M: every one of
	// the 34 closes a bucket by itself. 5e8: the output layer alone, layers in
	// threes (654M) ten times, the last two layers with nothing after them
	// until the embedding joins them: 1 + 10 + 1 = 12. 1e12: one call after
	// the backward.
	if a, b, c := calls(megatron), calls(ds), calls(whole); a != 34 || b != 12 || c != 1 {
		t.Errorf("reduce calls a step: default %d, 5e8 %d, 1e12 %d; want 34, 12, 1", a, b, c)
	}
	// Fewer calls, fewer fixed costs: the reductions' total time falls.
	busy := func(r *Result) (s int64) {
		r.Tasks([]int{0}, func(tr TaskRecord) {
			if tr.Name == "dp_grad_reduce" && tr.Step == 0 {
				s += tr.EndNs - tr.StartNs
			}
		})
		return s
	}
	if !(busy(megatron) > busy(ds) && busy(ds) > busy(whole)) {
		t.Errorf("reduce time a step: default %d ns, 5e8 %d ns, 1e12 %d ns: want decreasing", busy(megatron), busy(ds), busy(whole))
	}
	if err := megatron.Check(); err != nil {
		t.Error(err)
	}
	checkParseErrors(t, ddpKV, []parseErrorCase{
		{[]string{"parallel.grad_bucket", "-1"}, "parallel.grad_bucket: -1 must be >= 0 parameters"},
		{[]string{"parallel.zero", "3", "parallel.grad_bucket", "5e8"}, "parallel.grad_bucket: needs parallel.zero 0, 1 or 2, got zero 3"},
	})
}
