package output

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// failBeforeRename makes every atomic write fail after its temporary file is
// complete, as a full disk or a failing fsync would, and checks that the
// temporary file existed at that point.
func failBeforeRename(t *testing.T) {
	t.Helper()
	testHookBeforeRename = func(tmp string) error {
		if _, err := os.Stat(tmp); err != nil {
			t.Errorf("temporary file missing before rename: %v", err)
		}
		if !strings.Contains(filepath.Base(tmp), ".tmp-") {
			t.Errorf("temporary name %s", tmp)
		}
		return errors.New("disk full")
	}
	t.Cleanup(func() { testHookBeforeRename = nil })
}

// TestAtomicWriteFailureLeavesNothing: every writer, failing at the last
// moment, leaves no file and no temporary; a previous complete file at the
// path is kept as it was.
func TestAtomicWriteFailureLeavesNothing(t *testing.T) {
	writers := map[string]func(path string) error{
		"WriteTable":   func(p string) error { return WriteTable(p, makeRows[MemoryRow](3), nil) },
		"WriteParquet": func(p string) error { return WriteParquet(p, makeRows[MemoryRow](3), nil) },
		"WriteTrace":   func(p string) error { return WriteTrace(p, makeTimeline(10), TraceMeta{}) },
		"TimelineWriter": func(p string) error {
			w, err := NewTimelineWriter(p, nil, testDicts)
			if err != nil {
				return err
			}
			defer w.Abort()
			if err := w.Write(makeTimeline(10)); err != nil {
				return err
			}
			return w.Close()
		},
	}
	names := make([]string, 0, len(writers))
	for n := range writers {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			failBeforeRename(t)
			dir := t.TempDir()
			fresh := filepath.Join(dir, "fresh")
			if err := writers[name](fresh); err == nil || !strings.Contains(err.Error(), "disk full") {
				t.Errorf("error %v, want disk full", err)
			}
			old := filepath.Join(dir, "old")
			os.WriteFile(old, []byte("previous"), 0o644)
			if err := writers[name](old); err == nil {
				t.Error("no error")
			}
			if got := dirEntries(t, dir); !slices.Equal(got, []string{"old"}) {
				t.Errorf("directory holds %v, want only the previous file", got)
			}
			if b, _ := os.ReadFile(old); string(b) != "previous" {
				t.Errorf("previous file changed to %q", b)
			}
		})
	}
}

func TestAtomicWriteBadPath(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"", filepath.Join(dir, "no", "such", "dir", "x.arrow")} {
		if err := WriteTable(p, makeRows[MemoryRow](1), nil); err == nil {
			t.Errorf("WriteTable(%q): no error", p)
		}
		if err := WriteTrace(p, nil, TraceMeta{}); err == nil {
			t.Errorf("WriteTrace(%q): no error", p)
		}
		if _, err := NewTimelineWriter(p, nil, testDicts); err == nil {
			t.Errorf("NewTimelineWriter(%q): no error", p)
		}
	}
	if got := dirEntries(t, dir); len(got) != 0 {
		t.Errorf("left %v", got)
	}
}

// TestAtomicReplace: a successful write replaces a previous file.
func TestAtomicReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.arrow")
	os.WriteFile(path, []byte("old"), 0o644)
	if err := WriteTable(path, makeRows[MemoryRow](2), nil); err != nil {
		t.Fatal(err)
	}
	var got []MemoryRow
	if _, err := ReadTable(path, &got); err != nil || len(got) != 2 {
		t.Errorf("read back: %v, %d rows", err, len(got))
	}
	if names := dirEntries(t, dir); !slices.Equal(names, []string{"m.arrow"}) {
		t.Errorf("directory holds %v", names)
	}
}

// failWriter fails every write after the first ok bytes.
type failWriter struct{ ok int }

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.ok {
		n := w.ok
		w.ok = 0
		return n, errors.New("disk full")
	}
	w.ok -= len(p)
	return len(p), nil
}

// TestHashingWriterEqualsMultiWriter: the file gets the same bytes and the
// hash the same digest as through io.MultiWriter, for writes below and above
// the size hashed on a goroutine of its own, in any mix; a failing file
// write returns the file's count and error.
func TestHashingWriterEqualsMultiWriter(t *testing.T) {
	data := make([]byte, 5*parallelHashMin+123)
	for i := range data {
		data[i] = byte(i*131 + i>>9)
	}
	for _, sizes := range [][]int{
		{len(data)},
		{1, parallelHashMin - 1, parallelHashMin, parallelHashMin + 1, 7},
		{3 * parallelHashMin, 10, 2 * parallelHashMin},
		{parallelHashMin / 2, parallelHashMin / 2},
	} {
		var gotF, wantF bytes.Buffer
		gotH, wantH := sha256.New(), sha256.New()
		hw, mw := &hashingWriter{f: &gotF, h: gotH}, io.MultiWriter(&wantF, wantH)
		off := 0
		for _, n := range sizes {
			n = min(n, len(data)-off)
			p := data[off : off+n]
			off += n
			if k, err := hw.Write(p); k != n || err != nil {
				t.Fatalf("sizes %v: Write(%d bytes) = %d, %v", sizes, n, k, err)
			}
			mw.Write(p)
		}
		if !bytes.Equal(gotF.Bytes(), wantF.Bytes()) || !bytes.Equal(gotH.Sum(nil), wantH.Sum(nil)) {
			t.Errorf("sizes %v: bytes or digest differ from io.MultiWriter's", sizes)
		}
	}
	for _, n := range []int{10, 2 * parallelHashMin} {
		w := &hashingWriter{f: &failWriter{ok: 5}, h: sha256.New()}
		if k, err := w.Write(data[:n]); k != 5 || err == nil {
			t.Errorf("failing write of %d bytes: %d, %v; want 5 and an error", n, k, err)
		}
	}
}

// BenchmarkHashingWriter writes and hashes a sweep summary's ≈ 1 MB as the
// atomic writer's buffer flushes it: "multi" through io.MultiWriter (the
// file's write, then the hash), "parallel" through hashingWriter.
func BenchmarkHashingWriter(b *testing.B) {
	p := make([]byte, 946378)
	for i := range p {
		p[i] = byte(i * 7)
	}
	for _, mode := range []string{"multi", "parallel"} {
		b.Run(mode, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "x")
			for b.Loop() {
				f, err := os.Create(path)
				if err != nil {
					b.Fatal(err)
				}
				h := sha256.New()
				var w io.Writer = io.MultiWriter(f, h)
				if mode == "parallel" {
					w = &hashingWriter{f: f, h: h}
				}
				if _, err := w.Write(p); err != nil {
					b.Fatal(err)
				}
				h.Sum(nil)
				f.Close()
			}
		})
	}
}

// TestPooledBufferStartsClean: a file written through a pooled writer
// (newBuffered) holds exactly its own bytes, after an earlier file was
// aborted with bytes still buffered and after one committed; the writers
// handed back are reused (the pool hands out one of them again).
func TestPooledBufferStartsClean(t *testing.T) {
	dir := t.TempDir()
	aborted := errors.New("stop")
	path := filepath.Join(dir, "a")
	if err := writeAtomic(path, func(w *bufio.Writer) error {
		w.WriteString("stale bytes of an aborted file")
		return aborted
	}); !errors.Is(err, aborted) {
		t.Fatalf("aborted write: %v", err)
	}
	var used []*bufio.Writer
	for i, body := range []string{"first", "second file"} {
		if err := writeAtomic(path, func(w *bufio.Writer) error {
			used = append(used, w)
			if w.Buffered() != 0 || w.Available() != 1<<20 {
				t.Errorf("file %d: writer holds %d bytes, %d available", i, w.Buffered(), w.Available())
			}
			_, err := w.WriteString(body)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != body {
			t.Errorf("file %d: %q, %v; want %q", i, got, err, body)
		}
	}
	// Not a guarantee of sync.Pool (a collection may empty it), so only
	// reported: the point of the pool is that a writer comes back.
	if used[0] != used[1] {
		t.Logf("the second file got a new writer")
	}
}
