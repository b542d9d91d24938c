package simulation

import (
	"context"
	"reflect"
	"testing"

	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/scenario"
)

// A Reuse's pricer (Reuse.pricer: one struct, its maps and scratch kept
// from run to run) carries nothing from one run into the next: bundled
// scenarios of other layouts, clusters, GPU types (a heterogeneous
// cluster's per-group devices) and expert parallelism, run one after
// another on one Reuse twice over, give each the figures of a run without
// a Reuse. And a Result keeps no rank lists the next run took back: after
// it, the earlier Result's lists are gone (listed anew from its layout,
// the same lists), not the next run's.
func TestReusedPricerEqualsFresh(t *testing.T) {
	files := []string{
		"../../scenarios/llama3-70b-h100-h200-pp.yaml", // heterogeneous: pricer.devs
		"../../scenarios/mixtral-8x7b-ep8.yaml",        // expert parallelism
		"../../scenarios/quickstart.yaml",
		"../../scenarios/course-8xh100-adamw-memory.yaml",
	}
	figures := func(r *Result) []any {
		return []any{r.StepTimeS, r.TokensPerS, r.MFU, r.HFU, r.BubbleFraction, r.ComputeS, r.HostSyncS,
			r.HostBoundS, r.HostIssueS, r.ExposedCommS, r.PeakMemBytes, r.Events}
	}
	reuse := new(Reuse)
	var prev *Result
	var prevRanks map[[2]int][][]int
	relisted := 0
	for round := range 2 {
		for _, f := range files {
			s, err := scenario.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Run(context.Background(), s, Options{Reuse: reuse})
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			want, err := Run(context.Background(), s, Options{})
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if g, w := figures(got), figures(want); !reflect.DeepEqual(g, w) {
				t.Errorf("round %d, %s: figures %v with the Reuse, %v without", round, f, g, w)
			}
			if prev != nil {
				if prev.ranks != nil || prev.stRanks != nil {
					t.Errorf("round %d, %s: the last Result still holds the pricer's rank lists", round, f)
				}
				// Its lists, listed anew, are its own layout's (not
				// the lists this run put in the shared map).
				for key, lists := range prevRanks {
					k := parallel.GroupKind(key[0])
					relisted++
					if again := prev.stageGroupRanks(k, key[1]); !reflect.DeepEqual(again, lists) {
						t.Errorf("round %d, %s: the last Result's kind %v stage %d groups %v, listed with it %v", round, f, k, key[1], again, lists)
					}
				}
			}
			prev = got
			prevRanks = map[[2]int][][]int{}
			for key, lists := range got.ranks {
				prevRanks[key] = lists
			}
		}
	}
	if relisted == 0 {
		t.Fatal("no Result held rank lists: nothing taken back was checked")
	}
}
