//go:build unix

package output

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Directories are 0755 and files 0644 (with umask 022); os.MkdirTemp made
// them 0700 (issue 19).
func TestWriteDirModes(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	out := filepath.Join(t.TempDir(), "new", "out")
	dir, err := WriteDir(context.Background(), out, "run", DirOptions{}, func(tmp string) error {
		return WriteTable(filepath.Join(tmp, "summary.arrow"), []SummaryRow{{Name: "x"}}, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{out: 0o755, dir: 0o755, filepath.Join(dir, "summary.arrow"): 0o644} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, st.Mode().Perm(), want)
		}
	}
}
