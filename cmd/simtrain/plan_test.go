package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/output"
	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/scenario"
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
// document; each other depth gets its own with its end stages; each 1F1B
// document is followed by one interleaved document per virtual-stage count
// with the depths that count fits (virtual 0: 1F1B); a --set of
// parallel.pp, of the stage layers, of the schedule, of the virtual stages
// or of the pipeline engine is kept.
func TestPlanPipelines(t *testing.T) {
	type doc struct {
		depths      []int
		first, last int
		virtual     int
	}
	// 126 layers: pp 2 holds 63 a stage, which no v of 2, 4, 8 divides;
	// pp 4, 8, 16 have 32, 16, 8 layers on each middle stage and 31, 15, 7
	// (+1 slot) on the ends, room for 8 chunks.
	llama405B := []doc{{[]int{1, 2}, 0, 0, 0},
		{[]int{4}, 31, 31, 0}, {[]int{4}, 31, 31, 2}, {[]int{4}, 31, 31, 4}, {[]int{4}, 31, 31, 8},
		{[]int{8}, 15, 15, 0}, {[]int{8}, 15, 15, 2}, {[]int{8}, 15, 15, 4}, {[]int{8}, 15, 15, 8},
		{[]int{16}, 7, 7, 0}, {[]int{16}, 7, 7, 2}, {[]int{16}, 7, 7, 4}, {[]int{16}, 7, 7, 8}}
	for _, c := range []struct {
		name   string
		layers int
		pins   planPins
		want   []doc
	}{
		// 80 layers: 80/(pp·v) whole for v 2 at pp 2, 4, 8; v 4 at pp 2, 4; v 8 at pp 2.
		{"even (70B)", 80, nil, []doc{{[]int{1, 2, 4, 8, 16}, 0, 0, 0}, {[]int{2, 4, 8}, 0, 0, 2}, {[]int{2, 4}, 0, 0, 4}, {[]int{2}, 0, 0, 8}}},
		{"405B", 126, nil, llama405B},
		{"pp pinned, uneven", 126, planPins{"parallel.pp": "16"}, []doc{{[]int{16}, 7, 7, 0}, {[]int{16}, 7, 7, 2}, {[]int{16}, 7, 7, 4}, {[]int{16}, 7, 7, 8}}},
		{"pp pinned, even, no v fits", 126, planPins{"parallel.pp": "2"}, []doc{{nil, 0, 0, 0}}},
		{"pp pinned, even", 80, planPins{"parallel.pp": "4"}, []doc{{nil, 0, 0, 0}, {nil, 0, 0, 2}, {nil, 0, 0, 4}}},
		{"ends pinned", 126, planPins{"parallel.first_stage_layers": "7"}, []doc{{[]int{1, 2, 4, 8, 16}, 0, 0, 0}}},
		{"schedule pinned 1f1b", 126, planPins{"parallel.schedule": "1f1b"}, []doc{{[]int{1, 2}, 0, 0, 0}, {[]int{4}, 31, 31, 0}, {[]int{8}, 15, 15, 0}, {[]int{16}, 7, 7, 0}}},
		{"schedule pinned interleaved", 80, planPins{"parallel.schedule": "interleaved"}, []doc{{[]int{1, 2, 4, 8, 16}, 0, 0, 0}, {[]int{2, 4, 8}, 0, 0, 2}, {[]int{2, 4}, 0, 0, 4}, {[]int{2}, 0, 0, 8}}},
		{"virtual stages pinned to 1", 80, planPins{"parallel.virtual_stages": "1"}, []doc{{[]int{1, 2, 4, 8, 16}, 0, 0, 0}}},
		{"virtual stages pinned to 4", 126, planPins{"parallel.virtual_stages": "4"}, []doc{{[]int{4}, 31, 31, 4}, {[]int{8}, 15, 15, 4}, {[]int{16}, 7, 7, 4}}},
		{"virtual stages pinned to 16: fits nothing", 80, planPins{"parallel.virtual_stages": "16"}, []doc{{[]int{1, 2, 4, 8, 16}, 0, 0, 0}}},
		{"deepspeed's engine: 1F1B only", 80, planPins{"parallel.pipe_engine": "deepspeed"}, []doc{{[]int{1, 2, 4, 8, 16}, 0, 0, 0}}},
	} {
		var got []doc
		for _, p := range planPipelines(c.layers, c.pins) {
			got = append(got, doc{p.depths, p.first, p.last, p.virtual})
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: planPipelines(%d) = %v, want %v", c.name, c.layers, got, c.want)
		}
	}
}

// TestPlanVirtualFits: the interleaved schedule's virtual stages the
// scenario rules accept, worked out by hand. Even split: pp·v divides the
// layers. Uneven ends f, l: the rest splits over the middle stages' chunks
// and the end stages have f+1, l+1 ≥ v slots (the embedding or the output
// layer takes one).
func TestPlanVirtualFits(t *testing.T) {
	for _, c := range []struct {
		layers, pp, first, last int
		fits                    []int // of v = 2, 3, 4, 8, 16
	}{
		{126, 16, 7, 7, []int{2, 4, 8}},      // 112 = 14 × 8 in the middle; 8 slots on each end
		{126, 8, 15, 15, []int{2, 4, 8, 16}}, // 96 = 6 × 16; 16 slots on each end
		{126, 4, 31, 31, []int{2, 4, 8, 16}}, // 64 = 2 × 32; 32 slots on each end
		{126, 2, 0, 0, []int{3}},             // 63 a stage: odd, 3 divides it
		{126, 1, 0, 0, nil},                  // no pipeline to interleave
		{80, 2, 0, 0, []int{2, 4, 8}},        // 40 a stage
		{80, 4, 0, 0, []int{2, 4}},           // 20 a stage
		{80, 8, 0, 0, []int{2}},              // 10 a stage
		{80, 16, 0, 0, nil},                  // 5 a stage
		{61, 16, 2, 3, []int{2}},             // 56 = 14 × 4, but the first stage has 2 + 1 slots: not 4 chunks
		{10, 2, 4, 6, []int{2, 3, 4}},        // no middle stage; ends of 5 and 7 slots
		{126, 16, 63, 63, nil},               // nothing left for the 14 middle stages
	} {
		var got []int
		for _, v := range []int{2, 3, 4, 8, 16} {
			if planVirtualFits(c.layers, c.pp, c.first, c.last, v) {
				got = append(got, v)
			}
		}
		if !slices.Equal(got, c.fits) {
			t.Errorf("planVirtualFits(%d layers, pp %d, ends %d/%d): v %v, want %v", c.layers, c.pp, c.first, c.last, got, c.fits)
		}
	}
}

// TestPlanVirtualFitsAgreesWithPlacement: planVirtualFits says yes
// exactly where the scenario rules' layer placement (parallel.Place on the
// interleaved schedule's placement) cuts the model, over every layer count
// to 130, the depths plan searches with their end stages, and v 2 to 8.
func TestPlanVirtualFitsAgreesWithPlacement(t *testing.T) {
	for layers := 1; layers <= 130; layers++ {
		for _, pp := range []int{2, 4, 8, 16} {
			first, last, uneven := planUnevenEnds(layers, pp)
			if !uneven && layers%pp != 0 {
				continue
			}
			for v := 2; v <= 8; v++ {
				sh := pipeline.Shape{Stages: pp, Virtual: v}
				_, err := parallel.Place(pipeline.Interleaved.Placement(sh), layers, first, last)
				if got := planVirtualFits(layers, pp, first, last, v); got != (err == nil) {
					t.Errorf("%d layers, pp %d, ends %d/%d, v %d: planVirtualFits %v, placement error %v", layers, pp, first, last, v, got, err)
				}
			}
		}
	}
}

// TestPlanBatchDivisible: the batch nearest the one wanted that every dp
// plan can make divides, the odd part of the GPU count times a power of
// two.
func TestPlanBatchDivisible(t *testing.T) {
	for _, c := range []struct{ want, gpus, batch int }{
		{1024, 512, 1024},
		{1024, 131072, 1024},
		{1024, 1, 1024},
		{1024, 24, 768},   // 3 × 256: 1,024/3 = 341 is nearer 256 than 512 on a log scale
		{1024, 96, 768},   // the same odd part
		{1024, 40, 1280},  // 5 × 256 (1,024/5 = 205)
		{683, 8, 512},     // 4M tokens of 6,144: a prime no dp > 1 divides
		{128, 1023, 1023}, // never below the odd part
	} {
		got := planBatchDivisible(c.want, c.gpus)
		if got != c.batch {
			t.Errorf("planBatchDivisible(%d, %d GPUs) = %d, want %d", c.want, c.gpus, got, c.batch)
		}
		odd := c.gpus
		for odd%2 == 0 {
			odd /= 2
		}
		if got%odd != 0 {
			t.Errorf("planBatchDivisible(%d, %d GPUs) = %d, which the odd part %d does not divide", c.want, c.gpus, got, odd)
		}
	}
}

// TestPlanOnThreeNodes: 24 GPUs (three nodes of 8), on which no dp divides
// the 1,024 sequences of 4M tokens; plan takes 768 and says so.
func TestPlanOnThreeNodes(t *testing.T) {
	planOutputHas(t, []string{"plan", "--model", "llama3-8b", "--gpu", "h100-sxm", "--gpus", "24", "--tokens", "1T", "--quiet",
		"--set", "training.recompute=none", "--set", "parallel.zero=1", "--set", "parallel.sp=true", "--set", "training.micro_batch=1", "--set", "parallel.pp=1"},
		"global batch 768:",
		"global batch 768 sequences (3.146M tokens), not 1,024: the nearest to 4M tokens that every data-parallel size on 24 GPUs divides; pass --global-batch to choose",
		"fastest layout that fits")
}

// planOutputHas runs simtrain with args (a plan) and fails the test where
// its output lacks one of wants.
func planOutputHas(t *testing.T, args []string, wants ...string) {
	t.Helper()
	stdout, stderr, err := runCLI(t, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, want := range wants {
		if !strings.Contains(stdout, want) {
			t.Errorf("plan output lacks %q:\n%s", want, stdout)
		}
	}
}

// TestPlanPinnedBatch: a batch pinned with --set is the one plan reports
// (the header and the JSON), not the 4M-token default it replaced.
func TestPlanPinnedBatch(t *testing.T) {
	args := append(planPinned405B("16384"), "--set", "training.global_batch=4096", "--set", "parallel.pp=16", "--format", "json")
	stdout, stderr, err := runCLI(t, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if got["global_batch"] != 4096.0 || got["global_batch_raised"] != nil || got["global_batch_rounded_from"] != nil {
		t.Errorf("global batch %v (raised %v, rounded from %v), want 4096 as pinned", got["global_batch"], got["global_batch_raised"], got["global_batch_rounded_from"])
	}
	props := got["proposals"].([]any)
	if len(props) == 0 {
		t.Fatalf("no proposal: %v", got)
	}
	if p := props[0].(map[string]any); p["dp"] != 128.0 {
		t.Errorf("first proposal %v", p["layout"])
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
		got, _, raised := planDefaultBatch(m, c.seq, c.gpus, c.gpns, planPipelines(m.Layers, c.pins), c.pins)
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
// over 4, 8 or 16 stages; plan offers them with uneven end stages, with
// 1F1B and the interleaved schedule at 2, 4 and 8 virtual stages, and, at
// 16,384 GPUs, proposes pp 16 with 8 virtual stages first (Meta trained it
// at tp 8, pp 16, interleaved: arXiv:2407.21783 §3.3; 8 as in
// scenarios/llama3-405b-16k-h100.yaml). The sweep files it keeps, run
// with simtrain sweep and ranked by simtrain best, give the same answer,
// and best.yaml (first and last stages of 7 layers, 8 chunks a rank) runs.
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
	if first["tp"] != 8.0 || first["pp"] != 16.0 || first["schedule"] != "interleaved" || first["virtual_stages"] != 8.0 ||
		first["layout"] != "tp8 pp16 v8 dp128 sp mb1 zero1 none" {
		t.Errorf("first proposal %v (schedule %v, virtual_stages %v), want tp8 pp16 v8 dp128 sp mb1 zero1 none",
			first["layout"], first["schedule"], first["virtual_stages"])
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	var sweeps, runs []string
	for _, f := range files {
		if filepath.Base(f) != "best.yaml" {
			sweeps = append(sweeps, filepath.Base(f))
		}
	}
	want := []string{"plan-llama3-405b-h100-sxm-16384.yaml"}
	for _, pp := range []string{"-pp4", "-pp8", "-pp16"} {
		for _, v := range []string{"", "-v2", "-v4", "-v8"} {
			want = append(want, "plan-llama3-405b-h100-sxm-16384"+pp+v+".yaml")
		}
	}
	slices.Sort(want)
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

// TestPlanInterleavePays: plan searches the interleaved schedule for a
// layout only where 1F1B's bubble, with the fewest micro-batches the
// search makes, is at least 5% (planInterleaveMinBubble).
func TestPlanInterleavePays(t *testing.T) {
	space := []planSearch{{"parallel.tp", []string{"1", "2", "4", "8"}}, {"training.micro_batch", []string{"1", "2", "4"}}}
	for _, c := range []struct {
		name        string
		gpus, batch int
		tp, pp      int
		want        bool
		bubble      string
	}{
		{"405B on 16,384: m = 2,048/(128·4) = 4", 16384, 2048, 8, 16, true, "15/4"},
		{"70B on 512: m = 1,024/(64·4) = 4", 512, 1024, 4, 2, true, "1/4"},
		{"8B on 64 at seq 512: m = 8,192/(32·4) = 64", 64, 8192, 1, 2, false, "1/64"},
		{"the same at pp 8: m = 8,192/(8·4) = 256", 64, 8192, 1, 8, false, "7/256"},
		{"at the bound: 1/20", 64, 2560, 1, 2, true, "1/20"},
		{"just below it: 1/21", 64, 2688, 1, 2, false, "1/21"},
		{"tp·pp does not divide the GPUs", 24, 768, 16, 1, false, "-"},
	} {
		o := planOptions{numGPUs: c.gpus, globalBatch: c.batch}
		if got := planInterleavePays(o, c.tp, c.pp, space, nil); got != c.want {
			t.Errorf("%s (bubble %s): pays %v, want %v", c.name, c.bubble, got, c.want)
		}
	}
	// End to end: Llama 3 8B on 64 GPUs with 512-token sequences (8,192 of
	// them) gets no interleaved document; 4,096-token ones (1,024) do.
	for _, c := range []struct {
		seq  string
		want bool
	}{{"512", false}, {"4096", true}} {
		stdout, stderr, err := runCLI(t, "plan", "--model", "llama3-8b", "--gpu", "h100-sxm", "--gpus", "64", "--tokens", "1T", "--seq", c.seq, "--print-sweep")
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		if got := strings.Contains(stdout, "schedule: interleaved"); got != c.want {
			t.Errorf("seq %s: interleaved documents %v, want %v", c.seq, got, c.want)
		}
	}
}

// TestPlanInterleavedDocuments: the interleaved documents plan writes for
// Llama 3 405B on 16,384 GPUs carry the schedule and virtual stages in
// their scenario, keep only tp 8 (the one tp whose 2,048-sequence batch
// gives micro-batches per pipeline a multiple of pp, as the interleaved
// schedule needs), and follow the --set pins: none with the schedule
// pinned to 1F1B, only v 4 with virtual_stages pinned to 4.
func TestPlanInterleavedDocuments(t *testing.T) {
	docs := func(extra ...string) []string {
		t.Helper()
		stdout, stderr, err := runCLI(t, planPinned405B("16384", append([]string{"--print-sweep"}, extra...)...)...)
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		return strings.Split(stdout, "\n---\n")
	}
	free := docs()
	if len(free) != 13 {
		t.Fatalf("%d documents, want 13 (4 of 1F1B, 9 interleaved)", len(free))
	}
	interleaved := 0
	for _, d := range free {
		if !strings.Contains(d, "schedule: interleaved") {
			continue
		}
		interleaved++
		if !strings.Contains(d+"\n", "  parallel.tp: [8]\n") || !strings.Contains(d, "first_stage_layers:") {
			t.Errorf("an interleaved document of 405B should search tp 8 only, with end stages:\n%s", d)
		}
	}
	if !strings.Contains(free[len(free)-1], "name: plan-llama3-405b-h100-sxm-16384-pp16-v8\n") ||
		!strings.Contains(free[len(free)-1], "pp: 16, zero: 1, schedule: interleaved, virtual_stages: 8, first_stage_layers: 7, last_stage_layers: 7}") {
		t.Errorf("the last document should be pp 16 with 8 virtual stages:\n%s", free[len(free)-1])
	}
	if interleaved != 9 {
		t.Errorf("%d interleaved documents, want 9 (v 2, 4, 8 at pp 4, 8, 16)", interleaved)
	}
	for _, d := range docs("--set", "parallel.schedule=1f1b") {
		if strings.Contains(d, "interleaved") || strings.Contains(d, "virtual_stages") {
			t.Errorf("schedule pinned to 1f1b, yet:\n%s", d)
		}
	}
	pinned := docs("--set", "parallel.virtual_stages=4")
	if len(pinned) != 3 {
		t.Errorf("virtual_stages pinned to 4: %d documents, want 3 (pp 4, 8, 16)", len(pinned))
	}
	for _, d := range pinned {
		if !strings.Contains(d, "schedule: interleaved, virtual_stages: 4") || !strings.Contains(d, "-v4\n") {
			t.Errorf("virtual_stages pinned to 4, yet:\n%s", d)
		}
	}
}

// TestPlanLayoutName: the layout plan prints names the virtual stages of
// the interleaved schedule after pp, and nothing for 1F1B.
func TestPlanLayoutName(t *testing.T) {
	for _, c := range []struct {
		schedule string
		virtual  int64
		want     string
	}{
		{"1f1b", 1, "tp8 pp16 dp128 sp mb1 zero1 none"},
		{"interleaved", 8, "tp8 pp16 v8 dp128 sp mb1 zero1 none"},
		{"interleaved", 1, "tp8 pp16 v1 dp128 sp mb1 zero1 none"},
	} {
		var r planRow
		r.TP, r.PP, r.DP, r.SP, r.MicroBatch, r.Zero, r.Recompute = 8, 16, 128, true, 1, 1, "none"
		r.Schedule, r.VirtualStages = c.schedule, c.virtual
		if got := r.layout(); got != c.want {
			t.Errorf("%s v%d: %q, want %q", c.schedule, c.virtual, got, c.want)
		}
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
	planOutputHas(t, planPinned405B("131072"),
		"global batch 16,384:",
		"global batch raised from 1,024 to 16,384 sequences (67.11M tokens) so that tp8 × pp16 × dp1024 has 16 micro-batches per pipeline; pass --global-batch to choose",
		"fastest layout that fits")
	stdout, _, err := runCLI(t, planPinned405B("131072", "--print-sweep")...)
	if err != nil || !strings.Contains(stdout, "network: {pod_gpus: 1024}") {
		t.Errorf("the sweep at 131,072 GPUs should build its network from 1,024-GPU pods (%v):\n%s", err, stdout)
	}
}

// TestPlanCountsFailedApart: points the work budget refuses are not
// "combinations that are not valid layouts" (which plan counted them as):
// plan says how many were not simulated, that a better layout may be among
// them, and the first with its error; the JSON carries the count; the
// invalid count is the one without the budget.
func TestPlanCountsFailedApart(t *testing.T) {
	base := []string{"plan", "--model", "llama3-8b", "--gpu", "h100-sxm", "--gpus", "16", "--tokens", "1T", "--quiet", "--format", "json"}
	plan := func(extra ...string) map[string]any {
		stdout, stderr, err := runCLI(t, append(append([]string{}, base...), extra...)...)
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	notProposed := func(got map[string]any) string {
		var b strings.Builder
		for _, e := range got["not_proposed"].([]any) {
			b.WriteString(e.(string) + "\n")
		}
		return b.String()
	}
	all, tight := plan(), plan("--max-tasks", "2e4")
	if all["failed"] != 0.0 || strings.Contains(notProposed(all), "not simulated") {
		t.Errorf("within the budget: failed %v\n%s", all["failed"], notProposed(all))
	}
	failed, _ := tight["failed"].(float64)
	// (simulated or ruled out by the cutoff: which of them a point is
	// depends on the points before it, the failed ones among them)
	evaluated := func(got map[string]any) float64 { return got["simulated"].(float64) + got["ruled_out"].(float64) }
	if failed < 100 || evaluated(all)-evaluated(tight) != failed {
		t.Errorf("--max-tasks 2e4: %v failed, simulated or ruled out %v against %v", tight["failed"], evaluated(tight), evaluated(all))
	}
	n := notProposed(tight)
	if want := fmt.Sprintf("%d layouts were not simulated, so a better one may be among them; the first, h100-sxm tp", int(failed)); !strings.Contains(n, want) ||
		!strings.Contains(n, "more than --max-tasks") {
		t.Errorf("not proposed lacks %q and the budget's error:\n%s", want, n)
	}
	invalid := func(s string) string {
		for _, l := range strings.Split(s, "\n") {
			if strings.Contains(l, "not valid layouts") {
				return l
			}
		}
		return ""
	}
	if a, b := invalid(notProposed(all)), invalid(notProposed(tight)); a == "" || a != b {
		t.Errorf("invalid combinations: %q within the budget, %q over it", a, b)
	}
}

// TestPlanCutoffKeepsTheAnswer: the cutoff plan rules points out by
// (planCutoff: not played to the end once slower than the best --top found
// before them) changes nothing of the answer: the proposals, their figures
// and why, and what was not proposed (the counts over --days and
// --budget-usd included) are those of the plan that plays every point
// (--out keeps every row, so it cuts nothing); and the counts do not depend
// on the workers. With limits a point cut may be over them, which the
// count of those says ("and perhaps some of the N not played to the
// end"); the count itself is of the layouts played. At flow fidelity
// (every rank played, the sample in two phases, the second's ruled-out
// points observed at their bounds: planPhase.next) the same, by days and
// by cost; those cases play every point at flow fidelity for the answer
// to compare with (≈ 12 s of CPU each), so -short leaves them out.
func TestPlanCutoffKeepsTheAnswer(t *testing.T) {
	cases := [][]string{
		{"--model", "llama3-8b", "--gpus", "16", "--tokens", "1T"},
		{"--model", "llama3-8b", "--gpus", "16", "--tokens", "1T", "--by", "cost", "--top", "3"},
		// limits that bind: the best takes 12.1 days and $13,852
		{"--model", "mixtral-8x7b", "--gpus", "16", "--tokens", "100B", "--days", "13", "--budget-usd", "14500", "--top", "2"},
	}
	if !testing.Short() {
		cases = append(cases,
			[]string{"--model", "gpt3-125m", "--gpus", "8", "--tokens", "1T", "--set", "sim.fidelity=flow", "--top", "2"},
			[]string{"--model", "gpt3-125m", "--gpus", "8", "--tokens", "1T", "--set", "sim.fidelity=flow", "--by", "cost", "--top", "3"})
	}
	for _, c := range cases {
		plan := func(extra ...string) (map[string]any, string) {
			args := append(append([]string{"plan", "--gpu", "h100-sxm", "--quiet", "--format", "json"}, c...), extra...)
			stdout, stderr, err := runCLI(t, args...)
			if err != nil {
				t.Fatalf("%v: %v\n%s", c, err, stderr)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(stdout), &got); err != nil {
				t.Fatal(err)
			}
			return got, stdout
		}
		cut, cutJSON := plan()
		_, oneJSON := plan("--workers", "1")
		whole, _ := plan("--out", t.TempDir())
		if cutJSON != oneJSON {
			t.Errorf("%v: on one worker the answer differs:\n%s\n%s", c, cutJSON, oneJSON)
		}
		ruled := cut["ruled_out"].(float64)
		if ruled == 0 || whole["ruled_out"].(float64) != 0 || cut["simulated"].(float64)+ruled != whole["simulated"].(float64) {
			t.Errorf("%v: %v simulated and %v ruled out with the cutoff, %v and %v without", c, cut["simulated"], ruled, whole["simulated"], whole["ruled_out"])
		}
		for _, k := range []string{"simulated", "ruled_out"} {
			delete(cut, k)
			delete(whole, k)
		}
		for _, p := range whole["proposals"].([]any) {
			delete(p.(map[string]any), "run_id") // (the same either way; kept out only to print less)
		}
		for _, p := range cut["proposals"].([]any) {
			delete(p.(map[string]any), "run_id")
		}
		if !reflect.DeepEqual(cut, whole) {
			a, _ := json.MarshalIndent(cut, "", " ")
			b, _ := json.MarshalIndent(whole, "", " ")
			t.Errorf("%v: the cutoff changed the answer:\n%s\nagainst\n%s", c, a, b)
		}
	}
}

// TestRankPlanOverLimitsWithCut: the line that counts the layouts over
// --budget-usd counts those played, and where points were not played to
// the end says that some of them may be over too; its best layout is a
// played one (one not played to the end is never better than the
// proposals).
func TestRankPlanOverLimitsWithCut(t *testing.T) {
	row := func(name, gpu string, step, usd float64) output.SummaryRow {
		return output.SummaryRow{Name: name, GPU: gpu, StepTimeS: step, CostUSDPerStep: usd, Fits: true, GlobalBatch: 1, SeqLen: 1, TP: 1, PP: 1, DP: 8, MicroBatch: 1, Zero: 1}
	}
	rows := []output.SummaryRow{row("a", "b200", 1, 100), row("b", "h100-sxm", 2, 10)}
	o := planOptions{by: "days", top: 1, budgetUSD: 50}
	for _, c := range []struct {
		ruled int
		want  string
	}{
		{0, "1 layouts exceed $50.0; the best of them, b200 tp1 pp1 dp8 mb1 zero1"},
		{3, "1 layouts exceed $50.0 (and perhaps some of the 3 not played to the end); the best of them, b200 tp1 pp1 dp8 mb1 zero1"},
	} {
		res := rankPlan(rows, map[string]bool{}, c.ruled, 1, o)
		if len(res.proposals) != 1 || res.proposals[0].Name != "b" || res.points != 2+c.ruled || len(res.excluded) == 0 || !strings.HasPrefix(res.excluded[0], c.want) {
			t.Errorf("%d not played: proposals %d, points %d, not proposed %q, want %q", c.ruled, len(res.proposals), res.points, res.excluded, c.want)
		}
	}
}

// TestBoundFigureInvertsCutoff: a point ruled out at the cutoff's step is
// observed (boundFigure) at the figure of the proposal the cutoff came
// from, by days and by cost, whatever its batch, sequence, GPUs and price:
// the guide then places it with the layouts no better than that one.
func TestBoundFigureInvertsCutoff(t *testing.T) {
	s, err := scenario.Load("../../scenarios/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	row := output.SummaryRow{Name: "a", GPU: "b200", StepTimeS: 2.5, CostUSDPerStep: 40, Fits: true, GlobalBatch: 64, SeqLen: 2048, TP: 1, PP: 1, DP: 8, MicroBatch: 1, Zero: 1}
	const tokens = 1e12
	for _, by := range []string{"days", "cost"} {
		o := planOptions{by: by, top: 1}
		tally := planTally{rows: []output.SummaryRow{row}, failed: map[string]bool{}}
		cutoff := planCutoff(&tally, tokens, o)
		if cutoff == nil {
			t.Fatalf("%s: no cutoff from one proposal", by)
		}
		want := planFigure(row, tokens, o) * (1 + 1e-9) // planCutoff's margin
		if got := boundFigure(s, cutoff(s), tokens, o); math.Abs(got-want) > 1e-9*want {
			t.Errorf("by %s: bound figure %v, want %v", by, got, want)
		}
	}
	if f := boundFigure(s, 0, tokens, planOptions{by: "days"}); f != 0 {
		t.Errorf("no bound: figure %v, want 0 (not observed)", f)
	}
}
