package collectives

import (
	"fmt"
	"math"

	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/topology"
	"github.com/simtrain/simtrain/sim/units"
)

// Sends starts point-to-point sends between many pairs of ranks on a
// fabric without a Group and a Runner play per pair: for links.arrow's
// pipeline traffic, where a 131,072-GPU run has 262,144 pairs. Each Start
// puts on the fabric the very transfer (route and size) that
// Runner.Start(NewGroup(c, [a, b]), Send, Auto, size, …) on a flow-mode
// runner would, at the fabric's current time, and nothing else: nobody is
// told when it ends.
//
// A pair's group figures (the protocol NCCL picks and the links'
// achievable fractions) depend only on how the pair sits on the cluster,
// so one group serves every pair of a kind (sendKey); the route is each
// pair's own, ECMP hash included.
type Sends struct {
	c      *topology.Cluster
	f      *network.Fabric
	groups map[sendKey]*sendGroup
	route  []int32
}

// sendGroup is one kind of pair's group and the runner's volume scale for
// the last size sent (the protocol NCCL picks depends on the size only).
type sendGroup struct {
	g     *Group
	bytes float64
	scale float64
	err   error
	sized bool // bytes, scale and err hold a size's figures
}

// sendKey is what a pair group's figures depend on (NewGroup): the node
// groups of both ranks (the GPUs' communication profiles and PCIe links),
// whether they share a scale-up domain, their local GPU indices (rails, PCIe
// switches, NVLink bridges, PXN hops), which of the two lies in the lower
// domain (NewGroup orders by domain: its scale-out rate is routed from
// there), and inside one domain how many nodes apart they are (a domain of
// several nodes, NVL72).
type sendKey struct {
	groupA, groupB int32
	localA, localB int32
	sameDomain     bool
	lowerFirst     bool
	nodeGap        int32
}

// NewSends returns a Sends that starts transfers on f, a fabric of c.
func NewSends(c *topology.Cluster, f *network.Fabric) *Sends {
	return &Sends{c: c, f: f, groups: map[sendKey]*sendGroup{}}
}

// Start starts the send of size bytes from rank a to rank b. It fails,
// starting nothing, where NewGroup(c, [a, b]) or the send's estimate fails
// (a rank outside the cluster, a == b, bytes not finite). Zero bytes start
// nothing, as on a runner.
func (s *Sends) Start(a, b int, size units.Bytes) error {
	c := s.c
	if a == b || a < 0 || b < 0 || a >= c.NumGPUs() || b >= c.NumGPUs() {
		_, err := NewGroup(c, []int{a, b}) // its error, without a key
		return err
	}
	gpn := max(c.GPUsPerNode(), 1)
	k := sendKey{groupA: int32(c.GroupOf(a)), groupB: int32(c.GroupOf(b)), localA: int32(a % gpn), localB: int32(b % gpn),
		sameDomain: c.DomainOf(a) == c.DomainOf(b), lowerFirst: c.DomainOf(a) <= c.DomainOf(b)}
	if k.sameDomain {
		k.nodeGap = int32(c.NodeOf(b) - c.NodeOf(a))
	}
	sg := s.groups[k]
	if sg == nil {
		g, err := NewGroup(c, []int{a, b})
		if err != nil {
			return err
		}
		sg = &sendGroup{g: g}
		s.groups[k] = sg
	}
	bytes := float64(size)
	if !sg.sized || math.Float64bits(sg.bytes) != math.Float64bits(bytes) {
		sg.scale, sg.err = sendScale(sg.g, bytes)
		sg.bytes, sg.sized = bytes, true
	}
	if sg.err != nil {
		return sg.err
	}
	if bytes == 0 {
		return nil // a runner only waits
	}
	// Runner.direct's one flow, from a to b.
	s.route = c.AppendRoute(s.route[:0], a, b, routeHash(a, b, 0))
	vol := bytes * sg.g.inflation(s.route, true)
	s.f.Start(s.route, units.Bytes(vol*sg.scale), nil, 0)
	return nil
}

// sendScale is the volume scale a runner gives a send of bytes on g
// (Runner.startPhase: the protocol's transfer time over the ideal one).
func sendScale(g *Group, bytes float64) (float64, error) {
	e, err := g.estimate(Send, Auto, bytes)
	if err != nil {
		return 0, err
	}
	if e.kind != kDirect {
		return 0, fmt.Errorf("collectives: a send picked algorithm kind %d, not a direct transfer", e.kind)
	}
	scale := 1.0
	if e.ideal > 0 {
		scale = e.xfer / e.ideal
	}
	return scale, nil
}
