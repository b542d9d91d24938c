package parallel

import "testing"

// domainsOf is a DomainMap of fixed-size scale-up domains.
type domainsOf int

func (d domainsOf) DomainOf(r int) int { return r / int(d) }

// TestSpansOf: tp 2, dp 4, pp 2 in tp-cp-ep-dp-pp order puts stage 0 on
// ranks 0–7 and stage 1 on 8–15, tensor groups {0,1},{2,3},…, data-parallel
// groups {0,2,4,6},{1,3,5,7}, …. With 4-GPU domains only the data-parallel
// groups cross one; with 8-GPU domains nothing does (pipeline groups are
// never counted). SpansOfListed reads the lists it is given, not the
// layout's.
func TestSpansOf(t *testing.T) {
	l, err := NewLayout(2, 1, 1, 4, 2, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
	if err != nil {
		t.Fatal(err)
	}
	type want struct{ tp, dp, pp bool }
	for _, tc := range []struct {
		name   string
		dm     domainsOf
		groups func(GroupKind, int) [][]int // nil: SpansOf
		want   want
	}{
		{"4-GPU domains", 4, nil, want{dp: true}},
		{"8-GPU domains", 8, nil, want{}},
		{"listed as the layout", 4, l.Groups, want{dp: true}},
		{"listed across domains", 8, func(k GroupKind, _ int) [][]int {
			if k == GroupTP {
				return [][]int{{0, 8}} // a list no layout makes: it must be the one read
			}
			return l.Groups(k, 0)
		}, want{tp: true}},
	} {
		var got [][NumGroupKinds]bool
		if tc.groups == nil {
			got = SpansOf(l, tc.dm)
		} else {
			got = SpansOfListed(l, tc.dm, tc.groups)
		}
		if len(got) != 2 {
			t.Fatalf("%s: %d stages, want 2", tc.name, len(got))
		}
		for s, row := range got {
			if row[GroupTP] != tc.want.tp || row[GroupDP] != tc.want.dp || row[GroupPP] != tc.want.pp {
				t.Errorf("%s: stage %d: tp %v dp %v pp %v, want %+v", tc.name, s, row[GroupTP], row[GroupDP], row[GroupPP], tc.want)
			}
		}
	}
}
