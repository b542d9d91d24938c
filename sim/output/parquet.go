package output

// Parquet support lives in this file, on the package sim/output/parquet: a
// writer and reader of flat Parquet files written for simtrain. arrow-go's
// Parquet packages were used before; even without parquet/pqarrow (whose
// Arrow Flight import brings in gRPC and protobuf) they pull in Arrow's
// compute kernels, Apache Thrift with net/http and crypto/tls, Brotli and
// Snappy: about 90 of the 424 packages and a quarter of the CPU time of a
// cold `go build ./cmd/simtrain` (issue 18). The Arrow schema is stored in
// the file as pqarrow stores it (an IPC stream holding only the schema
// message, base64 under the key "ARROW:schema"), so pyarrow, polars and
// DuckDB read the same column types as from the Arrow IPC files.

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

	"github.com/simtrain/simtrain/sim/output/parquet"
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
	pw     *parquet.Writer
	schema *arrow.Schema
	chunks []parquet.Chunk // scratch, one per column
}

// newParquetFile starts a Parquet file on w for record batches of sc. Column
// types map as pqarrow maps them (int64, int32 and uint64 as INT64/INT32 with
// an integer logical type, float64 as DOUBLE, bool as BOOLEAN, utf8 and
// dictionaries of utf8 as BYTE_ARRAY with the String logical type, the
// dictionaries dictionary-encoded); other types are an error.
func newParquetFile(mem memory.Allocator, w io.Writer, sc *arrow.Schema) (*parquetFile, error) {
	cols := make([]parquet.Column, sc.NumFields())
	for i, f := range sc.Fields() {
		c, err := parquetColumn(f.Type)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", f.Name, err)
		}
		c.Name, c.Optional = f.Name, f.Nullable
		cols[i] = c
	}
	// An Arrow file's checksum is not this file's: it is left out of the
	// stored schema, and this file's own goes into the key-value metadata
	// as a placeholder that the atomic writer fills in (integrity.go).
	sc = withoutChecksum(sc)
	var kv []parquet.KeyValue
	md := sc.Metadata()
	for i, k := range md.Keys() {
		kv = append(kv, parquet.KeyValue{Key: k, Value: md.Values()[i]})
	}
	var ser bytes.Buffer
	sw := ipc.NewWriter(&ser, ipc.WithSchema(sc), ipc.WithAllocator(mem))
	if err := sw.Close(); err != nil {
		return nil, err
	}
	kv = append(kv,
		parquet.KeyValue{Key: arrowSchemaKey, Value: base64.StdEncoding.EncodeToString(ser.Bytes())},
		parquet.KeyValue{Key: MetaChecksum, Value: checksumPlaceholder})
	pw, err := parquet.NewWriter(w, cols, kv)
	if err != nil {
		return nil, err
	}
	return &parquetFile{pw: pw, schema: sc, chunks: make([]parquet.Chunk, len(cols))}, nil
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

// parquetColumn is the Parquet physical and logical type of an Arrow column.
func parquetColumn(dt arrow.DataType) (parquet.Column, error) {
	if d, ok := dt.(*arrow.DictionaryType); ok {
		if d.ValueType.ID() != arrow.STRING {
			return parquet.Column{}, fmt.Errorf("dictionary of %s not supported (only utf8)", d.ValueType)
		}
		dt = d.ValueType
	}
	switch dt.ID() {
	case arrow.INT64:
		return parquet.Column{Type: parquet.Int64, IntBits: 64}, nil
	case arrow.INT32:
		return parquet.Column{Type: parquet.Int32, IntBits: 32}, nil
	case arrow.UINT64:
		return parquet.Column{Type: parquet.Int64, IntBits: 64, Unsigned: true}, nil
	case arrow.FLOAT64:
		return parquet.Column{Type: parquet.Double}, nil
	case arrow.BOOL:
		return parquet.Column{Type: parquet.Boolean}, nil
	case arrow.STRING:
		return parquet.Column{Type: parquet.ByteArray, String: true}, nil
	}
	return parquet.Column{}, fmt.Errorf("Arrow type %s not supported in Parquet output", dt)
}

// write appends rec as one row group.
func (p *parquetFile) write(rec arrow.RecordBatch) error {
	if !rec.Schema().Equal(p.schema) {
		return errors.New("record batch schema differs from the file's")
	}
	for c := range p.chunks {
		if err := fillChunk(&p.chunks[c], rec.Column(c)); err != nil {
			return fmt.Errorf("column %q: %w", rec.ColumnName(c), err)
		}
	}
	return p.pw.WriteRowGroup(p.chunks)
}

// fillChunk sets ch to arr's rows: its validity (nil without nulls) and
// its present values, reusing ch's slices.
func fillChunk(ch *parquet.Chunk, arr arrow.Array) error {
	n := arr.Len()
	old := *ch
	*ch = parquet.Chunk{Rows: n}
	if arr.NullN() > 0 {
		ch.Valid = old.Valid[:0]
		for i := 0; i < n; i++ {
			ch.Valid = append(ch.Valid, arr.IsValid(i))
		}
	}
	switch a := arr.(type) {
	case *array.Int64:
		ch.Int64 = appendValid(old.Int64[:0], a, a.Value)
	case *array.Uint64:
		// Parquet stores uint64 in INT64's bits.
		ch.Int64 = appendValid(old.Int64[:0], a, func(i int) int64 { return int64(a.Value(i)) })
	case *array.Int32:
		ch.Int32 = appendValid(old.Int32[:0], a, a.Value)
	case *array.Float64:
		ch.Double = appendValid(old.Double[:0], a, a.Value)
	case *array.Boolean:
		ch.Bool = appendValid(old.Bool[:0], a, a.Value)
	case *array.String:
		ch.Bytes = appendValid(old.Bytes[:0], a, func(i int) []byte { return stringBytes(a, i) })
	case *array.Dictionary:
		dict, ok := a.Dictionary().(*array.String)
		if !ok {
			return fmt.Errorf("dictionary of %s not supported", a.Dictionary().DataType())
		}
		ch.Dict = old.Dict[:0]
		for i := 0; i < dict.Len(); i++ {
			ch.Dict = append(ch.Dict, stringBytes(dict, i))
		}
		ch.Index = appendValid(old.Index[:0], a, func(i int) int32 { return int32(a.GetValueIndex(i)) })
	default:
		return fmt.Errorf("unexpected Arrow array %T", arr)
	}
	return nil
}

// appendValid appends value(i) for every non-null row i of arr.
func appendValid[T any](dst []T, arr arrow.Array, value func(int) T) []T {
	for i := 0; i < arr.Len(); i++ {
		if arr.IsValid(i) {
			dst = append(dst, value(i))
		}
	}
	return dst
}

// stringBytes is value i of a without copying it.
func stringBytes(a *array.String, i int) []byte {
	offs := a.ValueOffsets() // this array's n+1 offsets; ValueBytes starts at offs[0]
	return a.ValueBytes()[offs[i]-offs[0] : offs[i+1]-offs[0]]
}

// close writes the footer. The underlying writer is not closed.
func (p *parquetFile) close() error { return p.pw.Close() }

// ReadParquet reads a Parquet file into out (*[]T, as for [ReadTable]) and
// returns the file's key-value metadata without the stored Arrow schema.
// Columns are matched by name and must be flat; a column may be narrower
// than the field where no value changes (INT32 into int64, FLOAT into
// float64), as for [ReadTable].
func ReadParquet(path string, out any) (map[string]string, error) {
	return readParquet(path, out)
}

func readParquet(path string, out any) (meta map[string]string, err error) {
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
	pf, err := parquet.Open(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("output: read %s: %w", path, damaged(err))
	}
	meta = map[string]string{}
	for _, kv := range pf.KeyValue {
		if kv.Key != arrowSchemaKey {
			meta[kv.Key] = kv.Value
		}
	}
	cols, err := spec.matchParquet(pf.Columns)
	if err != nil {
		return nil, fmt.Errorf("output: read %s: %w", path, versionMismatch(meta, err))
	}
	res := reflect.New(pv.Elem().Type()).Elem()
	for g := 0; g < pf.NumRowGroups(); g++ {
		n := int(pf.RowGroupRows(g))
		base := res.Len()
		res.Grow(n)
		res.SetLen(base + n)
		for fi := range spec.fields {
			ch, err := pf.ReadColumn(g, cols[fi])
			if err == nil {
				err = spec.fields[fi].fillFromParquet(ch, res, base)
			}
			if err != nil {
				return nil, fmt.Errorf("output: read %s: column %q: %w", path, spec.fields[fi].column, damaged(err))
			}
		}
	}
	pv.Elem().Set(res)
	return meta, nil
}

// damaged marks a Parquet format error as [ErrDamaged].
func damaged(err error) error {
	if errors.Is(err, parquet.ErrFormat) {
		return fmt.Errorf("%w: %w", ErrDamaged, err)
	}
	return err
}

// matchParquet finds each field's column among cols and checks that its
// type can be read into the field without loss.
func (s *structSpec) matchParquet(cols []parquet.Column) ([]int, error) {
	idx := make([]int, len(s.fields))
	for fi := range s.fields {
		f := &s.fields[fi]
		idx[fi] = -1
		for i := range cols {
			if cols[i].Name == f.column {
				idx[fi] = i
				break
			}
		}
		if idx[fi] < 0 {
			names := make([]string, len(cols))
			for i := range names {
				names[i] = cols[i].Name
			}
			return nil, fmt.Errorf("column %q (field %s) not in file; file has %v", f.column, f.goName, names)
		}
		c := cols[idx[fi]]
		if c.MaxRep > 0 || c.MaxDef > 1 || !parquetReadable(f.kind, c) {
			return nil, fmt.Errorf("column %q has type %s, cannot read into field %s (%s)", f.column, c.TypeName(), f.goName, s.typ.Field(f.index).Type)
		}
	}
	return idx, nil
}

// parquetReadable says whether column c can fill a field of kind k, with the
// same widening rules as [readable] for Arrow columns.
func parquetReadable(k colKind, c parquet.Column) bool {
	intType := func(signed bool, maxBits int8) bool {
		if c.IntBits == 0 {
			return signed // a plain INT32/INT64 is signed
		}
		return c.Unsigned != signed && c.IntBits <= maxBits
	}
	switch c.Type {
	case parquet.Int64:
		return (k == kindInt || k == kindInt64) && intType(true, 64) || k == kindUint64 && intType(false, 64)
	case parquet.Int32:
		return (k == kindInt || k == kindInt64 || k == kindInt32) && intType(true, 32) || k == kindUint64 && intType(false, 32)
	case parquet.Double, parquet.Float:
		return k == kindFloat64
	case parquet.Boolean:
		return k == kindBool
	case parquet.ByteArray:
		return k == kindString && c.String
	}
	return false
}

// fillFromParquet sets the field in rows [base, base+ch.Rows) of res from
// one column chunk.
func (f *fieldSpec) fillFromParquet(ch parquet.Chunk, res reflect.Value, base int) error {
	dense := max(len(ch.Int64), len(ch.Int32), len(ch.Double), len(ch.Float), len(ch.Bool), len(ch.Bytes))
	j := 0
	for i := 0; i < ch.Rows; i++ {
		dst := res.Index(base + i).Field(f.index)
		if ch.Valid != nil && !ch.Valid[i] {
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
		switch {
		case ch.Int64 != nil:
			if f.kind == kindUint64 {
				dst.SetUint(uint64(ch.Int64[j]))
			} else {
				dst.SetInt(ch.Int64[j])
			}
		case ch.Int32 != nil:
			if f.kind == kindUint64 {
				dst.SetUint(uint64(uint32(ch.Int32[j])))
			} else {
				dst.SetInt(int64(ch.Int32[j]))
			}
		case ch.Double != nil:
			dst.SetFloat(ch.Double[j])
		case ch.Float != nil:
			dst.SetFloat(float64(ch.Float[j]))
		case ch.Bool != nil:
			dst.SetBool(ch.Bool[j])
		default:
			dst.SetString(string(ch.Bytes[j]))
		}
		j++
	}
	return nil
}
