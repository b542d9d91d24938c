package output

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestWriteLinksEqualsWriteTable checks WriteLinks writes the very bytes
// WriteTable writes for the same rows: no rows, one batch, several batches
// with kinds first seen in later batches, invalid UTF-8, and more distinct
// kinds than int16 indices address.
func TestWriteLinksEqualsWriteTable(t *testing.T) {
	many := make([]LinkRow, maxInt16Dict+1)
	for i := range many {
		many[i] = LinkRow{Link: int32(i), Kind: "k" + strconv.Itoa(i%(maxInt16Dict+1))}
	}
	several := makeRows[LinkRow](2*BatchRows + 10)
	for i := range several {
		several[i].Kind = []string{"nvlink", "pcie", "network"}[i/1000%3]
	}
	several[BatchRows+3].Kind = "ib"
	several[len(several)-1].Kind = ""
	several[7].From, several[8].To, several[9].Kind = "a\xffb", "\xfe", "x\xfe"
	for _, tc := range []struct {
		name  string
		rows  []LinkRow
		batch int
	}{
		{"empty", []LinkRow{}, BatchRows},
		{"one batch", makeRows[LinkRow](40), BatchRows},
		{"several batches", several, BatchRows},
		{"uneven batches", makeRows[LinkRow](1000), 7},
		{"int32 kind indices", many, BatchRows},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := checkedMem(t)
			meta := map[string]string{"run_id": "r", "scenario": "s"}
			want, got := tempPath(t, "table.arrow"), tempPath(t, "links.arrow")
			withBuilders(t, func() { // the builders' bytes, not WriteTable's direct columns
				if err := writeTableBatches(mem, want, tc.rows, meta, tc.batch); err != nil {
					t.Fatal(err)
				}
			})
			a, err := os.ReadFile(want)
			if err != nil {
				t.Fatal(err)
			}
			row := func(i int) LinkRow { return tc.rows[i] }
			// The kind dictionary read through row, then through kind.
			for _, kind := range []func(i int) string{nil, func(i int) string { return tc.rows[i].Kind }} {
				if err := writeLinks(mem, got, len(tc.rows), row, kind, meta, tc.batch); err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(got)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(a, b) {
					t.Errorf("WriteLinks (kind func %v) wrote %d bytes that differ from WriteTable's %d", kind != nil, len(b), len(a))
				}
			}
		})
	}
}

// BenchmarkWriteLinks writes 1.5 M links rows (a 131,072-GPU cluster's
// links.arrow) with WriteLinks and, for comparison, with WriteTable of the
// same rows held in a slice.
//
//	go test ./sim/output -run '^$' -bench WriteLinks -benchtime 3x
func BenchmarkWriteLinks(b *testing.B) {
	const n = 1_500_000
	names := make([]string, 400_000)
	for i := range names {
		names[i] = "n" + strconv.Itoa(i/8) + "/gpu" + strconv.Itoa(i%8)
	}
	kinds := []string{"nvlink", "pcie", "network"}
	row := func(i int) LinkRow {
		return LinkRow{Link: int32(i), From: names[i/4%len(names)], To: names[(i*7)%len(names)], Kind: kinds[i*3/n],
			BandwidthBytesPerS: 4.5e11, Bytes: int64(i) * 1000, BusyNs: int64(i), Utilization: float64(i) / n}
	}
	path := filepath.Join(b.TempDir(), "links.arrow")
	b.Run("WriteLinks", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := WriteLinks(path, n, row, func(i int) string { return kinds[i*3/n] }, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("WriteTable", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rows := make([]LinkRow, n)
			for i := range rows {
				rows[i] = row(i)
			}
			if err := WriteTable(path, rows, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
