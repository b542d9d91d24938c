package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/output"
)

// The golden-output tests pin every byte simtrain writes for the bundled
// scenarios, the bundled 8B sweep and the two validation sets, so that a
// restructuring (issue 17) or a speed-up (issue 18) can prove it changed no
// result. The only field left out is the simulation's own wall time
// (sim_wall_s), which is not a result. Each golden file holds, per
// scenario, the `run --format json` line and the SHA-256 and size of every
// output file; the summary is hashed after decoding, with its wall time
// zeroed. A deliberate change of an output regenerates them with
//
//	go test ./cmd/simtrain -run TestGolden -update
//
// and the diff of testdata/golden/ shows which scenarios and files moved.

// goldenCompare writes got to testdata/golden/name under -update, and
// otherwise fails the test where got differs from the file, naming the
// first differing line.
func goldenCompare(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if updateGolden() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (regenerate with go test ./cmd/simtrain -run TestGolden -update)", err)
	}
	if string(want) == got {
		return
	}
	wl, gl := strings.Split(string(want), "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			t.Fatalf("%s differs at line %d:\n got: %s\nwant: %s", path, i+1, g, w)
		}
	}
}

// withoutWallTime drops sim_wall_s from one JSON object line and re-encodes
// it with sorted keys.
func withoutWallTime(t *testing.T, line string) string {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, line)
	}
	delete(m, "sim_wall_s")
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// summaryDigest hashes a summary.arrow's rows and metadata with every
// row's wall time zeroed and without the checksum (which hashes the bytes,
// wall time included; its correctness is sim/output's tests' job).
func summaryDigest(t *testing.T, path string) string {
	t.Helper()
	var rows []output.SummaryRow
	meta, err := output.ReadTable(path, &rows)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		rows[i].SimWallS = 0
	}
	keys := make([]string, 0, len(meta))
	for k := range meta {
		// The checksum hashes the file's bytes, the wall time with them.
		if k != output.MetaChecksum {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%q=%q\n", k, meta[k])
	}
	for _, r := range rows {
		fmt.Fprintf(h, "%v\n", r) // values in column order; no type or field names
	}
	return fmt.Sprintf("%x rows=%d", h.Sum(nil), len(rows))
}

// dirDigest lists every file under dir with its SHA-256 and size, the
// summary by summaryDigest.
func dirDigest(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if e.IsDir() {
			t.Fatalf("unexpected directory %s", p)
		}
		if e.Name() == "summary.arrow" {
			fmt.Fprintf(&b, "  %s %s\n", e.Name(), summaryDigest(t, p))
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "  %s %x bytes=%d\n", e.Name(), sha256.Sum256(data), len(data))
	}
	return b.String()
}

// bundledScenarios lists the bundled scenario files in name order.
func bundledScenarios(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bundled scenarios: %v", err)
	}
	sort.Strings(files)
	return files
}

// writeScenarioEntry appends to b one scenario's entry of
// bundled-scenarios.txt: its file name, its run's JSON line without the
// wall time and the digest of the directory the run wrote.
func writeScenarioEntry(t *testing.T, b *strings.Builder, file, jsonLine, dir string) {
	t.Helper()
	fmt.Fprintf(b, "%s\n  %s\n", filepath.Base(file), withoutWallTime(t, jsonLine))
	b.WriteString(dirDigest(t, dir))
}

// TestGoldenBundledScenarios pins `simtrain run` on every bundled scenario:
// its JSON summary and every file it writes.
func TestGoldenBundledScenarios(t *testing.T) {
	var b strings.Builder
	for _, f := range bundledScenarios(t) {
		out := t.TempDir()
		stdout, stderr, err := runCLI(t, "run", f, "--out", out, "--format", "json", "--quiet")
		if err != nil {
			t.Fatalf("%s: %v\n%s", f, err, stderr)
		}
		dirs, err := os.ReadDir(out)
		if err != nil || len(dirs) != 1 {
			t.Fatalf("%s: want one output directory under %s, got %v (%v)", f, out, dirs, err)
		}
		writeScenarioEntry(t, &b, f, strings.TrimSpace(stdout), filepath.Join(out, dirs[0].Name()))
	}
	goldenCompare(t, "bundled-scenarios.txt", b.String())
}

// TestGoldenBundledScenariosInOneRun: `simtrain run` given every bundled
// scenario at once, whose runs keep one simulation.Reuse from file to
// file, writes what running each alone does: the same golden file as
// TestGoldenBundledScenarios, every JSON line and every output file. A
// Reuse that carried a run's storage, cluster or prices into the next
// would change some file here.
func TestGoldenBundledScenariosInOneRun(t *testing.T) {
	files := bundledScenarios(t)
	out := t.TempDir()
	stdout, stderr, err := runCLI(t, append(append([]string{"run"}, files...), "--out", out, "--format", "json", "--quiet")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != len(files) {
		t.Fatalf("%d JSON lines for %d scenarios", len(lines), len(files))
	}
	var b strings.Builder
	for i, f := range files {
		var named struct{ Name string }
		if err := json.Unmarshal([]byte(lines[i]), &named); err != nil || named.Name == "" {
			t.Fatalf("%s: no name in %s (%v)", f, lines[i], err)
		}
		writeScenarioEntry(t, &b, f, lines[i], filepath.Join(out, named.Name))
	}
	goldenCompare(t, "bundled-scenarios.txt", b.String())
}

// TestGoldenSweep pins the bundled 160-point sweep's summary.
func TestGoldenSweep(t *testing.T) {
	out := t.TempDir()
	if _, stderr, err := runCLI(t, "sweep", "../../scenarios/sweeps/llama3-8b-gpu-types.yaml", "--out", out, "--quiet"); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	goldenCompare(t, "sweep-llama3-8b-gpu-types.txt", dirDigest(t, out))
}

// TestGoldenValidationSets pins every prediction of `simtrain validate` on
// scenarios/validation and scenarios/holdout (one JSON line per run and the
// summary line, as the command prints them).
func TestGoldenValidationSets(t *testing.T) {
	for _, set := range []string{"validation", "holdout"} {
		stdout, stderr, err := runCLI(t, "validate", "../../scenarios/"+set, "--format", "json", "--out", t.TempDir())
		if err != nil && !bytes.Contains([]byte(stdout), []byte(`"mape"`)) {
			t.Fatalf("%s: %v\n%s", set, err, stderr)
		}
		var b strings.Builder
		for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
			b.WriteString(withoutWallTime(t, line))
			b.WriteByte('\n')
		}
		goldenCompare(t, "validate-"+set+".txt", b.String())
	}
}
