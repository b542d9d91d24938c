package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// damage flips one byte in the middle of a file (its record batches).
func damage(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x10
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Issue 19: one corrupt shard blocked `--resume` of every shard with no
// hint how to recover, and bit-flipped summaries merged with exit status 0
// and changed values. Now a resumed shard skips another shard's damaged
// file with a warning naming it and the command that rebuilds it; the
// damaged shard's own resume sets the file aside and runs its points
// again; merge and best refuse a damaged file with one line, status 2.
func TestDamagedShards(t *testing.T) {
	sweep := writeSweep(t, smallSweep)
	dir := t.TempDir()
	for _, shard := range []string{"0/2", "1/2"} {
		if _, _, err := runCLI(t, "sweep", sweep, "--out", dir, "--shard", shard, "--quiet"); err != nil {
			t.Fatal(err)
		}
	}
	shard1 := filepath.Join(dir, "summary.shard-1-of-2.arrow")
	good := readRows(t, shard1)
	damage(t, shard1)

	for _, args := range [][]string{
		{"merge", dir, "--out", filepath.Join(t.TempDir(), "m.arrow")},
		{"best", dir, "--no-svg"},
		{"merge", shard1, "--out", filepath.Join(t.TempDir(), "m.parquet")},
	} {
		_, stderr, code := runMain(t, args...)
		if code != exitBadInput || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, shard1) || !strings.Contains(stderr, "checksum mismatch") {
			t.Errorf("%v on a damaged shard: status %d, stderr %q", args[0], code, stderr)
		}
	}

	_, stderr, err := runCLI(t, "sweep", sweep, "--out", dir, "--shard", "0/2", "--resume", "--quiet")
	if err != nil {
		t.Fatalf("resume of the healthy shard: %v", err)
	}
	if !strings.Contains(stderr, shard1+" is damaged, skipped") || !strings.Contains(stderr, "--shard 1/2 --resume") {
		t.Errorf("resume of shard 0/2 does not name the damaged file and its rebuild: %q", stderr)
	}

	_, stderr, err = runCLI(t, "sweep", sweep, "--out", dir, "--shard", "1/2", "--resume", "--quiet")
	if err != nil {
		t.Fatalf("resume of the damaged shard: %v", err)
	}
	if !strings.Contains(stderr, "moved it to summary.shard-1-of-2.arrow.damaged-1") {
		t.Errorf("resume of shard 1/2: %q", stderr)
	}
	if _, err := os.Stat(shard1 + ".damaged-1"); err != nil {
		t.Errorf("the damaged file was not kept: %v", err)
	}
	sameRows(t, "rebuilt shard / original", good, readRows(t, shard1))
	if _, _, code := runMain(t, "merge", dir, "--out", filepath.Join(t.TempDir(), "m.arrow")); code != exitOK {
		t.Errorf("merge after the rebuild: status %d", code)
	}
}
