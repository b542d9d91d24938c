package workload

import (
	"math"
	"testing"
)

// layerBytesEach is StageMemory's layer loop as first written: every layer
// priced on its own (LayerActivationBytes on the stage's splits,
// OffloadBytes). TestLayerBytesEqualsEach holds layerBytes to it.
func (in *MemoryInput) layerBytesEach(ids []int, sh split) (perMB, work, reload float64) {
	m := in.Model
	splits := layerSplits{s: in.Shape, sh: sh}
	for i, id := range ids {
		r := in.Recompute
		if r == RecomputeFull && !RecomputesLayer(in.RecomputeEvery, i+1) {
			r = RecomputeNone
		}
		ls, lsh := splits.of(m, id)
		inRange := id >= 0 && id < m.StackLayers()
		actOf := func(r Recompute) float64 {
			if !inRange {
				return 0
			}
			return m.layerActivationBytes(id, ls, lsh, r)
		}
		off := m.OffloadBytes(id, in.Shape, r)
		perMB += actOf(r) - off
		reload = max(reload, off)
		switch r {
		case RecomputeFull, RecomputeSelectiveOp:
			work = max(work, actOf(RecomputeNone))
		case RecomputeSaveDots:
			work = max(work, actOf(RecomputeNone)-actOf(r))
		}
	}
	return perMB, work, reload
}

// layerBytes prices each class of layer once (layerClass) under none,
// selective and full recomputation: on every catalog model (DeepSeek-V3
// with an MTP module), BF16 and FP8 (tensorwise and delayed: a saved
// GEMM input's width differs from BF16's) with BF16 first and last layers,
// every recomputation (full every layer and every 2nd, 3rd), no offload,
// every module offloaded, and the selective layer-norm and MLA
// up-projection modules, on whole models, one stage's slice, a stage's
// two chunks and ids out of range, the three figures are the per-layer
// loop's to the bit.
func TestLayerBytesEqualsEach(t *testing.T) {
	shapes := map[string]Shape{
		"bf16 tp8 sp": {MicroBatch: 1, Seq: 8192, Dtype: BF16, TP: 8, CP: 1, EP: 1, SP: true, FlashAttention: true},
		"fp8 bf16 ends": {MicroBatch: 2, Seq: 4096, Dtype: FP8, TP: 4, CP: 2, EP: 2, FlashAttention: true,
			BF16AtStart: 1, BF16AtEnd: 2},
		"fp8 delayed bf16 ends, offload": {MicroBatch: 1, Seq: 4096, Dtype: FP8, FP8Recipe: FP8Delayed, TP: 2, CP: 1, EP: 1,
			FlashAttention: true, BF16AtStart: 2, BF16AtEnd: 1, Offload: 0x7f},
		"fp16 no flash, eager": {MicroBatch: 1, Seq: 2048, Dtype: FP16, TP: 2, CP: 1, EP: 1, Eager: true},
		"bf16 offload all, modules": {MicroBatch: 1, Seq: 4096, Dtype: BF16, TP: 2, CP: 1, EP: 1, FlashAttention: true,
			Offload: 0x7f, RecomputeModules: RecomputeLayerNorm | RecomputeMLAUpProj | RecomputeMoEAct},
		"fp8 offload norm+qkv": {MicroBatch: 1, Seq: 4096, Dtype: FP8, TP: 1, CP: 1, EP: 1, FlashAttention: true,
			BF16AtEnd: 1, Offload: OffloadAttnNorm | OffloadQKVLinear},
	}
	recomputes := []Recompute{RecomputeNone, RecomputeSelective, RecomputeFull, RecomputeSelectiveOp, RecomputeSaveDots}
	n, nonzero := 0, 0
	for _, name := range PresetNames() {
		m, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if name == "deepseek-v3" {
			m.MTPLayers = 1
		}
		L := m.StackLayers()
		idSets := [][]int{nil, {0}, {L - 1}, {-3, 0, L + 5}}
		for i := 0; i < L; i++ {
			idSets[0] = append(idSets[0], i)
		}
		if L >= 4 {
			half := L / 2
			var chunks []int
			for i := 0; i < L/4; i++ {
				chunks = append(chunks, i, half+i)
			}
			idSets = append(idSets, idSets[0][half:], chunks)
		}
		for sn, s := range shapes {
			sh := newSplit(m, s)
			for _, r := range recomputes {
				for _, every := range []int{0, 2, 3} {
					for _, ids := range idSets {
						in := MemoryInput{Model: m, Shape: s, Recompute: r, RecomputeEvery: every}
						p, w, rl := in.layerBytes(ids, sh)
						p0, w0, rl0 := in.layerBytesEach(ids, sh)
						if math.Float64bits(p) != math.Float64bits(p0) || math.Float64bits(w) != math.Float64bits(w0) || math.Float64bits(rl) != math.Float64bits(rl0) {
							t.Errorf("%s %s %v every %d ids %v: (%v, %v, %v), per layer (%v, %v, %v)", name, sn, r, every, ids, p, w, rl, p0, w0, rl0)
						}
						if rl0 > 0 {
							nonzero++
						}
						n++
					}
				}
			}
		}
	}
	if n == 0 || nonzero == 0 {
		t.Fatalf("%d cases, %d with offload: every path must be met", n, nonzero)
	}
}

// layerClasses.class reads the model's and shape's fields once: on every
// catalog model (with 0 to 2 MTP modules, MoE dense layers moved), BF16,
// FP16 and FP8 with BF16 layers at either end, on every layer and ids out
// of range, each bit is its predicate's (range, Shape.IsBF16Layer,
// Model.IsMTPLayer, Model.IsMoELayer), and specMoE is
// IsMoELayer(specLayer(id)).
func TestLayerClassesEqualsPredicates(t *testing.T) {
	shapes := []Shape{
		{Dtype: BF16},
		{Dtype: FP16, BF16AtStart: 2},
		{Dtype: FP8},
		{Dtype: FP8, BF16AtStart: 1, BF16AtEnd: 2},
		{Dtype: FP8, BF16AtEnd: 3},
		{Dtype: FP8, BF16AtStart: 4},
	}
	n, specMoE := 0, false // specMoE: met where the layer itself is not MoE
	seen := map[int]bool{}
	for _, name := range PresetNames() {
		base, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, mtp := range []int{0, 1, 2} {
			for _, dense := range []int{-1, 0, 3} {
				m := base
				m.MTPLayers = mtp
				if m.MoE != nil && dense >= 0 {
					moe := *m.MoE
					moe.DenseLayers = dense
					m.MoE = &moe
				}
				for _, s := range shapes {
					k := newLayerClasses(&m, &s)
					for id := -2; id < m.StackLayers()+3; id++ {
						want := 0
						if id >= 0 && id < m.StackLayers() {
							want |= classInRange
						}
						if s.IsBF16Layer(m, id) {
							want |= classBF16
						}
						if m.IsMTPLayer(id) {
							want |= classMTP
						}
						if m.IsMoELayer(id) {
							want |= classMoE
						}
						if got := k.class(id); got != want {
							t.Fatalf("%s mtp %d dense %d %+v layer %d: class %04b, predicates %04b", name, mtp, dense, s, id, got, want)
						}
						if got, want := k.specMoE(id), m.IsMoELayer(m.specLayer(id)); got != want {
							t.Fatalf("%s mtp %d dense %d layer %d: specMoE %v, IsMoELayer(specLayer) %v", name, mtp, dense, id, got, want)
						}
						specMoE = specMoE || want&classMoE == 0 && k.specMoE(id)
						seen[want] = true
						n++
					}
				}
			}
		}
	}
	// every bit met set
	for _, b := range []int{classInRange, classBF16, classMTP, classMoE} {
		met := false
		for c := range seen {
			met = met || c&b != 0
		}
		if !met {
			t.Errorf("bit %04b never set in %d layers", b, n)
		}
	}
	if !specMoE {
		t.Error("specMoE never differs from the layer's own MoE bit")
	}
}
