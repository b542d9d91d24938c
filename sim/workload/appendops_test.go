package workload

import (
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
