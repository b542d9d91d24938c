package htmlreport

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/simtrain/simtrain/sim/output"
)

// MaxGanttRanks is the most ranks a Gantt chart draws. A timeline with more
// ranks is sampled evenly over its rank list (which, for the default
// timeline, is one data-parallel replica: every pipeline stage appears).
const MaxGanttRanks = 8

// Run is what a run's report shows, read from its output directory.
type Run struct {
	Summary output.SummaryRow
	Memory  []output.MemoryRow
	Links   []output.LinkRow
	// NoLinks: the run wrote no links.arrow (sim.links off, or auto on a
	// cluster above its bound); Links is then empty.
	NoLinks bool
	// Timeline holds the tasks of the sampled ranks in the first simulated
	// step; nil when the run wrote no timeline.
	Timeline *Timeline
}

// Timeline is the sampled part of timeline.arrow a Gantt chart draws.
type Timeline struct {
	Tasks      []output.TimelineRow // sampled ranks, first step, in file order
	Ranks      []int                // the sampled ranks, ascending
	FileRanks  int                  // ranks in timeline.arrow
	Steps      int                  // steps in timeline.arrow
	Symmetric  bool                 // the file's "symmetric" metadata
	TotalTasks int64                // rows in timeline.arrow
}

// LoadRun reads the report's inputs from a `simtrain run` output directory:
// summary.arrow, memory.arrow and, when present, links.arrow and the
// timeline (only the sampled ranks of its first step are kept, so a timeline of any
// size loads in bounded memory).
func LoadRun(dir string) (*Run, error) {
	var sum []output.SummaryRow
	if _, err := output.ReadTable(filepath.Join(dir, "summary.arrow"), &sum); err != nil {
		return nil, err
	}
	if len(sum) != 1 {
		return nil, fmt.Errorf("htmlreport: %s: summary.arrow has %d rows; a run directory has one", dir, len(sum))
	}
	r := &Run{Summary: sum[0]}
	if _, err := output.ReadTable(filepath.Join(dir, "memory.arrow"), &r.Memory); err != nil {
		return nil, err
	}
	links := filepath.Join(dir, "links.arrow")
	if _, err := os.Stat(links); errors.Is(err, os.ErrNotExist) {
		r.NoLinks = true
	} else if _, err := output.ReadTable(links, &r.Links); err != nil {
		return nil, err
	}
	tl := filepath.Join(dir, "timeline.arrow")
	if _, err := os.Stat(tl); err == nil {
		t, err := loadTimeline(tl, MaxGanttRanks)
		if err != nil {
			return nil, err
		}
		r.Timeline = t
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("htmlreport: %w", err)
	}
	return r, nil
}

// loadTimeline keeps the tasks of at most maxRanks ranks of the file's first
// step. The ranks are spread evenly over the file's "ranks" metadata; a file
// without it keeps the first ranks it meets.
func loadTimeline(path string, maxRanks int) (*Timeline, error) {
	t := &Timeline{}
	var keep map[int32]bool
	seen := map[int32]bool{}
	firstStep, maxStep := int32(-1), int32(-1)
	err := output.ScanTable(path, func(meta map[string]string, rows []output.TimelineRow) error {
		if keep == nil {
			keep = map[int32]bool{}
			if ranks, err := parseRanks(meta["ranks"]); err == nil && len(ranks) > 0 {
				t.FileRanks = len(ranks)
				for _, r := range sampleEvenly(ranks, maxRanks) {
					keep[int32(r)] = true
				}
			}
			t.Symmetric = meta["symmetric"] == "true"
		}
		for i := range rows {
			row := &rows[i]
			t.TotalTasks++
			if firstStep < 0 || row.Step < firstStep {
				firstStep = row.Step
			}
			maxStep = max(maxStep, row.Step)
			if !seen[row.Rank] {
				seen[row.Rank] = true
				if t.FileRanks == 0 && len(keep) < maxRanks {
					keep[row.Rank] = true
				}
			}
			if keep[row.Rank] {
				t.Tasks = append(t.Tasks, *row)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if t.FileRanks == 0 {
		t.FileRanks = len(seen)
	}
	// Steps are numbered from the first; a file's rows need not be sorted
	// by step, so the first step's rows are picked once it is known.
	t.Tasks = slices.DeleteFunc(t.Tasks, func(r output.TimelineRow) bool { return r.Step != firstStep })
	if maxStep >= 0 {
		t.Steps = int(maxStep-firstStep) + 1
	}
	for r := range keep {
		t.Ranks = append(t.Ranks, int(r))
	}
	slices.Sort(t.Ranks)
	return t, nil
}

// parseRanks parses a rank list such as "0-7,64,128-135" (the timeline's
// "ranks" metadata).
func parseRanks(s string) ([]int, error) {
	if s == "" {
		return nil, errors.New("empty rank list")
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, err
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("bad rank range %q", part)
			}
		}
		if b-a > 1<<24 {
			return nil, fmt.Errorf("rank range %q too long", part)
		}
		for r := a; r <= b; r++ {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// sampleEvenly returns at most n of the sorted values, spread evenly and
// always including the first.
func sampleEvenly(values []int, n int) []int {
	if len(values) <= n {
		return values
	}
	out := make([]int, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, values[i*len(values)/n])
	}
	return out
}

// Sweep is what a sweep's report shows: every point's summary row.
type Sweep struct {
	Name string // the sweep's name (summary metadata "sweep"), or ""
	Rows []output.SummaryRow
}

// compareNames orders rows by point name, then run id, for stable output.
func compareNames(a, b output.SummaryRow) int {
	return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.RunID, b.RunID))
}
