package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/simtrain/simtrain/sim/scenario"
)

// rankSet is a parsed --timeline-ranks / --trace-ranks value: the default
// set, every rank, or ranges of ranks. It holds the ranges as written, so
// parsing "0-1073741823" costs two integers; ranks are materialised only
// after the ranges are checked against the cluster.
type rankSet struct {
	all    bool
	ranges [][2]int // inclusive; empty with all == false: the default set
}

// maxRankRanges bounds the comma-separated items of a rank list.
const maxRankRanges = 1 << 16

// parseRankSet parses "", "all" or a list like "0-7,16,32-39". Errors are
// one line without the flag name.
func parseRankSet(s string) (rankSet, error) {
	switch strings.TrimSpace(s) {
	case "":
		return rankSet{}, nil
	case "all":
		return rankSet{all: true}, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) > maxRankRanges {
		return rankSet{}, fmt.Errorf("%d items, at most %d (use ranges like 0-7)", len(parts), maxRankRanges)
	}
	var rs rankSet
	for _, part := range parts {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil || a < 0 {
			return rankSet{}, fmt.Errorf("%q is not a rank, a range like 0-7, or all", clipFlag(part))
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil || b < a {
				return rankSet{}, fmt.Errorf("%q is not a rank range like 0-7", clipFlag(part))
			}
		}
		if b >= scenario.MaxGPUs {
			return rankSet{}, fmt.Errorf("rank %d is beyond the largest cluster simtrain simulates (%d GPUs)", b, scenario.MaxGPUs)
		}
		rs.ranges = append(rs.ranges, [2]int{a, b})
	}
	return rs, nil
}

// isDefault reports whether the flag was empty (one data-parallel replica).
func (rs rankSet) isDefault() bool { return !rs.all && len(rs.ranges) == 0 }

// check fails if a listed rank is outside a cluster of world ranks.
func (rs rankSet) check(world int) error {
	for _, r := range rs.ranges {
		if r[1] >= world {
			return fmt.Errorf("rank %d is outside the cluster (%d ranks: 0-%d)", r[1], world, world-1)
		}
	}
	return nil
}

// ranks lists the set's ranks on a cluster of world ranks (check first),
// sorted and without repeats; def is the default set.
func (rs rankSet) ranks(world int, def func() []int) []int {
	switch {
	case rs.isDefault():
		return def()
	case rs.all:
		all := make([]int, world)
		for i := range all {
			all[i] = i
		}
		return all
	}
	seen := make([]bool, world)
	for _, r := range rs.ranges {
		for x := r[0]; x <= min(r[1], world-1); x++ {
			seen[x] = true
		}
	}
	var out []int
	for x, ok := range seen {
		if ok {
			out = append(out, x)
		}
	}
	return slices.Clip(out)
}

// clipFlag shortens a hostile flag value for an error message.
func clipFlag(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}
