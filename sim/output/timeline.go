package output

import (
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/simtrain/simtrain/sim/hugepages"
)

// TimelineColumns returns the column names of timeline.arrow, in order.
func TimelineColumns() []string {
	spec := timelineSpec()
	names := make([]string, len(spec.fields))
	for i, f := range spec.fields {
		names[i] = f.column
	}
	return names
}

func timelineSpec() *structSpec {
	spec, err := specOf(reflect.TypeFor[TimelineRow]())
	if err != nil {
		panic("output: TimelineRow tags: " + err.Error()) // a bug in this package, caught by every test
	}
	return spec
}

// TimelineWriter streams [TimelineRow]s into an Arrow IPC file. It holds at
// most one batch ([BatchRows] rows) in memory, so a timeline of any length
// is written in bounded memory. The file appears at its path only when Close
// succeeds. Any error from Write or Close aborts the file: the temporary is
// removed, later calls return the same error, and nothing is left at the
// path. Abort after Close, or Close after Abort, does nothing, so
// `defer w.Abort()` is safe. A TimelineWriter is not safe for concurrent use.
type TimelineWriter struct {
	path   string
	mem    memory.Allocator
	af     *atomicFile
	fw     *ipc.FileWriter
	schema *arrow.Schema
	dicts  [3]*fixedDict // stream, kind, group
	rows   int64
	err    error // sticky: the first error, or errClosed

	// Columns of the pending batch, wrapped as Arrow buffers without copying.
	step, rank, node, layer, micro, chunk []int32
	stream, kind, group                   []int32
	start, end                            []int64
	flops                                 []float64
	bytes                                 []int64
	nameOff                               []int32
	nameData                              []byte
	idx16                                 [3][]int16   // int16 dictionary indices, one buffer per column
	codes                                 [3]codeCache // the dictionaries' codes of recent strings
}

const (
	dictStream = iota
	dictKind
	dictGroup
)

var dictNames = [3]string{"Stream", "Kind", "Group"}

var errClosed = errors.New("output: timeline writer is closed")

// NewTimelineWriter starts a timeline file at path. meta becomes the schema
// metadata next to schema_version (for example run_id and which ranks the
// file holds). d fixes the dictionaries of the stream, kind and group
// columns; a list with a repeated value is an error.
func NewTimelineWriter(path string, meta map[string]string, d TimelineDicts) (*TimelineWriter, error) {
	return newTimelineWriter(memory.DefaultAllocator, path, meta, d)
}

func newTimelineWriter(mem memory.Allocator, path string, meta map[string]string, d TimelineDicts) (*TimelineWriter, error) {
	lists := [3][]string{d.Stream, d.Kind, d.Group}
	for i, l := range lists {
		seen := make(map[string]bool, len(l))
		for _, v := range l {
			if seen[v] {
				return nil, fmt.Errorf("output: TimelineDicts.%s: value %q appears twice", dictNames[i], v)
			}
			if v != validUTF8(v) {
				return nil, fmt.Errorf("output: TimelineDicts.%s: value %q is not valid UTF-8", dictNames[i], v)
			}
			seen[v] = true
		}
	}
	w := &TimelineWriter{path: path, mem: mem}
	for i, l := range lists {
		w.dicts[i] = newFixedDict(mem, append([]string(nil), l...))
	}
	spec := timelineSpec()
	fields := make([]arrow.Field, len(spec.fields))
	for i := range spec.fields {
		f := &spec.fields[i]
		n := 0
		if f.dict {
			n = len(w.dictFor(f.column).values)
		}
		fields[i] = arrow.Field{Name: f.column, Type: f.arrowType(n), Nullable: f.nullable}
	}
	md := schemaMetadata(withChecksumKey(meta))
	w.schema = arrow.NewSchema(fields, &md)
	af, err := createAtomicIPC(path)
	if err != nil {
		w.releaseDicts()
		return nil, err
	}
	w.af = af
	w.fw, err = ipc.NewFileWriter(af.w, ipc.WithSchema(w.schema), ipc.WithAllocator(mem))
	if err != nil {
		af.abort()
		w.releaseDicts()
		return nil, fmt.Errorf("output: write %s: %w", path, err)
	}
	w.nameOff = append(make([]int32, 0, BatchRows+1), 0)
	return w, nil
}

func (w *TimelineWriter) dictFor(column string) *fixedDict {
	switch column {
	case "stream":
		return w.dicts[dictStream]
	case "kind":
		return w.dicts[dictKind]
	default:
		return w.dicts[dictGroup]
	}
}

// Rows returns the number of rows accepted so far.
func (w *TimelineWriter) Rows() int64 { return w.rows }

// Write appends rows, flushing a record batch whenever [BatchRows] rows are
// pending. A row whose stream, kind or group is not in its dictionary is an
// error (and aborts the file, see [TimelineWriter]).
func (w *TimelineWriter) Write(rows []TimelineRow) error {
	if w.err != nil {
		return w.err
	}
	if w.step == nil && len(rows) > 0 {
		w.allocBatch(len(rows) >= BatchRows)
	}
	lookup := func(k int, s string) (int32, error) {
		if i, ok := w.codes[k].get(s); ok {
			return i, nil
		}
		i, ok := w.dicts[k].index[s]
		if !ok {
			return 0, fmt.Errorf("output: timeline row %d: %s %q not in TimelineDicts.%s %q",
				w.rows, lowerDictName(k), s, dictNames[k], w.dicts[k].values)
		}
		w.codes[k].put(s, i)
		return i, nil
	}
	for ri := range rows {
		r := &rows[ri]
		si, err := lookup(dictStream, r.Stream)
		if err != nil {
			return w.fail(err)
		}
		ki, err := lookup(dictKind, r.Kind)
		if err != nil {
			return w.fail(err)
		}
		gi, err := lookup(dictGroup, r.Group)
		if err != nil {
			return w.fail(err)
		}
		w.step = append(w.step, r.Step)
		w.rank = append(w.rank, r.Rank)
		w.node = append(w.node, r.Node)
		w.stream = append(w.stream, si)
		w.kind = append(w.kind, ki)
		w.nameData = append(w.nameData, validUTF8(r.Name)...)
		w.nameOff = append(w.nameOff, int32(len(w.nameData)))
		w.layer = append(w.layer, r.Layer)
		w.micro = append(w.micro, r.Microbatch)
		w.chunk = append(w.chunk, r.Chunk)
		w.start = append(w.start, r.StartNs)
		w.end = append(w.end, r.EndNs)
		w.flops = append(w.flops, r.FLOPs)
		w.bytes = append(w.bytes, r.Bytes)
		w.group = append(w.group, gi)
		w.rows++
		if len(w.step) == BatchRows {
			if err := w.flush(); err != nil {
				return w.fail(err)
			}
		}
	}
	return nil
}

// allocBatch gives every column buffer the capacity of one full batch
// (about 4.5 MiB), once, so that appends never regrow them. With full (the
// first Write brings a whole batch, so every buffer fills) their pages are
// mapped at once (hugepages.Populate) rather than faulted page by page at
// the appends: ≈ 1,150 faults for a timeline of a batch or more (issue 18,
// docs/design.md "Speed", run46). A smaller timeline's buffers are left
// to fault as they fill: most of their pages are never touched.
func (w *TimelineWriter) allocBatch(full bool) {
	i32 := func() []int32 { return batchBuffer[int32](BatchRows, full) }
	w.step, w.rank, w.node, w.layer, w.micro, w.chunk = i32(), i32(), i32(), i32(), i32(), i32()
	w.stream, w.kind, w.group = i32(), i32(), i32()
	w.start, w.end = batchBuffer[int64](BatchRows, full), batchBuffer[int64](BatchRows, full)
	w.flops, w.bytes = batchBuffer[float64](BatchRows, full), batchBuffer[int64](BatchRows, full)
	w.nameData = batchBuffer[byte](16*BatchRows, full)
	if full {
		hugepages.Populate(w.nameOff[:cap(w.nameOff)]) // contents kept
	}
}

// batchBuffer is an empty slice with room for n values, its pages mapped
// at once when mapped (allocBatch's full).
func batchBuffer[T any](n int, mapped bool) []T {
	s := make([]T, n)
	if mapped {
		hugepages.Populate(s)
	}
	return s[:0]
}

// TimelineRows returns an empty slice with room for n rows, its pages
// mapped at once (MappedRows): a caller gathering rows for
// [TimelineWriter.Write] in batches of [BatchRows] (report.Timeline:
// 8 MiB) writes every page of it, and unmapped, each page faulted twice,
// once when the collector scanned the fresh array (read as the zero page)
// and again at its first write (issue 18, docs/design.md "Speed", run46).
func TimelineRows(n int) []TimelineRow { return MappedRows[TimelineRow](n)[:0] }

// MappedRows returns make([]T, n) with its pages mapped at once
// (hugepages.Populate: 2 MiB pages where the block is free) rather than
// faulted one by one at the first writes: for an array the caller fills
// next, such as memory.arrow's row per rank (1.3 MB for 16,384 ranks).
// Contents are make's: n zero values.
func MappedRows[T any](n int) []T { return hugepages.Populate(make([]T, n)) }

// codeCache remembers the dictionary codes of the strings a timeline's
// rows name, by the address and length of the string's bytes (a direct-
// mapped table of 16, and the empty string apart). Why: a run's rows take
// their stream, kind and group from a few shared strings (parallel's name
// tables), but consecutive rows alternate between them, so a cache of the
// last value missed and the map lookup (hash and compare) took ≈ 3% of
// the 405B run's CPU (issue 18, docs/design.md "Speed", run46). Strings
// are immutable and a slot's pointer keeps their bytes alive (their
// memory is not reused while the slot holds it), so bytes at the same
// address and length are the same string: a hit returns the code the map
// gave for it.
type codeCache struct {
	slots [16]struct {
		p *byte
		n int
		i int32
	}
	empty   int32
	emptyOK bool
}

// slot is where the string at p goes in a codeCache.
func (c *codeCache) slot(p *byte) int {
	a := uintptr(unsafe.Pointer(p))
	return int((a ^ a>>4 ^ a>>8) & 15)
}

// get returns s's code when c holds it.
func (c *codeCache) get(s string) (int32, bool) {
	if len(s) == 0 {
		return c.empty, c.emptyOK
	}
	p := unsafe.StringData(s)
	if e := &c.slots[c.slot(p)]; e.p == p && e.n == len(s) {
		return e.i, true
	}
	return 0, false
}

// put remembers i as s's code.
func (c *codeCache) put(s string, i int32) {
	if len(s) == 0 {
		c.empty, c.emptyOK = i, true
		return
	}
	p := unsafe.StringData(s)
	e := &c.slots[c.slot(p)]
	e.p, e.n, e.i = p, len(s), i
}

func lowerDictName(k int) string { return [3]string{"stream", "kind", "group"}[k] }

// flush writes the pending rows as one record batch and resets the buffers.
func (w *TimelineWriter) flush() error {
	n := len(w.step)
	if n == 0 {
		return nil
	}
	if len(w.nameData) > 1<<31-1 {
		return fmt.Errorf("output: write %s: names of one batch exceed 2 GiB", w.path)
	}
	cols := []arrow.Array{
		fixedArray(arrow.PrimitiveTypes.Int32, n, arrow.Int32Traits.CastToBytes(w.step)),
		fixedArray(arrow.PrimitiveTypes.Int32, n, arrow.Int32Traits.CastToBytes(w.rank)),
		fixedArray(arrow.PrimitiveTypes.Int32, n, arrow.Int32Traits.CastToBytes(w.node)),
		w.dictArray(dictStream, w.stream),
		w.dictArray(dictKind, w.kind),
		stringArray(w.nameOff, w.nameData),
		fixedArray(arrow.PrimitiveTypes.Int32, n, arrow.Int32Traits.CastToBytes(w.layer)),
		fixedArray(arrow.PrimitiveTypes.Int32, n, arrow.Int32Traits.CastToBytes(w.micro)),
		fixedArray(arrow.PrimitiveTypes.Int32, n, arrow.Int32Traits.CastToBytes(w.chunk)),
		fixedArray(arrow.PrimitiveTypes.Int64, n, arrow.Int64Traits.CastToBytes(w.start)),
		fixedArray(arrow.PrimitiveTypes.Int64, n, arrow.Int64Traits.CastToBytes(w.end)),
		fixedArray(arrow.PrimitiveTypes.Float64, n, arrow.Float64Traits.CastToBytes(w.flops)),
		fixedArray(arrow.PrimitiveTypes.Int64, n, arrow.Int64Traits.CastToBytes(w.bytes)),
		w.dictArray(dictGroup, w.group),
	}
	rec := array.NewRecordBatch(w.schema, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	err := w.fw.Write(rec)
	rec.Release()
	if err != nil {
		return fmt.Errorf("output: write %s: %w", w.path, err)
	}
	w.step, w.rank, w.node = w.step[:0], w.rank[:0], w.node[:0]
	w.stream, w.kind, w.group = w.stream[:0], w.kind[:0], w.group[:0]
	w.layer, w.micro, w.chunk = w.layer[:0], w.micro[:0], w.chunk[:0]
	w.start, w.end, w.flops, w.bytes = w.start[:0], w.end[:0], w.flops[:0], w.bytes[:0]
	w.nameOff, w.nameData = w.nameOff[:1], w.nameData[:0]
	return nil
}

// fixedArray wraps a Go slice's bytes as an Arrow array with no nulls. The
// IPC writer copies the bytes out during Write, so the slice may be reused
// once Write returns.
func fixedArray(dt arrow.DataType, n int, b []byte) arrow.Array {
	data := array.NewData(dt, n, []*memory.Buffer{nil, memory.NewBufferBytes(b)}, nil, 0, 0)
	defer data.Release()
	return array.MakeFromData(data)
}

func stringArray(off []int32, data []byte) arrow.Array {
	d := array.NewData(arrow.BinaryTypes.String, len(off)-1, []*memory.Buffer{
		nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(off)), memory.NewBufferBytes(data),
	}, nil, 0, 0)
	defer d.Release()
	return array.MakeFromData(d)
}

// dictArray builds a dictionary column whose dictionary is the writer's
// fixed one, the same array in every batch. Its int16 indices live in the
// column's own scratch buffer: the three columns' arrays are alive together
// until the batch is written.
func (w *TimelineWriter) dictArray(k int, idx []int32) arrow.Array {
	d := w.dicts[k]
	var indices arrow.Array
	if d.typ.IndexType.ID() == arrow.INT16 {
		buf := resized(w.idx16[k], len(idx)) // mapped at once when new
		for i, v := range idx {
			buf[i] = int16(v)
		}
		w.idx16[k] = buf
		indices = fixedArray(arrow.PrimitiveTypes.Int16, len(idx), arrow.Int16Traits.CastToBytes(buf))
	} else {
		indices = fixedArray(arrow.PrimitiveTypes.Int32, len(idx), arrow.Int32Traits.CastToBytes(idx))
	}
	defer indices.Release()
	return array.NewDictionaryArray(d.typ, indices, d.arr)
}

// fail aborts the file and makes err sticky.
func (w *TimelineWriter) fail(err error) error {
	if w.err == nil {
		w.err = err
		w.fw.Close() // releases the writer's retained dictionaries
		w.af.abort()
		w.releaseDicts()
	}
	return w.err
}

func (w *TimelineWriter) releaseDicts() {
	for _, d := range w.dicts {
		d.release()
	}
}

// Close writes the last batch and the footer, syncs the file and renames it
// to its path. It returns the first error of the writer's life, if any.
func (w *TimelineWriter) Close() error {
	if w.err != nil {
		if w.err == errClosed {
			return nil
		}
		return w.err
	}
	if err := w.flush(); err != nil {
		return w.fail(err)
	}
	if err := w.fw.Close(); err != nil {
		return w.fail(fmt.Errorf("output: write %s: %w", w.path, err))
	}
	w.releaseDicts()
	if err := w.af.commit(); err != nil {
		w.err = err
		return err
	}
	w.err = errClosed
	return nil
}

// Abort discards the file: the temporary is removed and the path is left as
// it was. It does nothing after Close or a failed Write.
func (w *TimelineWriter) Abort() {
	if w.err == nil {
		w.fail(errors.New("output: write " + w.path + ": aborted"))
	}
}
