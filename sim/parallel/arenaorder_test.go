package parallel

import (
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/pipeline"
)

// Arena.order answers every (schedule, shape, stage) with the schedule's
// own order, for keys alternating (a replicated step's shortened build
// between full ones), for more keys than it holds, and a slice it gave out
// keeps its contents when its entry is replaced.
func TestArenaOrders(t *testing.T) {
	var a Arena
	type ask struct {
		sched pipeline.Schedule
		shape pipeline.Shape
	}
	var asks []ask
	for m := 4; m <= 14; m++ { // 11 keys: more than the 8 entries
		asks = append(asks, ask{pipeline.OneFOneB, pipeline.Shape{Stages: 4, Microbatches: m, Virtual: 1}})
		asks = append(asks, ask{pipeline.OneFOneB, pipeline.Shape{Stages: 4, Microbatches: 64, Virtual: 1}})
	}
	asks = append(asks, ask{pipeline.GPipe, pipeline.Shape{Stages: 4, Microbatches: 64, Virtual: 1}},
		ask{pipeline.Interleaved, pipeline.Shape{Stages: 4, Microbatches: 8, Virtual: 2}})
	first := a.order(asks[0].sched, asks[0].shape, 1)
	firstWant := slices.Clone(asks[0].sched.Order(asks[0].shape, 1))
	for round := range 2 {
		for _, q := range asks {
			for s := range q.shape.Stages {
				if got, want := a.order(q.sched, q.shape, s), q.sched.Order(q.shape, s); !slices.Equal(got, want) {
					t.Fatalf("round %d %s %+v stage %d: order differs from the schedule's", round, q.sched.Name(), q.shape, s)
				}
			}
		}
	}
	if !slices.Equal(first, firstWant) {
		t.Error("an order given out changed when its entry was replaced")
	}
}
