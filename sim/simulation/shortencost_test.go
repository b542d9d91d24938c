package simulation

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/scenario"
)

// threadCPU is the calling OS thread's CPU time (user + system).
func threadCPU() time.Duration {
	var ts syscall.Timespec
	_, _, _ = syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3 /* CLOCK_THREAD_CPUTIME_ID */, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

// TestShortenChoiceCosts writes, for every bundled and validation scenario
// that PlanSteady accepts (TestSteadyMatchesFull's set less holdout), the
// least thread CPU time of 3 runs as a sweep worker runs them, always
// trying a shortened play and with worthShortening's choice, to the file
// SIMTRAIN_SHORTEN_COSTS names (skipped without it): a diagnostic for
// issue 18.
func TestShortenChoiceCosts(t *testing.T) {
	out := os.Getenv("SIMTRAIN_SHORTEN_COSTS")
	if out == "" {
		t.Skip("SIMTRAIN_SHORTEN_COSTS names the output file")
	}
	files, _ := filepath.Glob("../../scenarios/*.yaml")
	m, _ := filepath.Glob("../../scenarios/validation/*.yaml")
	files = append(files, m...)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	reuse := new(Reuse)
	var b strings.Builder
	b.WriteString("scenario\tplayed\tm\ttry\tplays\treplicated\talways_us\tchosen_us\n")
	for _, f := range files {
		s, err := scenario.Load(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if s.GPUs() > 4096 {
			continue
		}
		layout, err := s.NewLayout()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		cfg := s.StepConfig(layout)
		st, ok := parallel.PlanSteady(cfg, steadyMargin)
		if !ok {
			continue
		}
		best := [2]time.Duration{1 << 62, 1 << 62}
		var r *Result
		for k := 0; k <= 3; k++ {
			for j, always := range []bool{true, false} {
				c0 := threadCPU()
				res, err := Run(context.Background(), s, Options{FiguresOnly: true, Reuse: reuse, alwaysShorten: always})
				c := threadCPU() - c0
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				if always {
					r = res
				}
				if k > 0 {
					best[j] = min(best[j], c)
				}
			}
		}
		fmt.Fprintf(&b, "%s\t%d\t%d\t%v\t%d\t%d\t%d\t%d\n", filepath.Base(f), st.Played, cfg.Microbatches,
			worthShortening(st.Played, cfg.Microbatches), r.SteadyPlays, r.Replicated, best[0].Microseconds(), best[1].Microseconds())
	}
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
