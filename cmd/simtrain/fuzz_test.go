package main

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// Fuzz targets for every flag parser of the CLI (issue 19): on any input
// they return a value inside the documented range or a one-line error, and
// never panic or allocate in proportion to a number in the input. The
// seeds run with go test; `bash .ci/fuzz.sh` fuzzes each for a while
// (FUZZTIME=60s for the long run, docs in README "Development").

// oneLineError fails unless err is nil or one line that does not echo a
// long input whole (a hostile flag value would fill the terminal).
func oneLineError(t *testing.T, in string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	msg := err.Error()
	if strings.ContainsAny(msg, "\n\r") || len(msg) > 2000 || (len(in) > 100 && strings.Contains(msg, strconv.Quote(in))) {
		t.Fatalf("%q: error is not one line of bounded length: %q", in, err)
	}
}

// FuzzParseSizes: collective --sizes and --max-memory.
func FuzzParseSizes(f *testing.F) {
	for _, s := range []string{"1K:8G", "1M,64M,1G", "4096", "4KiB", "1P", "1e3", "8G:1K", "1:1T", "0", "-1", "NaN", "Inf", "1.5", "1K:1K:1K", ",", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sizes, err := parseSizes(s)
		oneLineError(t, s, err)
		if err != nil {
			return
		}
		if len(sizes) == 0 || len(sizes) > maxSizes {
			t.Fatalf("%q: %d sizes", s, len(sizes))
		}
		for _, v := range sizes {
			if v <= 0 || v > maxSize {
				t.Fatalf("%q: size %d out of range", s, v)
			}
		}
	})
}

// FuzzParseRankSet: --timeline-ranks and --trace-ranks, checked against a
// cluster and expanded as run does.
func FuzzParseRankSet(f *testing.F) {
	for _, s := range []string{"0-7,64", "all", "", "0-1073741823", "3-1", "-1", "0-", "1,1,1", "0-7,0-7", " 5 ", "9999999999999999999999"} {
		f.Add(s, uint16(8))
	}
	f.Fuzz(func(t *testing.T, s string, w uint16) {
		rs, err := parseRankSet(s)
		oneLineError(t, s, err)
		if err != nil {
			return
		}
		world := int(w)%4096 + 1
		if err := rs.check(world); err != nil {
			oneLineError(t, s, err)
			return
		}
		ranks := rs.ranks(world, func() []int { return []int{0} })
		if len(ranks) > world {
			t.Fatalf("%q: %d ranks on a cluster of %d", s, len(ranks), world)
		}
		for i, r := range ranks {
			if r < 0 || r >= world || (i > 0 && r <= ranks[i-1]) {
				t.Fatalf("%q: ranks %v not sorted, unique and inside 0..%d", s, ranks, world-1)
			}
		}
	})
}

// FuzzParseCount: best --tokens and --max-tasks.
func FuzzParseCount(f *testing.F) {
	for _, s := range []string{"15T", "300B", "2e12", "1000000", "1e308T", "NaN", "-5", "0", "K", "", "1.5P"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseCount(s)
		oneLineError(t, s, err)
		if err == nil && !(v > 0 && !math.IsInf(v, 0)) {
			t.Fatalf("%q: count %v", s, v)
		}
		b := budgetFlags{maxTasks: s, maxMemory: s}
		oneLineError(t, s, b.check())
	})
}

// FuzzParseShard: sweep --shard.
func FuzzParseShard(f *testing.F) {
	for _, s := range []string{"0/1", "3/16", "16/16", "-1/4", "1/0", "a/b", "1", "/", "2/99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		i, n, err := parseShard(s)
		oneLineError(t, s, err)
		if err == nil && !(n >= 1 && i >= 0 && i < n) {
			t.Fatalf("%q: shard %d/%d", s, i, n)
		}
	})
}

// FuzzParseConstraint: best --constraint.
func FuzzParseConstraint(f *testing.F) {
	for _, s := range []string{"fits", "!fits", "num_gpus<=512", "gpu==h100-sxm", "peak_mem_bytes<70e9", "tp=8", "x>1", "<=", "mfu>NaN", ""} {
		f.Add(s)
	}
	rows := bestRows()
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseConstraint(s)
		oneLineError(t, s, err)
		if err != nil {
			return
		}
		for _, r := range rows {
			c.holds(r) // must not panic on any row
		}
	})
}

// FuzzBudgetFlags: --max-tasks and --max-memory give a budget or an error.
func FuzzBudgetFlags(f *testing.F) {
	for _, s := range []string{"1e9", "500M", "32G", "8G", "0", "-1", "lots", "1e400"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, tasks, memory string) {
		b := budgetFlags{maxTasks: tasks, maxMemory: memory}
		err := b.check()
		oneLineError(t, tasks+" "+memory, err)
		if err == nil && (b.parsed.MaxTasks < 0 || b.parsed.MaxMemoryBytes < 0) {
			t.Fatalf("%q %q: budget %+v", tasks, memory, b.parsed)
		}
	})
}
