package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/output"
)

const goodputSweep = `name: gp
scenario:
  name: gp-base
  model:
    preset: llama3-8b
  training:
    seq_len: 4096
    global_batch: 64
  cluster:
    gpu: h100-sxm
    nodes: 2
  parallel:
    tp: 8
  goodput:
    failures_per_hour: {gpu: 0.01}
sweep:
  goodput.checkpoint.format: [sharded, full]
  parallel.zero: [1, 3]
`

// runSweepDoc writes the sweep file doc and sweeps it (extra flags after
// --out), returning the output directory.
func runSweepDoc(t *testing.T, doc string, extra ...string) string {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "sweep.yaml")
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if _, stderr, err := runCLI(t, append([]string{"sweep", file, "--out", out, "--quiet"}, extra...)...); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	return out
}

// A sweep whose points have a goodput block writes goodput-summary.arrow
// beside summary.arrow, and best joins it: a full (one-node) checkpoint
// costs effective training time that the step time does not show.
func TestSweepGoodputSummaryAndBest(t *testing.T) {
	out := runSweepDoc(t, goodputSweep)
	var sum []output.SummaryRow
	if _, err := output.ReadTable(filepath.Join(out, "summary.arrow"), &sum); err != nil {
		t.Fatal(err)
	}
	var gp []output.GoodputSummaryRow
	if _, err := output.ReadTable(filepath.Join(out, "goodput-summary.arrow"), &gp); err != nil {
		t.Fatal(err)
	}
	if len(gp) != len(sum) || len(gp) != 4 {
		t.Fatalf("%d goodput rows for %d summary rows, want 4", len(gp), len(sum))
	}
	ettr := map[string]float64{}
	for i, g := range gp {
		if g.RunID != sum[i].RunID || !(g.EffectiveTrainingFraction > 0 && g.EffectiveTrainingFraction < 1) {
			t.Fatalf("row %d: %+v vs %s", i, g, sum[i].RunID)
		}
		ettr[g.Name] = g.EffectiveTrainingFraction
		if g.GoodputTokensPerS != sum[i].TokensPerS*g.EffectiveTrainingFraction {
			t.Errorf("%s: goodput %v, want tokens/s × fraction", g.Name, g.GoodputTokensPerS)
		}
	}
	// points 0-1 are sharded, 2-3 full (the first field varies slowest)
	if !(ettr["gp-2"] < ettr["gp-0"] && ettr["gp-3"] < ettr["gp-1"]) {
		t.Errorf("full checkpoints should cost effective time: %v", ettr)
	}
	stdout, stderr, err := runCLI(t, "best", out, "--by", "goodput", "--tokens", "1T", "--no-svg", "--format", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var b struct {
		Top []map[string]any `json:"top"`
	}
	if err := json.Unmarshal([]byte(stdout), &b); err != nil || len(b.Top) != 4 {
		t.Fatalf("%v: %s", err, stdout)
	}
	for i, r := range b.Top {
		if _, ok := r["effective_training_fraction"]; !ok {
			t.Fatalf("top %d lacks effective_training_fraction", i)
		}
		if i > 0 && r["goodput_tokens_per_s"].(float64) > b.Top[i-1]["goodput_tokens_per_s"].(float64) {
			t.Errorf("--by goodput is not in goodput order at %d", i)
		}
	}
}

// A layout that is fast but loses more time to failures and checkpoints
// ranks below a slower one by goodput and by time to train.
func TestBestGoodputRanking(t *testing.T) {
	fast := rankedRow{SummaryRow: output.SummaryRow{Name: "fast", TokensPerS: 100},
		Goodput: &output.GoodputSummaryRow{EffectiveTrainingFraction: 0.8, GoodputTokensPerS: 80}}
	steady := rankedRow{SummaryRow: output.SummaryRow{Name: "steady", TokensPerS: 95},
		Goodput: &output.GoodputSummaryRow{EffectiveTrainingFraction: 0.95, GoodputTokensPerS: 90.25}}
	for by, want := range map[string]string{"tokens_per_s": "fast", "goodput": "steady", "time_to_train": "steady"} {
		rows := []rankedRow{fast, steady}
		rankRows(rows, by)
		if rows[0].Name != want {
			t.Errorf("--by %s ranks %s first, want %s", by, rows[0].Name, want)
		}
	}
}

func TestBestGoodputNeedsTheSideFile(t *testing.T) {
	out := t.TempDir()
	if _, _, err := runCLI(t, "sweep", "../../scenarios/sweeps/llama3-8b-gpu-types.yaml", "--out", out, "--quiet", "--shard", "0/40"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "goodput-summary.shard-0-of-40.arrow")); !os.IsNotExist(err) {
		t.Errorf("a sweep without goodput blocks wrote a goodput summary (%v)", err)
	}
	_, _, err := runCLI(t, "best", out, "--by", "goodput", "--no-svg")
	if err == nil || !strings.Contains(err.Error(), "--by goodput: no goodput-summary.arrow") {
		t.Errorf("got %v", err)
	}
}

// merge joins the shards' goodput-summary files as it joins their
// summaries: the merged directory's goodput rows are the unsharded sweep's,
// and best --by goodput reads it.
func TestMergeJoinsGoodputSummary(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "sweep.yaml")
	if err := os.WriteFile(file, []byte(goodputSweep), 0o644); err != nil {
		t.Fatal(err)
	}
	whole, shards, merged := filepath.Join(dir, "whole"), filepath.Join(dir, "shards"), filepath.Join(dir, "merged")
	if _, stderr, err := runCLI(t, "sweep", file, "--out", whole, "--quiet"); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, sh := range []string{"0/2", "1/2"} {
		if _, stderr, err := runCLI(t, "sweep", file, "--out", shards, "--shard", sh, "--quiet"); err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
	}
	stdout, stderr, err := runCLI(t, "merge", shards, "--out", merged, "--format", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, `"goodput_rows":4`) {
		t.Errorf("merge reported %s, want 4 goodput rows", stdout)
	}
	read := func(d string) []output.GoodputSummaryRow {
		var rows []output.GoodputSummaryRow
		if _, err := output.ReadTable(filepath.Join(d, "goodput-summary.arrow"), &rows); err != nil {
			t.Fatal(err)
		}
		return rows
	}
	want, got := read(whole), read(merged)
	if len(got) != len(want) {
		t.Fatalf("%d merged goodput rows, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if _, stderr, err := runCLI(t, "best", merged, "--by", "goodput", "--tokens", "1T", "--no-svg"); err != nil {
		t.Errorf("best on the merged directory: %v\n%s", err, stderr)
	}
}

// A sweep varies one failure class's rate (goodput.failures_per_hour.gpu),
// keeping the base's other overrides: more GPU failures, less effective
// training time.
func TestSweepVariesAFailureRate(t *testing.T) {
	doc := strings.Replace(goodputSweep, "    failures_per_hour: {gpu: 0.01}", "    failures_per_hour: {host: 0.001}", 1)
	doc = strings.Replace(doc, "  goodput.checkpoint.format: [sharded, full]\n  parallel.zero: [1, 3]", "  goodput.failures_per_hour.gpu: [0.0001, 0.001, 0.01]", 1)
	out := runSweepDoc(t, doc)
	var gp []output.GoodputSummaryRow
	if _, err := output.ReadTable(filepath.Join(out, "goodput-summary.arrow"), &gp); err != nil {
		t.Fatal(err)
	}
	if len(gp) != 3 {
		t.Fatalf("%d goodput rows, want 3", len(gp))
	}
	// The other classes keep the set's rates; the gpu class adds 16 GPUs ×
	// its rate × 24 h a day.
	for i, r := range []float64{0.0001, 0.001, 0.01} {
		if want := gp[0].FailuresPerDay + 16*(r-0.0001)*24; math.Abs(gp[i].FailuresPerDay-want) > 1e-9 {
			t.Errorf("%s: %.6g failures a day, want %.6g", gp[i].Name, gp[i].FailuresPerDay, want)
		}
		if i > 0 && gp[i].EffectiveTrainingFraction >= gp[i-1].EffectiveTrainingFraction {
			t.Errorf("%s: fraction %.6g not below %.6g", gp[i].Name, gp[i].EffectiveTrainingFraction, gp[i-1].EffectiveTrainingFraction)
		}
	}
}
