package parquet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/klauspost/compress/zstd"
)

// Chunk holds one column's values for one row group: Rows rows, Valid
// saying which are present (nil: all of them; only an optional column may
// have nulls) and the present values, densely packed, in the slice of the
// column's type. A BYTE_ARRAY column has either Bytes (written PLAIN) or
// Dict and Index, one dictionary index per present value (written as a
// dictionary page and RLE_DICTIONARY indices). The reader fills Bytes
// (dictionaries resolved) and, for a FLOAT column, Float.
type Chunk struct {
	Rows   int
	Valid  []bool
	Bool   []bool
	Int32  []int32
	Int64  []int64
	Float  []float32
	Double []float64
	Bytes  [][]byte
	Dict   [][]byte
	Index  []int32
}

// Writer writes a Parquet file row group by row group. It holds only the
// footer's metadata between calls; each column chunk goes to the
// underlying writer as soon as it is encoded.
type Writer struct {
	w         io.Writer
	pos       int64
	cols      []Column
	kv        []KeyValue
	groups    []writtenGroup
	rows      int64
	zstd      *zstd.Encoder
	raw, page []byte // scratch: a page before and after compression
	err       error
}

type writtenGroup struct {
	rows   int64
	chunks []writtenChunk
}

type writtenChunk struct {
	encodings            []int32
	values               int64
	uncompressed, stored int64
	dataOff, dictOff     int64 // dictOff 0: no dictionary page
}

// NewWriter starts a file on w with the given columns and key-value
// metadata (written in the footer, in this order).
func NewWriter(w io.Writer, cols []Column, kv []KeyValue) (*Writer, error) {
	for _, c := range cols {
		if c.Type < Boolean || c.Type > ByteArray || c.Type == Int96 {
			return nil, fmt.Errorf("column %q: physical type %s not supported", c.Name, c.Type)
		}
		if (c.String && c.Type != ByteArray) || (c.IntBits > 0 && c.Type != Int32 && c.Type != Int64) {
			return nil, fmt.Errorf("column %q: logical type does not fit %s", c.Name, c.Type)
		}
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	p := &Writer{w: w, cols: cols, kv: kv, zstd: enc}
	p.write([]byte("PAR1"))
	return p, p.err
}

func (p *Writer) write(b []byte) {
	if p.err != nil {
		return
	}
	n, err := p.w.Write(b)
	p.pos += int64(n)
	p.err = err
}

// WriteRowGroup writes one row group: one chunk per column, in the
// columns' order, all with the same number of rows.
func (p *Writer) WriteRowGroup(chunks []Chunk) error {
	if p.err != nil {
		return p.err
	}
	if len(chunks) != len(p.cols) {
		return fmt.Errorf("row group has %d columns, the file %d", len(chunks), len(p.cols))
	}
	g := writtenGroup{rows: int64(chunks[0].Rows), chunks: make([]writtenChunk, len(chunks))}
	for i := range chunks {
		c := &chunks[i]
		if int64(c.Rows) != g.rows {
			return fmt.Errorf("column %q: %d rows, column %q %d", p.cols[i].Name, c.Rows, p.cols[0].Name, g.rows)
		}
		if err := p.writeChunk(&p.cols[i], c, &g.chunks[i]); err != nil {
			return fmt.Errorf("column %q: %w", p.cols[i].Name, err)
		}
	}
	p.groups = append(p.groups, g)
	p.rows += g.rows
	return p.err
}

// writeChunk writes a column chunk: a dictionary page when the chunk has
// one, then one data page.
func (p *Writer) writeChunk(col *Column, c *Chunk, out *writtenChunk) error {
	present := c.Rows
	if c.Valid != nil {
		if !col.Optional {
			return errors.New("nulls in a required column")
		}
		if len(c.Valid) != c.Rows {
			return fmt.Errorf("%d validity flags for %d rows", len(c.Valid), c.Rows)
		}
		present = 0
		for _, v := range c.Valid {
			if v {
				present++
			}
		}
	}
	out.values = int64(c.Rows)
	dict := col.Type == ByteArray && c.Bytes == nil && (c.Dict != nil || c.Index != nil)
	if dict {
		out.dictOff = p.pos
		p.raw = appendPlainBytes(p.raw[:0], c.Dict)
		var h encoder
		h.beginStruct()
		h.i32(1, pageDict)
		p.pageSizes(&h)
		h.structField(7) // DictionaryPageHeader
		h.i32(1, int32(len(c.Dict)))
		h.i32(2, encPlain)
		h.endStruct()
		h.endStruct()
		p.flushPage(h.buf, out)
	}

	// The data page: definition levels (optional columns), then values.
	raw := p.raw[:0]
	if col.Optional {
		raw = append(raw, 0, 0, 0, 0) // the levels' byte length, filled below
		start := len(raw)
		raw = appendLevels(raw, c.Valid, c.Rows)
		binary.LittleEndian.PutUint32(raw[start-4:], uint32(len(raw)-start))
	}
	var n int
	encoding := int32(encPlain)
	switch col.Type {
	case Boolean:
		n = len(c.Bool)
		raw = appendBits(raw, c.Bool)
	case Int32:
		n = len(c.Int32)
		for _, v := range c.Int32 {
			raw = binary.LittleEndian.AppendUint32(raw, uint32(v))
		}
	case Int64:
		n = len(c.Int64)
		for _, v := range c.Int64 {
			raw = binary.LittleEndian.AppendUint64(raw, uint64(v))
		}
	case Float:
		n = len(c.Float)
		for _, v := range c.Float {
			raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
		}
	case Double:
		n = len(c.Double)
		for _, v := range c.Double {
			raw = binary.LittleEndian.AppendUint64(raw, math.Float64bits(v))
		}
	case ByteArray:
		if dict {
			n = len(c.Index)
			encoding = encRLEDict
			width := bitWidth(uint64(max(len(c.Dict)-1, 1)))
			for _, i := range c.Index {
				if i < 0 || int(i) >= len(c.Dict) {
					return fmt.Errorf("dictionary index %d out of %d entries", i, len(c.Dict))
				}
			}
			raw = append(raw, byte(width))
			raw = appendBitPacked(raw, c.Index, width)
		} else {
			n = len(c.Bytes)
			raw = appendPlainBytes(raw, c.Bytes)
		}
	}
	if n != present {
		return fmt.Errorf("%d values for %d present rows", n, present)
	}
	p.raw = raw
	out.dataOff = p.pos
	var h encoder
	h.beginStruct()
	h.i32(1, pageData)
	p.pageSizes(&h)
	h.structField(5) // DataPageHeader
	h.i32(1, int32(c.Rows))
	h.i32(2, encoding)
	h.i32(3, encRLE) // definition levels
	h.i32(4, encRLE) // repetition levels (none)
	h.endStruct()
	h.endStruct()
	p.flushPage(h.buf, out)
	out.encodings = []int32{encPlain, encRLE}
	if dict {
		out.encodings = append(out.encodings, encRLEDict)
	}
	return p.err
}

// pageSizes compresses p.raw into p.page and writes the PageHeader's two
// size fields.
func (p *Writer) pageSizes(h *encoder) {
	p.page = p.zstd.EncodeAll(p.raw, p.page[:0])
	h.i32(2, int32(len(p.raw)))
	h.i32(3, int32(len(p.page)))
}

// flushPage writes a page header and the compressed page.
func (p *Writer) flushPage(header []byte, out *writtenChunk) {
	p.write(header)
	p.write(p.page)
	out.uncompressed += int64(len(header) + len(p.raw))
	out.stored += int64(len(header) + len(p.page))
}

// Close writes the footer. The underlying writer is not closed.
func (p *Writer) Close() error {
	if p.err != nil {
		return p.err
	}
	var e encoder
	e.beginStruct()
	e.i32(1, 2) // format version 2: logical types
	e.listHeader(2, tStruct, len(p.cols)+1)
	e.schemaElement(nil, len(p.cols))
	for i := range p.cols {
		e.schemaElement(&p.cols[i], 0)
	}
	e.i64(3, p.rows)
	e.listHeader(4, tStruct, len(p.groups))
	for gi, g := range p.groups {
		e.beginStruct()
		e.listHeader(1, tStruct, len(g.chunks))
		var uncompressed, stored int64
		for ci, c := range g.chunks {
			uncompressed += c.uncompressed
			stored += c.stored
			start := c.dataOff
			if c.dictOff > 0 {
				start = c.dictOff
			}
			e.beginStruct() // ColumnChunk
			e.i64(2, start)
			e.structField(3) // ColumnMetaData
			e.i32(1, int32(p.cols[ci].Type))
			e.listHeader(2, tI32, len(c.encodings))
			for _, enc := range c.encodings {
				e.varint(int64(enc))
			}
			e.listHeader(3, tBinary, 1)
			e.uvarint(uint64(len(p.cols[ci].Name)))
			e.buf = append(e.buf, p.cols[ci].Name...)
			e.i32(4, codecZstd)
			e.i64(5, c.values)
			e.i64(6, c.uncompressed)
			e.i64(7, c.stored)
			e.i64(9, c.dataOff)
			if c.dictOff > 0 {
				e.i64(11, c.dictOff)
			}
			e.endStruct()
			e.endStruct()
		}
		e.i64(2, uncompressed)
		e.i64(3, g.rows)
		if len(g.chunks) > 0 {
			first := g.chunks[0].dataOff
			if g.chunks[0].dictOff > 0 {
				first = g.chunks[0].dictOff
			}
			e.i64(5, first)
		}
		e.i64(6, stored)
		e.field(7, tI16)
		e.varint(int64(gi))
		e.endStruct()
	}
	if len(p.kv) > 0 {
		e.listHeader(5, tStruct, len(p.kv))
		for _, kv := range p.kv {
			e.beginStruct()
			e.str(1, kv.Key)
			e.str(2, kv.Value)
			e.endStruct()
		}
	}
	e.str(6, "simtrain")
	e.listHeader(7, tStruct, len(p.cols)) // column orders: TYPE_ORDER for all
	for range p.cols {
		e.beginStruct()
		e.structField(1)
		e.endStruct()
		e.endStruct()
	}
	e.endStruct()
	p.write(e.buf)
	p.write(binary.LittleEndian.AppendUint32(nil, uint32(len(e.buf))))
	p.write([]byte("PAR1"))
	return p.err
}

// appendPlainBytes appends BYTE_ARRAY values PLAIN: a 4-byte little-endian
// length before each.
func appendPlainBytes(b []byte, vals [][]byte) []byte {
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(v)))
		b = append(b, v...)
	}
	return b
}

// appendBits appends booleans bit-packed, least significant bit first
// (PLAIN for BOOLEAN).
func appendBits(b []byte, vals []bool) []byte {
	for i := 0; i < len(vals); i += 8 {
		var c byte
		for j := 0; j < 8 && i+j < len(vals); j++ {
			if vals[i+j] {
				c |= 1 << j
			}
		}
		b = append(b, c)
	}
	return b
}

// appendLevels appends the definition levels of n rows (1 present, 0
// null; bit width 1) in the RLE/bit-packed hybrid: one RLE run when every
// row is present, bit-packed runs otherwise.
func appendLevels(b []byte, valid []bool, n int) []byte {
	if valid == nil {
		if n == 0 {
			return b
		}
		b = binary.AppendUvarint(b, uint64(n)<<1)
		return append(b, 1)
	}
	for lo := 0; lo < n; lo += maxLiteralRun {
		hi := min(lo+maxLiteralRun, n)
		b = binary.AppendUvarint(b, uint64((hi-lo+7)/8)<<1|1)
		b = appendBits(b, valid[lo:hi])
	}
	return b
}

// maxLiteralRun is the most values one bit-packed run holds here: 64
// groups of 8, so that its header is one byte, as parquet-cpp writes.
const maxLiteralRun = 512

// appendBitPacked appends non-negative values of the given bit width as
// bit-packed runs of the RLE/bit-packed hybrid (the last run padded with
// zeros to a multiple of 8 values).
func appendBitPacked(b []byte, vals []int32, width int) []byte {
	for lo := 0; lo < len(vals); lo += maxLiteralRun {
		hi := min(lo+maxLiteralRun, len(vals))
		groups := (hi - lo + 7) / 8
		b = binary.AppendUvarint(b, uint64(groups)<<1|1)
		var acc uint64
		var bits int
		for i := lo; i < lo+groups*8; i++ {
			var v uint64
			if i < hi {
				v = uint64(vals[i])
			}
			acc |= v << bits
			bits += width
			for bits >= 8 {
				b = append(b, byte(acc))
				acc >>= 8
				bits -= 8
			}
		}
	}
	return b
}

// bitWidth is the number of bits needed for v.
func bitWidth(v uint64) int {
	w := 0
	for v > 0 {
		w++
		v >>= 1
	}
	return w
}
