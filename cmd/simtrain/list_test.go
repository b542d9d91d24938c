package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/workload"
)

// TestList: the catalogs as a table and as JSON lines, one GPU with its
// sources, its record as YAML that reads back as the same GPU (the start
// of a user's record), a record file, and usage errors naming the choices.
func TestList(t *testing.T) {
	out, _, err := runCLI(t, "list", "gpus")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range hardware.GPUNames() {
		if !strings.Contains(out, n) {
			t.Errorf("list gpus: %s missing", n)
		}
	}
	out, _, err = runCLI(t, "list", "nics", "--format", "json")
	if err != nil || strings.Count(out, "\n") != len(hardware.NICNames()) {
		t.Fatalf("list nics --format json: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil || m["name"] == "" || m["gbps"].(float64) <= 0 {
			t.Errorf("nic line %q: %v", line, err)
		}
	}
	out, _, err = runCLI(t, "list", "models", "--format", "json")
	if err != nil || strings.Count(out, "\n") != len(workload.PresetNames()) {
		t.Fatalf("list models: %v", err)
	}
	out, _, err = runCLI(t, "list", "gpus", "h800")
	if err != nil || !strings.Contains(out, "inherited from h100-sxm") || !strings.Contains(out, "comm.channels") ||
		!strings.Contains(out, "nccl#892") {
		t.Errorf("list gpus h800: %v\n%s", err, out)
	}
	out, _, err = runCLI(t, "list", "gpus", "gb200", "--format", "json")
	var g struct {
		Name    string   `json:"name"`
		Sources []string `json:"sources"`
	}
	if err != nil || json.Unmarshal([]byte(out), &g) != nil || g.Name != "gb200" || len(g.Sources) < 40 {
		t.Errorf("list gpus gb200 --format json: %v %+v", err, g)
	}

	// Framework profiles: every one listed; one with each default and its
	// source; JSON with the condition of a conditional default.
	out, _, err = runCLI(t, "list", "frameworks")
	for _, n := range hardware.FrameworkNames() {
		if err != nil || !strings.Contains(out, n+" ") {
			t.Errorf("list frameworks: %s missing: %v\n%s", n, err, out)
		}
	}
	out, _, err = runCLI(t, "list", "frameworks", "deepspeed")
	if err != nil || !strings.Contains(out, "parallel.zero3_prefetch_bucket: 5e7 (with parallel.zero 3)") || !strings.Contains(out, "stage3_prefetch_bucket_size") {
		t.Errorf("list frameworks deepspeed: %v\n%s", err, out)
	}
	out, _, err = runCLI(t, "list", "frameworks", "deepspeed", "--format", "json")
	var fw struct {
		Defaults []struct {
			Path   string              `json:"path"`
			When   map[string][]string `json:"when"`
			Source string              `json:"source"`
		} `json:"defaults"`
	}
	if err != nil || json.Unmarshal([]byte(out), &fw) != nil || len(fw.Defaults) == 0 {
		t.Fatalf("list frameworks deepspeed --format json: %v\n%s", err, out)
	}
	for _, d := range fw.Defaults {
		if d.Source == "" || (d.Path == "parallel.zero3_prefetch_bucket" && strings.Join(d.When["parallel.zero"], ",") != "3") {
			t.Errorf("default %+v", d)
		}
	}

	yml, _, err := runCLI(t, "list", "gpus", "b200", "--format", "yaml")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "mine.yaml")
	if err := os.WriteFile(file, []byte(strings.Replace(yml, "name: b200", "name: mine", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	mine, err := hardware.ParseGPU([]byte(strings.Replace(yml, "name: b200", "name: mine", 1)))
	ref, _ := hardware.LookupGPU("b200")
	if err != nil || mine.Compute.MatmulEffBF16 != ref.Compute.MatmulEffBF16 || mine.HBMBandwidth != ref.HBMBandwidth {
		t.Errorf("b200's record read back: %v", err)
	}
	if out, _, err = runCLI(t, "list", "gpus", file); err != nil || !strings.HasPrefix(out, "mine  (blackwell)") {
		t.Errorf("list gpus FILE: %v\n%s", err, out)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"list"}, "list takes gpus, nics, models or frameworks"},
		{[]string{"list", "cpus"}, `--list: unknown value "cpus" (valid: gpus, nics, models, frameworks)`},
		{[]string{"list", "frameworks", "jax"}, `framework "jax": unknown (valid: auto, deepspeed`},
		{[]string{"list", "frameworks", "--format", "yaml"}, "frameworks list as table or json"},
		{[]string{"list", "gpus", "h1000"}, `unknown GPU "h1000" (valid: a100-40gb`},
		{[]string{"list", "gpus", "--format", "yaml"}, "--format yaml prints one record: give a GPU name"},
		{[]string{"list", "gpus", "--format", "csv"}, `--format: unknown value "csv" (valid: table, json, yaml)`},
		{[]string{"list", "models", "llama9"}, `unknown model preset "llama9"`},
	} {
		_, _, err := runCLI(t, c.args...)
		var ue *usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want usage error %q", c.args, err, c.want)
		}
	}
}

// TestRunSaysInherited: a run on a record file says where its figures come
// from, and which it took from a reference GPU.
func TestRunSaysInherited(t *testing.T) {
	dir := t.TempDir()
	gpu, err := os.ReadFile("../../sim/hardware/testdata/unmeasured.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "part-x.yaml"), gpu, 0o644); err != nil {
		t.Fatal(err)
	}
	base, err := os.ReadFile("../../scenarios/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	scen := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scen, []byte(strings.Replace(string(base), "gpu: h100-sxm", "gpu: part-x.yaml", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCLI(t, "run", scen, "--out", dir, "--no-timeline")
	if err != nil || !strings.Contains(out, "hardware                 next-gen from part-x.yaml;") ||
		!strings.Contains(out, "inherited from h100-sxm (measured there, not on this part") {
		t.Errorf("run on part-x: %v\n%s", err, out)
	}
}
