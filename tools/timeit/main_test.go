//go:build unix

package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for the timed command: with
// TIMEIT_HELPER set it burns CPU, records the {out} directory it was given
// and whether that was empty, and exits with TIMEIT_HELPER_EXIT.
func TestMain(m *testing.M) {
	if os.Getenv("TIMEIT_HELPER") == "" {
		os.Exit(m.Run())
	}
	t0 := time.Now()
	x := 1.0
	for time.Since(t0) < 20*time.Millisecond {
		x = math.Sqrt(x + 1)
	}
	if log := os.Getenv("TIMEIT_HELPER_LOG"); log != "" && len(os.Args) > 1 {
		dir := os.Args[len(os.Args)-1]
		entries, err := os.ReadDir(dir)
		state := "empty"
		if err != nil || len(entries) > 0 {
			state = "not-empty"
		}
		os.WriteFile(filepath.Join(dir, "written"), []byte("x"), 0o644)
		f, _ := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		f.WriteString(dir + " " + state + " " + os.Args[0] + "\n")
		f.Close()
	}
	if os.Getenv("TIMEIT_HELPER_EXIT") == "3" {
		os.Exit(3)
	}
	if x < 0 {
		os.Exit(9)
	}
	os.Exit(0)
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no command to time"},
		{[]string{"-n", "0", "--", "x"}, "-n 0: the runs must be at least 1"},
		{[]string{"-sleep", "-1s", "--", "x"}, "-sleep -1s: the idle time must not be negative"},
		{[]string{"-n", "many", "--", "x"}, `invalid value "many" for flag -n`},
		{[]string{"-frobnicate", "--", "x"}, "flag provided but not defined: -frobnicate"},
	} {
		_, err := parse(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parse(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
	if _, err := parse([]string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("parse(-h) = %v, want flag.ErrHelp", err)
	}
	o, err := parse([]string{"-n", "3", "-sleep", "2s", "-vs", "b", "--", "a", "x", "{out}"}, io.Discard)
	if err != nil || o.runs != 3 || o.sleep != 2*time.Second || o.vs != "b" || strings.Join(o.cmd, " ") != "a x {out}" {
		t.Errorf("parse = %+v, %v", o, err)
	}
}

func TestMedianAndInterval(t *testing.T) {
	for _, tc := range []struct {
		v    []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := median(append([]float64(nil), tc.v...)); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.v, got, tc.want)
		}
	}
	// mean 2, sample variance ((1)+(0)+(1))/2 = 1, standard error 1/√3
	mean, half := meanCI([]float64{1, 2, 3})
	if mean != 2 || math.Abs(half-1.96/math.Sqrt(3)) > 1e-12 {
		t.Errorf("meanCI = %v ± %v, want 2 ± %v", mean, half, 1.96/math.Sqrt(3))
	}
	if _, half := meanCI([]float64{7}); half != 0 {
		t.Errorf("meanCI of one value: half width %v, want 0", half)
	}
}

// TestRunTimesAndAlternates times the test binary itself against a copy of
// it: every run gets its own empty {out} directory, removed afterwards, and
// the report gives both binaries' medians and the paired differences.
func TestRunTimesAndAlternates(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "copy")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, b, 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "log")
	t.Setenv("TIMEIT_HELPER", "1")
	t.Setenv("TIMEIT_HELPER_LOG", log)
	var out bytes.Buffer
	if err := run([]string{"-n", "3", "-vs", other, "--", self, "{out}"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	lines, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var order []string
	for _, l := range strings.Split(strings.TrimSpace(string(lines)), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			t.Fatalf("helper log line %q", l)
		}
		dir, state := f[0], f[1]
		order = append(order, f[2])
		if state != "empty" || seen[dir] {
			t.Errorf("run given %s (%s): every run must get a fresh empty directory", dir, state)
		}
		seen[dir] = true
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s left behind after its run", dir)
		}
	}
	if len(seen) != 6 {
		t.Errorf("%d runs, want 6 (3 of each binary)", len(seen))
	}
	// each round's order reversed from the last's
	if want := []string{self, other, other, self, self, other}; !slices.Equal(order, want) {
		t.Errorf("runs in the order %q, want %q", order, want)
	}
	report := out.String()
	for _, re := range []string{
		regexp.QuoteMeta(self) + `: 3 runs: CPU median \d+\.\d{3} s`,
		regexp.QuoteMeta(other) + `: 3 runs: CPU median`,
		`CPU: [+-]\d+\.\d ± \d+\.\d ms \(paired, 95%\)`,
		`wall: [+-]\d+\.\d ± \d+\.\d ms`,
	} {
		if !regexp.MustCompile(re).MatchString(report) {
			t.Errorf("report does not match %q:\n%s", re, report)
		}
	}
}

func TestRunFailingCommand(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TIMEIT_HELPER", "1")
	t.Setenv("TIMEIT_HELPER_EXIT", "3")
	err = run([]string{"-n", "2", "--", self, "arg"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "arg") {
		t.Errorf("run of a failing command = %v, want its command line and exit status", err)
	}
}
