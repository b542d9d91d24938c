package output

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// arrowMessage is rec's encapsulated message as arrow-go's FileWriter
// writes it: GetRecordBatchPayload, then WritePayload.
func arrowMessage(t *testing.T, mem memory.Allocator, rec arrow.RecordBatch) []byte {
	t.Helper()
	p, err := ipc.GetRecordBatchPayload(rec, ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	var b bytes.Buffer
	if _, err := p.WritePayload(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// encoderMessage is rec's message as enc writes it; ok is false when enc
// declines rec.
func encoderMessage(t *testing.T, enc *batchEncoder, rec arrow.RecordBatch) (msg []byte, ok bool) {
	t.Helper()
	if !enc.encode(rec) {
		return nil, false
	}
	return encodedBytes(t, enc), true
}

// encodedBytes is the message of the batch enc readied last, as enc
// writes it.
func encodedBytes(t *testing.T, enc *batchEncoder) []byte {
	t.Helper()
	msg := enc.message(nil)
	var b bytes.Buffer
	if err := enc.writeBody(&b); err != nil {
		t.Fatal(err)
	}
	return append(msg, b.Bytes()...)
}

// directKinds holds every column kind a table builder fills straight from
// the rows' memory (fillColumn): no pointer fields.
type directKinds struct {
	I   int     `arrow:"i"`
	I32 int32   `arrow:"i32"`
	I64 int64   `arrow:"i64"`
	U64 uint64  `arrow:"u64"`
	F   float64 `arrow:"f"`
	S   string  `arrow:"s"`
	D   string  `arrow:"d,dict"`
	B   bool    `arrow:"b"`
}

// batchesOf is a case of TestBatchEncoderEqualsArrow whose batches are
// rows' table in batches of batch rows (tableBatches).
func batchesOf(rows any, batch int, direct bool) func(*testing.T, memory.Allocator, *func(*batchEncoder) bool) func() arrow.RecordBatch {
	return func(t *testing.T, mem memory.Allocator, last *func(*batchEncoder) bool) func() arrow.RecordBatch {
		return tableBatches(t, mem, rows, batch, direct, last)
	}
}

// tableBatches returns the record batches of rows in batches of batch
// rows (an empty table: one empty batch), built by a tableBuilder as an
// AppendFile's rewrites build them; direct false builds the columns
// through arrow-go's builders instead. Each batch must be released before
// the next is built: next returns nil after the last. With last non-nil,
// *last is set to a function that readies, with encodeTable, the batch
// next built last from the builder's column buffers and reports whether
// encodeTable took it.
func tableBatches(t *testing.T, mem memory.Allocator, rows any, batch int, direct bool, last *func(*batchEncoder) bool) (next func() arrow.RecordBatch) {
	t.Helper()
	tb, err := newTableBuilder(mem, rows, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tb.release)
	lo, done := 0, false
	return func() arrow.RecordBatch {
		if done {
			return nil
		}
		hi := min(lo+batch, tb.n)
		saved := directColumns
		directColumns = direct
		rec := tb.batch(lo, hi)
		directColumns = saved
		if last != nil {
			from := lo
			*last = func(enc *batchEncoder) bool {
				saved := directColumns
				directColumns = direct
				defer func() { directColumns = saved }()
				return enc.encodeTable(tb, from, hi)
			}
		}
		lo = hi
		done = lo >= tb.n
		return rec
	}
}

// oneBatch returns a function giving rec once, then nil.
func oneBatch(rec arrow.RecordBatch) func() arrow.RecordBatch {
	return func() arrow.RecordBatch {
		r := rec
		rec = nil
		return r
	}
}

// recordOf makes a record of the arrays given (their references taken),
// columns named c0, c1, …, nullable.
func recordOf(meta *arrow.Metadata, cols ...arrow.Array) arrow.RecordBatch {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: "c" + strconv.Itoa(i), Type: c.DataType(), Nullable: true}
	}
	n := int64(0)
	if len(cols) > 0 {
		n = int64(cols[0].Len())
	}
	var rec arrow.RecordBatch
	if meta != nil {
		rec = array.NewRecordBatchWithMetadata(arrow.NewSchema(fields, nil), cols, n, *meta)
	} else {
		rec = array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, n)
	}
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// rawArray makes an array of typ over the given buffers (nil: none),
// n values at offset off, nulls nulls.
func rawArray(typ arrow.DataType, n, off, nulls int, bufs ...[]byte) arrow.Array {
	mb := make([]*memory.Buffer, len(bufs))
	for i, b := range bufs {
		if b != nil {
			mb[i] = memory.NewBufferBytes(b)
		}
	}
	d := array.NewData(typ, n, mb, nil, nulls, off)
	defer d.Release()
	return array.MakeFromData(d)
}

// bitsOf is a bitmap of size bytes with bit i set where set(i), i < n,
// and every bit past n set (garbage the encoder must not copy).
func bitsOf(size, n int, set func(i int) bool) []byte {
	b := make([]byte, size)
	for i := range size * 8 {
		if i >= n || set(i) {
			b[i/8] |= 1 << (i % 8)
		}
	}
	return b
}

// TestBatchEncoderEqualsArrow: for every table the package's tests write
// and arrays built by hand (every column kind a table builder makes,
// nulls, columns of nulls only, one row, an empty batch, the last short
// batch, bitmaps and buffers longer than the batch needs, which arrow-go
// copies or cuts short), the encoder writes the very bytes arrow-go's
// GetRecordBatchPayload and WritePayload write, one encoder reused across
// every batch; and it declines what it does not handle (arrays with an
// offset, offsets not starting at 0, record metadata, other types).
func TestBatchEncoderEqualsArrow(t *testing.T) {
	odd := makeRows[allKinds](1001)
	odd[5].S, odd[6].D = "a\xffb", "\xfe"
	odd[7].B, odd[8].B = true, true
	wide := make([]allKinds, maxInt16Dict+2)
	for i := range wide {
		wide[i].D = "k" + strconv.Itoa((i*7919)%len(wide))
	}
	plain := makeRows[directKinds](1001)
	plain[5].S, plain[6].D = "a\xffb", "\xfe"
	plain[7].B, plain[8].B = true, true
	plainWide := make([]directKinds, maxInt16Dict+2)
	for i := range plainWide {
		plainWide[i].D = "k" + strconv.Itoa((i*7919)%len(plainWide))
		plainWide[i].S = strconv.Itoa(i)
	}
	nils := makeRows[allKinds](40)
	for i := range nils {
		nils[i].PI, nils[i].PS, nils[i].PD, nils[i].PB = nil, nil, nil, nil
	}
	// n values; the long buffers hold 150, a long bitmap 80 bytes (more
	// than 64: arrow-go copies n bits of it), a short one 18 (kept whole,
	// with its set bits past n)
	n, long, short := 70, 80, 150/8
	ints := make([]byte, 150*8)
	for i := range ints {
		ints[i] = byte(i*37 + 1)
	}
	offs := make([]byte, 4*151)
	for i := range 151 {
		binary.LittleEndian.PutUint32(offs[4*i:], uint32(3*i)) // strings of 3 bytes
	}
	strs := bytes.Repeat([]byte("abcdefg"), 100)
	lessThird := func(i int) bool { return i%3 != 0 }
	meta := arrow.NewMetadata([]string{"k"}, []string{"v"})
	for _, tc := range []struct {
		name     string
		batches  func(t *testing.T, mem memory.Allocator, last *func(*batchEncoder) bool) func() arrow.RecordBatch
		declined bool
		// direct: encodeTable takes a table's batches from its column
		// buffers (every column of the row type filled directly)
		direct bool
	}{
		{"sweep summary, batch 64", batchesOf(sweepSummaryRows(1000), 64, true), false, true},
		{"sweep summary, 97 rows, batch 64", batchesOf(sweepSummaryRows(97), 64, true), false, true},
		{"filled summary rows, batch 7", batchesOf(makeRows[SummaryRow](50), 7, true), false, true},
		{"goodput summary rows, batch 16", batchesOf(makeRows[GoodputSummaryRow](40), 16, true), false, true},
		{"all kinds with nulls and invalid UTF-8, batch 13", batchesOf(odd, 13, true), false, false},
		{"all kinds through arrow-go's builders, batch 100", batchesOf(odd, 100, false), false, false},
		{"int32 dictionary indices", batchesOf(wide, BatchRows, true), false, false},
		{"every direct kind, invalid UTF-8, batch 13", batchesOf(plain, 13, true), false, true},
		{"every direct kind, one row a batch", batchesOf(plain[:3], 1, true), false, true},
		{"every direct kind, int32 dictionary indices", batchesOf(plainWide, BatchRows, true), false, true},
		{"every direct kind through arrow-go's builders", batchesOf(plain, 100, false), false, false},
		{"columns of nulls only, one row a batch", batchesOf(nils[:3], 1, true), false, false},
		{"columns of nulls only, batch 40", batchesOf(nils, 40, false), false, false},
		{"no rows", batchesOf([]SummaryRow{}, 64, true), false, true},
		{"every fixed width, buffers longer than the values", func(*testing.T, memory.Allocator, *func(*batchEncoder) bool) func() arrow.RecordBatch {
			var cols []arrow.Array
			for _, typ := range []arrow.DataType{arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Int16,
				arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Float32,
				arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Uint64, arrow.PrimitiveTypes.Float64} {
				w := typ.(arrow.FixedWidthDataType).BitWidth() / 8
				cols = append(cols,
					rawArray(typ, n, 0, 0, nil, ints[:150*w]),                                            // cut short
					rawArray(typ, n, 0, (n+2)/3, bitsOf(long, n, lessThird), ints[:n*w]),                 // long bitmap: copied
					rawArray(typ, n, 0, (n+2)/3, bitsOf(short, n, lessThird), ints[:n*w+(n*w)%8+2]),      // kept whole
					rawArray(typ, n, 0, n, bitsOf(long, n, func(int) bool { return false }), ints[:n*w])) // nulls only
			}
			return oneBatch(recordOf(nil, cols...))
		}, false, false},
		{"bool and strings, buffers longer than the values", func(*testing.T, memory.Allocator, *func(*batchEncoder) bool) func() arrow.RecordBatch {
			return oneBatch(recordOf(nil,
				rawArray(arrow.FixedWidthTypes.Boolean, n, 0, 0, nil, bitsOf(long, n, lessThird)),
				rawArray(arrow.FixedWidthTypes.Boolean, n, 0, (n+2)/3, bitsOf(short, n, lessThird), bitsOf(long, n, lessThird)),
				rawArray(arrow.BinaryTypes.String, n, 0, 0, nil, offs, strs),
				rawArray(arrow.BinaryTypes.String, n, 0, (n+2)/3, bitsOf(long, n, lessThird), offs[:4*(n+1)], strs[:3*n]),
				rawArray(arrow.BinaryTypes.Binary, n, 0, 0, nil, offs[:4*(n+1)], strs[:3*n]),
			))
		}, false, false},
		{"empty strings, with and without buffers", func(*testing.T, memory.Allocator, *func(*batchEncoder) bool) func() arrow.RecordBatch {
			return oneBatch(recordOf(nil,
				rawArray(arrow.BinaryTypes.String, 0, 0, 0, nil, nil, nil),
				rawArray(arrow.BinaryTypes.String, 0, 0, 0, nil, offs[:4], strs),
				rawArray(arrow.PrimitiveTypes.Int64, 0, 0, 0, nil, ints),
				rawArray(arrow.FixedWidthTypes.Boolean, 0, 0, 0, nil, nil),
			))
		}, false, false},
		{"an array with an offset", func(*testing.T, memory.Allocator, *func(*batchEncoder) bool) func() arrow.RecordBatch {
			whole := rawArray(arrow.PrimitiveTypes.Int64, n, 0, 0, nil, ints[:8*n])
			defer whole.Release()
			return oneBatch(recordOf(nil, array.NewSlice(whole, 3, 20)))
		}, true, false},
		{"a string array with an offset", func(*testing.T, memory.Allocator, *func(*batchEncoder) bool) func() arrow.RecordBatch {
			return oneBatch(recordOf(nil, rawArray(arrow.BinaryTypes.String, 5, 2, 0, nil, offs, strs)))
		}, true, false},
		{"string offsets not starting at 0", func(*testing.T, memory.Allocator, *func(*batchEncoder) bool) func() arrow.RecordBatch {
			return oneBatch(recordOf(nil, rawArray(arrow.BinaryTypes.String, 5, 0, 0, nil, offs[4:], strs)))
		}, true, false},
		{"record metadata", func(*testing.T, memory.Allocator, *func(*batchEncoder) bool) func() arrow.RecordBatch {
			return oneBatch(recordOf(&meta, rawArray(arrow.PrimitiveTypes.Int64, n, 0, 0, nil, ints[:8*n])))
		}, true, false},
		{"another type", func(*testing.T, memory.Allocator, *func(*batchEncoder) bool) func() arrow.RecordBatch {
			return oneBatch(recordOf(nil, rawArray(arrow.FixedWidthTypes.Date32, n, 0, 0, nil, ints[:4*n])))
		}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := checkedMem(t)
			enc := newBatchEncoder()
			var last func(*batchEncoder) bool
			next := tc.batches(t, mem, &last)
			k := 0
			for rec := next(); rec != nil; rec = next() {
				want := arrowMessage(t, mem, rec)
				got, ok := encoderMessage(t, enc, rec)
				rec.Release()
				if ok == tc.declined {
					t.Fatalf("batch %d: encoded %v, want declined %v", k, ok, tc.declined)
				}
				if ok && !bytes.Equal(got, want) {
					t.Fatalf("batch %d: %d bytes differ from arrow-go's %d (first at %d)", k, len(got), len(want), firstDiff(got, want))
				}
				// the same batch from the builder's column buffers, by the
				// same encoder
				if last != nil {
					if took := last(enc); took != tc.direct {
						t.Fatalf("batch %d: encodeTable took it %v, want %v", k, took, tc.direct)
					}
					if tc.direct {
						got := encodedBytes(t, enc)
						if !bytes.Equal(got, want) {
							t.Fatalf("batch %d from the column buffers: %d bytes differ from arrow-go's %d (first at %d)", k, len(got), len(want), firstDiff(got, want))
						}
					}
				}
				k++
			}
			if k == 0 {
				t.Fatal("no batch")
			}
		})
	}
}

// firstDiff is the first index where a and b differ.
func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestBatchEncoderAllocatesNothing: once its storage has grown to a
// summary batch's, encoding and writing a batch allocates nothing.
func TestBatchEncoderAllocatesNothing(t *testing.T) {
	tb := builtTable(t, sweepSummaryRows(128))
	rec := tb.batch(0, 64)
	defer rec.Release()
	enc := newBatchEncoder()
	var dst []byte
	run := func() {
		if !enc.encode(rec) {
			t.Fatal("declined")
		}
		dst = enc.message(dst[:0])
		if err := enc.writeBody(discard{}); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if a := testing.AllocsPerRun(20, run); a != 0 {
		t.Errorf("%v allocations a batch", a)
	}
}

// discard is io.Discard without its interface conversion.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestAdoptEncoderChecksColumnBuffers: a frame made from a file of
// summary rows takes the encoder for its batches from the column buffers
// (direct) only when encodeTable gives the file's first batch byte for
// byte: a file whose first batch differs by one byte of its body (the
// rows are not those the builder holds), or whose rows the builder has
// not, leaves the frame on arrow-go's encoder.
func TestAdoptEncoderChecksColumnBuffers(t *testing.T) {
	rows := sweepSummaryRows(64)
	tb := builtTable(t, rows)
	file := tableFile(t, tb, 16, 16)
	info, err := readIPCFooter(file)
	if err != nil {
		t.Fatal(err)
	}
	// the last byte of the first batch's body: a value of its last column
	lastBody := info.recs[0].offset + info.recs[0].meta + info.recs[0].body - 1
	flipped := bytes.Clone(file)
	flipped[lastBody] ^= 1
	for _, tc := range []struct {
		name   string
		file   []byte
		rows   int
		direct bool
	}{
		{"the builder's rows", file, 16, true},
		{"a byte of the body differs", flipped, 16, false},
		{"fewer rows than the batch", file, 15, false},
		{"no rows", file, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fr := newIPCFrame(tc.file, 4, nil)
			if fr == nil {
				t.Fatal("no frame")
			}
			fr.adoptEncoder(tc.file, tb, tc.rows, newBatchEncoder())
			if fr.direct != tc.direct || (fr.enc != nil) != tc.direct {
				t.Errorf("frame encodes from the column buffers %v (encoder %v), want %v", fr.direct, fr.enc != nil, tc.direct)
			}
		})
	}
}

// TestEncodeTableAllocatesNothing: once the builder's buffers and the
// encoder's storage have grown to a summary batch's, encoding a batch from
// the column buffers and writing it allocates nothing, the last short
// batch included.
func TestEncodeTableAllocatesNothing(t *testing.T) {
	tb := builtTable(t, sweepSummaryRows(100))
	enc := newBatchEncoder()
	var dst []byte
	run := func() {
		for lo := 0; lo < tb.n; lo += 64 {
			if !enc.encodeTable(tb, lo, min(lo+64, tb.n)) {
				t.Fatal("declined")
			}
			dst = enc.message(dst[:0])
			if err := enc.writeBody(discard{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	run()
	if a := testing.AllocsPerRun(20, run); a != 0 {
		t.Errorf("%v allocations a rewrite of two batches", a)
	}
}

// TestAdoptDictsEqualsArrow: the encoder writes every dictionary message
// arrow-go's FileWriter wrote for a table's dictionaries (a sweep
// summary's one- and two-value dictionaries, int32 indices, a nullable
// dictionary column beside a plain one) to the very bytes, so the frame
// takes them (ownDicts, one field per dictionary column, in the header's
// order); a file whose dictionary message differs by one byte, or whose
// builder holds other dictionaries, leaves the frame without.
func TestAdoptDictsEqualsArrow(t *testing.T) {
	wide := make([]directKinds, maxInt16Dict+2)
	for i := range wide {
		wide[i].D = "k" + strconv.Itoa((i*7919)%len(wide))
	}
	summary := sweepSummaryRows(64)
	other := sweepSummaryRows(64)
	other[3].GPU = "b200"
	for _, tc := range []struct {
		name        string
		rows, built any // the file's rows, the rows of the builder adoptDicts is given
		flip        bool
		own         bool
	}{
		{"sweep summary", summary, summary, false, true},
		{"int32 dictionary indices", wide, wide, false, true},
		{"nullable and plain dictionary columns", makeRows[allKinds](30), makeRows[allKinds](30), false, true},
		{"a byte of a dictionary message differs", summary, summary, true, false},
		{"the builder's dictionaries differ", summary, other, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := builtTable(t, tc.rows)
			file := tableFile(t, tb, tb.n, tb.n)
			if tc.flip {
				info, err := readIPCFooter(file)
				if err != nil || len(info.dicts) < 2 {
					t.Fatal("no dictionaries", err)
				}
				d := info.dicts[1]
				file[d.offset+d.meta+d.body-1] ^= 1 // the last byte of its values
			}
			fr := newIPCFrame(file, 4, nil)
			if fr == nil {
				t.Fatal("no frame")
			}
			built := builtTable(t, tc.built)
			fr.adoptDicts(built, newBatchEncoder())
			if fr.ownDicts != tc.own {
				t.Fatalf("ownDicts %v, want %v", fr.ownDicts, tc.own)
			}
			if !tc.own {
				return
			}
			want := 0
			for fi, d := range built.dicts {
				if d != nil {
					if k := slices.Index(fr.dictFields, fi); k < 0 || fr.dicts[k].offset < int64(fr.schemaEnd) {
						t.Errorf("field %d: no dictionary message", fi)
					}
					want++
				}
			}
			if len(fr.dictFields) != want || !slices.IsSorted(fr.dictFields) {
				t.Errorf("dictionary fields %v, want the %d dictionary columns in order", fr.dictFields, want)
			}
		})
	}
}

// TestSameSchema: reframe keeps the schema message only for a schema
// FileWriter writes the same: not for another index type, field name,
// nullability or schema metadata value or order.
func TestSameSchema(t *testing.T) {
	mk := func(idx arrow.DataType, name string, nullable bool, keys, vals []string) *arrow.Schema {
		md := arrow.NewMetadata(keys, vals)
		return arrow.NewSchema([]arrow.Field{
			{Name: "a", Type: arrow.PrimitiveTypes.Int64},
			{Name: name, Type: &arrow.DictionaryType{IndexType: idx, ValueType: arrow.BinaryTypes.String}, Nullable: nullable},
		}, &md)
	}
	i16, i32 := arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32
	base := mk(i16, "d", false, []string{"k", "l"}, []string{"v", "w"})
	for _, tc := range []struct {
		name string
		b    *arrow.Schema
		want bool
	}{
		{"equal, built apart", mk(i16, "d", false, []string{"k", "l"}, []string{"v", "w"}), true},
		{"int32 indices", mk(i32, "d", false, []string{"k", "l"}, []string{"v", "w"}), false},
		{"another name", mk(i16, "e", false, []string{"k", "l"}, []string{"v", "w"}), false},
		{"nullable", mk(i16, "d", true, []string{"k", "l"}, []string{"v", "w"}), false},
		{"another metadata value", mk(i16, "d", false, []string{"k", "l"}, []string{"v", "x"}), false},
		{"metadata in another order", mk(i16, "d", false, []string{"l", "k"}, []string{"w", "v"}), false},
		{"none", nil, false},
	} {
		if got := sameSchema(base, tc.b); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
