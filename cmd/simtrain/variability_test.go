package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/output"
)

// TestRunVariabilityWritesSteps: a run with sim.variability writes
// steps.arrow (one row per step), prints p50/p99, and the same seed writes the same
// bytes; a run without the block writes no steps.arrow.
func TestRunVariabilityWritesSteps(t *testing.T) {
	args := func(dir string, seed string) []string {
		return []string{"run", "../../scenarios/quickstart.yaml", "--out", dir, "--set", "sim.timeline=false",
			"--set", "sim.steps=6", "--set", "sim.variability.distribution=lognormal",
			"--set", "sim.variability.step_cv=0.03", "--set", "sim.seed=" + seed}
	}
	a, b, c := t.TempDir(), t.TempDir(), t.TempDir()
	out, _, err := runCLI(t, args(a, "5")...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "step p50 / p99") {
		t.Errorf("table has no p50/p99 row:\n%s", out)
	}
	if _, _, err := runCLI(t, args(b, "5")...); err != nil {
		t.Fatal(err)
	}
	name := "quickstart-llama3-8b-fsdp"
	var rows []output.StepRow
	if _, err := output.ReadTable(filepath.Join(a, name, "steps.arrow"), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6 {
		t.Fatalf("%d step rows, want 6", len(rows))
	}
	for i, r := range rows {
		if r.Step != int32(i) || r.SlowestRank < 0 || r.SlowestRank >= 8 || r.BaseS != rows[0].BaseS || r.StepTimeS <= 0 {
			t.Errorf("row %d: %+v", i, r)
		}
	}
	x, _ := os.ReadFile(filepath.Join(a, name, "steps.arrow"))
	y, _ := os.ReadFile(filepath.Join(b, name, "steps.arrow"))
	if len(x) == 0 || !bytes.Equal(x, y) {
		t.Error("steps.arrow: seed 5 twice wrote different bytes")
	}
	if _, _, err := runCLI(t, "run", "../../scenarios/quickstart.yaml", "--out", c, "--set", "sim.timeline=false"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(c, name, "steps.arrow")); !os.IsNotExist(err) {
		t.Errorf("steps.arrow without sim.variability: %v", err)
	}
}
