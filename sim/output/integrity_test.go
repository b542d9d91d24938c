package output

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// summaryFile writes a sweep-like summary of n rows and returns its path
// and bytes.
func summaryFile(t testing.TB, n int) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "summary.arrow")
	if err := WriteTable(path, makeRows[SummaryRow](n), map[string]string{"sweep": "s"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, b
}

// The checksum is what results/README.md says: SHA-256 of the file with
// both copies of the value replaced by 64 ASCII zeros.
func TestChecksumDefinition(t *testing.T) {
	for _, write := range []func(path string) error{
		func(path string) error { return WriteTable(path, makeRows[SummaryRow](3), nil) },
		func(path string) error { return writeTimelineFile(path, 100) },
	} {
		path := filepath.Join(t.TempDir(), "x.arrow")
		if err := write(path); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		info, err := ReadTableInfo(path)
		if err != nil {
			t.Fatal(err)
		}
		v := info.Meta[MetaChecksum]
		if bytes.Count(data, []byte(v)) != 2 {
			t.Fatalf("the checksum appears %d times, want 2 (schema message and footer)", bytes.Count(data, []byte(v)))
		}
		sum := sha256.Sum256(bytes.ReplaceAll(data, []byte(v), []byte(checksumPlaceholder)))
		if hex.EncodeToString(sum[:]) != v {
			t.Errorf("stored %s, file hashes to %x", v, sum)
		}
	}
}

// Of 60 bit-flipped summary files, 24 merged with exit status 0 and changed
// values (issue 19), and a flip in the footer's metadata made the reader
// ask for 30-68 GB. Now every single-byte change anywhere in the file is
// refused as damaged, without a large allocation.
func TestEveryFlipIsDetected(t *testing.T) {
	path, orig := summaryFile(t, 7)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	flips := flipPositions(len(orig))
	for i, pos := range flips {
		x := flipMasks[i%len(flipMasks)]
		b := bytes.Clone(orig)
		b[pos] ^= x
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		var rows []SummaryRow
		_, err := ReadTable(path, &rows)
		if !errors.Is(err, ErrDamaged) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("byte %d ^ %#x: got %v, want a one-line damaged-file error", pos, x, err)
		}
	}
	runtime.ReadMemStats(&ms)
	if per := (ms.TotalAlloc - before) / uint64(len(flips)); per > 64*uint64(len(orig)) {
		t.Errorf("%d bytes allocated per damaged read of a %d-byte file", per, len(orig))
	}
	// Truncations too.
	for _, n := range []int{0, 7, 100, len(orig) / 2, len(orig) - 1} {
		os.WriteFile(path, orig[:n], 0o644)
		var rows []SummaryRow
		if _, err := ReadTable(path, &rows); !errors.Is(err, ErrDamaged) {
			t.Errorf("truncated to %d bytes: %v", n, err)
		}
	}
}

// writeTimelineFile writes a timeline of n rows to path.
func writeTimelineFile(path string, n int) error {
	w, err := NewTimelineWriter(path, map[string]string{"run_id": "r"}, testDicts)
	if err != nil {
		return err
	}
	if err := w.Write(makeTimeline(n)); err != nil {
		return err
	}
	return w.Close()
}

// writeLegacy writes rows as an IPC file without a checksum, as simtrain
// did before (and as other writers do).
func writeLegacy(t testing.TB, path string, n int) []byte {
	t.Helper()
	tb, err := newTableBuilder(memory.DefaultAllocator, makeRows[SummaryRow](n), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.release()
	var buf bytes.Buffer
	fw, err := ipc.NewFileWriter(&buf, ipc.WithSchema(tb.schema))
	if err != nil {
		t.Fatal(err)
	}
	rec := tb.batch(0, tb.n)
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Files without a checksum still read, and a damaged one never makes the
// reader allocate beyond its size: every length is checked first.
func TestLegacyFilesReadAndDamageIsBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "legacy.arrow")
	orig := writeLegacy(t, path, 5)
	var rows []SummaryRow
	if _, err := ReadTable(path, &rows); err != nil || len(rows) != 5 {
		t.Fatalf("legacy file: %d rows, %v", len(rows), err)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	reads := 0
	for i, pos := range flipPositions(len(orig)) {
		b := bytes.Clone(orig)
		b[pos] ^= flipMasks[i%len(flipMasks)]
		os.WriteFile(path, b, 0o644)
		var rows []SummaryRow
		ReadTable(path, &rows) // an error or the rows; never a crash
		reads++
	}
	runtime.ReadMemStats(&ms)
	if per := (ms.TotalAlloc - before) / uint64(reads); per > 64*uint64(len(orig)) {
		t.Errorf("%d bytes allocated per read of a %d-byte file", per, len(orig))
	}
}

// flipMasks are the bit patterns the corruption tests apply to a byte.
var flipMasks = []byte{0x01, 0x80, 0xff, 0x10, 0x7f}

// flipPositions spreads about 600 positions over a file of n bytes: every
// byte of the first and last 256 (magic, schema message, footer, where
// lengths and offsets live) and an even stride through the rest.
func flipPositions(n int) []int {
	var out []int
	for p := 0; p < n; p++ {
		if p < 256 || p >= n-256 || p%max(1, n/100) == 0 {
			out = append(out, p)
		}
	}
	return out
}

// Parquet files carry the same checksum (in the footer's key-value
// metadata): a changed byte is refused before the Parquet reader sees it
// (which bounds-checks every offset anyway).
func TestParquetDamageIsDetected(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.parquet")
	rows := makeRows[SummaryRow](7)
	if err := WriteParquet(path, rows, nil); err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []SummaryRow
	meta, err := ReadParquet(path, &got)
	if err != nil || len(got) != 7 {
		t.Fatalf("%d rows, %v", len(got), err)
	}
	v := meta[MetaChecksum]
	sum := sha256.Sum256(bytes.ReplaceAll(orig, []byte(v), []byte(checksumPlaceholder)))
	if bytes.Count(orig, []byte(v)) != 1 || hex.EncodeToString(sum[:]) != v {
		t.Fatalf("checksum %s does not match the definition", v)
	}
	key := bytes.Index(orig, parquetChecksumKey)
	for i, pos := range flipPositions(len(orig)) {
		if pos >= key && pos < key+len(parquetChecksumKey) {
			continue // a changed key leaves a file without a checksum, values intact
		}
		b := bytes.Clone(orig)
		b[pos] ^= flipMasks[i%len(flipMasks)]
		os.WriteFile(path, b, 0o644)
		if _, err := ReadParquet(path, &got); !errors.Is(err, ErrDamaged) {
			t.Fatalf("byte %d: got %v, want a damaged-file error", pos, err)
		}
	}
}

// FuzzReadDamaged: simtrain's readers on damaged files (a valid file with
// the fuzz input's byte changes and truncation): with a checksum (summary
// or timeline) or without one (older files, other writers), Arrow or
// Parquet. They return rows or an error, never panic, and never allocate
// more than a small multiple of the file's size (issue 19: 143 GB asked
// for by a corrupted summary). A mutation is 4 bytes: a 3-byte position
// (modulo the size) and a byte to xor; a leading byte picks the file and
// how much to cut off its end.
func FuzzReadDamaged(f *testing.F) {
	dir := f.TempDir()
	var bases [][]byte
	for i, write := range []func(string) error{
		func(p string) error { return WriteTable(p, makeRows[SummaryRow](5), map[string]string{"sweep": "s"}) },
		func(p string) error { return writeTimelineFile(p, 50) },
		func(p string) error { writeLegacy(f, p, 5); return nil },
		func(p string) error { return WriteParquet(p, makeRows[SummaryRow](5), nil) },
	} {
		p := filepath.Join(dir, "base"+string(rune('0'+i)))
		if err := write(p); err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		bases = append(bases, b)
	}
	f.Add([]byte{0})
	f.Add([]byte{1, 0, 0, 9, 0xff})
	f.Add([]byte{2, 0, 0x10, 0, 0x40, 0, 0x20, 0, 0x01})
	f.Add([]byte{0x12, 0xff, 0xff, 0xf0, 0x7f})
	f.Add([]byte{3, 0, 0, 5, 0x10})
	f.Add([]byte{0x22, 0, 1, 0, 0x80, 0, 2, 0, 0x80})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		kind := int(in[0]) % len(bases)
		b := bytes.Clone(bases[kind])
		for m := in[1:]; len(m) >= 4; m = m[4:] {
			pos := (int(m[0])<<16 | int(m[1])<<8 | int(m[2])) % len(b)
			b[pos] ^= m[3]
		}
		b = b[:len(b)-min(len(b), int(in[0]>>2)*8)]
		path := filepath.Join(t.TempDir(), "x")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		switch kind {
		case 1:
			var rows []TimelineRow
			ReadTable(path, &rows)
		case 3:
			var rows []SummaryRow
			ReadParquet(path, &rows)
		default:
			var rows []SummaryRow
			ReadTable(path, &rows)
			ReadTableInfo(path)
		}
		runtime.ReadMemStats(&ms)
		if alloc := ms.TotalAlloc - before; alloc > 64*uint64(len(bases[kind]))+16<<20 {
			t.Fatalf("%d bytes allocated reading a %d-byte file", alloc, len(b))
		}
	})
}
