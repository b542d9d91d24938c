package output

import (
	"strings"
	"testing"
)

func TestCheckNoOverlap(t *testing.T) {
	r := func(rank int32, stream, name string, start, end int64) TimelineRow {
		return TimelineRow{Rank: rank, Stream: stream, Name: name, StartNs: start, EndNs: end}
	}
	tests := []struct {
		name string
		rows []TimelineRow
		want string // "" for no error
	}{
		{"empty", nil, ""},
		{"touching", []TimelineRow{r(0, "c", "a", 0, 10), r(0, "c", "b", 10, 20)}, ""},
		{"unsorted input", []TimelineRow{r(0, "c", "b", 10, 20), r(0, "c", "a", 0, 10)}, ""},
		{"zero-length at a boundary", []TimelineRow{r(0, "c", "a", 0, 10), r(0, "c", "z", 10, 10), r(0, "c", "b", 10, 20)}, ""},
		{"other stream may overlap", []TimelineRow{r(0, "c", "a", 0, 10), r(0, "tp", "b", 5, 15)}, ""},
		{"other rank may overlap", []TimelineRow{r(0, "c", "a", 0, 10), r(1, "c", "b", 5, 15)}, ""},
		{"overlap", []TimelineRow{r(0, "c", "b", 5, 15), r(0, "c", "a", 0, 10)},
			`output: rank 0 stream c: "a" [0, 10) ns overlaps "b" [5, 15) ns`},
		// Sorted by start, a long op hides a later overlap only if the
		// op right after it already overlaps: [0,100) vs [10,20) is found.
		{"nested", []TimelineRow{r(2, "c", "long", 0, 100), r(2, "c", "in", 10, 20), r(2, "c", "after", 200, 300)},
			`"long" [0, 100) ns overlaps "in" [10, 20) ns`},
		{"zero-length inside", []TimelineRow{r(0, "c", "a", 0, 10), r(0, "c", "z", 5, 5)}, `"a" [0, 10) ns overlaps "z" [5, 5) ns`},
		{"negative duration", []TimelineRow{r(3, "c", "bad", 10, 9)}, `output: rank 3 stream c: "bad" ends at 9 ns before it starts at 10 ns`},
	}
	for _, tc := range tests {
		err := CheckNoOverlap(tc.rows)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: unexpected error %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	if err := CheckNoOverlap(makeTimeline(10000)); err != nil {
		t.Errorf("makeTimeline: %v", err)
	}
}
