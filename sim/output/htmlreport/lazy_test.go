package htmlreport

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"html/template"
	"testing"
)

// TestPageParsedOnFirstUse: page and titleElement, parsed and compiled on
// first use instead of at package initialisation, are one template and
// one regexp for the process, and a page rendered through them has the
// bytes the package-level template wrote (the SHA-256 pinned from the
// code before the change, 3b68585), as does a standalone chart.
func TestPageParsedOnFirstUse(t *testing.T) {
	if page() != page() || titleElement() != titleElement() {
		t.Fatal("page or titleElement built more than once")
	}
	var b bytes.Buffer
	d := pageData{Title: `T <&> "q"`, Subtitle: "sub & title", Sections: []section{
		{ID: "a", Heading: "A <b>", Body: "<p>x</p>"},
		{ID: "b-2", Heading: "B", Body: template.HTML(kvTable([][2]string{{"k", "v <1>"}}))},
	}}
	if err := render(&b, d); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprintf("%x", sha256.Sum256(b.Bytes())), pinnedPage; got != want {
		t.Errorf("page's SHA-256 %s, want %s:\n%s", got, want, b.String())
	}
	svg := `<svg class="chart" width="10"><rect><title>a &lt; b</title></rect><title>x</title><g/></svg>`
	want := `<svg class="chart" width="10">` + "\n<style>" + chartStyle + "</style>\n" +
		`<rect width="100%" height="100%" fill="#fff"/><rect></rect><g/></svg>` + "\n"
	if got := Standalone(svg); got != want {
		t.Errorf("Standalone:\n%s\nwant\n%s", got, want)
	}
}

const pinnedPage = "27019e4f2962a438d58b32bd304b96188c10e4ceaf7faa679116b5c066f79382"
