package sweep

import (
	"errors"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/simulation"
)

// TestParsePointsEachOnceInPlace: parsePoints, whose calling goroutine is
// now one of its workers, parses every entry of a batch exactly once and
// leaves each result in its own entry, for batches shorter than, as long
// as and longer than the workers, on one to four CPUs; the scratches are
// one per worker and kept for the next batch.
func TestParsePointsEachOnceInPlace(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 4} {
		for _, n := range []int{1, 2, 3, 5, 257} {
			runtime.GOMAXPROCS(procs)
			batch := make([]pendingPoint, n)
			calls := make([]atomic.Int32, n)
			parse := func(b *pendingPoint) (*scenario.Plan, error) {
				i, _ := strconv.Atoi(b.id[1:]) // the index the test gave it
				calls[i].Add(1)
				return &scenario.Plan{}, errors.New("point " + strconv.Itoa(i))
			}
			for i := range batch {
				batch[i].id = "#" + strconv.Itoa(i)
			}
			var scratches []*simulation.KeyScratch
			parsePoints(batch, parse, &scratches, nil)
			if want := max(1, min(procs, n)); len(scratches) != want {
				t.Errorf("procs %d, %d points: %d scratches, want %d", procs, n, len(scratches), want)
			}
			kept := slices.Clone(scratches)
			parsePoints(batch[:0], parse, &scratches, nil)
			for w := range kept {
				if scratches[w] != kept[w] {
					t.Errorf("procs %d, %d points: scratch %d replaced", procs, n, w)
				}
			}
			for i := range batch {
				if c := calls[i].Load(); c != 1 {
					t.Errorf("procs %d, %d points: entry %d parsed %d times", procs, n, i, c)
				}
				if batch[i].err == nil || batch[i].err.Error() != "point "+strconv.Itoa(i) {
					t.Errorf("procs %d, %d points: entry %d holds %v", procs, n, i, batch[i].err)
				}
			}
		}
	}
}

// TestPagePart: the parts of an array follow each other from 0 to its
// end, every cut between two parts is at a page boundary (by address),
// and each part holds about its share, for arrays on and off a page
// boundary, shorter than a page, and split in one to four parts.
func TestPagePart(t *testing.T) {
	const page = 4096
	for _, c := range []struct {
		base  uintptr
		n     int
		parts int
	}{
		{0x100000, 256 * 1504, 1},
		{0x100000, 256 * 1504, 2},
		{0x100000 + 48, 256 * 1504, 2},
		{0x100000 + 4000, 100 * 1504, 3},
		{0x100000 + 16, 1000, 2},
		{0x100000, 3 * page, 4},
		{0x100000 + 8, 7*page + 100, 4},
	} {
		end := 0
		for w := range c.parts {
			lo, hi := pagePart(c.base, c.n, c.parts, w, page)
			if lo != end || hi < lo || hi > c.n {
				t.Errorf("%#x+%d in %d: part %d is [%d, %d) after %d", c.base, c.n, c.parts, w, lo, hi, end)
			}
			if w > 0 && lo < c.n && (c.base+uintptr(lo))%page != 0 {
				t.Errorf("%#x+%d in %d: part %d starts at %#x, not a page boundary", c.base, c.n, c.parts, w, c.base+uintptr(lo))
			}
			if share := c.n / c.parts; hi-lo > share+page {
				t.Errorf("%#x+%d in %d: part %d holds %d bytes, over its share %d and a page", c.base, c.n, c.parts, w, hi-lo, share)
			}
			end = hi
		}
		if end != c.n {
			t.Errorf("%#x+%d in %d: the parts end at %d", c.base, c.n, c.parts, end)
		}
	}
}
