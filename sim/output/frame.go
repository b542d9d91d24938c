package output

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	flatbuffers "github.com/google/flatbuffers/go"
)

// An AppendFile's rewrites after the first write the parts of the file
// that do not change from rewrite to rewrite from the bytes arrow-go wrote
// the first time, and encode only the record batches.
//
// An Arrow IPC file is the leading magic, the schema message, the
// dictionary messages, the record batch messages, the stream's end marker,
// the footer (the schema again and every message's block: offset,
// metadata and body lengths) and the trailing length and magic. While the
// dictionaries stay the same, a rewrite's file differs from the last only
// in its record batches and their blocks. arrow-go's FileWriter encodes
// the schema message, collects and compares every dictionary column at
// every batch, and builds the footer's schema afresh at every rewrite:
// ≈ 30% of the samples under Flush in a perf profile of the 1,000-point
// 70B sweep at ada80c4, and many of its fresh pages, for bytes
// that were already written. Here the header (magic, schema and
// dictionary messages) and the footer's schema part are kept from the
// first rewrite; each batch is encoded by the frame's encoder (batchenc.go:
// the bytes of ipc.GetRecordBatchPayload, the encoder FileWriter uses,
// which encodes what it declines) and written straight to the file, and
// the footer's block vectors and table are built before the kept schema
// part with the flatbuffers calls arrow-go's writeFileFooter makes.
//
// Splicing the batches themselves was measured and dropped: a batch's
// message depends only on its rows, so the batches before the first row
// that moved could be copied; but a sweep plays its points grouped by
// structure (sweep.byStructure), not in row order, and in the
// 1,000-point 70B sweep the rows that arrive between two rewrites land
// all over the sorted file: 9 of 31 batches stayed in place, and keeping
// their bytes (≈ 0.9 MB, fresh pages) cost more than encoding them again.
//
// A frame is only made after the file it came from has been rebuilt from
// it byte for byte (newIPCFrame), so a file this code could not reproduce
// leaves the AppendFile on arrow-go's writer; every rewrite equals
// writeTableBatches' (TestAppendFileRewritesEqualWriteTable).

// ipcFrame is what an AppendFile's rewrites keep of the file arrow-go
// wrote first.
type ipcFrame struct {
	// header is the file up to its first record batch: magic, schema
	// message, dictionary messages (arrow-go writes the dictionaries just
	// before the first batch).
	header []byte
	dicts  []ipcBlock
	// eos is what lies between the last batch and the footer (the
	// stream's end marker).
	eos []byte
	// tail is the footer's schema part with the padding after it, aligned
	// to 8 bytes (flatbuffers builds it first, at the end of the buffer);
	// schemaOff is the schema table's distance from the buffer's end.
	tail      []byte
	schemaOff int
	// recs are the blocks of the batches written since start, metas
	// their metadata one after the other (for seal's check), footerBytes
	// the footer finish wrote; fb is the footer's builder. All are reused
	// from rewrite to rewrite.
	recs        []ipcBlock
	metas       []byte
	footerBytes []byte
	trailer     [10]byte
	fb          *flatbuffers.Builder
	// enc encodes the batches when it encoded the first batch of the file
	// the frame came from to arrow-go's bytes (adoptEncoder; batchenc.go);
	// nil: GetRecordBatchPayload encodes them. With direct, enc encodes
	// them from the table builder's column buffers (encodeTable), the way
	// adoptEncoder checked.
	enc    *batchEncoder
	direct bool
	// schema is the schema the frame's file has. With ownDicts, enc wrote
	// every dictionary message of the header to arrow-go's bytes
	// (adoptDicts), and reframe writes the header for the table builder's
	// new dictionaries after one changed: schemaEnd is where the
	// dictionary messages start (after the schema message), dictFields
	// the table field of each, dictIDs its id.
	schema     *arrow.Schema
	ownDicts   bool
	schemaEnd  int
	dictFields []int
	dictIDs    []int64
	// cols are seal's check's columns (columnStore), kept from rewrite
	// to rewrite.
	cols [2][]column
}

// ipcFooterInfo is what newIPCFrame reads from a footer.
type ipcFooterInfo struct {
	dicts, recs []ipcBlock
	schemaPos   int // the schema table's position in the footer
	dictsVecPos int // the dictionaries vector's position (its length)
	footerStart int64
}

// readIPCFooter reads the blocks and the positions newIPCFrame needs from
// a complete IPC file held in memory.
func readIPCFooter(file []byte) (ipcFooterInfo, error) {
	var info ipcFooterInfo
	n := len(file)
	if n < 18 {
		return info, errors.New("file too short")
	}
	fl := int(int32(binary.LittleEndian.Uint32(file[n-10:])))
	if fl <= 0 || fl > n-18 {
		return info, errors.New("bad footer length")
	}
	info.footerStart = int64(n - 10 - fl)
	footer := file[n-10-fl : n-10]
	root, err := fbRoot(footer)
	if err != nil {
		return info, err
	}
	schema, ok, err := root.table(1)
	if err != nil || !ok {
		return info, orMissing(err)
	}
	info.schemaPos = schema.pos
	dpos, err := root.target(2)
	if err != nil || dpos < 0 {
		return info, orMissing(err)
	}
	info.dictsVecPos = dpos
	for _, kind := range []struct {
		field int
		out   *[]ipcBlock
	}{{2, &info.dicts}, {3, &info.recs}} {
		start, k, err := root.vector(kind.field, 24)
		if err != nil {
			return info, err
		}
		for i := 0; i < k; i++ {
			b := footer[start+24*i:]
			*kind.out = append(*kind.out, ipcBlock{offset: int64(binary.LittleEndian.Uint64(b)),
				meta: int64(int32(binary.LittleEndian.Uint32(b[8:]))), body: int64(binary.LittleEndian.Uint64(b[16:]))})
		}
	}
	return info, nil
}

// newIPCFrame makes the frame of file, an IPC file arrow-go wrote with at
// least one record batch; batches is how many batches the rewrites are
// expected to reach (the rows AppendFile.Grow made room for), to size the
// metadata kept for seal once: grown by doubling from rewrite to rewrite,
// its ≈ 100 KB (16 batches of ≈ 6.4 KB for the 1,000-point 70B sweep)
// were ≈ 110 page faults. It returns nil when file is not laid out as
// framing expects or cannot be rebuilt byte for byte from the frame and
// its batches; the rewrites then stay on arrow-go's writer. A frame made
// after a dictionary grew takes old's storage (the footer's builder, the
// blocks and metadata kept for seal), whose pages are mapped already:
// each made afresh was ≈ 40 of the ≈ 190 page faults a dictionary's
// growth cost the 70B sweep's summary (docs/design.md, deal49).
func newIPCFrame(file []byte, batches int, old *ipcFrame) *ipcFrame {
	info, err := readIPCFooter(file)
	if err != nil || len(info.recs) == 0 {
		return nil
	}
	first := info.recs[0].offset
	for _, d := range info.dicts {
		if d.offset+d.meta+d.body > first {
			return nil
		}
	}
	at := first
	for _, r := range info.recs {
		if r.offset != at || r.meta <= 0 || r.meta > 1<<30 || r.body < 0 {
			return nil
		}
		at += r.meta + r.body
	}
	if at > info.footerStart || info.footerStart-at > 16 {
		return nil
	}
	footer := file[info.footerStart : int64(len(file))-10]
	x := len(footer) - (info.dictsVecPos + 4 + 24*len(info.dicts))
	if x < 0 || x%8 != 0 || info.schemaPos < len(footer)-x {
		return nil
	}
	fr := &ipcFrame{header: bytes.Clone(file[:first]), dicts: info.dicts, eos: bytes.Clone(file[at:info.footerStart]),
		tail: bytes.Clone(footer[len(footer)-x:]), schemaOff: len(footer) - info.schemaPos}
	if old != nil {
		fr.fb, fr.recs, fr.metas, fr.cols = old.fb, old.recs[:0], old.metas[:0], old.cols
	} else {
		fr.fb = flatbuffers.NewBuilder(0)
	}
	// The frame must rebuild the very file it came from.
	same := &sameBytes{want: file}
	w := fr.start(same)
	for _, r := range info.recs {
		p := file[r.offset : r.offset+r.meta+r.body]
		w.Write(p)
		fr.batch(r.offset, r.meta, r.body, p[:r.meta])
	}
	if err := fr.finish(w); err != nil || !same.equal() {
		return nil
	}
	if per := info.recs[0].meta; batches > len(info.recs) && per > 0 && per < 1<<20 {
		fr.metas = slices.Grow(fr.metas, int(per)*(batches+1)-len(fr.metas))
	}
	return fr
}

// sameBytes is an io.Writer that checks that it is written want.
type sameBytes struct {
	want []byte
	at   int
	diff bool
}

func (s *sameBytes) Write(p []byte) (int, error) {
	if !s.diff && len(p) <= len(s.want)-s.at && bytes.Equal(p, s.want[s.at:s.at+len(p)]) {
		s.at += len(p)
	} else {
		s.diff = true
	}
	return len(p), nil
}

func (s *sameBytes) equal() bool { return !s.diff && s.at == len(s.want) }

// countingWriter counts the bytes written through it and, while keep is
// set, appends them to *keep until it holds one encapsulated message's
// metadata: the continuation marker, the length its second word gives,
// the flatbuffer and its padding (ipc's writeMessage), the body left out.
type countingWriter struct {
	w    io.Writer
	n    int64
	keep *[]byte
	from int // where the message starts in *keep
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	for q := p[:n]; c.keep != nil && len(q) > 0; {
		have := len(*c.keep) - c.from
		need := 8 - have
		if have >= 8 {
			need = 8 + int(binary.LittleEndian.Uint32((*c.keep)[c.from+4:])) - have
		}
		if need <= 0 {
			c.keep = nil
			break
		}
		k := min(need, len(q))
		*c.keep = append(*c.keep, q[:k]...)
		q = q[k:]
	}
	return n, err
}

// start writes the header to w and returns the writer the batches and
// finish continue with.
func (fr *ipcFrame) start(w io.Writer) *countingWriter {
	fr.recs, fr.metas = fr.recs[:0], fr.metas[:0]
	cw := &countingWriter{w: w}
	cw.Write(fr.header) // an error comes back from the next write
	return cw
}

// writeBatches encodes rows [0, n) through tb in record batches of batch
// rows, as ipc.FileWriter encodes them, and writes them to w: with the
// frame's encoder where it has one that takes the batch (from tb's column
// buffers when adoptEncoder checked that way, else from tb.batch's
// record), else with arrow-go's.
func (fr *ipcFrame) writeBatches(w *countingWriter, tb *tableBuilder, mem memory.Allocator, n, batch int) error {
	for lo := 0; lo < n; lo += batch {
		hi := min(lo+batch, n)
		if fr.direct && fr.enc.encodeTable(tb, lo, hi) {
			if err := fr.writeEncoded(w); err != nil {
				return err
			}
			continue
		}
		rec := tb.batch(lo, hi)
		if fr.enc != nil && !fr.direct && fr.enc.encode(rec) {
			err := fr.writeEncoded(w)
			rec.Release()
			if err != nil {
				return err
			}
			continue
		}
		p, err := ipc.GetRecordBatchPayload(rec, ipc.WithAllocator(mem))
		rec.Release()
		if err != nil {
			return err
		}
		at, k := w.n, len(fr.metas)
		// the metadata as written, for seal's check
		w.keep, w.from = &fr.metas, k
		m, err := p.WritePayload(w)
		w.keep = nil
		p.Release()
		if err != nil {
			return err
		}
		if len(fr.metas)-k != m {
			return fmt.Errorf("a record batch's metadata is %d bytes, %d were kept", m, len(fr.metas)-k)
		}
		fr.recs = append(fr.recs, ipcBlock{offset: at, meta: int64(m), body: w.n - at - int64(m)})
	}
	return nil
}

// writeEncoded writes the batch fr.enc encoded last to w, its metadata
// written from where fr.metas keeps it for seal, and records its block.
func (fr *ipcFrame) writeEncoded(w *countingWriter) error {
	at, k := w.n, len(fr.metas)
	fr.metas = fr.enc.message(fr.metas)
	if _, err := w.Write(fr.metas[k:]); err != nil {
		return err
	}
	if err := fr.enc.writeBody(w); err != nil {
		return err
	}
	m := int64(len(fr.metas) - k)
	fr.recs = append(fr.recs, ipcBlock{offset: at, meta: m, body: w.n - at - m})
	return nil
}

// adoptEncoder gives fr enc for its rewrites' batches when enc encodes the
// first batch of file, the file fr was just made from (newIPCFrame: its
// blocks are fr.recs until the next start), whose rows tb.batch(0, rows)
// builds, to the very bytes arrow-go wrote there, the way the rewrites
// will encode them: from tb's column buffers (encodeTable, fr.direct) when
// tb fills every column, else from tb.batch's record; otherwise the
// rewrites stay on GetRecordBatchPayload. fr may be nil.
func (fr *ipcFrame) adoptEncoder(file []byte, tb *tableBuilder, rows int, enc *batchEncoder) {
	if fr == nil || len(fr.recs) == 0 || rows < 1 || rows > tb.n {
		return
	}
	blk := fr.recs[0]
	want := file[blk.offset : blk.offset+blk.meta+blk.body]
	if tb.direct() {
		if enc.encodeTable(tb, 0, rows) && enc.encodes(want, false, 0) {
			fr.enc, fr.direct = enc, true
		}
		return
	}
	rec := tb.batch(0, rows)
	defer rec.Release()
	if int64(rows) == rec.NumRows() && enc.encode(rec) && enc.encodes(want, false, 0) {
		fr.enc = enc
	}
}

// adoptDicts lets fr write the header of a later table builder's file
// itself (reframe) when enc encodes every dictionary message of fr's
// header, which arrow-go wrote for tb's dictionaries (the file fr was
// just made from), to its very bytes, each with the id the message holds
// for the field the schema message gives that id. fr may be nil.
func (fr *ipcFrame) adoptDicts(tb *tableBuilder, enc *batchEncoder) {
	if fr == nil {
		return
	}
	fr.schema, fr.ownDicts = tb.schema, false
	end := len(fr.header)
	if len(fr.dicts) > 0 {
		end = int(fr.dicts[0].offset)
	}
	if end < 16 || end > len(fr.header) {
		return
	}
	// the schema message, after the 8 bytes of magic and padding
	msg, err := messageTable(fr.header[8:end])
	if err != nil {
		return
	}
	schema, ok, err := msg.table(2)
	if err != nil || !ok {
		return
	}
	cols, err := checkSchema(schema, nil)
	if err != nil || len(cols) != len(tb.spec.fields) {
		return
	}
	fields, ids := fr.dictFields[:0], fr.dictIDs[:0]
	at := int64(end)
	for _, blk := range fr.dicts {
		if blk.offset != at || blk.meta+blk.body > int64(len(fr.header))-at {
			return
		}
		want := fr.header[at : at+blk.meta+blk.body]
		m, err := messageTable(want[:blk.meta])
		if err != nil {
			return
		}
		hdr, ok, err := m.table(2)
		if err != nil || !ok {
			return
		}
		id, err := hdr.scalar(0, 8, 0)
		if err != nil {
			return
		}
		fi := slices.IndexFunc(cols, func(c column) bool { return c.dictBufs > 0 && c.dictID == id })
		if fi < 0 || tb.dicts[fi] == nil || slices.Contains(fields, fi) ||
			!enc.encodeDict(tb.dicts[fi].arr) || !enc.encodes(want, true, id) {
			return
		}
		fields, ids = append(fields, fi), append(ids, id)
		at += blk.meta + blk.body
	}
	dicts := 0
	for _, d := range tb.dicts {
		if d != nil {
			dicts++
		}
	}
	if at != int64(len(fr.header)) || dicts != len(fields) {
		return
	}
	fr.dictFields, fr.dictIDs, fr.schemaEnd, fr.ownDicts = fields, ids, end, true
}

// reframe returns the frame of tb's file, tb the table builder fr was
// made for once its dictionaries changed (redict), or one that replaced
// it: fr's header with the dictionary messages of tb's dictionaries in
// place of its own, encoded by fr's encoder, and fr's end marker and
// footer schema; it takes fr's storage (the footer's builder, blocks,
// metadata and the seal's columns) and encoder. That is the file FileWriter writes for tb's rows: the schema
// message, the end marker and the footer's schema depend on the schema
// alone, the same (sameSchema), and FileWriter writes one dictionary
// message per dictionary column in the order fr's header has them. It
// returns nil, leaving the next frame to a probe, when fr did not check
// its dictionary messages (adoptDicts), the schema changed (a
// dictionary's index type), or the encoder declines a dictionary.
//
// Why: a probe is a file of the first batch written by arrow-go's
// FileWriter (its schema and message flatbuffers, the batch's arrays and
// record, the capture): ≈ 100 real page faults of the 1,000-point 70B
// sweep after idle (docs/design.md "Speed", enc52b).
func (fr *ipcFrame) reframe(tb *tableBuilder) *ipcFrame {
	if fr == nil || !fr.ownDicts || fr.enc == nil || !sameSchema(fr.schema, tb.schema) {
		return nil
	}
	enc := fr.enc
	header := make([]byte, fr.schemaEnd, len(fr.header)+4096)
	copy(header, fr.header)
	dicts := make([]ipcBlock, 0, len(fr.dictFields))
	for k, fi := range fr.dictFields {
		d := tb.dicts[fi]
		if d == nil || !enc.encodeDict(d.arr) {
			return nil
		}
		at := len(header)
		header = enc.dictMessage(header, fr.dictIDs[k])
		meta := len(header) - at
		enc.writeBody(appendBytes{&header})
		dicts = append(dicts, ipcBlock{offset: int64(at), meta: int64(meta), body: int64(len(header) - at - meta)})
	}
	return &ipcFrame{header: header, dicts: dicts, eos: fr.eos, tail: fr.tail, schemaOff: fr.schemaOff,
		recs: fr.recs[:0], metas: fr.metas[:0], fb: fr.fb, enc: enc, direct: fr.direct,
		schema: tb.schema, ownDicts: true, schemaEnd: fr.schemaEnd, dictFields: fr.dictFields, dictIDs: fr.dictIDs, cols: fr.cols}
}

// sameSchema reports whether FileWriter writes the same schema message
// and footer schema for a and b: the same fields (names, types, index
// types included, nullability, metadata) and the same schema metadata in
// the same order.
func sameSchema(a, b *arrow.Schema) bool {
	if a == nil || b == nil || !a.Equal(b) {
		return false
	}
	ma, mb := a.Metadata(), b.Metadata()
	return slices.Equal(ma.Keys(), mb.Keys()) && slices.Equal(ma.Values(), mb.Values())
}

// batch records a batch written at offset: its block, and its metadata
// as the file holds it (meta bytes), for seal.
func (fr *ipcFrame) batch(offset, meta, body int64, msg []byte) {
	fr.recs = append(fr.recs, ipcBlock{offset: offset, meta: meta, body: body})
	fr.metas = append(fr.metas, msg...)
}

// finish writes the end marker, the footer of the batches written since
// start, and the trailing length and magic.
func (fr *ipcFrame) finish(w *countingWriter) error {
	footer := fr.footer()
	fr.footerBytes = footer
	binary.LittleEndian.PutUint32(fr.trailer[:], uint32(len(footer)))
	copy(fr.trailer[4:], "ARROW1")
	for _, p := range [][]byte{fr.eos, footer, fr.trailer[:]} {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// footer builds the footer of the batches in fr.recs, as arrow-go's
// writeFileFooter does.
func (fr *ipcFrame) footer() []byte {
	b := fr.fb
	b.Reset()
	x := len(fr.tail)
	b.Prep(8, x)
	b.Pad(x)
	copy(b.Bytes[b.Head():], fr.tail)
	blocks := func(blks []ipcBlock) flatbuffers.UOffsetT {
		b.StartVector(24, len(blks), 8)
		for i := len(blks) - 1; i >= 0; i-- {
			// arrow's flatbuf.CreateBlock (a Block struct)
			b.Prep(8, 24)
			b.PrependInt64(blks[i].body)
			b.Pad(4)
			b.PrependInt32(int32(blks[i].meta))
			b.PrependInt64(blks[i].offset)
		}
		return b.EndVector(len(blks))
	}
	dicts := blocks(fr.dicts)
	recs := blocks(fr.recs)
	b.StartObject(5)
	b.PrependInt16Slot(0, 4 /* MetadataVersion V5 */, 0)
	b.PrependUOffsetTSlot(1, flatbuffers.UOffsetT(fr.schemaOff), 0)
	b.PrependUOffsetTSlot(2, dicts, 0)
	b.PrependUOffsetTSlot(3, recs, 0)
	b.Finish(b.EndObject())
	return b.FinishedBytes()
}

// appendBytes is an io.Writer appending to a byte slice.
type appendBytes struct{ b *[]byte }

func (w appendBytes) Write(p []byte) (int, error) {
	*w.b = append(*w.b, p...)
	return len(p), nil
}

// seal is sealChecksum for a file written by start, writeBatches and
// finish: checkIPCFile walks the file's structure on the bytes the frame
// holds (header, every batch's metadata as it was written, footer)
// instead of reading them back from the file: a read per message of the
// file just written was ≈ 13% of the samples under Flush (perf of the
// 1,000-point 70B sweep at ada80c4).
func (fr *ipcFrame) seal(f *os.File, size int64, h hash.Hash) error {
	r := &frameReader{fr: fr, size: size}
	if want := r.written(); size != want {
		return fmt.Errorf("checksum: the file holds %d bytes where %d were written", size, want)
	}
	lay, err := checkIPCFile(r, size)
	return writeChecksum(f, lay, err, h)
}

// frameReader reads the parts of a framed file that its frame holds; a
// read of any other byte is an error.
type frameReader struct {
	fr   *ipcFrame
	size int64
}

// columns is the frame's store for checkIPCFile's columns.
func (r *frameReader) columns() *[2][]column { return &r.fr.cols }

// written is the size of the file the frame wrote.
func (r *frameReader) written() int64 {
	end := int64(len(r.fr.header))
	if n := len(r.fr.recs); n > 0 {
		end = r.fr.recs[n-1].offset + r.fr.recs[n-1].meta + r.fr.recs[n-1].body
	}
	return end + int64(len(r.fr.eos)+len(r.fr.footerBytes)) + 10
}

func (r *frameReader) ReadAt(p []byte, off int64) (int, error) {
	b, ok := r.sliceAt(off, int64(len(p)))
	if !ok {
		return 0, fmt.Errorf("read of %d bytes at %d: not a message's metadata", len(p), off)
	}
	return copy(p, b), nil
}

// sliceAt returns the n bytes at off when one part the frame holds has
// them all (readAt takes them without a copy).
func (r *frameReader) sliceAt(off, n int64) ([]byte, bool) {
	fr := r.fr
	in := func(start int64, seg []byte) ([]byte, bool) {
		if off < start || n < 0 || off+n > start+int64(len(seg)) {
			return nil, false
		}
		return seg[off-start : off-start+n], true
	}
	footerStart := r.size - 10 - int64(len(fr.footerBytes))
	if b, ok := in(0, fr.header); ok {
		return b, true
	}
	if b, ok := in(footerStart, fr.footerBytes); ok {
		return b, true
	}
	if b, ok := in(r.size-10, fr.trailer[:]); ok {
		return b, true
	}
	m := int64(0)
	for _, blk := range fr.recs {
		if b, ok := in(blk.offset, fr.metas[m:m+blk.meta]); ok {
			return b, true
		}
		m += blk.meta
	}
	return nil, false
}
