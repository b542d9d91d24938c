package parquet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"reflect"
	"testing"
)

// TestBitPackedSpecExample: the example of Encodings.md ("Bit-packed"):
// the values 0..7 at bit width 3 pack into 10001000 11000110 11111010.
func TestBitPackedSpecExample(t *testing.T) {
	got := appendBitPacked(nil, []int32{0, 1, 2, 3, 4, 5, 6, 7}, 3)
	want := []byte{1<<1 | 1, 0b10001000, 0b11000110, 0b11111010} // header: 1 group, bit-packed
	if !bytes.Equal(got, want) {
		t.Fatalf("packed % x, want % x", got, want)
	}
	out := make([]int32, 8)
	if err := decodeHybrid(got, 3, out); err != nil || !reflect.DeepEqual(out, []int32{0, 1, 2, 3, 4, 5, 6, 7}) {
		t.Errorf("decoded %v, %v", out, err)
	}
}

// TestHybridRuns: hand-built RLE and bit-packed runs of the hybrid
// encoding decode as the spec defines them.
func TestHybridRuns(t *testing.T) {
	cases := []struct {
		name  string
		b     []byte
		width int
		want  []int32
	}{
		{"one RLE run", []byte{5 << 1, 1}, 1, []int32{1, 1, 1, 1, 1}},
		{"RLE run of a 2-byte value", []byte{3 << 1, 0x34, 0x12}, 13, []int32{0x1234, 0x1234, 0x1234}},
		{"RLE then bit-packed", []byte{2 << 1, 7, 1<<1 | 1, 0b10001000, 0b11000110, 0b11111010}, 3, []int32{7, 7, 0, 1, 2, 3, 4, 5, 6, 7}},
		{"bit-packed padding ignored", []byte{1<<1 | 1, 0b00000101}, 1, []int32{1, 0, 1}},
		{"a last run cut short", []byte{4<<1 | 1, 0xff}, 1, []int32{1, 1, 1, 1, 1, 1, 1, 1}},
		{"bit width 0", []byte{4 << 1}, 0, []int32{0, 0, 0, 0}},
	}
	for _, c := range cases {
		out := make([]int32, len(c.want))
		if err := decodeHybrid(c.b, c.width, out); err != nil || !reflect.DeepEqual(out, c.want) {
			t.Errorf("%s: %v, %v; want %v", c.name, out, err, c.want)
		}
	}
	for _, b := range [][]byte{nil, {0}, {1}, {5 << 1}, {0x80}} {
		if err := decodeHybrid(b, 8, make([]int32, 3)); err == nil {
			t.Errorf("% x: no error", b)
		}
	}
}

// TestLevels: definition levels are one RLE run when every row is
// present, bit-packed runs of at most 512 values otherwise.
func TestLevels(t *testing.T) {
	if got := appendLevels(nil, nil, 300); !bytes.Equal(got, []byte{0xd8, 0x04, 1}) { // varint(600)
		t.Errorf("all present: % x", got)
	}
	valid := make([]bool, 1000)
	for i := range valid {
		valid[i] = i%3 != 0
	}
	b := appendLevels(nil, valid, len(valid))
	if h, _ := binary.Uvarint(b); h != 64<<1|1 {
		t.Errorf("first run header %d, want 64 groups bit-packed", h)
	}
	out := make([]int32, len(valid))
	if err := decodeHybrid(b, 1, out); err != nil {
		t.Fatal(err)
	}
	for i, v := range out {
		if (v == 1) != valid[i] {
			t.Fatalf("level %d is %d", i, v)
		}
	}
}

// TestThriftKeyValue: a KeyValue with a 64-byte value is encoded as
// sim/output's checksum search expects (key, then field header 0x18 and
// length 0x40), and field ids that jump by more than 15 use the long form.
func TestThriftKeyValue(t *testing.T) {
	var e encoder
	e.beginStruct()
	e.str(1, "k")
	e.str(2, string(make([]byte, 64)))
	e.i32(20, -3)
	e.endStruct()
	want := append([]byte{0x18, 1, 'k', 0x18, 0x40}, make([]byte, 64)...)
	want = append(want, 0x05, 40, 5, 0) // type i32, zigzag(20)=40, zigzag(-3)=5, stop
	if !bytes.Equal(e.buf, want) {
		t.Fatalf("% x\nwant % x", e.buf, want)
	}
	d := &decoder{b: e.buf}
	var got []int16
	d.readStruct(func(id int16, typ byte) bool { got = append(got, id); return false })
	if d.err != nil || !reflect.DeepEqual(got, []int16{1, 2, 20}) || d.pos != len(e.buf) {
		t.Errorf("fields %v, err %v, at %d of %d", got, d.err, d.pos, len(e.buf))
	}
}

var testColumns = []Column{
	{Name: "i64", Type: Int64, IntBits: 64},
	{Name: "u64", Type: Int64, IntBits: 64, Unsigned: true},
	{Name: "i32", Type: Int32, IntBits: 32, Optional: true},
	{Name: "f64", Type: Double, Optional: true},
	{Name: "f32", Type: Float},
	{Name: "b", Type: Boolean, Optional: true},
	{Name: "s", Type: ByteArray, String: true, Optional: true},
	{Name: "d", Type: ByteArray, String: true, Optional: true},
	{Name: "raw", Type: ByteArray},
}

// testChunks is a row group of n rows of testColumns, every third row of
// the optional columns null.
func testChunks(n, seed int) []Chunk {
	cs := make([]Chunk, len(testColumns))
	valid := make([]bool, n)
	for i := range valid {
		valid[i] = (i+seed)%3 != 0
	}
	dict := [][]byte{[]byte("compute"), []byte("all-reduce"), []byte("")}
	for c := range cs {
		cs[c].Rows = n
		if testColumns[c].Optional {
			cs[c].Valid = valid
		}
	}
	for i := 0; i < n; i++ {
		v := int64(i + seed)
		cs[0].Int64 = append(cs[0].Int64, v*v*1e9-7)
		cs[1].Int64 = append(cs[1].Int64, -v)
		cs[4].Float = append(cs[4].Float, float32(v)/3)
		cs[8].Bytes = append(cs[8].Bytes, bytes.Repeat([]byte{byte(i)}, i%5))
		if !valid[i] {
			continue
		}
		cs[2].Int32 = append(cs[2].Int32, int32(-v))
		cs[3].Double = append(cs[3].Double, float64(v)*0.1)
		cs[5].Bool = append(cs[5].Bool, v%2 == 0)
		cs[6].Bytes = append(cs[6].Bytes, []byte("layer."+string(rune('a'+i%26))))
		cs[7].Index = append(cs[7].Index, int32(i%len(dict)))
	}
	cs[7].Dict = dict
	return cs
}

// TestRoundTrip: row groups of every column kind, with nulls and a
// dictionary, read back as written (dictionaries resolved), with the
// schema and key-value metadata.
func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	kv := []KeyValue{{"schema_version", "9"}, {"empty", ""}}
	w, err := NewWriter(&buf, testColumns, kv)
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{5, 0, 1000, 1}
	for g, n := range sizes {
		if err := w.WriteRowGroup(testChunks(n, g)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if f.NumRows != 1006 || f.NumRowGroups() != len(sizes) || !reflect.DeepEqual(f.KeyValue, kv) {
		t.Errorf("rows %d, groups %d, kv %v", f.NumRows, f.NumRowGroups(), f.KeyValue)
	}
	for i, c := range f.Columns {
		want := testColumns[i]
		if want.Optional {
			want.MaxDef = 1
		}
		if c != want {
			t.Errorf("column %d: %+v, want %+v", i, c, want)
		}
	}
	for g, n := range sizes {
		want := testChunks(n, g)
		for c := range want {
			got, err := f.ReadColumn(g, c)
			if err != nil {
				t.Fatalf("group %d column %d: %v", g, c, err)
			}
			w := want[c]
			if w.Dict != nil { // the reader resolves the dictionary
				for _, i := range w.Index {
					w.Bytes = append(w.Bytes, w.Dict[i])
				}
				w.Dict, w.Index = nil, nil
			}
			if !sameChunk(got, w) {
				t.Errorf("group %d column %s differs:\n got %+v\nwant %+v", g, testColumns[c].Name, got, w)
			}
		}
	}
}

// sameChunk compares chunks treating nil and empty slices alike.
func sameChunk(a, b Chunk) bool {
	norm := func(c Chunk) Chunk {
		v := reflect.ValueOf(&c).Elem()
		for i := 0; i < v.NumField(); i++ {
			if f := v.Field(i); f.Kind() == reflect.Slice && f.Len() == 0 {
				f.SetZero()
			}
		}
		for i, b := range c.Bytes {
			if len(b) == 0 {
				c.Bytes[i] = nil
			}
		}
		return c
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

// TestWriterErrors: chunks that do not fit their column are errors.
func TestWriterErrors(t *testing.T) {
	cols := []Column{{Name: "a", Type: Int64}, {Name: "s", Type: ByteArray}}
	cases := map[string][]Chunk{
		"column count":       {{Rows: 1, Int64: []int64{1}}},
		"row counts differ":  {{Rows: 1, Int64: []int64{1}}, {Rows: 2, Bytes: [][]byte{nil, nil}}},
		"value count":        {{Rows: 2, Int64: []int64{1}}, {Rows: 2, Bytes: [][]byte{nil, nil}}},
		"null in required":   {{Rows: 1, Valid: []bool{false}}, {Rows: 1, Bytes: [][]byte{nil}}},
		"dictionary overrun": {{Rows: 1, Int64: []int64{1}}, {Rows: 1, Dict: [][]byte{nil}, Index: []int32{1}}},
	}
	for name, chunks := range cases {
		w, err := NewWriter(new(bytes.Buffer), cols, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteRowGroup(chunks); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := NewWriter(new(bytes.Buffer), []Column{{Name: "x", Type: Int96}}, nil); err == nil {
		t.Error("INT96 column: no error")
	}
}

// TestDamaged: a file cut at any length, or with any one byte changed,
// is an error or reads, but never panics; cut files are always errors.
func TestDamaged(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, testColumns, []KeyValue{{"k", "v"}})
	if err := w.WriteRowGroup(testChunks(40, 1)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	readAll := func(b []byte) error {
		f, err := Open(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return err
		}
		for g := 0; g < f.NumRowGroups(); g++ {
			for c := range f.Columns {
				if _, err := f.ReadColumn(g, c); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := readAll(good); err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(good); n++ {
		if err := readAll(good[:n]); err == nil {
			t.Errorf("file cut at %d of %d bytes read without error", n, len(good))
		} else if !errors.Is(err, ErrFormat) {
			t.Errorf("cut at %d: %v is not ErrFormat", n, err)
		}
	}
	b := make([]byte, len(good))
	for i := range good {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			copy(b, good)
			b[i] ^= x
			_ = readAll(b) // must not panic
		}
	}
}

// FuzzRead: any bytes are an error or a table, never a panic or a hang.
func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, testColumns, []KeyValue{{"k", "v"}})
	if err := w.WriteRowGroup(testChunks(20, 2)); err != nil {
		f.Fatal(err)
	}
	if err := w.Close(); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	// A page whose zstd frame declares 117 MB for a 29-byte page: the
	// decoder allocated the frame before failing (seconds per read).
	damaged, err := os.ReadFile("testdata/damaged-zstd-frame-size.parquet")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(damaged)
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Open(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		for g := 0; g < p.NumRowGroups(); g++ {
			for c := range p.Columns {
				_, _ = p.ReadColumn(g, c)
			}
		}
	})
}
