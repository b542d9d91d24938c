package scenario

import (
	"reflect"
	"testing"

	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/workload"
)

// TestAppendStageLayerIDsEqualsPerStageLists: a stage's ids listed into a
// dirty buffer (as MemoryPerStage's pooled one is) equal the list grown
// from nil (the way before the buffer), a stage without layers gets nil
// (StageMemory reads nil as "Layers from Stage·Layers"), and the list is
// in the buffer's storage when it has the room.
func TestAppendStageLayerIDsEqualsPerStageLists(t *testing.T) {
	ch := func(first, n int) parallel.Chunk { return parallel.Chunk{FirstLayer: first, Layers: n} }
	cases := [][][]parallel.Chunk{
		{{ch(0, 32)}},
		{{ch(0, 20)}, {ch(20, 20)}, {ch(40, 20)}, {ch(60, 20)}},
		{{ch(0, 4), ch(16, 4)}, {ch(4, 4), ch(20, 4)}, {ch(8, 4), ch(24, 4)}, {ch(12, 4), ch(28, 4)}},
		{{ch(0, 3)}, {}, {ch(3, 0)}, {ch(3, 5)}},
		{{}, {}},
	}
	for _, chunks := range cases {
		for _, room := range []int{0, 3, 64} {
			for st, stage := range chunks {
				var want []int
				for _, c := range stage {
					for l := c.FirstLayer; l < c.FirstLayer+c.Layers; l++ {
						want = append(want, l)
					}
				}
				dirty := make([]int, room)
				for i := range dirty {
					dirty[i] = 999
				}
				got := appendStageLayerIDs(dirty, stage)
				if !reflect.DeepEqual(got, want) || (got == nil) != (want == nil) {
					t.Fatalf("%v stage %d, room %d: got %v, want %v", chunks, st, room, got, want)
				}
				if len(want) > 0 && len(want) <= room && &got[0] != &dirty[0] {
					t.Fatalf("%v stage %d, room %d: not in the buffer's storage", chunks, st, room)
				}
			}
		}
	}
}

// TestMemoryPerStageRepeatable: MemoryPerStage with its pooled id list
// gives each plan the same stages whatever plans ran before it (pp 1 to
// 16, virtual stages, uneven first and last stages), equal to the stages
// StageMemory prices from each stage's ids listed afresh, each stage's
// input set on a new one (MemoryPerStage sets one input stage after
// stage).
func TestMemoryPerStageRepeatable(t *testing.T) {
	files := []string{"llama3-405b-16k-h100.yaml", "quickstart.yaml", "llama3-70b-1024-h100-3d.yaml",
		"deepseek-v3-256-gb200.yaml", "gpt3-175b-a100.yaml", "llama3-70b-h100-h200-pp.yaml"}
	var plans []*Plan
	var first [][]StageMemory
	for _, f := range files {
		s, err := Load("../../scenarios/" + f)
		if err != nil {
			t.Fatal(err)
		}
		mem, _ := s.MemoryPerStage()
		plans, first = append(plans, s), append(first, mem)
	}
	for round := 0; round < 2; round++ {
		for k := range plans {
			i := k
			if round == 1 {
				i = len(plans) - 1 - k
			}
			mem, _ := plans[i].MemoryPerStage()
			if !reflect.DeepEqual(mem, first[i]) {
				t.Fatalf("%s, round %d: %+v, first %+v", files[i], round, mem, first[i])
			}
		}
	}
	for i, s := range plans {
		if len(first[i]) != s.Parallel.PP {
			t.Fatalf("%s: %d stages for pp %d", files[i], len(first[i]), s.Parallel.PP)
		}
		for st, m := range first[i] {
			var ids []int // grown from nil, per stage
			for _, c := range s.r.chunks[st] {
				for l := c.FirstLayer; l < c.FirstLayer+c.Layers; l++ {
					ids = append(ids, l)
				}
			}
			in := s.memoryInput()
			s.setStage(&in, st, ids)
			want := workload.StageMemory(in)
			if m.Stage != st || m.Memory != want || m.Fits != (want.Total <= s.StageCapacityBytes(st)) {
				t.Fatalf("%s stage %d: %+v, want %+v", files[i], st, m, want)
			}
		}
	}
}
