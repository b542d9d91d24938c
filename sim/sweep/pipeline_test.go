package sweep

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestPipelinedLoadEqualsSequential: enumerate resolves a batch while it
// builds the next and records the one before; the points must be those
// of resolving every combination at once (one batch: nothing pipelined),
// whatever the batch size and the CPUs: count, duplicates and the first
// duplicate's description, run ids, validity, values and names in order,
// and the plans loading kept for the first points (present for the same
// points, with the same run ids). The sweeps: both bundled ones and an
// inline one with invalid points, a GPU that differs from the base's, a
// YAML-only value (a list field) and duplicates (dp 0 derives dp 2), so
// that a batch boundary falls between a point and its duplicate. Batch
// sizes 1, 2 and 7 put many batches in flight, 256 is the command's.
func TestPipelinedLoadEqualsSequential(t *testing.T) {
	files, _ := filepath.Glob("../../scenarios/sweeps/*.yaml")
	if len(files) == 0 {
		t.Fatal("no bundled sweeps")
	}
	inline := filepath.Join(t.TempDir(), "inline.yaml")
	body := sweepBase + "sweep:\n  parallel.dp: [0, 2]\n  parallel.tp: [1, 2, 3, 8]\n  training.micro_batch: [1, 2]\n" +
		"  cluster.gpu: [h100-sxm, a100-80gb]\n  training.recompute_modules: [[], [core_attn]]\n"
	if err := os.WriteFile(inline, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	files = append(files, inline)
	defer func(n, keep int) { pointBatch, retainPlans = n, keep }(pointBatch, retainPlans)
	for _, f := range files {
		pointBatch = 1 << 30
		ref, err := Load(f, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if f == inline && ref.Duplicates == 0 {
			t.Fatalf("%s: no duplicates to check", f)
		}
		for _, n := range []int{1, 2, 7, 256} {
			for _, procs := range []int{runtime.GOMAXPROCS(0), 1} {
				if f != inline && n < 7 && procs == 1 {
					continue // the bundled sweeps' thousand batches once is enough
				}
				pointBatch = n
				prev := runtime.GOMAXPROCS(procs)
				sw, err := Load(f, Options{})
				runtime.GOMAXPROCS(prev)
				if err != nil {
					t.Fatal(err)
				}
				if d := diffSweeps(ref, sw); d != "" {
					t.Errorf("%s, batches of %d on %d CPUs: %s", f, n, procs, d)
				}
			}
		}
	}
}

// diffSweeps describes the first difference between the points of a and
// b, "" when there is none.
func diffSweeps(a, b *Sweep) string {
	if a.Len() != b.Len() || a.Duplicates != b.Duplicates || a.DuplicateExample != b.DuplicateExample {
		return fmt.Sprintf("%d points, %d duplicates (%s); want %d, %d (%s)", b.Len(), b.Duplicates, b.DuplicateExample, a.Len(), a.Duplicates, a.DuplicateExample)
	}
	if len(a.plans) != len(b.plans) {
		return fmt.Sprintf("%d plans kept, want %d", len(b.plans), len(a.plans))
	}
	for i := 0; i < a.Len(); i++ {
		if a.RunID(i) != b.RunID(i) || a.points[i].err != b.points[i].err || a.describe(a.points[i].vals) != b.describe(b.points[i].vals) || a.PointName(i) != b.PointName(i) {
			return fmt.Sprintf("point %d: %s %s %q, want %s %s %q", i, b.PointName(i), b.RunID(i), b.points[i].err, a.PointName(i), a.RunID(i), a.points[i].err)
		}
		if i < len(a.plans) {
			x, y := a.plans[i].Load(), b.plans[i].Load()
			if (x == nil) != (y == nil) || (x != nil && x.RunID() != y.RunID()) {
				return fmt.Sprintf("point %d: the plan kept differs", i)
			}
		}
	}
	return ""
}

// countdownCtx is a context whose Err turns to Canceled on its n-th call.
type countdownCtx struct {
	context.Context
	n int
}

func (c *countdownCtx) Err() error {
	if c.n--; c.n <= 0 {
		return context.Canceled
	}
	return nil
}

// TestPipelinedLoadCancelled: a load cancelled while a batch is being
// resolved returns the context's error and leaves no resolver running
// (enumerate waits for the batch in flight before it returns; under
// -race a resolver still writing its batch would be reported), for a
// cancellation on each of the first checks, batches of 1 and 3.
func TestPipelinedLoadCancelled(t *testing.T) {
	defer func(n int) { pointBatch = n }(pointBatch)
	body := sweepBase + "sweep:\n  parallel.tp: [1, 2, 4, 8]\n  training.micro_batch: [1, 2, 3]\n"
	for _, n := range []int{1, 3} {
		pointBatch = n
		for calls := 1; calls <= 6; calls++ {
			ctx := &countdownCtx{Context: context.Background(), n: calls}
			if _, err := Parse([]byte(body), "", Options{Context: ctx}); !errors.Is(err, context.Canceled) {
				t.Errorf("batches of %d, cancelled at check %d: %v", n, calls, err)
			}
		}
	}
}
