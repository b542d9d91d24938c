// Package genfiles keeps a directory of generated files in step with what a
// generator produced, for the scenario generators under tools/.
package genfiles

import (
	"bytes"
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

// Sync makes dir hold files: it writes every one of them and removes the
// files whose names owned matches that files does not hold (stale output),
// touching nothing else. With check it changes nothing and fails, naming
// every file that differs, is missing or is stale, with the command that
// regenerates them (go run ./tools/<tool>). Files are handled in name
// order.
func Sync(dir string, files map[string][]byte, owned *regexp.Regexp, check bool, tool string) error {
	existing, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var stale []string
	for _, e := range existing {
		if owned.MatchString(e.Name()) {
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
			old, err := os.ReadFile(filepath.Join(dir, n))
			if err != nil || !bytes.Equal(old, files[n]) {
				diff = append(diff, n)
			}
		}
		diff = append(diff, stale...)
		if len(diff) > 0 {
			return fmt.Errorf("%d generated files are out of date (run go run ./tools/%s): %s", len(diff), tool, strings.Join(diff, ", "))
		}
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, n := range stale {
		if err := os.Remove(filepath.Join(dir, n)); err != nil {
			return err
		}
	}
	for _, n := range names {
		if err := writeAtomic(filepath.Join(dir, n), files[n]); err != nil {
			return err
		}
	}
	return nil
}

// writeAtomic writes data to a temporary file next to path and renames it
// over path, so that an interrupted run never leaves a half-written file.
func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// Generator turns the rows of a CSV file into the generated files (by file
// name, SKIPPED.md included) and says how many scenarios and skipped rows
// they hold.
type Generator func(csv io.Reader) (files map[string][]byte, scenarios, skipped int, err error)

// FromRows builds a Generator from a generator's three steps: read parses
// the CSV into rows, gen makes the scenario files and the skipped rows, and
// skipped renders SKIPPED.md from the row count, the scenario count and the
// skipped rows; SKIPPED.md joins the files.
func FromRows[R, S any](read func(io.Reader) ([]R, error), gen func([]R) (map[string][]byte, []S, error),
	skipped func(rows, scenarios int, sk []S) []byte) Generator {
	return func(csv io.Reader) (map[string][]byte, int, int, error) {
		rows, err := read(csv)
		if err != nil {
			return nil, 0, 0, err
		}
		files, sk, err := gen(rows)
		if err != nil {
			return nil, 0, 0, err
		}
		n := len(files)
		files["SKIPPED.md"] = skipped(len(rows), n, sk)
		return files, n, len(sk), nil
	}
}

// Run generates from the CSV file in and syncs directory out with the result
// (Sync, with owned and check), then reports on log what it wrote or that
// everything is up to date. Errors reading in name the file.
func Run(tool, in, out string, check bool, log io.Writer, owned *regexp.Regexp, gen Generator) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	files, scenarios, skipped, err := gen(f)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if err := Sync(out, files, owned, check, tool); err != nil {
		return err
	}
	if check {
		fmt.Fprintf(log, "%d scenarios and SKIPPED.md are up to date\n", scenarios)
		return nil
	}
	fmt.Fprintf(log, "wrote %d scenarios and SKIPPED.md (%d rows skipped) to %s\n", scenarios, skipped, out)
	return nil
}

// Main is a generator's command line: -csv (default csvPath), -out
// (default outDir) and -check; it exits 2 on a usage error and 1 when Run
// fails.
func Main(tool, csvPath, outDir, csvHelp string, owned *regexp.Regexp, gen Generator) {
	in := flag.String("csv", csvPath, csvHelp)
	out := flag.String("out", outDir, "directory to (re)generate")
	check := flag.Bool("check", false, "do not write; exit 1 if the generated files differ from those on disk")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "%s: unexpected argument %q (flags: -csv, -out, -check)\n", tool, flag.Arg(0))
		os.Exit(2)
	}
	if err := Run(tool, *in, *out, *check, os.Stdout, owned, gen); err != nil {
		fmt.Fprintln(os.Stderr, tool+":", err)
		os.Exit(1)
	}
}
