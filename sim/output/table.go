package output

import (
	"bufio"
	"fmt"
	"io"
	"reflect"
	"slices"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// WriteTable writes rows, a slice of structs with arrow-tagged fields (see
// the package doc), to path as an uncompressed Arrow IPC file with batches
// of at most [BatchRows] rows. The schema metadata holds schema_version and
// every key of meta. Dictionary columns use the sorted distinct values of
// the column as their one dictionary. The write is atomic: on error nothing
// new is left at path. An empty slice gives a valid file with the schema and
// no batches.
func WriteTable(path string, rows any, meta map[string]string) error {
	return writeTable(memory.DefaultAllocator, path, rows, meta)
}

func writeTable(mem memory.Allocator, path string, rows any, meta map[string]string) error {
	return writeTableBatches(mem, path, rows, meta, BatchRows)
}

// writeTableBatches is [WriteTable] with record batches of batch rows.
func writeTableBatches(mem memory.Allocator, path string, rows any, meta map[string]string, batch int) error {
	tb, err := newTableBuilder(mem, rows, withChecksumKey(meta))
	if err != nil {
		return err
	}
	defer tb.release()
	return writeBatches(mem, path, tb.schema, tb.n, batch, tb.batch)
}

// writeBatches writes n rows as an Arrow IPC file of schema, in record
// batches of batch rows that build(lo, hi) makes for rows [lo, hi), through
// the atomic, checksummed writer.
func writeBatches(mem memory.Allocator, path string, schema *arrow.Schema, n, batch int, build func(lo, hi int) arrow.RecordBatch) error {
	return writeBatchesWith(createAtomicIPC, mem, path, schema, n, batch, build, nil)
}

// writeBatchesWith is writeBatches through the atomic file that create
// opens; with tee, every byte of the file is also appended to *tee.
func writeBatchesWith(create func(string) (*atomicFile, error), mem memory.Allocator, path string, schema *arrow.Schema, n, batch int, build func(lo, hi int) arrow.RecordBatch, tee *[]byte) error {
	return writeAtomicWith(create, path, func(bw *bufio.Writer) error {
		var w io.Writer = bw
		if tee != nil {
			w = io.MultiWriter(bw, appendBytes{tee})
		}
		if err := writeIPC(w, mem, schema, n, batch, build); err != nil {
			return fmt.Errorf("output: write %s: %w", path, err)
		}
		return nil
	})
}

// writeIPC writes n rows to w as an Arrow IPC file of schema through
// arrow-go's FileWriter, in record batches of batch rows that build(lo, hi)
// makes for rows [lo, hi).
func writeIPC(w io.Writer, mem memory.Allocator, schema *arrow.Schema, n, batch int, build func(lo, hi int) arrow.RecordBatch) error {
	fw, err := ipc.NewFileWriter(w, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err != nil {
		return err
	}
	for lo := 0; lo < n; lo += batch {
		rec := build(lo, min(lo+batch, n))
		err := fw.Write(rec)
		rec.Release()
		if err != nil {
			fw.Close() // releases the writer's dictionaries
			return err
		}
	}
	return fw.Close()
}

// tableBuilder turns a slice of row structs into record batches that share
// one fixed dictionary per dictionary column.
type tableBuilder struct {
	mem    memory.Allocator
	spec   *structSpec
	rows   reflect.Value // the slice
	n      int
	schema *arrow.Schema
	dicts  []*fixedDict // per field; nil for non-dictionary fields
	// scratch holds each field's column buffers, reused by every batch
	// (direct.go); stride and offsets place a field in the slice's memory.
	scratch []directCol
	stride  uintptr
	offsets []uintptr
	// seen is sameValues' scratch, one flag per dictionary value.
	seen []bool
}

// fixedDict is one dictionary column's dictionary, built once.
type fixedDict struct {
	typ    *arrow.DictionaryType
	values []string
	index  map[string]int32
	arr    arrow.Array // the utf8 dictionary, shared by every batch
}

func newFixedDict(mem memory.Allocator, values []string) *fixedDict {
	d := &fixedDict{typ: dictType(len(values)), values: values, index: make(map[string]int32, len(values))}
	for i, v := range values {
		d.index[v] = int32(i)
	}
	b := array.NewStringBuilder(mem)
	defer b.Release()
	b.AppendValues(values, nil)
	d.arr = b.NewArray()
	return d
}

func (d *fixedDict) release() {
	if d != nil && d.arr != nil {
		d.arr.Release()
		d.arr = nil
	}
}

// rowsValue checks that rows is a slice (or a pointer to one) of structs.
func rowsValue(rows any) (reflect.Value, error) {
	v := reflect.ValueOf(rows)
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Slice || v.Type().Elem().Kind() != reflect.Struct {
		return reflect.Value{}, fmt.Errorf("output: rows must be a slice of structs, got %T", rows)
	}
	return v, nil
}

func newTableBuilder(mem memory.Allocator, rows any, meta map[string]string) (*tableBuilder, error) {
	v, err := rowsValue(rows)
	if err != nil {
		return nil, err
	}
	spec, err := specOf(v.Type().Elem())
	if err != nil {
		return nil, err
	}
	tb := &tableBuilder{mem: mem, spec: spec, rows: v, n: v.Len(), dicts: make([]*fixedDict, len(spec.fields)),
		scratch: make([]directCol, len(spec.fields)), stride: spec.typ.Size(), offsets: make([]uintptr, len(spec.fields))}
	for fi, f := range spec.fields {
		tb.offsets[fi] = spec.typ.Field(f.index).Offset
	}
	fields := make([]arrow.Field, len(spec.fields))
	for fi := range spec.fields {
		f := &spec.fields[fi]
		typ := f.arrowType(0)
		if f.dict {
			values := tb.distinct(fi)
			slices.Sort(values)
			tb.dicts[fi] = newFixedDict(mem, values)
			// The schema holds the very type the column's arrays carry:
			// arrow.TypeEqual, which NewRecordBatch runs on every column
			// of every batch, compares a dictionary type it is not given
			// twice by reflect.DeepEqual (≈ 5% of a summary rewrite).
			typ = tb.dicts[fi].typ
		}
		fields[fi] = arrow.Field{Name: f.column, Type: typ, Nullable: f.nullable}
	}
	md := schemaMetadata(meta)
	tb.schema = arrow.NewSchema(fields, &md)
	return tb, nil
}

// refresh points tb at rows, a slice of the row type it was built for,
// keeping its schema, dictionaries and column buffers (and the arrays
// held over them), and reports whether it could: only when every
// dictionary column of rows holds exactly the distinct values its
// dictionary was built from, so that the file tb writes is the one a new
// builder would write (TestTableBuilderRefresh,
// TestAppendFileRewritesEqualWriteTable). After false, tb holds rows and
// redict can make it the builder of rows; else tb must be released and
// replaced.
//
// Why: an AppendFile rewrites its file at every flush, and a new builder
// per rewrite allocated its schema, dictionaries, column buffers and ≈ 130
// arrays (≈ 20% of a rewrite's bytes). The collector seldom runs while a
// sweep's points do (GOGC 200 over the workers' ≈ 100 MB), so every byte
// a rewrite allocates is a page the kernel faults in afresh; kept, they
// are faulted in once. The check allocates nothing (sameValues): sorting
// each column's distinct values afresh was ≈ 35 allocations a rewrite.
func (tb *tableBuilder) refresh(rows any) bool {
	v, err := rowsValue(rows)
	if err != nil || v.Type() != tb.rows.Type() {
		return false
	}
	tb.rows, tb.n = v, v.Len()
	for fi, d := range tb.dicts {
		if d != nil && !tb.sameValues(fi, d) {
			return false
		}
	}
	return true
}

// sameValues reports whether string field fi holds, over all rows (made
// valid UTF-8, nil pointers skipped), exactly the values of d: each row's
// value is one of d's, and each of d's is some row's.
func (tb *tableBuilder) sameValues(fi int, d *fixedDict) bool {
	tb.seen = slices.Grow(tb.seen[:0], len(d.values))[:len(d.values)]
	clear(tb.seen)
	found := 0
	all := tb.eachString(fi, func(s string) bool {
		k, ok := d.index[validUTF8(s)]
		if ok && !tb.seen[k] {
			tb.seen[k] = true
			found++
		}
		return ok
	})
	return all && found == len(d.values)
}

// redict makes tb, refreshed onto rows whose dictionary values changed
// (refresh false), the builder newTableBuilder makes of rows with the same
// metadata: each dictionary column whose distinct values changed gets its
// dictionary built anew, its column's held array forgotten (it carried
// the old dictionary), and the schema is made anew only when a
// dictionary's index type changed (else the types stay the very values
// the schema holds). It reports false when rows are not of tb's row type.
//
// Why: when a dictionary gained a value, a new builder made the spec,
// schema, column offsets and every dictionary again, ≈ 60 real page
// faults of the 1,000-point 70B sweep after idle (docs/design.md
// "Speed", enc52b); its column buffers were already taken over (adopt).
func (tb *tableBuilder) redict(rows any) bool {
	v, err := rowsValue(rows)
	if err != nil || v.Type() != tb.rows.Type() {
		return false
	}
	tb.rows, tb.n = v, v.Len()
	var fields []arrow.Field
	for fi, d := range tb.dicts {
		if d == nil {
			continue
		}
		values := tb.distinct(fi)
		slices.Sort(values)
		if slices.Equal(values, d.values) {
			continue
		}
		nd := newFixedDict(tb.mem, values)
		if nd.typ.IndexType.ID() == d.typ.IndexType.ID() {
			nd.typ = d.typ
		} else {
			if fields == nil {
				fields = slices.Clone(tb.schema.Fields())
			}
			fields[fi].Type = nd.typ
		}
		d.release()
		tb.dicts[fi] = nd
		tb.scratch[fi].forget()
	}
	if fields != nil {
		md := tb.schema.Metadata()
		tb.schema = arrow.NewSchema(fields, &md)
	}
	return true
}

// adopt gives tb the column buffers of old, a released builder of the same
// row type, instead of its own new ones: an AppendFile replaces its builder
// when a dictionary grows, and the buffers made afresh were pages faulted
// in again (docs/design.md, deal49).
func (tb *tableBuilder) adopt(old *tableBuilder) {
	if old.rows.Type() == tb.rows.Type() && len(old.scratch) == len(tb.scratch) {
		tb.scratch, old.scratch = old.scratch, nil
	}
}

func (tb *tableBuilder) release() {
	for _, d := range tb.dicts {
		d.release()
	}
	for fi := range tb.scratch {
		tb.scratch[fi].forget()
	}
}

// distinct returns the distinct values of string field fi over all rows,
// each made valid UTF-8, in the order they first appear (nil pointers
// skipped).
func (tb *tableBuilder) distinct(fi int) []string {
	seen := map[string]bool{}
	var values []string
	tb.eachString(fi, func(s string) bool {
		if s = validUTF8(s); !seen[s] {
			seen[s] = true
			values = append(values, s)
		}
		return true
	})
	return values
}

// eachString calls fn with string field fi of every row in order (nil
// pointers skipped) until fn returns false, and reports whether fn
// returned true every time; a row whose string equals the row before's is
// not passed again. A field that is not a pointer is read from the
// slice's memory at its offset: a sweep's dictionary columns hold one or
// two values (its rows share their plans' strings, so the comparison is
// mostly a pointer check), and a lookup per row per column was ≈ 15% of
// the final summary rewrite.
func (tb *tableBuilder) eachString(fi int, fn func(string) bool) bool {
	f := &tb.spec.fields[fi]
	if f.nullable {
		for i := 0; i < tb.n; i++ {
			fv := tb.rows.Index(i).Field(f.index)
			if !fv.IsNil() && !fn(fv.Elem().String()) {
				return false
			}
		}
		return true
	}
	if tb.n == 0 {
		return true
	}
	base, stride := tb.rows.UnsafePointer(), tb.stride
	at := unsafe.Add(base, tb.offsets[fi])
	prev := *(*string)(at)
	if !fn(prev) {
		return false
	}
	for i := 1; i < tb.n; i++ {
		at = unsafe.Add(at, stride)
		if s := *(*string)(at); !sameString(s, prev) {
			prev = s
			if !fn(s) {
				return false
			}
		}
	}
	return true
}

// batch builds the record batch of rows [lo, hi). Its columns live in
// buffers (and, for fixed-width columns, arrays) that the next batch
// refills: a batch must be written and released before the next is built.
func (tb *tableBuilder) batch(lo, hi int) arrow.RecordBatch {
	cols := make([]arrow.Array, len(tb.spec.fields))
	for fi := range tb.spec.fields {
		cols[fi] = tb.column(fi, lo, hi)
	}
	rec := array.NewRecordBatch(tb.schema, cols, int64(hi-lo))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// column builds field fi's array for rows [lo, hi).
func (tb *tableBuilder) column(fi, lo, hi int) arrow.Array {
	f := &tb.spec.fields[fi]
	if !f.nullable && directColumns {
		return tb.directColumn(fi, lo, hi)
	}
	// value returns the field of row i, or ok=false for a nil pointer.
	value := func(i int) (reflect.Value, bool) {
		fv := tb.rows.Index(i).Field(f.index)
		if f.nullable {
			if fv.IsNil() {
				return fv, false
			}
			fv = fv.Elem()
		}
		return fv, true
	}
	n := hi - lo
	if d := tb.dicts[fi]; d != nil {
		var idx arrow.Array
		if d.typ.IndexType.ID() == arrow.INT16 {
			b := array.NewInt16Builder(tb.mem)
			b.Reserve(n)
			for i := lo; i < hi; i++ {
				if fv, ok := value(i); ok {
					b.UnsafeAppend(int16(d.index[validUTF8(fv.String())]))
				} else {
					b.UnsafeAppendBoolToBitmap(false)
				}
			}
			idx = b.NewArray()
			b.Release()
		} else {
			b := array.NewInt32Builder(tb.mem)
			b.Reserve(n)
			for i := lo; i < hi; i++ {
				if fv, ok := value(i); ok {
					b.UnsafeAppend(d.index[validUTF8(fv.String())])
				} else {
					b.UnsafeAppendBoolToBitmap(false)
				}
			}
			idx = b.NewArray()
			b.Release()
		}
		arr := array.NewDictionaryArray(d.typ, idx, d.arr)
		idx.Release()
		return arr
	}
	var b array.Builder
	switch f.kind {
	case kindInt, kindInt64:
		ib := array.NewInt64Builder(tb.mem)
		ib.Reserve(n)
		for i := lo; i < hi; i++ {
			if fv, ok := value(i); ok {
				ib.UnsafeAppend(fv.Int())
			} else {
				ib.UnsafeAppendBoolToBitmap(false)
			}
		}
		b = ib
	case kindInt32:
		ib := array.NewInt32Builder(tb.mem)
		ib.Reserve(n)
		for i := lo; i < hi; i++ {
			if fv, ok := value(i); ok {
				ib.UnsafeAppend(int32(fv.Int()))
			} else {
				ib.UnsafeAppendBoolToBitmap(false)
			}
		}
		b = ib
	case kindUint64:
		ub := array.NewUint64Builder(tb.mem)
		ub.Reserve(n)
		for i := lo; i < hi; i++ {
			if fv, ok := value(i); ok {
				ub.UnsafeAppend(fv.Uint())
			} else {
				ub.UnsafeAppendBoolToBitmap(false)
			}
		}
		b = ub
	case kindFloat64:
		fb := array.NewFloat64Builder(tb.mem)
		fb.Reserve(n)
		for i := lo; i < hi; i++ {
			if fv, ok := value(i); ok {
				fb.UnsafeAppend(fv.Float())
			} else {
				fb.UnsafeAppendBoolToBitmap(false)
			}
		}
		b = fb
	case kindBool:
		bb := array.NewBooleanBuilder(tb.mem)
		bb.Reserve(n)
		for i := lo; i < hi; i++ {
			if fv, ok := value(i); ok {
				bb.UnsafeAppend(fv.Bool())
			} else {
				bb.UnsafeAppendBoolToBitmap(false)
			}
		}
		b = bb
	default: // kindString
		sb := array.NewStringBuilder(tb.mem)
		sb.Reserve(n)
		for i := lo; i < hi; i++ {
			if fv, ok := value(i); ok {
				sb.Append(validUTF8(fv.String()))
			} else {
				sb.AppendNull()
			}
		}
		b = sb
	}
	arr := b.NewArray()
	b.Release()
	return arr
}

// TableInfo describes an Arrow IPC file: its schema, size and metadata.
type TableInfo struct {
	Columns []string          // column names, in order
	Types   []string          // Arrow type of each column, e.g. "int64", "dictionary<values=utf8, indices=int16, ordered=false>"
	Rows    int64             // total rows over all batches
	Batches int               // record batches in the file
	Meta    map[string]string // schema metadata, schema_version included
}

// ReadTableInfo returns the column names and types, row and batch counts
// and metadata of the Arrow IPC file at path. It loads the batches one at a
// time to count their rows, but does not convert any values.
func ReadTableInfo(path string) (TableInfo, error) {
	return readTableInfo(memory.DefaultAllocator, path)
}

func readTableInfo(mem memory.Allocator, path string) (TableInfo, error) {
	var info TableInfo
	err := withFileReader(mem, path, func(r *ipc.FileReader) error {
		sc := r.Schema()
		for _, f := range sc.Fields() {
			info.Columns = append(info.Columns, f.Name)
			info.Types = append(info.Types, f.Type.String())
		}
		info.Meta = metadataMap(sc.Metadata())
		info.Batches = r.NumRecords()
		for i := 0; i < info.Batches; i++ {
			rec, err := r.RecordBatch(i)
			if err != nil {
				return err
			}
			info.Rows += rec.NumRows()
		}
		return nil
	})
	return info, err
}

// withFileReader opens path as an Arrow IPC file for fn. arrow-go's reader
// can panic on a damaged file (a bad flatbuffer offset, a buffer past the
// end of the body); such a panic, here or in fn, becomes an error.
func withFileReader(mem memory.Allocator, path string, fn func(r *ipc.FileReader) error) (err error) {
	f, err := openVerified(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var r *ipc.FileReader
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("output: read %s: %w: damaged Arrow IPC file: %v", path, ErrDamaged, p)
		}
		if r != nil {
			r.Close()
		}
	}()
	r, err = ipc.NewFileReader(f, ipc.WithAllocator(mem))
	if err != nil {
		return fmt.Errorf("output: read %s: not an Arrow IPC file: %w", path, err)
	}
	if err := fn(r); err != nil {
		return fmt.Errorf("output: read %s: %w", path, err)
	}
	return nil
}

// ReadTable reads the Arrow IPC file at path into out, which must point to
// a slice of structs with arrow tags (*[]T); *out is replaced by the file's
// rows. Columns are matched by name: every tagged field needs its column,
// columns without a field are ignored. A column may be wider than the
// field's Arrow type only where no value changes (int32 into int or int64,
// float32 into float64, a plain or dictionary string into string); a null in
// a non-pointer field is an error. It returns the schema metadata.
func ReadTable(path string, out any) (map[string]string, error) {
	return readTable(memory.DefaultAllocator, path, out)
}

func readTable(mem memory.Allocator, path string, out any) (map[string]string, error) {
	pv := reflect.ValueOf(out)
	if pv.Kind() != reflect.Pointer || pv.IsNil() || pv.Elem().Kind() != reflect.Slice || pv.Elem().Type().Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("output: ReadTable out must be a non-nil *[]struct, got %T", out)
	}
	spec, err := specOf(pv.Elem().Type().Elem())
	if err != nil {
		return nil, err
	}
	var meta map[string]string
	res := reflect.New(pv.Elem().Type()).Elem()
	err = withFileReader(mem, path, func(r *ipc.FileReader) error {
		meta = metadataMap(r.Schema().Metadata())
		cols, err := spec.match(r.Schema())
		if err != nil {
			return versionMismatch(meta, err)
		}
		for b := 0; b < r.NumRecords(); b++ {
			rec, err := r.RecordBatch(b)
			if err != nil {
				return err
			}
			if err := spec.decode(rec, cols, &res); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	pv.Elem().Set(res)
	return meta, nil
}

// match finds each field's column in sc and checks that its type can be
// read into the field without loss.
func (s *structSpec) match(sc *arrow.Schema) ([]int, error) {
	cols := make([]int, len(s.fields))
	for fi := range s.fields {
		f := &s.fields[fi]
		idx := sc.FieldIndices(f.column)
		if len(idx) == 0 {
			return nil, fmt.Errorf("column %q (field %s) not in file; file has %v", f.column, f.goName, columnNames(sc))
		}
		dt := sc.Field(idx[0]).Type
		if !readable(f.kind, dt) {
			return nil, fmt.Errorf("column %q has type %s, cannot read into field %s (%s)", f.column, dt, f.goName, s.typ.Field(f.index).Type)
		}
		cols[fi] = idx[0]
	}
	return cols, nil
}

func columnNames(sc *arrow.Schema) []string {
	names := make([]string, sc.NumFields())
	for i, f := range sc.Fields() {
		names[i] = f.Name
	}
	return names
}

// readable says whether a column of type dt can fill a field of kind k.
func readable(k colKind, dt arrow.DataType) bool {
	switch k {
	case kindInt, kindInt64:
		return in(dt.ID(), arrow.INT64, arrow.INT32, arrow.INT16, arrow.INT8)
	case kindInt32:
		return in(dt.ID(), arrow.INT32, arrow.INT16, arrow.INT8)
	case kindUint64:
		return in(dt.ID(), arrow.UINT64, arrow.UINT32, arrow.UINT16, arrow.UINT8)
	case kindFloat64:
		return in(dt.ID(), arrow.FLOAT64, arrow.FLOAT32)
	case kindBool:
		return dt.ID() == arrow.BOOL
	default:
		if d, ok := dt.(*arrow.DictionaryType); ok {
			dt = d.ValueType
		}
		return in(dt.ID(), arrow.STRING, arrow.LARGE_STRING)
	}
}

func in(id arrow.Type, ids ...arrow.Type) bool { return slices.Contains(ids, id) }

// decode appends the rows of rec to the slice *res. Dictionary indices are
// checked first, so an index outside its dictionary is a clear error.
func (s *structSpec) decode(rec arrow.RecordBatch, cols []int, res *reflect.Value) error {
	n := int(rec.NumRows())
	for fi := range s.fields {
		if d, ok := rec.Column(cols[fi]).(*array.Dictionary); ok {
			size := d.Dictionary().Len()
			for i := 0; i < n; i++ {
				if j := d.GetValueIndex(i); d.IsValid(i) && (j < 0 || j >= size) {
					return fmt.Errorf("column %q row %d: dictionary index %d out of range [0, %d)", s.fields[fi].column, res.Len()+i, j, size)
				}
			}
		}
	}
	base := res.Len()
	res.Grow(n)
	res.SetLen(base + n)
	for fi := range s.fields {
		f := &s.fields[fi]
		arr := rec.Column(cols[fi])
		get := getter(f.kind, arr)
		for i := 0; i < n; i++ {
			dst := res.Index(base + i).Field(f.index)
			if arr.IsNull(i) {
				if !f.nullable {
					return fmt.Errorf("column %q row %d is null but field %s is not a pointer", f.column, base+i, f.goName)
				}
				continue
			}
			if f.nullable {
				p := reflect.New(dst.Type().Elem())
				dst.Set(p)
				dst = p.Elem()
			}
			get(i, dst)
		}
	}
	return nil
}

// getter returns a function that stores element i of arr into dst. The
// column type has been checked by readable.
func getter(k colKind, arr arrow.Array) func(i int, dst reflect.Value) {
	if d, ok := arr.(*array.Dictionary); ok {
		vals := d.Dictionary()
		str := func(j int) string {
			if ls, ok := vals.(*array.LargeString); ok {
				return ls.Value(j)
			}
			return vals.(*array.String).Value(j)
		}
		return func(i int, dst reflect.Value) { dst.SetString(str(d.GetValueIndex(i))) }
	}
	switch a := arr.(type) {
	case *array.Int64:
		return func(i int, dst reflect.Value) { dst.SetInt(a.Value(i)) }
	case *array.Int32:
		return func(i int, dst reflect.Value) { dst.SetInt(int64(a.Value(i))) }
	case *array.Int16:
		return func(i int, dst reflect.Value) { dst.SetInt(int64(a.Value(i))) }
	case *array.Int8:
		return func(i int, dst reflect.Value) { dst.SetInt(int64(a.Value(i))) }
	case *array.Uint64:
		return func(i int, dst reflect.Value) { dst.SetUint(a.Value(i)) }
	case *array.Uint32:
		return func(i int, dst reflect.Value) { dst.SetUint(uint64(a.Value(i))) }
	case *array.Uint16:
		return func(i int, dst reflect.Value) { dst.SetUint(uint64(a.Value(i))) }
	case *array.Uint8:
		return func(i int, dst reflect.Value) { dst.SetUint(uint64(a.Value(i))) }
	case *array.Float64:
		return func(i int, dst reflect.Value) { dst.SetFloat(a.Value(i)) }
	case *array.Float32:
		return func(i int, dst reflect.Value) { dst.SetFloat(float64(a.Value(i))) }
	case *array.Boolean:
		return func(i int, dst reflect.Value) { dst.SetBool(a.Value(i)) }
	case *array.String:
		return func(i int, dst reflect.Value) { dst.SetString(a.Value(i)) }
	case *array.LargeString:
		return func(i int, dst reflect.Value) { dst.SetString(a.Value(i)) }
	}
	// Unreachable after readable; keep the zero value rather than panic.
	return func(int, reflect.Value) {}
}
