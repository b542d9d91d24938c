//go:build unix

// Command timeit times a command the way the README's performance figures
// are measured: N runs, each one's CPU time (user + system, from the
// kernel's accounting of the finished child, wait4) and wall time, with the
// medians, and, given a second binary, the two run alternately with their
// paired differences. CPU time is the figure to compare on a shared machine:
// other processes lengthen the wall time, much less the CPU time.
//
//	go build -o /tmp/simtrain ./cmd/simtrain
//	go run ./tools/timeit -n 12 -sleep 6s -- /tmp/simtrain sweep scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml --quiet --out {out}
//	go run ./tools/timeit -n 16 -vs /tmp/simtrain-main -- /tmp/simtrain run scenarios/llama3-405b-16k-h100.yaml --quiet --out {out}
//
// {out} in an argument becomes a fresh, empty directory for each run,
// removed after it, so that every run writes its files anew. -sleep idles
// before each run: on the project's machine (a virtual machine whose host
// takes back memory the guest leaves free for about 2 s) a command started
// after an idle spell pays for its first touches of memory, and the README
// gives both figures. Copy a freshly built binary (cp) before timing it: on
// that machine a binary as the linker wrote it starts ≈ 2–3 ms slower than
// a copy of it (issue 18, docs/design.md).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "timeit:", err)
		}
		os.Exit(2)
	}
}

// options are the command line's settings.
type options struct {
	runs  int
	sleep time.Duration
	vs    string   // a second binary run with the same arguments, or ""
	show  bool     // pass the commands' output through
	cmd   []string // the command and its arguments
}

// sample is what one run cost.
type sample struct {
	user, sys, wall time.Duration
	maxRSS          int64 // bytes
	minorFaults     int64
}

func (s sample) cpu() time.Duration { return s.user + s.sys }

func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("timeit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.runs, "n", 10, "runs of each command")
	fs.DurationVar(&o.sleep, "sleep", 0, "idle before each run (e.g. 6s, the README's \"after an idle spell\" figures)")
	fs.StringVar(&o.vs, "vs", "", "a second binary, run with the same arguments, alternating with the first")
	fs.BoolVar(&o.show, "show", false, "pass the commands' standard output and error through")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: timeit [-n N] [-sleep D] [-vs BIN] [-show] -- COMMAND [ARG...]")
		fmt.Fprintln(stderr, "example: timeit -n 12 -sleep 6s -- ./simtrain sweep scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml --quiet --out {out}")
		fmt.Fprintln(stderr, "{out} in an argument becomes a fresh empty directory for each run")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.cmd = fs.Args()
	switch {
	case len(o.cmd) == 0:
		return o, errors.New("no command to time: give it after the flags, e.g. timeit -n 10 -- ./simtrain version")
	case o.runs < 1:
		return o, fmt.Errorf("-n %d: the runs must be at least 1", o.runs)
	case o.sleep < 0:
		return o, fmt.Errorf("-sleep %v: the idle time must not be negative", o.sleep)
	}
	return o, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	bins := []string{o.cmd[0]}
	if o.vs != "" {
		bins = append(bins, o.vs)
	}
	got := make([][]sample, len(bins))
	for r := range o.runs {
		for k := range bins {
			i := k
			if r%2 == 1 { // alternate the order, so neither binary always runs first
				i = len(bins) - 1 - k
			}
			if o.sleep > 0 {
				time.Sleep(o.sleep)
			}
			s, err := once(bins[i], o.cmd[1:], o.show)
			if err != nil {
				return err
			}
			got[i] = append(got[i], s)
		}
	}
	report(stdout, bins, got)
	return nil
}

// once runs bin with args ({out} replaced by a fresh directory) and returns
// what it cost; an error if it could not start or did not exit 0.
func once(bin string, args []string, show bool) (sample, error) {
	dir := ""
	argv := slices.Clone(args)
	for i, a := range argv {
		if strings.Contains(a, "{out}") {
			if dir == "" {
				d, err := os.MkdirTemp("", "timeit-")
				if err != nil {
					return sample{}, err
				}
				dir = d
				defer os.RemoveAll(dir)
			}
			argv[i] = strings.ReplaceAll(a, "{out}", dir)
		}
	}
	c := exec.Command(bin, argv...)
	if show {
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
	}
	t0 := time.Now()
	err := c.Run()
	wall := time.Since(t0)
	if err != nil {
		return sample{}, fmt.Errorf("%s: %w", strings.Join(append([]string{bin}, argv...), " "), err)
	}
	s := sample{wall: wall, user: c.ProcessState.UserTime(), sys: c.ProcessState.SystemTime()}
	if ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.maxRSS = maxRSSBytes(ru.Maxrss)
		s.minorFaults = ru.Minflt
	}
	return s, nil
}

// report prints each binary's medians and, with two, the second's paired
// differences from the first (mean ± 1.96 standard errors).
func report(w io.Writer, bins []string, got [][]sample) {
	for i, b := range bins {
		s := got[i]
		pick := func(f func(sample) float64) []float64 {
			v := make([]float64, len(s))
			for j := range s {
				v[j] = f(s[j])
			}
			return v
		}
		cpu := pick(func(x sample) float64 { return x.cpu().Seconds() })
		wall := pick(func(x sample) float64 { return x.wall.Seconds() })
		runs := "runs"
		if len(s) == 1 {
			runs = "run"
		}
		fmt.Fprintf(w, "%s: %d %s: CPU median %.3f s (min %.3f; user %.3f, sys %.3f), wall median %.3f s (min %.3f), max RSS %.0f MB, minor faults %.0f\n",
			b, len(s), runs, median(cpu), slices.Min(cpu),
			median(pick(func(x sample) float64 { return x.user.Seconds() })),
			median(pick(func(x sample) float64 { return x.sys.Seconds() })),
			median(wall), slices.Min(wall),
			median(pick(func(x sample) float64 { return float64(x.maxRSS) / 1e6 })),
			median(pick(func(x sample) float64 { return float64(x.minorFaults) })))
	}
	if len(bins) == 2 {
		for _, m := range []struct {
			name string
			f    func(sample) time.Duration
		}{{"CPU", sample.cpu}, {"wall", func(x sample) time.Duration { return x.wall }}} {
			d := make([]float64, len(got[0]))
			for j := range d {
				d[j] = (m.f(got[1][j]) - m.f(got[0][j])).Seconds() * 1000
			}
			mean, half := meanCI(d)
			fmt.Fprintf(w, "%s − %s, %s: %+.1f ± %.1f ms (paired, 95%%)\n", bins[1], bins[0], m.name, mean, half)
		}
	}
}

// median of v (v is reordered).
func median(v []float64) float64 {
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// meanCI is v's mean and the half width of its normal 95% interval
// (1.96 standard errors; 0 for a single value).
func meanCI(v []float64) (mean, half float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	if len(v) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return mean, 1.96 * math.Sqrt(ss/float64(len(v)-1)/float64(len(v)))
}

// maxRSSBytes converts rusage's ru_maxrss to bytes: kilobytes on Linux and
// the BSDs, bytes on macOS (getrusage(2) of each).
func maxRSSBytes(v int64) int64 {
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return v
	}
	return v * 1024
}
