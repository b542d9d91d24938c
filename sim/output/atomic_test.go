package output

import (
	"errors"
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
