package sweep

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/simtrain/simtrain/sim/simulation"
)

// threadCPU is the calling OS thread's CPU time (user + system).
func threadCPU() time.Duration {
	var ts syscall.Timespec
	_, _, _ = syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3 /* CLOCK_THREAD_CPUTIME_ID */, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

// TestSweepPlayedReport writes, for every simulated point of the 70B sweep
// (or of the sweep file SIMTRAIN_PLAYED_SWEEP names), what its plays were
// (shortened and replicated, shortened and failed then played whole,
// played whole straight), the tasks each played and the CPU time, beside
// the tasks and CPU time of its full play, as a table in the file
// SIMTRAIN_PLAYED_REPORT names (skipped without it): a diagnostic for
// issue 18, not a check.
func TestSweepPlayedReport(t *testing.T) {
	out := os.Getenv("SIMTRAIN_PLAYED_REPORT")
	if out == "" {
		t.Skip("SIMTRAIN_PLAYED_REPORT names the report file")
	}
	path := "../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml"
	if p := os.Getenv("SIMTRAIN_PLAYED_SWEEP"); p != "" {
		path = p
	}
	sw, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	reuse, whole := new(simulation.Reuse), new(simulation.Reuse)
	var b strings.Builder
	b.WriteString("point\tvalues\tpp\tm\tkind\tplays\treplicated\tplayed\tfailed\tfull_tasks\tcpu_ms\tfull_cpu_ms\trefusal\tresumed\n")
	var played, failed, resumed, fullTasks int
	for i := 0; i < sw.Len(); i++ {
		c0 := threadCPU()
		got, _ := sw.evaluate(context.Background(), i, reuse)
		c1 := threadCPU()
		if got.Outcome != Simulated {
			continue
		}
		r := got.Result
		// The full play, with its own Reuse (warm like the sweep's).
		sc := got.Point.Scenario
		c2 := threadCPU()
		full, err := simulation.Run(context.Background(), sc, simulation.Options{Reuse: whole, RunID: got.Point.RunID})
		c3 := threadCPU()
		if err != nil {
			t.Fatal(err)
		}
		kind := "full"
		switch {
		case r.Replicated > 0 && r.SteadyPlays == 1:
			kind = "short-ok"
		case r.Replicated > 0:
			kind = "failed+short-ok"
		case r.SteadyPlays > 0:
			kind = "failed+full"
		}
		m := sc.StepConfig(r.Layout).Microbatches
		fmt.Fprintf(&b, "%d\t%s\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%.3f\t%.3f\t%s\t%d\n", i, strings.Join(got.Point.Values, ","),
			r.Layout.PP, m, kind, r.SteadyPlays, r.Replicated, r.PlayedTasks, r.FailedTasks, full.PlayedTasks,
			float64(c1-c0)/1e6, float64(c3-c2)/1e6, r.SteadyRefusal, r.ResumedTasks)
		played += r.PlayedTasks
		failed += r.FailedTasks
		resumed += r.ResumedTasks
		fullTasks += full.PlayedTasks
	}
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("played %d tasks (%d in failed shortened plays, thrown away; %d taken over by the next play); full plays %d", played, failed, resumed, fullTasks)
}
