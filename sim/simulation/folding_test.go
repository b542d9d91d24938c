package simulation

import (
	"github.com/simtrain/simtrain/sim/scenario"
	"os"
	"strings"
	"testing"
)

const mixtralEP8 = "../../scenarios/mixtral-8x7b-ep8.yaml"

// TestExpertTPErrors: parallel.expert_tp errors are one line, name the
// field and the valid choices.
func TestExpertTPErrors(t *testing.T) {
	for _, c := range []struct {
		kv   []string
		want string
	}{
		{[]string{"parallel.expert_tp", "3"}, "parallel.expert_tp: 3 is more than tp 2; expert TP above TP is not supported (valid: divisors of tp 2)"},
		{[]string{"parallel.expert_tp", "0"}, "parallel.expert_tp: must be >= 1, got 0 (valid: divisors of tp 2)"},
		{[]string{"parallel.tp", "4", "parallel.expert_tp", "3"}, "parallel.expert_tp: 3 does not divide tp 4 (valid: divisors of tp)"},
		{[]string{"parallel.expert_tp", "1", "parallel.sp", "false"}, "parallel.expert_tp: 1 < tp 2 needs parallel.sp: true"},
		{[]string{"parallel.expert_tp", "1", "parallel.ep", "16"}, "parallel.ep: 16 does not divide model.moe.experts 8"},
		{[]string{"parallel.tp", "8", "parallel.expert_tp", "4", "parallel.ep", "8", "parallel.pp", "4"}, "parallel.ep: ep*expert_tp = 8*4 does not divide tp*cp*dp = 16 (valid ep: divisors of 4)"},
		{[]string{"parallel.expert_tp", "1", "parallel.pp", "2", "parallel.order", "tp-cp-ep-pp-dp"}, "parallel.order: expert_tp 1 < tp 2 (MoE parallel folding) needs pp last in the order, got tp-cp-ep-pp-dp"},
	} {
		raw, err := os.ReadFile(mixtralEP8)
		if err != nil {
			t.Fatal(err)
		}
		_, err = scenario.Parse(raw, scenario.Overrides(c.kv...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.kv, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error spans lines: %q", c.kv, err)
		}
	}
	// A dense model cannot fold.
	if _, err := parse("parallel.expert_tp", "4"); err == nil || !strings.Contains(err.Error(), "parallel.expert_tp: 4 needs a mixture-of-experts model") {
		t.Errorf("dense model: %v", err)
	}
}

// TestExpertTPDefaultIsTP: expert_tp equal to tp is the default — the same
// run id and the same step time as leaving it out.
func TestExpertTPDefaultIsTP(t *testing.T) {
	a := loadEdited(t, mixtralEP8)
	b := loadEdited(t, mixtralEP8, "parallel.expert_tp", "2")
	if a.RunID() != b.RunID() || b.Parallel.ExpertTP != 0 {
		t.Fatalf("run ids %s and %s, expert_tp %d", a.RunID(), b.RunID(), b.Parallel.ExpertTP)
	}
	ra, rb := mustRun(t, a, Options{}), mustRun(t, b, Options{})
	if ra.StepTimeS != rb.StepTimeS {
		t.Errorf("step %v s without expert_tp, %v s with expert_tp = tp", ra.StepTimeS, rb.StepTimeS)
	}
	c := loadEdited(t, mixtralEP8, "parallel.expert_tp", "1")
	if c.RunID() == a.RunID() {
		t.Error("folded scenario has the unfolded run id")
	}
}

// TestFoldedSymmetricEqualsAllRanks: a folded MoE layout (Mixtral, tp 2,
// ep 8 over 4 TP groups, expert_tp 1; and pipelined) gives the same step at
// analytic fidelity whether one rank per stage or every rank is played,
// with NCCL and HybridEP dispatch.
func TestFoldedSymmetricEqualsAllRanks(t *testing.T) {
	for _, kv := range [][]string{
		{"parallel.expert_tp", "1"},
		{"parallel.expert_tp", "1", "parallel.pp", "2", "parallel.ep_backend", "hybridep"},
		{"parallel.tp", "4", "parallel.expert_tp", "2", "parallel.ep", "4", "parallel.zero", "0"},
	} {
		a := mustRun(t, loadEdited(t, mixtralEP8, kv...), Options{})
		b := mustRun(t, loadEdited(t, mixtralEP8, kv...), Options{AllRanks: true})
		if a.StepTimeS != b.StepTimeS || a.ExposedCommS != b.ExposedCommS || a.BubbleFraction != b.BubbleFraction {
			t.Errorf("%v: symmetric %v s %v, all ranks %v s %v", kv, a.StepTimeS, a.ExposedCommS, b.StepTimeS, b.ExposedCommS)
		}
	}
}
