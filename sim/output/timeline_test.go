package output

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func writeTimeline(t *testing.T, w *TimelineWriter, rows []TimelineRow, chunk int) {
	t.Helper()
	for lo := 0; lo < len(rows); lo += chunk {
		if err := w.Write(rows[lo:min(lo+chunk, len(rows))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestTimelineMultiBatchRoundTrip writes 2.3 batches in uneven Write calls
// (so batch boundaries fall inside calls) and reads them back unchanged.
func TestTimelineMultiBatchRoundTrip(t *testing.T) {
	mem := checkedMem(t)
	rows := makeTimeline(2*BatchRows + 20000)
	path := tempPath(t, "timeline.arrow")
	w, err := newTimelineWriter(mem, path, map[string]string{"ranks": "0-3", "run_id": "r"}, testDicts)
	if err != nil {
		t.Fatal(err)
	}
	writeTimeline(t, w, rows, 7777)
	if w.Rows() != int64(len(rows)) {
		t.Errorf("Rows() = %d", w.Rows())
	}
	info, err := readTableInfo(mem, path)
	if err != nil {
		t.Fatal(err)
	}
	// 151,072 rows = 65,536 + 65,536 + 20,000.
	if info.Batches != 3 || info.Rows != int64(len(rows)) {
		t.Errorf("batches %d rows %d", info.Batches, info.Rows)
	}
	if !slices.Equal(info.Columns, TimelineColumns()) {
		t.Errorf("columns %q", info.Columns)
	}
	want := []string{"step", "rank", "node", "stream", "kind", "name", "layer", "microbatch", "chunk", "start_ns", "end_ns", "flops", "bytes", "group"}
	if !slices.Equal(TimelineColumns(), want) {
		t.Errorf("TimelineColumns() = %q, want %q", TimelineColumns(), want)
	}
	if info.Meta["ranks"] != "0-3" || info.Meta["schema_version"] != SchemaVersion {
		t.Errorf("meta %v", info.Meta)
	}
	var got []TimelineRow
	if _, err := readTable(mem, path, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rows) {
		t.Error("timeline round trip differs")
	}
	if names := dirEntries(t, filepath.Dir(path)); !slices.Equal(names, []string{"timeline.arrow"}) {
		t.Errorf("directory holds %v", names)
	}
}

// TestTimelineMatchesWriteTable: the streaming writer and WriteTable give
// the same schema and, with the same dictionary order, byte-identical files.
func TestTimelineMatchesWriteTable(t *testing.T) {
	rows := makeTimeline(1000)
	dir := t.TempDir()
	// WriteTable sorts each dictionary; give the writer the sorted lists.
	sorted := TimelineDicts{
		Stream: []string{"compute", "dp", "tp"},
		Kind:   []string{"all_reduce", "gemm", "reduce_scatter"},
		Group:  []string{"", "dp", "tp"},
	}
	w, err := NewTimelineWriter(dir+"/a.arrow", map[string]string{"k": "v"}, sorted)
	if err != nil {
		t.Fatal(err)
	}
	writeTimeline(t, w, rows, 300)
	if err := WriteTable(dir+"/b.arrow", rows, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(dir + "/a.arrow")
	b, _ := os.ReadFile(dir + "/b.arrow")
	if !bytes.Equal(a, b) {
		t.Errorf("TimelineWriter and WriteTable files differ (%d vs %d bytes)", len(a), len(b))
	}
}

// TestTimelineMatchesWriteTableByWriteSize: the file is WriteTable's
// whatever rows each Write brings, a first Write of a whole batch or more
// (the column buffers then mapped ahead, allocBatch) included, and
// TimelineRows gives an empty slice with room for n rows.
func TestTimelineMatchesWriteTableByWriteSize(t *testing.T) {
	rows := makeTimeline(BatchRows + 1000)
	sorted := TimelineDicts{
		Stream: []string{"compute", "dp", "tp"},
		Kind:   []string{"all_reduce", "gemm", "reduce_scatter"},
		Group:  []string{"", "dp", "tp"},
	}
	dir := t.TempDir()
	if err := WriteTable(dir+"/want.arrow", rows, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(dir + "/want.arrow")
	for _, chunk := range []int{300, BatchRows - 1, BatchRows, len(rows)} {
		w, err := NewTimelineWriter(dir+"/got.arrow", map[string]string{"k": "v"}, sorted)
		if err != nil {
			t.Fatal(err)
		}
		buf := TimelineRows(chunk)
		if len(buf) != 0 || cap(buf) != chunk {
			t.Fatalf("TimelineRows(%d): len %d cap %d", chunk, len(buf), cap(buf))
		}
		for lo := 0; lo < len(rows); lo += chunk {
			buf = append(buf[:0], rows[lo:min(lo+chunk, len(rows))]...)
			if err := w.Write(buf); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(dir + "/got.arrow"); !bytes.Equal(got, want) {
			t.Errorf("writes of %d rows: file differs from WriteTable's (%d vs %d bytes)", chunk, len(got), len(want))
		}
	}
}

func TestTimelineDeterministic(t *testing.T) {
	rows := makeTimeline(BatchRows + 5)
	var files [2][]byte
	for i := range files {
		path := tempPath(t, "t.arrow")
		w, err := NewTimelineWriter(path, map[string]string{"b": "1", "a": "2"}, testDicts)
		if err != nil {
			t.Fatal(err)
		}
		writeTimeline(t, w, rows, 1000+i*999) // different call sizes, same file
		files[i], _ = os.ReadFile(path)
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Error("same rows gave different files")
	}
}

func TestTimelineEmpty(t *testing.T) {
	mem := checkedMem(t)
	path := tempPath(t, "t.arrow")
	w, err := newTimelineWriter(mem, path, nil, testDicts)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	info, err := readTableInfo(mem, path)
	if err != nil || info.Rows != 0 || len(info.Columns) != 14 {
		t.Errorf("empty timeline: %v %+v", err, info)
	}
}

// TestTimelineUnknownDictValue: a row outside the fixed dictionaries fails
// the write, names the value and the valid ones, and leaves nothing behind.
func TestTimelineUnknownDictValue(t *testing.T) {
	for _, tc := range []struct {
		mutate func(*TimelineRow)
		want   string
	}{
		{func(r *TimelineRow) { r.Stream = "pp" }, `output: timeline row 70000: stream "pp" not in TimelineDicts.Stream ["compute" "tp" "dp"]`},
		{func(r *TimelineRow) { r.Kind = "send" }, `kind "send" not in TimelineDicts.Kind`},
		{func(r *TimelineRow) { r.Group = "ep" }, `group "ep" not in TimelineDicts.Group ["tp" "dp" ""]`},
	} {
		mem := checkedMem(t)
		dir := t.TempDir()
		w, err := newTimelineWriter(mem, dir+"/t.arrow", nil, testDicts)
		if err != nil {
			t.Fatal(err)
		}
		rows := makeTimeline(70001) // the bad row comes after one flushed batch
		tc.mutate(&rows[70000])
		err = w.Write(rows)
		if err == nil || err.Error() != tc.want && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
		if err2 := w.Write(rows[:1]); err2 != err {
			t.Errorf("later Write: %v, want the first error", err2)
		}
		if err2 := w.Close(); err2 != err {
			t.Errorf("Close: %v, want the first error", err2)
		}
		w.Abort()
		if names := dirEntries(t, dir); len(names) != 0 {
			t.Errorf("left %v", names)
		}
	}
}

func TestTimelineAbortAndClose(t *testing.T) {
	mem := checkedMem(t)
	dir := t.TempDir()
	w, err := newTimelineWriter(mem, dir+"/t.arrow", nil, testDicts)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(makeTimeline(BatchRows + 1)); err != nil {
		t.Fatal(err)
	}
	w.Abort()
	w.Abort()
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "aborted") {
		t.Errorf("Close after Abort: %v", err)
	}
	if names := dirEntries(t, dir); len(names) != 0 {
		t.Errorf("Abort left %v", names)
	}

	w, err = newTimelineWriter(mem, dir+"/t.arrow", nil, testDicts)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	w.Abort() // after Close: keeps the file
	if err := w.Write(makeTimeline(1)); err != errClosed {
		t.Errorf("Write after Close: %v", err)
	}
	if names := dirEntries(t, dir); !slices.Equal(names, []string{"t.arrow"}) {
		t.Errorf("directory holds %v", names)
	}
}

func TestTimelineBadDicts(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		d    TimelineDicts
		want string
	}{
		{TimelineDicts{Stream: []string{"compute", "compute"}}, `output: TimelineDicts.Stream: value "compute" appears twice`},
		{TimelineDicts{Group: []string{"", "tp", ""}}, `output: TimelineDicts.Group: value "" appears twice`},
		{TimelineDicts{Kind: []string{"\xff"}}, `output: TimelineDicts.Kind: value "\xff" is not valid UTF-8`},
	} {
		_, err := NewTimelineWriter(dir+"/t.arrow", nil, tc.d)
		if err == nil || err.Error() != tc.want {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
	if names := dirEntries(t, dir); len(names) != 0 {
		t.Errorf("left %v", names)
	}
}

// TestTimelineBoundedMemory writes 1M rows through a checked allocator: the
// Arrow memory live at any time is one batch's dictionaries and encoder
// scratch, independent of the row count. (Go-side buffers are one batch of
// column slices, reused.)
func TestTimelineBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 1M rows")
	}
	mem := checkedMem(t)
	w, err := newTimelineWriter(mem, tempPath(t, "t.arrow"), nil, testDicts)
	if err != nil {
		t.Fatal(err)
	}
	rows := makeTimeline(BatchRows)
	peak := 0
	for range 16 {
		if err := w.Write(rows); err != nil {
			t.Fatal(err)
		}
		peak = max(peak, mem.CurrentAlloc())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// The live Arrow memory is the three small dictionaries: well under 1 KiB.
	if peak > 4096 {
		t.Errorf("live Arrow memory %d bytes while streaming", peak)
	}
}

// BenchmarkTimelineWriter measures rows/s of the streaming writer, file
// sync and rename included.
func BenchmarkTimelineWriter(b *testing.B) {
	rows := makeTimeline(BatchRows)
	dir := b.TempDir()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w, err := NewTimelineWriter(dir+"/t.arrow", nil, testDicts)
		if err != nil {
			b.Fatal(err)
		}
		for range 16 { // 1,048,576 rows per op
			if err := w.Write(rows); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(16*BatchRows*b.N)/b.Elapsed().Seconds(), "rows/s")
}

// TestCodeCache: a hit only for the very bytes put (same address and
// length), the empty string apart, and a later put in the same slot
// replacing the earlier one.
func TestCodeCache(t *testing.T) {
	var c codeCache
	base := strings.Repeat("gemm-tp", 3) // heap bytes: substrings share them
	a, b := base[:4], base[:7]           // same address, other lengths
	same := strings.Clone(a)             // same bytes elsewhere
	if _, ok := c.get(""); ok {
		t.Fatal("empty cache hit on the empty string")
	}
	c.put(a, 3)
	c.put("", 5)
	for _, tc := range []struct {
		s    string
		want int32
		ok   bool
	}{
		{a, 3, true},
		{b, 0, false},
		{same, 0, false},
		{"", 5, true},
		{base[1:4], 0, false},
	} {
		if i, ok := c.get(tc.s); ok != tc.ok || (ok && i != tc.want) {
			t.Errorf("get(%q) = %d, %v; want %d, %v", tc.s, i, ok, tc.want, tc.ok)
		}
	}
	c.put(b, 9) // a's slot: b replaces a
	if i, ok := c.get(b); !ok || i != 9 {
		t.Errorf("get(b) = %d, %v after put", i, ok)
	}
	if _, ok := c.get(a); ok {
		t.Error("a still hits after b took its slot")
	}
}
