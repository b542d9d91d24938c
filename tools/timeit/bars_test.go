//go:build unix

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestReportFeedsBars holds timeit's line for one binary to what
// tools/bars.sh reads from it: the script takes the CPU, wall and RSS
// medians with these patterns (its timed function), so a change to the
// line's wording that the script does not follow fails here, not in a
// measurement a person runs later.
func TestReportFeedsBars(t *testing.T) {
	ms := time.Millisecond
	got := [][]sample{{
		{user: 300 * ms, sys: 40 * ms, wall: 190 * ms, maxRSS: 70e6},
		{user: 320 * ms, sys: 30 * ms, wall: 200 * ms, maxRSS: 69e6},
		{user: 400 * ms, sys: 50 * ms, wall: 250 * ms, maxRSS: 71e6},
	}}
	var b bytes.Buffer
	report(&b, []string{"/tmp/simtrain"}, got)
	line := strings.TrimSpace(b.String())
	script, err := os.ReadFile("../bars.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ pattern, want string }{
		{`CPU median ([0-9.]+) s`, "0.350"},
		{`wall median ([0-9.]+) s`, "0.200"},
		{`max RSS ([0-9]+) MB`, "70"},
	} {
		if !bytes.Contains(script, []byte(c.pattern)) {
			t.Errorf("bars.sh does not read %q", c.pattern)
		}
		m := regexp.MustCompile(c.pattern).FindStringSubmatch(line)
		if m == nil || m[1] != c.want {
			t.Errorf("%q in %q: got %v, want %s", c.pattern, line, m, c.want)
		}
	}
}

// TestBarsUsage: a bad argument to tools/bars.sh is refused before it
// builds or times anything, with exit status 2 and one line that names
// the argument and the valid ones.
func TestBarsUsage(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--runs", "x"}, "--runs x is not a positive count"},
		{[]string{"--runs", "0"}, "--runs 0 is not a positive count"},
		{[]string{"--fast"}, "unknown argument --fast (valid: --runs N, --bin PATH, --cold)"},
		{[]string{"--bin", "/nonexistent/simtrain"}, "--bin /nonexistent/simtrain is not an executable file"},
	} {
		cmd := exec.Command("bash", append([]string{"../bars.sh"}, c.args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Errorf("bars.sh %v: %v, want exit status 2", c.args, err)
		}
		msg := stderr.String()
		if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, c.want) {
			t.Errorf("bars.sh %v said %q, want one line with %q", c.args, msg, c.want)
		}
	}
}
