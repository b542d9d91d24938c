package output

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// checkIPCFile walks the structure of an Arrow IPC file before arrow-go
// sees it (see fbverify.go for why): the magic at both ends, the footer,
// the schema (only the column types simtrain reads), every record batch
// and dictionary block, and every message in them — every length against
// the file size and the message body, every count against the schema. It
// reads the footer and each message's header, never a body. It returns the
// positions of the checksum's two copies for checksum.go.
func checkIPCFile(r io.ReaderAt, size int64) (ipcLayout, error) {
	lay := ipcLayout{size: size, sumPos: [2]int64{-1, -1}}
	const magic = "ARROW1"
	if size < 8+10 {
		return lay, fmt.Errorf("not an Arrow IPC file: %d bytes is too short for one", size)
	}
	head, err := readAt(r, 0, 8)
	if err != nil {
		return lay, err
	}
	tail, err := readAt(r, size-10, 10)
	if err != nil {
		return lay, err
	}
	if string(head[:6]) != magic || string(tail[4:]) != magic {
		return lay, errors.New("not an Arrow IPC file (no ARROW1 magic at both ends)")
	}
	footerLen := int64(int32(binary.LittleEndian.Uint32(tail)))
	if footerLen <= 0 || footerLen > size-18 {
		return lay, fmt.Errorf("footer length %d does not fit in a file of %d bytes", footerLen, size)
	}
	lay.footerStart = size - 10 - footerLen
	footer, err := readAt(r, lay.footerStart, footerLen)
	if err != nil {
		return lay, err
	}
	root, err := fbRoot(footer)
	if err != nil {
		return lay, fbErr("footer", err)
	}
	schema, ok, err := root.table(1)
	if err != nil || !ok {
		return lay, fbErr("footer schema", orMissing(err))
	}
	cols, err := checkSchemaIn(r, 0, schema)
	if err != nil {
		return lay, err
	}
	fpos, fsum, err := checksumValue(schema)
	if err != nil {
		return lay, fbErr("footer schema metadata", err)
	}
	lay.checksum = fsum
	if fpos >= 0 {
		lay.sumPos[1] = lay.footerStart + int64(fpos)
	}
	hpos, hsum, err := headerChecksum(r, lay.footerStart)
	if err != nil {
		return lay, err
	}
	if (hpos >= 0) != (lay.sumPos[1] >= 0) || hsum != lay.checksum {
		return lay, errors.New("the schema's two copies (header and footer) disagree on the checksum")
	}
	lay.sumPos[0] = hpos
	for _, kind := range []struct {
		field int
		dict  bool
	}{{2, true}, {3, false}} {
		start, n, err := root.vector(kind.field, 24)
		if err != nil {
			return lay, fbErr("footer blocks", err)
		}
		for k := 0; k < n; k++ {
			b := footer[start+24*k:]
			blk := ipcBlock{offset: int64(binary.LittleEndian.Uint64(b)), meta: int64(int32(binary.LittleEndian.Uint32(b[8:]))),
				body: int64(binary.LittleEndian.Uint64(b[16:]))}
			if err := checkBlock(r, blk, lay.footerStart, cols, kind.dict); err != nil {
				return lay, fmt.Errorf("block %d: %w", k, err)
			}
		}
	}
	return lay, nil
}

// ipcLayout is what checkIPCFile found.
type ipcLayout struct {
	size, footerStart int64
	checksum          string   // the stored checksum, "" when the file has none
	sumPos            [2]int64 // its positions in the header and footer schema; -1 when absent
}

type ipcBlock struct{ offset, meta, body int64 }

// column is what a record batch must hold for one schema field.
type column struct {
	// name is the field's name in the schema's buffer (not copied: a
	// rewrite's check read ≈ 130 names twice); dict: the column stands
	// for the values of the dictionary of the field named name.
	name     []byte
	dict     bool
	buffers  int   // buffers in a record batch
	dictBufs int   // buffers of its dictionary's values; 0 without dictionary
	dictID   int64 // its dictionary's id
}

// label is the column's name for messages.
func (c *column) label() string {
	if c.dict {
		return string(c.name) + " dictionary"
	}
	return string(c.name)
}

// columnStore is an io.ReaderAt that keeps the columns checkIPCFile reads
// from the two schemas of the files it is given, from file to file
// (frameReader: a framed rewrite's check made ≈ 130 columns twice).
type columnStore interface {
	columns() *[2][]column
}

// checkSchemaIn is checkSchema into the column list r keeps in slot (0:
// the footer's schema, 1: the schema message) when r is a columnStore,
// left there for r's next check; into a new list otherwise.
func checkSchemaIn(r any, slot int, schema fbTable) ([]column, error) {
	store, ok := r.(columnStore)
	if !ok {
		return checkSchema(schema, nil)
	}
	cols, err := checkSchema(schema, store.columns()[slot][:0])
	store.columns()[slot] = cols
	return cols, err
}

// maxColumns bounds a schema's fields (simtrain's widest table has about 80).
const maxColumns = 4096

// Arrow Type union tags (Schema.fbs) that simtrain reads, with the
// buffers an array of each holds (validity, data[, offsets first]).
var typeBuffers = map[int64]int{2: 2 /* Int */, 3: 2 /* FloatingPoint */, 5: 3 /* Utf8 */, 6: 2 /* Bool */, 20: 3 /* LargeUtf8 */}

// checkSchema verifies a Schema table: flat fields of the types simtrain
// reads, dictionaries with integer indices. It returns its columns in
// cols' array when it has room (cols' contents are not read).
func checkSchema(schema fbTable, cols []column) ([]column, error) {
	start, n, err := schema.vector(1, 4)
	if err != nil {
		return nil, fbErr("schema fields", err)
	}
	if n > maxColumns {
		return nil, fmt.Errorf("%d columns, more than %d", n, maxColumns)
	}
	if _, _, err := schema.vector(2, 4); err != nil {
		return nil, fbErr("schema metadata", err)
	}
	cols = slices.Grow(cols[:0], n)[:n]
	clear(cols)
	for i := range cols {
		f, err := schema.tableAt(start, i)
		if err != nil {
			return nil, fbErr(fmt.Sprintf("field %d", i), err)
		}
		pos, ln, err := f.str(0)
		if err != nil {
			return nil, fbErr(fmt.Sprintf("field %d name", i), err)
		}
		if pos >= 0 {
			cols[i].name = f.buf[pos : pos+ln]
		}
		tag, err := f.scalar(2, 1, 0)
		if err != nil {
			return nil, fbErr(string(cols[i].name), err)
		}
		bufs, ok := typeBuffers[int64(uint8(tag))]
		if !ok {
			return nil, fmt.Errorf("column %q has an Arrow type simtrain does not read (type tag %d)", cols[i].name, uint8(tag))
		}
		if _, _, err := f.table(3); err != nil {
			return nil, fbErr(string(cols[i].name)+" type", err)
		}
		if _, nc, err := f.vector(5, 4); err != nil || nc != 0 {
			return nil, fbErr(string(cols[i].name), orMessage(err, "nested columns are not read"))
		}
		if _, _, err := f.vector(6, 4); err != nil {
			return nil, fbErr(string(cols[i].name)+" metadata", err)
		}
		cols[i].buffers = bufs
		dict, ok, err := f.table(4)
		if err != nil {
			return nil, fbErr(string(cols[i].name)+" dictionary", err)
		}
		if ok {
			if cols[i].dictID, err = dict.scalar(0, 8, 0); err != nil {
				return nil, fbErr(string(cols[i].name)+" dictionary", err)
			}
			idx, ok, err := dict.table(1)
			if err != nil {
				return nil, fbErr(string(cols[i].name)+" dictionary", err)
			}
			if ok {
				bits, err := idx.scalar(0, 4, 0)
				if err != nil || (bits != 8 && bits != 16 && bits != 32 && bits != 64) {
					return nil, fbErr(string(cols[i].name)+" dictionary", orMessage(err, "index width is not 8, 16, 32 or 64 bits"))
				}
			}
			cols[i].dictBufs, cols[i].buffers = bufs, 2
		}
	}
	return cols, nil
}

// checkBlock verifies one footer block and the message it points to.
func checkBlock(r io.ReaderAt, b ipcBlock, end int64, cols []column, dict bool) error {
	if b.offset < 8 || b.meta < 8 || b.body < 0 || b.body%8 != 0 || b.meta > end || b.body > end ||
		b.offset > end-b.meta-b.body {
		return fmt.Errorf("offset %d, metadata %d and body %d bytes do not fit before the footer at %d", b.offset, b.meta, b.body, end)
	}
	meta, err := readAt(r, b.offset, b.meta)
	if err != nil {
		return err
	}
	msg, err := messageTable(meta)
	if err != nil {
		return err
	}
	htype, err := msg.scalar(1, 1, 0)
	if err != nil {
		return fbErr("message", err)
	}
	body, err := msg.scalar(3, 8, 0)
	if err != nil || body != b.body {
		return fbErr("message", orMessage(err, fmt.Sprintf("body length %d, the footer says %d", body, b.body)))
	}
	hdr, ok, err := msg.table(2)
	if err != nil || !ok {
		return fbErr("message header", orMissing(err))
	}
	want := int64(3) // RecordBatch
	if dict {
		want = 2 // DictionaryBatch
	}
	if htype != want {
		return fmt.Errorf("message of type %d where type %d belongs", htype, want)
	}
	if !dict {
		return checkRecordBatch(hdr, b.body, cols)
	}
	data, ok, err := hdr.table(1)
	if err != nil || !ok {
		return fbErr("dictionary batch", orMissing(err))
	}
	id, err := hdr.scalar(0, 8, 0)
	if err != nil {
		return fbErr("dictionary batch", err)
	}
	for _, c := range cols {
		if c.dictBufs > 0 && c.dictID == id {
			one := [1]column{{name: c.name, dict: true, buffers: c.dictBufs}}
			return checkRecordBatch(data, b.body, one[:])
		}
	}
	return fmt.Errorf("dictionary batch for id %d, which no column uses", id)
}

// checkRecordBatch verifies a RecordBatch table against the body length
// and the columns it must hold.
func checkRecordBatch(rb fbTable, body int64, cols []column) error {
	length, err := rb.scalar(0, 8, 0)
	if err != nil {
		return fbErr("record batch", err)
	}
	if length < 0 || length > 8*body+8 {
		return fmt.Errorf("record batch of %d rows in a body of %d bytes", length, body)
	}
	if _, ok, err := rb.table(3); err != nil || ok {
		return fbErr("record batch", orMessage(err, "compressed buffers are not read (simtrain writes uncompressed files)"))
	}
	if _, n, err := rb.vector(4, 8); err != nil || n != 0 {
		return fbErr("record batch", orMessage(err, "variadic buffers are not read"))
	}
	nstart, nn, err := rb.vector(1, 16)
	if err != nil {
		return fbErr("record batch nodes", err)
	}
	bstart, nb, err := rb.vector(2, 16)
	if err != nil {
		return fbErr("record batch buffers", err)
	}
	wantBufs := 0
	for _, c := range cols {
		wantBufs += c.buffers
	}
	if nn != len(cols) || nb != wantBufs {
		return fmt.Errorf("record batch has %d columns and %d buffers, the schema needs %d and %d", nn, nb, len(cols), wantBufs)
	}
	buf := rb.buf
	for k := 0; k < nn; k++ {
		p := nstart + 16*k
		n := int64(binary.LittleEndian.Uint64(buf[p:]))
		nulls := int64(binary.LittleEndian.Uint64(buf[p+8:]))
		if n < 0 || n > 8*body+8 || nulls < 0 || nulls > n {
			return fmt.Errorf("column %q: %d values with %d nulls in a body of %d bytes", cols[k].label(), n, nulls, body)
		}
	}
	for k := 0; k < nb; k++ {
		p := bstart + 16*k
		off := int64(binary.LittleEndian.Uint64(buf[p:]))
		ln := int64(binary.LittleEndian.Uint64(buf[p+8:]))
		if off < 0 || ln < 0 || off > body || ln > body-off {
			return fmt.Errorf("buffer %d at %d of %d bytes lies outside the body of %d bytes", k, off, ln, body)
		}
	}
	return nil
}

// messageTable parses the framing of an encapsulated message (the
// 0xFFFFFFFF continuation and a length, or a length alone before Arrow
// 0.15) and returns its Message table.
func messageTable(meta []byte) (fbTable, error) {
	if len(meta) < 8 {
		return fbTable{}, errors.New("message shorter than its length prefix")
	}
	skip := 4
	ln := int64(int32(binary.LittleEndian.Uint32(meta)))
	if ln == -1 {
		skip = 8
		ln = int64(int32(binary.LittleEndian.Uint32(meta[4:])))
	}
	if ln <= 0 || ln > int64(len(meta)-skip) {
		return fbTable{}, fmt.Errorf("message metadata length %d does not fit in %d bytes", ln, len(meta))
	}
	m, err := fbRoot(meta[skip : skip+int(ln)])
	return m, fbErr("message", err)
}

// headerChecksum reads the schema message after the leading magic and
// returns the position in the file and the value of its checksum (-1, ""
// without one).
func headerChecksum(r io.ReaderAt, end int64) (int64, string, error) {
	prefix, err := readAt(r, 8, 8)
	if err != nil {
		return -1, "", err
	}
	skip, ln := int64(4), int64(int32(binary.LittleEndian.Uint32(prefix)))
	if ln == -1 {
		skip, ln = 8, int64(int32(binary.LittleEndian.Uint32(prefix[4:])))
	}
	if ln <= 0 || ln > end-8-skip {
		return -1, "", fmt.Errorf("schema message length %d does not fit before the footer", ln)
	}
	fb, err := readAt(r, 8+skip, ln)
	if err != nil {
		return -1, "", err
	}
	msg, err := fbRoot(fb)
	if err != nil {
		return -1, "", fbErr("schema message", err)
	}
	if t, err := msg.scalar(1, 1, 0); err != nil || t != 1 {
		return -1, "", fbErr("schema message", orMessage(err, "the first message is not the schema"))
	}
	schema, ok, err := msg.table(2)
	if err != nil || !ok {
		return -1, "", fbErr("schema message", orMissing(err))
	}
	if _, err := checkSchemaIn(r, 1, schema); err != nil {
		return -1, "", fmt.Errorf("schema message: %w", err)
	}
	pos, sum, err := checksumValue(schema)
	if err != nil || pos < 0 {
		return -1, sum, fbErr("schema message metadata", err)
	}
	return 8 + skip + int64(pos), sum, nil
}

// checksumValue finds MetaChecksum in a Schema table's metadata and
// returns its value's position in the table's buffer (-1 when absent).
func checksumValue(schema fbTable) (int, string, error) {
	start, n, err := schema.vector(2, 4)
	if err != nil {
		return -1, "", err
	}
	for k := 0; k < n; k++ {
		kv, err := schema.tableAt(start, k)
		if err != nil {
			return -1, "", err
		}
		kp, kn, err := kv.str(0)
		if err != nil {
			return -1, "", err
		}
		if kp < 0 || !bytes.Equal(kv.buf[kp:kp+kn], []byte(MetaChecksum)) {
			continue
		}
		vp, vn, err := kv.str(1)
		if err != nil {
			return -1, "", err
		}
		if vp < 0 || vn != checksumHexLen {
			return -1, "", fmt.Errorf("%s is not %d hexadecimal digits", MetaChecksum, checksumHexLen)
		}
		return vp, string(kv.buf[vp : vp+vn]), nil
	}
	return -1, "", nil
}

// readAt reads n bytes at off; n is bounded by the caller against the file
// size, so the allocation is at most the file's own size. A reader whose
// bytes are in memory (a sliceReader) hands out its own bytes instead of
// a copy: the callers only read them.
func readAt(r io.ReaderAt, off, n int64) ([]byte, error) {
	if sr, ok := r.(sliceReader); ok {
		if b, ok := sr.sliceAt(off, n); ok {
			return b, nil
		}
	}
	b := make([]byte, n)
	if _, err := r.ReadAt(b, off); err != nil {
		return nil, fmt.Errorf("cannot read %d bytes at offset %d: %w", n, off, err)
	}
	return b, nil
}

// sliceReader is an io.ReaderAt over bytes in memory that can hand out
// n bytes at off without copying them (frameReader, frame.go).
type sliceReader interface {
	sliceAt(off, n int64) ([]byte, bool)
}

func orMissing(err error) error {
	if err != nil {
		return err
	}
	return errors.New("missing")
}

func orMessage(err error, msg string) error {
	if err != nil {
		return err
	}
	return errors.New(msg)
}
