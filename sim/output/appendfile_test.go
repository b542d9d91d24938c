package output

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

type appendRow struct {
	Key  int64  `arrow:"key"`
	Kind string `arrow:"kind,dict"`
}

func byKey(a, b *appendRow) int { return cmp.Compare(a.Key, b.Key) }

func readAppendRows(t *testing.T, path string) []appendRow {
	t.Helper()
	var rows []appendRow
	if _, err := ReadTable(path, &rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestAppendFileFlushes: every flush leaves a complete file holding every
// row so far in key order, with one dictionary per column even though the
// later flushes bring new values.
func TestAppendFileFlushes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.arrow")
	a, err := OpenAppendFile(path, map[string]string{"sweep": "x"}, false, byKey)
	if err != nil {
		t.Fatal(err)
	}
	a.Add(appendRow{3, "c"}, appendRow{1, "a"})
	if a.Pending() != 2 || a.Rows() != 2 {
		t.Fatalf("pending %d rows %d", a.Pending(), a.Rows())
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("file written before Flush")
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	a.Add(appendRow{2, "b"}, appendRow{0, "z"})
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	rows := readAppendRows(t, path)
	want := []appendRow{{0, "z"}, {1, "a"}, {2, "b"}, {3, "c"}}
	defer func() {
		if got := readAppendRows(t, path); len(got) != 5 || got[4] != (appendRow{4, "a"}) {
			t.Errorf("after the batched flush: %v", got)
		}
	}()
	if len(rows) != len(want) {
		t.Fatalf("rows %v", rows)
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("row %d: %v, want %v", i, rows[i], want[i])
		}
	}
	info, err := ReadTableInfo(path)
	if err != nil || info.Meta["sweep"] != "x" || info.Meta["schema_version"] != SchemaVersion {
		t.Errorf("meta %v %v", info.Meta, err)
	}
	if info.Batches != 1 {
		t.Errorf("%d batches of at most %d rows for 4 rows", info.Batches, BatchRows)
	}
	// Record batches of BatchRows rows: 4 rows in batches of 3 are 2 batches.
	a.BatchRows = 3
	a.Add(appendRow{4, "a"})
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	if info, _ := ReadTableInfo(path); info.Batches != 2 || info.Rows != 5 {
		t.Errorf("%d batches, %d rows", info.Batches, info.Rows)
	}
	if a.Pending() != 0 {
		t.Errorf("pending %d after flush", a.Pending())
	}
	if entries := dirEntries(t, filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("directory holds %v", entries)
	}
}

// TestAppendFileKeepAndStaleTemps: reopening with keep loads the rows
// already written; a temporary file left by a killed writer is removed;
// without keep the first flush replaces the old file.
func TestAppendFileKeepAndStaleTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.arrow")
	a, _ := OpenAppendFile(path, nil, false, byKey)
	a.Add(appendRow{5, "e"})
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	stale := path + ".tmp-999-1"
	if err := os.WriteFile(stale, []byte("half a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := OpenAppendFile(path, nil, true, byKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Error("stale temporary file not removed")
	}
	if b.Rows() != 1 || b.Pending() != 0 || b.OnDisk() != 1 {
		t.Fatalf("kept %d rows (%d on disk), %d pending", b.Rows(), b.OnDisk(), b.Pending())
	}
	b.Add(appendRow{4, "d"})
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if rows := readAppendRows(t, path); len(rows) != 2 || rows[0].Key != 4 || rows[1].Key != 5 {
		t.Errorf("after resume: %v", rows)
	}
	c, _ := OpenAppendFile(path, nil, false, byKey)
	c.Add(appendRow{9, "i"})
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if rows := readAppendRows(t, path); len(rows) != 1 || rows[0].Key != 9 {
		t.Errorf("without keep: %v", rows)
	}
	// An empty file is still a valid table (a shard with nothing to do).
	e, _ := OpenAppendFile(filepath.Join(dir, "empty.arrow"), nil, false, byKey)
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	if rows := readAppendRows(t, filepath.Join(dir, "empty.arrow")); len(rows) != 0 {
		t.Errorf("empty: %v", rows)
	}
}

// TestAppendFileFailedFlushKeepsOldFile: a flush that fails before its
// rename leaves the previous file intact and the rows pending.
func TestAppendFileFailedFlushKeepsOldFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.arrow")
	a, _ := OpenAppendFile(path, nil, false, byKey)
	a.Add(appendRow{1, "a"})
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	a.Add(appendRow{2, "b"})
	testHookBeforeRename = func(string) error { return errors.New("disk full") }
	err := a.Flush()
	testHookBeforeRename = nil
	if err == nil {
		t.Fatal("flush did not fail")
	}
	if rows := readAppendRows(t, path); len(rows) != 1 {
		t.Errorf("old file changed: %v", rows)
	}
	if a.Pending() != 1 {
		t.Errorf("pending %d", a.Pending())
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	if rows := readAppendRows(t, path); len(rows) != 2 {
		t.Errorf("retry: %v", rows)
	}
}

func TestAppendFileBadType(t *testing.T) {
	if _, err := OpenAppendFile(filepath.Join(t.TempDir(), "x.arrow"), nil, false, func(a, b *int) int { return 0 }); err == nil {
		t.Error("a non-struct row type was accepted")
	}
}

// TestFlushSchedule drives an AppendFile with a FlushSchedule the way a
// sweep does (rows added one at a time, each taking step of a fake clock,
// the file rewritten whenever it is due, once more at the end) and checks
// the sizes of the file after each rewrite against schedules computed by
// hand: the waiting rows must reach MinRows and the rows on disk (the file
// doubles), or Every must have passed since the last rewrite.
func TestFlushSchedule(t *testing.T) {
	for _, tc := range []struct {
		name        string
		kept        int // rows already on disk (a resumed sweep)
		add         int
		minRows     int
		every, step time.Duration
		want        []int // rows on disk after each rewrite before the last
	}{
		// 64, then doubling: 128, 256, 512; the final write has 1,000.
		{name: "1000 rows, batch 64, fast", add: 1000, minRows: 64, every: 5 * time.Second, want: []int{64, 128, 256, 512}},
		// The SIGKILL test's shard: 500 points, --batch 20.
		{name: "500 rows, batch 20", add: 500, minRows: 20, every: 5 * time.Second, want: []int{20, 40, 80, 160, 320}},
		// Resumed with 300 on disk: 300 more make the first rewrite (600),
		// 600 more the next (1,200); the final write has 1,300.
		{name: "resumed 300", kept: 300, add: 1000, minRows: 64, every: 5 * time.Second, want: []int{600, 1200}},
		// A small file resumed: MinRows still holds (64 waiting, not 10).
		{name: "resumed 10", kept: 10, add: 200, minRows: 64, every: 5 * time.Second, want: []int{74, 148}},
		// Slow rows (1 s each, 5 s bound): the clock decides, every 5 rows.
		{name: "slow rows", add: 12, minRows: 64, every: 5 * time.Second, step: time.Second, want: []int{5, 10}},
		// Both: 2, 4 and 8 by count (8 at 4 s after the last rewrite), then
		// 8 more would take 8 s, so the clock rewrites at 13 and 18.
		{name: "count then clock", add: 20, minRows: 2, every: 5 * time.Second, step: time.Second, want: []int{2, 4, 8, 13, 18}},
		// MinRows below 1 counts as 1; Every 0 is no time bound.
		{name: "minRows 0, no clock", add: 20, minRows: 0, step: time.Hour, want: []int{1, 2, 4, 8, 16}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.arrow")
			if tc.kept > 0 {
				k, _ := OpenAppendFile(path, nil, false, byKey)
				for i := range tc.kept {
					k.Add(appendRow{int64(-1 - i), "k"})
				}
				if err := k.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			a, err := OpenAppendFile(path, nil, tc.kept > 0, byKey)
			if err != nil {
				t.Fatal(err)
			}
			s := FlushSchedule{MinRows: tc.minRows, Every: tc.every}
			var since time.Duration
			var got []int
			for i := range tc.add {
				since += tc.step
				a.Add(appendRow{int64(i), "r"})
				if a.Due(s, since) {
					if err := a.Flush(); err != nil {
						t.Fatal(err)
					}
					if info, err := ReadTableInfo(path); err != nil || int(info.Rows) != a.OnDisk() {
						t.Fatalf("after a rewrite: %d rows on disk (%v), OnDisk %d", info.Rows, err, a.OnDisk())
					}
					got = append(got, a.OnDisk())
					since = 0
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("rewrites at %v, want %v", got, tc.want)
			}
			if err := a.Flush(); err != nil {
				t.Fatal(err)
			}
			if rows := readAppendRows(t, path); len(rows) != tc.kept+tc.add {
				t.Errorf("final file: %d rows, want %d", len(rows), tc.kept+tc.add)
			}
		})
	}
	// Nothing waiting is never due, however long ago the last rewrite was.
	if (FlushSchedule{MinRows: 1, Every: time.Second}).Due(10, 0, time.Hour) {
		t.Error("due with nothing waiting")
	}
}

// BenchmarkSweepSummaryRewrites writes a 1,000-point sweep's summary
// (SummaryRows with distinct names and run ids) through an AppendFile, a
// row at a time, rewriting it when due as `simtrain sweep` does with its
// default --batch 64 and no time passing, then once at the end: "doubling"
// is the FlushSchedule (rewrites at 64, 128, 256 and 512 rows: 1,960 rows
// written in all), "every64" the rewrite every 64 rows it replaced (8,680
// rows). ns/op is one whole sweep's summary writing.
func BenchmarkSweepSummaryRewrites(b *testing.B) {
	rows := make([]SummaryRow, 1000)
	for i := range rows {
		rows[i] = SummaryRow{RunID: fmt.Sprintf("%08x-0000-5000-8000-%012x", i*2654435761%(1<<32), i), Name: fmt.Sprintf("sweep-%03d", i),
			ModelPreset: "llama3-70b", Layers: 80, Hidden: 8192, GPU: "h100-sxm", TP: int64(1 << (i % 4)), PP: int64(1 + i%8),
			StepTimeS: float64(i) * 0.01, TokensPerS: float64(1000 + i), Fits: i%3 != 0}
	}
	byName := func(a, b *SummaryRow) int { return cmp.Compare(a.Name, b.Name) }
	for _, bc := range []struct {
		name string
		due  func(a *AppendFile[SummaryRow]) bool
	}{
		{"doubling", func(a *AppendFile[SummaryRow]) bool { return a.Due(FlushSchedule{MinRows: 64, Every: time.Hour}, 0) }},
		{"every64", func(a *AppendFile[SummaryRow]) bool { return a.Pending() >= 64 }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "summary.arrow")
			var cpu0, cpu1 syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &cpu0)
			for b.Loop() {
				a, err := OpenAppendFile(path, nil, false, byName)
				if err != nil {
					b.Fatal(err)
				}
				a.BatchRows = 64
				// Workers finish points out of order: add them in a
				// shuffled but fixed order.
				for k := range rows {
					a.Add(rows[(k*389)%len(rows)])
					if bc.due(a) {
						if err := a.Flush(); err != nil {
							b.Fatal(err)
						}
					}
				}
				if err := a.Flush(); err != nil {
					b.Fatal(err)
				}
			}
			// CPU time (user + system, this process) per sweep: wall
			// time also counts the file system's syncs and other processes.
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &cpu1)
			cpu := time.Duration(cpu1.Utime.Nano() + cpu1.Stime.Nano() - cpu0.Utime.Nano() - cpu0.Stime.Nano())
			b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N), "cpu-ms/op")
		})
	}
}

// TestAppendFileSortEqualsStableSort: the flush's merge of the new rows
// into the rows it sorted before gives exactly what a stable sort of every
// row in adding order gives, ties (equal keys, told apart by Kind) in the
// same order, over rounds of different sizes, a resumed file's unsorted
// rows first, and rounds with nothing new.
func TestAppendFileSortEqualsStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 25))
	for _, tc := range []struct {
		name   string
		kept   int   // rows read from a file, in file order (not sorted)
		rounds []int // rows added before each sort
		keys   int64 // keys drawn from [0, keys): few keys, many ties
	}{
		{"doubling", 0, []int{64, 64, 128, 256, 488}, 1 << 20},
		{"ties", 0, []int{5, 9, 1, 30, 0, 17}, 4},
		{"resumed", 40, []int{0, 12, 3, 50}, 16},
		{"one", 0, []int{1, 1, 1, 1}, 3},
		{"empty", 0, []int{0, 0}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &AppendFile[appendRow]{cmp: byKey}
			var want []appendRow
			seq := 0
			add := func(n int, kept bool) {
				for range n {
					r := appendRow{Key: rng.Int64N(tc.keys), Kind: strconv.Itoa(seq)}
					seq++
					want = append(want, r)
					if kept {
						a.rows = append(a.rows, r) // as OpenAppendFile reads them: not sorted
					} else {
						a.Add(r)
					}
				}
			}
			add(tc.kept, true)
			for _, n := range tc.rounds {
				add(n, false)
				a.sort()
				slices.SortStableFunc(want, func(x, y appendRow) int { return byKey(&x, &y) })
				if !slices.Equal(a.rows, want) {
					t.Fatalf("after %d rows: merged order differs from the stable sort", len(want))
				}
			}
		})
	}
}

// BenchmarkAppendFileSort orders a 1,000-point sweep's summary rows as its
// final rewrite finds them (512 sorted by the rewrite before, 488 new in
// completion order): "merge" is AppendFile's sort, "stable" the
// slices.SortStableFunc over every row that it replaced (the reference).
func BenchmarkAppendFileSort(b *testing.B) {
	rows := make([]SummaryRow, 1000)
	for i := range rows {
		rows[i] = SummaryRow{Name: fmt.Sprintf("sweep-%03d", i), RunID: fmt.Sprint(i)}
	}
	byName := func(a, b *SummaryRow) int { return cmp.Compare(a.Name, b.Name) }
	in := make([]SummaryRow, 0, len(rows))
	for k := range rows {
		in = append(in, rows[(k*389)%len(rows)])
	}
	slices.SortStableFunc(in[:512], func(x, y SummaryRow) int { return byName(&x, &y) })
	b.Run("merge", func(b *testing.B) {
		a := &AppendFile[SummaryRow]{cmp: byName}
		for b.Loop() {
			a.rows = append(a.rows[:0], in...)
			a.sorted = 512
			a.sort()
		}
	})
	b.Run("stable", func(b *testing.B) {
		w := make([]SummaryRow, len(in))
		for b.Loop() {
			copy(w, in)
			slices.SortStableFunc(w, func(x, y SummaryRow) int { return byName(&x, &y) })
		}
	})
}

// TestAppendFileGrow: after Grow(n) the next n rows land in one array (no
// row moves), and the rows and the file equal those of a file without
// Grow, also when Grow comes after rows were added.
func TestAppendFileGrow(t *testing.T) {
	dir := t.TempDir()
	plain, err := OpenAppendFile(filepath.Join(dir, "plain.arrow"), map[string]string{"sweep": "x"}, false, byKey)
	if err != nil {
		t.Fatal(err)
	}
	grown, err := OpenAppendFile(filepath.Join(dir, "grown.arrow"), map[string]string{"sweep": "x"}, false, byKey)
	if err != nil {
		t.Fatal(err)
	}
	grown.Add(appendRow{100, "q"})
	plain.Add(appendRow{100, "q"})
	grown.Grow(0)
	grown.Grow(50)
	first := &grown.rows[0]
	for i := range 50 {
		r := appendRow{int64((i * 37) % 50), strconv.Itoa(i % 3)}
		plain.Add(r)
		grown.Add(r)
		if &grown.rows[0] != first {
			t.Fatalf("row %d moved the rows after Grow(50)", i)
		}
		if i%16 == 15 {
			if err := plain.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := grown.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := plain.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := grown.Flush(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(plain.rows, grown.rows) {
		t.Errorf("rows differ:\n%v\n%v", grown.rows, plain.rows)
	}
	a, err := os.ReadFile(plain.Path())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(grown.Path())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a, b) {
		t.Error("the files differ")
	}
}

// TestAheadRange: mapAhead maps nothing while half a step is mapped past
// the rows about to be written (or the array is mapped to its end), else
// from where the mapped pages end through a step past them, never past
// the array.
func TestAheadRange(t *testing.T) {
	const step = 64 << 10
	for _, c := range []struct {
		name                   string
		mapped, need, capBytes int
		lo, hi                 int
	}{
		{"first rows", 0, 1200, 1 << 20, 0, 1200 + step},
		{"rows copied before", 3600, 4800, 1 << 20, 3600, 4800 + step},
		{"over half a step ahead", 70000, 1200, 1 << 20, 70000, 70000},
		{"exactly half a step ahead", 1200 + step/2, 1200, 1 << 20, 1200 + step/2, 1200 + step/2},
		{"under half a step ahead", 1199 + step/2, 1200, 1 << 20, 1199 + step/2, 1200 + step},
		{"rows past the mapped pages", 65536, 90000, 1 << 20, 65536, 90000 + step},
		{"near the end", 1000000, 1040000, 1 << 20, 1000000, 1 << 20},
		{"mapped to the end", 1 << 20, 1<<20 - 100, 1 << 20, 1 << 20, 1 << 20},
		{"small array", 0, 100, 2000, 0, 2000},
	} {
		lo, hi := aheadRange(c.mapped, c.need, c.capBytes, step)
		if lo != c.lo || hi != c.hi {
			t.Errorf("%s: aheadRange(%d, %d, %d) = [%d, %d), want [%d, %d)", c.name, c.mapped, c.need, c.capBytes, lo, hi, c.lo, c.hi)
		}
	}
}
