package output

import (
	"cmp"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

type appendRow struct {
	Key  int64  `arrow:"key"`
	Kind string `arrow:"kind,dict"`
}

func byKey(a, b appendRow) int { return cmp.Compare(a.Key, b.Key) }

func readAppendRows(t *testing.T, path string) []appendRow {
	t.Helper()
	var rows []appendRow
	if _, err := ReadTable(path, &rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestAppendFileFlushes: every flush leaves a complete file holding every
// row so far in key order, with one dictionary per column even though the
// later flushes bring new values.
func TestAppendFileFlushes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.arrow")
	a, err := OpenAppendFile(path, map[string]string{"sweep": "x"}, false, byKey)
	if err != nil {
		t.Fatal(err)
	}
	a.Add(appendRow{3, "c"}, appendRow{1, "a"})
	if a.Pending() != 2 || a.Rows() != 2 {
		t.Fatalf("pending %d rows %d", a.Pending(), a.Rows())
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("file written before Flush")
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	a.Add(appendRow{2, "b"}, appendRow{0, "z"})
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	rows := readAppendRows(t, path)
	want := []appendRow{{0, "z"}, {1, "a"}, {2, "b"}, {3, "c"}}
	defer func() {
		if got := readAppendRows(t, path); len(got) != 5 || got[4] != (appendRow{4, "a"}) {
			t.Errorf("after the batched flush: %v", got)
		}
	}()
	if len(rows) != len(want) {
		t.Fatalf("rows %v", rows)
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("row %d: %v, want %v", i, rows[i], want[i])
		}
	}
	info, err := ReadTableInfo(path)
	if err != nil || info.Meta["sweep"] != "x" || info.Meta["schema_version"] != SchemaVersion {
		t.Errorf("meta %v %v", info.Meta, err)
	}
	if info.Batches != 1 {
		t.Errorf("%d batches of at most %d rows for 4 rows", info.Batches, BatchRows)
	}
	// Record batches of BatchRows rows: 4 rows in batches of 3 are 2 batches.
	a.BatchRows = 3
	a.Add(appendRow{4, "a"})
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	if info, _ := ReadTableInfo(path); info.Batches != 2 || info.Rows != 5 {
		t.Errorf("%d batches, %d rows", info.Batches, info.Rows)
	}
	if a.Pending() != 0 {
		t.Errorf("pending %d after flush", a.Pending())
	}
	if entries := dirEntries(t, filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("directory holds %v", entries)
	}
}

// TestAppendFileKeepAndStaleTemps: reopening with keep loads the rows
// already written; a temporary file left by a killed writer is removed;
// without keep the first flush replaces the old file.
func TestAppendFileKeepAndStaleTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.arrow")
	a, _ := OpenAppendFile(path, nil, false, byKey)
	a.Add(appendRow{5, "e"})
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	stale := path + ".tmp-999-1"
	if err := os.WriteFile(stale, []byte("half a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := OpenAppendFile(path, nil, true, byKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Error("stale temporary file not removed")
	}
	if b.Rows() != 1 || b.Pending() != 0 {
		t.Fatalf("kept %d rows, %d pending", b.Rows(), b.Pending())
	}
	b.Add(appendRow{4, "d"})
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if rows := readAppendRows(t, path); len(rows) != 2 || rows[0].Key != 4 || rows[1].Key != 5 {
		t.Errorf("after resume: %v", rows)
	}
	c, _ := OpenAppendFile(path, nil, false, byKey)
	c.Add(appendRow{9, "i"})
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if rows := readAppendRows(t, path); len(rows) != 1 || rows[0].Key != 9 {
		t.Errorf("without keep: %v", rows)
	}
	// An empty file is still a valid table (a shard with nothing to do).
	e, _ := OpenAppendFile(filepath.Join(dir, "empty.arrow"), nil, false, byKey)
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	if rows := readAppendRows(t, filepath.Join(dir, "empty.arrow")); len(rows) != 0 {
		t.Errorf("empty: %v", rows)
	}
}

// TestAppendFileFailedFlushKeepsOldFile: a flush that fails before its
// rename leaves the previous file intact and the rows pending.
func TestAppendFileFailedFlushKeepsOldFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.arrow")
	a, _ := OpenAppendFile(path, nil, false, byKey)
	a.Add(appendRow{1, "a"})
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	a.Add(appendRow{2, "b"})
	testHookBeforeRename = func(string) error { return errors.New("disk full") }
	err := a.Flush()
	testHookBeforeRename = nil
	if err == nil {
		t.Fatal("flush did not fail")
	}
	if rows := readAppendRows(t, path); len(rows) != 1 {
		t.Errorf("old file changed: %v", rows)
	}
	if a.Pending() != 1 {
		t.Errorf("pending %d", a.Pending())
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	if rows := readAppendRows(t, path); len(rows) != 2 {
		t.Errorf("retry: %v", rows)
	}
}

func TestAppendFileBadType(t *testing.T) {
	if _, err := OpenAppendFile(filepath.Join(t.TempDir(), "x.arrow"), nil, false, func(a, b int) int { return 0 }); err == nil {
		t.Error("a non-struct row type was accepted")
	}
}
