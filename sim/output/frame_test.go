package output

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
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

// TestFramedSealKeepsColumns: the check a framed rewrite's seal makes
// reads the columns of the file's two schemas into storage the frame
// keeps from rewrite to rewrite (one column a field, the same arrays at
// the next rewrite), not into new slices at every rewrite.
func TestFramedSealKeepsColumns(t *testing.T) {
	rows := sweepSummaryRows(64)
	a, err := OpenAppendFile(filepath.Join(t.TempDir(), "summary.arrow"), nil, false, func(x, y *SummaryRow) int { return strings.Compare(x.Name, y.Name) })
	if err != nil {
		t.Fatal(err)
	}
	a.BatchRows = 8
	spec, err := specOfRows(rows)
	if err != nil {
		t.Fatal(err)
	}
	fields := len(spec.fields)
	var first [2]*column
	for k, n := range []int{16, 32, 48} {
		a.Add(rows[a.Rows():n]...)
		if err := a.Flush(); err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			continue // through FileWriter: no frame sealed it
		}
		for i, cols := range a.frame.cols {
			if len(cols) != fields {
				t.Fatalf("rewrite %d: schema %d: %d columns kept, want %d", k, i, len(cols), fields)
			}
			if k == 1 {
				first[i] = &cols[0]
			} else if &cols[0] != first[i] {
				t.Errorf("rewrite %d: schema %d: the columns moved to new storage", k, i)
			}
		}
	}
}

// TestCheckNamesDictionaryColumns: a dictionary batch whose field node
// does not fit its body is reported with the dictionary's column name.
func TestCheckNamesDictionaryColumns(t *testing.T) {
	tb := builtTable(t, sweepSummaryRows(8))
	file := tableFile(t, tb, tb.n, tb.n)
	info, err := readIPCFooter(file)
	if err != nil {
		t.Fatal(err)
	}
	d := info.dicts[0]
	msg, err := messageTable(file[d.offset : d.offset+d.meta])
	if err != nil {
		t.Fatal(err)
	}
	hdr, _, _ := msg.table(2)
	data, _, _ := hdr.table(1)
	start, n, err := data.vector(1, 16)
	if err != nil || n != 1 {
		t.Fatal("no field node", err)
	}
	binary.LittleEndian.PutUint64(data.buf[start:], 1<<40) // its length, in the file's bytes
	_, err = checkIPCFile(bytes.NewReader(file), int64(len(file)))
	col := tb.schema.Field(slices.IndexFunc(tb.dicts, func(d *fixedDict) bool { return d != nil })).Name
	if want := `column "` + col + ` dictionary": 1099511627776 values`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want one naming %s", err, want)
	}
}
