package output

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestParquetRoundTrip(t *testing.T) {
	mem := checkedMem(t)
	for _, n := range []int{0, 3, BatchRows + 7} {
		path := tempPath(t, "s.parquet")
		rows := makeRows[allKinds](n)
		if err := writeParquet(mem, path, rows, map[string]string{"run_id": "r"}); err != nil {
			t.Fatal(err)
		}
		var got []allKinds
		meta, err := readParquet(path, &got)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 && !reflect.DeepEqual(got, rows) || len(got) != n {
			t.Errorf("%d rows: round trip differs", n)
		}
		if len(meta[MetaChecksum]) != 64 {
			t.Errorf("no checksum in %v", meta)
		}
		delete(meta, MetaChecksum)
		if want := map[string]string{"run_id": "r", "schema_version": SchemaVersion}; !reflect.DeepEqual(meta, want) {
			t.Errorf("metadata %v, want %v", meta, want)
		}
	}
}

func TestParquetTimeline(t *testing.T) {
	rows := makeTimeline(1000)
	path := tempPath(t, "t.parquet")
	if err := WriteParquet(path, rows, nil); err != nil {
		t.Fatal(err)
	}
	var got []TimelineRow
	if _, err := ReadParquet(path, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rows) {
		t.Error("round trip differs")
	}
}

// TestArrowToParquet: a converted Arrow file reads back as the same rows
// with the same metadata, for a small table and a multi-batch timeline.
func TestArrowToParquet(t *testing.T) {
	mem := checkedMem(t)
	src, dst := tempPath(t, "m.arrow"), tempPath(t, "m.parquet")
	rows := makeRows[allKinds](50)
	if err := writeTable(mem, src, rows, map[string]string{"run_id": "r"}); err != nil {
		t.Fatal(err)
	}
	if err := arrowToParquet(mem, src, dst); err != nil {
		t.Fatal(err)
	}
	var got []allKinds
	meta, err := readParquet(dst, &got)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rows) {
		t.Error("table: round trip differs")
	}
	// The Parquet file carries its own checksum, not the Arrow file's.
	if srcMeta, _ := ReadTableInfo(src); meta[MetaChecksum] == "" || meta[MetaChecksum] == srcMeta.Meta[MetaChecksum] {
		t.Errorf("checksum %q (the Arrow file's: %q)", meta[MetaChecksum], srcMeta.Meta[MetaChecksum])
	}
	delete(meta, MetaChecksum)
	if want := map[string]string{"run_id": "r", "schema_version": SchemaVersion}; !reflect.DeepEqual(meta, want) {
		t.Errorf("metadata %v, want %v", meta, want)
	}

	tl := makeTimeline(2*BatchRows + 5)
	w, err := newTimelineWriter(mem, src, map[string]string{"ranks": "0-7"}, testDicts)
	if err != nil {
		t.Fatal(err)
	}
	for lo := 0; lo < len(tl); lo += 10000 {
		if err := w.Write(tl[lo:min(lo+10000, len(tl))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := arrowToParquet(mem, src, dst); err != nil {
		t.Fatal(err)
	}
	var gotTL []TimelineRow
	meta, err = readParquet(dst, &gotTL)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotTL, tl) {
		t.Error("timeline: round trip differs")
	}
	if meta["ranks"] != "0-7" {
		t.Errorf("timeline metadata %v lacks ranks", meta)
	}
	if err := ArrowToParquet(tempPath(t, "absent.arrow"), dst); err == nil {
		t.Error("converting a missing file: no error")
	}
}

// TestParquetErrors: a column of the wrong type, a missing column and a file
// cut at any length are errors that name the problem, never panics.
func TestParquetErrors(t *testing.T) {
	path := tempPath(t, "l.parquet")
	if err := WriteParquet(path, makeRows[LinkRow](10), nil); err != nil {
		t.Fatal(err)
	}
	type wrongType struct {
		Link string `arrow:"link"`
	}
	type missing struct {
		Hops int64 `arrow:"hops"`
	}
	var wt []wrongType
	if _, err := ReadParquet(path, &wt); err == nil || !strings.Contains(err.Error(), `column "link" has type INT32`) {
		t.Errorf("wrong type: error %v", err)
	}
	var ms []missing
	if _, err := ReadParquet(path, &ms); err == nil || !strings.Contains(err.Error(), `column "hops" (field Hops) not in file`) {
		t.Errorf("missing column: error %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cut := tempPath(t, "cut.parquet")
	for n := 0; n < len(b); n += 17 {
		if err := os.WriteFile(cut, b[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		var rows []LinkRow
		if _, err := ReadParquet(cut, &rows); err == nil {
			t.Errorf("file cut at %d of %d bytes read without error", n, len(b))
		}
	}
}

// duckdbRow is the table of testdata/parquet/duckdb-*.parquet, written by
// DuckDB 1.5 (testdata/parquet/duckdb-gen.mjs) for i in [0, 300).
type duckdbRow struct {
	I64    int64   `arrow:"i64"`
	I32    int32   `arrow:"i32"`
	OptI64 *int64  `arrow:"opt_i64"`
	F64    float64 `arrow:"f64"`
	F32    float64 `arrow:"f32"`
	B      *bool   `arrow:"b"`
	S      *string `arrow:"s"`
	U      string  `arrow:"u"`
	U64    uint64  `arrow:"u64"`
}

// TestParquetFromDuckDB: files another writer made, in every codec it
// offers and in both page versions (v2 with DELTA_BINARY_PACKED,
// DELTA_LENGTH_BYTE_ARRAY and BYTE_STREAM_SPLIT values), read back as the
// table DuckDB was given.
func TestParquetFromDuckDB(t *testing.T) {
	want := make([]duckdbRow, 300)
	for i := range want {
		r := &want[i]
		r.I64, r.I32 = int64(i), int32(i*7-20)
		if i%4 != 0 {
			v := int64(i) * 1000000007
			r.OptI64 = &v
		}
		r.F64, r.F32 = float64(i)/8, float64(float32(float64(i)/4))
		if i%5 != 0 {
			b := i%3 == 0
			r.B = &b
		}
		if i%6 != 0 {
			s := "kind-" + strconv.Itoa(i%4)
			r.S = &s
		}
		r.U, r.U64 = "row "+strconv.Itoa(i), uint64(i%2)
	}
	for _, name := range []string{"gzip-v1", "lz4raw-v1", "none-v1", "snappy-v1", "zstd-v1", "snappy-v2", "zstd-v2"} {
		var got []duckdbRow
		if _, err := ReadParquet("testdata/parquet/duckdb-"+name+".parquet", &got); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			for i := range got {
				if i < len(want) && !reflect.DeepEqual(got[i], want[i]) {
					t.Errorf("%s: row %d differs: %+v, want %+v", name, i, got[i], want[i])
					break
				}
			}
			t.Errorf("%s: %d rows read, want %d", name, len(got), len(want))
		}
	}
}

// TestParquetFromArrowGo: a links table written by arrow-go's Parquet
// writer (simtrain before issue 18: dictionary-encoded numbers, statistics)
// reads as the Arrow file written with it.
func TestParquetFromArrowGo(t *testing.T) {
	var fromArrow, fromParquet []LinkRow
	if _, err := ReadTable("testdata/parquet/arrowgo-links.arrow", &fromArrow); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadParquet("testdata/parquet/arrowgo-links.parquet", &fromParquet); err != nil {
		t.Fatal(err)
	}
	if len(fromArrow) == 0 || !reflect.DeepEqual(fromArrow, fromParquet) {
		t.Errorf("%d rows from Parquet differ from the %d of the Arrow file", len(fromParquet), len(fromArrow))
	}
}
