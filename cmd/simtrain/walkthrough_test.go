package main

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/output"
	"github.com/simtrain/simtrain/sim/output/htmlreport"
)

// walkthroughDir holds the figures of docs/walkthrough.md.
const walkthroughDir = "../../docs/walkthrough"

// TestWalkthroughFigures makes the figures of docs/walkthrough.md with the
// report's chart code from the commands the walkthrough shows (the bundled
// 1,000-point Llama 3 70B sweep, then a run of its fastest layout) and
// compares them with the committed files; -update rewrites them. So the
// walkthrough's pictures are what simtrain draws today.
func TestWalkthroughFigures(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the 1,000-point sweep")
	}
	sweepFile := "../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml"
	dir := t.TempDir()
	if _, _, err := runCLI(t, "sweep", sweepFile, "--out", filepath.Join(dir, "l70"), "--quiet"); err != nil {
		t.Fatal(err)
	}
	rows := readRows(t, filepath.Join(dir, "l70", "summary.arrow"))
	// The fastest layout that fits, as `simtrain best` ranks by tokens/s.
	var ok []output.SummaryRow
	for _, r := range rows {
		if r.Error == "" && r.Fits && r.StepTimeS > 0 {
			ok = append(ok, r)
		}
	}
	slices.SortStableFunc(ok, func(a, b output.SummaryRow) int {
		return cmp.Or(cmp.Compare(b.TokensPerS, a.TokensPerS), cmp.Compare(a.Name, b.Name))
	})
	if len(ok) == 0 {
		t.Fatal("no layout fits")
	}
	best := ok[0].Name
	point := best[strings.LastIndex(best, "-")+1:]
	if _, err := strconv.Atoi(point); err != nil {
		t.Fatalf("point name %q does not end in its number", best)
	}
	yaml, _, err := runCLI(t, "sweep", sweepFile, "--print-point", point)
	if err != nil {
		t.Fatal(err)
	}
	scenario := filepath.Join(dir, "best.yaml")
	if err := os.WriteFile(scenario, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(t, "run", scenario, "--out", filepath.Join(dir, "best"), "--quiet"); err != nil {
		t.Fatal(err)
	}
	run, err := htmlreport.LoadRun(filepath.Join(dir, "best", best))
	if err != nil {
		t.Fatal(err)
	}
	figures := map[string]string{
		"pareto.svg": htmlreport.ParetoSVG(rows),
		"gantt.svg":  htmlreport.GanttSVG(run.Timeline),
		"memory.svg": htmlreport.MemorySVG(run.Memory),
		"links.svg":  htmlreport.LinkHeatmapSVG(run.Links),
	}
	for name, svg := range figures {
		path := filepath.Join(walkthroughDir, name)
		want := htmlreport.Standalone(svg)
		if updateGolden() {
			if err := os.MkdirAll(walkthroughDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Errorf("%s is not what the report code draws today (%v); go test ./cmd/simtrain -run TestWalkthroughFigures -update", path, err)
		}
	}
	// The text names the best point and its figures; keep it honest.
	doc, err := os.ReadFile("../../docs/walkthrough.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--print-point " + point + " ", best, strconv.FormatFloat(100*ok[0].MFU, 'f', 1, 64) + "%"} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("docs/walkthrough.md does not say %q (the sweep's fastest layout today)", want)
		}
	}
}
