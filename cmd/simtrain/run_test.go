package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/output"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/simulation"
)

// runCLI runs the root command with args and returns stdout, stderr.
func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := newRootCmdFor(args) // the tree main builds for args
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), errb.String(), err
}

// contractKeys are the JSON keys scenario-format.md lists for `run --format json`.
var contractKeys = []string{"name", "run_id", "step_time_s", "tokens_per_s", "tokens_per_s_per_gpu",
	"model_flops_per_step", "hardware_flops_per_step", "mfu", "hfu", "tflops_per_gpu", "peak_mem_bytes",
	"mem_capacity_bytes", "mem_margin_bytes", "fits", "bubble_fraction", "exposed_comm_s", "sim_wall_s", "events"}

func TestRunJSONHasExactlyTheContractKeys(t *testing.T) {
	dir := t.TempDir()
	out, _, err := runCLI(t, "run", "../../scenarios/quickstart.yaml", "--out", dir, "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := slices.Clone(contractKeys)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
	exp := m["exposed_comm_s"].(map[string]any)
	for _, k := range simulation.ExposedKinds {
		if _, ok := exp[k]; !ok {
			t.Errorf("exposed_comm_s lacks %s", k)
		}
	}
	for _, f := range []string{"summary.arrow", "timeline.arrow", "memory.arrow", "links.arrow", "trace.json"} {
		if _, err := os.Stat(filepath.Join(dir, "quickstart-llama3-8b-fsdp", f)); err != nil {
			t.Error(err)
		}
	}
}

// TestRunIsDeterministic: running a scenario twice writes byte-identical
// timeline.arrow and trace.json, and the same summary apart from wall time.
func TestRunIsDeterministic(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, d := range []string{a, b} {
		if _, _, err := runCLI(t, "run", "../../scenarios/mixtral-8x7b-ep8.yaml", "--out", d); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"timeline.arrow", "trace.json", "memory.arrow", "links.arrow"} {
		x, _ := os.ReadFile(filepath.Join(a, "mixtral-8x7b-ep8", f))
		y, _ := os.ReadFile(filepath.Join(b, "mixtral-8x7b-ep8", f))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("%s differs between runs (%d vs %d bytes)", f, len(x), len(y))
		}
	}
	var ra, rb []output.SummaryRow
	if _, err := output.ReadTable(filepath.Join(a, "mixtral-8x7b-ep8", "summary.arrow"), &ra); err != nil {
		t.Fatal(err)
	}
	if _, err := output.ReadTable(filepath.Join(b, "mixtral-8x7b-ep8", "summary.arrow"), &rb); err != nil {
		t.Fatal(err)
	}
	ra[0].SimWallS, rb[0].SimWallS = 0, 0
	if !reflect.DeepEqual(ra, rb) {
		t.Errorf("summaries differ:\n%+v\n%+v", ra[0], rb[0])
	}
}

// TestRunBadInput: errors are one line, name the problem, never panic and
// never leave an output directory behind.
func TestRunBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("name: bad\nmodel: {preset: llama3-8b}\ntraining: {seq_len: 4096, global_batch: 8}\ncluster: {gpu: h100-sxm, nodes: 1}\nparallel: {tp: 3}\n"), 0o644)
	out, _, err := runCLI(t, "run", bad, "--out", dir, "--format", "json")
	if err == nil {
		t.Fatal("bad scenario accepted")
	}
	var m map[string]string
	if json.Unmarshal([]byte(out), &m) != nil || m["name"] != "bad" || !strings.Contains(m["error"], "parallel.tp: 3 does not divide model.heads 32") {
		t.Errorf("json error line: %q", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad")); err == nil {
		t.Error("an output directory was written for a failed scenario")
	}
	for _, args := range [][]string{
		{"run"},
		{"run", "../../scenarios/quickstart.yaml", "--format", "xml"},
		{"run", "../../scenarios/quickstart.yaml", "--fidelity", "packet"},
		{"run", "../../scenarios/quickstart.yaml", "--timeline-ranks", "3-1"},
	} {
		_, _, err := runCLI(t, append(args, "--out", dir)...)
		var ue *usageError
		if err == nil || !asUsage(err, &ue) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: want a one-line usage error, got %v", args, err)
		}
	}
	// One good and one missing file: the good one still runs, exit non-zero.
	out, _, err = runCLI(t, "run", "../../scenarios/quickstart.yaml", filepath.Join(dir, "missing.yaml"), "--out", dir, "--format", "json", "--no-timeline")
	if err == nil || strings.Count(out, "\n") != 2 {
		t.Errorf("mixed run: err %v, out %q", err, out)
	}
}

func asUsage(err error, ue **usageError) bool {
	for e := err; e != nil; {
		if u, ok := e.(*usageError); ok {
			*ue = u
			return true
		}
		un, ok := e.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		e = un.Unwrap()
	}
	return false
}

// TestRunOutputsForArrowJS writes every bundled scenario's outputs and a
// manifest into $ARROWCHECK_DIR for .ci/arrowcheck/check.mjs (the Arrow JS
// reader) to open: column names in order and row counts. Skipped unless the
// variable is set (.ci/run sets it).
func TestRunOutputsForArrowJS(t *testing.T) {
	dir := os.Getenv("ARROWCHECK_DIR")
	if dir == "" {
		t.Skip("ARROWCHECK_DIR not set")
	}
	files, _ := filepath.Glob("../../scenarios/*.yaml")
	type entry struct {
		Path    string   `json:"path"`
		Columns []string `json:"columns"`
		Rows    int64    `json:"rows"`
	}
	var manifest []entry
	for _, f := range files {
		out, _, err := runCLI(t, "run", f, "--out", dir, "--format", "json")
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatal(err)
		}
		name := m["name"].(string)
		s, err := scenario.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		add := func(file string, cols []string) {
			info, err := output.ReadTableInfo(filepath.Join(dir, name, file))
			if err != nil {
				t.Fatal(err)
			}
			manifest = append(manifest, entry{filepath.Join(name, file), cols, info.Rows})
		}
		add("summary.arrow", structColumns(output.SummaryRow{}))
		add("memory.arrow", structColumns(output.MemoryRow{}))
		add("links.arrow", structColumns(output.LinkRow{}))
		// Row counts the Go side promises: one summary row, one memory row
		// per rank.
		n := len(manifest)
		if manifest[n-3].Rows != 1 || manifest[n-2].Rows != int64(s.GPUs()) {
			t.Errorf("%s: rows summary %d memory %d", name, manifest[n-3].Rows, manifest[n-2].Rows)
		}
		if s.TimelineEnabled() {
			add("timeline.arrow", output.TimelineColumns())
			if manifest[n].Rows < 1 {
				t.Errorf("%s: empty timeline", name)
			}
		}
	}
	// goodput.arrow (simtrain goodput), after run has written the directory
	if _, _, err := runCLI(t, "goodput", "../../scenarios/llama3-405b-16k-h100-goodput.yaml", "--tokens", "15.6T",
		"--trials", "5", "--out", dir); err != nil {
		t.Fatal(err)
	}
	info, err := output.ReadTableInfo(filepath.Join(dir, "llama3-405b-16k-h100-goodput", "goodput.arrow"))
	if err != nil || info.Rows < 1 {
		t.Fatalf("goodput.arrow: %v, %d rows", err, info.Rows)
	}
	manifest = append(manifest, entry{filepath.Join("llama3-405b-16k-h100-goodput", "goodput.arrow"), structColumns(output.GoodputRow{}), info.Rows})
	b, _ := json.MarshalIndent(manifest, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// structColumns lists the arrow column names of a row struct, in order.
func structColumns(v any) []string {
	t := reflect.TypeOf(v)
	var out []string
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("arrow"), ",")
		if name != "" {
			out = append(out, name)
		}
	}
	return out
}

// TestRunBadScenarioNamesFileOnce: a scenario that fails validation gets a
// one-line error naming the file once and the field with its choices.
func TestRunBadScenarioNamesFileOnce(t *testing.T) {
	src, err := os.ReadFile("../../scenarios/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "bad.yaml")
	bad := strings.Replace(string(src), "parallel:\n", "parallel:\n  tp_impl: foo\n", 1)
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runMain(t, "run", path, "--out", t.TempDir())
	if code != exitBadInput {
		t.Fatalf("bad scenario: exit status %d, want %d", code, exitBadInput)
	}
	if strings.Count(stderr, "\n") != 1 {
		t.Errorf("want one line on stderr, got %q", stderr)
	}
	line := strings.SplitN(stderr, "\n", 2)[0]
	if strings.Count(line, path) != 1 || !strings.Contains(line, `parallel.tp_impl: unknown value "foo" (valid: megatron, dtensor)`) {
		t.Errorf("error line %q", line)
	}
}
