// Package genfiles keeps a directory of generated files in step with what a
// generator produced, for the scenario generators under tools/.
package genfiles

import (
	"bytes"
	"errors"
	"fmt"
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
		if err := os.WriteFile(filepath.Join(dir, n), files[n], 0o644); err != nil {
			return err
		}
	}
	return nil
}
