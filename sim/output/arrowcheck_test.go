package output

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// manifestEntry is one file for .ci/arrowcheck/check.mjs: expected column
// names in order and row count (-1: at least one).
type manifestEntry struct {
	Path    string   `json:"path"`
	Columns []string `json:"columns"`
	Rows    int      `json:"rows"`
}

// TestWriteArrowCheckSamples writes one sample of every table simtrain
// ships, plus manifest.json, into $ARROWCHECK_DIR, for the independent
// JavaScript reader, and damaged files that the reader must reject into
// $ARROWCHECK_DIR/bad:
//
//	ARROWCHECK_DIR=/tmp/ac go test ./sim/output -run ArrowCheck
//	cd .ci/arrowcheck && npm ci
//	node check.mjs /tmp/ac/manifest.json                  # every file ok
//	node check.mjs --expect-fail /tmp/ac/bad/manifest.json  # every file FAIL
//
// It is skipped when ARROWCHECK_DIR is not set.
func TestWriteArrowCheckSamples(t *testing.T) {
	dir := os.Getenv("ARROWCHECK_DIR")
	if dir == "" {
		t.Skip("ARROWCHECK_DIR not set")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var manifest []manifestEntry
	table := func(name string, rows any, n int) {
		path := filepath.Join(dir, name)
		if err := WriteTable(path, rows, map[string]string{"sample": name}); err != nil {
			t.Fatal(err)
		}
		info, err := ReadTableInfo(path)
		if err != nil {
			t.Fatal(err)
		}
		manifest = append(manifest, manifestEntry{Path: name, Columns: info.Columns, Rows: n})
	}
	table("summary.arrow", makeRows[SummaryRow](3), 3)
	table("memory.arrow", makeRows[MemoryRow](16), 16)
	table("links.arrow", makeRows[LinkRow](40), 40)
	table("links_empty.arrow", []LinkRow{}, 0)

	timeline := func(name string, n int) {
		w, err := NewTimelineWriter(filepath.Join(dir, name), map[string]string{"sample": name}, testDicts)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Abort()
		rows := makeTimeline(n)
		for lo := 0; lo < n; lo += 10000 {
			if err := w.Write(rows[lo:min(lo+10000, n)]); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		manifest = append(manifest, manifestEntry{Path: name, Columns: TimelineColumns(), Rows: n})
	}
	timeline("timeline.arrow", 2*BatchRows+1000) // 3 batches sharing fixed dictionaries
	timeline("timeline_empty.arrow", 0)

	b, err := json.MarshalIndent(manifest, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	writeBadSamples(t, filepath.Join(dir, "bad"))
}

// writeBadSamples writes files that check.mjs must reject, and their
// manifest, into dir: CI runs `node check.mjs --expect-fail
// $ARROWCHECK_DIR/bad/manifest.json` to prove that the checker does catch
// each kind of damage.
func writeBadSamples(t *testing.T, dir string) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.arrow")
	if err := WriteTable(good, makeRows[LinkRow](10), nil); err != nil {
		t.Fatal(err)
	}
	info, err := ReadTableInfo(good)
	if err != nil {
		t.Fatal(err)
	}
	cols := info.Columns
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("truncated.arrow", b[:len(b)-100]) // footer gone: what a killed non-atomic writer leaves
	write("compressed.arrow", writeRawIPC(t, ipc.WithZstd(), false, true))
	write("bad_dict_index.arrow", writeRawIPC(t, nil, true, true))
	write("no_schema_version.arrow", writeRawIPC(t, nil, false, false))

	swapped := append([]string{cols[1], cols[0]}, cols[2:]...)
	manifest := []manifestEntry{
		{Path: "good.arrow", Columns: swapped, Rows: 10}, // wrong column order
		{Path: "good.arrow", Columns: cols, Rows: 11},    // wrong row count
		{Path: "truncated.arrow", Columns: cols, Rows: 10},
		{Path: "compressed.arrow", Columns: []string{"kind"}, Rows: 3},
		{Path: "bad_dict_index.arrow", Columns: []string{"kind"}, Rows: 3},
		{Path: "no_schema_version.arrow", Columns: []string{"kind"}, Rows: 3},
		{Path: "absent.arrow", Columns: cols, Rows: -1},
	}
	mb, err := json.MarshalIndent(manifest, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	write("manifest.json", append(mb, '\n'))
}

// writeRawIPC writes a one-column dictionary file with the raw arrow-go API,
// bypassing this package's guarantees: with opt (e.g. zstd compression),
// with an index past the end of the dictionary when badIndex, and with
// schema_version in its metadata only when version.
func writeRawIPC(t *testing.T, opt ipc.Option, badIndex, version bool) []byte {
	mem := memory.DefaultAllocator
	dt := dictType(2)
	var md *arrow.Metadata
	if version {
		m := schemaMetadata(nil)
		md = &m
	}
	sc := arrow.NewSchema([]arrow.Field{{Name: "kind", Type: dt}}, md)
	dict := newFixedDict(mem, []string{"ib", "nvlink"})
	defer dict.release()
	ib := array.NewInt16Builder(mem)
	defer ib.Release()
	last := int16(1)
	if badIndex {
		last = 1000
	}
	ib.AppendValues([]int16{0, 1, last}, nil)
	idx := ib.NewArray()
	defer idx.Release()
	col := array.NewDictionaryArray(dt, idx, dict.arr)
	defer col.Release()
	rec := array.NewRecordBatch(sc, []arrow.Array{col}, 3)
	defer rec.Release()
	opts := []ipc.Option{ipc.WithAllocator(mem)}
	if opt != nil {
		opts = append(opts, opt)
	}
	return ipcBytes(t, rec, opts...)
}

// ipcBytes is rec as an Arrow IPC file written with the raw arrow-go API.
func ipcBytes(t *testing.T, rec arrow.RecordBatch, opts ...ipc.Option) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := ipc.NewFileWriter(&buf, append([]ipc.Option{ipc.WithSchema(rec.Schema())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestReadDamagedFiles: ReadTable reports damaged files as errors, never
// panics.
func TestReadDamagedFiles(t *testing.T) {
	dir := t.TempDir()
	writeBadSamples(t, dir)
	type kindOnly struct {
		Kind string `arrow:"kind"`
	}
	for _, tc := range []struct{ file, want string }{
		{"truncated.arrow", "not an Arrow IPC file"},
		{"bad_dict_index.arrow", `column "kind" row 2: dictionary index 1000 out of range [0, 2)`},
	} {
		var rows []kindOnly
		_, err := ReadTable(filepath.Join(dir, tc.file), &rows)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.file, err, tc.want)
		}
	}
	// A good file cut at any length (a partial copy, a full disk) is an
	// error, never a panic. (Arbitrary byte flips are not tested: arrow-go
	// v18.8.0 sizes a slice from the schema flatbuffer's child count, so a
	// flipped count can exhaust memory before any check; simtrain only
	// reads files it wrote.)
	b, err := os.ReadFile(filepath.Join(dir, "good.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(b); n += 13 {
		p := filepath.Join(dir, "cut.arrow")
		os.WriteFile(p, b[:n], 0o644)
		var rows []LinkRow
		if _, err := ReadTable(p, &rows); err == nil {
			t.Errorf("file cut at %d of %d bytes read without error", n, len(b))
		}
		if _, err := ReadTableInfo(p); err == nil {
			t.Errorf("file cut at %d of %d bytes: ReadTableInfo without error", n, len(b))
		}
	}
}
