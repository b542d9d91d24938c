package workload

import (
	"reflect"
	"testing"
)

// StageMemory prices a layer on one of two shapes and splits (the stage's,
// and the BF16 layers' of an FP8 run: layerSplits): on every catalog model,
// every layer (MTP modules included), every recomputation, in BF16 and in
// FP8 with BF16 first and last layers, the figure is LayerActivationBytes'
// to the bit, and the layer's shape is forLayer's.
func TestLayerSplitEqualsLayerActivationBytes(t *testing.T) {
	shapes := map[string]Shape{
		"bf16 tp8 sp": {MicroBatch: 1, Seq: 8192, Dtype: BF16, TP: 8, CP: 1, EP: 1, SP: true, FlashAttention: true},
		"fp8 bf16 ends": {MicroBatch: 2, Seq: 4096, Dtype: FP8, TP: 4, CP: 2, EP: 2, FlashAttention: true,
			BF16AtStart: 1, BF16AtEnd: 2},
		"fp16 no flash, eager": {MicroBatch: 1, Seq: 2048, Dtype: FP16, TP: 2, CP: 1, EP: 1, Eager: true},
	}
	recomputes := []Recompute{RecomputeNone, RecomputeSelective, RecomputeFull, RecomputeSelectiveOp, RecomputeSaveDots}
	layers, bf16 := 0, 0
	for _, name := range PresetNames() {
		m, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if name == "deepseek-v3" {
			m.MTPLayers = 1
		}
		for sn, s := range shapes {
			splits := layerSplits{s: s, sh: newSplit(m, s)}
			for id := 0; id < m.StackLayers(); id++ {
				ls, lsh := splits.of(m, id)
				if want := s.forLayer(m, id); !reflect.DeepEqual(*ls, want) || !reflect.DeepEqual(*lsh, newSplit(m, want)) {
					t.Fatalf("%s %s layer %d: shape or split not forLayer's", name, sn, id)
				}
				if ls.Dtype != s.Dtype {
					bf16++
				}
				layers++
				for _, r := range recomputes {
					want := m.LayerActivationBytes(id, s, r)
					if got := m.layerActivationBytes(id, ls, lsh, r); got != want {
						t.Errorf("%s %s layer %d %v: %v on the stage's split, %v", name, sn, id, r, got, want)
					}
				}
			}
		}
	}
	if bf16 == 0 || layers == bf16 {
		t.Fatalf("%d layers, %d of them BF16 in an FP8 run: both paths must be met", layers, bf16)
	}
}

// BenchmarkStageMemory70B is one sweep point's memory estimate of a
// llama3-70b stage: 80 layers at TP 8 with sequence parallelism and
// selective recomputation (1F1B, 16 micro-batches, ZeRO-1 over DP 16).
func BenchmarkStageMemory70B(b *testing.B) {
	m, err := Preset("llama3-70b")
	if err != nil {
		b.Fatal(err)
	}
	in := MemoryInput{Model: m, Shape: Shape{MicroBatch: 1, Seq: 8192, Dtype: BF16, TP: 8, CP: 1, EP: 1, SP: true, FlashAttention: true},
		Layers: 80, HasEmbedding: true, HasHead: true, PP: 1, DP: 16, VirtualStages: 1, Microbatches: 16, Zero: 1,
		Optimizer: "adamw", MasterDtype: FP32, GradDtype: BF16, StateDtype: FP32, Recompute: RecomputeSelective}
	for b.Loop() {
		StageMemory(in)
	}
}

// MemoryInput.params counts each combination of a layer's predicates once:
// on every catalog model (deepseek-v3 with an MTP module: dense, MoE and
// MTP layers), over a whole stack and over stages cut from it, its sums
// equal the layers' counts (each counted alone) added in order, to the bit.
func TestParamsPerKindEqualsPerLayer(t *testing.T) {
	for _, name := range PresetNames() {
		m, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if name == "deepseek-v3" {
			m.MTPLayers = 1
		}
		in := MemoryInput{Model: m}
		sh := newSplit(m, Shape{MicroBatch: 1, Seq: 4096, Dtype: BF16, TP: 4, CP: 1, EP: 8, ETP: 2})
		n := m.StackLayers()
		for _, ids := range [][]int{allIDs(0, n), allIDs(0, min(4, n)), allIDs(n/2, n), allIDs(max(n-3, 0), n)} {
			var want rankParams
			for _, id := range ids {
				one := in.params(sh, []int{id})
				want.dense += one.dense
				want.expert += one.expert
				want.maxLayer = max(want.maxLayer, one.dense+one.expert)
			}
			if got := in.params(sh, ids); got != want {
				t.Errorf("%s layers %d..%d: %+v, layer by layer %+v", name, ids[0], ids[len(ids)-1], got, want)
			}
		}
	}
}

func allIDs(from, to int) []int {
	var ids []int
	for i := from; i < to; i++ {
		ids = append(ids, i)
	}
	return ids
}
