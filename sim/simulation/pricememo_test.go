package simulation

import (
	"maps"
	"reflect"
	"testing"
)

// TestPriceMemoCopies: a memo's copies (priceTables.clone) answer what it
// answered when copied, and from then on each also what it was told
// itself: a publisher's memo copied for a share, the share's copied by
// two takers, a memo copied with answers of both kinds, each written
// after. all lists each key once, with the answer get gives. Copying a memo without answers of its own (the
// share's, copied by many workers at once) writes nothing of it.
func TestPriceMemoCopies(t *testing.T) {
	type memo = priceMemo[int, string]
	check := func(step string, m *memo, want map[int]string) {
		t.Helper()
		for k, v := range want {
			if got, ok := m.get(k); !ok || got != v {
				t.Errorf("%s: get(%d) = %q, %v; want %q", step, k, got, ok, v)
			}
		}
		if _, ok := m.get(-1); ok {
			t.Errorf("%s: an answer for a key never set", step)
		}
		got := map[int]string{}
		n := 0
		for k, v := range m.all() {
			got[k] = v
			n++
		}
		if !reflect.DeepEqual(got, want) || n != len(want) {
			t.Errorf("%s: all %v (%d), want %v", step, got, n, want)
		}
	}
	cases := []struct {
		name string
		run  func()
	}{
		{"publisher, share and takers", func() {
			var pub memo
			pub.set(1, "a")
			pub.set(2, "b")
			share := pub.copy()
			pub.set(3, "c") // after publishing
			check("publisher", &pub, map[int]string{1: "a", 2: "b", 3: "c"})
			check("share", &share, map[int]string{1: "a", 2: "b"})
			base := share.base
			t1, t2 := share.copy(), share.copy()
			if share.own != nil || reflect.ValueOf(share.base).UnsafePointer() != reflect.ValueOf(base).UnsafePointer() {
				t.Error("copying the share wrote it")
			}
			t1.set(4, "d")
			t2.set(5, "e")
			check("taker 1", &t1, map[int]string{1: "a", 2: "b", 4: "d"})
			check("taker 2", &t2, map[int]string{1: "a", 2: "b", 5: "e"})
			check("share after", &share, map[int]string{1: "a", 2: "b"})
			check("publisher after", &pub, map[int]string{1: "a", 2: "b", 3: "c"})
		}},
		{"answers of both kinds", func() {
			var m memo
			m.set(1, "a")
			c1 := m.copy()
			m.set(2, "b")
			c2 := m.copy() // merges
			m.set(3, "c")
			c2.set(4, "d")
			c1.set(3, "x")
			check("memo", &m, map[int]string{1: "a", 2: "b", 3: "c"})
			check("first copy", &c1, map[int]string{1: "a", 3: "x"})
			check("second copy", &c2, map[int]string{1: "a", 2: "b", 4: "d"})
		}},
		{"empty", func() {
			var m memo
			c := m.copy()
			c.set(1, "a")
			check("memo", &m, map[int]string{})
			check("copy", &c, map[int]string{1: "a"})
		}},
		{"own only, copied twice", func() {
			var m memo
			m.set(1, "a")
			own := maps.Clone(m.own)
			c1 := m.copy()
			c2 := m.copy()
			c1.set(2, "b")
			check("memo", &m, own)
			check("copy 1", &c1, map[int]string{1: "a", 2: "b"})
			check("copy 2", &c2, own)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.run() })
	}
}
