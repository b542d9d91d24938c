package output

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// allKinds has one field of every supported kind, nullable and not.
type allKinds struct {
	I    int      `arrow:"i"`
	I32  int32    `arrow:"i32"`
	I64  int64    `arrow:"i64"`
	U64  uint64   `arrow:"u64"`
	F    float64  `arrow:"f"`
	S    string   `arrow:"s"`
	D    string   `arrow:"d,dict"`
	B    bool     `arrow:"b"`
	PI   *int     `arrow:"p_i"`
	PI32 *int32   `arrow:"p_i32"`
	PI64 *int64   `arrow:"p_i64"`
	PU64 *uint64  `arrow:"p_u64"`
	PF   *float64 `arrow:"p_f"`
	PS   *string  `arrow:"p_s"`
	PD   *string  `arrow:"p_d,dict"`
	PB   *bool    `arrow:"p_b"`
	Skip string   // untagged: not a column
	Dash string   `arrow:"-"`
}

var allKindsColumns = []string{"i", "i32", "i64", "u64", "f", "s", "d", "b", "p_i", "p_i32", "p_i64", "p_u64", "p_f", "p_s", "p_d", "p_b"}

var allKindsTypes = []string{"int64", "int32", "int64", "uint64", "float64", "utf8",
	"dictionary<values=utf8, indices=int16, ordered=false>", "bool",
	"int64", "int32", "int64", "uint64", "float64", "utf8",
	"dictionary<values=utf8, indices=int16, ordered=false>", "bool"}

// roundTrip writes rows with a checked allocator, reads them back and
// compares.
func roundTrip[T any](t *testing.T, rows []T, meta map[string]string) (TableInfo, map[string]string) {
	t.Helper()
	mem := checkedMem(t)
	path := tempPath(t, "t.arrow")
	if err := writeTable(mem, path, rows, meta); err != nil {
		t.Fatal(err)
	}
	var got []T
	gotMeta, err := readTable(mem, path, &got)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 && len(got) == 0 {
		// nil and empty both mean no rows
	} else if !reflect.DeepEqual(got, rows) {
		for i := range rows {
			if !reflect.DeepEqual(got[i], rows[i]) {
				t.Fatalf("row %d:\n got %+v\nwant %+v", i, got[i], rows[i])
			}
		}
		t.Fatalf("got %d rows, want %d", len(got), len(rows))
	}
	info, err := readTableInfo(mem, path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Rows != int64(len(rows)) {
		t.Errorf("info.Rows = %d, want %d", info.Rows, len(rows))
	}
	return info, gotMeta
}

func TestRoundTripProjectTables(t *testing.T) {
	for _, n := range []int{0, 1, 5} {
		roundTrip(t, makeRows[SummaryRow](n), map[string]string{"run_id": "x"})
		roundTrip(t, makeRows[MemoryRow](n), nil)
		roundTrip(t, makeRows[LinkRow](n), nil)
		roundTrip(t, makeRows[TimelineRow](n), nil)
	}
}

func TestRoundTripAllKindsAndNulls(t *testing.T) {
	rows := makeRows[allKinds](10)
	rows[0].S = "" // empty strings are values, not nulls
	rows[1].F = -0.5
	info, _ := roundTrip(t, rows, nil)
	if !slices.Equal(info.Columns, allKindsColumns) {
		t.Errorf("columns %q, want %q", info.Columns, allKindsColumns)
	}
	if !slices.Equal(info.Types, allKindsTypes) {
		t.Errorf("types %q, want %q", info.Types, allKindsTypes)
	}
	// fillRow leaves pointers nil on rows 2, 5 and 8.
	if rows[2].PS != nil || rows[3].PS == nil {
		t.Fatal("fillRow did not make the expected nulls")
	}
}

func TestEmptyTable(t *testing.T) {
	for _, rows := range []any{[]allKinds{}, []allKinds(nil), &[]allKinds{}} {
		mem := checkedMem(t)
		path := tempPath(t, "e.arrow")
		if err := writeTable(mem, path, rows, map[string]string{"k": "v"}); err != nil {
			t.Fatal(err)
		}
		info, err := readTableInfo(mem, path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Rows != 0 || info.Batches != 0 || !slices.Equal(info.Columns, allKindsColumns) || info.Meta["k"] != "v" {
			t.Errorf("empty table info %+v", info)
		}
		var got []allKinds
		if _, err := readTable(mem, path, &got); err != nil || len(got) != 0 {
			t.Errorf("read empty: %v, %d rows", err, len(got))
		}
	}
}

func TestMetadata(t *testing.T) {
	meta := map[string]string{"run_id": "abc", "scenario": "q.yaml", "schema_version": "999", "z": ""}
	info, got := roundTrip(t, makeRows[MemoryRow](3), meta)
	want := map[string]string{"run_id": "abc", "scenario": "q.yaml", "schema_version": SchemaVersion, "z": ""}
	// Every file also carries its checksum (integrity.go).
	if sum := got[MetaChecksum]; len(sum) != 64 || strings.Trim(sum, "0123456789abcdef") != "" || sum == checksumPlaceholder {
		t.Errorf("checksum %q", sum)
	}
	want[MetaChecksum] = got[MetaChecksum]
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(info.Meta, want) {
		t.Errorf("metadata %v, want %v (a caller's schema_version is replaced)", got, want)
	}
}

// TestDictionaryAcrossBatches writes 3 batches whose dictionary column has
// values that first appear in different batches: the one dictionary is the
// sorted distinct values of the whole column, so every batch shares it.
func TestDictionaryAcrossBatches(t *testing.T) {
	n := 2*BatchRows + 10 // 3 batches: 65536, 65536, 10 rows
	rows := make([]LinkRow, n)
	for i := range rows {
		rows[i] = LinkRow{Link: int32(i), Kind: "nvlink"}
	}
	rows[BatchRows+3].Kind = "ib"       // only in batch 2
	rows[n-1].Kind = "pcie"             // only in batch 3
	rows[0].Kind, rows[1].Kind = "", "" // "" is a value of its own
	info, _ := roundTrip(t, rows, nil)
	if info.Batches != 3 {
		t.Errorf("batches = %d, want 3", info.Batches)
	}
}

func TestLargeDictionaryUsesInt32Indices(t *testing.T) {
	n := maxInt16Dict + 1 // one more distinct value than int16 indices address
	rows := make([]LinkRow, n)
	for i := range rows {
		rows[i].Kind = "k" + strconv.Itoa(i)
	}
	info, _ := roundTrip(t, rows, nil)
	if got, want := info.Types[3], "dictionary<values=utf8, indices=int32, ordered=false>"; got != want {
		t.Errorf("kind type %s, want %s", got, want)
	}
}

func TestInvalidUTF8IsReplaced(t *testing.T) {
	rows := []LinkRow{{From: "a\xffb", Kind: "x\xfe"}}
	mem := checkedMem(t)
	path := tempPath(t, "u.arrow")
	if err := writeTable(mem, path, rows, nil); err != nil {
		t.Fatal(err)
	}
	var got []LinkRow
	if _, err := readTable(mem, path, &got); err != nil {
		t.Fatal(err)
	}
	if got[0].From != "a\uFFFDb" || got[0].Kind != "x\uFFFD" {
		t.Errorf("got %q %q", got[0].From, got[0].Kind)
	}
}

func TestWriteTableDeterministic(t *testing.T) {
	rows := makeRows[SummaryRow](100)
	meta := map[string]string{"b": "2", "a": "1", "c": "3"}
	var files [2][]byte
	for i := range files {
		path := tempPath(t, "d.arrow")
		if err := WriteTable(path, rows, meta); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		files[i] = b
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Error("two writes of the same rows differ")
	}
}

func TestWriteTableBadInput(t *testing.T) {
	type noTags struct{ A int }
	type badKind struct {
		A float32 `arrow:"a"`
	}
	type badDict struct {
		A int `arrow:"a,dict"`
	}
	type badOpt struct {
		A string `arrow:"a,zstd"`
	}
	type dup struct {
		A int `arrow:"a"`
		B int `arrow:"a"`
	}
	type unexported struct {
		a int `arrow:"a"`
	}
	type emptyName struct {
		A int `arrow:",dict"`
	}
	tests := []struct {
		rows any
		want string
	}{
		{nil, "rows must be a slice of structs, got <nil>"},
		{42, "rows must be a slice of structs, got int"},
		{[]int{1}, "rows must be a slice of structs, got []int"},
		{[]noTags{{}}, "has no arrow-tagged fields"},
		{[]badKind{{}}, "badKind.A: unsupported type float32 (valid: int, int32, int64, uint64, float64, string, bool, or a pointer to one of these)"},
		{[]badDict{{}}, "badDict.A: ,dict needs a string field, not int"},
		{[]badOpt{{}}, `badOpt.A: unknown arrow tag option "zstd" (valid: dict)`},
		{[]dup{{}}, `dup.B: column "a" already used by field A`},
		{[]unexported{{}}, "unexported.a: arrow-tagged field must be exported"},
		{[]emptyName{{}}, "emptyName.A: empty arrow column name"},
	}
	for _, tc := range tests {
		dir := t.TempDir()
		err := WriteTable(dir+"/x.arrow", tc.rows, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("WriteTable(%T): error %v, want it to contain %q", tc.rows, err, tc.want)
		}
		if names := dirEntries(t, dir); len(names) != 0 {
			t.Errorf("WriteTable(%T) left %v", tc.rows, names)
		}
	}
}

func TestReadTableErrors(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/m.arrow"
	if err := WriteTable(path, []MemoryRow{{Rank: 1}}, nil); err != nil {
		t.Fatal(err)
	}
	nullPath := dir + "/n.arrow"
	type nullable struct {
		Rank *int64 `arrow:"rank"`
	}
	if err := WriteTable(nullPath, []nullable{{}}, nil); err != nil {
		t.Fatal(err)
	}
	notArrow := dir + "/x.txt"
	os.WriteFile(notArrow, []byte("hello, not arrow"), 0o644)

	type missing struct {
		Nope int64 `arrow:"nope"`
	}
	type wrongType struct {
		Rank string `arrow:"rank"`
	}
	type narrower struct {
		Total int32 `arrow:"total_bytes"` // file has int64
	}
	type rankOnly struct {
		Rank int64 `arrow:"rank"`
	}
	type subset struct {
		Rank  int   `arrow:"rank"`
		Stage int64 `arrow:"stage"`
	}
	var ok []subset
	if _, err := ReadTable(path, &ok); err != nil || len(ok) != 1 || ok[0].Rank != 1 {
		t.Errorf("reading a subset of columns: %v %+v", err, ok)
	}
	tests := []struct {
		path string
		out  any
		want string
	}{
		{path, []MemoryRow{}, "out must be a non-nil *[]struct, got []output.MemoryRow"},
		{path, (*[]MemoryRow)(nil), "out must be a non-nil *[]struct"},
		{path, &[]missing{}, `column "nope" (field Nope) not in file; file has [rank node stage`},
		{path, &[]wrongType{}, `column "rank" has type int32, cannot read into field Rank (string)`},
		{path, &[]narrower{}, `column "total_bytes" has type int64, cannot read into field Total (int32)`},
		{nullPath, &[]rankOnly{}, `column "rank" row 0 is null but field Rank is not a pointer`},
		{dir + "/absent.arrow", &[]MemoryRow{}, "no such file"},
		{notArrow, &[]MemoryRow{}, "not an Arrow IPC file"},
	}
	for _, tc := range tests {
		_, err := ReadTable(tc.path, tc.out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadTable(%T): error %v, want it to contain %q", tc.out, err, tc.want)
		}
	}
}

// TestReadTableWidens reads int32/float32-free narrower columns into wider
// fields and a dictionary column into a plain string field.
func TestReadTableWidens(t *testing.T) {
	type narrow struct {
		A int32  `arrow:"a"`
		D string `arrow:"d,dict"`
		S string `arrow:"s"`
	}
	type wide struct {
		A int64   `arrow:"a"`
		D *string `arrow:"d"`
		S string  `arrow:"s,dict"`
	}
	path := tempPath(t, "w.arrow")
	if err := WriteTable(path, []narrow{{A: -3, D: "x", S: "y"}}, nil); err != nil {
		t.Fatal(err)
	}
	var got []wide
	if _, err := ReadTable(path, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].A != -3 || got[0].D == nil || *got[0].D != "x" || got[0].S != "y" {
		t.Errorf("got %+v", got)
	}
}

// TestReadOlderSchemaNamesTheVersion: a file of another schema_version that
// lacks a column says which version wrote it, besides the column.
func TestReadOlderSchemaNamesTheVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.arrow")
	md := arrow.NewMetadata([]string{MetaSchemaVersion}, []string{"0"})
	sc := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, &md)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.Append(1)
	col := b.NewArray()
	rec := array.NewRecordBatch(sc, []arrow.Array{col}, 1)
	if err := os.WriteFile(path, ipcBytes(t, rec), 0o644); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	col.Release()
	b.Release()
	var rows []struct {
		A int64 `arrow:"a"`
		B int64 `arrow:"b"`
	}
	_, err := ReadTable(path, &rows)
	if err == nil || !strings.Contains(err.Error(), "written with schema_version 0, this simtrain reads "+SchemaVersion) || !strings.Contains(err.Error(), `column "b"`) {
		t.Errorf("got %v", err)
	}
}
