package network

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/units"
)

// fatTree is a synthetic two-tier (leaf/spine) fat tree for benchmarks:
// hosts hang off leaves, every leaf has one uplink to every spine, all links
// 50 GB/s (a 400 Gb/s port) with 500 ns latency, non-blocking when spines ==
// hosts per leaf. Directed link ids: host h up = h, down = H+h; leaf x to
// spine s = 2H + x·S + s; spine s to leaf x = 2H + L·S + x·S + s.
type fatTree struct {
	hosts, perLeaf, leaves, spines int
	bw                             []float64
	lat                            []engine.Time
}

func newFatTree(leaves, perLeaf, spines int) *fatTree {
	t := &fatTree{hosts: leaves * perLeaf, perLeaf: perLeaf, leaves: leaves, spines: spines}
	n := 2*t.hosts + 2*leaves*spines
	t.bw = make([]float64, n)
	t.lat = make([]engine.Time, n)
	for i := range t.bw {
		t.bw[i] = 50e9
		t.lat[i] = 500
	}
	return t
}

// route appends the links from host a to host b; the spine is picked by a
// hash of the pair (ECMP).
func (t *fatTree) route(dst []int32, a, b int) []int32 {
	H, L, S := t.hosts, t.leaves, t.spines
	la, lb := a/t.perLeaf, b/t.perLeaf
	if la == lb {
		return append(dst, int32(a), int32(H+b))
	}
	s := int((uint64(a)*0x9e3779b97f4a7c15 ^ uint64(b)) % uint64(S))
	return append(dst, int32(a), int32(2*H+la*S+s), int32(2*H+L*S+lb*S+s), int32(H+b))
}

// closedLoop keeps a fixed number of transfers running between random host
// pairs: every completion starts a new one. It stops the engine once target
// completions have happened.
type closedLoop struct {
	e      *engine.Engine
	f      *Fabric
	t      *fatTree
	r      *rand.Rand
	buf    []int32
	count  int
	target int
}

func (c *closedLoop) startOne() {
	a := c.r.IntN(c.t.hosts)
	b := c.r.IntN(c.t.hosts - 1)
	if b >= a {
		b++
	}
	c.buf = c.t.route(c.buf[:0], a, b)
	bytes := float64(1<<20 + c.r.IntN(63<<20)) // 1–64 MiB
	c.f.Start(c.buf, units.Bytes(bytes), c, 0)
}

func (c *closedLoop) TransferDone(engine.Time, int64) {
	c.count++
	c.startOne()
	if c.count == c.target {
		c.e.Stop()
	}
}

func runClosedLoop(b *testing.B, fid Fidelity, tree *fatTree, concurrent int) {
	e := engine.New()
	f := New(e, rates(tree.bw), tree.lat, fid)
	c := &closedLoop{e: e, f: f, t: tree, r: rand.New(rand.NewPCG(1, 2))}
	for i := 0; i < concurrent; i++ {
		c.startOne()
	}
	// Warm up until every initial transfer has been replaced once, so the
	// slabs, heaps and link lists have reached their steady-state sizes.
	c.target = 2 * concurrent
	e.Run()
	s0 := f.Stats()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	c.target += b.N
	e.Run()
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/el.Seconds(), "transfers/s")
	if fid == Flow {
		s := f.Stats()
		solves := float64(s.Solves - s0.Solves)
		b.ReportMetric(float64(el.Nanoseconds())/solves, "ns/solve")
		b.ReportMetric(float64(s.FlowsVisited-s0.FlowsVisited)/solves, "flows/solve")
		b.ReportMetric(float64(s.Rescheduled-s0.Rescheduled)/solves, "resched/solve")
	}
	if f.InFlight() != concurrent {
		b.Fatalf("%d transfers in flight, want %d", f.InFlight(), concurrent)
	}
}

// BenchmarkAnalytic: transfers/s at analytic fidelity, 1,000 in flight on a
// 2,048-host fat tree. One op is one transfer started and completed.
func BenchmarkAnalytic(b *testing.B) {
	runClosedLoop(b, Analytic, newFatTree(64, 32, 32), 1000)
}

// BenchmarkFlowFatTree: flow fidelity with 1,000 and 10,000 concurrent flows
// between random host pairs on a 16,384-host two-tier fat tree (512 leaves
// of 32 hosts, 32 spines; 65,536 directed links). One op is one flow
// completed, which is one departure, one arrival and one re-solve.
func BenchmarkFlowFatTree(b *testing.B) {
	tree := newFatTree(512, 32, 32)
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("flows=%d", n), func(b *testing.B) {
			runClosedLoop(b, Flow, tree, n)
		})
	}
}

// BenchmarkFlowBurst starts n flows of 16 MiB each between random host
// pairs at one instant, as a collective phase does, and runs until all have
// completed. One op is one whole burst on the same fabric (the first op
// also grows its slabs). Solve metrics are per burst.
func BenchmarkFlowBurst(b *testing.B) {
	tree := newFatTree(512, 32, 32)
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("flows=%d", n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(3, 4))
			routes := make([][]int32, n)
			for i := range routes {
				a := r.IntN(tree.hosts)
				c := (a + 1 + r.IntN(tree.hosts-1)) % tree.hosts
				routes[i] = tree.route(nil, a, c)
			}
			var sink nopDone
			e := engine.New()
			f := New(e, rates(tree.bw), tree.lat, Flow)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for _, rt := range routes {
					f.Start(rt, 16<<20, sink, 0)
				}
				e.Run()
				if f.InFlight() != 0 {
					b.Fatal("burst did not drain")
				}
			}
			st := f.Stats()
			b.ReportMetric(float64(st.Solves)/float64(b.N), "solves/burst")
			b.ReportMetric(float64(st.FlowsVisited)/float64(st.Solves), "flows/solve")
		})
	}
}

type nopDone struct{}

func (nopDone) TransferDone(engine.Time, int64) {}

// BenchmarkAnalyticChanged: reading back what a round of transfers moved
// with change tracking on, as links.arrow's reconstruction does after each
// collective: every host of a 131,072-host fat tree (4,096 leaves of 32, 32
// spines: 524,288 links, 13 MB of link state) sends to a host half the
// cluster away, then the moved links' figures are added into per-link
// totals, by Changed and a second pass over the list (reading each link's
// figures again) or by FoldChanged's one pass. The round's transfers are
// not timed; one op is one read-back.
//
//	go test ./sim/network -run '^$' -bench AnalyticChanged -benchmem
func BenchmarkAnalyticChanged(b *testing.B) {
	t := newFatTree(4096, 32, 32)
	bw := make([]units.BytesPerSecond, len(t.bw))
	for i, v := range t.bw {
		bw[i] = units.BytesPerSecond(v)
	}
	for _, fold := range []bool{false, true} {
		name := "Changed"
		if fold {
			name = "FoldChanged"
		}
		b.Run(name, func(b *testing.B) {
			e := engine.New()
			f := New(e, bw, t.lat, Analytic)
			f.TrackChanges()
			bytes, busy := make([]float64, len(bw)), make([]int64, len(bw))
			var changed []int32
			var before []LinkFigures
			var route []int32
			add := func(l int32, p, cur LinkFigures) {
				bytes[l] += cur.Bytes - p.Bytes
				busy[l] += int64(cur.Busy - p.Busy)
			}
			links := 0
			for b.Loop() {
				b.StopTimer()
				for h := range t.hosts {
					route = t.route(route[:0], h, (h+t.hosts/2)%t.hosts)
					f.Start(route, 1<<20, nil, 0)
				}
				e.Run()
				b.StartTimer()
				if fold {
					f.FoldChanged(func(l int32, p, cur LinkFigures) { links++; add(l, p, cur) })
					continue
				}
				changed, before = f.Changed(changed[:0], before[:0])
				for j, l := range changed {
					links++
					add(l, before[j], LinkFigures{Bytes: float64(f.LinkBytes(int(l))), Busy: f.LinkBusy(int(l))})
				}
			}
			b.ReportMetric(float64(links)/float64(b.N), "links/op")
		})
	}
}
