package genfiles

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSync: writing removes stale owned files and leaves others alone; a
// check afterwards passes, and fails naming a changed and a stale file.
func TestSync(t *testing.T) {
	dir := t.TempDir()
	owned := regexp.MustCompile(`^g-.*\.yaml$`)
	for n, body := range map[string]string{"g-old.yaml": "x", "README.md": "keep"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string][]byte{"g-a.yaml": []byte("a"), "SKIPPED.md": []byte("s")}
	if err := Sync(dir, files, owned, true, "gen"); err == nil || !strings.Contains(err.Error(), "g-a.yaml") ||
		!strings.Contains(err.Error(), "g-old.yaml") || !strings.Contains(err.Error(), "go run ./tools/gen") {
		t.Errorf("check before writing: %v", err)
	}
	if err := Sync(dir, files, owned, false, "gen"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "g-old.yaml")); !os.IsNotExist(err) {
		t.Error("stale owned file kept")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "README.md")); err != nil || string(b) != "keep" {
		t.Error("unowned file touched")
	}
	if err := Sync(dir, files, owned, true, "gen"); err != nil {
		t.Errorf("check after writing: %v", err)
	}
	files["g-a.yaml"] = []byte("changed")
	if err := Sync(dir, files, owned, true, "gen"); err == nil || !strings.Contains(err.Error(), "1 generated files are out of date") {
		t.Errorf("check after a change: %v", err)
	}
}
