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
			if tr.Name == "tp_logits_gather" && tr.Step == 0 {
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
