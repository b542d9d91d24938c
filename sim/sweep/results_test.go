package sweep

import (
	"slices"
	"testing"
)

// TestResultsQueue: Run's queue from its workers to the emitting goroutine
// hands results over in the order they were put, never blocks a worker
// (10,000 puts with nobody taking: a channel of capacity workers would
// block at the third), and says it is done only once it is closed and
// empty.
func TestResultsQueue(t *testing.T) {
	pr := func(i int) PointResult { return PointResult{Point: &Point{Index: i}} }
	indices := func(prs []PointResult) []int {
		var out []int
		for _, p := range prs {
			out = append(out, p.Point.Index)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		puts  int
		close bool
		want  []int
		open  bool
	}{
		{"three then open", 3, false, []int{0, 1, 2}, true},
		{"three then closed", 3, true, []int{0, 1, 2}, false},
		{"closed empty", 0, true, nil, false},
		{"many without a taker", 10000, true, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := results{ready: make(chan struct{}, 1)}
			for i := range tc.puts {
				q.put(pr(i))
			}
			if tc.close {
				q.close()
			}
			got, open := q.take(nil)
			want := tc.want
			if want == nil && tc.puts > 0 {
				for i := range tc.puts {
					want = append(want, i)
				}
			}
			if !slices.Equal(indices(got), want) || open != tc.open {
				t.Fatalf("take = %d results %v…, open %v; want %d %v…, open %v", len(got), head(indices(got)), open, len(want), head(want), tc.open)
			}
			if open {
				// Nothing left: the next take waits for a put.
				done := make(chan []PointResult)
				go func() {
					got, _ := q.take(nil)
					done <- got
				}()
				q.put(pr(7))
				if got := indices(<-done); !slices.Equal(got, []int{7}) {
					t.Fatalf("take after a wait = %v, want [7]", got)
				}
				q.close()
				if got, open := q.take(nil); len(got) != 0 || open {
					t.Fatalf("take after close = %v, open %v; want nothing, closed", indices(got), open)
				}
			}
		})
	}
}

func head(s []int) []int { return s[:min(len(s), 4)] }
