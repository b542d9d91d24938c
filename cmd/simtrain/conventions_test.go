package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/simtrain/simtrain/sim/output"
)

// TestUnknownFlagSuggestion: an unknown flag names the closest one the
// command has, or points at --help when none is close.
func TestUnknownFlagSuggestion(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "x.yaml", "--fromat", "json"}, "did you mean --format?"},
		{[]string{"best", "x", "--constrain", "fits"}, "did you mean --constraint?"},
		{[]string{"sweep", "x.yaml", "--wrkers", "2"}, "did you mean --workers?"},
		{[]string{"run", "x.yaml", "--zzzzzz"}, "see simtrain run --help"},
	} {
		_, _, err := runCLI(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// TestCountFlagsEverywhere: token and parameter counts take the same
// suffixes on every command (issue 21: `estimate train --tokens 2T`).
func TestCountFlagsEverywhere(t *testing.T) {
	a, _, err := runCLI(t, "estimate", "train", "--params", "70B", "--tokens", "2T", "--gpu", "h100-sxm", "--gpus", "1024", "--mfu", "0.5", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := runCLI(t, "estimate", "train", "--params", "70e9", "--tokens", "2e12", "--gpu", "h100-sxm", "--gpus", "1024", "--mfu", "0.5", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("2T/70B and 2e12/70e9 differ:\n%s\n%s", a, b)
	}
	if _, _, err := runCLI(t, "estimate", "train", "--params", "70B", "--tokens", "2X"); err == nil || !strings.Contains(err.Error(), "--tokens") {
		t.Errorf("a bad count should name --tokens: %v", err)
	}
}

// TestMergeOutDirectory: --out is a directory (summary.arrow, and
// summary.parquet with --parquet) that best reads like a sweep's; an
// --out naming a .arrow or .parquet file still writes that file.
func TestMergeOutDirectory(t *testing.T) {
	sweepDir := filepath.Join(t.TempDir(), "s")
	if _, _, err := runCLI(t, "sweep", writeSweep(t, smallSweep), "--out", sweepDir, "--quiet", "--format", "json"); err != nil {
		t.Fatal(err)
	}
	merged := filepath.Join(t.TempDir(), "m")
	out, _, err := runCLI(t, "merge", sweepDir, "--out", merged, "--parquet", "--format", "json")
	if err != nil || !strings.Contains(out, `"rows":`) {
		t.Fatalf("%v %q", err, out)
	}
	for _, f := range []string{"summary.arrow", "summary.parquet"} {
		if _, err := os.Stat(filepath.Join(merged, f)); err != nil {
			t.Error(err)
		}
	}
	if _, _, err := runCLI(t, "best", merged, "--no-svg"); err != nil {
		t.Errorf("best on the merged directory: %v", err)
	}
	one := filepath.Join(t.TempDir(), "all.parquet")
	if _, _, err := runCLI(t, "merge", sweepDir, "--out", one); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(one); err != nil {
		t.Error(err)
	}
	if _, _, err := runCLI(t, "merge", sweepDir, "--out", one, "--parquet"); err == nil {
		t.Error("--parquet with a file --out should be refused")
	}
}

// TestFormatFlagEverywhere: every command that does work takes --format
// table|json (issue 21), and its --out, where it has one, is documented as
// a directory.
func TestFormatFlagEverywhere(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c.HasSubCommands() || !c.Runnable() || c.Name() == "help" || c.Parent() == nil || c.Parent().Name() == "completion" || c.Name() == "completion" {
			return
		}
		if c.Flags().Lookup("format") == nil && c.InheritedFlags().Lookup("format") == nil {
			t.Errorf("%s has no --format", c.CommandPath())
		}
		if f := c.Flags().Lookup("out"); f != nil && !strings.Contains(f.Usage, "director") {
			t.Errorf("%s --out: %q does not say it is a directory", c.CommandPath(), f.Usage)
		}
	}
	walk(newRootCmd())
	out, _, err := runCLI(t, "version", "--format", "json")
	if err != nil || !strings.Contains(out, `"schema_version":"`+output.SchemaVersion+`"`) {
		t.Errorf("version --format json: %v %q", err, out)
	}
}
