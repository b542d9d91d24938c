package parquet

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// File is an open Parquet file: its schema, row groups and key-value
// metadata, read from the footer. Column data is read on demand.
type File struct {
	Columns  []Column
	KeyValue []KeyValue
	NumRows  int64
	groups   []rowGroup
	r        io.ReaderAt
	size     int64
}

// ErrFormat wraps every error about a file's bytes (as opposed to an I/O
// error): a damaged or truncated file, or one that is not Parquet.
var ErrFormat = errors.New("damaged or unsupported Parquet file")

func formatErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrFormat, fmt.Sprintf(format, a...))
}

// Open reads the footer of the size-byte Parquet file r.
func Open(r io.ReaderAt, size int64) (*File, error) {
	if size < 12 {
		return nil, formatErr("%d bytes is too short", size)
	}
	var tail [8]byte
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return nil, err
	}
	if string(tail[4:]) != "PAR1" {
		return nil, formatErr("no PAR1 magic at the end")
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if n <= 0 || n > size-12 {
		return nil, formatErr("footer length %d does not fit in a file of %d bytes", n, size)
	}
	footer := make([]byte, n)
	if _, err := r.ReadAt(footer, size-8-n); err != nil {
		return nil, err
	}
	f := &File{r: r, size: size}
	if err := f.readFooter(footer); err != nil {
		return nil, err
	}
	return f, nil
}

// NumRowGroups is the number of row groups.
func (f *File) NumRowGroups() int { return len(f.groups) }

// RowGroupRows is the number of rows of row group g.
func (f *File) RowGroupRows(g int) int64 { return f.groups[g].rows }

func (f *File) readFooter(b []byte) error {
	d := &decoder{b: b}
	var schema []schemaElement
	d.readStruct(func(id int16, typ byte) bool {
		switch {
		case id == 2 && typ == tList:
			_, n := d.listHeader()
			for i := 0; i < n && d.err == nil; i++ {
				schema = append(schema, d.readSchemaElement())
			}
		case id == 3 && typ == tI64:
			f.NumRows = d.varint()
		case id == 4 && typ == tList:
			_, n := d.listHeader()
			for i := 0; i < n && d.err == nil; i++ {
				f.groups = append(f.groups, d.readRowGroup())
			}
		case id == 5 && typ == tList:
			_, n := d.listHeader()
			for i := 0; i < n && d.err == nil; i++ {
				var kv KeyValue
				d.readStruct(func(id int16, typ byte) bool {
					switch {
					case id == 1 && typ == tBinary:
						kv.Key = string(d.binary())
					case id == 2 && typ == tBinary:
						kv.Value = string(d.binary())
					default:
						return false
					}
					return true
				})
				f.KeyValue = append(f.KeyValue, kv)
			}
		default:
			return false
		}
		return true
	})
	if d.err != nil {
		return fmt.Errorf("%w: footer: %w", ErrFormat, d.err)
	}
	if len(schema) == 0 {
		return formatErr("footer has no schema")
	}
	// Flatten the schema tree (depth first, root first) into its leaves.
	next := 1
	var walk func(path []string, children int32, def, rep, depth int) error
	walk = func(path []string, children int32, def, rep, depth int) error {
		if depth > 32 {
			return formatErr("schema nested too deeply")
		}
		for c := int32(0); c < children; c++ {
			if next >= len(schema) {
				return formatErr("schema lists fewer elements than its groups hold")
			}
			s := schema[next]
			next++
			d, r := def, rep
			switch s.repetition {
			case 1:
				d++
			case 2:
				d, r = d+1, r+1
			}
			p := append(path[:len(path):len(path)], s.name)
			if s.numChildren > 0 || !s.hasType {
				if err := walk(p, s.numChildren, d, r, depth+1); err != nil {
					return err
				}
				continue
			}
			if s.typ < Boolean || s.typ > FixedLen {
				return formatErr("column %q has unknown physical type %d", s.name, s.typ)
			}
			f.Columns = append(f.Columns, leafColumn(s, p, d, r))
		}
		return nil
	}
	if err := walk(nil, schema[0].numChildren, 0, 0, 0); err != nil {
		return err
	}
	if next != len(schema) {
		return formatErr("schema has %d elements, its groups hold %d", len(schema), next)
	}
	for gi, g := range f.groups {
		if len(g.chunks) != len(f.Columns) {
			return formatErr("row group %d has %d column chunks for %d columns", gi, len(g.chunks), len(f.Columns))
		}
		if g.rows < 0 {
			return formatErr("row group %d has %d rows", gi, g.rows)
		}
	}
	return nil
}

func (d *decoder) readRowGroup() rowGroup {
	var g rowGroup
	d.readStruct(func(id int16, typ byte) bool {
		switch {
		case id == 1 && typ == tList:
			_, n := d.listHeader()
			for i := 0; i < n && d.err == nil; i++ {
				var c chunkMeta
				c.typ = -1
				d.readStruct(func(id int16, typ byte) bool {
					if id != 3 || typ != tStruct {
						return false
					}
					d.readStruct(func(id int16, typ byte) bool {
						switch {
						case id == 1 && typ == tI32:
							c.typ = Type(d.i32())
						case id == 4 && typ == tI32:
							c.codec = d.i32()
						case id == 5 && typ == tI64:
							c.numValues = d.varint()
						case id == 7 && typ == tI64:
							c.compressed = d.varint()
						case id == 9 && typ == tI64:
							c.dataOff = d.varint()
						case id == 11 && typ == tI64:
							c.dictOff = d.varint()
						default:
							return false
						}
						return true
					})
					return true
				})
				g.chunks = append(g.chunks, c)
			}
		case id == 3 && typ == tI64:
			g.rows = d.varint()
		default:
			return false
		}
		return true
	})
	return g
}

// ReadColumn reads column col of row group g: every row's validity (nil
// when the column is required) and the present values.
func (f *File) ReadColumn(g, col int) (Chunk, error) {
	if g < 0 || g >= len(f.groups) || col < 0 || col >= len(f.Columns) {
		return Chunk{}, fmt.Errorf("no column %d in row group %d", col, g)
	}
	c := &f.Columns[col]
	if c.MaxRep > 0 || c.MaxDef > 1 {
		return Chunk{}, fmt.Errorf("column %q is nested (%s), only flat columns are read", c.Name, c.TypeName())
	}
	m := f.groups[g].chunks[col]
	rows := f.groups[g].rows
	if m.typ != c.Type {
		return Chunk{}, formatErr("column %q: chunk type %s, schema type %s", c.Name, m.typ, c.Type)
	}
	if rows > maxRowGroupRows {
		return Chunk{}, formatErr("row group of %d rows", rows)
	}
	if m.numValues != rows {
		return Chunk{}, formatErr("column %q: %d values in a row group of %d rows", c.Name, m.numValues, rows)
	}
	start := m.dataOff
	if m.dictOff > 0 && m.dictOff < start {
		start = m.dictOff
	}
	if start < 4 || m.compressed <= 0 || m.compressed > f.size-start-8 {
		return Chunk{}, formatErr("column %q: chunk of %d bytes at %d outside the file", c.Name, m.compressed, start)
	}
	buf := make([]byte, m.compressed)
	if _, err := f.r.ReadAt(buf, start); err != nil {
		return Chunk{}, err
	}
	cr := chunkReader{col: c, codec: m.codec, buf: buf, rows: int(rows)}
	out, err := cr.read()
	if err != nil {
		return Chunk{}, fmt.Errorf("column %q: %w", c.Name, err)
	}
	return out, nil
}

// chunkReader decodes the pages of one column chunk.
type chunkReader struct {
	col   *Column
	codec int32
	buf   []byte
	rows  int
	dict  Chunk // the dictionary page's values
	hasD  bool
	out   Chunk
	index []int32 // scratch: dictionary indices of a page
}

func (r *chunkReader) read() (Chunk, error) {
	r.out.Rows = r.rows
	if r.col.MaxDef > 0 {
		r.out.Valid = make([]bool, 0, min(r.rows, 1<<20))
	}
	done, pos := 0, 0
	for done < r.rows {
		d := &decoder{b: r.buf[pos:]}
		h := d.readPageHeader()
		if d.err != nil {
			return Chunk{}, fmt.Errorf("%w: page header: %w", ErrFormat, d.err)
		}
		pos += d.pos
		if h.compressedSize < 0 || h.compressedSize > len(r.buf)-pos || h.uncompressedSize < 0 {
			return Chunk{}, formatErr("page of %d bytes runs past its column chunk", h.compressedSize)
		}
		page := r.buf[pos : pos+h.compressedSize]
		pos += h.compressedSize
		switch h.typ {
		case pageDict:
			if r.hasD {
				return Chunk{}, formatErr("two dictionary pages")
			}
			data, err := r.decompress(page, h.uncompressedSize)
			if err != nil {
				return Chunk{}, err
			}
			if h.encoding != encPlain && h.encoding != encPlainDict {
				return Chunk{}, formatErr("dictionary page encoding %s", encodingName(h.encoding))
			}
			if r.dict, err = decodePlain(r.col.Type, data, h.numValues, Chunk{}); err != nil {
				return Chunk{}, err
			}
			r.hasD = true
		case pageData, pageDataV2:
			if h.numValues < 0 || h.numValues > r.rows-done {
				return Chunk{}, formatErr("page of %d values after %d of %d rows", h.numValues, done, r.rows)
			}
			if err := r.dataPage(&h, page); err != nil {
				return Chunk{}, err
			}
			done += h.numValues
			if h.numValues == 0 && h.typ == pageData {
				return Chunk{}, formatErr("empty data page")
			}
		case pageIndex:
		default:
			return Chunk{}, formatErr("page type %d", h.typ)
		}
		if pos >= len(r.buf) && done < r.rows {
			return Chunk{}, formatErr("column chunk ends after %d of %d rows", done, r.rows)
		}
	}
	return r.out, nil
}

// pageHeader is what the reader keeps of a PageHeader and its data page,
// data page v2 or dictionary page header.
type pageHeader struct {
	typ                              int32
	uncompressedSize, compressedSize int
	numValues                        int
	encoding                         int32
	defLen, repLen                   int // v2: byte lengths of the levels
	compressed                       bool
}

func (d *decoder) readPageHeader() pageHeader {
	h := pageHeader{typ: -1, compressed: true}
	d.readStruct(func(id int16, typ byte) bool {
		switch {
		case id == 1 && typ == tI32:
			h.typ = d.i32()
		case id == 2 && typ == tI32:
			h.uncompressedSize = int(d.i32())
		case id == 3 && typ == tI32:
			h.compressedSize = int(d.i32())
		case (id == 5 || id == 7 || id == 8) && typ == tStruct:
			d.readStruct(func(f int16, typ byte) bool {
				switch {
				case f == 1 && typ == tI32:
					h.numValues = int(d.i32())
				case f == 2 && typ == tI32 && id != 8, f == 4 && typ == tI32 && id == 8:
					h.encoding = d.i32()
				case f == 5 && typ == tI32 && id == 8:
					h.defLen = int(d.i32())
				case f == 6 && typ == tI32 && id == 8:
					h.repLen = int(d.i32())
				case f == 7 && (typ == tBoolTrue || typ == tBoolFalse) && id == 8:
					h.compressed = boolValue(typ)
				default:
					return false
				}
				return true
			})
		default:
			return false
		}
		return true
	})
	return h
}

// maxRowGroupRows bounds the rows of a row group read: a few bytes of
// run-length encoding can declare billions of rows, and a damaged footer
// must not size allocations beyond this (pyarrow writes 1 Mi rows per
// group, DuckDB 122,880, polars 512²; simtrain 65,536).
const maxRowGroupRows = 1 << 26

// maxPage bounds a page's uncompressed size (a damaged header must not
// size an allocation); parquet-cpp's default page is 1 MiB.
const maxPage = 1 << 30

// decompress returns the uncompressed bytes of a page, which must be size
// bytes long.
func (r *chunkReader) decompress(b []byte, size int) ([]byte, error) {
	return decompress(r.codec, b, size)
}

func decompress(codec int32, b []byte, size int) ([]byte, error) {
	if size > maxPage {
		return nil, formatErr("page of %d bytes uncompressed", size)
	}
	var out []byte
	var err error
	switch codec {
	case codecNone:
		out = b
	case codecSnappy:
		n, derr := snappy.DecodedLen(b)
		if derr != nil || n != size {
			return nil, formatErr("Snappy page: %v (length %d, want %d)", derr, n, size)
		}
		out, err = snappy.Decode(make([]byte, size), b)
	case codecGzip:
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(bytes.NewReader(b)); err == nil {
			out = make([]byte, size)
			_, err = io.ReadFull(zr, out)
		}
	case codecZstd:
		// A damaged frame header could declare a window or content size
		// that the decoder would allocate before failing: check it first
		// (zstd's own levels use windows of at most 8 MiB, long mode 128 MiB).
		var fh zstd.Header
		if err = fh.Decode(b); err == nil && (fh.HasFCS && fh.FrameContentSize != uint64(size) || fh.WindowSize > 1<<27) {
			err = fmt.Errorf("frame of %d bytes (window %d), the page header says %d", fh.FrameContentSize, fh.WindowSize, size)
		}
		var zd *zstd.Decoder
		if err == nil {
			zd, err = zstdDecoder()
		}
		if err == nil {
			out, err = zd.DecodeAll(b, make([]byte, 0, size))
		}
	case codecLZ4Raw:
		out = make([]byte, size)
		var n int
		n, err = lz4.UncompressBlock(b, out)
		out = out[:max(n, 0)]
	default:
		return nil, fmt.Errorf("%w: codec %s not supported (simtrain reads UNCOMPRESSED, SNAPPY, GZIP, ZSTD and LZ4_RAW)", ErrFormat, codecName(codec))
	}
	if err != nil {
		return nil, formatErr("%s page: %v", codecName(codec), err)
	}
	if len(out) != size {
		return nil, formatErr("%s page holds %d bytes, its header says %d", codecName(codec), len(out), size)
	}
	return out, nil
}

// zstdDecoder is the package's one zstd decoder (DecodeAll is safe for
// concurrent use), made on first use.
var zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxPage))
})

// dataPage decodes one data page (v1 or v2) into r.out.
func (r *chunkReader) dataPage(h *pageHeader, page []byte) error {
	n := h.numValues
	var levels, values []byte
	if h.typ == pageData {
		data, err := r.decompress(page, h.uncompressedSize)
		if err != nil {
			return err
		}
		if r.col.MaxDef > 0 {
			if len(data) < 4 {
				return formatErr("definition levels cut off")
			}
			l := int(binary.LittleEndian.Uint32(data))
			if l < 0 || l > len(data)-4 {
				return formatErr("definition levels of %d bytes in a page of %d", l, len(data))
			}
			levels, values = data[4:4+l], data[4+l:]
		} else {
			values = data
		}
	} else {
		if h.repLen < 0 || h.defLen < 0 || h.repLen+h.defLen > len(page) {
			return formatErr("levels of %d+%d bytes in a page of %d", h.repLen, h.defLen, len(page))
		}
		if h.repLen > 0 {
			return formatErr("repetition levels in a flat column")
		}
		levels, values = page[:h.defLen], page[h.defLen:]
		if h.compressed && r.codec != codecNone {
			var err error
			if values, err = decompress(r.codec, values, h.uncompressedSize-h.repLen-h.defLen); err != nil {
				return err
			}
		}
	}
	present := n
	if r.col.MaxDef > 0 {
		def := make([]int32, n)
		if err := decodeHybrid(levels, 1, def); err != nil {
			return fmt.Errorf("definition levels: %w", err)
		}
		present = 0
		for _, v := range def {
			r.out.Valid = append(r.out.Valid, v == 1)
			present += int(v & 1)
		}
	}
	switch h.encoding {
	case encPlain:
		var err error
		r.out, err = decodePlain(r.col.Type, values, present, r.out)
		return err
	case encPlainDict, encRLEDict:
		if !r.hasD {
			return formatErr("dictionary-encoded page without a dictionary page")
		}
		if len(values) < 1 || values[0] > 32 {
			return formatErr("dictionary indices without a valid bit width")
		}
		if cap(r.index) < present {
			r.index = make([]int32, present)
		}
		idx := r.index[:present]
		if err := decodeHybrid(values[1:], int(values[0]), idx); err != nil {
			return fmt.Errorf("dictionary indices: %w", err)
		}
		return r.lookup(idx)
	case encRLE:
		if r.col.Type != Boolean || len(values) < 4 {
			return formatErr("RLE values in a %s column", r.col.Type)
		}
		bits := make([]int32, present)
		if err := decodeHybrid(values[4:], 1, bits); err != nil {
			return err
		}
		for _, b := range bits {
			r.out.Bool = append(r.out.Bool, b == 1)
		}
		return nil
	case encDeltaBinary:
		if r.col.Type != Int32 && r.col.Type != Int64 {
			return formatErr("DELTA_BINARY_PACKED in a %s column", r.col.Type)
		}
		vals, _, err := decodeDelta(values, present, make([]int64, 0, present))
		if err != nil {
			return err
		}
		for _, v := range vals {
			if r.col.Type == Int32 {
				r.out.Int32 = append(r.out.Int32, int32(v))
			} else {
				r.out.Int64 = append(r.out.Int64, v)
			}
		}
		return nil
	case encDeltaLength, encDeltaByteArray:
		if r.col.Type != ByteArray {
			return formatErr("%s in a %s column", encodingName(h.encoding), r.col.Type)
		}
		var err error
		if h.encoding == encDeltaLength {
			r.out.Bytes, _, err = decodeDeltaLength(values, present, r.out.Bytes)
		} else {
			r.out.Bytes, err = decodeDeltaByteArray(values, present, r.out.Bytes)
		}
		return err
	case encByteStream:
		var err error
		r.out, err = decodeByteStreamSplit(r.col.Type, values, present, r.out)
		return err
	}
	return fmt.Errorf("%w: encoding %s not supported", ErrFormat, encodingName(h.encoding))
}

// lookup appends the dictionary values at idx.
func (r *chunkReader) lookup(idx []int32) error {
	d := &r.dict
	var size int
	switch r.col.Type {
	case Boolean:
		size = len(d.Bool)
	case Int32:
		size = len(d.Int32)
	case Int64:
		size = len(d.Int64)
	case Float:
		size = len(d.Float)
	case Double:
		size = len(d.Double)
	case ByteArray:
		size = len(d.Bytes)
	}
	for _, i := range idx {
		if i < 0 || int(i) >= size {
			return formatErr("dictionary index %d out of %d entries", i, size)
		}
		switch r.col.Type {
		case Boolean:
			r.out.Bool = append(r.out.Bool, d.Bool[i])
		case Int32:
			r.out.Int32 = append(r.out.Int32, d.Int32[i])
		case Int64:
			r.out.Int64 = append(r.out.Int64, d.Int64[i])
		case Float:
			r.out.Float = append(r.out.Float, d.Float[i])
		case Double:
			r.out.Double = append(r.out.Double, d.Double[i])
		case ByteArray:
			r.out.Bytes = append(r.out.Bytes, d.Bytes[i])
		}
	}
	return nil
}

// decodePlain appends n PLAIN values of type t from b to out.
func decodePlain(t Type, b []byte, n int, out Chunk) (Chunk, error) {
	width := map[Type]int{Int32: 4, Int64: 8, Float: 4, Double: 8}[t]
	switch {
	case n < 0:
		return out, formatErr("%d values", n)
	case t == Boolean:
		if (n+7)/8 > len(b) {
			return out, formatErr("%d booleans in %d bytes", n, len(b))
		}
		for i := 0; i < n; i++ {
			out.Bool = append(out.Bool, b[i/8]>>(i%8)&1 == 1)
		}
		return out, nil
	case width > 0:
		if n > len(b)/width {
			return out, formatErr("%d %s values in %d bytes", n, t, len(b))
		}
	case t != ByteArray:
		return out, fmt.Errorf("%w: physical type %s not supported", ErrFormat, t)
	}
	for i := 0; i < n; i++ {
		switch t {
		case Int32:
			out.Int32 = append(out.Int32, int32(binary.LittleEndian.Uint32(b[4*i:])))
		case Int64:
			out.Int64 = append(out.Int64, int64(binary.LittleEndian.Uint64(b[8*i:])))
		case Float:
			out.Float = append(out.Float, math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		case Double:
			out.Double = append(out.Double, math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:])))
		case ByteArray:
			if len(b) < 4 {
				return out, formatErr("byte array %d of %d cut off", i, n)
			}
			l := binary.LittleEndian.Uint32(b)
			if uint64(l) > uint64(len(b)-4) {
				return out, formatErr("byte array of %d bytes runs past its page", l)
			}
			out.Bytes = append(out.Bytes, b[4:4+l:4+l])
			b = b[4+l:]
		}
	}
	return out, nil
}

// decodeHybrid fills out with values of the given bit width from the
// RLE/bit-packed hybrid encoding b (without a length prefix). A last
// bit-packed run may stop short of its declared groups, as some writers
// leave it.
func decodeHybrid(b []byte, width int, out []int32) error {
	if width < 0 || width > 32 {
		return formatErr("bit width %d", width)
	}
	i, pos := 0, 0
	for i < len(out) {
		h, n := binary.Uvarint(b[pos:])
		if n <= 0 {
			return formatErr("levels or indices end after %d of %d values", i, len(out))
		}
		pos += n
		if h&1 == 0 {
			count := h >> 1
			vb := (width + 7) / 8
			if count == 0 || vb > len(b)-pos {
				return formatErr("bad RLE run")
			}
			var v uint32
			for k := 0; k < vb; k++ {
				v |= uint32(b[pos+k]) << (8 * k)
			}
			pos += vb
			for k := uint64(0); k < count && i < len(out); k++ {
				out[i] = int32(v)
				i++
			}
			continue
		}
		groups := h >> 1
		if groups == 0 {
			return formatErr("empty bit-packed run")
		}
		nbytes := len(b) - pos
		if groups <= uint64(nbytes) && int(groups)*width < nbytes {
			nbytes = int(groups) * width
		}
		run := b[pos : pos+nbytes]
		pos += nbytes
		if width == 0 {
			for k := uint64(0); k < groups*8 && i < len(out); k++ {
				out[i] = 0
				i++
			}
			continue
		}
		vals := nbytes * 8 / width
		if vals == 0 {
			return formatErr("bit-packed run cut off")
		}
		for k := 0; k < vals && i < len(out); k++ {
			bit := k * width
			var v uint64
			for j := 0; j < (bit%8+width+7)/8; j++ {
				v |= uint64(run[bit/8+j]) << (8 * j)
			}
			out[i] = int32(uint32(v >> (bit % 8) & (1<<width - 1)))
			i++
		}
	}
	return nil
}
