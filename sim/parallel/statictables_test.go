package parallel

import "testing"

// The lookup tables written out as static data (start53: walkClasses,
// walkKeys, queueClass, so that no process computes them at init) are
// derived here from their rules, as the init code that built them did.

// walkClassesOf is walkClasses derived from its rules (its doc comment).
func walkClassesOf() (c [8][256]uint8) {
	for mode := range 8 {
		hosted, read, joint := mode&4 != 0, mode&2 != 0, mode&1 != 0
		for key := range 256 {
			kind, g, on := Kind(key&15), (key>>4)&7, key&walkKeyStream != 0
			v := uint8(walkActHostSync) // a host stall (and what is no task)
			switch {
			case kind == KindHostCopy:
				v = walkActNone
			case kind.IsCompute():
				v = walkActCompute
			case kind.IsComm() && g >= int(NumGroupKinds):
				v = walkActEnd // no such group
			case kind.IsComm() && ExposedOf[g] == 0 && joint:
				v = walkActTP
			case kind.IsComm() && ExposedOf[g] == 0:
				v = walkActTPOwn
			case kind == KindRecv && ExposedOf[g] == ExposedOf[GroupPP] && on:
				v = walkActRecvGrd
			case kind == KindRecv && ExposedOf[g] == ExposedOf[GroupPP]:
				v = walkActRecv
			case kind.IsComm():
				v = uint8(listComm + ExposedOf[g])
			}
			if hosted && kind != KindRecv && on {
				v |= walkHost
				if read {
					v |= walkRead
				}
			}
			if kind != KindHostCopy {
				v |= walkEnd // (a copy engine's transfer: neither this nor an action)
			}
			c[mode][key] = v
		}
	}
	return c
}

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
		{"walkClasses", flat8x256(&walkClasses), flat8x256p(walkClassesOf()), 256},
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

func flat8x256(a *[8][256]uint8) []uint8 {
	var s []uint8
	for i := range a {
		s = append(s, a[i][:]...)
	}
	return s
}

func flat8x256p(a [8][256]uint8) []uint8 { return flat8x256(&a) }

func flat16x16(a *[16][16]uint8) []uint8 {
	var s []uint8
	for i := range a {
		s = append(s, a[i][:]...)
	}
	return s
}

func flat16x16p(a [16][16]uint8) []uint8 { return flat16x16(&a) }

func queueClassSlice(a [256]uint8) []uint8 { return a[:] }
