package workload

import (
	"math"
	"testing"
)

// attnFLOPsAllLayers reads the attention dimensions once: on every catalog
// model (MTP modules included), with and without a sliding window (every
// layer, or all but every k-th), at sequences below, at and above the
// window, the sum is the per-layer one's to the bit.
func TestAttnFLOPsAllLayersEqualsEach(t *testing.T) {
	n := 0
	for _, name := range PresetNames() {
		base, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []struct{ window, every, mtp int }{{0, 0, 0}, {0, 0, 2}, {4096, 0, 0}, {4096, 4, 1}, {1000, 6, 0}} {
			m := base
			m.AttentionWindow, m.FullAttentionEvery = v.window, v.every
			if v.mtp > 0 {
				m.MTPLayers = v.mtp
			}
			for _, seq := range []int{1, 777, 1000, 4096, 8192, 131072} {
				got, want := m.attnFLOPsAllLayers(seq), m.attnFLOPsAllLayersEach(seq)
				if math.Float64bits(got) != math.Float64bits(want) {
					t.Errorf("%s %+v seq %d: %v, per layer %v", name, v, seq, got, want)
				}
				n++
			}
		}
	}
	if n == 0 {
		t.Fatal("no model met")
	}
}
