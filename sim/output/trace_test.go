package output

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// tinyTrace is two ranks on two nodes with a compute and a tp stream. The
// expected events are derived by hand in TestTraceEvents.
func tinyTrace() []TimelineRow {
	return []TimelineRow{
		{Step: 0, Rank: 0, Node: 0, Stream: "compute", Kind: "gemm", Name: "fwd attn", Layer: 0, Microbatch: 0, Chunk: -1, StartNs: 0, EndNs: 1500, FLOPs: 2e12, Bytes: 1 << 20},
		{Step: 0, Rank: 0, Node: 0, Stream: "tp", Kind: "all_reduce", Name: "tp ar", Layer: 0, Microbatch: 0, Chunk: -1, StartNs: 1500, EndNs: 2750, Bytes: 8 << 20, Group: "tp"},
		{Step: 0, Rank: 1, Node: 1, Stream: "compute", Kind: "gemm", Name: `say "hi"\`, Layer: -1, Microbatch: -1, Chunk: 2, StartNs: 1, EndNs: 1, FLOPs: 0.5},
		{Step: 1, Rank: 0, Node: 0, Stream: "compute", Kind: "optimizer", Name: "adam", Layer: -1, Microbatch: -1, Chunk: -1, StartNs: 3_000_000_123, EndNs: 3_000_001_000, Bytes: 1e18},
	}
}

type traceFile struct {
	DisplayTimeUnit string            `json:"displayTimeUnit"`
	OtherData       map[string]string `json:"otherData"`
	TraceEvents     []traceEvent      `json:"traceEvents"`
}

type traceEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  float64        `json:"dur"`
	Pid  int64          `json:"pid"`
	Tid  *int64         `json:"tid"`
	Args map[string]any `json:"args"`
}

func readTrace(t *testing.T, path string) traceFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return readTraceBytes(t, b)
}

// readTraceBytes decodes a trace file's bytes, as readTrace.
func readTraceBytes(t *testing.T, b []byte) traceFile {
	t.Helper()
	var tf traceFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&tf); err != nil {
		t.Fatalf("trace is not valid JSON: %v", err)
	}
	return tf
}

func TestTraceEvents(t *testing.T) {
	path := tempPath(t, "trace.json")
	meta := TraceMeta{Streams: []string{"compute", "tp"}, Other: map[string]string{"scenario": "tiny", "schema_version": "x"}}
	if err := WriteTrace(path, tinyTrace(), meta); err != nil {
		t.Fatal(err)
	}
	tf := readTrace(t, path)
	if tf.DisplayTimeUnit != "ns" || tf.OtherData["scenario"] != "tiny" || tf.OtherData["schema_version"] != SchemaVersion {
		t.Errorf("header %q %v", tf.DisplayTimeUnit, tf.OtherData)
	}
	var slices []traceEvent
	meta2 := map[string]any{}
	for _, e := range tf.TraceEvents {
		switch e.Ph {
		case "X":
			slices = append(slices, e)
		case "M":
			key := e.Name + " pid " + itoa64(e.Pid)
			if e.Tid != nil {
				key += " tid " + itoa64(*e.Tid)
			}
			for _, v := range e.Args {
				meta2[key] = v
			}
		default:
			t.Errorf("unexpected phase %q", e.Ph)
		}
	}
	// S = 2 streams, so tid = 2·rank + stream position: rank 0 compute → 0,
	// rank 0 tp → 1, rank 1 compute → 2. pid = node.
	wantMeta := map[string]any{
		"process_name pid 0":            "node 0",
		"process_sort_index pid 0":      0.0,
		"process_name pid 1":            "node 1",
		"process_sort_index pid 1":      1.0,
		"thread_name pid 0 tid 0":       "rank 0 compute",
		"thread_sort_index pid 0 tid 0": 0.0,
		"thread_name pid 0 tid 1":       "rank 0 tp",
		"thread_sort_index pid 0 tid 1": 1.0,
		"thread_name pid 1 tid 2":       "rank 1 compute",
		"thread_sort_index pid 1 tid 2": 2.0,
	}
	if len(meta2) != len(wantMeta) {
		t.Errorf("metadata events %v", meta2)
	}
	for k, v := range wantMeta {
		if meta2[k] != v {
			t.Errorf("%s = %v, want %v", k, meta2[k], v)
		}
	}
	// ts/dur are µs: 1500 ns → 1.5 µs; 2750−1500 = 1250 ns → 1.25 µs;
	// 3,000,000,123 ns → 3,000,000.123 µs; 1000−123 = 877 ns → 0.877 µs.
	type want struct {
		name, cat string
		ts, dur   float64
		pid, tid  int64
		args      map[string]any
	}
	wants := []want{
		{"fwd attn", "gemm", 0, 1.5, 0, 0, map[string]any{"step": 0.0, "layer": 0.0, "microbatch": 0.0, "bytes": 1048576.0, "flops": 2e12}},
		{"tp ar", "all_reduce", 1.5, 1.25, 0, 1, map[string]any{"step": 0.0, "layer": 0.0, "microbatch": 0.0, "bytes": 8388608.0, "flops": 0.0, "group": "tp"}},
		{`say "hi"\`, "gemm", 0.001, 0, 1, 2, map[string]any{"step": 0.0, "chunk": 2.0, "bytes": 0.0, "flops": 0.5}},
		{"adam", "optimizer", 3000000.123, 0.877, 0, 0, map[string]any{"step": 1.0, "bytes": 1e18, "flops": 0.0}},
	}
	if len(slices) != len(wants) {
		t.Fatalf("%d slices, want %d", len(slices), len(wants))
	}
	for i, w := range wants {
		e := slices[i]
		if e.Name != w.name || e.Cat != w.cat || e.Ts != w.ts || e.Dur != w.dur || e.Pid != w.pid || e.Tid == nil || *e.Tid != w.tid {
			t.Errorf("slice %d: %+v tid %v, want %+v", i, e, *e.Tid, w)
		}
		if len(e.Args) != len(w.args) {
			t.Errorf("slice %d args %v, want %v", i, e.Args, w.args)
		}
		for k, v := range w.args {
			if e.Args[k] != v {
				t.Errorf("slice %d arg %s = %v, want %v", i, k, e.Args[k], v)
			}
		}
	}
}

func itoa64(i int64) string { b, _ := json.Marshal(i); return string(b) }

// TestTraceGolden pins the exact bytes of a tiny trace; run with -update
// after an intended format change and review the diff.
func TestTraceGolden(t *testing.T) {
	path := tempPath(t, "trace.json")
	meta := TraceMeta{Streams: []string{"compute", "tp"}, Other: map[string]string{"scenario": "tiny", "run_id": "00000000-0000-5000-8000-000000000000"}}
	if err := WriteTrace(path, tinyTrace(), meta); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "tiny_trace.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestTraceGolden -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("trace differs from %s (run with -update if intended):\n%s", golden, got)
	}
}

// TestTraceDerivedStreams: without TraceMeta.Streams, WriteTrace orders a
// rank's streams by name.
func TestTraceDerivedStreams(t *testing.T) {
	rows := []TimelineRow{
		{Rank: 0, Stream: "tp", Name: "a", EndNs: 1},
		{Rank: 0, Stream: "compute", Name: "b", EndNs: 1},
		{Rank: 0, Stream: "dp", Name: "c", EndNs: 1},
	}
	path := tempPath(t, "t.json")
	if err := WriteTrace(path, rows, TraceMeta{}); err != nil {
		t.Fatal(err)
	}
	// sorted streams: compute 0, dp 1, tp 2.
	got := map[string]int64{}
	for _, e := range readTrace(t, path).TraceEvents {
		if e.Ph == "X" {
			got[e.Name] = *e.Tid
		}
	}
	if got["b"] != 0 || got["c"] != 1 || got["a"] != 2 {
		t.Errorf("tids %v", got)
	}
}

func TestTraceWriterStreaming(t *testing.T) {
	rows := makeTimeline(50000)
	path := tempPath(t, "t.json")
	w, err := NewTraceWriter(path, TraceMeta{Streams: testDicts.Stream})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	for lo := 0; lo < len(rows); lo += 999 {
		if err := w.Write(rows[lo:min(lo+999, len(rows))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// 4 ranks × 3 streams = 12 threads (2 events each), 2 nodes (2 each).
	if want := int64(len(rows) + 12*2 + 2*2); w.Events() != want {
		t.Errorf("Events() = %d, want %d", w.Events(), want)
	}
	tf := readTrace(t, path)
	if int64(len(tf.TraceEvents)) != w.Events() {
		t.Errorf("file has %d events", len(tf.TraceEvents))
	}
}

func TestTraceErrors(t *testing.T) {
	ok := TimelineRow{Rank: 1, Node: 0, Stream: "compute", Name: "x", StartNs: 5, EndNs: 9}
	tests := []struct {
		rows []TimelineRow
		want string
	}{
		{[]TimelineRow{{Stream: "pp", Name: "x"}}, `output: trace row "x" (rank 0): stream "pp" not in TraceMeta.Streams ["compute" "tp"]`},
		{[]TimelineRow{{Rank: -1, Stream: "tp", Name: "x"}}, `output: trace row "x": rank -1 and node 0 must be ≥ 0`},
		{[]TimelineRow{{Stream: "tp", Name: "x", StartNs: 5, EndNs: 4}}, `output: trace row "x" (rank 0 tp): end_ns 4 before start_ns 5`},
		{[]TimelineRow{ok, {Rank: 1, Node: 3, Stream: "tp", Name: "y"}}, `output: trace row "y": rank 1 is on node 0 and node 3`},
	}
	for _, tc := range tests {
		dir := t.TempDir()
		err := WriteTrace(dir+"/t.json", tc.rows, TraceMeta{Streams: []string{"compute", "tp"}})
		if err == nil || err.Error() != tc.want {
			t.Errorf("error %v, want %q", err, tc.want)
		}
		if names := dirEntries(t, dir); len(names) != 0 {
			t.Errorf("left %v", names)
		}
	}
	_, err := NewTraceWriter(t.TempDir()+"/t.json", TraceMeta{Streams: []string{"a", "a"}})
	if err == nil || err.Error() != `output: TraceMeta.Streams: value "a" appears twice` {
		t.Errorf("duplicate streams: %v", err)
	}
}

func TestAppendMicros(t *testing.T) {
	for _, tc := range []struct {
		ns   int64
		want string
	}{
		{0, "0"}, {1, "0.001"}, {10, "0.01"}, {100, "0.1"}, {999, "0.999"},
		{1000, "1"}, {1500, "1.5"}, {1234567, "1234.567"}, {-1500, "-1.5"},
		{math.MaxInt64, "9223372036854775.807"}, {math.MinInt64, "-9223372036854775.808"},
	} {
		if got := string(appendMicros(nil, tc.ns)); got != tc.want {
			t.Errorf("appendMicros(%d) = %s, want %s", tc.ns, got, tc.want)
		}
	}
}

// appendJSONStringByUnit is appendJSONString one character at a time:
// each rune (or invalid byte) of s encoded alone, its quotes dropped, the
// way the encoder worked before runs of plain bytes were appended whole.
// TestAppendJSON checks each character's escape against encoding/json;
// this reference checks that the runs change no byte.
func appendJSONStringByUnit(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		_, size := utf8.DecodeRuneInString(s[i:])
		one := appendJSONString(nil, s[i:i+size])
		b = append(b, one[1:len(one)-1]...)
		i += size
	}
	return append(b, '"')
}

// TestAppendJSONStringEqualsByUnit: the same bytes as the encoder one
// character at a time for plain strings, escapes at the start, middle and end, runs
// between them, multi-byte and invalid UTF-8, after a non-empty prefix.
func TestAppendJSONStringEqualsByUnit(t *testing.T) {
	for _, s := range []string{"", "a", "layer 12 fwd gemm", `"`, `\`, `a"b`, `ab\`, `"ab`,
		"x\ny\tz\r", "\x00", "a\x1fb", "\x7f", "ünï €x", "x\xff", "\xffx", "a\xe2\x82b",
		"\u2028 line", strings.Repeat("name-", 40) + `"` + strings.Repeat("k", 33)} {
		got := appendJSONString([]byte("pre,"), s)
		if want := appendJSONStringByUnit([]byte("pre,"), s); !bytes.Equal(got, want) {
			t.Errorf("appendJSONString(%q) = %s, one character at a time %s", s, got, want)
		}
	}
}

// TestAppendJSON checks the hand-written encoders against encoding/json.
func TestAppendJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\s`, "tab\tnl\ncr\r", "\x00\x01\x1f\x7f", "ünï €", "bad\xffutf8", "\u2028"} {
		got := appendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Errorf("%q encodes to invalid JSON %s: %v", s, got, err)
		}
		if want := strings.ToValidUTF8(s, "\uFFFD"); back != want {
			t.Errorf("%q round-trips to %q", s, back)
		}
	}
	for _, f := range []float64{0, 1, -2.5, 1 << 20, 1e20, 1e21, 1e-6, 1e-7, 123456.789, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		want, _ := json.Marshal(f)
		if got := appendJSONFloat(nil, f); string(got) != string(want) {
			t.Errorf("appendJSONFloat(%g) = %s, encoding/json %s", f, got, want)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if got := string(appendJSONFloat(nil, f)); got != "null" {
			t.Errorf("appendJSONFloat(%g) = %s", f, got)
		}
	}
}

func BenchmarkTraceWriter(b *testing.B) {
	rows := makeTimeline(BatchRows)
	dir := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		if err := WriteTrace(dir+"/t.json", rows, TraceMeta{Streams: testDicts.Stream}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(BatchRows*b.N)/b.Elapsed().Seconds(), "rows/s")
}

// memoRows is a timeline as a run on representative ranks writes it, rank
// by rank, and the rows TraceWriter.encoded takes from the rank before
// (hits), counted by hand in the comments: ranks of stage 0's tasks, of
// stage 1's, one task's end moved, two tasks more, −0 and NaN FLOPs, and
// each field the events show changed alone in one row.
func memoRows() (rows []TimelineRow, hits int64) {
	stage := func(s int) []TimelineRow {
		var rows []TimelineRow
		t := int64(1000 * s)
		for i := range 40 {
			stream := []string{"compute", "tp", "dp"}[i%3]
			dur := int64(1000 + (i*37+s*11)%1999)
			layer, micro := int32(i/4), int32(i%3)
			if i%7 == 0 {
				layer = -1
			}
			rows = append(rows, TimelineRow{Step: 0, Stream: stream, Kind: map[string]string{"compute": "gemm", "tp": "all_reduce", "dp": "reduce_scatter"}[stream],
				Name: fmt.Sprintf("op%d_%d", s, i%9), Layer: layer, Microbatch: micro, Chunk: -1, StartNs: t, EndNs: t + dur,
				FLOPs: float64(i) * 1.5e9, Bytes: int64(i) * 4096, Group: map[string]string{"compute": "", "tp": "tp", "dp": "dp"}[stream]})
			t += dur + int64(i%3)
		}
		return rows
	}
	rank := 0
	add := func(rs []TimelineRow, at int, edit func(r *TimelineRow)) {
		for k, r := range rs {
			r.Rank, r.Node = int32(rank), int32(rank/4)
			if k == at {
				edit(&r)
			}
			rows = append(rows, r)
		}
		rank++
	}
	s0, s1 := stage(0), stage(1)
	for range 4 {
		add(s0, -1, nil) // the first formatted, then 3 × 40 hits
	}
	add(s1, -1, nil)                                                    // 0: stage 1's first
	add(s1, 3, func(r *TimelineRow) { r.EndNs++ })                      // 3, then its own
	add(append(s1[:40:40], stage(2)[:2]...), -1, nil)                   // 3 (the one before's fourth differs)
	add(s1, -1, nil)                                                    // 40 (a shorter rank)
	add(append(s1[:40:40], stage(2)[:2]...), -1, nil)                   // 42
	add(s0, -1, nil)                                                    // 0
	add(s0, 0, func(r *TimelineRow) { r.FLOPs = math.Copysign(0, -1) }) // 0: −0 formats as -0
	add(s0, -1, nil)                                                    // 0
	add(s0, 5, func(r *TimelineRow) { r.FLOPs = math.NaN() })           // 5
	add(s0, 5, func(r *TimelineRow) { r.FLOPs = math.NaN() })           // 40: NaN as NaN
	add(s0, -1, nil)                                                    // 5
	hits = 120 + 3 + 3 + 40 + 42 + 5 + 40 + 5
	// Each field alone, in row k = 1 … 10 of a rank, then a rank as
	// stage 0's again: k hits each.
	for i, edit := range []func(r *TimelineRow){
		func(r *TimelineRow) { r.StartNs-- },
		func(r *TimelineRow) { r.Name += "x" },
		func(r *TimelineRow) { r.Kind = "send" },
		func(r *TimelineRow) { r.Step = 1 },
		func(r *TimelineRow) { r.Layer = 31 },
		func(r *TimelineRow) { r.Microbatch = 7 },
		func(r *TimelineRow) { r.Chunk = 1 },
		func(r *TimelineRow) { r.Bytes++ },
		func(r *TimelineRow) { r.FLOPs *= 2 },
		func(r *TimelineRow) { r.Group = "pp" },
	} {
		add(s0, i+1, edit)
		add(s0, -1, nil)
		hits += 2 * int64(i+1)
	}
	// Rank 0 again, after the others: its node and tracks have their
	// metadata already; its 3 rows are the rank before's first 3.
	rank = 0
	add(s0[:3], -1, nil)
	hits += 3
	return rows, hits
}

// TestTraceMemoSameBytes: a trace written with the rank before's events
// reused (TraceWriter.encoded) is byte for byte the trace with every row
// formatted, whatever the batches' boundaries, and reuses exactly the rows
// memoRows counts.
func TestTraceMemoSameBytes(t *testing.T) {
	rows, hits := memoRows()
	write := func(noMemo bool, batch int) ([]byte, int64) {
		path := tempPath(t, "t.json")
		w, err := NewTraceWriter(path, TraceMeta{Streams: testDicts.Stream, Other: map[string]string{"k": "v"}})
		if err != nil {
			t.Fatal(err)
		}
		w.noMemo = noMemo
		for lo := 0; lo < len(rows); lo += batch {
			if err := w.Write(rows[lo:min(lo+batch, len(rows))]); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b, w.memo.hits
	}
	// Two metadata events per node and per (rank, stream) track, each
	// written once (the rank-by-rank lookups, rankSeen, must not repeat
	// them when a rank comes back).
	nodes, tracks := map[int32]bool{}, map[[2]any]bool{}
	for _, r := range rows {
		nodes[r.Node] = true
		tracks[[2]any{r.Rank, r.Stream}] = true
	}
	events := int64(len(rows) + 2*len(nodes) + 2*len(tracks))
	want, _ := write(true, len(rows))
	if n := int64(len(readTraceBytes(t, want).TraceEvents)); n != events {
		t.Errorf("the trace has %d events, want %d rows + 2 × %d nodes + 2 × %d tracks", n, len(rows), len(nodes), len(tracks))
	}
	for _, batch := range []int{len(rows), 1, 7, 40, 41} {
		got, n := write(false, batch)
		if !bytes.Equal(got, want) {
			i := 0
			for i < min(len(got), len(want)) && got[i] == want[i] {
				i++
			}
			t.Errorf("batches of %d: the trace differs from every row formatted at byte %d: %q against %q", batch, i,
				got[max(0, i-80):min(len(got), i+80)], want[max(0, i-80):min(len(want), i+80)])
		}
		if n != hits {
			t.Errorf("batches of %d: %d rows took the rank before's events, want %d", batch, n, hits)
		}
	}
}

// BenchmarkTraceWriterRanks: a timeline as a run on representative ranks
// writes it, rank by rank, eight ranks repeating one rank's tasks (a
// tensor-parallel group of eight), where each rank after the first takes
// its events from the one before (TraceWriter.encoded); BenchmarkTraceWriter's
// rows interleave four ranks, so none does.
func BenchmarkTraceWriterRanks(b *testing.B) {
	one := makeTimeline(BatchRows / 8)
	rows := make([]TimelineRow, 0, len(one)*8)
	for rank := range 8 {
		for _, r := range one {
			r.Rank, r.Node = int32(rank), 0
			rows = append(rows, r)
		}
	}
	dir := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		if err := WriteTrace(dir+"/t.json", rows, TraceMeta{Streams: testDicts.Stream}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(rows)*b.N)/b.Elapsed().Seconds(), "rows/s")
}
