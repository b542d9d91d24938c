package output

import (
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/simtrain/simtrain/sim/hugepages"
)

// Columns built straight into slices that a writer keeps from one record
// batch to the next, as TimelineWriter does: the IPC writer copies every
// buffer out before fw.Write returns, so one slice per column serves every
// batch, and a column of n values is one store per value instead of an
// Arrow builder's append (capacity check, validity bit) into fresh memory
// per batch. The arrays carry no validity bitmap and no nulls, and each
// buffer is exactly as long as its values, as the builders' arrays are
// after NewArray trims them, so the IPC writer emits the same bytes
// (TestWriteLinksEqualsWriteTable, TestWriteTableDirectEqualsBuilders).

// resized returns s with length n, reusing its array when it is large
// enough (contents undefined: the caller sets every value). A new array's
// pages are mapped at once (hugepages.Populate): the caller writes every
// value next, and a batch's column of 65,536 values (256–512 KiB) would
// otherwise fault page by page at its first batch: ≈ 600 of the 405B
// run's ≈ 5,700 faults under perf lay in linkBuilder.batch's columns
// alone (issue 18, docs/design.md "Speed", run46).
func resized[T any](s []T, n int) []T {
	if cap(s) < n {
		return hugepages.Populate(make([]T, n))
	}
	return s[:n]
}

// copyField returns buf resized to n holding the field of type T at p,
// p+stride, p+2×stride, … (the field in n consecutive rows).
func copyField[T any](buf []T, n int, p unsafe.Pointer, stride uintptr) []T {
	buf = resized(buf, n)
	for i := range buf {
		buf[i] = *(*T)(unsafe.Add(p, uintptr(i)*stride))
	}
	return buf
}

// dictCodes returns buf resized to n holding the dictionary code of the
// string field at p, p+stride, … in n consecutive rows. Rows of one value
// often come in runs (and share the string's bytes, so the compare is a
// pointer check): one lookup per run.
func dictCodes[T int16 | int32](buf []T, n int, p unsafe.Pointer, stride uintptr, d *fixedDict) []T {
	buf = resized(buf, n)
	var prev string
	var code T
	for i := range buf {
		// By index: a pointer stepped past the last row would point
		// outside the rows' allocation.
		if s := *(*string)(unsafe.Add(p, uintptr(i)*stride)); i == 0 || !sameString(s, prev) {
			prev, code = s, T(d.index[validUTF8(s)])
		}
		buf[i] = code
	}
	return buf
}

// valuesArray wraps vals as an array of n non-null values of typ.
func valuesArray[T arrow.FixedWidthType](typ arrow.DataType, vals []T) arrow.Array {
	return fixedArray(typ, len(vals), arrow.GetBytes(vals))
}

// strCol is one reusable utf8 column: offsets and value bytes.
type strCol struct {
	off  []int32
	data []byte
}

// reset readies c for n strings, added in order with add.
func (c *strCol) reset(n int) {
	c.off = resized(c.off, n+1)[:1]
	c.off[0] = 0
	c.data = c.data[:0]
}

// add appends s, already valid UTF-8.
func (c *strCol) add(s string) {
	if len(c.data)+len(s) > cap(c.data) {
		c.data = grownBytes(c.data, len(s))
	}
	c.data = append(c.data, s...)
	c.off = append(c.off, int32(len(c.data)))
}

// grownBytes returns b's bytes in a new array with room for at least more
// bytes after them, twice b's capacity or more, its pages mapped at once
// (hugepages.Populate): a batch's value bytes (≈ 1 MiB a column of link
// names) are written next, and append's growth faulted every page of each
// new array, ≈ 390 faults of the 405B `run --all-ranks`'s links.arrow
// under perf (issue 18, docs/design.md "Speed", run46). The bytes and
// length are append's.
func grownBytes(b []byte, more int) []byte {
	n := max(2*cap(b), len(b)+more, 4096)
	g := hugepages.Populate(make([]byte, n))[:len(b)]
	copy(g, b)
	return g
}

// array wraps the strings added since reset.
func (c *strCol) array() arrow.Array { return stringArray(c.off, c.data) }

// directColumns turns on tableBuilder.directColumn for fields that cannot
// be null; tests turn it off to compare with the builders' bytes.
var directColumns = true

// directCol is one field's reusable column buffers in a tableBuilder.
type directCol struct {
	i16  []int16
	i32  []int32
	i64  []int64
	u64  []uint64
	f64  []float64
	bits []byte
	str  strCol
	// arr is the array built over this column's buffer for arrN values at
	// arrAt, held by one reference of the column's own for the next batch
	// of as many rows; nil when none is held.
	arr   arrow.Array
	arrN  int
	arrAt unsafe.Pointer
}

// Reusing a column's array from one batch to the next. A batch's arrays
// and record were a third of a sweep summary's rewrite (≈ 130 columns × 16
// batches of 64 rows: arrow-go's Data, Buffer and array objects, the
// dictionary array around the indices, ≈ 10 allocations a column). A
// column whose buffer is refilled in place for a batch of as many rows as
// the last one can hand out the same array: an array built over
// memory.NewBufferBytes reads its values from that memory when the IPC
// writer copies them, it caches only the slice over them (the same
// memory), and its null count is fixed at 0. A string column's data
// buffer grows and moves with its strings, so it is built per batch.

// reuse returns, with a reference for the caller, the array held for a
// batch of n values at at, or nil when the held array does not wrap them.
func (sc *directCol) reuse(n int, at unsafe.Pointer) arrow.Array {
	if sc.arr == nil || sc.arrN != n || sc.arrAt != at {
		return nil
	}
	sc.arr.Retain()
	return sc.arr
}

// keep holds arr, built over n values at at, for the next batch in place
// of the array held before, and returns it with the caller's reference.
func (sc *directCol) keep(arr arrow.Array, n int, at unsafe.Pointer) arrow.Array {
	sc.forget()
	arr.Retain()
	sc.arr, sc.arrN, sc.arrAt = arr, n, at
	return arr
}

// forget releases the held array, if any.
func (sc *directCol) forget() {
	if sc.arr != nil {
		sc.arr.Release()
		sc.arr, sc.arrN, sc.arrAt = nil, 0, nil
	}
}

// held returns the array held for n values at the start of buf, or builds
// one with mk and holds it.
func held[T any](sc *directCol, buf []T, mk func([]T) arrow.Array) arrow.Array {
	at := unsafe.Pointer(unsafe.SliceData(buf))
	if a := sc.reuse(len(buf), at); a != nil {
		return a
	}
	return sc.keep(mk(buf), len(buf), at)
}

// directColumn builds the column of field fi, which is not a pointer, for
// rows [lo, hi) over the buffers fillColumn fills, handing out the array
// held from the last batch when it wraps the same buffer for as many rows.
func (tb *tableBuilder) directColumn(fi, lo, hi int) arrow.Array {
	tb.fillColumn(fi, lo, hi)
	sc := &tb.scratch[fi]
	n := hi - lo
	if d := tb.dicts[fi]; d != nil {
		if d.typ.IndexType.ID() == arrow.INT16 {
			return held(sc, sc.i16, func(v []int16) arrow.Array { return dictArrayOf(d, valuesArray(d.typ.IndexType, v)) })
		}
		return held(sc, sc.i32, func(v []int32) arrow.Array { return dictArrayOf(d, valuesArray(d.typ.IndexType, v)) })
	}
	switch tb.spec.fields[fi].kind {
	case kindInt, kindInt64:
		return held(sc, sc.i64, int64Array)
	case kindInt32:
		return held(sc, sc.i32, func(v []int32) arrow.Array { return valuesArray(arrow.PrimitiveTypes.Int32, v) })
	case kindUint64:
		return held(sc, sc.u64, func(v []uint64) arrow.Array { return valuesArray(arrow.PrimitiveTypes.Uint64, v) })
	case kindFloat64:
		return held(sc, sc.f64, func(v []float64) arrow.Array { return valuesArray(arrow.PrimitiveTypes.Float64, v) })
	case kindBool:
		// The bitmap's length alone does not tell n: a batch of 60 rows
		// and one of 64 share 8 bytes. keep records n.
		at := unsafe.Pointer(unsafe.SliceData(sc.bits))
		if a := sc.reuse(n, at); a != nil {
			return a
		}
		return sc.keep(fixedArray(arrow.FixedWidthTypes.Boolean, n, sc.bits), n, at)
	default: // kindString
		return sc.str.array()
	}
}

// direct reports whether every column of tb is built by directColumn (no
// field is a pointer), so that fillColumn fills every column's buffers.
func (tb *tableBuilder) direct() bool {
	if !directColumns {
		return false
	}
	for fi := range tb.spec.fields {
		if tb.spec.fields[fi].nullable {
			return false
		}
	}
	return true
}

// fillColumn fills the buffers of field fi, which is not a pointer, with
// its values in rows [lo, hi), reading the field from the slice's memory
// at its offset in each row rather than through reflect.Value calls, into
// buffers kept from batch to batch. They hold the values the column's
// builders append, as the builders' arrays lay them out: a dictionary
// column's codes in i16 or i32 (the dictionary's index type), an int or
// int64 column in i64, int32 in i32, uint64 in u64, float64 in f64, bool
// in bits (n bits, the bits past n zero, ceil(n/8) bytes as
// BooleanBuilder trims it), a string in str (offsets from 0, the bytes
// made valid UTF-8); each buffer exactly as long as the values.
func (tb *tableBuilder) fillColumn(fi, lo, hi int) {
	f := &tb.spec.fields[fi]
	sc := &tb.scratch[fi]
	n := hi - lo
	// p is the address of the field in row lo, the next row's stride
	// bytes on; rows is a live slice that tb holds, so its memory stays
	// put while the batch is built.
	stride := tb.stride
	p := unsafe.Add(tb.rows.UnsafePointer(), uintptr(lo)*stride+tb.offsets[fi])
	at := func(i int) unsafe.Pointer { return unsafe.Add(p, uintptr(i)*stride) }
	if d := tb.dicts[fi]; d != nil {
		if d.typ.IndexType.ID() == arrow.INT16 {
			sc.i16 = dictCodes(sc.i16, n, p, stride, d)
		} else {
			sc.i32 = dictCodes(sc.i32, n, p, stride, d)
		}
		return
	}
	switch f.kind {
	case kindInt:
		sc.i64 = resized(sc.i64, n)
		for i := range n {
			sc.i64[i] = int64(*(*int)(at(i)))
		}
	case kindInt64:
		sc.i64 = copyField(sc.i64, n, p, stride)
	case kindInt32:
		sc.i32 = copyField(sc.i32, n, p, stride)
	case kindUint64:
		sc.u64 = copyField(sc.u64, n, p, stride)
	case kindFloat64:
		sc.f64 = copyField(sc.f64, n, p, stride)
	case kindBool:
		sc.bits = resized(sc.bits, (n+7)/8)
		clear(sc.bits)
		for i := range n {
			if *(*bool)(at(i)) {
				sc.bits[i>>3] |= 1 << (i & 7)
			}
		}
	default: // kindString
		sc.str.reset(n)
		for i := range n {
			sc.str.add(validUTF8(*(*string)(at(i))))
		}
	}
}

// sameString is a == b, told without comparing bytes when a and b share
// them, as the rows' strings of one value mostly do (runtime.memequal,
// called for every equal-length pair, was half of a dictionary column's
// instructions).
func sameString(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

func int64Array(v []int64) arrow.Array { return valuesArray(arrow.PrimitiveTypes.Int64, v) }

// dictArrayOf wraps idx, whose reference it takes, as a column of d.
func dictArrayOf(d *fixedDict, idx arrow.Array) arrow.Array {
	arr := array.NewDictionaryArray(d.typ, idx, d.arr)
	idx.Release()
	return arr
}
