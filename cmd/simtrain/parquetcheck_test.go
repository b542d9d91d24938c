package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/simtrain/simtrain/sim/output"
)

// TestRunParquetForDuckDB writes `run --parquet` outputs of two bundled
// scenarios and a merged sweep in both formats, with manifest.json, into
// $PARQUETCHECK_DIR for .ci/arrowcheck/check-parquet.mjs, which opens
// every Parquet file with DuckDB (an independent reader) and compares each
// value with the Arrow file's as the JavaScript Arrow reader decodes it.
// Skipped when PARQUETCHECK_DIR is not set.
func TestRunParquetForDuckDB(t *testing.T) {
	dir := os.Getenv("PARQUETCHECK_DIR")
	if dir == "" {
		t.Skip("PARQUETCHECK_DIR not set")
	}
	type entry struct {
		Path    string   `json:"path"`
		Arrow   string   `json:"arrow"`
		Columns []string `json:"columns"`
		Rows    int64    `json:"rows"`
	}
	var manifest []entry
	add := func(parquet, arrow string) {
		info, err := output.ReadTableInfo(filepath.Join(dir, arrow))
		if err != nil {
			t.Fatal(err)
		}
		manifest = append(manifest, entry{parquet, arrow, info.Columns, info.Rows})
	}
	for _, sc := range []string{"quickstart", "llama3-70b-1024-h100-3d"} {
		out, _, err := runCLI(t, "run", "../../scenarios/"+sc+".yaml", "--out", dir, "--parquet", "--quiet", "--format", "json")
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatal(err)
		}
		name := m["name"].(string)
		for _, table := range []string{"summary", "memory", "links", "timeline"} {
			add(filepath.Join(name, table+".parquet"), filepath.Join(name, table+".arrow"))
		}
	}
	sweep := filepath.Join(dir, "sweep")
	if _, _, err := runCLI(t, "sweep", writeSweep(t, smallSweep), "--out", sweep, "--quiet"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"merged.parquet", "merged.arrow"} {
		if _, _, err := runCLI(t, "merge", sweep, "--out", filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	add("merged.parquet", "merged.arrow")
	b, _ := json.MarshalIndent(manifest, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}
