package output

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestAppendFileRewritesEqualWriteTable: every rewrite of a growing
// AppendFile, through the table builder and writer it keeps from flush to
// flush, holds the very bytes writeTableBatches writes for the rows so
// far, stably sorted, in batches of BatchRows: when the dictionary columns
// keep their values, when a value first appears after some rewrites
// (sorting after, and before, the values so far), with nullable columns,
// and when the rows array moves (no Grow). A rewrite after a dictionary
// grew takes its frame from a file of the first batch alone (probe), so
// the rewrites capture fewer bytes than the last file holds; before, they
// captured every such rewrite's whole file. The last rewrite's batches
// are encoded by the frame's own encoder.
func TestAppendFileRewritesEqualWriteTable(t *testing.T) {
	summary := sweepSummaryRows(300)
	late := sweepSummaryRows(300)
	for i := range late {
		// gpu: "h100-sxm" for the first 100 rows added, then
		// "z-late", then "a-late" (before both).
		late[i].GPU = []string{"h100-sxm", "z-late", "a-late"}[i/100]
	}
	byName := func(a, b *SummaryRow) int { return strings.Compare(a.Name, b.Name) }
	// byIndex: the order the rows were made in ("…-9" before "…-10").
	byIndex := func(a, b *SummaryRow) int { return cmp.Or(len(a.Name)-len(b.Name), strings.Compare(a.Name, b.Name)) }
	kinds := makeRows[allKinds](200)
	for i := range kinds {
		kinds[i].I64 = int64((i * 37) % 200)
		kinds[i].D = fmt.Sprintf("d%d", i/50) // a new value every 50 rows
	}
	byKeyKinds := func(a, b *allKinds) int { return int(a.I64 - b.I64) }
	// full: the rewrites through arrow-go's FileWriter; the others keep
	// the first one's header and footer schema (frame.go). Rewrites at
	// 16, 32, 64, 128, 256 and 300 rows.
	goodput := makeRows[GoodputSummaryRow](300) // no dictionary column
	for i := range goodput {
		goodput[i].RunID = fmt.Sprintf("r%03d", (i*89)%300)
	}
	byRunID := func(a, b *GoodputSummaryRow) int { return strings.Compare(a.RunID, b.RunID) }
	// a distinct dictionary value a row: int32 indices past maxInt16Dict
	wide := makeRows[directKinds](maxInt16Dict + 2)
	for i := range wide {
		wide[i].I64, wide[i].D = int64(i), fmt.Sprintf("w%05d", (i*7919)%len(wide))
	}
	byKeyWide := func(a, b *directKinds) int { return int(a.I64 - b.I64) }
	for _, tc := range []struct {
		name                   string
		run                    func(t *testing.T) rewriteCounts
		full, probes, reframes int
		// direct: the rows have no pointer field, so the frame encodes
		// the batches from the builder's column buffers
		direct bool
	}{
		{"sweep summary, rows out of order", func(t *testing.T) rewriteCounts { return checkRewrites(t, summary, byName, 16, true, 89, 0) }, 1, 0, 0, true},
		{"sweep summary, rows in order", func(t *testing.T) rewriteCounts { return checkRewrites(t, summary, byIndex, 16, true, 1, 0) }, 1, 0, 0, true},
		// the first rewrite holds 17 rows, two batches: framed from a probe
		{"sweep summary, a late row every rewrite", func(t *testing.T) rewriteCounts { return checkRewrites(t, summary, byIndex, 16, true, 1, 20) }, 0, 1, 0, true},
		{"sweep summary, no Grow", func(t *testing.T) rewriteCounts { return checkRewrites(t, summary, byName, 16, false, 1, 0) }, 1, 0, 0, true},
		{"goodput summary, no dictionaries", func(t *testing.T) rewriteCounts { return checkRewrites(t, goodput, byRunID, 16, true, 1, 0) }, 1, 0, 0, true},
		// a new value at the rewrites of 128 and 256 rows: each framed
		// from the last frame with the new dictionaries (reframe)
		{"dictionary values arriving late", func(t *testing.T) rewriteCounts { return checkRewrites(t, late, byName, 16, true, 1, 0) }, 1, 0, 2, true},
		// a new value every 50 rows: rewrites at 7, 14, 28, 56, 112 and 200
		// rows, the first through FileWriter, those at 56, 112 and 200
		// reframed
		{"every kind, rows moving", func(t *testing.T) rewriteCounts { return checkRewrites(t, kinds, byKeyKinds, 7, false, 1, 0) }, 1, 0, 3, false},
		// a dictionary growing at every rewrite: 8,192 rows through
		// FileWriter, 16,384 reframed, 32,768 (int32 indices: the schema
		// changed) from a probe, 32,769 reframed
		{"dictionary outgrowing int16 indices", func(t *testing.T) rewriteCounts {
			return checkRewrites(t, wide, byKeyWide, 8192, true, 1, 0)
		}, 1, 1, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.run(t)
			if got.full != tc.full || got.probes != tc.probes || got.reframes != tc.reframes {
				t.Errorf("%d rewrites through arrow-go's FileWriter, %d probes and %d reframes, want %d, %d and %d",
					got.full, got.probes, got.reframes, tc.full, tc.probes, tc.reframes)
			}
			if !got.encoded {
				t.Error("the last rewrite's batches went through arrow-go's encoder, not the frame's (batchenc.go)")
			}
			if got.direct != tc.direct {
				t.Errorf("the last rewrite's batches encoded from the column buffers: %v, want %v", got.direct, tc.direct)
			}
			if got.captured >= got.last {
				t.Errorf("the rewrites captured %d bytes, the last file is %d", got.captured, got.last)
			}
		})
	}
}

// checkRewrites adds rows in the order k*step mod n, rewriting on a
// doubling FlushSchedule of batch rows, and compares each rewrite's bytes
// with writeTableBatches'.
//
// With late > 0, every late-th row (counting from 0) is held back and
// added just before the next rewrite, after the rows that follow it: a
// row landing before rows already written, as a slow sweep point does.
// It returns what rewriteCounts counts.
func checkRewrites[T any](t *testing.T, rows []T, cmp func(a, b *T) int, batch int, grow bool, step, late int) rewriteCounts {
	meta := map[string]string{"sweep": "s"}
	dir := t.TempDir()
	path := filepath.Join(dir, "summary.arrow")
	a, err := OpenAppendFile(path, meta, false, cmp)
	if err != nil {
		t.Fatal(err)
	}
	a.BatchRows = batch
	if grow {
		a.Grow(len(rows))
	}
	var added, held []T
	rewrites := 0
	for k := range rows {
		r := rows[(k*step)%len(rows)]
		if late > 0 && k%late == 0 && k+1 != len(rows) {
			held = append(held, r)
			continue
		}
		a.Add(r)
		added = append(added, r)
		if k+1 != len(rows) && !a.Due(FlushSchedule{MinRows: batch}, 0) {
			continue
		}
		a.Add(held...)
		added = append(added, held...)
		held = held[:0]
		if err := a.Flush(); err != nil {
			t.Fatal(err)
		}
		rewrites++
		want := slices.Clone(added)
		slices.SortStableFunc(want, func(x, y T) int { return cmp(&x, &y) })
		ref := filepath.Join(dir, "ref.arrow")
		if err := writeTableBatches(memory.DefaultAllocator, ref, want, meta, batch); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(path)
		exp, _ := os.ReadFile(ref)
		if !bytes.Equal(got, exp) {
			t.Fatalf("rewrite %d (%d rows): %d bytes differ from writeTableBatches' %d", rewrites, len(want), len(got), len(exp))
		}
	}
	if rewrites < 4 {
		t.Errorf("only %d rewrites", rewrites)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return rewriteCounts{full: a.fullWrites, probes: a.probes, reframes: a.reframes, captured: a.captured, last: int(st.Size()),
		encoded: a.frame != nil && a.frame.enc != nil, direct: a.frame != nil && a.frame.direct}
}

// rewriteCounts are an AppendFile's rewrites through arrow-go's FileWriter
// (full), the frames it made from a file of the first batch (probes) and
// from the last frame with the grown dictionaries (reframes), the bytes
// the first two captured, the size of its last file, and whether its last
// rewrite's frame encoded the batches itself (encoded), from the table
// builder's column buffers (direct).
type rewriteCounts struct {
	full, probes, reframes, captured, last int
	encoded, direct                        bool
}

// dictionaryEdits returns copies of base whose dictionary columns hold a
// value more (a fourth row's precision fp8) and a value less (every row's
// recompute full).
func dictionaryEdits(base []SummaryRow) (more, fewer []SummaryRow) {
	more = slices.Clone(base)
	more[3].Precision = "fp8"
	fewer = slices.Clone(base)
	for i := range fewer {
		fewer[i].Recompute = "full"
	}
	return more, fewer
}

// TestTableBuilderRefresh: a builder refreshes onto rows whose dictionary
// columns hold the same distinct values (in any order and multiplicity),
// and refuses rows with a value more, a value less, or another row type.
func TestTableBuilderRefresh(t *testing.T) {
	base := sweepSummaryRows(40)
	tb := builtTable(t, base)
	more, fewer := dictionaryEdits(base)
	reordered := slices.Clone(base)
	slices.Reverse(reordered)
	for _, tc := range []struct {
		name string
		rows any
		want bool
	}{
		{"same rows", base, true},
		{"reordered and doubled", append(reordered, base...), true},
		{"a value more", more, false},
		{"a value less", fewer, false},
		{"another row type", makeRows[allKinds](3), false},
		{"not a slice", 3, false},
	} {
		if got := tb.refresh(tc.rows); got != tc.want {
			t.Errorf("%s: refresh %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestAppendFileKeepsStorageWhenDictionaryGrows: when a dictionary gains
// a value, the rewrite keeps its table builder (redict) with its column
// buffers and the new frame takes the old one's footer builder and
// metadata storage (already mapped), and the file is still
// writeTableBatches' (checked by TestAppendFileRewritesEqualWriteTable's
// late values).
func TestAppendFileKeepsStorageWhenDictionaryGrows(t *testing.T) {
	rows := sweepSummaryRows(64)
	for i := range rows {
		rows[i].GPU = []string{"h100-sxm", "z-late"}[i/48]
	}
	a, err := OpenAppendFile(filepath.Join(t.TempDir(), "summary.arrow"), map[string]string{"sweep": "s"}, false,
		func(a, b *SummaryRow) int { return strings.Compare(a.Name, b.Name) })
	if err != nil {
		t.Fatal(err)
	}
	a.BatchRows = 16
	a.Grow(len(rows))
	a.Add(rows[:16]...) // one batch: through FileWriter
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	if a.frame == nil {
		t.Fatal("no frame after the first rewrite")
	}
	fb, tb, scratch := a.frame.fb, a.tb, &a.tb.scratch[0]
	a.Add(rows[16:]...) // "z-late" arrives
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	if a.reframes != 1 || a.frame == nil {
		t.Fatalf("%d reframes, frame %v: want the dictionary's growth framed from the last frame", a.reframes, a.frame != nil)
	}
	if a.frame.fb != fb {
		t.Error("the new frame has a footer builder of its own, not the old frame's")
	}
	if a.tb != tb || &a.tb.scratch[0] != scratch {
		t.Error("a new table builder, or column buffers of its own, not the old builder's")
	}
}

// TestTableBuilderRedict: a builder refreshed onto rows whose dictionary
// values changed (a value more, a value less, a dictionary outgrowing
// int16 indices, several columns at once) and redicted writes the very
// file a new builder of those rows writes, after it had built batches
// over its old dictionaries; it keeps its schema unless an index type
// changed.
func TestTableBuilderRedict(t *testing.T) {
	base := sweepSummaryRows(40)
	more, fewer := dictionaryEdits(base)
	both := slices.Clone(more)
	both[7].GPU, both[9].Network = "b200", "fat-tree"
	narrow := make([]directKinds, maxInt16Dict)
	for i := range narrow {
		narrow[i].D = fmt.Sprintf("w%05d", i)
	}
	wide := append(slices.Clone(narrow), directKinds{D: "a-new"})
	for _, tc := range []struct {
		name       string
		from, to   any
		keepSchema bool
	}{
		{"a value more", base, more, true},
		{"a value less", base, fewer, true},
		{"values more in three columns", base, both, true},
		{"outgrowing int16 indices", narrow, wide, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := builtTable(t, tc.from)
			// batches over the old dictionaries, the last one's arrays held
			// for a next batch of as many rows (20 of 40)
			tableFile(t, tb, tb.n, 20)
			schema := tb.schema
			if tb.refresh(tc.to) {
				t.Fatal("refreshed onto other dictionary values")
			}
			if !tb.redict(tc.to) {
				t.Fatal("redict refused")
			}
			ref := builtTable(t, tc.to)
			got := tableFile(t, tb, tb.n, 20)
			want := tableFile(t, ref, ref.n, 20)
			if !bytes.Equal(got, want) {
				t.Errorf("%d bytes differ from a new builder's %d (first at %d)", len(got), len(want), firstDiff(got, want))
			}
			if (tb.schema == schema) != tc.keepSchema {
				t.Errorf("schema kept %v, want %v", tb.schema == schema, tc.keepSchema)
			}
			if !tb.refresh(tc.to) {
				t.Error("no refresh onto the same rows after redict")
			}
		})
	}
}
