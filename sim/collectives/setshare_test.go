package collectives

import (
	"math"
	"reflect"
	"slices"
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

// TestNewGroupArrangementOwn: a group's order and domain offsets are
// arrange's, in arrays of exactly their lengths that no later group or
// scratch use writes (NewGroup arranges in its scratch and copies out):
// groups in one domain, across domains evenly and unevenly, in any order,
// each made after the one before and checked again after all are made.
func TestNewGroupArrangementOwn(t *testing.T) {
	c := twoLeaves(t, 1)
	cases := [][]int{
		{0, 1, 2, 3, 4, 5, 6, 7},
		{0, 8, 16, 24, 32, 40, 48, 56},
		{9, 1, 17, 2, 25, 3},
		{0, 16},
		{63, 62, 7, 15, 23, 31, 39, 47, 55, 0, 8, 16},
		{5},
	}
	groups := make([]*Group, len(cases))
	check := func(when string, i int) {
		g := groups[i]
		order, domOff, _ := arrange(c, cases[i])
		if !slices.Equal(g.order, order) || !slices.Equal(g.domOff, domOff) ||
			cap(g.order) != len(g.order) || cap(g.domOff) != len(g.domOff) {
			t.Errorf("%s, group %v: order %v (cap %d) offsets %v (cap %d), want %v and %v",
				when, cases[i], g.order, cap(g.order), g.domOff, cap(g.domOff), order, domOff)
		}
	}
	for i, ranks := range cases {
		g, err := NewGroup(c, ranks)
		if err != nil {
			t.Fatal(err)
		}
		groups[i] = g
		check("made", i)
		// A contention pass uses the scratch's arrangement storage too.
		if _, err := StaticShares(c, cases[:i+1], true); err != nil {
			t.Fatal(err)
		}
	}
	for i := range cases {
		check("after all", i)
	}
}
