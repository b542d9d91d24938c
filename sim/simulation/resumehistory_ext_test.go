package simulation_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/simtrain/simtrain/sim/simulation"
	"github.com/simtrain/simtrain/sim/sweep"
)

// A failed shortened play is resumed whatever the Reuse ran before: the
// 70B sweep's point 965 (pp 16, tp 16, 128 micro-batches: two shortened
// plays, then the full one resumed from the second) after eleven other
// points on one Reuse has the figures and the played, failed and resumed
// task counts of a run without one. Before the builds kept below the
// Fork's parked copies (parallel.Fork.guardPark), this history left the
// pools populated so that stage 12's build wrote over stage 13's copies,
// and the full play started again from nothing: 188,293 tasks played
// against 169,608.
func TestResumeIndependentOfHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates twelve points of the 70B sweep")
	}
	sw, err := sweep.Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", sweep.Options{})
	if err != nil {
		t.Fatal(err)
	}
	run := func(i int, reuse *simulation.Reuse) *simulation.Result {
		p := sw.Point(i)
		mem, _ := p.Scenario.MemoryPerStage()
		r, err := simulation.Run(context.Background(), p.Scenario, simulation.Options{FiguresOnly: true, RunID: p.RunID, Memory: mem, Reuse: reuse})
		if err != nil {
			t.Fatalf("point %d: %v", i, err)
		}
		return r
	}
	reuse := new(simulation.Reuse)
	for _, i := range []int{961, 804, 179, 331, 371, 450, 567, 606, 725, 805, 845} {
		run(i, reuse)
	}
	got, want := run(965, reuse), run(965, nil)
	if want.SteadyPlays != 2 || want.ResumedTasks == 0 {
		t.Fatalf("point 965 alone: %d shortened plays, %d tasks resumed; the test wants a resumed full play", want.SteadyPlays, want.ResumedTasks)
	}
	if g, w := figuresOf(got), figuresOf(want); !reflect.DeepEqual(g, w) {
		t.Errorf("after eleven points on the Reuse: %d tasks played (%d failed, %d resumed); alone %d (%d, %d)",
			got.PlayedTasks, got.FailedTasks, got.ResumedTasks, want.PlayedTasks, want.FailedTasks, want.ResumedTasks)
	}
}
