package parallel

import (
	"testing"

	"github.com/simtrain/simtrain/sim/pipeline"
)

// TestPlaceRowsCapped: the stages' chunk lists Place gives share one array,
// each capped at its length, so an append to one (AppendMTP adds layers in
// place; a caller's append) copies it rather than overwriting the next
// stage's chunks.
func TestPlaceRowsCapped(t *testing.T) {
	for _, c := range []struct{ pp, v, layers, first, last int }{
		{4, 1, 80, 0, 0}, {4, 2, 80, 0, 0}, {8, 5, 80, 0, 0}, {4, 2, 34, 5, 5}, {1, 1, 2, 0, 0},
	} {
		chunks, err := Place(pipeline.Interleaving(c.pp, c.v), c.layers, c.first, c.last)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		for s, row := range chunks {
			if len(row) != c.v || cap(row) != len(row) {
				t.Errorf("%+v: stage %d len %d cap %d, want %d", c, s, len(row), cap(row), c.v)
			}
		}
		if c.pp > 1 {
			before := chunks[1][0]
			_ = append(chunks[0], Chunk{Layers: 99})
			if chunks[1][0] != before {
				t.Errorf("%+v: an append to stage 0 changed stage 1", c)
			}
		}
	}
}
