package parallel

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
)

// TestStageCutStopsAtTheFirstStageOver: a build with a StageCut stops at
// the first stage whose computation, or pipeline bound (the stages before
// it recorded), is over the limit, with that stage and a bound over the
// limit and at most that figure in the error (a fresh build may stop
// inside the stage); at the most of those it builds every stage, the
// programs a build without the cut makes. In an arena, whether the cut build is fresh or re-prices
// the last one (same structure), the builds after it equal fresh ones: an
// abandoned build leaves nothing behind.
func TestStageCutStopsAtTheFirstStageOver(t *testing.T) {
	pr := commPricer{unit: engine.Millisecond, comm: 300 * engine.Microsecond}
	for _, c := range []struct {
		tp, dp, pp, m int
		sched         pipeline.Schedule
	}{
		{2, 2, 4, 8, pipeline.OneFOneB},
		{1, 2, 8, 16, pipeline.OneFOneB},
		{2, 1, 2, 4, pipeline.GPipe},
	} {
		label := fmt.Sprintf("%+v", c)
		_, cfg := stepConfig(t, c.tp, c.dp, c.pp, c.m, c.sched)
		whole, err := Build(cfg, pr)
		if err != nil {
			t.Fatal(err)
		}
		sums := make([]engine.Time, len(whole))
		for s, p := range whole {
			sums[s] = stageCompute(p, nil)
		}
		computeBound := ComputeBound(whole, nil)
		if computeBound != slices.Max(sums) || computeBound <= 0 {
			t.Fatalf("%s: bound %v, stage sums %v", label, computeBound, sums)
		}
		// each stage's bound as the cut takes it: its sum, or its
		// pipeline bound where that is more (the stages before it
		// recorded, in order)
		cuts := make([]engine.Time, len(whole))
		var pc pipeCut
		pc.reset(false, nil)
		place := cfg.Schedule.Placement(pipeline.Shape{Stages: c.pp, Microbatches: c.m, Virtual: 1})
		for s, p := range whole {
			pc.begin(p, false, nil)
			cuts[s] = max(sums[s], pc.stage(p, place, sums[s], nil))
		}
		bound := slices.Max(cuts)
		if c.pp > 1 && bound <= computeBound {
			t.Fatalf("%s: pipeline bound %v not above the compute bound %v", label, bound, computeBound)
		}
		// the first stage over each limit (none at the bound)
		firstOver := func(limit engine.Time) int {
			for s, v := range cuts {
				if v > limit {
					return s
				}
			}
			return -1
		}
		arena := new(Arena)
		for _, limit := range []engine.Time{0, sums[0] - 1, sums[0], bound - 1, bound, bound + 1} {
			for _, in := range []string{"fresh", "arena, after a whole build"} {
				cut := *cfg
				if in != "fresh" {
					buildInArenaAndFresh(t, label, cfg, pr, arena) // (the next build re-prices it)
					cut.Arena = arena
				}
				cut.StageCut = StageCut{On: true, Limit: limit}
				repriced := RepricedBuilds()
				progs, err := Build(&cut, pr)
				if in != "fresh" && firstOver(limit) < 0 && RepricedBuilds() != repriced+1 {
					t.Fatalf("%s: limit %v: the build did not re-price the arena's last one", label, limit)
				}
				var over *ComputeOverError
				switch want := firstOver(limit); {
				case want < 0 && err != nil:
					t.Fatalf("%s %s: limit %v at or over the bound %v: %v", label, in, limit, bound, err)
				case want < 0:
					for s := range whole {
						if !slices.Equal(progs[s].Tasks, whole[s].Tasks) {
							t.Fatalf("%s %s: limit %v: stage %d's tasks differ from a build without a cut", label, in, limit, s)
						}
					}
				case !errors.As(err, &over):
					t.Fatalf("%s %s: limit %v under the bound %v: %v", label, in, limit, bound, err)
				case over.Stage != want || over.Compute <= limit || over.Compute > cuts[want]:
					// (a fresh build may stop inside the stage, on what
					// it has built so far: StageCut.during)
					t.Fatalf("%s %s: limit %v: stopped at stage %d with %v, want stage %d with at most %v", label, in, limit, over.Stage, over.Compute, want, cuts[want])
				}
				if in != "fresh" {
					// re-priced at twice the unit: each stage's sum is
					// taken again, not the last build's
					dear := commPricer{unit: 2 * pr.unit, comm: pr.comm}
					again := *cfg
					again.Arena, again.StageCut = arena, StageCut{On: true, Limit: engine.Forever - 1}
					if _, err := Build(&again, pr); err != nil {
						t.Fatal(err)
					}
					again.StageCut.Limit = computeBound // under every doubled sum
					_, err := Build(&again, dear)
					if !errors.As(err, &over) || over.Stage != 0 || over.Compute != 2*sums[0] {
						t.Fatalf("%s: re-priced at twice the unit: %v, want stage 0 over at %v", label, err, 2*sums[0])
					}
					// the arena after the cut: a build of another
					// layout, then of this one, as fresh ones
					_, other := stepConfig(t, 1, 1, 2, 4, pipeline.OneFOneB)
					buildInArenaAndFresh(t, label+" then another", other, pr, arena)
					buildInArenaAndFresh(t, label+" then itself", cfg, pr, arena)
				}
			}
		}
	}
}
