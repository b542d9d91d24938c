package output

import (
	"cmp"
	"fmt"
	"slices"
)

// CheckNoOverlap returns an error describing the first problem it finds
// among rows, or nil: a row that ends before it starts, or two rows on the
// same (rank, stream) whose intervals [start_ns, end_ns) overlap. Touching
// intervals (one ends when the next starts) and zero-length rows are fine.
// This is the property that lets Perfetto show each (rank, stream) as one
// track of non-overlapping slices. The rows are not modified; the check
// sorts an index, O(n log n), deterministic for any input order.
func CheckNoOverlap(rows []TimelineRow) error {
	idx := make([]int32, len(rows))
	for i := range rows {
		if rows[i].EndNs < rows[i].StartNs {
			r := &rows[i]
			return fmt.Errorf("output: rank %d stream %s: %q ends at %d ns before it starts at %d ns", r.Rank, r.Stream, r.Name, r.EndNs, r.StartNs)
		}
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int {
		x, y := &rows[a], &rows[b]
		return cmp.Or(
			cmp.Compare(x.Rank, y.Rank),
			cmp.Compare(x.Stream, y.Stream),
			cmp.Compare(x.StartNs, y.StartNs),
			cmp.Compare(x.EndNs, y.EndNs),
			cmp.Compare(a, b),
		)
	})
	for k := 1; k < len(idx); k++ {
		p, r := &rows[idx[k-1]], &rows[idx[k]]
		if p.Rank == r.Rank && p.Stream == r.Stream && r.StartNs < p.EndNs {
			return fmt.Errorf("output: rank %d stream %s: %q [%d, %d) ns overlaps %q [%d, %d) ns",
				r.Rank, r.Stream, p.Name, p.StartNs, p.EndNs, r.Name, r.StartNs, r.EndNs)
		}
	}
	return nil
}
