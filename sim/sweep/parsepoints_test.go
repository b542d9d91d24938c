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
			parsePoints(batch, parse, &scratches)
			if want := max(1, min(procs, n)); len(scratches) != want {
				t.Errorf("procs %d, %d points: %d scratches, want %d", procs, n, len(scratches), want)
			}
			kept := slices.Clone(scratches)
			parsePoints(batch[:0], parse, &scratches)
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
