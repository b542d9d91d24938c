// Command genvalidation regenerates scenarios/validation/ from the published
// training runs in scenarios/validation/published-runs.csv: one scenario file
// with an expect: block per row that states enough configuration to simulate,
// and SKIPPED.md listing the other rows with the reason.
//
//	go run ./tools/genvalidation            # from the repository root
//	go run ./tools/genvalidation -check     # fail if the files on disk differ
//
// The translation from a row to a scenario is deliberately explicit: every
// value the row does not state is an assumption written into the scenario's
// header comment and into expect.notes, so a reader can see what was
// assumed. Nothing here looks at the measured figure except to copy it into
// expect:.
package main

import (
	"bytes"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

func main() {
	in := flag.String("csv", "scenarios/validation/published-runs.csv", "the published-runs table")
	out := flag.String("out", "scenarios/validation", "directory to (re)generate")
	check := flag.Bool("check", false, "do not write; exit 1 if the generated files differ from those on disk")
	flag.Parse()
	if err := run(*in, *out, *check, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "genvalidation:", err)
		os.Exit(1)
	}
}

// generatedName matches the files this program owns in the output directory.
var generatedName = regexp.MustCompile(`^r[0-9]{3}-[A-Za-z0-9._-]+\.yaml$`)

func run(in, out string, check bool, log io.Writer) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	rows, err := readRows(f)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	files, skipped := generate(rows)
	nScenarios := len(files)
	files["SKIPPED.md"] = skippedMarkdown(len(rows), nScenarios, skipped)

	existing, err := os.ReadDir(out)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var stale []string
	for _, e := range existing {
		if generatedName.MatchString(e.Name()) {
			if _, ok := files[e.Name()]; !ok {
				stale = append(stale, e.Name())
			}
		}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	if check {
		var diff []string
		for _, n := range names {
			old, err := os.ReadFile(filepath.Join(out, n))
			if err != nil || !bytes.Equal(old, files[n]) {
				diff = append(diff, n)
			}
		}
		diff = append(diff, stale...)
		if len(diff) > 0 {
			return fmt.Errorf("%d generated files are out of date (run go run ./tools/genvalidation): %s", len(diff), strings.Join(diff, ", "))
		}
		fmt.Fprintf(log, "%d scenarios and SKIPPED.md are up to date\n", len(files)-1)
		return nil
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, n := range stale {
		if err := os.Remove(filepath.Join(out, n)); err != nil {
			return err
		}
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(out, n), files[n], 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(log, "wrote %d scenarios and SKIPPED.md (%d rows skipped) to %s\n", len(files)-1, len(skipped), out)
	return nil
}

// row is one CSV record by column name, plus its line number in the file
// (the header is line 1), which names the scenario.
type row struct {
	line int
	f    map[string]string
}

func (r row) get(k string) string { return strings.TrimSpace(r.f[k]) }

var columns = []string{"source", "model", "params_b", "layers", "hidden", "heads", "ffn", "vocab", "seq", "gpu",
	"n_gpus", "gpus_per_node", "tp", "pp", "dp", "cp", "ep", "sp", "zero_stage", "schedule", "interleave",
	"micro_batch", "global_batch", "recompute", "measured_metric", "measured_value", "notes"}

func readRows(r io.Reader) ([]row, error) {
	cr := csv.NewReader(r)
	recs, err := cr.ReadAll()
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, errors.New("empty file")
	}
	head := recs[0]
	if !slices.Equal(head, columns) {
		return nil, fmt.Errorf("unexpected header %v (want %v)", head, columns)
	}
	out := make([]row, 0, len(recs)-1)
	for i, rec := range recs[1:] {
		m := make(map[string]string, len(head))
		for j, k := range head {
			m[k] = rec[j]
		}
		out = append(out, row{line: i + 2, f: m})
	}
	return out, nil
}

// skip is a row left out, with the reason.
type skip struct {
	line          int
	model, source string
	reason        string
}

func generate(rows []row) (map[string][]byte, []skip) {
	files := map[string][]byte{}
	var skipped []skip
	for _, r := range rows {
		sc, reason := translate(r)
		if reason != "" {
			skipped = append(skipped, skip{r.line, r.get("model"), shortSource(r.get("source")), reason})
			continue
		}
		files[sc.name+".yaml"] = sc.yaml()
	}
	return files, skipped
}

func shortSource(s string) string {
	if i := strings.IndexAny(s, ";("); i > 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

func skippedMarkdown(rows, simulated int, sk []skip) []byte {
	var b bytes.Buffer
	b.WriteString("# Published runs not simulated\n\n")
	b.WriteString("Generated by `go run ./tools/genvalidation` from `published-runs.csv`; do not edit.\n")
	fmt.Fprintf(&b, "%d of %d rows are simulated (one scenario file each); the %d below are not, for the reason given.\n",
		simulated, rows, len(sk))
	b.WriteString("Line numbers are those of `published-runs.csv` (the header is line 1).\n\n")
	b.WriteString("| line | model | source | reason |\n|---:|---|---|---|\n")
	for _, s := range sk {
		fmt.Fprintf(&b, "| %d | %s | %s | %s |\n", s.line, s.model, s.source, s.reason)
	}
	return b.Bytes()
}
