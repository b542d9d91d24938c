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
