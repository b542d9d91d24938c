package simulation

import "testing"

// TestTPLogitsField checks parallel.tp_logits on baseScenario (Llama 3 8B,
// TP 8 × DP 2, 32 sequences of 4,096 tokens per replica, one per
// micro-batch): sharded is the default and canonically empty (same run
// id); replicated is a different run that all-gathers each micro-batch's
// logits over the TP group once (4,096 × 128,256 bf16 = 1,050,673,152 B,
// the gathered tensor), no collective in the backward, and is slower and
// holds more memory (every rank's loss runs over the whole vocabulary);
// the errors name the field and the valid choices.
func TestTPLogitsField(t *testing.T) {
	def := parseWith(t, nil)
	sharded := parseWith(t, nil, "parallel.tp_logits", "sharded")
	if sharded.Parallel.TPLogits != "" || def.RunID() != sharded.RunID() {
		t.Errorf("sharded: %q, run ids %s %s", sharded.Parallel.TPLogits, def.RunID(), sharded.RunID())
	}
	repl := parseWith(t, nil, "parallel.tp_logits", "replicated")
	if repl.RunID() == def.RunID() {
		t.Error("replicated has the default's run id")
	}
	gathers := func(r *Result) (n int, bytes float64) {
		r.Tasks([]int{0}, func(tr TaskRecord) {
			if tr.Name == "tp_logits_gather" && tr.Step == 0 && tr.Stream != "host" {
				n++
				bytes = tr.Bytes
			}
		})
		return n, bytes
	}
	r0, r1 := mustRun(t, def, Options{}), mustRun(t, repl, Options{})
	if n, _ := gathers(r0); n != 0 {
		t.Errorf("sharded: %d logits gathers, want 0", n)
	}
	if n, b := gathers(r1); n != 32 || b != 4096*128256*2 {
		t.Errorf("replicated: %d logits gathers of %g B, want 32 of %d", n, b, 4096*128256*2)
	}
	if r1.StepTimeS <= r0.StepTimeS || r1.PeakMemBytes <= r0.PeakMemBytes {
		t.Errorf("replicated: step %v s (sharded %v), peak %v B (sharded %v)", r1.StepTimeS, r0.StepTimeS, r1.PeakMemBytes, r0.PeakMemBytes)
	}
	checkParseErrors(t, nil, []parseErrorCase{
		{[]string{"parallel.tp_logits", "gathered"}, `parallel.tp_logits: unknown value "gathered" (valid: sharded, replicated)`},
		{[]string{"parallel.tp", "1", "parallel.tp_logits", "replicated"}, "parallel.tp_logits: replicated needs tp > 1 (have tp 1; valid: sharded)"},
	})
}

// TestTPEmbeddingField checks parallel.tp_embedding on baseScenario (TP 8
// with sequence parallelism, 32 micro-batches of 4,096 tokens per rank):
// sharded is the default (canonically empty, same run id) and reduces the
// embedding's output over the TP group after each forward; replicated
// issues no forward collective and all-gathers the sequence-sharded output
// gradient before each embedding backward (4,096 × 4,096 bf16 =
// 33,554,432 B, the gathered tensor), and holds the whole table (more
// memory); the errors name the field and the valid choices.
func TestTPEmbeddingField(t *testing.T) {
	sp := []string{"parallel.sp", "true"}
	def := parseWith(t, sp)
	sharded := parseWith(t, sp, "parallel.tp_embedding", "sharded")
	if sharded.Parallel.TPEmbedding != "" || def.RunID() != sharded.RunID() {
		t.Errorf("sharded: %q, run ids %s %s", sharded.Parallel.TPEmbedding, def.RunID(), sharded.RunID())
	}
	repl := parseWith(t, sp, "parallel.tp_embedding", "replicated")
	if repl.RunID() == def.RunID() {
		t.Error("replicated has the default's run id")
	}
	count := func(r *Result, name string) (n int, bytes float64) {
		r.Tasks([]int{0}, func(tr TaskRecord) {
			if tr.Name == name && tr.Step == 0 && tr.Stream != "host" {
				n++
				bytes = tr.Bytes
			}
		})
		return n, bytes
	}
	r0, r1 := mustRun(t, def, Options{}), mustRun(t, repl, Options{})
	if n, _ := count(r0, "tp_embedding"); n != 32 {
		t.Errorf("sharded: %d embedding reductions, want 32", n)
	}
	if n, _ := count(r0, "tp_embedding_bwd_gather"); n != 0 {
		t.Errorf("sharded: %d embedding gradient gathers, want 0", n)
	}
	if n, _ := count(r1, "tp_embedding"); n != 0 {
		t.Errorf("replicated: %d embedding reductions, want 0", n)
	}
	if n, b := count(r1, "tp_embedding_bwd_gather"); n != 32 || b != 4096*4096*2 {
		t.Errorf("replicated: %d embedding gradient gathers of %g B, want 32 of %d", n, b, 4096*4096*2)
	}
	if r1.PeakMemBytes <= r0.PeakMemBytes {
		t.Errorf("replicated: peak %v B, sharded %v", r1.PeakMemBytes, r0.PeakMemBytes)
	}
	checkParseErrors(t, sp, []parseErrorCase{
		{[]string{"parallel.tp_embedding", "split"}, `parallel.tp_embedding: unknown value "split" (valid: sharded, replicated)`},
		{[]string{"parallel.tp", "1", "parallel.sp", "false", "parallel.tp_embedding", "replicated"}, "parallel.tp_embedding: replicated needs tp > 1 (have tp 1; valid: sharded)"},
	})
}
