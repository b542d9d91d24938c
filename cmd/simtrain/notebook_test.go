package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/output"
)

const notebookPath = "../../examples/notebooks/sweep_analysis.ipynb"

type notebook struct {
	Cells []struct {
		CellType       string            `json:"cell_type"`
		Source         []string          `json:"source"`
		Outputs        []json.RawMessage `json:"outputs"`
		ExecutionCount *int              `json:"execution_count"`
	} `json:"cells"`
}

func readNotebook(t *testing.T) (notebook, string) {
	t.Helper()
	b, err := os.ReadFile(notebookPath)
	if err != nil {
		t.Fatal(err)
	}
	var nb notebook
	if err := json.Unmarshal(b, &nb); err != nil {
		t.Fatalf("%s: %v", notebookPath, err)
	}
	var code strings.Builder
	for _, c := range nb.Cells {
		if c.CellType == "code" {
			code.WriteString(strings.Join(c.Source, ""))
			code.WriteString("\n")
		}
	}
	return nb, code.String()
}

// notebookList finds `NAME = [ "a", "b", ... ]` in the notebook's code.
func notebookList(t *testing.T, code, name string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?s)` + name + `\s*=\s*\[(.*?)\]`).FindStringSubmatch(code)
	if m == nil {
		t.Fatalf("the notebook has no %s list", name)
	}
	var out []string
	for _, q := range regexp.MustCompile(`"[^"]*"`).FindAllString(m[1], -1) {
		s, _ := strconv.Unquote(q)
		out = append(out, s)
	}
	return out
}

// TestNotebookIsCleanAndReadsRealColumns: the notebook is committed with its
// outputs cleared, and every column it reads exists in the files simtrain
// writes (so a renamed column fails here, not in a user's notebook).
func TestNotebookIsCleanAndReadsRealColumns(t *testing.T) {
	nb, code := readNotebook(t)
	for i, c := range nb.Cells {
		if c.CellType == "code" && (len(c.Outputs) > 0 || c.ExecutionCount != nil) {
			t.Errorf("cell %d has outputs or an execution count; clear them before committing", i)
		}
	}
	for _, tc := range []struct {
		list string
		cols []string
	}{{"SUMMARY_COLUMNS", structColumns(output.SummaryRow{})}, {"TIMELINE_COLUMNS", output.TimelineColumns()}} {
		for _, c := range notebookList(t, code, tc.list) {
			if !slices.Contains(tc.cols, c) {
				t.Errorf("%s: %q is not a column (have %v)", tc.list, c, tc.cols)
			}
		}
	}
}

// TestSweepOutputsForNotebook produces the files the notebook reads with
// the commands its first cell runs (the 70B example sweep, best, the best
// point printed and run), plus a sharded run and its merge, and writes a
// manifest for .ci/arrowcheck/check.mjs. Skipped unless SWEEP_NOTEBOOK_DIR
// is set (.ci/sweep.sh sets it).
func TestSweepOutputsForNotebook(t *testing.T) {
	dir := os.Getenv("SWEEP_NOTEBOOK_DIR")
	if dir == "" {
		t.Skip("SWEEP_NOTEBOOK_DIR not set")
	}
	sweepFile := "../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml"
	l70, shards := filepath.Join(dir, "l70"), filepath.Join(dir, "l70-shards")
	must := func(args ...string) string {
		out, _, err := runCLI(t, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return out
	}
	must("sweep", sweepFile, "--out", l70, "--quiet")
	for i := 0; i < 3; i++ {
		must("sweep", sweepFile, "--out", shards, "--shard", strconv.Itoa(i)+"/3", "--quiet")
	}
	must("merge", shards, "--out", filepath.Join(dir, "merged.arrow"))
	must("merge", l70, "--out", filepath.Join(dir, "merged.parquet"))
	var best struct {
		Top []struct {
			Name string `json:"name"`
		} `json:"top"`
	}
	if err := json.Unmarshal([]byte(must("best", l70, "--format", "json")), &best); err != nil {
		t.Fatal(err)
	}
	name := best.Top[0].Name
	point := name[strings.LastIndexByte(name, '-')+1:]
	scen := filepath.Join(dir, "l70-best.yaml")
	if err := os.WriteFile(scen, []byte(must("sweep", sweepFile, "--print-point", point)), 0o644); err != nil {
		t.Fatal(err)
	}
	must("run", scen, "--out", filepath.Join(dir, "l70-best"))

	type entry struct {
		Path    string   `json:"path"`
		Columns []string `json:"columns"`
		Rows    int64    `json:"rows"`
	}
	var manifest []entry
	add := func(rel string, cols []string, rows int64) {
		info, err := output.ReadTableInfo(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		if rows >= 0 && info.Rows != rows {
			t.Errorf("%s: %d rows, want %d", rel, info.Rows, rows)
		}
		manifest = append(manifest, entry{rel, cols, info.Rows})
	}
	summary := structColumns(output.SummaryRow{})
	add("l70/summary.arrow", summary, 1000)
	add("l70-shards/summary.shard-0-of-3.arrow", summary, 334)
	add("l70-shards/summary.shard-1-of-3.arrow", summary, 333)
	add("l70-shards/summary.shard-2-of-3.arrow", summary, 333)
	add("merged.arrow", summary, 1000)
	add(filepath.Join("l70-best", name, "summary.arrow"), summary, 1)
	add(filepath.Join("l70-best", name, "timeline.arrow"), output.TimelineColumns(), -1)
	b, _ := json.MarshalIndent(manifest, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
