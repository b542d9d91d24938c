package simulation

import (
	"testing"

	"github.com/simtrain/simtrain/sim/parallel"
)

// moeKV turns baseScenario into Qwen3-30B-A3B on 16 H100 with EP 8 inside
// each node.
var moeKV = []string{"model.preset", "qwen3-30b-a3b", "parallel.tp", "1", "parallel.ep", "8"}

// TestEPBackendField checks parallel.ep_backend and parallel.ep_sms: the
// default, the canonical form, the wiring, and one-line errors naming the
// field and the valid choices.
func TestEPBackendField(t *testing.T) {
	def := parseWith(t, moeKV)
	explicit := parseWith(t, moeKV, "parallel.ep_backend", "nccl")
	if def.EPBackend() != parallel.EPNCCL || explicit.Parallel.EPBackend != "" || def.RunID() != explicit.RunID() {
		t.Errorf("nccl default: %v %q, run ids %s %s", def.EPBackend(), explicit.Parallel.EPBackend, def.RunID(), explicit.RunID())
	}
	hy := parseWith(t, moeKV, "parallel.ep_backend", "hybridep", "parallel.ep_sms", "32")
	if hy.EPBackend() != parallel.EPHybridEP || hy.RunID() == def.RunID() {
		t.Errorf("hybridep: %v, run id %s", hy.EPBackend(), hy.RunID())
	}
	checkParseErrors(t, moeKV, []parseErrorCase{
		{[]string{"parallel.ep_backend", "mori"}, `parallel.ep_backend: unknown value "mori" (valid: nccl, deepep, hybridep)`},
		{[]string{"parallel.ep", "1", "parallel.ep_backend", "deepep"}, "parallel.ep_backend: deepep needs ep > 1 (have ep 1; valid with ep 1: nccl)"},
		{[]string{"parallel.ep_sms", "24"}, "parallel.ep_sms: needs parallel.ep_backend deepep or hybridep"},
		{[]string{"parallel.ep_backend", "hybridep", "parallel.ep_sms", "-1"}, "parallel.ep_sms: -1 must be >= 0"},
		{[]string{"parallel.ep_backend", "hybridep", "parallel.ep_sms", "100"}, "parallel.ep_sms: 100 is more than half of h100-sxm's 132 SMs"},
	})
}

// TestEPBackendRun runs the MoE scenario with each backend: nccl (explicit)
// is bit-identical to the default; hybridep moves the bf16 distinct-rank
// bytes (D(128, 8, 8) = 5.33936 rows of 2048 × 2 bytes per token) on the
// EP stream and prices them differently.
func TestEPBackendRun(t *testing.T) {
	run := func(kv ...string) *Result { return runWith(t, moeKV, kv...) }
	epBytes := func(r *Result) (n int, bytes float64) {
		r.Tasks([]int{0}, func(tr TaskRecord) {
			if tr.Stream == "ep" && tr.Step == 0 {
				n++
				bytes = tr.Bytes
			}
		})
		return n, bytes
	}
	def, nccl := run(), run("parallel.ep_backend", "nccl")
	if def.StepTimeS != nccl.StepTimeS || def.ExposedCommS != nccl.ExposedCommS {
		t.Errorf("explicit nccl differs: %v %v", def.StepTimeS, nccl.StepTimeS)
	}
	hy := run("parallel.ep_backend", "hybridep")
	n0, b0 := epBytes(def)
	n1, b1 := epBytes(hy)
	// seq 4096, micro-batch 1: NCCL 4096·8·2048·2; HybridEP 4096·5.33936·2048·2.
	if n0 == 0 || n0 != n1 || b0 != 4096*8*2048*2 || b1 != 4096*parallel.ExpectedDistinct(128, 8, 8)*2048*2 {
		t.Errorf("EP tasks: nccl %d × %.0f B, hybridep %d × %.0f B", n0, b0, n1, b1)
	}
	if hy.StepTimeS == def.StepTimeS {
		t.Error("hybridep priced like nccl")
	}
}

// TestEPBackendFlowFloor: under flow fidelity a HybridEP dispatch plays its
// bytes on the fabric but never finishes faster than the library's measured
// bandwidth allows (parallel.Executor.FloorByTask): every EP task of rank
// 0 lasts at least its analytic (priced) duration, and at least one of the
// fabric-played tasks is held to exactly that floor (inside one NVLink
// domain the flows alone would finish sooner).
func TestEPBackendFlowFloor(t *testing.T) {
	s := parseWith(t, moeKV, "parallel.ep_backend", "hybridep")
	durs := func(r *Result) []int64 {
		var d []int64
		r.Tasks([]int{0}, func(tr TaskRecord) {
			if tr.Stream == "ep" {
				d = append(d, tr.EndNs-tr.StartNs)
			}
		})
		return d
	}
	a := mustRun(t, s, Options{})
	b := mustRun(t, parseWith(t, moeKV, "parallel.ep_backend", "hybridep", "sim.fidelity", "flow"), Options{})
	da, db := durs(a), durs(b)
	if len(da) == 0 || len(da) != len(db) {
		t.Fatalf("EP tasks: %d analytic, %d flow", len(da), len(db))
	}
	held := 0
	for i := range da {
		if db[i] < da[i] {
			t.Fatalf("EP task %d: %d ns under flow, faster than the priced %d ns", i, db[i], da[i])
		}
		if db[i] == da[i] {
			held++
		}
	}
	if held == 0 {
		t.Error("no EP task held to the library's measured bandwidth under flow fidelity")
	}
}
