package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/output"
)

// goodputKeys are the JSON keys issue 20 names for simtrain goodput.
var goodputKeys = []string{"interruptions", "planned_interruptions", "effective_training_fraction",
	"checkpoint_interval_s", "checkpoint_write_s", "time_to_train_days", "cost_usd",
	"time_to_train_days_p10", "time_to_train_days_p50", "time_to_train_days_p90"}

func TestGoodputJSONAndArrow(t *testing.T) {
	dir := t.TempDir()
	out, stderr, err := runCLI(t, "goodput", "../../scenarios/llama3-70b-1024-h100-3d.yaml", "--tokens", "2T",
		"--trials", "40", "--seed", "5", "--out", dir, "--format", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	for _, k := range goodputKeys {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if f := m["effective_training_fraction"].(float64); !(f > 0.5 && f < 1) {
		t.Errorf("effective training fraction %v", f)
	}
	if p10, p90 := m["time_to_train_days_p10"].(float64), m["time_to_train_days_p90"].(float64); !(p10 <= p90) {
		t.Errorf("p10 %v > p90 %v", p10, p90)
	}
	var rows []output.GoodputRow
	meta, err := output.ReadTable(filepath.Join(dir, "llama3-70b-1024-h100-3d", "goodput.arrow"), &rows)
	if err != nil {
		t.Fatal(err)
	}
	if meta["seed"] != "5" || meta["trials"] != "40" || meta["run_id"] != m["run_id"] {
		t.Errorf("metadata %v", meta)
	}
	unplanned := 0
	for _, r := range rows {
		switch {
		case r.Kind == "unplanned":
			unplanned++
		case r.Kind != "planned" || r.Cause != "maintenance":
			t.Fatalf("row %+v", r)
		}
		if r.Trial < 0 || r.Trial >= 40 || r.AtNs < 0 || r.LostWorkNs < 0 || r.RestartNs <= 0 {
			t.Fatalf("row %+v", r)
		}
	}
	if got, want := float64(unplanned)/40, m["interruptions_mc"].(float64); got != want || unplanned == 0 {
		t.Errorf("goodput.arrow holds %v unplanned interruptions per trial, the summary %v", got, want)
	}
}

// The same seed gives the same bytes; the window counts fewer
// interruptions than the whole run.
func TestGoodputDeterministicAndWindow(t *testing.T) {
	var outs [2]string
	var files [2][]byte
	for i := range outs {
		dir := t.TempDir()
		out, _, err := runCLI(t, "goodput", "../../scenarios/llama3-70b-1024-h100-3d.yaml", "--tokens", "2T",
			"--trials", "10", "--out", dir, "--format", "json", "--days", "10")
		if err != nil {
			t.Fatal(err)
		}
		outs[i] = out
		if files[i], err = os.ReadFile(filepath.Join(dir, "llama3-70b-1024-h100-3d", "goodput.arrow")); err != nil {
			t.Fatal(err)
		}
	}
	if outs[0] != outs[1] || string(files[0]) != string(files[1]) {
		t.Fatal("two runs with the same seed differ")
	}
	var m map[string]any
	_ = json.Unmarshal([]byte(outs[0]), &m)
	if m["window_days"].(float64) != 10 {
		t.Errorf("window_days %v, want 10", m["window_days"])
	}
	perDay := m["failures_per_day"].(float64)
	if got := m["interruptions"].(float64); got != perDay*10 {
		t.Errorf("interruptions in 10 days %v, want %v", got, perDay*10)
	}
}

func TestGoodputErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	base, err := os.ReadFile("../../scenarios/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, append(base, []byte("goodput:\n  checkpoint:\n    format: zip\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"goodput", "../../scenarios/quickstart.yaml"}, "--tokens: required"},
		{[]string{"goodput", "../../scenarios/quickstart.yaml", "--tokens", "lots"}, "--tokens: \"lots\" is not a positive count"},
		{[]string{"goodput", "../../scenarios/quickstart.yaml", "--tokens", "1T", "--format", "xml"}, "--format: unknown value \"xml\" (valid: table, json)"},
		{[]string{"goodput", "../../scenarios/quickstart.yaml", "--tokens", "1T", "--days", "-3"}, "--days: \"-3\" is not a positive number of days"},
		{[]string{"goodput", "../../scenarios/quickstart.yaml", "--tokens", "1T", "--trials", "-1"}, "--trials: must be between 0 and 1000000"},
		{[]string{"goodput", "../../scenarios/quickstart.yaml", "--tokens", "1T", "--fidelity", "exact"}, "--fidelity"},
		{[]string{"goodput"}, "goodput: give one scenario file"},
		{[]string{"goodput", bad, "--tokens", "1T"}, "goodput.checkpoint.format: unknown value \"zip\" (valid: sharded, full)"},
	} {
		_, _, err := runCLI(t, append(tc.args, "--out", t.TempDir())...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: got %v, want a one-line error containing %q", tc.args, err, tc.want)
		}
	}
}

// TestGoldenGoodput pins simtrain goodput's JSON and goodput.arrow on the
// 70B scenario (regenerate with -update, see golden_outputs_test.go).
func TestGoldenGoodput(t *testing.T) {
	dir := t.TempDir()
	out, stderr, err := runCLI(t, "goodput", "../../scenarios/llama3-70b-1024-h100-3d.yaml", "--tokens", "2T",
		"--trials", "20", "--seed", "3", "--days", "30", "--out", dir, "--format", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	data, err := os.ReadFile(filepath.Join(dir, "llama3-70b-1024-h100-3d", "goodput.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	goldenCompare(t, "goodput-llama3-70b.txt", fmt.Sprintf("%s\n  goodput.arrow %x bytes=%d\n",
		withoutWallTime(t, strings.TrimSpace(out)), sha256.Sum256(data), len(data)))
}
