package simulation

import "testing"

// fsdpKV turns baseScenario into FSDP over the 16 H100 (tp 1, zero 3), 64
// sequences as 4 micro-batches of one per rank.
var fsdpKV = []string{"parallel.tp", "1", "parallel.zero", "3"}

// TestZero3GradSyncField checks parallel.zero3_grad_sync: every is the
// default and canonically empty (same run id), last is a different run that
// reduce-scatters a quarter as often, is no slower and holds more gradient
// memory, and the errors name the field and the valid choices.
func TestZero3GradSyncField(t *testing.T) {
	def := parseWith(t, fsdpKV)
	every := parseWith(t, fsdpKV, "parallel.zero3_grad_sync", "every")
	if every.Parallel.Zero3GradSync != "" || def.RunID() != every.RunID() {
		t.Errorf("every: %q, run ids %s %s", every.Parallel.Zero3GradSync, def.RunID(), every.RunID())
	}
	last := parseWith(t, fsdpKV, "parallel.zero3_grad_sync", "last")
	if last.RunID() == def.RunID() {
		t.Error("last has the default's run id")
	}
	scatters := func(r *Result) (n int) {
		r.Tasks([]int{0}, func(tr TaskRecord) {
			if tr.Name == "fsdp_grad_scatter" && tr.Step == 0 {
				n++
			}
		})
		return n
	}
	r0, r1 := mustRun(t, def, Options{}), mustRun(t, last, Options{})
	if n0, n1 := scatters(r0), scatters(r1); n1 == 0 || n0 != 4*n1 {
		t.Errorf("gradient reduce-scatters: every %d, last %d, want 4:1", n0, n1)
	}
	if r1.StepTimeS > r0.StepTimeS || r1.PeakMemBytes <= r0.PeakMemBytes {
		t.Errorf("last: step %v s (every %v), peak %v B (every %v)", r1.StepTimeS, r0.StepTimeS, r1.PeakMemBytes, r0.PeakMemBytes)
	}
	checkParseErrors(t, fsdpKV, []parseErrorCase{
		{[]string{"parallel.zero3_grad_sync", "sometimes"}, `parallel.zero3_grad_sync: unknown value "sometimes" (valid: every, last)`},
		{[]string{"parallel.zero", "2", "parallel.zero3_grad_sync", "last"}, "parallel.zero3_grad_sync: last needs zero 3 (have zero 2; valid: every)"},
	})
}
