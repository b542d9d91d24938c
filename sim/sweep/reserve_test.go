package sweep

import (
	"slices"
	"sync"
	"testing"

	"github.com/simtrain/simtrain/sim/simulation"
)

// largestWork is the largest EstimateWork program of the given points,
// invalid points left out: checked against each point resolved on its own
// (Point), over a whole sweep and over one worker's part, on the 70B sweep
// (plans kept) and the 8B sweep (an auto field: no plans kept, so before
// the estimate was kept per point its workers reserved nothing), and still
// after Point has taken the plans (a second Run over the same points).
func TestLargestWork(t *testing.T) {
	for _, file := range []string{"llama3-70b-1024-h100-layouts.yaml", "llama3-8b-gpu-types.yaml"} {
		t.Run(file, func(t *testing.T) {
			sw, err := Load("../../scenarios/sweeps/"+file, Options{})
			if err != nil {
				t.Fatal(err)
			}
			idx := sw.ShardIndices(0, 1)
			sh := newShares(idx, make([]uint64, len(idx)), nil, 2)
			all, part := sw.largestWork(idx), sw.largestWork(sh.part(1))
			if len(sh.part(1)) != len(idx)-len(idx)/2 {
				t.Fatalf("part 1 holds %d points of %d", len(sh.part(1)), len(idx))
			}
			var want, wantPart int64
			valid := 0
			for k, i := range idx {
				p := sw.Point(i)
				if p.Err != nil {
					continue
				}
				valid++
				w := simulation.EstimateWork(p.Scenario, simulation.Options{}).ProgramTasks
				if w <= 0 {
					t.Fatalf("point %d: estimate %d", i, w)
				}
				want = max(want, w)
				if k >= len(idx)/2 {
					wantPart = max(wantPart, w)
				}
			}
			if valid == 0 || want == 0 {
				t.Fatal("no valid point")
			}
			if all != want || part != wantPart {
				t.Fatalf("largestWork: all %d part %d, want %d %d", all, part, want, wantPart)
			}
			if got := sw.largestWork(idx); got != want {
				t.Fatalf("largestWork after Point took the plans: %d, want %d", got, want)
			}
		})
	}
}

// largest.of returns, to every worker, the largest of all workers'
// estimates, whichever order they give them in (each from its own
// goroutine, as Run's workers do).
func TestLargestOfAllWorkers(t *testing.T) {
	for _, est := range [][]int64{{5}, {38464, 301888}, {301888, 38464}, {0, 0, 7}, {3, 9, 9, 1}, {0}} {
		l := newLargest(len(est))
		got := make([]int64, len(est))
		var wg sync.WaitGroup
		for w := range est {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[w] = l.of(w, est[w])
			}()
		}
		wg.Wait()
		want := slices.Max(est)
		for w, g := range got {
			if g != want {
				t.Errorf("estimates %v: worker %d got %d, want %d", est, w, g, want)
			}
		}
	}
}
