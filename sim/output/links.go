package output

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// WriteLinks writes links.arrow's n rows, row(i) being the i-th, to path:
// the same bytes as [WriteTable] of the slice of those rows, without
// holding every row or reading them through reflection (a 131,072-GPU
// cluster has ~1.5 M links). row is called twice per row (once for the
// kind dictionary, once for the batch) and must return the same row both
// times.
func WriteLinks(path string, n int, row func(i int) LinkRow, meta map[string]string) error {
	return writeLinks(memory.DefaultAllocator, path, n, row, meta, BatchRows)
}

func writeLinks(mem memory.Allocator, path string, n int, row func(i int) LinkRow, meta map[string]string, batch int) error {
	lb, err := newLinkBuilder(mem, n, row, withChecksumKey(meta), batch)
	if err != nil {
		return err
	}
	defer lb.kinds.release()
	return writeBatches(mem, path, lb.schema, n, batch, lb.batch)
}

// linkFields are the LinkRow fields linkBuilder.column builds.
var linkFields = []string{"Link", "From", "To", "Kind", "BandwidthBytesPerS", "Bytes", "BusyNs", "Utilization"}

// linkBuilder is tableBuilder for LinkRow with typed columns: it fills one
// batch of rows at a time into buf and builds each column from its field.
type linkBuilder struct {
	mem    memory.Allocator
	spec   *structSpec
	row    func(i int) LinkRow
	buf    []LinkRow
	schema *arrow.Schema
	kinds  *fixedDict
}

func newLinkBuilder(mem memory.Allocator, n int, row func(i int) LinkRow, meta map[string]string, batch int) (*linkBuilder, error) {
	spec, err := specOf(reflect.TypeFor[LinkRow]())
	if err != nil {
		return nil, err
	}
	for _, f := range spec.fields {
		if !slices.Contains(linkFields, f.goName) {
			return nil, fmt.Errorf("output: WriteLinks has no column for LinkRow.%s", f.goName)
		}
	}
	// The kind dictionary: the column's sorted distinct values, as
	// newTableBuilder makes it. Rows of one kind come in runs, so a
	// comparison with the previous value skips most map lookups.
	seen := map[string]bool{}
	var kinds []string
	prev := ""
	for i := range n {
		k := row(i).Kind
		if i > 0 && k == prev {
			continue
		}
		prev = k
		if s := validUTF8(k); !seen[s] {
			seen[s] = true
			kinds = append(kinds, s)
		}
	}
	slices.Sort(kinds)
	lb := &linkBuilder{mem: mem, spec: spec, row: row, buf: make([]LinkRow, min(n, batch)), kinds: newFixedDict(mem, kinds)}
	fields := make([]arrow.Field, len(spec.fields))
	for fi := range spec.fields {
		f := &spec.fields[fi]
		fields[fi] = arrow.Field{Name: f.column, Type: f.arrowType(len(kinds)), Nullable: f.nullable}
	}
	md := schemaMetadata(meta)
	lb.schema = arrow.NewSchema(fields, &md)
	return lb, nil
}

// batch builds the record batch of rows [lo, hi).
func (lb *linkBuilder) batch(lo, hi int) arrow.RecordBatch {
	rows := lb.buf[:hi-lo]
	for i := range rows {
		rows[i] = lb.row(lo + i)
	}
	cols := make([]arrow.Array, len(lb.spec.fields))
	for fi := range lb.spec.fields {
		cols[fi] = lb.column(lb.spec.fields[fi].goName, rows)
	}
	rec := array.NewRecordBatch(lb.schema, cols, int64(len(rows)))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// column builds the array of LinkRow's field goName over rows, appending
// the values tableBuilder.column would.
func (lb *linkBuilder) column(goName string, rows []LinkRow) arrow.Array {
	n := len(rows)
	var b array.Builder
	switch goName {
	case "Link":
		b = fill(array.NewInt32Builder(lb.mem), rows, func(r *LinkRow) int32 { return r.Link })
	case "From", "To":
		str := func(i int) string { return rows[i].From }
		if goName == "To" {
			str = func(i int) string { return rows[i].To }
		}
		size := 0
		for i := range rows {
			size += len(str(i))
		}
		sb := array.NewStringBuilder(lb.mem)
		sb.Reserve(n)
		sb.ReserveData(size) // grows again only for replaced invalid UTF-8
		for i := range rows {
			sb.Append(validUTF8(str(i)))
		}
		b = sb
	case "Kind":
		d := lb.kinds
		var ib array.Builder
		if d.typ.IndexType.ID() == arrow.INT16 {
			// Rows of one kind come in runs: one lookup per run.
			prev, code, looked := "", int16(0), false
			ib = fill(array.NewInt16Builder(lb.mem), rows, func(r *LinkRow) int16 {
				if !looked || r.Kind != prev {
					prev, code, looked = r.Kind, int16(d.index[validUTF8(r.Kind)]), true
				}
				return code
			})
		} else {
			ib = fill(array.NewInt32Builder(lb.mem), rows, func(r *LinkRow) int32 { return d.index[validUTF8(r.Kind)] })
		}
		idx := ib.NewArray()
		ib.Release()
		arr := array.NewDictionaryArray(d.typ, idx, d.arr)
		idx.Release()
		return arr
	case "BandwidthBytesPerS":
		b = fill(array.NewFloat64Builder(lb.mem), rows, func(r *LinkRow) float64 { return r.BandwidthBytesPerS })
	case "Utilization":
		b = fill(array.NewFloat64Builder(lb.mem), rows, func(r *LinkRow) float64 { return r.Utilization })
	case "Bytes":
		b = fill(array.NewInt64Builder(lb.mem), rows, func(r *LinkRow) int64 { return r.Bytes })
	case "BusyNs":
		b = fill(array.NewInt64Builder(lb.mem), rows, func(r *LinkRow) int64 { return r.BusyNs })
	default:
		// Not reached: newLinkBuilder refuses a field missing from
		// linkFields.
		panic(fmt.Sprintf("output: WriteLinks has no column for LinkRow.%s", goName))
	}
	arr := b.NewArray()
	b.Release()
	return arr
}

// fixedBuilder is an Arrow builder of fixed-width values of type T.
type fixedBuilder[T any] interface {
	array.Builder
	UnsafeAppend(v T)
}

// fill appends field(row) of every row to b, reserved to fit, and returns b.
func fill[T any](b fixedBuilder[T], rows []LinkRow, field func(*LinkRow) T) array.Builder {
	b.Reserve(len(rows))
	for i := range rows {
		b.UnsafeAppend(field(&rows[i]))
	}
	return b
}
