package topology

import (
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/encoding"
	"gonum.org/v1/gonum/graph/encoding/dot"
	"gonum.org/v1/gonum/graph/simple"
	"gonum.org/v1/gonum/graph/topo"
)

// gNode and gEdge carry devices and cables into gonum, the reference the
// tests hold DOT and Validate to (the binary does not link gonum/graph:
// dot.go says why).
type gNode struct {
	id   int64
	name string
	kind string
}

func (n gNode) ID() int64     { return n.id }
func (n gNode) DOTID() string { return n.name }
func (n gNode) Attributes() []encoding.Attribute {
	return []encoding.Attribute{{Key: "kind", Value: n.kind}}
}

type gEdge struct {
	f, t gNode
	link *Link
}

func (e gEdge) From() graph.Node         { return e.f }
func (e gEdge) To() graph.Node           { return e.t }
func (e gEdge) ReversedEdge() graph.Edge { e.f, e.t = e.t, e.f; return e }
func (e gEdge) Attributes() []encoding.Attribute {
	a := []encoding.Attribute{
		{Key: "kind", Value: e.link.Kind.String()},
		{Key: "gbytes_per_s", Value: strconv.FormatFloat(float64(e.link.Bandwidth)/1e9, 'g', -1, 64)},
	}
	if e.link.Cables > 1 {
		a = append(a, encoding.Attribute{Key: "cables", Value: strconv.Itoa(int(e.link.Cables))})
	}
	return a
}

// gonumGraph is the cluster as a gonum undirected graph: one node per
// device (node id = device id), one edge per cable, set in Links order.
func gonumGraph(c *Cluster) *simple.UndirectedGraph {
	g := simple.NewUndirectedGraph()
	node := func(i int32) gNode {
		d := &c.Devices()[i]
		return gNode{int64(i), d.Name, d.Kind.String()}
	}
	for i := range c.Devices() {
		g.AddNode(node(int32(i)))
	}
	for k := 0; k < len(c.Links()); k += 2 {
		ln := &c.Links()[k]
		g.SetEdge(gEdge{f: node(ln.From), t: node(ln.To), link: ln})
	}
	return g
}

// handCluster is a cluster of n GPUs named as given (g0, g1... when names
// is short) joined by one NVLink cable of 450 GB/s per pair, in order.
func handCluster(n int, names []string, pairs ...[2]int32) *Cluster {
	c := &Cluster{}
	c.devOnce.Do(func() {})
	c.linksOnce.Do(func() {})
	for i := range n {
		name := "g" + strconv.Itoa(i)
		if i < len(names) {
			name = names[i]
		}
		c.devices = append(c.devices, Device{Kind: KindGPU, Name: name})
	}
	for i, p := range pairs {
		ln := Link{From: p[0], To: p[1], Bandwidth: 450e9, Cables: int32(1 + i%3), Kind: LinkNVLink}
		back := ln
		back.From, back.To = ln.To, ln.From
		c.links = append(c.links, ln, back)
	}
	return c
}

// TestDOTMatchesGonum: DOT writes what gonum's dot.Marshal writes for the
// same graph, byte for byte, on every small cluster of the build tests and
// on hand-made ones with names DOT must quote (keywords, numerals,
// quotes, non-ASCII), repeated device pairs and no device at all.
func TestDOTMatchesGonum(t *testing.T) {
	var cs []*Cluster
	for _, s := range specsSmall {
		cs = append(cs, mustBuild(t, s))
	}
	cs = append(cs,
		handCluster(0, nil),
		handCluster(1, []string{"node"}),
		handCluster(4, []string{"Graph", "-1.5", `"q"`, "<b>"}, [2]int32{0, 1}, [2]int32{3, 2}, [2]int32{1, 2}),
		handCluster(5, []string{"ſtrict", "é_1", "1a", "a b", ""}, [2]int32{4, 0}, [2]int32{0, 4}, [2]int32{2, 3}, [2]int32{1, 3}, [2]int32{0, 1}),
		handCluster(3, []string{".5", "5.", "-.", `"\q"`}, [2]int32{2, 0}, [2]int32{1, 0}),
	)
	for _, c := range cs {
		got, err := c.DOT()
		if err != nil {
			t.Fatal(err)
		}
		want, err := dot.Marshal(gonumGraph(c), "cluster", "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%+v: DOT differs from gonum's:\n%s\nwant:\n%s", c.Spec, got, want)
		}
	}
}

// TestDOTIDMatchesGonum: dotID quotes exactly the strings gonum's encoder
// quotes, and the same way.
func TestDOTIDMatchesGonum(t *testing.T) {
	ids := []string{"", "a", "_", "a1", "1a", "A_b9", "é", "ÿx", "Ā", "\xff", "node", "NODE", "Edge", "digraph", "subgraph", "strict", "ſtrict",
		"0", "-0", "12", "1.", "1.5", ".5", "-.5", "-", ".", "-.", "1e9", "1.2.3", "+1", `"x"`, `"`, `"\"`, `"\q"`, `"a"b"`, "<x>", "<", "<>",
		"a b", "a-b", "n0/gpu0", "pcie-switch", "\t", `\`}
	for _, s := range ids {
		c := handCluster(1, []string{s})
		want, err := dot.Marshal(gonumGraph(c), "cluster", "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		w := strings.TrimSuffix(strings.TrimPrefix(string(want), "strict graph cluster {\n  // Node definitions.\n  "), " [kind=gpu];\n}")
		if got := dotID(s); got != w {
			t.Errorf("dotID(%q) = %s, gonum writes %s", s, got, w)
		}
	}
}

// TestValidateMatchesGonum: Validate's pair and connectivity checks agree
// with gonum's edge count and connected components, on the build tests'
// clusters and on hand-made ones with a repeated pair or two components.
func TestValidateMatchesGonum(t *testing.T) {
	var cs []*Cluster
	for _, s := range specsSmall {
		cs = append(cs, mustBuild(t, s))
	}
	cs = append(cs,
		handCluster(0, nil),
		handCluster(1, nil),
		handCluster(3, nil, [2]int32{0, 1}, [2]int32{1, 2}),
		handCluster(3, nil, [2]int32{0, 1}, [2]int32{1, 0}, [2]int32{1, 2}),
		handCluster(4, nil, [2]int32{0, 1}, [2]int32{2, 3}),
		handCluster(5, nil, [2]int32{0, 4}, [2]int32{3, 1}),
	)
	for i, c := range cs {
		g := gonumGraph(c)
		var want string
		if got, n := g.Edges().Len(), len(c.Links())/2; got != n {
			want = "topology: " + strconv.Itoa(n) + " cables but " + strconv.Itoa(got) + " distinct device pairs"
		} else if cc := topo.ConnectedComponents(g); len(cc) != 1 {
			want = "topology: graph has " + strconv.Itoa(len(cc)) + " connected components"
		}
		err := c.Validate()
		if got := ""; err != nil {
			got = err.Error()
			if got != want {
				t.Errorf("cluster %d: Validate: %q, want %q", i, got, want)
			}
		} else if want != "" {
			t.Errorf("cluster %d: Validate passed, want %q", i, want)
		}
	}
}
