package topology

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The cluster's DOT export and graph checks are written here rather than
// through gonum/graph: gonum/graph/simple links gonum/mat and with it
// gonum's BLAS and LAPACK (≈ 1.3 MB of code, 2.8 MB of binary), and
// gonum/graph/encoding/dot compiles two regexps at package init, all paid
// at the start of every simtrain process (≈ 0.24 M instructions and ≈ 45
// page faults of `simtrain version`, the sweep's start included) for a
// graph that only `topology --format dot` and Validate build.
// TestDOTMatchesGonum holds the export to gonum's dot.Marshal byte for
// byte.

// cable is one cable of the cluster: its two devices (lo < hi) and its
// link pair's first link.
type cable struct {
	lo, hi int32
	link   int
}

// cables returns the cluster's cables ordered by their lower then their
// higher device, one per device pair (of cables joining the same pair, the
// last in Links order, as a graph setting each edge in turn keeps), and
// how many cables it dropped as repeats; an error when a cable joins a
// device to itself.
func (c *Cluster) cables() (out []cable, repeats int, err error) {
	links := c.Links()
	out = make([]cable, 0, len(links)/2)
	for k := 0; k < len(links); k += 2 {
		f, t := links[k].From, links[k].To
		if f == t {
			return nil, 0, fmt.Errorf("topology: link %d joins device %d to itself", k, f)
		}
		out = append(out, cable{min(f, t), max(f, t), k})
	}
	slices.SortStableFunc(out, func(a, b cable) int { return cmp.Or(cmp.Compare(a.lo, b.lo), cmp.Compare(a.hi, b.hi)) })
	n := 0
	for i, cb := range out {
		if i+1 < len(out) && out[i+1].lo == cb.lo && out[i+1].hi == cb.hi {
			continue // a later cable joins the same pair
		}
		out[n] = cb
		n++
	}
	return out[:n], len(out) - n, nil
}

// DOT returns the cluster in Graphviz DOT form: a strict undirected graph
// named cluster with one node per device, in id order, named by the
// device's name and carrying its kind, then one edge per cable (cables()),
// written from its lower device, carrying the link's kind, bandwidth in
// GB/s and, above one, its cable count. Names and values are written bare
// where DOT reads them as one ID (an identifier, a numeral, a quoted or an
// HTML string; not a keyword), else double-quoted (dotID).
func (c *Cluster) DOT() ([]byte, error) {
	devs, links := c.Devices(), c.Links()
	cables, _, err := c.cables()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("strict graph cluster {")
	for i, d := range devs {
		if i == 0 {
			b.WriteString("\n  // Node definitions.")
		}
		b.WriteString("\n  " + dotID(d.Name) + " [kind=" + dotID(d.Kind.String()) + "];")
	}
	for i, cb := range cables {
		if i == 0 {
			b.WriteString("\n\n  // Edge definitions.")
		}
		ln := &links[cb.link]
		b.WriteString("\n  " + dotID(devs[cb.lo].Name) + " -- " + dotID(devs[cb.hi].Name) + " [")
		b.WriteString("\n    kind=" + dotID(ln.Kind.String()))
		b.WriteString("\n    gbytes_per_s=" + dotID(strconv.FormatFloat(float64(ln.Bandwidth)/1e9, 'g', -1, 64)))
		if ln.Cables > 1 {
			b.WriteString("\n    cables=" + dotID(strconv.Itoa(int(ln.Cables))))
		}
		b.WriteString("\n  ];")
	}
	b.WriteString("\n}")
	return b.Bytes(), nil
}

// dotID writes s as a DOT ID: as it is when DOT reads it as one ID and it
// is not a keyword (of any case), else double-quoted with Go's escapes.
func dotID(s string) string {
	for _, kw := range [...]string{"node", "edge", "graph", "digraph", "subgraph", "strict"} {
		if strings.EqualFold(s, kw) {
			return strconv.Quote(s)
		}
	}
	if dotIdent(s) || dotNumeral(s) || dotQuoted(s) || (len(s) >= 2 && s[0] == '<' && s[len(s)-1] == '>') {
		return s
	}
	return strconv.Quote(s)
}

// dotIdent reports whether s is a DOT identifier: letters (a-z, A-Z and
// the code points U+0080–U+00FF), underscores and digits, not starting
// with a digit.
func dotIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_', r >= 0x80 && r <= 0xFF:
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// dotNumeral reports whether s is a DOT numeral: [-]?(.[0-9]+|[0-9]+(.[0-9]*)?).
func dotNumeral(s string) bool {
	s = strings.TrimPrefix(s, "-")
	digits := func(t string) int {
		n := 0
		for n < len(t) && t[n] >= '0' && t[n] <= '9' {
			n++
		}
		return n
	}
	if strings.HasPrefix(s, ".") {
		n := digits(s[1:])
		return n > 0 && n == len(s)-1
	}
	n := digits(s)
	if n == 0 {
		return false
	}
	if n == len(s) {
		return true
	}
	return s[n] == '.' && digits(s[n+1:]) == len(s)-n-1
}

// dotQuoted reports whether s is a DOT double-quoted string whose escapes
// Go reads.
func dotQuoted(s string) bool {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return false
	}
	_, err := strconv.Unquote(s)
	return err == nil
}

// components returns how many connected components the cluster's devices
// form over its links (0 for no device).
func (c *Cluster) components() int {
	c.adjacency()
	nv := len(c.Devices())
	seen, queue := make([]bool, nv), make([]int32, 0, nv)
	n := 0
	for s := range nv {
		if seen[s] {
			continue
		}
		n++
		seen[s] = true
		queue = append(queue[:0], int32(s))
		for head := 0; head < len(queue); head++ {
			v := queue[head]
			for i := c.adjStart[v]; i < c.adjStart[v+1]; i++ {
				if w := c.adjTo[i]; !seen[w] {
					seen[w] = true
					queue = append(queue, w)
				}
			}
		}
	}
	return n
}
