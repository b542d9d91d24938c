package scenario

import (
	"strings"
	"testing"
)

// TestRecomputeReentrant checks training.recompute_reentrant: it reaches
// the step configuration (parallel.StepConfig.RecomputeToOutput), needs
// recompute: full, and stays out of the canonical form when false, so run
// ids of files without it hold.
func TestRecomputeReentrant(t *testing.T) {
	for _, c := range []struct {
		kv   []string
		want bool
	}{
		{[]string{"training.recompute", "full"}, false},
		{[]string{"training.recompute", "full", "training.recompute_reentrant", "true"}, true},
	} {
		p, err := parse(c.kv...)
		if err != nil {
			t.Fatalf("%v: %v", c.kv, err)
		}
		l, err := p.NewLayout()
		if err != nil {
			t.Fatal(err)
		}
		if got := p.StepConfig(l).RecomputeToOutput; got != c.want {
			t.Errorf("%v: RecomputeToOutput %v, want %v", c.kv, got, c.want)
		}
	}
	_, err := parse("training.recompute", "selective", "training.recompute_reentrant", "true")
	if err == nil || !strings.Contains(err.Error(), "training.recompute_reentrant") {
		t.Errorf("recompute_reentrant with selective recompute: error %v, want one naming the field", err)
	}
	a, _ := parse("training.recompute", "full")
	b, _ := parse("training.recompute", "full", "training.recompute_reentrant", "false")
	if a.RunID() != b.RunID() {
		t.Error("recompute_reentrant: false changed the run id (the canonical form must leave it out)")
	}
}
