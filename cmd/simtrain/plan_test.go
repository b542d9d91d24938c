package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/workload"
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
	if name, got := planBestTop(t, "20B", hand); name != first["name"] || got != step {
		t.Errorf("sweep + best: %s at %v s; plan: %v at %v s", name, got, first["name"], step)
	}
	// The best layout kept as a scenario simulates to the same step.
	run := runScenarioJSON(t, filepath.Join(dir, "best.yaml"))
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

// TestPlanUnevenEnds: the end stages of a pipeline the layers do not
// split evenly over, worked out by hand: middle stages ⌈L/pp⌉ layers, the
// rest halved between the first and last (the first takes the smaller half).
func TestPlanUnevenEnds(t *testing.T) {
	for _, c := range []struct {
		layers, pp, first, last int
		ok                      bool
	}{
		{126, 16, 7, 7, true},  // Llama 3 405B as Meta trained it: 14 × 8 + 7 + 7
		{126, 8, 15, 15, true}, // 6 × 16 + 15 + 15
		{126, 4, 31, 31, true}, // 2 × 32 + 31 + 31
		{126, 2, 0, 0, false},  // 126 = 2 × 63: the even split
		{61, 16, 2, 3, true},   // DeepSeek-V3: 14 × 4 + 2 + 3
		{61, 2, 30, 31, true},
		{80, 16, 0, 0, false}, // 80 = 16 × 5: the even split, no ends
		{126, 1, 0, 0, false},
		{17, 16, 0, 0, false}, // ⌈17/16⌉ = 2, 14 × 2 = 28 > 17: no layers left for the ends
	} {
		first, last, ok := planUnevenEnds(c.layers, c.pp)
		if first != c.first || last != c.last || ok != c.ok {
			t.Errorf("planUnevenEnds(%d, %d) = %d, %d, %v; want %d, %d, %v", c.layers, c.pp, first, last, ok, c.first, c.last, c.ok)
		}
	}
}

// TestPlanPipelines: the depths that divide the layers share the first
// document; each other depth gets its own with its end stages; a --set of
// parallel.pp or of the stage layers is kept.
func TestPlanPipelines(t *testing.T) {
	type doc struct {
		depths      []int
		first, last int
	}
	for _, c := range []struct {
		name   string
		layers int
		pins   planPins
		want   []doc
	}{
		{"even (70B)", 80, nil, []doc{{[]int{1, 2, 4, 8, 16}, 0, 0}}},
		{"405B", 126, nil, []doc{{[]int{1, 2}, 0, 0}, {[]int{4}, 31, 31}, {[]int{8}, 15, 15}, {[]int{16}, 7, 7}}},
		{"pp pinned, uneven", 126, planPins{"parallel.pp": "16"}, []doc{{[]int{16}, 7, 7}}},
		{"pp pinned, even", 126, planPins{"parallel.pp": "2"}, []doc{{nil, 0, 0}}},
		{"ends pinned", 126, planPins{"parallel.first_stage_layers": "7"}, []doc{{[]int{1, 2, 4, 8, 16}, 0, 0}}},
	} {
		var got []doc
		for _, p := range planPipelines(c.layers, c.pins) {
			got = append(got, doc{p.depths, p.first, p.last})
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: planPipelines(%d) = %v, want %v", c.name, c.layers, got, c.want)
		}
	}
}

// TestPlanDefaultBatch: about 4M tokens, raised to dp·pp for the most
// model-parallel layout (tp 8 in the node, pp 16) where that is more.
func TestPlanDefaultBatch(t *testing.T) {
	for _, c := range []struct {
		name      string
		model     string
		seq, gpus int
		gpns      []int
		pins      planPins
		want      int
		raisedFor string // "" = not raised
	}{
		{"70B on 512: 4 × 16 = 64 < 1,024", "llama3-70b", 4096, 512, []int{8}, nil, 1024, ""},
		{"405B on 16,384", "llama3-405b", 4096, 16384, []int{8}, nil, 2048, "tp8 × pp16 × dp128"},
		{"405B on 131,072", "llama3-405b", 4096, 131072, []int{8}, nil, 16384, "tp8 × pp16 × dp1024"},
		{"the largest of two GPU types", "llama3-405b", 4096, 16384, []int{8, 4}, nil, 4096, "tp4 × pp16 × dp256"},
		{"pp pinned", "llama3-405b", 4096, 16384, []int{8}, planPins{"parallel.pp": "8"}, 2048, "tp8 × pp8 × dp256"},
		{"batch pinned", "llama3-405b", 4096, 131072, []int{8}, planPins{"training.global_batch": "1024"}, 1024, ""},
		{"cp from 32k: 8 / (8·16·8) → dp 1", "llama3-8b", 32768, 8, []int{8}, nil, 128, ""},
	} {
		m, err := workload.Preset(c.model)
		if err != nil {
			t.Fatal(err)
		}
		got, raised := planDefaultBatch(m, c.seq, c.gpus, c.gpns, planPipelines(m.Layers, c.pins), c.pins)
		var raisedFor string
		if raised != nil {
			raisedFor = raised.layout()
			if raised.batch != got || raised.from != 1024 {
				t.Errorf("%s: raised %+v, batch %d", c.name, *raised, got)
			}
		}
		if got != c.want || raisedFor != c.raisedFor {
			t.Errorf("%s: batch %d raised for %q, want %d for %q", c.name, got, raisedFor, c.want, c.raisedFor)
		}
	}
}

// planPins405B pin every field of plan's search but tp and pp, so that
// the sweep of Llama 3 405B is 20 points.
var planPins405B = []string{"--set", "training.recompute=none", "--set", "parallel.zero=1", "--set", "parallel.sp=true",
	"--set", "training.micro_batch=1"}

// planPinned405B is plan for Llama 3 405B with planPins405B.
func planPinned405B(gpus string, extra ...string) []string {
	args := []string{"plan", "--model", "llama3-405b", "--gpu", "h100-sxm", "--gpus", gpus, "--tokens", "15T", "--quiet"}
	return append(append(args, planPins405B...), extra...)
}

// TestPlanLlama405BPipelines: Llama 3 405B's 126 layers do not split evenly
// over 4, 8 or 16 stages; plan offers them with uneven end stages and, at
// 16,384 GPUs, proposes pp 16 first (Meta trained it at tp 8, pp 16,
// arXiv:2407.21783 §3.3). The sweep files it keeps, run with simtrain
// sweep and ranked by simtrain best, give the same answer, and best.yaml
// (first and last stages of 7 layers) runs.
func TestPlanLlama405BPipelines(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, err := runCLI(t, planPinned405B("16384", "--format", "json", "--out", dir)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if got["global_batch"] != 2048.0 || got["global_batch_raised"] != true {
		t.Errorf("global batch %v (raised %v), want 2048, raised", got["global_batch"], got["global_batch_raised"])
	}
	props := got["proposals"].([]any)
	if len(props) == 0 {
		t.Fatalf("no proposal: %v", got)
	}
	first := props[0].(map[string]any)
	if first["tp"] != 8.0 || first["pp"] != 16.0 {
		t.Errorf("first proposal %v, want tp8 pp16", first["layout"])
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	var sweeps, runs []string
	for _, f := range files {
		if filepath.Base(f) != "best.yaml" {
			sweeps = append(sweeps, filepath.Base(f))
		}
	}
	want := []string{"plan-llama3-405b-h100-sxm-16384-pp16.yaml", "plan-llama3-405b-h100-sxm-16384-pp4.yaml",
		"plan-llama3-405b-h100-sxm-16384-pp8.yaml", "plan-llama3-405b-h100-sxm-16384.yaml"}
	if !slices.Equal(sweeps, want) {
		t.Fatalf("sweep files %v, want %v", sweeps, want)
	}
	for _, f := range sweeps {
		out := filepath.Join(t.TempDir(), "s")
		args := append([]string{"sweep", filepath.Join(dir, f), "--out", out, "--quiet"}, planPins405B...)
		if _, stderr, err := runCLI(t, args...); err != nil {
			t.Fatalf("%s: %v\n%s", f, err, stderr)
		}
		runs = append(runs, out)
	}
	if name, got := planBestTop(t, "15T", runs...); name != first["name"] || got != first["step_time_s"] {
		t.Errorf("sweep + best: %s at %v s; plan: %v at %v s", name, got, first["name"], first["step_time_s"])
	}
	if got := runScenarioJSON(t, filepath.Join(dir, "best.yaml"))["step_time_s"]; got != first["step_time_s"] {
		t.Errorf("best.yaml runs at %v s, plan said %v", got, first["step_time_s"])
	}
}

// planBestTop ranks the sweep outputs in dirs with simtrain best by time to
// train on tokens and returns the first row's name and step time.
func planBestTop(t *testing.T, tokens string, dirs ...string) (name string, stepS float64) {
	t.Helper()
	stdout, stderr, err := runCLI(t, append(append([]string{"best"}, dirs...), "--by", "time_to_train", "--tokens", tokens, "--format", "json", "--no-svg")...)
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
	if len(best.Top) == 0 {
		t.Fatalf("simtrain best ranked nothing:\n%s", stdout)
	}
	return best.Top[0].Name, best.Top[0].StepTimeS
}

// runScenarioJSON runs a scenario file (plan's best.yaml) without a
// timeline and returns its JSON summary.
func runScenarioJSON(t *testing.T, file string) map[string]any {
	t.Helper()
	stdout, stderr, err := runCLI(t, "run", file, "--out", t.TempDir(), "--format", "json", "--no-timeline")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var run map[string]any
	if err := json.Unmarshal([]byte(strings.Split(stdout, "\n")[0]), &run); err != nil {
		t.Fatal(err)
	}
	return run
}

// TestPlanLlama405BAt131072: the 4M-token batch is smaller than the
// data-parallel size of every layout at 131,072 GPUs and the default
// network joins at most 65,536; plan raises the batch, says so, builds the
// network from pods and proposes a layout.
func TestPlanLlama405BAt131072(t *testing.T) {
	stdout, stderr, err := runCLI(t, planPinned405B("131072")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, want := range []string{
		"global batch 16,384:",
		"global batch raised from 1,024 to 16,384 sequences (67.11M tokens) so that tp8 × pp16 × dp1024 has 16 micro-batches per pipeline; pass --global-batch to choose",
		"fastest layout that fits",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("plan output lacks %q:\n%s", want, stdout)
		}
	}
	stdout, _, err = runCLI(t, planPinned405B("131072", "--print-sweep")...)
	if err != nil || !strings.Contains(stdout, "network: {pod_gpus: 1024}") {
		t.Errorf("the sweep at 131,072 GPUs should build its network from 1,024-GPU pods (%v):\n%s", err, stdout)
	}
}
