package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// planArgs is a small plan (Llama 3 8B on one 8-GPU node) that runs in a
// few seconds.
var planArgs = []string{"plan", "--model", "llama3-8b", "--gpu", "h100-sxm", "--gpus", "8", "--tokens", "20B",
	"--seq", "2048", "--global-batch", "32", "--quiet"}

func planJSON(t *testing.T, extra ...string) map[string]any {
	t.Helper()
	stdout, stderr, err := runCLI(t, append(slices.Clone(planArgs), append([]string{"--format", "json"}, extra...)...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v: %q", err, stdout)
	}
	return got
}

// TestPlanAgreesWithSweepAndBest: plan's best proposal is the hand-written
// sweep's best by time to train (issue 21): the sweep file plan keeps,
// run with simtrain sweep and ranked by simtrain best, names the same
// point at the same step time.
func TestPlanAgreesWithSweepAndBest(t *testing.T) {
	dir := t.TempDir()
	got := planJSON(t, "--out", dir)
	props := got["proposals"].([]any)
	if len(props) == 0 {
		t.Fatalf("no proposal: %v", got)
	}
	first := props[0].(map[string]any)
	for _, k := range []string{"layout", "step_time_s", "mfu", "peak_memory_gib", "days", "cost_usd", "why"} {
		if _, ok := first[k]; !ok {
			t.Errorf("proposal lacks %q: %v", k, first)
		}
	}
	// Proposals are ranked by days, and days = tokens / tokens per step × step time.
	var prev float64
	for i, p := range props {
		d := p.(map[string]any)["days"].(float64)
		if d < prev {
			t.Errorf("proposal %d: %v days after %v", i+1, d, prev)
		}
		prev = d
	}
	step := first["step_time_s"].(float64)
	if want := 20e9 / (32 * 2048) * step / 86400; !near(first["days"].(float64), want) {
		t.Errorf("days %v, want %v", first["days"], want)
	}

	sweepFile := filepath.Join(dir, "plan-llama3-8b-h100-sxm-8.yaml")
	if _, err := os.Stat(filepath.Join(dir, "best.yaml")); err != nil {
		t.Fatal(err)
	}
	hand := filepath.Join(t.TempDir(), "s")
	if _, stderr, err := runCLI(t, "sweep", sweepFile, "--out", hand, "--quiet"); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	stdout, stderr, err := runCLI(t, "best", hand, "--by", "time_to_train", "--tokens", "20B", "--format", "json", "--no-svg")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var best struct {
		Top []struct {
			Name      string  `json:"name"`
			StepTimeS float64 `json:"step_time_s"`
		} `json:"top"`
	}
	if err := json.Unmarshal([]byte(stdout), &best); err != nil {
		t.Fatal(err)
	}
	if best.Top[0].Name != first["name"] || best.Top[0].StepTimeS != step {
		t.Errorf("sweep + best: %s at %v s; plan: %v at %v s", best.Top[0].Name, best.Top[0].StepTimeS, first["name"], step)
	}
	// The best layout kept as a scenario simulates to the same step.
	stdout, stderr, err = runCLI(t, "run", filepath.Join(dir, "best.yaml"), "--out", t.TempDir(), "--format", "json", "--no-timeline")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var run map[string]any
	if err := json.Unmarshal([]byte(strings.Split(stdout, "\n")[0]), &run); err != nil {
		t.Fatal(err)
	}
	if run["step_time_s"] != step {
		t.Errorf("best.yaml runs at %v s, plan said %v", run["step_time_s"], step)
	}
	// peak_memory_gib is the run's peak to the byte (summary.arrow holds
	// whole bytes), not an integer number of GiB.
	if gib, want := first["peak_memory_gib"].(float64), run["peak_mem_bytes"].(float64)/(1<<30); math.Abs(gib-want) > 1e-8 {
		t.Errorf("peak_memory_gib %v, the run's peak is %v GiB", gib, want)
	}
}

func near(a, b float64) bool { return a == b || (a-b)/b < 1e-9 && (b-a)/b < 1e-9 }

// TestPlanConstraintsAndSet: --set pins a field (it leaves the search), and
// --days drops what takes longer, saying so.
func TestPlanConstraintsAndSet(t *testing.T) {
	stdout, _, err := runCLI(t, append(slices.Clone(planArgs), "--set", "parallel.tp=2", "--print-sweep")...)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stdout, "parallel.tp:") || !strings.Contains(stdout, "parallel.pp:") {
		t.Errorf("--set parallel.tp should leave tp out of the search:\n%s", stdout)
	}
	pinned := planJSON(t, "--set", "parallel.tp=2")
	for _, p := range pinned["proposals"].([]any) {
		if tp := p.(map[string]any)["tp"].(float64); tp != 2 {
			t.Errorf("--set parallel.tp=2 proposed tp %v", tp)
		}
	}
	free := planJSON(t)
	firstDays := free["proposals"].([]any)[0].(map[string]any)["days"].(float64)
	tight := planJSON(t, "--days", "1e-9")
	if n := len(tight["proposals"].([]any)); n != 0 {
		t.Errorf("--days 1e-9 kept %d proposals", n)
	}
	notes := tight["not_proposed"].([]any)
	if len(notes) == 0 || !strings.Contains(notes[0].(string), "layouts exceed") {
		t.Errorf("--days should say what it dropped: %v (the fastest takes %v days)", notes, firstDays)
	}
}

// TestPlanCompareGPUs: two GPU types in one answer, each on its own nodes.
func TestPlanCompareGPUs(t *testing.T) {
	args := slices.Clone(planArgs)
	args[4] = "h100-sxm,a100-80gb"
	stdout, stderr, err := runCLI(t, append(args, "--top", "20", "--set", "training.recompute=none", "--set", "parallel.zero=1")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, want := range []string{"h100-sxm", "a100-80gb", "fastest layout that fits", "per GPU-hour"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("plan output lacks %q:\n%s", want, stdout)
		}
	}
}
