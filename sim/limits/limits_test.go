package limits

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestNameCharsMatchesPattern: the byte loop accepts what the rule's
// pattern ^[A-Za-z0-9._-]+$ accepts, for every byte and some multi-byte
// names (non-ASCII letters and invalid UTF-8 are refused by both).
func TestNameCharsMatchesPattern(t *testing.T) {
	pattern := regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
	names := []string{"a", "A-b_c.9", "é", "a\xffb", "\u00e9x", "ab/", "a\x00", "Z", "zz~"}
	for c := 0; c < 256; c++ {
		names = append(names, string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"b")
	}
	for _, n := range names {
		if got, want := nameChars(n), pattern.MatchString(n); got != want {
			t.Errorf("nameChars(%q) = %v, pattern %v", n, got, want)
		}
	}
}

func TestCheckName(t *testing.T) {
	for _, c := range []struct {
		name, want string
	}{
		{"quickstart-llama3-8b-fsdp", ""},
		{"a.b_c-1", ""},
		{strings.Repeat("n", MaxNameLen), ""},
		{"", "required"},
		{".", "not a name"},
		{"..", "not a name"},
		{".hidden", "must not start with '.'"},
		{"a/b", "may contain only"},
		{"a b", "may contain only"},
		{strings.Repeat("n", MaxNameLen+1), "longer than 239"},
		{strings.Repeat("n", 255), "longer than 239"}, // 242–255 passed, then mkdir failed (issue 19)
	} {
		err := CheckName("name", c.name)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: got %v, want an error containing %q", c.name, err, c.want)
		case err != nil && (!strings.HasPrefix(err.Error(), "name: ") || strings.Contains(err.Error(), "\n")):
			t.Errorf("%q: error %q does not start with the field on one line", c.name, err)
		}
	}
	// The longest name and the run writer's temporary name both fit.
	if n := len("." + strings.Repeat("n", MaxNameLen) + ".tmp-4294967295"); n > NameMax {
		t.Errorf("temporary name of %d bytes exceeds NAME_MAX", n)
	}
}

// `simtrain run /dev/zero` read until memory ran out (issue 19).
func TestReadFileLimits(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, err := ReadFile("/dev/zero", MaxInputBytes); err == nil || !strings.Contains(err.Error(), "larger than the 1 MiB") {
			t.Errorf("/dev/zero: %v", err)
		}
	}
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, 2*MaxInputBytes), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(big, MaxInputBytes); err == nil || !strings.Contains(err.Error(), "2097152 bytes") {
		t.Errorf("big file: %v", err)
	}
	if _, err := ReadFile(dir, MaxInputBytes); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory: %v", err)
	}
	small := filepath.Join(dir, "small.yaml")
	if err := os.WriteFile(small, []byte("name: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(small, MaxInputBytes); err != nil || string(b) != "name: x\n" {
		t.Errorf("small file: %q %v", b, err)
	}
}
