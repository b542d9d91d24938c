package parallel

import (
	"math"
	"testing"
)

// TestAddStreamsMatchesPlain holds addStreams' two-lanes-a-word adds to
// sixteen int32 adds, at the edges of what a count can be: zeros, a lane
// whose sum reaches 2³¹−1 (a carry out of the low lane would show in the
// high one), and both lanes of a word full at once.
func TestAddStreamsMatchesPlain(t *testing.T) {
	const top = math.MaxInt32
	cases := []struct {
		name string
		c, d [streamSlots]int32
	}{
		{name: "zeros"},
		{name: "ones", c: [streamSlots]int32{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, d: [streamSlots]int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}},
		{name: "low lanes full", c: [streamSlots]int32{top - 5, 0, top - 1, 7}, d: [streamSlots]int32{5, 9, 1, 0}},
		{name: "high lanes full", c: [streamSlots]int32{3, top - 5, 0, top}, d: [streamSlots]int32{4, 5, 0, 0}},
		{name: "every lane full", c: [streamSlots]int32{0: top / 2, 1: top / 2, 14: top - 1, 15: 1}, d: [streamSlots]int32{0: top - top/2, 1: top - top/2, 14: 1, 15: top - 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.c
			for s, v := range tc.d {
				want[s] += v
			}
			got := tc.c
			addStreams(&got, &tc.d)
			if got != want {
				t.Fatalf("addStreams(%v, %v) = %v, want %v", tc.c, tc.d, got, want)
			}
		})
	}
}
