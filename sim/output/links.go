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
// cluster has ~1.5 M links). kind(i), when not nil, is row(i).Kind, read
// alone for the kind dictionary before the first batch (a pass over every
// row); with kind nil that pass calls row, which must then return the same
// row both times.
func WriteLinks(path string, n int, row func(i int) LinkRow, kind func(i int) string, meta map[string]string) error {
	return writeLinks(memory.DefaultAllocator, path, n, row, kind, meta, BatchRows)
}

func writeLinks(mem memory.Allocator, path string, n int, row func(i int) LinkRow, kind func(i int) string, meta map[string]string, batch int) error {
	lb, err := newLinkBuilder(mem, n, row, kind, withChecksumKey(meta), batch)
	if err != nil {
		return err
	}
	defer lb.kinds.release()
	return writeBatches(mem, path, lb.schema, n, batch, lb.batch)
}

// linkFields are the LinkRow fields linkBuilder.column builds.
var linkFields = []string{"Link", "From", "To", "Kind", "BandwidthBytesPerS", "Bytes", "BusyNs", "Utilization"}

// linkBuilder is tableBuilder for LinkRow with typed columns: one pass over
// a batch's rows writes every column straight into buffers kept from batch
// to batch (direct.go).
type linkBuilder struct {
	mem    memory.Allocator
	spec   *structSpec
	row    func(i int) LinkRow
	schema *arrow.Schema
	kinds  *fixedDict

	// Column buffers, reused by every batch (direct.go).
	link        []int32
	kind16      []int16
	kind32      []int32
	bw, util    []float64
	bytes, busy []int64
	from, to    strCol
}

func newLinkBuilder(mem memory.Allocator, n int, row func(i int) LinkRow, kind func(i int) string, meta map[string]string, batch int) (*linkBuilder, error) {
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
	if kind == nil {
		kind = func(i int) string { return row(i).Kind }
	}
	seen := map[string]bool{}
	var kinds []string
	prev := ""
	for i := range n {
		k := kind(i)
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
	lb := &linkBuilder{mem: mem, spec: spec, row: row, kinds: newFixedDict(mem, kinds)}
	fields := make([]arrow.Field, len(spec.fields))
	for fi := range spec.fields {
		f := &spec.fields[fi]
		fields[fi] = arrow.Field{Name: f.column, Type: f.arrowType(len(kinds)), Nullable: f.nullable}
	}
	md := schemaMetadata(meta)
	lb.schema = arrow.NewSchema(fields, &md)
	return lb, nil
}

// batch builds the record batch of rows [lo, hi) in one pass over them.
func (lb *linkBuilder) batch(lo, hi int) arrow.RecordBatch {
	n := hi - lo
	lb.link = resized(lb.link, n)
	lb.bw, lb.util = resized(lb.bw, n), resized(lb.util, n)
	lb.bytes, lb.busy = resized(lb.bytes, n), resized(lb.busy, n)
	lb.from.reset(n)
	lb.to.reset(n)
	d := lb.kinds
	narrow := d.typ.IndexType.ID() == arrow.INT16
	if narrow {
		lb.kind16 = resized(lb.kind16, n)
	} else {
		lb.kind32 = resized(lb.kind32, n)
	}
	// Rows of one kind come in runs: one lookup per run.
	prev, code, looked := "", int32(0), false
	for i := range n {
		r := lb.row(lo + i)
		lb.link[i], lb.bw[i], lb.bytes[i], lb.busy[i], lb.util[i] = r.Link, r.BandwidthBytesPerS, r.Bytes, r.BusyNs, r.Utilization
		lb.from.add(validUTF8(r.From))
		lb.to.add(validUTF8(r.To))
		if !looked || r.Kind != prev {
			prev, code, looked = r.Kind, d.index[validUTF8(r.Kind)], true
		}
		if narrow {
			lb.kind16[i] = int16(code)
		} else {
			lb.kind32[i] = code
		}
	}
	cols := make([]arrow.Array, len(lb.spec.fields))
	for fi := range lb.spec.fields {
		var a arrow.Array
		switch lb.spec.fields[fi].goName {
		case "Link":
			a = valuesArray(arrow.PrimitiveTypes.Int32, lb.link)
		case "From":
			a = lb.from.array()
		case "To":
			a = lb.to.array()
		case "Kind":
			var idx arrow.Array
			if narrow {
				idx = valuesArray(d.typ.IndexType, lb.kind16)
			} else {
				idx = valuesArray(d.typ.IndexType, lb.kind32)
			}
			a = array.NewDictionaryArray(d.typ, idx, d.arr)
			idx.Release()
		case "BandwidthBytesPerS":
			a = valuesArray(arrow.PrimitiveTypes.Float64, lb.bw)
		case "Bytes":
			a = valuesArray(arrow.PrimitiveTypes.Int64, lb.bytes)
		case "BusyNs":
			a = valuesArray(arrow.PrimitiveTypes.Int64, lb.busy)
		case "Utilization":
			a = valuesArray(arrow.PrimitiveTypes.Float64, lb.util)
		default:
			// Not reached: newLinkBuilder refuses a field missing from
			// linkFields.
			panic(fmt.Sprintf("output: WriteLinks has no column for LinkRow.%s", lb.spec.fields[fi].goName))
		}
		cols[fi] = a
	}
	rec := array.NewRecordBatch(lb.schema, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return rec
}
