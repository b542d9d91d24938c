package output

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFramedRewriteChecksItsFile: a framed rewrite (frame.go) checks the
// structure of the file it wrote before sealing it, on the bytes the frame
// holds: a frame whose blocks do not match its messages fails the flush,
// and the file stays as the last rewrite left it.
func TestFramedRewriteChecksItsFile(t *testing.T) {
	rows := sweepSummaryRows(40)
	path := filepath.Join(t.TempDir(), "summary.arrow")
	a, err := OpenAppendFile(path, nil, false, func(x, y *SummaryRow) int { return strings.Compare(x.Name, y.Name) })
	if err != nil {
		t.Fatal(err)
	}
	a.BatchRows = 8
	a.Add(rows[:16]...)
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	if a.frame == nil || len(a.frame.dicts) == 0 {
		t.Fatal("no frame with dictionaries after the first rewrite")
	}
	before, _ := os.ReadFile(path)
	for _, tc := range []struct {
		name   string
		damage func(fr *ipcFrame)
	}{
		{"a dictionary block one word short", func(fr *ipcFrame) { fr.dicts[0].meta -= 8 }},
		{"a dictionary block past the header", func(fr *ipcFrame) { fr.dicts[len(fr.dicts)-1].offset += 8 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saved := append([]ipcBlock(nil), a.frame.dicts...)
			tc.damage(a.frame)
			defer copy(a.frame.dicts, saved)
			a.Add(rows[16+len(tc.name)%8])
			if err := a.Flush(); err == nil {
				t.Fatal("flush succeeded")
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, before) {
				t.Error("the file changed")
			}
		})
	}
}

// TestFrameReaderReadsOnlyWhatItHolds: the reader seal checks a framed
// file with serves the header, each batch's metadata and the footer, and
// refuses any other read (a batch's body, a read across two parts).
func TestFrameReaderReadsOnlyWhatItHolds(t *testing.T) {
	fr := &ipcFrame{header: []byte("ARROW1\x00\x00HEADER!!"), footerBytes: []byte("FOOTER"),
		recs: []ipcBlock{{offset: 16, meta: 8, body: 16}, {offset: 40, meta: 8, body: 8}}, metas: []byte("META0000META1111")}
	copy(fr.trailer[:], "\x06\x00\x00\x00ARROW1") // as finish writes it
	r := &frameReader{fr: fr}
	r.size = r.written()
	if r.size != 56+6+10 {
		t.Fatalf("written %d", r.size)
	}
	for _, tc := range []struct {
		off  int64
		n    int
		want string // "" for an error
	}{
		{0, 6, "ARROW1"},
		{8, 8, "HEADER!!"},
		{16, 8, "META0000"},
		{40, 4, "META"},
		{44, 4, "1111"},
		{56, 6, "FOOTER"},
		{62, 4, "\x06\x00\x00\x00"},
		{66, 6, "ARROW1"},
		{24, 8, ""}, // a body
		{12, 8, ""}, // across header and metadata
		{20, 8, ""}, // metadata into body
		{48, 8, ""}, // the second body
		{68, 8, ""}, // past the end
	} {
		p := make([]byte, tc.n)
		_, err := r.ReadAt(p, tc.off)
		if (err == nil) != (tc.want != "") || (err == nil && string(p) != tc.want) {
			t.Errorf("ReadAt(%d bytes at %d) = %q, %v; want %q", tc.n, tc.off, p, err, tc.want)
		}
	}
}
