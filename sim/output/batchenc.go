package output

import (
	"encoding/binary"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	flatbuffers "github.com/google/flatbuffers/go"
)

// A framed rewrite's record batches encoded without arrow-go's encoder.
//
// ipc.GetRecordBatchPayload builds each batch's message in a flatbuffers
// builder of its own started empty and grown by doubling
// (writeRecordMessage's flatbuffers.NewBuilder(0)), copies the finished
// flatbuffer out (writeMessageFB), and collects the body's buffers and the
// field and buffer metadata in slices made afresh (recordEncoder.visit):
// garbage that the collector, which seldom runs while a sweep's points
// play, does not hand back before the next rewrite, so its pages are
// fresh: ≈ 440–600 of the 1,000-point 70B sweep's real page faults after
// idle (docs/design.md "Speed", heapf51), ≈ 12 µs each. batchEncoder
// writes the same message (the calls of arrow-go v18's recordToFB,
// writeMessageFB, writeMessage and writeIPCPayload, in their order, and
// visit's rules for which buffers are written as they are, cut short or
// copied) from storage it keeps from batch to batch and rewrite to
// rewrite: one flatbuffers builder (Reset between batches), the metadata
// slices, and the bytes of the bitmaps arrow-go copies.
//
// It handles, at offset 0 and without record metadata, the columns a
// tableBuilder makes and their like: signed and unsigned integers of 8 to
// 64 bits, float32 and float64, bool, utf8 and binary with int32 offsets
// starting at 0, and dictionary arrays over such indices, with or without
// nulls, with buffers longer than the batch needs. Anything else (an
// array with an offset, another type, record metadata) is declined and
// the batch goes through GetRecordBatchPayload. A frame takes the encoder
// only once it has encoded the first batch of the file the frame was made
// from to the very bytes arrow-go wrote there (ipcFrame.adoptEncoder), so
// an arrow-go whose bytes differ leaves the rewrites on arrow-go's
// encoder (TestBatchEncoderEqualsArrow checks every table the package's
// tests write, both ways).
//
// A table builder whose every column is filled straight from the rows
// (fillColumn) has its batches encoded from those buffers, with no array
// made (encodeTable; adoptEncoder checks that path); and a dictionary's
// values are encoded as the dictionary batch message arrow-go writes
// (encodeDict, dictMessage), for the frame of a file whose dictionaries
// grew (ipcFrame.reframe, checked by adoptDicts).

// ipcArrowAlignment is arrow-go's kArrowAlignment: a bitmap it copies is
// padded to a multiple of 64 bytes (and a buffer longer than that many
// bytes past its values is cut short).
const ipcArrowAlignment = 64

// batchEncoder encodes record batches as arrow-go's
// GetRecordBatchPayload and Payload.WritePayload write them. It is not
// safe for concurrent use.
type batchEncoder struct {
	fb     *flatbuffers.Builder
	nodes  []ipcFieldNode
	body   []ipcBodyBuf
	copies []byte // this batch's copied bitmaps (ipcBodyBuf.copied)
	rows   int64
	size   int64 // the body's length, every buffer padded to 8
	// check is the message of the batch ipcFrame.adoptEncoder compares.
	check []byte
}

// ipcFieldNode is one array's FieldNode: its length and null count.
type ipcFieldNode struct{ n, nulls int64 }

// ipcBodyBuf is one buffer of a batch's body: b, or with copied the n
// bytes of the encoder's copies at at (copies may move as it grows).
type ipcBodyBuf struct {
	b      []byte
	at, n  int
	copied bool
}

func newBatchEncoder() *batchEncoder { return &batchEncoder{fb: flatbuffers.NewBuilder(0)} }

// encode readies the message of rec and reports whether it could: false
// when rec holds an array or metadata the encoder does not handle (the
// caller then encodes rec with GetRecordBatchPayload). After true,
// message and writeBody write rec's message; rec's buffers must stay as
// they are until writeBody returns.
func (e *batchEncoder) encode(rec arrow.RecordBatch) bool {
	e.nodes, e.body, e.copies = e.nodes[:0], e.body[:0], e.copies[:0]
	if rm, ok := rec.(arrow.RecordBatchWithMetadata); ok && rm.Metadata().Len() > 0 {
		return false
	}
	for _, col := range rec.Columns() {
		if !e.visit(col) {
			return false
		}
	}
	e.ready(rec.NumRows())
	return true
}

// ready sets the batch's row count and body length once its nodes and
// buffers are in.
func (e *batchEncoder) ready(rows int64) {
	e.rows = rows
	e.size = 0
	for i := range e.body {
		e.size += pad8(int64(e.body[i].len()))
	}
}

// encodeTable readies the message of the record batch tb.batch(lo, hi)
// builds, the same bytes, from the column buffers tb fills for it
// (fillColumn) with no arrow array, record or dictionary array made, and
// reports whether it could: false when a column of tb is not filled that
// way (tb.direct), and then nothing is filled. After true, message and
// writeBody write the batch; tb's buffers must stay as they are until
// writeBody returns.
//
// What visit would add for tb.batch's arrays, without them: every column
// has no nulls (no bitmap, a null count of 0) and buffers exactly as long
// as its values (no copy, nothing cut short): a dictionary column its
// codes, a fixed-width column its values, bool its bitmap of ceil(n/8)
// bytes, utf8 its n+1 offsets from 0 and its value bytes. Why: the
// batch's record, its arrays and the dictionary arrays around the codes
// (≈ 180 KB of a framed 1,000-row summary rewrite's 204 KB, ≈ 130
// columns × 16 batches; the short last batch's arrays made afresh at
// every rewrite, as the held ones wrap 64 rows) were garbage whose pages
// the collector, seldom running while a sweep's points play, did not
// hand back before the next rewrite (docs/design.md "Speed", enc52b).
func (e *batchEncoder) encodeTable(tb *tableBuilder, lo, hi int) bool {
	if !tb.direct() {
		return false
	}
	e.nodes, e.body, e.copies = e.nodes[:0], e.body[:0], e.copies[:0]
	n := hi - lo
	for fi := range tb.spec.fields {
		tb.fillColumn(fi, lo, hi)
		sc := &tb.scratch[fi]
		e.nodes = append(e.nodes, ipcFieldNode{n: int64(n)})
		e.body = append(e.body, ipcBodyBuf{}) // no nulls: no bitmap
		var vals []byte
		if d := tb.dicts[fi]; d != nil {
			if d.typ.IndexType.ID() == arrow.INT16 {
				vals = arrow.GetBytes(sc.i16)
			} else {
				vals = arrow.GetBytes(sc.i32)
			}
		} else {
			switch tb.spec.fields[fi].kind {
			case kindInt, kindInt64:
				vals = arrow.GetBytes(sc.i64)
			case kindInt32:
				vals = arrow.GetBytes(sc.i32)
			case kindUint64:
				vals = arrow.GetBytes(sc.u64)
			case kindFloat64:
				vals = arrow.GetBytes(sc.f64)
			case kindBool:
				vals = sc.bits
			default: // kindString
				e.body = append(e.body, ipcBodyBuf{b: arrow.GetBytes(sc.str.off)})
				vals = sc.str.data
			}
		}
		e.body = append(e.body, ipcBodyBuf{b: vals})
	}
	e.ready(int64(n))
	return true
}

// len is the buffer's length in bytes.
func (bb *ipcBodyBuf) len() int {
	if bb.copied {
		return bb.n
	}
	return len(bb.b)
}

func pad8(n int64) int64 { return (n + 7) &^ 7 }

func padTo(n, align int64) int64 { return (n + align - 1) / align * align }

// bufBytes is buf's bytes, nil for no buffer.
func bufBytes(buf *memory.Buffer) []byte {
	if buf == nil {
		return nil
	}
	return buf.Bytes()
}

// visit adds arr's field node and body buffers as arrow-go's
// recordEncoder.visit does, or reports false when it does not handle arr.
func (e *batchEncoder) visit(arr arrow.Array) bool {
	id := arr.DataType().ID()
	if id == arrow.DICTIONARY {
		return e.visit(arr.(*array.Dictionary).Indices())
	}
	data := arr.Data()
	if data.Offset() != 0 {
		return false
	}
	width := int64(0)
	switch id {
	case arrow.INT8, arrow.UINT8:
		width = 1
	case arrow.INT16, arrow.UINT16:
		width = 2
	case arrow.INT32, arrow.UINT32, arrow.FLOAT32:
		width = 4
	case arrow.INT64, arrow.UINT64, arrow.FLOAT64:
		width = 8
	case arrow.BOOL, arrow.STRING, arrow.BINARY:
	default:
		return false
	}
	n, nulls := int64(arr.Len()), int64(arr.NullN())
	bufs := data.Buffers()
	// Validated before anything is added: a declined array leaves the
	// batch to GetRecordBatchPayload, which starts afresh anyway.
	var offs []byte
	if id == arrow.STRING || id == arrow.BINARY {
		if len(bufs) < 3 {
			return false
		}
		offs = bufBytes(bufs[1])
		if len(offs) == 0 && n > 0 || len(offs) > 0 && (int64(len(offs)) < 4*(n+1) || binary.LittleEndian.Uint32(offs) != 0) {
			// no offsets for values, too few, or not starting at 0
			// (arrow-go shifts them into a copy)
			return false
		}
	} else if len(bufs) < 2 {
		return false
	}
	e.nodes = append(e.nodes, ipcFieldNode{n: n, nulls: nulls})
	switch {
	case nulls == 0:
		// no nulls: no bitmap
		e.body = append(e.body, ipcBodyBuf{})
	case nulls == n:
		// every value null: a zeroed bitmap
		e.copy(nil, 0, padTo((n+7)/8, ipcArrowAlignment))
	default:
		e.bitmap(n, bufs[0])
	}
	switch id {
	case arrow.BOOL:
		if n == 0 {
			e.body = append(e.body, ipcBodyBuf{})
		} else {
			e.bitmap(n, bufs[1])
		}
	case arrow.STRING, arrow.BINARY:
		// getZeroBasedValueOffsets: the offsets the values need, the
		// values between the first and the last
		if len(offs) > 0 && int64(len(offs)) > 4*(n+1) {
			offs = offs[:4*(n+1)]
		}
		e.body = append(e.body, ipcBodyBuf{b: offs})
		vals := bufBytes(bufs[2])
		total := 0
		if len(offs) > 0 && bufs[2] != nil {
			total = int(binary.LittleEndian.Uint32(offs[4*n:]))
		}
		if bufs[2] != nil && total < len(vals) {
			vals = vals[:total]
		}
		e.body = append(e.body, ipcBodyBuf{b: vals})
	default:
		vals := bufBytes(bufs[1])
		if need := n * width; bufs[1] != nil && padTo(need, ipcArrowAlignment) < int64(len(vals)) {
			vals = vals[:min(pad8(need), int64(len(vals)))]
		}
		e.body = append(e.body, ipcBodyBuf{b: vals})
	}
	return true
}

// bitmap adds the bitmap of n bits buf holds as newTruncatedBitmap gives
// it: as it is when it is at most n bits padded to 64 bytes long, else
// its n bits copied into that many zeroed bytes.
func (e *batchEncoder) bitmap(n int64, buf *memory.Buffer) {
	b := bufBytes(buf)
	if buf == nil || padTo((n+7)/8, ipcArrowAlignment) >= int64(len(b)) {
		e.body = append(e.body, ipcBodyBuf{b: b})
		return
	}
	e.copy(b, n, padTo((n+7)/8, ipcArrowAlignment))
}

// copy adds a body buffer of size zeroed bytes holding the first bits
// bits of src.
func (e *batchEncoder) copy(src []byte, bits, size int64) {
	at := len(e.copies)
	e.copies = append(e.copies, make([]byte, size)...)
	dst := e.copies[at:]
	copy(dst[:bits/8], src)
	if r := bits % 8; r != 0 {
		dst[bits/8] = src[bits/8] & (1<<r - 1)
	}
	e.body = append(e.body, ipcBodyBuf{at: at, n: int(size), copied: true})
}

// message appends the encapsulated message of the batch encode readied
// to dst: the continuation marker, the flatbuffer's length padded, the
// flatbuffer and its padding to 8 bytes, as arrow-go's writeMessage
// writes them around writeRecordMessage's flatbuffer.
func (e *batchEncoder) message(dst []byte) []byte { return e.messageOf(dst, false, 0) }

// dictMessage appends the encapsulated message of the dictionary batch
// encodeDict readied to dst, with dictionary id id, as arrow-go's
// writeDictionaryMessage builds it (not a delta) around the record batch
// and writeMessage frames it.
func (e *batchEncoder) dictMessage(dst []byte, id int64) []byte { return e.messageOf(dst, true, id) }

// encodeDict readies the message of the dictionary batch of dict, a
// dictionary's values, as arrow-go's dictEncoder encodes it (a record
// batch of the one column), and reports whether it could (see visit).
func (e *batchEncoder) encodeDict(dict arrow.Array) bool {
	e.nodes, e.body, e.copies = e.nodes[:0], e.body[:0], e.copies[:0]
	if !e.visit(dict) {
		return false
	}
	e.ready(int64(dict.Len()))
	return true
}

// messageOf is message, or with dict dictMessage for id.
func (e *batchEncoder) messageOf(dst []byte, dict bool, id int64) []byte {
	b := e.fb
	b.Reset()
	// recordToFB: writeFieldNodes, writeBuffers (codec none, no variadic
	// buffer counts). Each element is a struct of two int64s, which
	// flatbuf.CreateFieldNode and CreateBuffer prepend after Prep(8, 16):
	// StartVector has made room for them all, 8-aligned, so that Prep adds
	// no padding (it may grow the buffer, which moves no finished byte)
	// and the words are placed without it (≈ 1 M instructions of a
	// 1,000-row rewrite's 16 batches in its per-word checks).
	b.StartVector(16, len(e.nodes), 8)
	for i := len(e.nodes) - 1; i >= 0; i-- {
		b.PlaceInt64(e.nodes[i].nulls)
		b.PlaceInt64(e.nodes[i].n)
	}
	nodes := b.EndVector(len(e.nodes))
	b.StartVector(16, len(e.body), 8)
	off := e.size
	for i := len(e.body) - 1; i >= 0; i-- {
		n := int64(e.body[i].len())
		off -= pad8(n)
		b.PlaceInt64(n)
		b.PlaceInt64(off)
	}
	bufs := b.EndVector(len(e.body))
	b.StartObject(5) // RecordBatch
	b.PrependInt64Slot(0, e.rows, 0)
	b.PrependUOffsetTSlot(1, nodes, 0)
	b.PrependUOffsetTSlot(2, bufs, 0)
	hdr, kind := b.EndObject(), byte(3 /* MessageHeader RecordBatch */)
	if dict {
		// writeDictionaryMessage: DictionaryBatch{id, data, isDelta}
		b.StartObject(3)
		b.PrependInt64Slot(0, id, 0)
		b.PrependUOffsetTSlot(1, hdr, 0)
		b.PrependBoolSlot(2, false, false)
		hdr, kind = b.EndObject(), 2 /* MessageHeader DictionaryBatch */
	}
	// writeMessageFB, no custom metadata
	b.StartObject(5) // Message
	b.PrependInt16Slot(0, 4 /* MetadataVersion V5 */, 0)
	b.PrependByteSlot(1, kind, 0)
	b.PrependUOffsetTSlot(2, hdr, 0)
	b.PrependInt64Slot(3, e.size, 0)
	b.PrependUOffsetTSlot(4, 0, 0)
	b.Finish(b.EndObject())
	fb := b.FinishedBytes()
	padded := pad8(int64(len(fb)) + 8)
	dst = binary.LittleEndian.AppendUint32(dst, 0xFFFFFFFF)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(padded-8))
	dst = append(dst, fb...)
	return append(dst, make([]byte, padded-8-int64(len(fb)))...)
}

// ipcZeros pads body buffers to 8 bytes.
var ipcZeros [8]byte

// writeBody writes the body of the batch encode readied, each buffer
// padded to 8 bytes, as writeIPCPayload writes a payload's body.
func (e *batchEncoder) writeBody(w io.Writer) error {
	for i := range e.body {
		bb := &e.body[i]
		p := bb.b
		if bb.copied {
			p = e.copies[bb.at : bb.at+bb.n]
		}
		if len(p) > 0 {
			if _, err := w.Write(p); err != nil {
				return err
			}
		}
		if k := pad8(int64(len(p))) - int64(len(p)); k > 0 {
			if _, err := w.Write(ipcZeros[:k]); err != nil {
				return err
			}
		}
	}
	return nil
}

// encodes reports whether the batch encode or encodeTable readied is want,
// its message and body byte for byte; with dict, the dictionary batch
// encodeDict readied, with id id.
func (e *batchEncoder) encodes(want []byte, dict bool, id int64) bool {
	e.check = e.messageOf(e.check[:0], dict, id)
	same := &sameBytes{want: want}
	same.Write(e.check)
	return e.writeBody(same) == nil && same.equal()
}
