package output

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A bounds-checked reader of FlatBuffers, the encoding of Arrow IPC's
// footer and message headers. arrow-go's generated accessors trust every
// offset and length they find: on a damaged file a vector length becomes a
// make() of tens of gigabytes (issue 19 saw 143 GB requested by merge; a
// flip in the footer's schema metadata asks for 30-68 GB), which is a
// fatal error no recover catches. Every offset and length read here is
// checked against the buffer before it is used, so a damaged file is an
// error, never an allocation. The layout follows the FlatBuffers binary
// format (flatbuffers.dev, "Internals"): a table starts with a signed
// offset back to its vtable; the vtable holds its own size, the table's
// inline size and one uint16 offset per field (0 = absent); offset fields
// hold a uint32 forward offset to a table, vector or string; vectors and
// strings start with a uint32 length.

var errFB = errors.New("malformed flatbuffer")

// fbTable is one verified table of buf.
type fbTable struct {
	buf    []byte
	pos    int // the table's start
	vt     int // its vtable's start
	fields int // fields in the vtable
	inline int // the table's inline size
}

func fbU32(buf []byte, pos int) (uint32, bool) {
	if pos < 0 || pos > len(buf)-4 {
		return 0, false
	}
	return binary.LittleEndian.Uint32(buf[pos:]), true
}

// fbRoot returns the root table of buf.
func fbRoot(buf []byte) (fbTable, error) {
	off, ok := fbU32(buf, 0)
	if !ok {
		return fbTable{}, errFB
	}
	return fbTableAt(buf, int(off))
}

// fbTableAt verifies the table at pos and its vtable.
func fbTableAt(buf []byte, pos int) (fbTable, error) {
	so, ok := fbU32(buf, pos)
	if !ok {
		return fbTable{}, errFB
	}
	vt := pos - int(int32(so))
	if vt < 0 || vt > len(buf)-4 {
		return fbTable{}, errFB
	}
	vtLen := int(binary.LittleEndian.Uint16(buf[vt:]))
	inline := int(binary.LittleEndian.Uint16(buf[vt+2:]))
	if vtLen < 4 || vtLen%2 != 0 || vt+vtLen > len(buf) || inline < 4 || pos+inline > len(buf) {
		return fbTable{}, errFB
	}
	return fbTable{buf: buf, pos: pos, vt: vt, fields: (vtLen - 4) / 2, inline: inline}, nil
}

// field returns the absolute position of field i's inline data of size
// bytes, or -1 when the field is absent.
func (t fbTable) field(i, size int) (int, error) {
	if i >= t.fields {
		return -1, nil
	}
	off := int(binary.LittleEndian.Uint16(t.buf[t.vt+4+2*i:]))
	if off == 0 {
		return -1, nil
	}
	if off+size > t.inline {
		return -1, errFB
	}
	return t.pos + off, nil
}

// scalar reads field i as a little-endian integer of size 1, 2, 4 or 8
// bytes (def when absent).
func (t fbTable) scalar(i, size int, def int64) (int64, error) {
	p, err := t.field(i, size)
	if err != nil || p < 0 {
		return def, err
	}
	b := t.buf[p : p+size]
	switch size {
	case 1:
		return int64(int8(b[0])), nil
	case 2:
		return int64(int16(binary.LittleEndian.Uint16(b))), nil
	case 4:
		return int64(int32(binary.LittleEndian.Uint32(b))), nil
	}
	return int64(binary.LittleEndian.Uint64(b)), nil
}

// target follows offset field i; -1 when absent.
func (t fbTable) target(i int) (int, error) {
	p, err := t.field(i, 4)
	if err != nil || p < 0 {
		return -1, err
	}
	off, _ := fbU32(t.buf, p)
	dst := p + int(off)
	if off == 0 || dst >= len(t.buf) || dst < p {
		return -1, errFB
	}
	return dst, nil
}

// table follows offset field i to a table; ok is false when absent.
func (t fbTable) table(i int) (fbTable, bool, error) {
	dst, err := t.target(i)
	if err != nil || dst < 0 {
		return fbTable{}, false, err
	}
	sub, err := fbTableAt(t.buf, dst)
	return sub, err == nil, err
}

// vector follows field i to a vector of elements of elem bytes and returns
// the position of its first element and its length (0, 0 when absent). The
// whole vector lies inside the buffer.
func (t fbTable) vector(i, elem int) (start, n int, err error) {
	dst, err := t.target(i)
	if err != nil || dst < 0 {
		return 0, 0, err
	}
	ln, ok := fbU32(t.buf, dst)
	if !ok || int64(ln)*int64(elem) > int64(len(t.buf)-dst-4) {
		return 0, 0, errFB
	}
	return dst + 4, int(ln), nil
}

// tableAt returns element k of a vector of tables starting at start.
func (t fbTable) tableAt(start, k int) (fbTable, error) {
	p := start + 4*k
	off, ok := fbU32(t.buf, p)
	if !ok || off == 0 {
		return fbTable{}, errFB
	}
	return fbTableAt(t.buf, p+int(off))
}

// str follows field i to a string and returns its position and length
// (-1 when absent).
func (t fbTable) str(i int) (pos, n int, err error) {
	dst, err := t.target(i)
	if err != nil || dst < 0 {
		return -1, 0, err
	}
	ln, ok := fbU32(t.buf, dst)
	if !ok || int64(ln) > int64(len(t.buf)-dst-4) {
		return -1, 0, errFB
	}
	return dst + 4, int(ln), nil
}

// fbErr wraps a structural error with where it was found.
func fbErr(where string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", where, err)
}
