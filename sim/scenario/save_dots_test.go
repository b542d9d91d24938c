package scenario

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/workload"
)

// TestRecomputeSaveDots: training.recompute: save-dots parses, survives
// the canonical form (marshalled and parsed back: the same run id), is
// told apart from the other policies in the run id, and takes none of the
// full/selective-only fields; a misspelling names every policy.
func TestRecomputeSaveDots(t *testing.T) {
	s, err := parse("training.recompute", "save-dots")
	if err != nil {
		t.Fatal(err)
	}
	if s.Recompute() != workload.RecomputeSaveDots || s.Training.Recompute != "save-dots" {
		t.Errorf("recompute %v (%q)", s.Recompute(), s.Training.Recompute)
	}
	b, err := json.Marshal(s.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(b) // JSON is YAML
	if err != nil {
		t.Fatalf("canonical form does not parse back: %v", err)
	}
	if back.Recompute() != workload.RecomputeSaveDots || back.RunID() != s.RunID() {
		t.Errorf("round trip: %v, run id %s, want %s", back.Recompute(), back.RunID(), s.RunID())
	}
	for _, other := range []string{"none", "selective-op"} {
		o, err := parse("training.recompute", other)
		if err != nil {
			t.Fatal(err)
		}
		if o.RunID() == s.RunID() {
			t.Errorf("save-dots and %s share a run id", other)
		}
	}
	for _, kv := range [][]string{
		{"training.recompute", "save-dots", "training.recompute_modules", "[core_attn]"},
		{"training.recompute", "save-dots", "training.recompute_every", "2"},
		{"training.recompute", "save-dots", "training.recompute_reentrant", "true"},
	} {
		if _, err := parse(kv...); err == nil {
			t.Errorf("%v accepted", kv)
		}
	}
	_, err = parse("training.recompute", "save_dots")
	if err == nil || !strings.Contains(err.Error(), "training.recompute") || !strings.Contains(err.Error(), "save-dots") {
		t.Errorf("bad value: %v", err)
	}
}
