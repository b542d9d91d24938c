package parallel

import (
	"reflect"
	"testing"
)

// GroupsInto lists what Groups lists, for every kind and stage (out of
// range and GroupPP included), layout after layout on one store reset
// between them (larger after smaller, pp outermost or not), and the lists
// it handed out since the last Reset stay as they were while it lists
// more (the store grows by new arrays, never moving or overwriting them).
func TestGroupsIntoEqualsGroups(t *testing.T) {
	var s GroupStore
	for _, c := range []struct {
		tp, cp, ep, dp, pp int
		order              string
	}{
		{2, 1, 1, 2, 2, "tp-cp-ep-dp-pp"},
		{8, 1, 1, 16, 4, "tp-cp-ep-dp-pp"},
		{2, 2, 4, 4, 1, "tp-dp-cp-ep-pp"},
		{1, 1, 1, 8, 4, "pp-dp-tp-cp-ep"},
		{2, 4, 8, 2, 2, "tp-cp-dp-ep-pp"},
		{2, 1, 1, 2, 2, "tp-cp-ep-dp-pp"},
	} {
		l, err := NewLayout(c.tp, c.cp, c.ep, c.dp, c.pp, mustOrder(t, c.order))
		if err != nil {
			t.Fatal(err)
		}
		s.Reset()
		var got, want [][][]int
		for k := GroupKind(0); k < NumGroupKinds; k++ {
			for st := -1; st <= l.PP; st++ {
				got = append(got, l.GroupsInto(k, st, &s))
				want = append(want, l.Groups(k, st))
			}
		}
		// compared after all were listed: a later listing overwrote none
		for i := range want {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("%+v: listing %d: GroupsInto %v, Groups %v", c, i, got[i], want[i])
			}
		}
	}
}
