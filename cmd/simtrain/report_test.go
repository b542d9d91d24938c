package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/simtrain/simtrain/sim/output"
)

// TestRunParquetAndReport: `run --parquet --report` writes every table again
// as Parquet with the same rows and metadata, and the HTML report, in the
// same atomic directory.
func TestRunParquetAndReport(t *testing.T) {
	out := t.TempDir()
	if _, stderr, err := runCLI(t, "run", "../../scenarios/quickstart.yaml", "--out", out, "--parquet", "--report", "--quiet"); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	dir := filepath.Join(out, "quickstart-llama3-8b-fsdp")
	same := func(name string, arrowRows, parquetRows any) {
		t.Helper()
		am, err := output.ReadTable(filepath.Join(dir, name+".arrow"), arrowRows)
		if err != nil {
			t.Fatal(err)
		}
		pm, err := output.ReadParquet(filepath.Join(dir, name+".parquet"), parquetRows)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(arrowRows, parquetRows) || reflect.ValueOf(arrowRows).Elem().Len() == 0 {
			t.Errorf("%s: Parquet rows differ from the Arrow file's", name)
		}
		// Each file carries the checksum of its own bytes; every other
		// metadata key is the same.
		if am[output.MetaChecksum] == "" || pm[output.MetaChecksum] == "" {
			t.Errorf("%s: a file lacks its %s", name, output.MetaChecksum)
		}
		delete(am, output.MetaChecksum)
		delete(pm, output.MetaChecksum)
		if !reflect.DeepEqual(am, pm) {
			t.Errorf("%s: Parquet metadata %v, Arrow %v", name, pm, am)
		}
	}
	same("summary", &[]output.SummaryRow{}, &[]output.SummaryRow{})
	same("memory", &[]output.MemoryRow{}, &[]output.MemoryRow{})
	same("links", &[]output.LinkRow{}, &[]output.LinkRow{})
	same("timeline", &[]output.TimelineRow{}, &[]output.TimelineRow{})
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `id="gantt"`) || !strings.Contains(string(page), "quickstart-llama3-8b-fsdp") {
		t.Error("report.html lacks the Gantt chart or the scenario name")
	}
	// `simtrain report` on the directory writes the same page.
	again := t.TempDir()
	if stdout, _, err := runCLI(t, "report", dir, "--out", again); err != nil || !strings.Contains(stdout, "wrote the run report") {
		t.Fatalf("report: %v %q", err, stdout)
	}
	if b, _ := os.ReadFile(filepath.Join(again, "report.html")); string(b) != string(page) {
		t.Error("simtrain report wrote a different page than run --report")
	}
}

// TestReportCommand: a sweep directory gets the sweep report; what is
// neither a run's nor a sweep's directory is a usage error.
func TestReportCommand(t *testing.T) {
	sweepDir := filepath.Join(t.TempDir(), "s")
	if _, _, err := runCLI(t, "sweep", writeSweep(t, smallSweep), "--out", sweepDir, "--quiet"); err != nil {
		t.Fatal(err)
	}
	stdout, _, err := runCLI(t, "report", sweepDir)
	if err != nil || !strings.Contains(stdout, "wrote the sweep report") {
		t.Fatalf("%v %q", err, stdout)
	}
	page, _ := os.ReadFile(filepath.Join(sweepDir, "report.html"))
	for _, want := range []string{`id="pareto"`, "<h1>small</h1>", "Points that did not simulate"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("sweep report lacks %q", want)
		}
	}
	file := filepath.Join(sweepDir, "summary.arrow")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report"}, "give one output directory"},
		{[]string{"report", t.TempDir()}, "neither a run's directory"},
		{[]string{"report", file}, "is not a directory"},
		{[]string{"report", filepath.Join(t.TempDir(), "absent")}, "no such file"},
	} {
		_, _, err := runCLI(t, tc.args...)
		var ue *usageError
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &ue) {
			t.Errorf("%v: error %v, want a usage error with %q", tc.args, err, tc.want)
		}
	}
}

// chromiumCheck is put into a copy of a report: the first script records
// errors and console.error calls, the second, after the load event, writes
// what each chart drew (its rendered size and shape count) into the DOM as
// JSON, which `chromium --dump-dom` prints.
const (
	chromiumErrHook = `<script>window.__errors=[];window.addEventListener("error",function(e){window.__errors.push(String(e.message))});` +
		`(function(){var ce=console.error;console.error=function(){window.__errors.push(Array.prototype.join.call(arguments," "));ce.apply(console,arguments)}})();</script>`
	chromiumProbe = `<script>window.addEventListener("load",function(){var out={errors:window.__errors,charts:{}};` +
		`["gantt","memory","links","pareto"].forEach(function(id){var el=document.getElementById(id);if(!el)return;var r=el.getBoundingClientRect();` +
		`out.charts[id]={w:Math.round(r.width),h:Math.round(r.height),shapes:el.querySelectorAll("rect,circle,path").length}});` +
		`var pre=document.createElement("pre");pre.id="chromium-check";pre.textContent=JSON.stringify(out);document.body.appendChild(pre)});</script>`
)

type chromiumResult struct {
	Errors []string `json:"errors"`
	Charts map[string]struct {
		W, H, Shapes int
	} `json:"charts"`
}

// loadInChromium opens a copy of page (with the probe scripts) in headless
// Chromium and returns what the probe found and the console lines Chromium
// logged.
func loadInChromium(t *testing.T, chromium, page string) (chromiumResult, []string) {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := strings.Replace(string(b), "<head>", "<head>"+chromiumErrHook, 1)
	html = strings.Replace(html, "</body>", chromiumProbe+"</body>", 1)
	probe := filepath.Join(t.TempDir(), "probe.html")
	if err := os.WriteFile(probe, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir="+t.TempDir(),
		"--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000", "--window-size=1280,1000", "--dump-dom", "file://"+probe)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	var console []string
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, ":CONSOLE") {
			console = append(console, line)
		}
	}
	m := regexp.MustCompile(`(?s)<pre id="chromium-check">(.*?)</pre>`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("%s: the probe wrote nothing (the page's scripts did not finish); console: %v", filepath.Base(page), console)
	}
	var res chromiumResult
	if err := json.Unmarshal([]byte(strings.NewReplacer("&quot;", `"`, "&amp;", "&", "&lt;", "<", "&gt;", ">").Replace(string(m[1]))), &res); err != nil {
		t.Fatalf("probe output %s: %v", m[1], err)
	}
	return res, console
}

// TestReportRendersInChromium loads run and sweep reports in headless
// Chromium (Debian's chromium package; .ci/run installs it and sets
// SIMTRAIN_REQUIRE_CHROMIUM=1, so CI cannot skip it) and checks that the
// charts are drawn (a non-empty rendered SVG with shapes) and that nothing
// is logged to the console. A page that throws proves the check can fail.
func TestReportRendersInChromium(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("SIMTRAIN_REQUIRE_CHROMIUM") != "" {
			t.Fatal("SIMTRAIN_REQUIRE_CHROMIUM is set but chromium is not on PATH")
		}
		t.Skip("chromium not installed (apt-get install chromium); .ci/run installs it")
	}
	out := t.TempDir()
	for _, sc := range []string{"quickstart.yaml", "llama3-70b-1024-h100-3d.yaml"} {
		if _, stderr, err := runCLI(t, "run", "../../scenarios/"+sc, "--out", out, "--report", "--quiet"); err != nil {
			t.Fatalf("%s: %v\n%s", sc, err, stderr)
		}
	}
	sweepDir := filepath.Join(out, "sweep")
	if _, _, err := runCLI(t, "sweep", writeSweep(t, smallSweep), "--out", sweepDir, "--quiet"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(t, "report", sweepDir); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir    string
		charts []string
	}{
		{"quickstart-llama3-8b-fsdp", []string{"gantt", "memory", "links"}},
		{"llama3-70b-1024-h100-3d", []string{"gantt", "memory", "links"}},
		{"sweep", []string{"pareto"}},
	} {
		res, console := loadInChromium(t, chromium, filepath.Join(out, tc.dir, "report.html"))
		if len(res.Errors) > 0 || len(console) > 0 {
			t.Errorf("%s: errors %v, console %v", tc.dir, res.Errors, console)
		}
		for _, id := range tc.charts {
			c, ok := res.Charts[id]
			if !ok || c.W < 100 || c.H < 20 || c.Shapes < 2 {
				t.Errorf("%s: chart %s not drawn: %+v (present %v)", tc.dir, id, c, ok)
			} else {
				t.Logf("%s: %s drawn %d×%d px, %d shapes", tc.dir, id, c.W, c.H, c.Shapes)
			}
		}
	}
	// The check itself: a script error and a missing chart are caught.
	bad := filepath.Join(t.TempDir(), "bad.html")
	os.WriteFile(bad, []byte(`<!DOCTYPE html><html><head></head><body><script>undefinedFunction();</script></body></html>`), 0o644)
	res, console := loadInChromium(t, chromium, bad)
	if len(res.Errors) == 0 && len(console) == 0 {
		t.Error("a page calling an undefined function logged no error")
	}
	if _, ok := res.Charts["gantt"]; ok {
		t.Error("a page without charts reported a Gantt chart")
	}
}
