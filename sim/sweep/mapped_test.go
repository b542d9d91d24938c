package sweep

import (
	"context"
	"reflect"
	"testing"

	"github.com/simtrain/simtrain/sim/simulation"
)

// Run's workers reserve their storage outside the Go heap
// (simulation.Reuse.ReserveMapped) and release it as they end: on every
// second point of the 1,000-point 70B layout sweep's first and middle
// stretches (dense layouts, shortened and resumed plays, points larger
// than others met before) and on 1 and 2 workers, every point's outcome
// and figures equal those of the same run with the storage reserved on
// the heap, and Run may be called again after its workers released.
func TestSweepRunMappedEqualsHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates a hundred points")
	}
	sw, err := Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	var idx []int
	for _, from := range []int{0, sw.Len() / 2} {
		for i := from; i < min(sw.Len(), from+100); i += 2 {
			idx = append(idx, i)
		}
	}
	figures := func(r *simulation.Result) []any {
		return []any{r.StepTimeS, r.StepP50S, r.StepP99S, r.Steps, r.TokensPerS, r.MFU, r.HFU, r.BubbleFraction, r.ComputeS,
			r.HostSyncS, r.HostBoundS, r.ExposedCommS, r.PeakMemBytes, r.MinPeakMemBytes, r.Fits, r.CostUSDPerStep,
			r.EnergyKWhPerStep, r.Events, r.PlayedTasks, r.Replicated}
	}
	collect := func(heap bool, workers int) map[int][]any {
		t.Helper()
		defer func(old bool) { reserveOnHeap = old }(reserveOnHeap)
		reserveOnHeap = heap
		out := map[int][]any{}
		err := sw.Run(context.Background(), idx, workers, func(pr PointResult) error {
			row := []any{pr.Outcome, pr.Err == nil}
			if pr.Result != nil {
				row = append(row, figures(pr.Result)...)
			}
			out[pr.Point.Index] = row
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	want := collect(true, 2)
	simulated := 0
	for _, r := range want {
		if r[0] == Simulated {
			simulated++
		}
	}
	if len(want) != len(idx) || simulated < len(idx)/4 {
		t.Fatalf("%d results, %d simulated, for %d points", len(want), simulated, len(idx))
	}
	for _, workers := range []int{2, 1, 2} {
		got := collect(false, workers)
		for _, i := range idx {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("%d workers, point %d: mapped %v, on the heap %v", workers, i, got[i], want[i])
			}
		}
	}
}
