package output

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// TraceMeta describes a trace file beyond its rows.
type TraceMeta struct {
	// Streams orders the stream tracks within a rank (typically
	// TimelineDicts.Stream: compute first, then the communication streams).
	// A TraceWriter needs every stream its rows use; WriteTrace uses the
	// sorted distinct streams of its rows when Streams is empty.
	Streams []string
	// Other is written as the trace's "otherData" object (keys sorted),
	// together with schema_version.
	Other map[string]string
}

// WriteTrace writes rows to path as a Chrome/Perfetto Trace Event JSON file
// (see [TraceWriter] for the layout). The write is atomic.
func WriteTrace(path string, rows []TimelineRow, meta TraceMeta) error {
	if len(meta.Streams) == 0 {
		seen := map[string]bool{}
		for i := range rows {
			if s := rows[i].Stream; !seen[s] {
				seen[s] = true
				meta.Streams = append(meta.Streams, s)
			}
		}
		slices.Sort(meta.Streams)
	}
	w, err := NewTraceWriter(path, meta)
	if err != nil {
		return err
	}
	if err := w.Write(rows); err != nil {
		return err
	}
	return w.Close()
}

// TraceWriter streams timeline rows into a Chrome Trace Event Format JSON
// file that ui.perfetto.dev opens:
//
//   - one process per node: pid = node, named "node N", sorted by node;
//   - one thread per (rank, stream): tid = rank·S + s, where S is
//     len(TraceMeta.Streams) and s the stream's position in it, named
//     "rank R STREAM" and sorted by tid, so ranks appear in order and each
//     rank's streams in the TraceMeta.Streams order;
//   - one complete event ("ph":"X") per row, named by the row's name, with
//     cat = kind, ts = start and dur = end − start in microseconds (exact
//     decimal of the integer nanoseconds), and args step, layer, microbatch
//     and chunk (each only when ≥ 0), bytes, flops and group (when not "").
//
// displayTimeUnit is "ns". Metadata events for a process or thread are
// written just before its first slice. Perfetto requires the slices on one
// track to nest; rows of one (rank, stream) must not overlap, which holds
// for simtrain's timelines because a stream runs one op at a time
// ([CheckNoOverlap] checks it). The writer streams through a buffer, so its
// memory does not grow with the number of rows (beyond one entry per node
// and per track, and two ranks' formatted events). Errors abort the file
// like [TimelineWriter]'s.
type TraceWriter struct {
	path     string
	af       *atomicFile
	streams  map[string]int
	names    []string
	rankNode map[int32]int32 // node of each rank seen
	tracks   map[int64]bool  // tids whose metadata is written
	nodes    map[int32]bool  // pids whose metadata is written
	buf      []byte
	events   int64
	err      error

	streamCodes codeCache // streams' lookups cached (codeCache, timeline.go)
	lastRank    rankSeen  // the rank of the row before, checked (Write)
	memo        traceMemo // the events of the rank before, formatted (encoded)
	noMemo      bool      // (tests) format every row
}

// NewTraceWriter starts a trace file at path.
func NewTraceWriter(path string, meta TraceMeta) (*TraceWriter, error) {
	w := &TraceWriter{
		path:     path,
		streams:  make(map[string]int, len(meta.Streams)),
		names:    append([]string(nil), meta.Streams...),
		rankNode: map[int32]int32{},
		tracks:   map[int64]bool{},
		nodes:    map[int32]bool{},
	}
	for i, s := range meta.Streams {
		if _, dup := w.streams[s]; dup {
			return nil, fmt.Errorf("output: TraceMeta.Streams: value %q appears twice", s)
		}
		w.streams[s] = i
	}
	af, err := createAtomic(path)
	if err != nil {
		return nil, err
	}
	w.af = af
	b := append(w.buf[:0], `{"displayTimeUnit":"ns","otherData":{"schema_version":`...)
	b = appendJSONString(b, SchemaVersion)
	keys := make([]string, 0, len(meta.Other))
	for k := range meta.Other {
		if k != MetaSchemaVersion {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		b = append(b, ',')
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = appendJSONString(b, meta.Other[k])
	}
	b = append(b, "},\n\"traceEvents\":["...)
	w.buf = b
	if err := w.emit(); err != nil {
		return nil, w.fail(err)
	}
	return w, nil
}

// Events returns the number of events (metadata included) written so far.
func (w *TraceWriter) Events() int64 { return w.events }

// emit writes w.buf and empties it.
func (w *TraceWriter) emit() error {
	_, err := w.af.w.Write(w.buf)
	w.buf = w.buf[:0]
	if err != nil {
		return fmt.Errorf("output: write %s: %w", w.path, err)
	}
	return nil
}

// event starts the next element of traceEvents.
func (w *TraceWriter) event() {
	if w.events > 0 {
		w.buf = append(w.buf, ',')
	}
	w.buf = append(w.buf, '\n')
	w.events++
}

// Write appends one complete event per row.
func (w *TraceWriter) Write(rows []TimelineRow) error {
	if w.err != nil {
		return w.err
	}
	for i := range rows {
		r := &rows[i]
		c, ok := w.streamCodes.get(r.Stream) // as TimelineWriter: the map only on a miss
		si := int(c)
		if !ok {
			if si, ok = w.streams[r.Stream]; ok {
				w.streamCodes.put(r.Stream, int32(si))
			}
		}
		if !ok {
			return w.fail(fmt.Errorf("output: trace row %q (rank %d): stream %q not in TraceMeta.Streams %q", r.Name, r.Rank, r.Stream, w.names))
		}
		if r.Rank < 0 || r.Node < 0 {
			return w.fail(fmt.Errorf("output: trace row %q: rank %d and node %d must be ≥ 0", r.Name, r.Rank, r.Node))
		}
		if r.EndNs < r.StartNs {
			return w.fail(fmt.Errorf("output: trace row %q (rank %d %s): end_ns %d before start_ns %d", r.Name, r.Rank, r.Stream, r.EndNs, r.StartNs))
		}
		// The rank's node and the metadata of its node and tracks are
		// looked up in the maps at the rank's first row of a run of
		// rows, and the rows after it compare with what that found
		// (lastRank): rows come rank by rank, and the three map lookups
		// a row were ≈ 5% of a pp 16 × tp 16 run's CPU (perf; issue 18,
		// docs/design.md round 57).
		l := &w.lastRank
		if !l.set || r.Rank != l.rank {
			if node, seen := w.rankNode[r.Rank]; !seen {
				w.rankNode[r.Rank] = r.Node
			} else if node != r.Node {
				return w.fail(fmt.Errorf("output: trace row %q: rank %d is on node %d and node %d", r.Name, r.Rank, node, r.Node))
			}
			*l = rankSeen{rank: r.Rank, node: r.Node, set: true}
			w.memo.startRank()
			if !w.nodes[r.Node] {
				w.nodes[r.Node] = true
				pid := int64(r.Node)
				w.metaEvent("process_name", pid, -1, "node "+strconv.FormatInt(pid, 10), -1)
				w.metaEvent("process_sort_index", pid, -1, "", pid)
			}
		} else if r.Node != l.node {
			return w.fail(fmt.Errorf("output: trace row %q: rank %d is on node %d and node %d", r.Name, r.Rank, l.node, r.Node))
		}
		pid := int64(r.Node)
		tid := int64(r.Rank)*int64(len(w.names)) + int64(si)
		if bit := uint64(1) << uint(si); si >= 64 || l.tracks&bit == 0 {
			if !w.tracks[tid] {
				w.tracks[tid] = true
				w.metaEvent("thread_name", pid, tid, "rank "+strconv.FormatInt(int64(r.Rank), 10)+" "+r.Stream, -1)
				w.metaEvent("thread_sort_index", pid, tid, "", tid)
			}
			if si < 64 {
				l.tracks |= bit
			}
		}
		w.event()
		head, tail := w.encoded(r)
		b := append(w.buf, head...)
		b = strconv.AppendInt(b, pid, 10)
		b = append(b, `,"tid":`...)
		b = strconv.AppendInt(b, tid, 10)
		w.buf = append(b, tail...)
		if len(w.buf) >= 64<<10 {
			if err := w.emit(); err != nil {
				return w.fail(err)
			}
		}
	}
	if err := w.emit(); err != nil {
		return w.fail(err)
	}
	return nil
}

// encoded returns row r's complete event as two pieces of JSON, the text
// before its pid's value and the text after its tid's value, for Write to
// put the row's pid and tid between. The rows of one rank come together
// (Timeline writes rank by rank), and in a run on representative ranks
// every rank of a stage repeats its representative's tasks with the same
// times, names and arguments: only pid and tid differ. So the pieces of
// the rank written last (or the latest rank with a row of its own) are
// kept (traceMemo), and a rank whose k-th row equals that rank's k-th row
// in everything the pieces hold takes them as they are, instead of
// formatting its numbers again. Formatting was ≈ 20% of `simtrain run`'s
// CPU on the 405B scenario and ≈ 39% on a pp 16 × tp 16 layout of the 70B
// sweep (perf; issue 18, docs/design.md round 57). The bytes are the same
// either way (TestTraceMemoSameBytes).
func (w *TraceWriter) encoded(r *TimelineRow) (head, tail []byte) {
	m := &w.memo
	if w.noMemo {
		m.next.copyFirst(nil, 0)
		m.next.add(r)
		return m.next.pieces(0)
	}
	k := m.at
	m.at++
	if !m.missed && k < len(m.ref.rows) && sameEvent(&m.ref.rows[k], r) {
		m.hits++
		return m.ref.pieces(k)
	}
	if !m.missed {
		// This rank's rows so far were the reference's: they start the
		// rank's own list, the rows from here on are formatted.
		m.missed = true
		m.next.copyFirst(&m.ref, k)
	}
	m.next.add(r)
	return m.next.pieces(len(m.next.rows) - 1)
}

// rankSeen is the rank of the last row Write wrote (when set), its node,
// and the streams (bit s: TraceMeta.Streams[s], s < 64) whose track has its
// metadata written.
type rankSeen struct {
	rank, node int32
	set        bool
	tracks     uint64
}

// traceMemo is what TraceWriter.encoded keeps: the reference rank's
// events (ref) and, once a row of the rank being written differs from the
// reference's, that rank's own (next).
type traceMemo struct {
	ref, next rankEvents
	at        int   // the rows of the rank being written so far
	missed    bool  // one of them differed from ref's: next holds them all
	hits      int64 // rows that took ref's events (tests)
}

// startRank begins the rows of another rank (Write, at a rank's first row
// of a run of rows): the rank before becomes the reference when it had
// rows of its own.
func (m *traceMemo) startRank() {
	if m.missed {
		m.ref, m.next = m.next, m.ref
	}
	m.at, m.missed = 0, false
}

// rankEvents is one rank's events, each row's JSON before its pid (head)
// and after its tid (tail), one after the other in text.
type rankEvents struct {
	rows []TimelineRow
	ends []eventEnds
	text []byte
}

// eventEnds are where an event's head and tail end in rankEvents.text
// (its head starts where the event before ends).
type eventEnds struct{ head, tail int }

// pieces returns event k's head and tail.
func (e *rankEvents) pieces(k int) (head, tail []byte) {
	start := 0
	if k > 0 {
		start = e.ends[k-1].tail
	}
	c := e.ends[k]
	return e.text[start:c.head], e.text[c.head:c.tail]
}

// copyFirst makes e the first n events of from (none: n = 0, from nil).
func (e *rankEvents) copyFirst(from *rankEvents, n int) {
	if n == 0 {
		e.rows, e.ends, e.text = e.rows[:0], e.ends[:0], e.text[:0]
		return
	}
	e.rows = append(e.rows[:0], from.rows[:n]...)
	e.ends = append(e.ends[:0], from.ends[:n]...)
	e.text = append(e.text[:0], from.text[:from.ends[n-1].tail]...)
}

// add formats row r's event after e's last.
func (e *rankEvents) add(r *TimelineRow) {
	b := append(e.text, `{"name":`...)
	b = appendJSONString(b, r.Name)
	b = append(b, `,"cat":`...)
	b = appendJSONString(b, r.Kind)
	b = append(b, `,"ph":"X","ts":`...)
	b = appendMicros(b, r.StartNs)
	b = append(b, `,"dur":`...)
	b = appendMicros(b, r.EndNs-r.StartNs)
	b = append(b, `,"pid":`...)
	head := len(b)
	b = append(b, `,"args":{"step":`...)
	b = strconv.AppendInt(b, int64(r.Step), 10)
	if r.Layer >= 0 {
		b = append(b, `,"layer":`...)
		b = strconv.AppendInt(b, int64(r.Layer), 10)
	}
	if r.Microbatch >= 0 {
		b = append(b, `,"microbatch":`...)
		b = strconv.AppendInt(b, int64(r.Microbatch), 10)
	}
	if r.Chunk >= 0 {
		b = append(b, `,"chunk":`...)
		b = strconv.AppendInt(b, int64(r.Chunk), 10)
	}
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, r.Bytes, 10)
	b = append(b, `,"flops":`...)
	b = appendJSONFloat(b, r.FLOPs)
	if r.Group != "" {
		b = append(b, `,"group":`...)
		b = appendJSONString(b, r.Group)
	}
	e.text = append(b, "}}"...)
	e.rows = append(e.rows, *r)
	e.ends = append(e.ends, eventEnds{head, len(e.text)})
}

// sameEvent reports whether rows a and b format to the same head and tail
// (rankEvents.add): everything but the rank, node and stream, which only
// the pid and tid show; FLOPs compared by their bits, as they format.
func sameEvent(a, b *TimelineRow) bool {
	return a.StartNs == b.StartNs && a.EndNs == b.EndNs && a.Name == b.Name && a.Kind == b.Kind &&
		a.Step == b.Step && a.Layer == b.Layer && a.Microbatch == b.Microbatch && a.Chunk == b.Chunk &&
		a.Bytes == b.Bytes && math.Float64bits(a.FLOPs) == math.Float64bits(b.FLOPs) && a.Group == b.Group
}

// metaEvent appends a "M" event: a name when name != "", else a sort index.
// tid < 0 means a process event.
func (w *TraceWriter) metaEvent(kind string, pid, tid int64, name string, sortIndex int64) {
	w.event()
	b := append(w.buf, `{"name":"`...)
	b = append(b, kind...)
	b = append(b, `","ph":"M","pid":`...)
	b = strconv.AppendInt(b, pid, 10)
	if tid >= 0 {
		b = append(b, `,"tid":`...)
		b = strconv.AppendInt(b, tid, 10)
	}
	if name != "" {
		b = append(b, `,"args":{"name":`...)
		b = appendJSONString(b, name)
	} else {
		b = append(b, `,"args":{"sort_index":`...)
		b = strconv.AppendInt(b, sortIndex, 10)
	}
	w.buf = append(b, "}}"...)
}

// Close ends the JSON document, syncs the file and renames it to its path.
func (w *TraceWriter) Close() error {
	if w.err != nil {
		if w.err == errClosed {
			return nil
		}
		return w.err
	}
	w.buf = append(w.buf, "\n]}\n"...)
	if err := w.emit(); err != nil {
		return w.fail(err)
	}
	if err := w.af.commit(); err != nil {
		w.err = err
		return err
	}
	w.err = errClosed
	return nil
}

// Abort discards the file; it does nothing after Close or a failed Write.
func (w *TraceWriter) Abort() {
	if w.err == nil {
		w.fail(errors.New("output: write " + w.path + ": aborted"))
	}
}

func (w *TraceWriter) fail(err error) error {
	if w.err == nil {
		w.err = err
		w.af.abort()
	}
	return w.err
}

// appendMicros appends ns nanoseconds as microseconds, exactly: the integer
// part, then up to three decimals without trailing zeros (1500 → "1.5").
func appendMicros(b []byte, ns int64) []byte {
	u := uint64(ns)
	if ns < 0 {
		b = append(b, '-')
		u = -u
	}
	b = strconv.AppendUint(b, u/1000, 10)
	frac := u % 1000
	if frac == 0 {
		return b
	}
	digits := [3]byte{byte('0' + frac/100), byte('0' + frac/10%10), byte('0' + frac%10)}
	n := 3
	for digits[n-1] == '0' {
		n--
	}
	b = append(b, '.')
	return append(b, digits[:n]...)
}

// appendJSONFloat appends f as a JSON number, in the format encoding/json
// uses (plain decimal for 1e-6 ≤ |f| < 1e21, else exponent form). JSON has
// no NaN or infinity; those are written as null.
func appendJSONFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	abs := math.Abs(f)
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		b = strconv.AppendFloat(b, f, 'e', -1, 64)
		// Shorten a two-digit negative exponent: e-07 → e-7.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
		return b
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}

// appendJSONString appends s as a JSON string literal: quotes, backslashes
// and control characters escaped, invalid UTF-8 replaced by U+FFFD. A run
// of bytes that need no escape (printable ASCII: a task's name and kind
// are nothing else) is appended whole rather than byte by byte: the
// encoder took 3.6–4.7% of the 405B run's CPU writing its trace.json's
// names and kinds, 2.2–2.5% so (perf; issue 18, docs/design.md "Speed",
// run46).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && s[j] >= 0x20 && s[j] < utf8.RuneSelf && s[j] != '"' && s[j] != '\\' {
			j++
		}
		b = append(b, s[i:j]...)
		if i = j; i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
