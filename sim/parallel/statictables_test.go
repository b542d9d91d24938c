package parallel

import "testing"

// The lookup tables written out as static data (start53: walkKeys and
// queueClass, so that no process computes them at init) are derived here
// from their rules, as the init code that built them did. walkClasses,
// written out too, is held to its rule by TestWalkKey (stats_test.go:
// walkRule, for every kind, group and stream in every walk mode).

// walkKeysOf is walkKeys derived: a kind's bits, with walkKeyStream at
// the stream that matters for it.
func walkKeysOf() (v [16][16]uint8) {
	for k := range Kind(16) {
		on := StreamCompute
		if k == KindRecv {
			on = StreamPPRecvGrd
		}
		for st := range Stream(16) {
			v[k][st] = uint8(k)
			if st == on {
				v[k][st] |= walkKeyStream
			}
		}
	}
	return v
}

// queueClassOf is queueClass derived from its rule.
func queueClassOf() (c [256]uint8) {
	for k := range NumKinds {
		switch kk := Kind(k); {
		case kk == KindRecv:
			c[k] = queueNone
		case kk.IsComm() || kk == KindHostCopy:
			c[k] = queueCall
		case kk == KindBackward || kk == KindWGrad:
			c[k] = queueBwd
		default:
			c[k] = queueFwd
		}
	}
	return c
}

// TestStaticTablesDerived holds each written-out table to its derivation,
// entry by entry: a table edited by hand, or a rule changed without the
// table (a new kind, group or stream), fails here.
func TestStaticTablesDerived(t *testing.T) {
	cases := []struct {
		name      string
		got, want []uint8 // the table's entries in index order
		row       int     // entries a first index spans
	}{
		{"walkKeys", flat16x16(&walkKeys), flat16x16p(walkKeysOf()), 16},
		{"queueClass", queueClass[:], queueClassSlice(queueClassOf()), 256},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if len(c.got) != len(c.want) {
				t.Fatalf("%d entries, derived %d", len(c.got), len(c.want))
			}
			bad := 0
			for i := range c.got {
				if c.got[i] != c.want[i] {
					if bad++; bad <= 8 {
						t.Errorf("[%d][%d] = %#02x, derived %#02x", i/c.row, i%c.row, c.got[i], c.want[i])
					}
				}
			}
			if bad > 8 {
				t.Errorf("… %d entries differ in all", bad)
			}
		})
	}
}

func flat16x16(a *[16][16]uint8) []uint8 {
	var s []uint8
	for i := range a {
		s = append(s, a[i][:]...)
	}
	return s
}

func flat16x16p(a [16][16]uint8) []uint8 { return flat16x16(&a) }

func queueClassSlice(a [256]uint8) []uint8 { return a[:] }
