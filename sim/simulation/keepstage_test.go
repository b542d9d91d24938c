package simulation

import (
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/scenario"
)

// TestKeepRanksOfLaterStages: an every-rank play that keeps the task times
// of a few ranks of pipeline stages other than the first (full mode tests
// a stage's flag before the rank's, fullStage.keep) keeps exactly those
// ranks' times, equal to the times of the same ranks in a play that keeps
// every rank's, and the same figures.
func TestKeepRanksOfLaterStages(t *testing.T) {
	plan := func() *scenario.Plan {
		s, err := scenario.Parse([]byte(tinyScenario), scenario.Overrides(
			"parallel.dp", "2", "parallel.pp", "4", "training.global_batch", "8")...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	all := mustRun(t, plan(), Options{AllRanks: true})
	n := all.exec.Instances()
	for _, keep := range [][]int{{n - 1}, {2, 5}, {n / 2}} {
		some := mustRun(t, plan(), Options{AllRanks: true, KeepRanks: func(*Result) []int { return keep }})
		if !sameFigures(all, some) {
			t.Errorf("keeping ranks %v: %+v\nkeeping all: %+v", keep, resultFigures(some), resultFigures(all))
		}
		stages := map[int]bool{}
		for i := 0; i < n; i++ {
			rank, stage, _ := some.exec.Place(i)
			if some.exec.HasTimes(i) != slices.Contains(keep, rank) {
				t.Fatalf("keeping ranks %v: rank %d has times %v", keep, rank, some.exec.HasTimes(i))
			}
			if !some.exec.HasTimes(i) {
				continue
			}
			stages[stage] = true
			ws, we, wi := all.exec.Times(i, nil, nil, nil)
			gs, ge, gi := some.exec.Times(i, nil, nil, nil)
			if !slices.Equal(gs, ws) || !slices.Equal(ge, we) || !slices.Equal(gi, wi) {
				t.Fatalf("keeping ranks %v: rank %d's times differ from the play keeping all", keep, rank)
			}
		}
		if stages[0] && len(stages) == 1 {
			t.Fatalf("keeping ranks %v: only stage 0's ranks", keep)
		}
	}
}
