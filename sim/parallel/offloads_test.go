package parallel

import (
	"math/rand/v2"
	"testing"
)

// TestOffloadTableActsAsMap plays random sets, gets and resets on an
// offloadTable and on the Go map it replaced (a reset: a new map), and
// checks every get and length against the map: entries made are read back,
// entries never made or made before a reset are absent, replacing an entry
// does not count it twice, and rows grown for a later micro-batch keep the
// earlier ones.
func TestOffloadTableActsAsMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(58, 1))
	var tab offloadTable
	model := map[int64]hostCopies{}
	for op := 0; op < 200_000; op++ {
		l, mb := rng.IntN(12)-1, rng.IntN(300)-1 // (−1: the map's case)
		if rng.IntN(4) == 0 {
			mb = rng.IntN(20) // mostly small micro-batches, as a stage's passes
		}
		switch r := rng.IntN(100); {
		case r < 1:
			tab.reset()
			model = map[int64]hostCopies{}
		case r < 45:
			c := hostCopies{d2h: int32(rng.IntN(1000)), h2d: int32(rng.IntN(1000)) - 1, bytes: float64(rng.IntN(5))}
			tab.set(l, mb, c)
			model[offloadKey(l, mb)] = c
		default:
			got, ok := tab.get(l, mb)
			want, wok := model[offloadKey(l, mb)]
			if got != want || ok != wok {
				t.Fatalf("op %d: get(%d, %d) = %+v, %v; the map holds %+v, %v", op, l, mb, got, ok, want, wok)
			}
		}
		if tab.length() != len(model) {
			t.Fatalf("op %d: length %d; the map holds %d", op, tab.length(), len(model))
		}
	}
}

// TestOffloadTableResetKeepsStorage checks that a reset keeps the rows'
// storage (a builder's next stage reuses it) and leaves nothing made.
func TestOffloadTableResetKeepsStorage(t *testing.T) {
	var tab offloadTable
	for mb := range 64 {
		tab.set(3, mb, hostCopies{d2h: int32(mb), h2d: -1, bytes: 1})
	}
	row := &tab.rows[3].e[0]
	tab.reset()
	if tab.length() != 0 || len(tab.touched) != 0 {
		t.Fatalf("after reset: length %d, touched %v", tab.length(), tab.touched)
	}
	for mb := range 64 {
		if _, ok := tab.get(3, mb); ok {
			t.Fatalf("after reset: entry (3, %d) still made", mb)
		}
	}
	tab.set(3, 5, hostCopies{d2h: 7, h2d: -1})
	if &tab.rows[3].e[0] != row {
		t.Fatal("reset dropped the row's storage")
	}
	if c, ok := tab.get(3, 5); !ok || c.d2h != 7 || tab.length() != 1 {
		t.Fatalf("after reset and set: %+v, %v, length %d", c, ok, tab.length())
	}
}
