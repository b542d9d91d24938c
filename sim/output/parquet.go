package output

// Parquet support lives in this one file. It uses arrow-go's low-level
// Parquet packages (parquet/file, parquet/schema) and not parquet/pqarrow:
// pqarrow imports arrow/flight only to serialise the Arrow schema it stores
// in the file, and Flight brings in gRPC and protobuf (about 120 of the 528
// packages of a cold `go build ./cmd/simtrain`, issue 18). The Arrow schema
// is serialised here with arrow/ipc instead, byte for byte as pqarrow does
// (an IPC stream holding only the schema message, base64 under the key
// "ARROW:schema"), so pyarrow, polars and DuckDB read the same column types
// as from the Arrow IPC files.

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// arrowSchemaKey is the Parquet key-value metadata key under which Arrow
// writers store the serialised Arrow schema (read by pyarrow and arrow-rs).
const arrowSchemaKey = "ARROW:schema"

// WriteParquet writes rows (a slice of arrow-tagged structs, as for
// [WriteTable]) to path as a Parquet file compressed with zstd, one row group
// per [BatchRows] rows. The Arrow schema is stored in the file (key
// "ARROW:schema"), so dictionary columns read back as dictionaries, and the
// schema metadata (schema_version and meta) becomes the file's key-value
// metadata. The write is atomic.
func WriteParquet(path string, rows any, meta map[string]string) error {
	return writeParquet(memory.DefaultAllocator, path, rows, meta)
}

func writeParquet(mem memory.Allocator, path string, rows any, meta map[string]string) error {
	tb, err := newTableBuilder(mem, rows, meta)
	if err != nil {
		return err
	}
	defer tb.release()
	return writeAtomicWith(createAtomicParquet, path, func(w *bufio.Writer) error {
		pw, err := newParquetFile(mem, w, tb.schema)
		if err != nil {
			return fmt.Errorf("output: write %s: %w", path, err)
		}
		for lo := 0; lo < tb.n; lo += BatchRows {
			rec := tb.batch(lo, min(lo+BatchRows, tb.n))
			err := pw.write(rec)
			rec.Release()
			if err != nil {
				pw.close()
				return fmt.Errorf("output: write %s: %w", path, err)
			}
		}
		if err := pw.close(); err != nil {
			return fmt.Errorf("output: write %s: %w", path, err)
		}
		return nil
	})
}

// ArrowToParquet writes the Arrow IPC file at src again as the Parquet file
// dst (zstd, one row group per record batch, the Arrow schema and its
// metadata stored as [WriteParquet] does). It holds one batch in memory at a
// time, so a timeline of any length converts in bounded memory. The write is
// atomic.
func ArrowToParquet(src, dst string) error {
	return arrowToParquet(memory.DefaultAllocator, src, dst)
}

func arrowToParquet(mem memory.Allocator, src, dst string) error {
	return withFileReader(mem, src, func(r *ipc.FileReader) error {
		return writeAtomicWith(createAtomicParquet, dst, func(w *bufio.Writer) error {
			pw, err := newParquetFile(mem, w, r.Schema())
			if err != nil {
				return fmt.Errorf("write %s: %w", dst, err)
			}
			for i := 0; i < r.NumRecords(); i++ {
				rec, err := r.RecordBatch(i)
				if err == nil {
					err = pw.write(rec)
				}
				if err != nil {
					pw.close()
					return fmt.Errorf("write %s: %w", dst, err)
				}
			}
			if err := pw.close(); err != nil {
				return fmt.Errorf("write %s: %w", dst, err)
			}
			return nil
		})
	})
}

// parquetFile writes Arrow record batches of one flat schema as Parquet row
// groups, one per batch.
type parquetFile struct {
	pw     *file.Writer
	schema *arrow.Schema
	def    []int16 // definition levels of the current column (nullable columns)
	bytes  []parquet.ByteArray
	i64    []int64
	i32    []int32
	bools  []bool
}

// newParquetFile starts a Parquet file on w for record batches of sc. Column
// types map as pqarrow maps them (int64, int32 and uint64 as INT64/INT32 with
// an integer logical type, float64 as DOUBLE, bool as BOOLEAN, utf8 and
// dictionaries of utf8 as BYTE_ARRAY with the String logical type); other
// types are an error.
func newParquetFile(mem memory.Allocator, w io.Writer, sc *arrow.Schema) (*parquetFile, error) {
	nodes := make(schema.FieldList, sc.NumFields())
	for i, f := range sc.Fields() {
		rep := parquet.Repetitions.Required
		if f.Nullable {
			rep = parquet.Repetitions.Optional
		}
		logical, phys, err := parquetType(f.Type)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", f.Name, err)
		}
		if nodes[i], err = schema.NewPrimitiveNodeLogical(f.Name, rep, logical, phys, -1, -1); err != nil {
			return nil, fmt.Errorf("column %q: %w", f.Name, err)
		}
	}
	root, err := schema.NewGroupNode("schema", parquet.Repetitions.Required, nodes, -1)
	if err != nil {
		return nil, err
	}
	// An Arrow file's checksum is not this file's: it is left out of the
	// stored schema, and this file's own goes into the key-value metadata
	// as a placeholder that the atomic writer fills in (integrity.go).
	sc = withoutChecksum(sc)
	kv := metadata.KeyValueMetadata{}
	md := sc.Metadata()
	for i, k := range md.Keys() {
		kv.Append(k, md.Values()[i])
	}
	var ser bytes.Buffer
	sw := ipc.NewWriter(&ser, ipc.WithSchema(sc), ipc.WithAllocator(mem))
	if err := sw.Close(); err != nil {
		return nil, err
	}
	kv.Append(arrowSchemaKey, base64.StdEncoding.EncodeToString(ser.Bytes()))
	kv.Append(MetaChecksum, checksumPlaceholder)
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithAllocator(mem),
		parquet.WithMaxRowGroupLength(BatchRows),
	)
	pw, err := file.NewParquetWriterWithError(w, root, file.WithWriterProps(props), file.WithWriteMetadata(kv))
	if err != nil {
		return nil, err
	}
	return &parquetFile{pw: pw, schema: sc}, nil
}

// withoutChecksum is sc without MetaChecksum in its metadata.
func withoutChecksum(sc *arrow.Schema) *arrow.Schema {
	md := sc.Metadata()
	if md.FindKey(MetaChecksum) < 0 {
		return sc
	}
	var keys, vals []string
	for i, k := range md.Keys() {
		if k != MetaChecksum {
			keys, vals = append(keys, k), append(vals, md.Values()[i])
		}
	}
	m := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema(sc.Fields(), &m)
}

// parquetType is the Parquet logical and physical type of an Arrow column.
func parquetType(dt arrow.DataType) (schema.LogicalType, parquet.Type, error) {
	if d, ok := dt.(*arrow.DictionaryType); ok {
		if d.ValueType.ID() != arrow.STRING {
			return nil, 0, fmt.Errorf("dictionary of %s not supported (only utf8)", d.ValueType)
		}
		dt = d.ValueType
	}
	switch dt.ID() {
	case arrow.INT64:
		return schema.NewIntLogicalType(64, true), parquet.Types.Int64, nil
	case arrow.INT32:
		return schema.NewIntLogicalType(32, true), parquet.Types.Int32, nil
	case arrow.UINT64:
		return schema.NewIntLogicalType(64, false), parquet.Types.Int64, nil
	case arrow.FLOAT64:
		return schema.NoLogicalType{}, parquet.Types.Double, nil
	case arrow.BOOL:
		return schema.NoLogicalType{}, parquet.Types.Boolean, nil
	case arrow.STRING:
		return schema.StringLogicalType{}, parquet.Types.ByteArray, nil
	}
	return nil, 0, fmt.Errorf("Arrow type %s not supported in Parquet output", dt)
}

// write appends rec as one row group.
func (p *parquetFile) write(rec arrow.RecordBatch) error {
	if !rec.Schema().Equal(p.schema) {
		return errors.New("record batch schema differs from the file's")
	}
	rg, err := p.pw.AppendRowGroupChecked()
	if err != nil {
		return err
	}
	for c := 0; c < int(rec.NumCols()); c++ {
		cw, err := rg.NextColumn()
		if err != nil {
			return err
		}
		if err := p.writeColumn(cw, rec.Column(c)); err != nil {
			return fmt.Errorf("column %q: %w", rec.ColumnName(c), err)
		}
	}
	return rg.Close()
}

// writeColumn writes one column's values; a nullable column gets definition
// levels (1 present, 0 null) and only its non-null values.
func (p *parquetFile) writeColumn(cw file.ColumnChunkWriter, arr arrow.Array) error {
	n := arr.Len()
	var def []int16
	if cw.Descr().MaxDefinitionLevel() > 0 {
		def = p.def[:0]
		for i := 0; i < n; i++ {
			def = append(def, int16(boolInt(arr.IsValid(i))))
		}
		p.def = def
	}
	var err error
	switch w := cw.(type) {
	case *file.Int64ColumnChunkWriter:
		p.i64 = p.i64[:0]
		switch a := arr.(type) {
		case *array.Int64:
			for i := 0; i < n; i++ {
				if a.IsValid(i) {
					p.i64 = append(p.i64, a.Value(i))
				}
			}
		case *array.Uint64:
			for i := 0; i < n; i++ {
				if a.IsValid(i) {
					p.i64 = append(p.i64, int64(a.Value(i))) // Parquet stores uint64 in INT64's bits
				}
			}
		}
		_, err = w.WriteBatch(p.i64, def, nil)
	case *file.Int32ColumnChunkWriter:
		a := arr.(*array.Int32)
		p.i32 = p.i32[:0]
		for i := 0; i < n; i++ {
			if a.IsValid(i) {
				p.i32 = append(p.i32, a.Value(i))
			}
		}
		_, err = w.WriteBatch(p.i32, def, nil)
	case *file.Float64ColumnChunkWriter:
		a := arr.(*array.Float64)
		vals := make([]float64, 0, n)
		for i := 0; i < n; i++ {
			if a.IsValid(i) {
				vals = append(vals, a.Value(i))
			}
		}
		_, err = w.WriteBatch(vals, def, nil)
	case *file.BooleanColumnChunkWriter:
		a := arr.(*array.Boolean)
		p.bools = p.bools[:0]
		for i := 0; i < n; i++ {
			if a.IsValid(i) {
				p.bools = append(p.bools, a.Value(i))
			}
		}
		_, err = w.WriteBatch(p.bools, def, nil)
	case *file.ByteArrayColumnChunkWriter:
		p.bytes = p.bytes[:0]
		switch a := arr.(type) {
		case *array.String:
			for i := 0; i < n; i++ {
				if a.IsValid(i) {
					p.bytes = append(p.bytes, stringBytes(a, i))
				}
			}
		case *array.Dictionary:
			dict := a.Dictionary().(*array.String)
			for i := 0; i < n; i++ {
				if a.IsValid(i) {
					p.bytes = append(p.bytes, stringBytes(dict, a.GetValueIndex(i)))
				}
			}
		}
		_, err = w.WriteBatch(p.bytes, def, nil)
	default:
		err = fmt.Errorf("unexpected column writer %T", cw)
	}
	return err
}

// stringBytes is value i of a without copying it.
func stringBytes(a *array.String, i int) parquet.ByteArray {
	offs := a.ValueOffsets() // this array's n+1 offsets; ValueBytes starts at offs[0]
	return a.ValueBytes()[offs[i]-offs[0] : offs[i+1]-offs[0]]
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// close writes the footer. The underlying writer is not closed.
func (p *parquetFile) close() error { return p.pw.Close() }

// ReadParquet reads a Parquet file into out (*[]T, as for [ReadTable]) and
// returns the file's key-value metadata without the stored Arrow schema.
// Columns are matched by name and must be flat; a column may be narrower
// than the field where no value changes (INT32 into int64, FLOAT into
// float64), as for [ReadTable].
func ReadParquet(path string, out any) (map[string]string, error) {
	return readParquet(memory.DefaultAllocator, path, out)
}

func readParquet(mem memory.Allocator, path string, out any) (meta map[string]string, err error) {
	pv := reflect.ValueOf(out)
	if pv.Kind() != reflect.Pointer || pv.IsNil() || pv.Elem().Kind() != reflect.Slice || pv.Elem().Type().Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("output: ReadParquet out must be a non-nil *[]struct, got %T", out)
	}
	spec, err := specOf(pv.Elem().Type().Elem())
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("output: read %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("output: read %w", err)
	}
	if err := verifyParquetFile(f, st.Size()); err != nil {
		return nil, fmt.Errorf("output: read %s: %w", path, err)
	}
	// arrow-go's Parquet reader can panic on a damaged file (a nil page
	// header after one changed byte); that becomes an error, as for Arrow
	// IPC files. A file without a checksum can still be damaged.
	defer func() {
		if p := recover(); p != nil {
			meta, err = nil, fmt.Errorf("output: read %s: %w: damaged Parquet file: %v", path, ErrDamaged, p)
		}
	}()
	pf, err := file.NewParquetReader(f, file.WithReadProps(parquet.NewReaderProperties(mem)))
	if err != nil {
		return nil, fmt.Errorf("output: read %s: not a Parquet file: %w", path, err)
	}
	defer pf.Close()
	meta = map[string]string{}
	kv := pf.MetaData().KeyValueMetadata()
	for i, k := range kv.Keys() {
		if k != arrowSchemaKey {
			meta[k] = kv.Values()[i]
		}
	}
	sc := pf.MetaData().Schema
	cols, err := spec.matchParquet(sc)
	if err != nil {
		return nil, fmt.Errorf("output: read %s: %w", path, versionMismatch(meta, err))
	}
	res := reflect.New(pv.Elem().Type()).Elem()
	for g := 0; g < pf.NumRowGroups(); g++ {
		rg := pf.RowGroup(g)
		n := int(rg.NumRows())
		base := res.Len()
		res.Grow(n)
		res.SetLen(base + n)
		for fi := range spec.fields {
			cr, err := rg.Column(cols[fi])
			if err == nil {
				err = spec.fields[fi].readParquetColumn(cr, n, res, base)
				if cerr := cr.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				return nil, fmt.Errorf("output: read %s: column %q: %w", path, spec.fields[fi].column, err)
			}
		}
	}
	pv.Elem().Set(res)
	return meta, nil
}

// matchParquet finds each field's column in sc and checks that its type can
// be read into the field without loss.
func (s *structSpec) matchParquet(sc *schema.Schema) ([]int, error) {
	cols := make([]int, len(s.fields))
	for fi := range s.fields {
		f := &s.fields[fi]
		idx := sc.ColumnIndexByName(f.column)
		if idx < 0 {
			names := make([]string, sc.NumColumns())
			for i := range names {
				names[i] = sc.Column(i).Path()
			}
			return nil, fmt.Errorf("column %q (field %s) not in file; file has %v", f.column, f.goName, names)
		}
		c := sc.Column(idx)
		if c.MaxRepetitionLevel() > 0 || c.MaxDefinitionLevel() > 1 || !parquetReadable(f.kind, c) {
			return nil, fmt.Errorf("column %q has type %s, cannot read into field %s (%s)", f.column, parquetTypeName(c), f.goName, s.typ.Field(f.index).Type)
		}
		cols[fi] = idx
	}
	return cols, nil
}

// parquetTypeName names a column's physical and logical type for messages.
func parquetTypeName(c *schema.Column) string {
	name := c.PhysicalType().String()
	if lt := c.LogicalType(); lt != nil && lt.IsValid() && !lt.IsNone() {
		name += " (" + lt.String() + ")"
	}
	if c.MaxRepetitionLevel() > 0 {
		name = "repeated " + name
	}
	return name
}

// parquetReadable says whether column c can fill a field of kind k, with the
// same widening rules as [readable] for Arrow columns.
func parquetReadable(k colKind, c *schema.Column) bool {
	lt := c.LogicalType()
	intType := func(signed bool, maxBits int8) bool {
		if lt == nil || lt.IsNone() {
			return signed // a plain INT32/INT64 is signed
		}
		it, ok := lt.(schema.IntLogicalType)
		return ok && it.IsSigned() == signed && it.BitWidth() <= maxBits
	}
	switch c.PhysicalType() {
	case parquet.Types.Int64:
		return (k == kindInt || k == kindInt64) && intType(true, 64) || k == kindUint64 && intType(false, 64)
	case parquet.Types.Int32:
		return (k == kindInt || k == kindInt64 || k == kindInt32) && intType(true, 32) || k == kindUint64 && intType(false, 32)
	case parquet.Types.Double, parquet.Types.Float:
		return k == kindFloat64
	case parquet.Types.Boolean:
		return k == kindBool
	case parquet.Types.ByteArray:
		_, isString := lt.(schema.StringLogicalType)
		return k == kindString && (isString || c.ConvertedType() == schema.ConvertedTypes.UTF8)
	}
	return false
}

// readParquetColumn reads the n values of one column chunk into rows
// [base, base+n) of res.
func (f *fieldSpec) readParquetColumn(cr file.ColumnChunkReader, n int, res reflect.Value, base int) error {
	def := make([]int16, n)
	var vals reflect.Value // the non-null values, densely packed, as a slice
	var err error
	switch r := cr.(type) {
	case *file.Int64ColumnChunkReader:
		vals, err = readChunk(n, def, r.ReadBatch)
	case *file.Int32ColumnChunkReader:
		vals, err = readChunk(n, def, r.ReadBatch)
	case *file.Float64ColumnChunkReader:
		vals, err = readChunk(n, def, r.ReadBatch)
	case *file.Float32ColumnChunkReader:
		vals, err = readChunk(n, def, r.ReadBatch)
	case *file.BooleanColumnChunkReader:
		vals, err = readChunk(n, def, r.ReadBatch)
	case *file.ByteArrayColumnChunkReader:
		vals, err = readChunk(n, def, r.ReadBatch)
		if err == nil {
			strs := make([]string, vals.Len())
			for i := range strs {
				strs[i] = string(vals.Index(i).Bytes())
			}
			vals = reflect.ValueOf(strs)
		}
	default:
		err = fmt.Errorf("unsupported column reader %T", cr)
	}
	if err != nil {
		return err
	}
	dense := vals.Len()
	nullable := cr.Descriptor().MaxDefinitionLevel() > 0
	j := 0
	for i := 0; i < n; i++ {
		dst := res.Index(base + i).Field(f.index)
		if nullable && def[i] == 0 {
			if !f.nullable {
				return fmt.Errorf("row %d is null but field %s is not a pointer", base+i, f.goName)
			}
			continue
		}
		if j >= dense {
			return fmt.Errorf("row %d: fewer values than rows", base+i)
		}
		if f.nullable {
			p := reflect.New(dst.Type().Elem())
			dst.Set(p)
			dst = p.Elem()
		}
		v := vals.Index(j)
		j++
		switch f.kind {
		case kindFloat64:
			dst.SetFloat(v.Convert(reflect.TypeFor[float64]()).Float())
		case kindUint64:
			if v.Kind() == reflect.Int32 {
				dst.SetUint(uint64(uint32(v.Int())))
			} else {
				dst.SetUint(uint64(v.Int()))
			}
		case kindBool:
			dst.SetBool(v.Bool())
		case kindString:
			dst.SetString(v.String())
		default:
			dst.SetInt(v.Int())
		}
	}
	return nil
}

// readChunk reads the n rows of a column chunk through readBatch (a typed
// ReadBatch method), filling def with their definition levels, and returns
// the non-null values as a slice.
func readChunk[T any](n int, def []int16, readBatch func(int64, []T, []int16, []int16) (int64, int, error)) (reflect.Value, error) {
	buf := make([]T, n)
	rows, dense := 0, 0
	for rows < n {
		levels, values, err := readBatch(int64(n-rows), buf[dense:], def[rows:], nil)
		if err != nil {
			return reflect.Value{}, err
		}
		if levels == 0 {
			return reflect.Value{}, fmt.Errorf("column chunk ends after %d of %d rows", rows, n)
		}
		rows += int(levels)
		dense += values
	}
	return reflect.ValueOf(buf[:dense]), nil
}
