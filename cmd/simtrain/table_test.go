package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"
)

// countingWriter counts the writes it is handed.
type countingWriter struct {
	bytes.Buffer
	writes int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.writes++
	return c.Buffer.Write(p)
}

// newTable's table writes exactly what a bare tabwriter writes, in a few
// large writes at Flush instead of one a cell and a pad.
func TestTableWritesAlignedRowsInFewWrites(t *testing.T) {
	rows := func(w interface{ Write([]byte) (int, error) }) {
		fmt.Fprintln(w, "point\tname\t  status")
		for i := range 1000 {
			fmt.Fprintf(w, "%d\tp%d\t  ok\n", i, i*37)
		}
		fmt.Fprintln(w, "a line without a cell")
		fmt.Fprintln(w, "x\ty")
	}
	var want countingWriter
	bare := tabwriter.NewWriter(&want, 0, 0, 2, ' ', tabwriter.AlignRight)
	rows(bare)
	if err := bare.Flush(); err != nil {
		t.Fatal(err)
	}
	var got countingWriter
	tw := newTable(&got)
	rows(tw)
	if got.writes != 0 {
		t.Errorf("%d writes before Flush, want 0", got.writes)
	}
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("table output differs from a bare tabwriter's:\n%s\nwant:\n%s", firstLines(got.String(), 5), firstLines(want.String(), 5))
	}
	if limit := want.Len()/(64<<10) + 1; got.writes > limit {
		t.Errorf("%d writes for %d bytes, want at most %d (a bare tabwriter made %d)", got.writes, got.Len(), limit, want.writes)
	}
}

// firstLines returns s's first n lines.
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
