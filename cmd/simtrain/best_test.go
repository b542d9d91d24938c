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

// bestRows are hand-made summary rows; every row has 512 × 2048 = 1,048,576
// tokens per step, so tokens/s = 1,048,576 / step time.
func bestRows() []output.SummaryRow {
	row := func(name string, gpus int64, step, cost float64, fits bool) output.SummaryRow {
		r := output.SummaryRow{Name: name, RunID: "id-" + name, GPU: "h100-sxm", NumGPUs: gpus, GlobalBatch: 512, SeqLen: 2048,
			TP: 8, PP: gpus / 8, DP: 1, CP: 1, EP: 1, MicroBatch: 1, VirtualStages: 1, Recompute: "none",
			StepTimeS: step, CostUSDPerStep: cost, EnergyKWhPerStep: cost / 10, Fits: fits, PeakMemBytes: 50e9}
		if step > 0 {
			r.TokensPerS = 1048576 / step
		}
		return r
	}
	bad := row("s-5", 8, 0, 0, true)
	bad.Error = "parallel.tp: 3 does not divide model.heads 64"
	return []output.SummaryRow{
		row("s-0", 8, 10, 1.0, true),
		row("s-1", 16, 6, 1.2, true),
		row("s-2", 16, 5, 1.1, false), // does not fit: out under the default constraint
		row("s-3", 32, 6, 2.4, true),  // beaten by s-1 on both axes
		row("s-4", 32, 2.5, 1.0, true),
		bad,
		row("s-6", 8, 0, 0, false), // pruned: never simulated
	}
}

func bestJSONOut(t *testing.T, dir string, args ...string) map[string]any {
	t.Helper()
	out, _, err := runCLI(t, append([]string{"best", dir, "--format", "json", "--no-svg"}, args...)...)
	if err != nil {
		t.Fatalf("best %v: %v", args, err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return m
}

func names(m map[string]any, key string) string {
	var out []string
	list, _ := m[key].([]any)
	for _, x := range list {
		out = append(out, x.(map[string]any)["name"].(string))
	}
	return strings.Join(out, " ")
}

// TestBestRankingAndPareto checks the rankings and fronts against the rows
// above, worked by hand:
//   - by tokens/s (fits): s-4 (2.5 s), s-1 and s-3 (6 s, tie → name), s-0;
//   - by cost per token: s-0 and s-4 cost 1.0 per step (tie → faster s-4
//     first), then s-1 (1.2), s-3 (2.4);
//   - Pareto, step time against GPUs: s-0 (8, 10 s), s-1 (16, 6 s), s-4
//     (32, 2.5 s); s-3 (32, 6 s) is beaten by s-1;
//   - Pareto against cost per step: s-0 and s-4 both cost 1.0, s-4 is
//     faster, and nothing cheaper exists: only s-4.
func TestBestRankingAndPareto(t *testing.T) {
	dir := t.TempDir()
	if err := output.WriteTable(filepath.Join(dir, "summary.arrow"), bestRows(), nil); err != nil {
		t.Fatal(err)
	}
	m := bestJSONOut(t, dir)
	if got := names(m, "top"); got != "s-4 s-1 s-3 s-0" {
		t.Errorf("top by tokens/s: %s", got)
	}
	if got := names(m, "pareto"); got != "s-0 s-1 s-4" {
		t.Errorf("pareto against GPUs: %s", got)
	}
	m = bestJSONOut(t, dir, "--by", "cost_per_token", "--pareto", "cost", "--top", "3")
	if got := names(m, "top"); got != "s-4 s-0 s-1" {
		t.Errorf("top 3 by cost per token: %s", got)
	}
	if got := names(m, "pareto"); got != "s-4" {
		t.Errorf("pareto against cost: %s", got)
	}
	m = bestJSONOut(t, dir, "--constraint", "num_gpus<=16", "--constraint", "fits")
	if got := names(m, "top"); got != "s-1 s-0" {
		t.Errorf("num_gpus<=16: %s", got)
	}
	m = bestJSONOut(t, dir, "--constraint", "!fits")
	if got := names(m, "top"); got != "s-2" {
		t.Errorf("!fits: %s", got)
	}
	// 15T tokens at 1,048,576 per step is 1.4305e7 steps; s-4 takes 2.5 s,
	// costs 1.0 USD and 0.1 kWh per step.
	m = bestJSONOut(t, dir, "--by", "time_to_train", "--tokens", "15T", "--top", "1")
	first := m["top"].([]any)[0].(map[string]any)
	steps := 15e12 / 1048576
	for k, want := range map[string]float64{"train_s": steps * 2.5, "train_usd": steps, "train_kwh": steps * 0.1, "cost_usd_per_token": 1.0 / 1048576} {
		if got := first[k].(float64); math.Abs(got-want) > 1e-9*want {
			t.Errorf("%s = %g, want %g", k, got, want)
		}
	}
	// The table and the SVG.
	out, _, err := runCLI(t, "best", dir, "--tokens", "15T")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "4 of 7 rows satisfy fits (5 simulated); top 4 by tokens_per_s:") || !strings.Contains(out, "Pareto front, step time against GPUs (3 layouts):") ||
		!strings.Contains(out, "train_days") || !strings.Contains(out, "wrote "+filepath.Join(dir, "pareto.svg")) {
		t.Errorf("table:\n%s", out)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "pareto.svg"))
	if err != nil || !strings.HasPrefix(string(svg), "<?xml") || !strings.Contains(string(svg), "Pareto front (3)") {
		t.Errorf("svg: %v %.80q", err, svg)
	}
	// The SVG is deterministic.
	if _, _, err := runCLI(t, "best", dir, "--svg", filepath.Join(dir, "again.svg")); err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(filepath.Join(dir, "again.svg"))
	if string(again) != string(svg) {
		t.Error("two SVGs of the same rows differ")
	}
}

func TestBestBadInput(t *testing.T) {
	dir := t.TempDir()
	if err := output.WriteTable(filepath.Join(dir, "summary.arrow"), bestRows(), nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--by", "speed"}, `--by: unknown value "speed" (valid: tokens_per_s, cost_per_token, time_to_train, goodput)`},
		{[]string{"--by", "time_to_train"}, "--by time_to_train: needs --tokens N"},
		{[]string{"--tokens", "lots"}, `--tokens: "lots" is not a positive count`},
		{[]string{"--constraint", "fit"}, `--constraint "fit": unknown column "fit"; did you mean "fits"?`},
		{[]string{"--constraint", "tp"}, `--constraint "tp": tp is not a true/false column`},
		{[]string{"--constraint", "gpu<h100"}, "gpu is a text column; use == or !="},
		{[]string{"--constraint", "tp<=eight"}, `"eight" is not a number`},
		{[]string{"--pareto", "watts"}, `--pareto: unknown value "watts"`},
		{[]string{"--top", "0"}, "--top: must be >= 1"},
	} {
		_, _, err := runCLI(t, append([]string{"best", dir}, tc.args...)...)
		var ue *usageError
		if err == nil || !asUsage(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	_, _, err := runCLI(t, "best", dir, "--constraint", "num_gpus>1000")
	if err == nil || !strings.Contains(err.Error(), "no row satisfies num_gpus>1000 (7 rows, 5 simulated)") {
		t.Errorf("nothing left: %v", err)
	}
}

func TestParseConstraint(t *testing.T) {
	r := bestRows()[1] // s-1: 16 GPUs, 6 s, fits, gpu h100-sxm
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"fits", true}, {"!fits", false}, {" fits ", true}, {"fits==false", false}, {"fits != false", true},
		{"num_gpus==16", true}, {"num_gpus=16", true}, {"num_gpus!=16", false}, {"num_gpus<16", false}, {"num_gpus<=16", true},
		{"num_gpus>8", true}, {"num_gpus >= 17", false}, {"step_time_s<6.5", true}, {"peak_mem_bytes<40e9", false},
		{"gpu==h100-sxm", true}, {"gpu == 'h100-sxm'", true}, {"gpu!=h100-sxm", false},
	} {
		c, err := parseConstraint(tc.text)
		if err != nil {
			t.Errorf("%q: %v", tc.text, err)
			continue
		}
		if got := c.holds(r); got != tc.want {
			t.Errorf("%q on s-1: %v, want %v", tc.text, got, tc.want)
		}
	}
}

func TestParseCount(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
	}{{"15T", 15e12}, {"300B", 300e9}, {"2G", 2e9}, {"1.5m", 1.5e6}, {"2e12", 2e12}, {"1000", 1000}, {"4k", 4000}, {"1P", 1e15}} {
		got, err := parseCount(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("%q: %g %v, want %g", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "T", "-5", "0", "abc", "1e999"} {
		if _, err := parseCount(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// An unknown column gets one bounded line naming the valid choices, however
// many columns the summary has.
func TestParseConstraintUnknownColumn(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"step_tme_s<1", `did you mean "step_time_s"?`},
		{"exposed_qqqqqqqq>0", `columns starting with "exposed": exposed_cp_s,`},
		{"qqqqqqqqqqqqqqqqq>1", "valid columns: the "},
		{strings.Repeat("\xa5", 40) + "0>1", "valid columns: the "},
	} {
		_, err := parseConstraint(tc.text)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.text, err, tc.want)
			continue
		}
		if msg := err.Error(); len(msg) > 600 || strings.Contains(msg, "\n") {
			t.Errorf("%q: error of %d bytes: %s", tc.text, len(msg), msg)
		}
	}
}
