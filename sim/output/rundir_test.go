package output

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// fillRun writes the files of a run (with content tagging the writer).
func fillRun(tag string) func(string) error {
	return func(tmp string) error {
		for _, f := range RunFiles {
			if err := os.WriteFile(filepath.Join(tmp, f), []byte(tag), 0o644); err != nil {
				return err
			}
		}
		return nil
	}
}

// Scenario names "." and ".." made simtrain run replace OUT itself or its
// parent, deleting the user's project (issue 19). WriteDir refuses them
// (and every name that is not one plain path component) and touches
// nothing.
func TestWriteDirRefusesNamesOutsideOut(t *testing.T) {
	project := t.TempDir()
	keep := filepath.Join(project, "keep.txt")
	if err := os.WriteFile(keep, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(project, "results")
	if _, err := WriteDir(context.Background(), out, "other", DirOptions{}, fillRun("x")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"..", ".", "", "a/b", "../x", "/abs", ".hidden", strings.Repeat("n", 240)} {
		_, err := WriteDir(context.Background(), out, name, DirOptions{}, fillRun("evil"))
		if !errors.Is(err, ErrUnsafeOutput) {
			t.Errorf("name %q: got %v, want ErrUnsafeOutput", name, err)
		}
	}
	if b, err := os.ReadFile(keep); err != nil || string(b) != "mine" {
		t.Fatalf("the project's file is gone or changed: %v", err)
	}
	if got := dirEntries(t, out); !slices.Equal(got, []string{"other"}) {
		t.Errorf("results holds %v, want [other]", got)
	}
	if got := dirEntries(t, project); !slices.Equal(got, []string{"keep.txt", "results"}) {
		t.Errorf("project holds %v", got)
	}
}

// An existing OUT/NAME is replaced only if it holds nothing but simtrain's
// files; a symbolic link in its place is not followed or replaced.
func TestWriteDirKeepsForeignFiles(t *testing.T) {
	out := t.TempDir()
	ctx := context.Background()
	if _, err := WriteDir(ctx, out, "run", DirOptions{}, fillRun("1")); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(out, "run", "notes.txt")
	if err := os.WriteFile(notes, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := WriteDir(ctx, out, "run", DirOptions{}, fillRun("2"))
	if !errors.Is(err, ErrUnsafeOutput) || !strings.Contains(err.Error(), "notes.txt") {
		t.Fatalf("got %v, want a refusal naming notes.txt", err)
	}
	if _, err := os.Stat(notes); err != nil {
		t.Fatal("notes.txt deleted")
	}
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(out, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteDir(ctx, out, "link", DirOptions{}, fillRun("3")); !errors.Is(err, ErrUnsafeOutput) {
		t.Fatalf("symlink replaced: %v", err)
	}
	if got := dirEntries(t, elsewhere); len(got) != 0 {
		t.Errorf("wrote through the symlink: %v", got)
	}
}

// A killed run leaves .NAME.tmp-DIGITS (up to 80 MB each; 9 after 12 kills
// in issue 19). The next run of NAME removes those holding only simtrain's
// files and says so; others are reported and kept.
func TestWriteDirCleansLeftovers(t *testing.T) {
	out := t.TempDir()
	mk := func(name string, files ...string) {
		p := filepath.Join(out, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(p, f), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk(".run.tmp-123", "summary.arrow", "timeline.arrow.tmp-77-3")
	mk(".run.tmp-4567")
	mk(".run.old-99", "links.arrow")
	mk(".run.tmp-88", "thesis.tex")     // not ours: kept
	mk(".run2.tmp-5", "summary.arrow")  // another scenario's: untouched
	mk(".run.tmp-x", "summary.arrow")   // not a leftover name: untouched
	mk("run.old-4242", "summary.arrow") // an older simtrain's, or a scenario named so: reported only
	var warnings []string
	opt := DirOptions{Warn: func(m string) { warnings = append(warnings, m) }}
	if _, err := WriteDir(context.Background(), out, "run", opt, fillRun("x")); err != nil {
		t.Fatal(err)
	}
	want := []string{".run.tmp-88", ".run.tmp-x", ".run2.tmp-5", "run", "run.old-4242"}
	if got := dirEntries(t, out); !slices.Equal(got, want) {
		t.Errorf("out holds %v, want %v", got, want)
	}
	all := strings.Join(warnings, "\n")
	for _, w := range []string{"removed .run.old-99, .run.tmp-123, .run.tmp-4567", ".run.tmp-88", "run.old-4242"} {
		if !strings.Contains(all, w) {
			t.Errorf("warnings %q lack %q", all, w)
		}
	}
}

// Two runs writing the same directory raced: one failed and a stray
// NAME.old-PID stayed (issue 19). Under the lock they take turns: every
// writer succeeds, the directory is one writer's complete output, nothing
// else is left.
func TestWriteDirConcurrentWriters(t *testing.T) {
	out := t.TempDir()
	const writers = 8
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tag := strings.Repeat(string(rune('a'+i)), 1000)
			_, errs[i] = WriteDir(context.Background(), out, "run", DirOptions{}, fillRun(tag))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	if got := dirEntries(t, out); !slices.Equal(got, []string{"run"}) {
		t.Errorf("out holds %v, want [run]", got)
	}
	var tag string
	for _, f := range RunFiles {
		b, err := os.ReadFile(filepath.Join(out, "run", f))
		if err != nil {
			t.Fatal(err)
		}
		if tag == "" {
			tag = string(b)
		}
		if string(b) != tag {
			t.Errorf("%s is from another writer than the rest", f)
		}
	}
}

// A failed fill or a cancelled context leaves the previous directory.
func TestWriteDirFailureKeepsPrevious(t *testing.T) {
	out := t.TempDir()
	if _, err := WriteDir(context.Background(), out, "run", DirOptions{}, fillRun("old")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if _, err := WriteDir(context.Background(), out, "run", DirOptions{}, func(tmp string) error {
		fillRun("new")(tmp)
		return boom
	}); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := WriteDir(ctx, out, "run", DirOptions{}, func(tmp string) error {
		cancel()
		return fillRun("new")(tmp)
	}); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "run", "summary.arrow")); string(b) != "old" {
		t.Errorf("summary.arrow is %q, want the previous run's", b)
	}
	if got := dirEntries(t, out); !slices.Equal(got, []string{"run"}) {
		t.Errorf("out holds %v", got)
	}
}

func TestLockExcludesAndCleansUp(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".x.lock")
	a, ok, err := TryLock(path)
	if err != nil || !ok {
		t.Fatalf("first lock: %v %v", ok, err)
	}
	if _, ok, err := TryLock(path); err != nil || ok {
		t.Fatalf("second lock taken while held: %v %v", ok, err)
	}
	a.Unlock()
	a.Unlock() // idempotent
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("lock file left: %v", err)
	}
	b, ok, err := TryLock(path)
	if err != nil || !ok {
		t.Fatalf("lock after unlock: %v %v", ok, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := WaitLock(ctx, path, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitLock on a held lock with a cancelled context: %v", err)
	}
	b.Unlock()
}
