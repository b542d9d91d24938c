package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/output"
)

// runMain runs a command line as main does and returns its stdout, stderr
// and exit status.
func runMain(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := execute(context.Background(), newRootCmdFor(args), args, &out, &errb)
	return out.String(), errb.String(), code
}

// writeScenario writes a scenario file: quickstart.yaml with the given
// replacements applied (old, new pairs).
func writeScenario(t *testing.T, dir, file string, repl ...string) string {
	t.Helper()
	src, err := os.ReadFile("../../scenarios/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	for i := 0; i+1 < len(repl); i += 2 {
		if !strings.Contains(s, repl[i]) {
			t.Fatalf("quickstart.yaml has no %q", repl[i])
		}
		s = strings.Replace(s, repl[i], repl[i+1], 1)
	}
	path := filepath.Join(dir, file)
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestExitStatusEveryCommand holds every command to one convention: 0
// success, 1 the simulation or comparison failed, 2 bad input with a
// one-line error, for each command in turn.
func TestExitStatusEveryCommand(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	quick := "../../scenarios/quickstart.yaml"
	invalid := writeScenario(t, dir, "invalid.yaml", "zero: 3", "zero: 3\n  tp: 3")
	dotdot := writeScenario(t, dir, "dotdot.yaml", "name: quickstart-llama3-8b-fsdp", `name: ".."`)
	summaries := filepath.Join(dir, "sweep")
	if err := os.MkdirAll(summaries, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := output.WriteTable(filepath.Join(summaries, "summary.arrow"), bestRows(), nil); err != nil {
		t.Fatal(err)
	}
	sweep := writeSweep(t, `name: tiny
scenario:
  name: base
  model: {preset: llama3-8b}
  training: {seq_len: 4096, global_batch: 16}
  cluster: {gpu: h100-sxm, nodes: 1}
sweep:
  parallel.zero: [1, 3]
`)
	validation := filepath.Join(dir, "validation.yaml")
	writeScenario(t, dir, "validation.yaml", "parallel:", "expect: {step_time_s: 1.0, source: test}\nparallel:")

	cases := []struct {
		name string
		args []string
		want int
	}{
		{"run ok", []string{"run", quick, "--out", out, "--no-timeline"}, exitOK},
		{"run invalid scenario", []string{"run", invalid, "--out", out}, exitBadInput},
		{"run missing file", []string{"run", filepath.Join(dir, "missing.yaml"), "--out", out}, exitBadInput},
		{"run name ..", []string{"run", dotdot, "--out", out}, exitBadInput},
		{"run /dev/zero", []string{"run", "/dev/zero", "--out", out}, exitBadInput},
		{"run bad flag value", []string{"run", quick, "--format", "xml"}, exitBadInput},
		{"run unknown flag", []string{"run", quick, "--no-such-flag"}, exitBadInput},
		{"run rank outside cluster", []string{"run", quick, "--out", out, "--timeline-ranks", "0-1073741823"}, exitBadInput},
		{"run over budget", []string{"run", quick, "--out", out, "--max-tasks", "100"}, exitBadInput},
		{"run bad budget flag", []string{"run", quick, "--max-memory", "lots"}, exitBadInput},
		{"goodput ok", []string{"goodput", quick, "--tokens", "1T", "--trials", "10", "--out", out}, exitOK},
		{"goodput invalid scenario", []string{"goodput", invalid, "--tokens", "1T"}, exitBadInput},
		{"goodput no --tokens", []string{"goodput", quick}, exitBadInput},
		{"goodput rows over budget", []string{"goodput", quick, "--tokens", "2.4e13", "--trials", "1000000", "--out", out}, exitBadInput},
		{"sweep ok", []string{"sweep", sweep, "--out", filepath.Join(dir, "s1"), "--quiet"}, exitOK},
		{"sweep too many workers", []string{"sweep", sweep, "--out", filepath.Join(dir, "s2"), "--workers", "100000"}, exitBadInput},
		{"sweep negative print-point", []string{"sweep", sweep, "--print-point", "-5"}, exitBadInput},
		{"sweep missing file", []string{"sweep", filepath.Join(dir, "missing.yaml")}, exitBadInput},
		{"merge ok", []string{"merge", summaries, "--out", filepath.Join(dir, "merged.arrow")}, exitOK},
		{"merge no --out", []string{"merge", summaries}, exitBadInput},
		{"merge missing dir", []string{"merge", filepath.Join(dir, "nothing"), "--out", filepath.Join(dir, "m.arrow")}, exitBadInput},
		{"best ok", []string{"best", summaries, "--no-svg"}, exitOK},
		{"best bad --by", []string{"best", summaries, "--by", "speed"}, exitBadInput},
		{"validate ok", []string{"validate", validation, "--out", filepath.Join(dir, "v1")}, exitOK},
		{"validate above --max-mape", []string{"validate", validation, "--out", filepath.Join(dir, "v2"), "--max-mape", "1e-9"}, exitFailed},
		{"validate invalid scenario", []string{"validate", invalid, "--out", filepath.Join(dir, "v3")}, exitBadInput},
		{"estimate ok", []string{"estimate", "train", "--params", "70e9", "--tokens", "15e12", "--gpu", "h100-sxm", "--gpus", "1024", "--mfu", "0.5"}, exitOK},
		{"estimate infinite result", []string{"estimate", "train", "--params", "1e300", "--tokens", "1e300", "--gpu", "h100-sxm", "--gpus", "1", "--mfu", "0.5"}, exitBadInput},
		{"estimate unknown sub-command", []string{"estimate", "everything"}, exitBadInput},
		{"collective ok", []string{"collective", "--gpu", "h100-sxm", "--nodes", "1", "--sizes", "1M"}, exitOK},
		{"collective flow over budget", []string{"collective", "--gpu", "h100-sxm", "--nodes", "2048", "--op", "all_to_all", "--sizes", "1M", "--fidelity", "flow"}, exitBadInput},
		{"collective bad size", []string{"collective", "--gpu", "h100-sxm", "--sizes", "lots"}, exitBadInput},
		{"topology ok", []string{"topology", "--gpu", "h100-sxm", "--nodes", "2"}, exitOK},
		{"topology bad gpu", []string{"topology", "--gpu", "z80"}, exitBadInput},
		{"report ok", []string{"report", filepath.Join(out, "quickstart-llama3-8b-fsdp")}, exitOK},
		{"report missing directory", []string{"report", filepath.Join(dir, "nothing")}, exitBadInput},
		{"list ok", []string{"list", "gpus"}, exitOK},
		{"list unknown kind", []string{"list", "toasters"}, exitBadInput},
		{"list gpus bad file", []string{"list", "gpus", invalid}, exitBadInput},
		{"plan ok", []string{"plan", "--model", "llama3-8b", "--gpu", "h100-sxm", "--gpus", "8", "--tokens", "1B", "--seq", "2048", "--global-batch", "16", "--set", "parallel.zero=3", "--set", "training.recompute=none", "--quiet"}, exitOK},
		{"plan unknown model", []string{"plan", "--model", "llama9", "--gpu", "h100-sxm", "--gpus", "8", "--tokens", "1B"}, exitBadInput},
		{"plan unknown gpu", []string{"plan", "--model", "llama3-8b", "--gpu", "z80", "--gpus", "8", "--tokens", "1B"}, exitBadInput},
		{"plan partial node", []string{"plan", "--model", "llama3-8b", "--gpu", "h100-sxm", "--gpus", "12", "--tokens", "1B"}, exitBadInput},
		{"plan bad --set", []string{"plan", "--model", "llama3-8b", "--gpu", "h100-sxm", "--gpus", "8", "--tokens", "1B", "--set", "parallel.tpp=2"}, exitBadInput},
		{"run bad --set value", []string{"run", quick, "--out", out, "--set", "parallel.tp=three"}, exitBadInput},
		{"sweep --set of a swept field", []string{"sweep", sweep, "--out", filepath.Join(dir, "sw-set"), "--set", "parallel.zero=2"}, exitBadInput},
		{"sweep --set ok", []string{"sweep", sweep, "--out", filepath.Join(dir, "sw-set-ok"), "--set", "parallel.tp=2", "--quiet"}, exitOK},
		{"version ok", []string{"version"}, exitOK},
		{"version extra argument", []string{"version", "now"}, exitBadInput},
		{"unknown command", []string{"simulate"}, exitBadInput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, code := runMain(t, c.args...)
			if code != c.want {
				t.Fatalf("%v: exit status %d, want %d; stderr %q", c.args, code, c.want, stderr)
			}
			if code == exitBadInput {
				if lines := strings.Count(stderr, "\n"); lines != 1 || !strings.HasPrefix(stderr, "simtrain: ") {
					t.Errorf("%v: want one error line, got %q", c.args, stderr)
				}
			}
		})
	}
}
