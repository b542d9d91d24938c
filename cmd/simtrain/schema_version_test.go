package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/output"
)

// copyTree copies the files under src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestOldSchemaIsRefusedWithTheRebuildCommand: files written by the
// simtrain of schema_version 2 (testdata/schema-v2, byte counts as float64,
// memory indices as int64) are refused by merge, best, sweep --resume and
// report with one line that names the version and the command that
// rebuilds them, and the refusal leaves the old file as it was.
func TestOldSchemaIsRefusedWithTheRebuildCommand(t *testing.T) {
	if output.SchemaVersion == "2" {
		t.Skip("fixture is of the current schema")
	}
	dir := t.TempDir()
	copyTree(t, "testdata/schema-v2", dir)
	sw := filepath.Join(dir, "sweep")
	run := filepath.Join(dir, "run", "quickstart-llama3-8b-fsdp")
	before, err := os.ReadFile(filepath.Join(sw, "summary.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	head := "was written with schema_version 2; this simtrain reads " + output.SchemaVersion
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"merge", sw, "--out", filepath.Join(dir, "merged")}, `rebuild it: simtrain sweep SWEEP.yaml (the sweep "v2-tiny") --out ` + sw + "-v" + output.SchemaVersion},
		{[]string{"best", sw}, `rebuild it: simtrain sweep SWEEP.yaml (the sweep "v2-tiny")`},
		{[]string{"report", sw}, `rebuild it: simtrain sweep SWEEP.yaml (the sweep "v2-tiny")`},
		{[]string{"sweep", filepath.Join(sw, "v2-tiny.yaml"), "--out", sw, "--resume", "--quiet"},
			"--resume cannot continue it; run the shard again in a new directory: simtrain sweep " + filepath.Join(sw, "v2-tiny.yaml") + " --out " + sw + "-v" + output.SchemaVersion},
		{[]string{"report", run}, `rebuild it: simtrain run SCENARIO.yaml (the scenario "quickstart-llama3-8b-fsdp") --out ` + filepath.Join(dir, "run")},
	} {
		_, stderr, code := runMain(t, tc.args...)
		if code != exitBadInput || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, head) || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line with %q and %q", tc.args, code, stderr, exitBadInput, head, tc.want)
		}
	}
	after, err := os.ReadFile(filepath.Join(sw, "summary.arrow"))
	if err != nil || string(after) != string(before) {
		t.Errorf("the refused summary.arrow changed (%v)", err)
	}
}
