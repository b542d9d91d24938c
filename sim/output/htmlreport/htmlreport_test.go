package htmlreport

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/output"
)

// TestGanttHandComputed: two back-to-back tasks on one lane fill the 960
// pixel axis half and half, each one rectangle in its kind's colour.
func TestGanttHandComputed(t *testing.T) {
	tl := &Timeline{Ranks: []int{0}, FileRanks: 1, Steps: 1, Tasks: []output.TimelineRow{
		{Rank: 0, Stream: "compute", Kind: "forward", Name: "mlp_fwd", Layer: 3, Microbatch: 0, StartNs: 1000, EndNs: 501000},
		{Rank: 0, Stream: "compute", Kind: "backward", Name: "mlp_bwd", Layer: 3, Microbatch: 0, StartNs: 501000, EndNs: 1001000},
	}}
	svg := GanttSVG(tl)
	for _, want := range []string{
		`<rect x="150" y="8" width="480" height="14" fill="#4e79a7"><title>forward mlp_fwd: 500 µs, 0 s … 500 µs, layer 3, micro-batch 0</title></rect>`,
		`<rect x="630" y="8" width="480" height="14" fill="#f28e2b"><title>backward mlp_bwd: 500 µs, 500 µs … 1.00 ms, layer 3, micro-batch 0</title></rect>`,
		`rank 0 compute`,
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("Gantt lacks %s\n%s", want, svg)
		}
	}
}

// TestGanttBounded: however many tasks, a lane holds at most one rectangle
// per pixel, and the tooltip of a pixel with many tasks counts them.
func TestGanttBounded(t *testing.T) {
	var tasks []output.TimelineRow
	kinds := []string{"forward", "all_gather", "backward"}
	for r := int32(0); r < 2; r++ {
		for i := int64(0); i < 50000; i++ {
			tasks = append(tasks, output.TimelineRow{Rank: r, Stream: "compute", Kind: kinds[i%3], Name: fmt.Sprint("op", i%5),
				StartNs: i * 100, EndNs: i*100 + 90, Layer: -1, Microbatch: -1})
		}
	}
	svg := GanttSVG(&Timeline{Tasks: tasks, Ranks: []int{0, 1}, FileRanks: 2, Steps: 1})
	rects := strings.Count(svg, `height="14" fill=`) // task rectangles, not lanes or legend
	if rects > 2*ganttWidth || rects < 100 {
		t.Errorf("%d task rectangles for 2 lanes, want at most %d (and some)", rects, 2*ganttWidth)
	}
	if !regexp.MustCompile(`\d+ tasks: op\d`).MatchString(svg) {
		t.Error("no tooltip counts the tasks of a crowded pixel")
	}
}

// TestMemoryBars: a stage's bar is split into its parts in proportion, the
// fullest rank of a stage is drawn, and an overfull stage says so.
func TestMemoryBars(t *testing.T) {
	mem := []output.MemoryRow{
		{Rank: 0, Stage: 0, WeightsBytes: 20e9, OptimizerBytes: 20e9, TotalBytes: 40e9, CapacityBytes: 80e9, Fits: true},
		{Rank: 1, Stage: 0, WeightsBytes: 10e9, TotalBytes: 10e9, CapacityBytes: 80e9, Fits: true},
		{Rank: 2, Stage: 1, ActivationsBytes: 90e9, TotalBytes: 90e9, CapacityBytes: 80e9, Fits: false},
	}
	svg := MemorySVG(mem)
	// Axis 0…90e9*1.02 over 720 px: 20 GB is 156.86 px.
	for _, want := range []string{
		`<rect x="80" y="10" width="156.86" height="18" fill="#4e79a7"><title>stage 0 (rank 0): weights 20.0 GB</title></rect>`,
		`<rect x="236.86" y="10" width="156.86" height="18" fill="#59a14f"><title>stage 0 (rank 0): optimizer 20.0 GB</title></rect>`,
		`90.0 GB of 80.0 GB — does not fit`,
		`class="cap"`,
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("memory chart lacks %s\n%s", want, svg)
		}
	}
	if strings.Contains(svg, "(rank 1)") {
		t.Error("stage 0 drew rank 1, not its fullest rank 0")
	}
}

// TestHeatmapBins: a kind with more links than cells is binned, each cell
// showing its busiest link.
func TestHeatmapBins(t *testing.T) {
	var links []output.LinkRow
	for i := 0; i < 2*heatMaxCells; i++ {
		links = append(links, output.LinkRow{Link: int32(i), From: fmt.Sprint("a", i), To: "b", Kind: "network", Utilization: float64(i%2) * 0.5})
	}
	links = append(links, output.LinkRow{Link: 5000, From: "g0", To: "sw", Kind: "nvlink", Utilization: 1})
	svg := LinkHeatmapSVG(links)
	if n := strings.Count(svg, "<title>links "); n != heatMaxCells {
		t.Errorf("%d binned cells, want %d", n, heatMaxCells)
	}
	for _, want := range []string{"network: 2,048 links, busiest 50.0%, mean 25.0% (a cell is 2 links)",
		"links 0…1, busiest link 1 a1 → b: 50.0% busy", "nvlink: 1 links, busiest 100.0%", heatColor(1)} {
		if !strings.Contains(svg, want) {
			t.Errorf("heatmap lacks %q", want)
		}
	}
	if heatColor(0) != "#eeeeee" || heatColor(1) != "#800026" || heatColor(0.5) != "#fd8d3c" {
		t.Errorf("colour scale %s %s %s", heatColor(0), heatColor(0.5), heatColor(1))
	}
}

// TestParetoFront: hand-picked points; a point that does not fit or that
// another beats on both axes is off the front.
func TestParetoFront(t *testing.T) {
	rows := []output.SummaryRow{
		{Name: "a", StepTimeS: 10, CostUSDPerStep: 1, Fits: true},
		{Name: "b", StepTimeS: 5, CostUSDPerStep: 2, Fits: true},
		{Name: "c", StepTimeS: 6, CostUSDPerStep: 3, Fits: true}, // beaten by b
		{Name: "d", StepTimeS: 1, CostUSDPerStep: 1, Fits: false},
		{Name: "e", StepTimeS: 2, CostUSDPerStep: 8, Fits: true},
		{Name: "f", Error: "boom"},
	}
	_, x := paretoX(rows)
	var names []string
	for _, r := range ParetoFront(rows, x) {
		names = append(names, r.Name)
	}
	if got := strings.Join(names, ","); got != "a,b,e" {
		t.Errorf("front %s, want a,b,e", got)
	}
	svg := ParetoSVG(rows)
	if n := strings.Count(svg, `class="pt best"`); n != 3 {
		t.Errorf("%d front points drawn, want 3", n)
	}
	if n := strings.Count(svg, `class="pt nofit"`); n != 1 {
		t.Errorf("%d hollow points, want 1", n)
	}
}

// TestSampling: ranks are spread evenly over the file's list and the list
// syntax of the timeline metadata parses.
func TestSampling(t *testing.T) {
	r, err := parseRanks("0-7,256-263,512-519,768-775")
	if err != nil || len(r) != 32 {
		t.Fatalf("%v %v", r, err)
	}
	if got := fmt.Sprint(sampleEvenly(r, 8)); got != "[0 4 256 260 512 516 768 772]" {
		t.Errorf("sample %s", got)
	}
	if _, err := parseRanks("3-1"); err == nil {
		t.Error("3-1 parsed")
	}
}

// TestLoadRunAndRender writes a small run directory, loads it (the timeline
// sampled to MaxGanttRanks of its first step) and checks the page is
// self-contained and the same bytes twice.
func TestLoadRunAndRender(t *testing.T) {
	dir := t.TempDir()
	sum := []output.SummaryRow{{Name: "tiny", RunID: "r", GPU: "h100-sxm", NumGPUs: 16, TP: 1, PP: 1, DP: 16, CP: 1, EP: 1,
		Schedule: "1f1b", StepTimeS: 1.5, MFU: 0.4, PeakMemBytes: 50e9, MemCapacityBytes: 80e9, Fits: true, Fidelity: "analytic"}}
	mem := []output.MemoryRow{{Rank: 0, Stage: 0, WeightsBytes: 50e9, TotalBytes: 50e9, CapacityBytes: 80e9, Fits: true}}
	links := []output.LinkRow{{Link: 0, From: "n0/gpu0", To: "domain0/nvswitch", Kind: "nvlink", Utilization: 0.3}}
	for name, rows := range map[string]any{"summary.arrow": sum, "memory.arrow": mem, "links.arrow": links} {
		if err := output.WriteTable(filepath.Join(dir, name), rows, nil); err != nil {
			t.Fatal(err)
		}
	}
	var tl []output.TimelineRow
	for step := int32(1); step >= 0; step-- { // steps out of order: the first is still step 0
		for rank := int32(0); rank < 16; rank++ {
			tl = append(tl, output.TimelineRow{Step: step, Rank: rank, Stream: "compute", Kind: "forward", Name: "f",
				StartNs: int64(step) * 1000, EndNs: int64(step)*1000 + 900, Layer: -1, Microbatch: -1, Chunk: -1, Group: ""})
		}
	}
	w, err := output.NewTimelineWriter(filepath.Join(dir, "timeline.arrow"), map[string]string{"ranks": "0-15", "symmetric": "true"},
		output.TimelineDicts{Stream: []string{"compute"}, Kind: []string{"forward"}, Group: []string{""}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(tl); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	run, err := LoadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := run.Timeline
	if fmt.Sprint(got.Ranks) != "[0 2 4 6 8 10 12 14]" || got.Steps != 2 || got.FileRanks != 16 || len(got.Tasks) != 8 || !got.Symmetric || got.TotalTasks != 32 {
		t.Errorf("timeline: ranks %v steps %d file ranks %d tasks %d total %d", got.Ranks, got.Steps, got.FileRanks, len(got.Tasks), got.TotalTasks)
	}
	for _, task := range got.Tasks {
		if task.Step != 0 {
			t.Errorf("kept a task of step %d", task.Step)
		}
	}
	var a, b bytes.Buffer
	if err := RenderRun(&a, run); err != nil {
		t.Fatal(err)
	}
	if err := RenderRun(&b, run); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two renders differ")
	}
	checkSelfContained(t, a.String())
	for _, want := range []string{`id="gantt"`, `id="memory"`, `id="links"`, "Ranks 0,2,4,6,8,10,12,14 (8 of the 16 ranks", "first of 2 simulated steps"} {
		if !strings.Contains(a.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// TestRenderSweep: the sweep page holds the Pareto plot and tables.
func TestRenderSweep(t *testing.T) {
	rows := []output.SummaryRow{
		{Name: "p1", StepTimeS: 2, CostUSDPerStep: 4, Fits: true, NumGPUs: 8, GPU: "h100-sxm"},
		{Name: "p2", StepTimeS: 1, CostUSDPerStep: 8, Fits: true, NumGPUs: 16, GPU: "h100-sxm"},
		{Name: "p3", Error: `layout: tp 3 does not divide 32 heads <script>`},
	}
	var b bytes.Buffer
	if err := RenderSweep(&b, &Sweep{Name: "demo", Rows: rows}); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	checkSelfContained(t, s)
	for _, want := range []string{`id="pareto"`, "3 points · 2 simulated · 2 fit in memory · 1 failed", "Points that did not simulate (1)", "&lt;script&gt;", `class="sortable"`} {
		if !strings.Contains(s, want) {
			t.Errorf("sweep report lacks %q", want)
		}
	}
}

// checkSelfContained fails if the page refers to anything outside itself.
func checkSelfContained(t *testing.T, page string) {
	t.Helper()
	stripped := strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, "")
	for _, bad := range []string{"http://", "https://", " src=", " href=", "@import", "url("} {
		if strings.Contains(stripped, bad) {
			t.Errorf("page is not self-contained: it contains %q", bad)
		}
	}
}
