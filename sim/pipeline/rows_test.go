package pipeline

import (
	"reflect"
	"testing"
)

// TestPlacementRowsCapped: NewPlacement's tables keep their rows in one
// array each, every row capped at its length, so that an append to a row
// copies it (as a row of its own array would) instead of writing over the
// next row; each slot is still filled exactly once.
func TestPlacementRowsCapped(t *testing.T) {
	for _, pl := range []Placement{Interleaving(4, 1), Interleaving(4, 3), Interleaving(1, 1), Bidirectional(4), VShape(4)} {
		for s, row := range pl.at {
			if len(row) != pl.Chunks || cap(row) != len(row) {
				t.Errorf("%+v: stage %d row len %d cap %d, want %d", pl, s, len(row), cap(row), pl.Chunks)
			}
		}
		for r, row := range pl.loc {
			if cap(row) != len(row) || len(row) != pl.ModelChunks() {
				t.Errorf("%+v: route %d row len %d cap %d, want %d", pl, r, len(row), cap(row), pl.ModelChunks())
			}
		}
		if len(pl.at) > 1 {
			before := pl.at[1][0]
			_ = append(pl.at[0], ref{7, 7})
			if pl.at[1][0] != before {
				t.Errorf("%+v: an append to stage 0's row changed stage 1's", pl)
			}
		}
		for s := range pl.at {
			for c, at := range pl.at[s] {
				if l := pl.loc[at.route][at.k]; l.Stage != s || l.Chunk != c {
					t.Errorf("%+v: slot %d/%d holds route %d chunk %d, located at %+v", pl, s, c, at.route, at.k, l)
				}
			}
		}
	}
}

// TestInterleavingMemo: Interleaving gives the placement built afresh for
// every shape, kept or not (the memo's edges and past them), on a first
// and a second call, and a kept one is built once.
func TestInterleavingMemo(t *testing.T) {
	for _, sh := range [][2]int{{1, 1}, {4, 1}, {4, 3}, {16, 1}, {maxMemoStages, maxMemoVirtual},
		{maxMemoStages + 1, 1}, {2, maxMemoVirtual + 1}, {64, 5}} {
		p, v := sh[0], sh[1]
		want := interleaving(p, v)
		for call := range 2 {
			if got := Interleaving(p, v); !reflect.DeepEqual(got, want) {
				t.Errorf("%d×%d call %d: %+v, want %+v", p, v, call, got, want)
			}
		}
		kept := p <= maxMemoStages && v <= maxMemoVirtual
		if a, b := Interleaving(p, v), Interleaving(p, v); (&a.at[0][0] == &b.at[0][0]) != kept {
			t.Errorf("%d×%d: shared %v, want %v", p, v, &a.at[0][0] == &b.at[0][0], kept)
		}
	}
}
