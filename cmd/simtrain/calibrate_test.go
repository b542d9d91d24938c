package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestValidateCrossValidation: the two tiny H100 rows (alpha +25%, beta
// −20%) have no A100 row and no stall, so every fold refits nothing and
// each held-out group is scored at the priors: the GEMM and attention
// fractions at 1 (the benchmark throughput, faster than the fitted 0.90)
// and the stalls at 0. alpha's error must drop below its +25%, beta's grow
// past its −20%; the summary carries mape and cv_mape, and --max-cv-mape
// bars the out-of-sample figure.
func TestValidateCrossValidation(t *testing.T) {
	dir := writeValidationDir(t)
	stdout, stderr, err := runCLI(t, "validate", dir, "--cv", "source", "--format", "json", "--out", t.TempDir())
	if err != nil {
		t.Fatalf("validate --cv: %v\n%s", err, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var sum map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatal(err)
	}
	if sum["cv"] != "source" || sum["mape"] == nil || sum["cv_mape"] == nil {
		t.Fatalf("summary lacks cv, mape or cv_mape: %v", sum)
	}
	src := sum["groups"].(map[string]any)["source"].(map[string]any)
	alpha, beta := src["alpha"].(map[string]any), src["beta"].(map[string]any)
	if a := alpha["cv_mape"].(float64); a >= 0.25 || a <= 0 {
		t.Errorf("alpha out-of-sample %g, want below its in-sample 0.25 (scored at faster priors)", a)
	}
	if b := beta["cv_mape"].(float64); b <= 0.20 {
		t.Errorf("beta out-of-sample %g, want above its in-sample 0.20", b)
	}
	refit := alpha["cv_refit"].(map[string]any)
	if refit["train_gemm"] != "1" || refit["moe_host_sync"] != "0ms" {
		t.Errorf("alpha refit %v, want the priors (train_gemm 1, moe_host_sync 0ms)", refit)
	}
	stdout, _, _ = runCLI(t, "validate", dir, "--cv", "source", "--out", t.TempDir())
	if !strings.Contains(stdout, "out-of-sample MAPE") || !strings.Contains(stdout, "leave-one-source-out") {
		t.Errorf("table lacks the cross-validation section:\n%s", stdout)
	}
	if _, _, err := runCLI(t, "validate", dir, "--cv", "source", "--max-cv-mape", "1", "--out", t.TempDir()); err == nil || !strings.Contains(err.Error(), "--max-cv-mape") {
		t.Errorf("--max-cv-mape 1: err = %v", err)
	}
	if _, _, err := runCLI(t, "validate", dir, "--cv", "group"); err == nil || !strings.Contains(err.Error(), "source") {
		t.Errorf("--cv group: err = %v, want one naming the valid choice", err)
	}
}

// TestCalibrateOutAndCheck: on the tiny rows nothing constrains the fitted
// entries, so calibrate takes their priors, writes a calibration file that
// says so, and --check fails against the committed one.
func TestCalibrateOutAndCheck(t *testing.T) {
	dir := writeValidationDir(t)
	outDir := filepath.Join(t.TempDir(), "cal")
	out := filepath.Join(outDir, "calibration.yaml")
	stdout, stderr, err := runCLI(t, "calibrate", dir, "--out", outDir)
	if err != nil {
		t.Fatalf("calibrate: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "moe_host_sync") || !strings.Contains(stdout, "prior") {
		t.Errorf("table:\n%s", stdout)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var file map[string]struct {
		Value     string `yaml:"value"`
		Objective string `yaml:"objective"`
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if e := file["train_gemm"]; e.Value != "1" || !strings.Contains(e.Objective, "prior") {
		t.Errorf("train_gemm written as %+v, want the prior 1", e)
	}
	if e := file["kernel_overhead"]; e.Value != "2.2µs" {
		t.Errorf("an entry without fit: changed: %+v", e)
	}
	if _, _, err := runCLI(t, "calibrate", dir, "--check"); err == nil || !strings.Contains(err.Error(), "train_gemm 0.90 → 1") {
		t.Errorf("--check: err = %v, want the changed entries named", err)
	}
}

// TestCalibrationOutPath: --out is a directory (created when missing) that
// receives calibration.yaml; a .yaml/.yml path names the file itself; an
// existing file of another kind is refused with the field's name.
func TestCalibrationOutPath(t *testing.T) {
	tmp := t.TempDir()
	plain := filepath.Join(tmp, "notes.txt")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ out, want, err string }{
		{filepath.Join(tmp, "new"), filepath.Join(tmp, "new", "calibration.yaml"), ""},
		{tmp, filepath.Join(tmp, "calibration.yaml"), ""},
		{filepath.Join(tmp, "x.yaml"), filepath.Join(tmp, "x.yaml"), ""},
		{filepath.Join(tmp, "x.YML"), filepath.Join(tmp, "x.YML"), ""},
		{plain, "", "--out: "},
	} {
		got, err := calibrationOutPath(c.out)
		if c.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), c.err) {
				t.Errorf("%s: err %v, want prefix %q", c.out, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.out, got, err, c.want)
		}
	}
}
