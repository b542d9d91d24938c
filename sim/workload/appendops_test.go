package workload

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
)

// TestAppendLayerOpsEqualsLayerOps: AppendLayerOps appends exactly
// LayerOps' list, to an empty list, after a kept prefix and into a dirty
// buffer that last held another model's (longer or shorter) list, in the
// buffer's storage when it has the room; a layer outside the model
// appends nothing.
func TestAppendLayerOpsEqualsLayerOps(t *testing.T) {
	var dirty []Op // the last list appended: another case's storage
	for _, name := range []string{"llama3-8b", "deepseek-v3", "gpt-oss-20b", "mixtral-8x7b"} {
		m, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		shapes := []Shape{
			{MicroBatch: 1, Seq: 4096, Dtype: BF16, FlashAttention: true},
			{MicroBatch: 2, Seq: 2048, Dtype: FP8, TP: 2, SP: true},
		}
		for _, s := range shapes {
			for _, l := range []int{-1, 0, 1, m.StackLayers() - 1, m.StackLayers()} {
				for _, p := range []Pass{Forward, Backward} {
					want := m.LayerOps(l, s, p)
					if got := m.AppendLayerOps(nil, l, s, p); !reflect.DeepEqual(got, want) {
						t.Fatalf("%s layer %d %+v %v: appended to nil %d ops, LayerOps %d", name, l, s, p, len(got), len(want))
					}
					prefix := []Op{{Name: "kept"}, {Name: "kept2"}}
					got := m.AppendLayerOps(slices.Clone(prefix), l, s, p)
					if !reflect.DeepEqual(got[:2], prefix) || len(got) != 2+len(want) || len(want) > 0 && !reflect.DeepEqual(got[2:], want) {
						t.Fatalf("%s layer %d %+v %v: after a prefix, %d ops (want 2 + %d)", name, l, s, p, len(got), len(want))
					}
					room := cap(dirty) >= len(want)
					got = m.AppendLayerOps(dirty[:0], l, s, p)
					if len(got) != len(want) || len(want) > 0 && !reflect.DeepEqual(got, want) {
						t.Fatalf("%s layer %d %+v %v: in a dirty buffer, %d ops, LayerOps %d", name, l, s, p, len(got), len(want))
					}
					if room && len(got) > 0 && &got[0] != &dirty[:1][0] {
						t.Fatalf("%s layer %d %+v %v: a new array although the buffer had room (%d ≥ %d)", name, l, s, p, cap(dirty), len(want))
					}
					if len(got) > 0 {
						dirty = got
					}
				}
			}
		}
	}
}

// checkAppended holds an append form to its list form's want: appended to
// nil, after a kept prefix, and into *dirty (the last list a case
// appended, another case's storage), in its storage when it has the room.
func checkAppended(t *testing.T, label string, want []Op, appendTo func(dst []Op) []Op, dirty *[]Op) {
	t.Helper()
	if got := appendTo(nil); len(got) != len(want) || len(want) > 0 && !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: appended to nil %d ops, want %d", label, len(got), len(want))
	}
	prefix := []Op{{Name: "kept"}, {Name: "kept2"}}
	got := appendTo(slices.Clone(prefix))
	if !reflect.DeepEqual(got[:2], prefix) || len(got) != 2+len(want) || len(want) > 0 && !reflect.DeepEqual(got[2:], want) {
		t.Fatalf("%s: after a prefix, %d ops (want 2 + %d)", label, len(got), len(want))
	}
	room := cap(*dirty) >= len(want)
	got = appendTo((*dirty)[:0])
	if len(got) != len(want) || len(want) > 0 && !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: in a dirty buffer, %d ops, want %d", label, len(got), len(want))
	}
	if room && len(got) > 0 && &got[0] != &(*dirty)[:1][0] {
		t.Fatalf("%s: a new array although the buffer had room (%d ≥ %d)", label, cap(*dirty), len(want))
	}
	if len(got) > 0 {
		*dirty = got
	}
}

// TestAppendRecomputeHeadEmbeddingOps: AppendRecomputeOps, AppendHeadOps
// and AppendEmbeddingOps append exactly RecomputeOps', HeadOps' and
// EmbeddingOps' lists (every recompute mode, selective's module sets with
// and without FlashAttention, layers outside the model, multi-token
// prediction heads, each cross-entropy, replicated logits), to nil, after
// a prefix and into a dirty buffer.
func TestAppendRecomputeHeadEmbeddingOps(t *testing.T) {
	var dirty []Op
	recomputes := []Recompute{RecomputeNone, RecomputeSelective, RecomputeFull, RecomputeSelectiveOp, RecomputeSaveDots}
	for _, name := range []string{"llama3-8b", "deepseek-v3", "gpt-oss-20b", "mixtral-8x7b"} {
		m, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		shapes := []Shape{
			{MicroBatch: 1, Seq: 4096, Dtype: BF16, FlashAttention: true},
			{MicroBatch: 2, Seq: 2048, Dtype: FP8, TP: 2, SP: true, CrossEntropy: CrossEntropyUnfused},
			{MicroBatch: 1, Seq: 2048, Dtype: BF16, TP: 4, ReplicatedLogits: true, CrossEntropy: CrossEntropyVocabParallel,
				RecomputeModules: RecomputeCoreAttn | RecomputeMoEAct | RecomputeLayerNorm | RecomputeMLAUpProj},
			{MicroBatch: 1, Seq: 1024, Dtype: FP32, CrossEntropy: CrossEntropyUnfusedNative, RecomputeModules: RecomputeLayerNorm},
		}
		for si, s := range shapes {
			for _, p := range []Pass{Forward, Backward} {
				label := fmt.Sprintf("%s shape %d %v", name, si, p)
				checkAppended(t, label+" head", m.HeadOps(s, p), func(dst []Op) []Op { return m.AppendHeadOps(dst, s, p) }, &dirty)
				checkAppended(t, label+" embedding", m.EmbeddingOps(s, p), func(dst []Op) []Op { return m.AppendEmbeddingOps(dst, s, p) }, &dirty)
			}
			for _, l := range []int{-1, 0, 1, m.StackLayers() - 1, m.StackLayers()} {
				for _, r := range recomputes {
					label := fmt.Sprintf("%s shape %d layer %d recompute %v", name, si, l, r)
					checkAppended(t, label, m.RecomputeOps(l, s, r), func(dst []Op) []Op { return m.AppendRecomputeOps(dst, l, s, r) }, &dirty)
				}
			}
		}
	}
}
