package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestVersionStamped builds the binary as tools/release.sh does, with the
// version, commit and date set by -ldflags -X, and checks that `simtrain
// version` prints them.
func TestVersionStamped(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the simtrain binary")
	}
	bin := filepath.Join(t.TempDir(), "simtrain")
	const commitID = "0123456789abcdef0123456789abcdef01234567"
	ldflags := "-X main.version=v1.2.3 -X main.commit=" + commitID + " -X main.date=2026-01-02T03:04:05Z"
	if out, err := exec.Command("go", "build", "-ldflags", ldflags, "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := "simtrain v1.2.3 0123456789ab built 2026-01-02T03:04:05Z " + runtime.GOOS + "/" + runtime.GOARCH + " " + runtime.Version() + "\n"
	if string(out) != want {
		t.Errorf("version printed %q, want %q", out, want)
	}
}

// TestVersionUnstamped: a plain build names the module version (or
// "(devel)") and the platform.
func TestVersionUnstamped(t *testing.T) {
	out, _, err := runCLI(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^simtrain \S+( [0-9a-f]{12})? ` + runtime.GOOS + "/" + runtime.GOARCH + ` go\S+\n$`).MatchString(out) {
		t.Errorf("version printed %q", out)
	}
	if _, _, err := runCLI(t, "version", "extra"); err == nil || !strings.Contains(err.Error(), "takes no arguments") {
		t.Errorf("version extra: %v", err)
	}
}
