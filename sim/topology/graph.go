package topology

import (
	"fmt"
	"math"
	"strconv"

	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/encoding"
	"gonum.org/v1/gonum/graph/encoding/dot"
	"gonum.org/v1/gonum/graph/simple"
	"gonum.org/v1/gonum/graph/topo"
)

// adjacency builds the CSR adjacency once; every reader of adjStart,
// adjTo or adjLink calls it first.
func (c *Cluster) adjacency() { c.adjOnce.Do(c.freeze) }

// freeze builds the CSR adjacency: the out-links of every device sorted by
// neighbour id, then by link id. Two stable counting sorts (by To, then by
// From) give that order in O(V+E) without comparisons.
func (c *Cluster) freeze() {
	links := c.Links()
	nv, ne := len(c.Devices()), len(links)
	count := make([]int32, nv+1)
	for i := range links {
		count[links[i].To+1]++
	}
	for v := 1; v <= nv; v++ {
		count[v] += count[v-1]
	}
	byTo := make([]int32, ne)
	for i := range links {
		t := links[i].To
		byTo[count[t]] = int32(i)
		count[t]++
	}
	c.adjStart = make([]int32, nv+1)
	for i := range links {
		c.adjStart[links[i].From+1]++
	}
	for v := 1; v <= nv; v++ {
		c.adjStart[v] += c.adjStart[v-1]
	}
	pos := make([]int32, nv)
	copy(pos, c.adjStart[:nv])
	c.adjTo = make([]int32, ne)
	c.adjLink = make([]int32, ne)
	for _, e := range byTo {
		f := links[e].From
		c.adjTo[pos[f]] = links[e].To
		c.adjLink[pos[f]] = e
		pos[f]++
	}
}

// bfs computes hop distances from src over the frozen adjacency into dist
// (len(Devices), -1 = unreachable), visiting neighbours in sorted order.
// With skipNetwork, network links (NIC↔switch, switch↔switch) are not used.
// queue is scratch space of len(Devices); both slices are reused by callers.
func (c *Cluster) bfs(src int32, dist, queue []int32, skipNetwork bool) {
	c.adjacency()
	for i := range dist {
		dist[i] = -1
	}
	dist[src] = 0
	queue[0] = src
	head, tail := 0, 1
	for head < tail {
		v := queue[head]
		head++
		for i := c.adjStart[v]; i < c.adjStart[v+1]; i++ {
			if skipNetwork && c.Links()[c.adjLink[i]].Kind == LinkNetwork {
				continue
			}
			w := c.adjTo[i]
			if dist[w] < 0 {
				dist[w] = dist[v] + 1
				queue[tail] = w
				tail++
			}
		}
	}
}

// diameter is the largest hop distance between two GPUs. It runs a BFS from
// every GPU of the first and of the last node: every node is wired the same
// way inside and every network tier is symmetric, so these GPUs' largest
// distances are the diameter (tests check this against all-pairs BFS).
func (c *Cluster) diameter() int {
	nv := len(c.Devices())
	dist, queue := make([]int32, nv), make([]int32, nv)
	best := 0
	g := c.l.g
	for _, node := range []int{0, c.l.nodes - 1} {
		for local := range g {
			c.bfs(int32(node*g+local), dist, queue, false)
			for r := range c.l.gpus {
				best = max(best, int(dist[r]))
			}
		}
		if c.l.nodes == 1 {
			break
		}
	}
	return best
}

// maxFlow returns the maximum flow (bytes/s, one direction) from the GPUs
// with rank < half to the GPUs with rank >= half, using only links for which
// use(link) is true: the capacity of the minimum cut between the two halves
// (max-flow/min-cut theorem). Dinic's algorithm on the frozen adjacency,
// with every GPU of the first half a source of unbounded supply and every
// GPU of the second half a sink. A cable's two directions share one net
// flow value, so pushing along one direction first cancels flow on the
// other, as in the residual graph of two opposite arcs.
func (c *Cluster) maxFlow(half int, use func(e int) bool) float64 {
	c.adjacency()
	nv, ne := len(c.Devices()), len(c.Links())
	if half <= 0 || half >= c.l.gpus {
		return 0
	}
	const eps = 1.0 // bytes/s; capacities are ≥ 1e9
	ok := make([]bool, ne)
	for e := range ne {
		ok[e] = use(e)
	}
	flow := make([]float64, ne/2) // net flow along the cable's even direction
	residual := func(e int32) float64 {
		if e&1 == 0 {
			return float64(c.bw[e]) - flow[e>>1]
		}
		return float64(c.bw[e]) + flow[e>>1]
	}
	isSink := func(v int32) bool { return int(v) >= half && int(v) < c.l.gpus }
	level := make([]int32, nv)
	queue := make([]int32, nv)
	iter := make([]int32, nv)
	var dfs func(v int32, limit float64) float64
	dfs = func(v int32, limit float64) float64 {
		if isSink(v) {
			return limit
		}
		for ; iter[v] < c.adjStart[v+1]; iter[v]++ {
			i := iter[v]
			e, w := c.adjLink[i], c.adjTo[i]
			if level[w] != level[v]+1 || !ok[e] {
				continue
			}
			r := residual(e)
			if r <= eps {
				continue
			}
			if d := dfs(w, math.Min(limit, r)); d > 0 {
				if e&1 == 0 {
					flow[e>>1] += d
				} else {
					flow[e>>1] -= d
				}
				return d
			}
		}
		return 0
	}
	total := 0.0
	for {
		for i := range level {
			level[i] = -1
		}
		tail := 0
		for r := range half {
			level[r] = 0
			queue[tail] = int32(r)
			tail++
		}
		reached := false
		for head := 0; head < tail; head++ {
			v := queue[head]
			if isSink(v) {
				reached = true
				continue
			}
			for i := c.adjStart[v]; i < c.adjStart[v+1]; i++ {
				e, w := c.adjLink[i], c.adjTo[i]
				if level[w] >= 0 || !ok[e] || residual(e) <= eps {
					continue
				}
				level[w] = level[v] + 1
				queue[tail] = w
				tail++
			}
		}
		if !reached {
			return total
		}
		copy(iter, c.adjStart[:nv])
		for r := range half {
			for {
				d := dfs(int32(r), math.Inf(1))
				if d <= 0 {
					break
				}
				total += d
			}
		}
	}
}

// gNode and gEdge carry devices and cables into gonum.
type gNode struct {
	id  int64
	dev *Device
}

func (n gNode) ID() int64     { return n.id }
func (n gNode) DOTID() string { return n.dev.Name }
func (n gNode) Attributes() []encoding.Attribute {
	return []encoding.Attribute{{Key: "kind", Value: n.dev.Kind.String()}}
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

// Graph returns the cluster as a gonum undirected graph: one node per device
// (node id = device id) and one edge per cable, carrying its kind, bandwidth
// and cable count as DOT attributes. It is built on demand for validation
// and export; simtrain never routes on it (gonum's path search breaks ties in
// map order, go-notes.md §1b).
func (c *Cluster) Graph() *simple.UndirectedGraph {
	g := simple.NewUndirectedGraph()
	for i := range c.Devices() {
		g.AddNode(gNode{id: int64(i), dev: &c.Devices()[i]})
	}
	for k := 0; k < len(c.Links()); k += 2 {
		ln := &c.Links()[k]
		g.SetEdge(gEdge{f: gNode{int64(ln.From), &c.Devices()[ln.From]}, t: gNode{int64(ln.To), &c.Devices()[ln.To]}, link: ln})
	}
	return g
}

// DOT returns the cluster in Graphviz DOT form (nodes named by device name,
// sorted by id, edges with kind, bandwidth and cable count).
func (c *Cluster) DOT() ([]byte, error) {
	return dot.Marshal(c.Graph(), "cluster", "", "  ")
}

// Validate checks the built graph with gonum: every cable joins two distinct
// devices, no two cables join the same pair (parallel cables are merged, so
// the gonum graph is faithful), every link has positive bandwidth, the two
// directions of each cable mirror each other, and the graph is connected.
func (c *Cluster) Validate() error {
	for k := 0; k+1 < len(c.Links()); k += 2 {
		a, b := c.Links()[k], c.Links()[k+1]
		if a.From == a.To || a.From != b.To || a.To != b.From || a.Kind != b.Kind {
			return fmt.Errorf("topology: links %d/%d are not the two directions of one cable", k, k+1)
		}
		if !(a.Bandwidth > 0) || !(b.Bandwidth > 0) {
			return fmt.Errorf("topology: link %d has bandwidth %g", k, a.Bandwidth)
		}
	}
	g := c.Graph()
	if got, want := g.Edges().Len(), len(c.Links())/2; got != want {
		return fmt.Errorf("topology: %d cables but %d distinct device pairs", want, got)
	}
	if cc := topo.ConnectedComponents(g); len(cc) != 1 {
		return fmt.Errorf("topology: graph has %d connected components", len(cc))
	}
	return nil
}
