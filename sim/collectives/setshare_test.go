package collectives

import (
	"math"
	"reflect"
	"testing"
)

// TestSetShareEqualsWithShare: SetShare on a new group makes exactly the
// group WithShare copies out of it (every field, the share clamped to
// (0, 1] per pattern: the share expected), for shares inside, at and outside that range, and
// leaves other groups of the same ranks as they were.
func TestSetShareEqualsWithShare(t *testing.T) {
	c := twoLeaves(t, 32)
	for _, tc := range []struct{ sh, want Share }{
		{Share{Ring: 0.5, Tree: 0.25, Direct: 0.75}, Share{Ring: 0.5, Tree: 0.25, Direct: 0.75}},
		{Share{Ring: 1, Tree: 1, Direct: 1}, noContention},
		{Share{}, noContention},
		{Share{Ring: 2, Tree: -1, Direct: 0.3}, Share{Ring: 1, Tree: 1, Direct: 0.3}},
		{Share{Ring: math.NaN(), Tree: math.Inf(1), Direct: 1e-9}, Share{Ring: 1, Tree: 1, Direct: 1e-9}},
		{Share{Ring: 0.1, Tree: 0.2, Direct: 1.5}, Share{Ring: 0.1, Tree: 0.2, Direct: 1}},
	} {
		sh := tc.sh
		for _, ranks := range [][]int{{0, 16}, {0, 1, 2, 3}, {0, 8, 16, 24}} {
			g, err := NewGroup(c, ranks)
			if err != nil {
				t.Fatal(err)
			}
			other, err := NewGroup(c, ranks)
			if err != nil {
				t.Fatal(err)
			}
			want := g.WithShare(sh)
			g.SetShare(sh)
			if !reflect.DeepEqual(g, want) || g.Share() != tc.want {
				t.Errorf("%v on %v: SetShare %+v, WithShare %+v, want %+v", sh, ranks, g.Share(), want.Share(), tc.want)
			}
			if other.Share() != noContention {
				t.Errorf("%v on %v: another group's share %+v", sh, ranks, other.Share())
			}
		}
	}
}
