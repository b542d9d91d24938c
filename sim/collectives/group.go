package collectives

import (
	"cmp"
	"math"
	"slices"

	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/topology"
)

// NewGroup analyses ranks (distinct GPU ranks of c, in ring order) once:
// the scale-up domains they span, ranks per domain, rail alignment, and the
// achievable bandwidths of the links their traffic crosses. Inside a domain
// it routes the group's ring on the topology and takes the bottleneck of the
// loaded links, each at its kind's achievable fraction (NVLink/XGMI:
// CommProfile.RingEfficiency or P2PEfficiency, PCIe: PCIeEfficiency); across
// domains it uses the NIC bandwidth per GPU at NICCommProfile.Efficiency.
// Errors name the problem: no ranks, a rank outside the cluster, a repeated
// rank.
//
// What it needs only while it makes the group (the rank check's sorted
// copy, the members arranged, the probe's routes) lives in a pooled
// scratch (scratches): a sweep makes its layouts' groups one after
// another, and each made them afresh, fresh pages for a process whose
// collector seldom runs (≈ 0.4 MB over the 1,000-point 70B sweep
// command; issue 18, alloc43). The group keeps its own rank list, order
// and domain offsets.
func NewGroup(c *topology.Cluster, ranks []int) (*Group, error) {
	sc := scratches.get()
	defer scratches.put(sc)
	if err := checkRanksWith(c, ranks, &sc.sorted); err != nil {
		return nil, err
	}
	g := &Group{c: c, ranks: slices.Clone(ranks), share: noContention}
	if cap(sc.ms) < len(ranks) {
		sc.ms = make([]member, len(ranks))
	}
	// Arranged in the scratch, then kept in one array of their sizes: the
	// domain offsets grown by append were a chain of arrays a group
	// (≈ 50 KB of the 1,000-point 70B sweep's fresh memory; emit52).
	sc.orders, sc.offs = slices.Grow(sc.orders[:0], len(ranks)), slices.Grow(sc.offs[:0], len(ranks)+1)
	order, domOff, ms := arrangeInto(c, ranks, sc.ms[:len(ranks)], sc.orders, sc.offs)
	both := make([]int32, len(order)+len(domOff))
	g.order = both[:copy(both, order):len(order)]
	g.domOff = both[len(order):]
	copy(g.domOff, domOff)

	s := &g.sh
	s.p = &c.GPUOf(ranks[0]).Comm // a heterogeneous cluster's: the first rank's node group
	s.n = len(ranks)
	s.domains = len(g.domOff) - 1
	s.ppnMin, s.ppnMax = math.MaxInt, 0
	big := 0 // a largest domain
	for d := 0; d < s.domains; d++ {
		k := int(g.domOff[d+1] - g.domOff[d])
		s.ppnMin = min(s.ppnMin, k)
		if k > s.ppnMax {
			s.ppnMax, big = k, d
		}
	}
	g.rail = true
	first := ms[g.domOff[0]:g.domOff[1]]
	for d := 1; d < s.domains && g.rail; d++ {
		dm := ms[g.domOff[d]:g.domOff[d+1]]
		if len(dm) != len(first) {
			g.rail = false
			break
		}
		for i := range dm {
			if dm[i].local != first[i].local {
				g.rail = false
				break
			}
		}
	}
	for i := range ranks {
		a, b := ranks[i], ranks[(i+1)%len(ranks)]
		if c.DomainOf(a) != c.DomainOf(b) {
			s.ringCross = true
		}
	}
	if len(ranks) >= 2 {
		s.sendCross = c.DomainOf(ranks[0]) != c.DomainOf(ranks[1])
	}

	s.treeDeg = treeDegree(s.domains)
	s.intraBW, s.p2pBW, s.a2aBW = math.Inf(1), math.Inf(1), math.Inf(1)
	if s.ppnMax >= 2 {
		g.probeDomain(g.order[g.domOff[big]:g.domOff[big+1]], sc)
	}
	s.netBW = float64(c.NICBandwidthPerGPU()) * c.NIC.Comm.Efficiency
	if s.domains > 1 {
		var buf [16]int32 // a route has at most 12 links (AppendRoute)
		var route []int32
		s.netBW, route = netRate(c, g.member(0, 0), g.member(1, 0), buf[:0])
		if id := route[0]; s.pcie {
			s.pcieBW = float64(c.Bandwidths()[id]) * linkEff(c, s.p, c.LinkKindOf(id), false)
		}
	}
	return g, nil
}

// member is one rank of a group with its scale-up domain and local index.
type member struct{ dom, local, rank int }

// arrange orders a group's ranks by domain, in rank order inside each
// (node-major, so that equal positions in two domains hold equal local
// indices, i.e. share a rail, whenever the domains hold the same local
// indices), and returns that order, the offsets of each domain's ranks in
// it (domain i is order[domOff[i]:domOff[i+1]]) and the members in order.
// The ranks must be valid and distinct.
func arrange(c *topology.Cluster, ranks []int) (order, domOff []int32, ms []member) {
	return arrangeInto(c, ranks, make([]member, len(ranks)), make([]int32, len(ranks)), nil)
}

// arrangeInto is arrange with the members sorted in ms[:len(ranks)] and
// the order and offsets appended to order[:0] and domOff[:0] (capped at
// their ends): a caller that arranges many groups and keeps their
// arrangements only for one computation (staticLoadWith) carves them from
// storage it keeps, instead of three new arrays a group, fresh pages for a
// sweep whose collector seldom runs (1.6 MB over the 1,000-point 70B
// sweep; docs/design.md "Speed", foot36). ms must hold len(ranks).
func arrangeInto(c *topology.Cluster, ranks []int, ms []member, order, domOff []int32) ([]int32, []int32, []member) {
	gpn := max(c.GPUsPerNode(), 1)
	ms = ms[:len(ranks)]
	for i, r := range ranks {
		ms[i] = member{c.DomainOf(r), r % gpn, r}
	}
	slices.SortFunc(ms, func(a, b member) int {
		if a.dom != b.dom {
			return cmp.Compare(a.dom, b.dom)
		}
		return cmp.Compare(a.rank, b.rank)
	})
	order, domOff = order[:0], append(domOff[:0], 0)
	for i, m := range ms {
		order = append(order, int32(m.rank))
		if i > 0 && m.dom != ms[i-1].dom {
			domOff = append(domOff, int32(i))
		}
	}
	domOff = append(domOff, int32(len(ms)))
	return order[:len(order):len(order)], domOff[:len(domOff):len(domOff)], ms
}

// probeDomain routes traffic patterns over one domain's ranks and sets the
// intra-domain rates, the PCIe flag and NVLS availability from the links
// they load: the ring (every rank to the next), one pair, and all pairs
// (all_to_all), each link at its kind's achievable fraction divided by the
// number of the pattern's transfers that cross it.
//
// Its link lists live in sc (ids and probe), left there for the next call.
func (g *Group) probeDomain(dom []int32, sc *loadScratch) {
	c, s := g.c, &g.sh
	ids, route := sc.ids[:0], sc.probe[:0]
	defer func() { sc.ids, sc.probe = ids, route }()
	for i := range dom {
		a, b := int(dom[i]), int(dom[(i+1)%len(dom)])
		route = c.AppendRoute(route[:0], a, b, routeHash(a, b, 0))
		ids = append(ids, route...)
	}
	nvlinkOnly := true
	s.intraBW = g.bottleneck(ids, false, func(k topology.LinkKind) {
		if k == topology.LinkPCIe {
			s.pcie = true
		}
		if k != topology.LinkNVLink {
			nvlinkOnly = false
		}
	})
	ids = ids[:0]
	for i := range dom {
		for j := range dom {
			if i != j {
				a, b := int(dom[i]), int(dom[j])
				ids = c.AppendRoute(ids, a, b, routeHash(a, b, j))
			}
		}
	}
	if c.MeshNode() && len(dom) > 2 {
		// On a node whose GPUs are linked pairwise, NCCL runs its channels
		// over different rings so that a ring collective loads every pair's
		// link, not only those of one ring in rank order: its topology gives
		// each GPU-to-GPU path the bandwidth of all NVLinks between the two
		// (src/graph/topo.cc, ncclTopoAddNvLinks: count × per-link rate) and
		// the ring search (src/graph/search.cc) packs channels until every
		// GPU's links are used. k ranks each send on k-1 links, so a ring
		// step moves k-1 times one link's rate per rank (the all-pairs
		// pattern loads each directed link once). RCCL does the same on
		// MI300X's 8-GPU XGMI mesh (topology/doc.go).
		s.intraBW = max(s.intraBW, g.bottleneck(slices.Clone(ids), false, nil)*float64(len(dom)-1))
	}
	s.a2aBW = g.bottleneck(ids, true, nil)
	a, b := int(dom[0]), int(dom[1])
	route = c.AppendRoute(route[:0], a, b, routeHash(a, b, 0))
	s.p2pBW = g.bottleneck(slices.Clone(route), true, nil)
	if c.NVLS() && nvlinkOnly && len(route) > 0 {
		s.nvlsBW = float64(c.Bandwidths()[route[0]]) * s.p.NVLSEfficiency
	}
}

// bottleneck sorts ids (the links of a pattern's routes, one entry per
// transfer crossing) and returns the lowest achievable rate per transfer,
// min over links of bandwidth x efficiency / transfers; visit sees each
// link's kind. Bandwidths and kinds come from the cluster's dense array
// and the link ids, not the link records (made only when asked for).
func (g *Group) bottleneck(ids []int32, p2p bool, visit func(topology.LinkKind)) float64 {
	slices.Sort(ids)
	rate := math.Inf(1)
	for i := 0; i < len(ids); {
		j := i
		for j < len(ids) && ids[j] == ids[i] {
			j++
		}
		id := ids[i]
		k := g.c.LinkKindOf(id)
		if visit != nil {
			visit(k)
		}
		rate = math.Min(rate, float64(g.c.Bandwidths()[id])*g.linkEff(k, p2p)/float64(j-i))
		i = j
	}
	return rate
}

// linkEff is the achievable fraction of a link of kind k for ring
// (p2p=false) or point-to-point (p2p=true) traffic.
func (g *Group) linkEff(k topology.LinkKind, p2p bool) float64 { return linkEff(g.c, g.sh.p, k, p2p) }

// linkEff is the achievable fraction of a link of kind k on cluster c: the
// GPU's communication profile p for scale-up and PCIe links, the NIC's
// efficiency for network links.
func linkEff(c *topology.Cluster, p *hardware.CommProfile, k topology.LinkKind, p2p bool) float64 {
	switch k {
	case topology.LinkNVLink, topology.LinkXGMI:
		if p2p {
			return p.P2PEfficiency
		}
		return p.RingEfficiency
	case topology.LinkPCIe:
		return p.PCIeEfficiency
	}
	return c.NIC.Comm.Efficiency
}

// netRate is the achievable scale-out rate per GPU between ranks a and b of
// different domains: the NIC bandwidth per GPU at the NIC's efficiency,
// capped by the achievable rate of the route's non-network links (e.g. an
// 800G NIC behind a PCIe Gen5 x16 link). It returns the route (appended to
// buf) too.
func netRate(c *topology.Cluster, a, b int, buf []int32) (float64, []int32) {
	net := float64(c.NICBandwidthPerGPU()) * c.NIC.Comm.Efficiency
	route := c.AppendRoute(buf[:0], a, b, routeHash(a, b, 0))
	for _, id := range route {
		if k := c.LinkKindOf(id); k != topology.LinkNetwork {
			net = math.Min(net, float64(c.Bandwidths()[id])*linkEff(c, &c.GPUOf(a).Comm, k, false))
		}
	}
	return net, route
}

// groupNetRate is netRate's rate without its route where no link of the
// route can lower it: the route's links other than the network's (the
// GPUs' and NICs' PCIe, a PXN hop's scale-up links) all achieve at least
// the least bandwidth of their kind on the cluster (MinBandwidth) times
// the kind's efficiency for a's GPU, and where that floor is no lower
// than the NIC rate, math.Min keeps the NIC rate at every link: the same
// value, without routing (a call per pipeline send pair; issue 18).
// Otherwise it is netRate. buf is netRate's buffer, returned as it leaves
// it.
func groupNetRate(c *topology.Cluster, a, b int, buf []int32) (float64, []int32) {
	net := float64(c.NICBandwidthPerGPU()) * c.NIC.Comm.Efficiency
	if hostFloor(c, &c.GPUOf(a).Comm) >= net {
		return net, buf
	}
	return netRate(c, a, b, buf)
}

// hostFloor is the least achievable rate, bandwidth × efficiency for a GPU
// of profile p (linkEff, as netRate weighs them), of any link of the
// cluster that is not a network link; +Inf where there are none, -Inf
// where an efficiency is negative or NaN.
func hostFloor(c *topology.Cluster, p *hardware.CommProfile) float64 {
	floor := math.Inf(1)
	for _, k := range [...]topology.LinkKind{topology.LinkNVLink, topology.LinkXGMI, topology.LinkPCIe} {
		if bw, ok := c.MinBandwidth(k); ok {
			e := linkEff(c, p, k, false)
			if !(e >= 0) {
				return math.Inf(-1) // a product no longer grows with the bandwidth: no floor
			}
			floor = math.Min(floor, float64(bw)*e)
		}
	}
	return floor
}

// routeHash spreads a collective's flows over equal-cost paths
// deterministically (splitmix64 of the endpoints and a channel number).
func routeHash(src, dst, ch int) uint64 {
	x := uint64(src)<<40 ^ uint64(dst)<<16 ^ uint64(ch)
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
