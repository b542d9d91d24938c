package scenario

import (
	"reflect"
	"testing"

	"github.com/simtrain/simtrain/sim/parallel"
)

// TestStageLayerIDsEqualsPerStageLists: the ids carved from one array
// equal the lists grown per stage (the way before), a stage without
// layers gets nil (StageMemory reads nil as "Layers from Stage·Layers"),
// and each list ends at its own capacity, so no append reaches the next.
func TestStageLayerIDsEqualsPerStageLists(t *testing.T) {
	ch := func(first, n int) parallel.Chunk { return parallel.Chunk{FirstLayer: first, Layers: n} }
	cases := [][][]parallel.Chunk{
		{{ch(0, 32)}},
		{{ch(0, 20)}, {ch(20, 20)}, {ch(40, 20)}, {ch(60, 20)}},
		{{ch(0, 4), ch(16, 4)}, {ch(4, 4), ch(20, 4)}, {ch(8, 4), ch(24, 4)}, {ch(12, 4), ch(28, 4)}},
		{{ch(0, 3)}, {}, {ch(3, 0)}, {ch(3, 5)}},
		{{}, {}},
	}
	for _, chunks := range cases {
		want := make([][]int, len(chunks))
		for st, stage := range chunks {
			var ids []int
			for _, c := range stage {
				for l := c.FirstLayer; l < c.FirstLayer+c.Layers; l++ {
					ids = append(ids, l)
				}
			}
			want[st] = ids
		}
		got := stageLayerIDs(chunks)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%v: got %v, want %v", chunks, got, want)
		}
		for st, ids := range got {
			if (ids == nil) != (want[st] == nil) || cap(ids) != len(ids) {
				t.Fatalf("%v stage %d: nil %v (want %v), len %d cap %d", chunks, st, ids == nil, want[st] == nil, len(ids), cap(ids))
			}
		}
	}
}
