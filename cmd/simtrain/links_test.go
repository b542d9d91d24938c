package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/output"
	"github.com/simtrain/simtrain/sim/report"
)

// quickLinks is quickstart.yaml's directed link count, read from the
// links.arrow a full run writes.
func quickLinks(t *testing.T) int {
	t.Helper()
	dir := t.TempDir()
	if _, _, err := runCLI(t, "run", "../../scenarios/quickstart.yaml", "--out", dir, "--no-timeline", "--links", "full"); err != nil {
		t.Fatal(err)
	}
	var rows []output.LinkRow
	if _, err := output.ReadTable(filepath.Join(dir, "quickstart-llama3-8b-fsdp", "links.arrow"), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) < 2 {
		t.Fatalf("quickstart has %d links", len(rows))
	}
	return len(rows)
}

// TestRunLinksPolicy: links.arrow under --links and sim.links on either
// side of auto's bound (lowered to quickstart's link count): auto writes it
// at the bound and skips it one link above, saying why on stderr and in
// the JSON line; full writes it above the bound, byte-identical to auto's
// file; off never writes it and prints nothing on stderr; the flag wins
// over --set sim.links. Every other file is the same in all cases, and
// --parquet and --report work without links.arrow.
func TestRunLinksPolicy(t *testing.T) {
	n := quickLinks(t)
	old := report.AutoLinksMax
	t.Cleanup(func() { report.AutoLinksMax = old })
	const name = "quickstart-llama3-8b-fsdp"
	skipped := fmt.Sprintf("%s links > %s; --links full writes one row per link", groupInt(n), groupInt(n-1))
	for _, c := range []struct {
		label  string
		max    int // report.AutoLinksMax
		args   []string
		links  bool   // links.arrow written
		reason string // links_not_written in the JSON line; "" when absent
		stderr bool   // the "links.arrow not written" line on stderr
	}{
		{"auto at the bound", n, nil, true, "", false},
		{"explicit auto at the bound", n, []string{"--links", "auto"}, true, "", false},
		{"auto above the bound", n - 1, nil, false, skipped, true},
		{"sim.links auto above the bound", n - 1, []string{"--set", "sim.links=auto"}, false, skipped, true},
		{"full above the bound", n - 1, []string{"--links", "full"}, true, "", false},
		{"sim.links full above the bound", n - 1, []string{"--set", "sim.links=full"}, true, "", false},
		{"off below the bound", n, []string{"--links", "off"}, false, "sim.links is off; --links full writes one row per link", false},
		{"sim.links off", n, []string{"--set", "sim.links=off"}, false, "sim.links is off; --links full writes one row per link", false},
		{"the flag wins over --set", n - 1, []string{"--set", "sim.links=off", "--links", "full"}, true, "", false},
		{"parquet and report without links.arrow", n - 1, []string{"--parquet", "--report"}, false, skipped, true},
	} {
		t.Run(c.label, func(t *testing.T) {
			report.AutoLinksMax = c.max
			dir := t.TempDir()
			args := append([]string{"run", "../../scenarios/quickstart.yaml", "--out", dir, "--format", "json"}, c.args...)
			out, errOut, err := runCLI(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(out), &m); err != nil {
				t.Fatalf("not one JSON object: %v\n%s", err, out)
			}
			got, has := m["links_not_written"]
			if c.reason == "" && has || c.reason != "" && got != c.reason {
				t.Errorf("links_not_written = %v (present %v), want %q", got, has, c.reason)
			}
			note := "simtrain: ../../scenarios/quickstart.yaml: links.arrow not written: " + skipped + "\n"
			if strings.Contains(errOut, note) != c.stderr || strings.Contains(errOut, "links.arrow") && !c.stderr {
				t.Errorf("stderr %q: want the note %v", errOut, c.stderr)
			}
			d := filepath.Join(dir, name)
			_, err = os.Stat(filepath.Join(d, "links.arrow"))
			if (err == nil) != c.links {
				t.Errorf("links.arrow written %v, want %v", err == nil, c.links)
			}
			for _, f := range []string{"summary.arrow", "memory.arrow", "timeline.arrow", "trace.json"} {
				if _, err := os.Stat(filepath.Join(d, f)); err != nil {
					t.Error(err)
				}
			}
			if strings.Contains(strings.Join(c.args, " "), "--report") {
				if _, err := os.Stat(filepath.Join(d, "links.parquet")); err == nil {
					t.Error("links.parquet written without links.arrow")
				}
				html, err := os.ReadFile(filepath.Join(d, "report.html"))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Contains(html, []byte("This run wrote no links.arrow")) {
					t.Error("report.html does not say links.arrow is missing")
				}
			}
		})
	}
}

// TestRunLinksFullIsAutosFile: --links full above the bound writes the
// file auto writes below it, byte for byte.
func TestRunLinksFullIsAutosFile(t *testing.T) {
	n := quickLinks(t)
	old := report.AutoLinksMax
	t.Cleanup(func() { report.AutoLinksMax = old })
	var files [2][]byte
	for i, c := range []struct {
		max  int
		args []string
	}{{n, nil}, {1, []string{"--links", "full"}}} {
		report.AutoLinksMax = c.max
		dir := t.TempDir()
		if _, _, err := runCLI(t, append([]string{"run", "../../scenarios/quickstart.yaml", "--out", dir, "--no-timeline"}, c.args...)...); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "quickstart-llama3-8b-fsdp", "links.arrow"))
		if err != nil {
			t.Fatal(err)
		}
		files[i] = b
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Errorf("links.arrow of --links full (%d bytes) differs from auto's (%d bytes)", len(files[1]), len(files[0]))
	}
}

// TestRunLinksBadValue: a bad --links or sim.links is one line of bad input
// naming the flag (or field) and the choices, and writes nothing.
func TestRunLinksBadValue(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--links", "some"}, `--links: unknown value "some" (valid: auto, full, off)`},
		{[]string{"--links", "FULL"}, `--links: unknown value "FULL" (valid: auto, full, off)`},
		{[]string{"--set", "sim.links=all"}, `sim.links: unknown value "all" (valid: auto, full, off)`},
	} {
		_, _, err := runCLI(t, append([]string{"run", "../../scenarios/quickstart.yaml", "--out", dir}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") || exitCode(err) != exitBadInput {
			t.Errorf("%v: got %v (exit %d), want one line of bad input containing %q", c.args, err, exitCode(err), c.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("bad input wrote %d entries", len(entries))
	}
}

// groupInt writes n with thousands separators, as the note does.
func groupInt(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
