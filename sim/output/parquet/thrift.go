package parquet

// The Parquet footer and page headers are Thrift structs in the compact
// protocol (apache/thrift doc/specs/thrift-compact-protocol.md). This file
// holds the part of that protocol Parquet uses: field headers with delta
// ids, zigzag varints, binaries, lists and nested structs; the reader also
// skips fields it does not know (sets, maps, doubles), as the protocol
// requires of a reader meeting a newer writer.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Compact protocol type ids of a field header or list element.
const (
	tBoolTrue  = 1
	tBoolFalse = 2
	tByte      = 3
	tI16       = 4
	tI32       = 5
	tI64       = 6
	tDouble    = 7
	tBinary    = 8
	tList      = 9
	tSet       = 10
	tMap       = 11
	tStruct    = 12
)

// encoder appends compact-protocol values to buf. Field ids must rise
// within a struct (the writer's structs list them in order).
type encoder struct {
	buf  []byte
	last []int16 // the last field id of every open struct
}

func (e *encoder) uvarint(v uint64) { e.buf = binary.AppendUvarint(e.buf, v) }
func (e *encoder) varint(v int64)   { e.uvarint(uint64(v<<1) ^ uint64(v>>63)) } // zigzag

func (e *encoder) field(id int16, typ byte) {
	top := &e.last[len(e.last)-1]
	if d := id - *top; d > 0 && d <= 15 {
		e.buf = append(e.buf, byte(d)<<4|typ)
	} else {
		e.buf = append(e.buf, typ)
		e.varint(int64(id))
	}
	*top = id
}

func (e *encoder) beginStruct() { e.last = append(e.last, 0) }
func (e *encoder) endStruct() {
	e.buf = append(e.buf, 0) // STOP
	e.last = e.last[:len(e.last)-1]
}

func (e *encoder) i32(id int16, v int32) { e.field(id, tI32); e.varint(int64(v)) }
func (e *encoder) i64(id int16, v int64) { e.field(id, tI64); e.varint(v) }
func (e *encoder) str(id int16, s string) {
	e.field(id, tBinary)
	e.uvarint(uint64(len(s)))
	e.buf = append(e.buf, s...)
}
func (e *encoder) bin(id int16, b []byte) {
	e.field(id, tBinary)
	e.uvarint(uint64(len(b)))
	e.buf = append(e.buf, b...)
}
func (e *encoder) boolean(id int16, v bool) {
	if v {
		e.field(id, tBoolTrue)
	} else {
		e.field(id, tBoolFalse)
	}
}
func (e *encoder) byte8(id int16, v int8) { e.field(id, tByte); e.buf = append(e.buf, byte(v)) }

// structField opens a nested struct as field id; close it with endStruct.
func (e *encoder) structField(id int16) { e.field(id, tStruct); e.beginStruct() }

// listHeader starts a list field of n elements of type elem.
func (e *encoder) listHeader(id int16, elem byte, n int) {
	e.field(id, tList)
	if n < 15 {
		e.buf = append(e.buf, byte(n)<<4|elem)
	} else {
		e.buf = append(e.buf, 0xf0|elem)
		e.uvarint(uint64(n))
	}
}

// errThrift is the error of every malformed footer or page header.
var errThrift = errors.New("malformed Thrift metadata")

// decoder reads compact-protocol values from b. Every read is bounds
// checked; the first error sticks and later reads return zero values, so
// callers check err once per struct.
type decoder struct {
	b     []byte
	pos   int
	err   error
	depth int
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s at byte %d", errThrift, what, d.pos)
	}
	d.pos = len(d.b)
}

func (d *decoder) byte1() byte {
	if d.pos >= len(d.b) {
		d.fail("unexpected end")
		return 0
	}
	c := d.b[d.pos]
	d.pos++
	return c
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.pos:])
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.pos += n
	return v
}

func (d *decoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *decoder) i32() int32 {
	v := d.varint()
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.fail("i32 out of range")
		return 0
	}
	return int32(v)
}

func (d *decoder) binary() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)-d.pos) {
		d.fail("binary runs past the end")
		return nil
	}
	s := d.b[d.pos : d.pos+int(n)]
	d.pos += int(n)
	return s
}

// fieldHeader reads the next field of the current struct: its id and type,
// or typ 0 at the struct's end. last is the previous field id.
func (d *decoder) fieldHeader(last *int16) (id int16, typ byte) {
	h := d.byte1()
	if d.err != nil || h == 0 {
		return 0, 0
	}
	typ = h & 0x0f
	if delta := int16(h >> 4); delta != 0 {
		id = *last + delta
	} else {
		v := d.varint()
		if v < math.MinInt16 || v > math.MaxInt16 {
			d.fail("field id out of range")
			return 0, 0
		}
		id = int16(v)
	}
	*last = id
	return id, typ
}

// listHeader reads a list's element type and size.
func (d *decoder) listHeader() (elem byte, n int) {
	h := d.byte1()
	elem = h & 0x0f
	size := uint64(h >> 4)
	if size == 15 {
		size = d.uvarint()
	}
	// Every element takes at least one byte, so a size beyond the bytes
	// left is a damaged file and must not size an allocation.
	if size > uint64(len(d.b)-d.pos) {
		d.fail("list longer than its bytes")
		return 0, 0
	}
	return elem, int(size)
}

// readStruct calls fn for every field of a struct (after its header has
// been read); fn returns false for a field it does not read, which is then
// skipped.
func (d *decoder) readStruct(fn func(id int16, typ byte) bool) {
	d.depth++
	if d.depth > 64 {
		d.fail("structs nested too deeply")
	}
	var last int16
	for d.err == nil {
		id, typ := d.fieldHeader(&last)
		if typ == 0 {
			break
		}
		if !fn(id, typ) {
			d.skip(typ)
		}
	}
	d.depth--
}

// boolValue is the value of a bool field whose header carried it.
func boolValue(typ byte) bool { return typ == tBoolTrue }

// skip reads past one value of type typ.
func (d *decoder) skip(typ byte) {
	switch typ {
	case tBoolTrue, tBoolFalse:
	case tByte:
		d.byte1()
	case tI16, tI32, tI64:
		d.uvarint()
	case tDouble:
		if len(d.b)-d.pos < 8 {
			d.fail("double runs past the end")
		}
		d.pos += 8
	case tBinary:
		d.binary()
	case tList, tSet:
		elem, n := d.listHeader()
		for i := 0; i < n && d.err == nil; i++ {
			if elem == tBoolTrue || elem == tBoolFalse {
				d.byte1() // a bool element is one byte
			} else {
				d.skip(elem)
			}
		}
	case tMap:
		n := d.uvarint()
		if n == 0 {
			return
		}
		if n > uint64(len(d.b)-d.pos) {
			d.fail("map longer than its bytes")
			return
		}
		kv := d.byte1()
		for i := uint64(0); i < n && d.err == nil; i++ {
			d.skipElem(kv >> 4)
			d.skipElem(kv & 0x0f)
		}
	case tStruct:
		d.readStruct(func(int16, byte) bool { return false })
	default:
		d.fail(fmt.Sprintf("unknown Thrift type %d", typ))
	}
}

// skipElem skips one map key or value (bools take a byte there too).
func (d *decoder) skipElem(typ byte) {
	if typ == tBoolTrue || typ == tBoolFalse {
		d.byte1()
		return
	}
	d.skip(typ)
}
