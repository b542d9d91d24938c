package simulation

import (
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/workload"
)

// cpKV turns baseScenario (Llama 3 8B, 16 H100) into CP 4 at sequence
// 32768 with full recomputation.
var cpKV = []string{"parallel.tp", "1", "parallel.cp", "4", "training.seq_len", "32768", "training.recompute", "full"}

// TestCPImplField checks parallel.cp_impl and training.attention_repeat_kv:
// the defaults and canonical forms (run ids unchanged), the wiring into the
// workload shape and the software line, that PyTorch's ring and repeated
// K/V cost step time, and the one-line error naming the valid choices.
func TestCPImplField(t *testing.T) {
	def := parseWith(t, cpKV)
	explicit := parseWith(t, cpKV, "parallel.cp_impl", "p2p")
	if def.Shape().CPImpl != workload.CPP2P || explicit.Parallel.CPImpl != "" || def.RunID() != explicit.RunID() {
		t.Errorf("p2p default: %v %q, run ids %s %s", def.Shape().CPImpl, explicit.Parallel.CPImpl, def.RunID(), explicit.RunID())
	}
	py := parseWith(t, cpKV, "parallel.cp_impl", "pytorch", "training.attention_repeat_kv", "true")
	if sh := py.Shape(); sh.CPImpl != workload.CPPyTorch || !sh.RepeatKV || py.RunID() == def.RunID() {
		t.Errorf("pytorch + repeat: shape %v %v, run id %s", sh.CPImpl, sh.RepeatKV, py.RunID())
	}
	if sw := py.Software(); !strings.Contains(sw, "repeat-kv") || !strings.Contains(sw, "cp pytorch") {
		t.Errorf("software line %q: want repeat-kv and cp pytorch", sw)
	}
	base := runWith(t, cpKV, "parallel.cp_impl", "allgather").StepTimeS
	ring := runWith(t, cpKV, "parallel.cp_impl", "pytorch").StepTimeS
	both := runWith(t, cpKV, "parallel.cp_impl", "pytorch", "training.attention_repeat_kv", "true").StepTimeS
	if !(ring > base && both > ring) {
		t.Errorf("step times: allgather %g s, pytorch %g s, pytorch + repeat_kv %g s: want increasing", base, ring, both)
	}
	if !strings.Contains(def.Software(), "cp p2p") {
		t.Errorf("default software line %q: want cp p2p", def.Software())
	}
	if r := mustRun(t, def, Options{}); !(r.StepTimeS > 0) {
		t.Errorf("p2p step %g s", r.StepTimeS)
	}
	checkParseErrors(t, cpKV, []parseErrorCase{
		{[]string{"parallel.cp_impl", "ring"}, `parallel.cp_impl: unknown value "ring" (valid: allgather, pytorch, p2p)`},
	})
}
