package output

import (
	"bytes"
	"os"
	"strconv"
	"testing"
)

// withBuilders runs fn with every column built by the Arrow builders, as
// before direct columns (direct.go), for byte comparisons.
func withBuilders(t *testing.T, fn func()) {
	t.Helper()
	directColumns = false
	defer func() { directColumns = true }()
	fn()
}

// writeBoth writes rows with WriteTable's direct columns and with the
// builders, in batches of batch rows, and returns both files' bytes.
func writeBoth[T any](t *testing.T, rows []T, batch int) (direct, built []byte) {
	t.Helper()
	meta := map[string]string{"run_id": "r"}
	pd, pb := tempPath(t, "direct.arrow"), tempPath(t, "built.arrow")
	if err := writeTableBatches(checkedMem(t), pd, rows, meta, batch); err != nil {
		t.Fatal(err)
	}
	withBuilders(t, func() {
		if err := writeTableBatches(checkedMem(t), pb, rows, meta, batch); err != nil {
			t.Fatal(err)
		}
	})
	var err error
	if direct, err = os.ReadFile(pd); err != nil {
		t.Fatal(err)
	}
	if built, err = os.ReadFile(pb); err != nil {
		t.Fatal(err)
	}
	return direct, built
}

// TestWriteTableDirectEqualsBuilders checks that the columns WriteTable
// reads straight from the rows' memory give the very bytes the Arrow
// builders give: every kind beside its nullable twin, one and several
// batches, a batch whose booleans end mid-byte, invalid UTF-8 in plain and
// dictionary strings, int32 dictionary indices, and every row type of the
// package.
func TestWriteTableDirectEqualsBuilders(t *testing.T) {
	odd := makeRows[allKinds](1001)
	odd[5].S, odd[6].D = "a\xffb", "\xfe"
	odd[7].B, odd[8].B = true, true
	wide := make([]allKinds, maxInt16Dict+2)
	for i := range wide {
		wide[i].D = "k" + strconv.Itoa(i)
		wide[i].B = i%3 == 0
	}
	mem := makeRows[MemoryRow](BatchRows + 77)
	for _, tc := range []struct {
		name   string
		direct func(t *testing.T) ([]byte, []byte)
	}{
		{"one batch", func(t *testing.T) ([]byte, []byte) { return writeBoth(t, makeRows[allKinds](40), BatchRows) }},
		{"uneven batches", func(t *testing.T) ([]byte, []byte) { return writeBoth(t, odd, 13) }},
		{"one row", func(t *testing.T) ([]byte, []byte) { return writeBoth(t, odd[7:8], BatchRows) }},
		{"int32 dictionary indices", func(t *testing.T) ([]byte, []byte) { return writeBoth(t, wide, BatchRows) }},
		{"memory rows", func(t *testing.T) ([]byte, []byte) { return writeBoth(t, mem, BatchRows) }},
		{"summary rows", func(t *testing.T) ([]byte, []byte) { return writeBoth(t, makeRows[SummaryRow](5), BatchRows) }},
		{"step rows", func(t *testing.T) ([]byte, []byte) { return writeBoth(t, makeRows[StepRow](300), 128) }},
		{"goodput rows", func(t *testing.T) ([]byte, []byte) { return writeBoth(t, makeRows[GoodputRow](50), BatchRows) }},
		{"goodput summary rows", func(t *testing.T) ([]byte, []byte) { return writeBoth(t, makeRows[GoodputSummaryRow](9), 4) }},
		{"validation rows", func(t *testing.T) ([]byte, []byte) { return writeBoth(t, makeRows[ValidationRow](33), BatchRows) }},
		{"timeline rows", func(t *testing.T) ([]byte, []byte) { return writeBoth(t, makeTimeline(1000), 300) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			direct, built := tc.direct(t)
			if !bytes.Equal(direct, built) {
				t.Errorf("direct columns wrote %d bytes that differ from the builders' %d", len(direct), len(built))
			}
		})
	}
}

// TestGrownBytes: the bytes and length kept, room for more after them and
// at least twice the old capacity (append's growth, so that adds stay
// amortised), in a new array.
func TestGrownBytes(t *testing.T) {
	for _, c := range []struct {
		b    []byte
		more int
	}{
		{nil, 0},
		{nil, 10},
		{[]byte("abc"), 1},
		{append(make([]byte, 0, 8192), "hello"...), 1},
		{bytes.Repeat([]byte("x"), 5000), 20000},
	} {
		g := grownBytes(c.b, c.more)
		if !bytes.Equal(g, c.b) || len(g) != len(c.b) {
			t.Errorf("grownBytes(%q…, %d) = %q…, want the same bytes", c.b[:min(len(c.b), 8)], c.more, g[:min(len(g), 8)])
		}
		if cap(g) < len(c.b)+c.more || cap(g) < 2*cap(c.b) {
			t.Errorf("grownBytes(len %d cap %d, %d): cap %d", len(c.b), cap(c.b), c.more, cap(g))
		}
		if cap(c.b) > 0 && &g[:1][0] == &c.b[:1][0] {
			t.Errorf("grownBytes(len %d cap %d, %d) kept the old array", len(c.b), cap(c.b), c.more)
		}
	}
}

// TestMappedRows: make's slice, n zero rows, however many pages it spans
// (none, part of one, several mapped ahead).
func TestMappedRows(t *testing.T) {
	for _, n := range []int{0, 1, 100, 100_000} {
		rows := MappedRows[MemoryRow](n)
		if len(rows) != n {
			t.Fatalf("MappedRows(%d): len %d", n, len(rows))
		}
		for i, r := range rows {
			if r != (MemoryRow{}) {
				t.Fatalf("MappedRows(%d)[%d] = %+v, want zero", n, i, r)
			}
		}
	}
	if b := buffers.New().(interface{ Available() int }); b.Available() != 1<<20 {
		t.Errorf("a pooled writer has %d bytes free, want 1 MiB", b.Available())
	}
}
