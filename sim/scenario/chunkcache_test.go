package scenario

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/pipeline"
)

// TestPlaceChunksEqualsPlace: placeChunks gives Place's chunks with the
// multi-token-prediction layers added, errors included, whether cut or
// found among the recent ones, for every schedule (stage-split ones
// shared, the others cut each time), pipeline depths, virtual stages,
// uneven first and last stages and MTP depths that differ in that alone;
// a stage-split placement asked for again is the same storage, and is
// still what it was cut as (no later cut or AppendMTP changed it).
func TestPlaceChunksEqualsPlace(t *testing.T) {
	cuts, shared := 0, 0
	for round := 0; round < 2; round++ {
		for _, name := range pipeline.Names() {
			sched, err := pipeline.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			for _, pp := range []int{1, 2, 4, 8} {
				for _, v := range []int{1, 2} {
					if sched.Check(pipeline.Shape{Stages: pp, Microbatches: 2 * pp, Virtual: v}) != nil {
						continue
					}
					place := sched.Placement(pipeline.Shape{Stages: pp, Virtual: v})
					for _, fl := range [][2]int{{0, 0}, {3, 5}, {1, 0}} {
						for _, mtp := range []int{0, 2} {
							label := fmt.Sprintf("%s pp %d v %d first/last %v mtp %d", name, pp, v, fl, mtp)
							got, gerr := placeChunks(place, 32, fl[0], fl[1], mtp)
							want, werr := parallel.Place(place, 32, fl[0], fl[1])
							if werr == nil {
								parallel.AppendMTP(want, mtp)
							}
							if fmt.Sprint(gerr) != fmt.Sprint(werr) || !reflect.DeepEqual(got, want) {
								t.Fatalf("round %d, %s: %v, %v; Place %v, %v", round, label, got, gerr, want, werr)
							}
							if gerr != nil {
								continue
							}
							cuts++
							again, _ := placeChunks(place, 32, fl[0], fl[1], mtp)
							split := place.StageSplit && place.Routes == 1
							if same := &again[0][0] == &got[0][0]; same != split {
								t.Fatalf("%s: found again shares the cut %v, stage split %v", label, same, split)
							} else if same {
								shared++
							}
						}
					}
				}
			}
		}
	}
	if cuts < 40 || shared == 0 || shared == cuts {
		t.Fatalf("%d placements cut, %d shared", cuts, shared)
	}
}
