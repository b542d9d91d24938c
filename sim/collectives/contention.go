package collectives

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/simtrain/simtrain/sim/topology"
)

// Share is the fraction of its achievable scale-out bandwidth per GPU that
// a group keeps when it runs a collective together with other groups, one
// figure per traffic pattern that crosses the network: Ring (ring
// collectives, hierarchical phases), Tree (the double binary tree of tree
// and NVLSTree all-reduce) and Direct (all_to_all, send_recv and send
// across domains). 1 is the uncontended fabric, the value of a new Group.
type Share struct {
	Ring, Tree, Direct float64
}

// noContention is the Share of a group alone on a non-blocking fabric.
var noContention = Share{Ring: 1, Tree: 1, Direct: 1}

// pattern is a traffic pattern whose cross-domain flows StaticShares
// routes.
type pattern uint8

const (
	patRing pattern = iota
	patTree
	patAllToAll
	patSend
	numPatterns
)

// Share returns the contention share the group's analytic costs use
// (noContention unless WithShare set one).
func (g *Group) Share() Share { return g.share }

// WithShare returns a copy of g whose analytic costs (Cost, and Runner at
// analytic fidelity) run each pattern's scale-out traffic at s of the
// achievable NIC rate: the group still picks its algorithm and protocol
// as NCCL does, from the uncontended fabric it cannot see (NCCL's tuner
// knows no other job), and that choice is then priced at the contended
// rate. Values outside (0, 1] are taken as 1. Flow fidelity must use
// uncontended groups: the fabric shares the links itself.
func (g *Group) WithShare(s Share) *Group {
	h := *g
	h.SetShare(s)
	return &h
}

// SetShare gives g the share WithShare would give its copy, in place: for
// a group its maker holds alone (just made by NewGroup), where the copy
// WithShare makes leaves the group it copied as garbage. The pricer makes
// every group of a layout that way: ≈ 120 KB of fresh memory over the
// 1,000-point 70B sweep (docs/design.md "Speed", emit52).
func (g *Group) SetShare(s Share) {
	clamp := func(f float64) float64 {
		if f > 0 && f < 1 {
			return f
		}
		return 1
	}
	g.share = Share{clamp(s.Ring), clamp(s.Tree), clamp(s.Direct)}
}

// contended returns the shape that prices kind k under the group's share:
// the scale-out rate per GPU times the share of k's pattern.
func (g *Group) contended(k kind) (shape, bool) {
	f := 1.0
	switch k {
	case kRing, kHier:
		f = g.share.Ring
	case kTree, kNVLSTree:
		f = g.share.Tree
	case kDirect:
		f = g.share.Direct
	}
	if !(f > 0 && f < 1) || g.sh.domains < 2 { // a zero Share is no contention too
		return g.sh, false
	}
	s := g.sh
	s.netBW *= f
	if s.pcieBW > 0 {
		// The GPU's own PCIe link is not what is contended.
		s.pcieBW = max(s.pcieBW, s.netBW)
	}
	return s, true
}

// StaticShares prices the contention among groups that run the same
// collective at the same moment (in a data-parallel step: the groups of
// one kind and pipeline stage) without playing flows: every group's
// cross-domain transfers for each pattern are routed exactly as the flow
// runner routes them (same rings, trees and all-to-all peers, same ECMP
// hash), each network link's achievable bandwidth (line rate × the NIC's
// efficiency) is split evenly among the transfers routed over it (static
// load: all of them active at once), and a transfer's share is that rate
// on its most loaded link over the rate the closed form gives it alone (its
// GPU's scale-out rate split among the group's own transfers leaving or
// entering that GPU: one for a ring, up to the tree degree for the double
// binary tree, one per other domain for all-to-all). A group's share is
// its transfers' lowest, at most 1. An oversubscribed tier
// (network.oversubscription above network.pod_gpus pods, or oversubscribed
// leaf uplinks) and ECMP collisions both show up as links with more
// transfers than they carry at full rate. Groups inside one domain get
// share 1. The work is O(transfers × hops) with one counter per link; the
// all-to-all pattern (n·(D−1) transfers a group) is routed only when
// allToAll asks for it (else its share is 1). Errors are NewGroup's.
func StaticShares(c *topology.Cluster, groups [][]int, allToAll bool) ([]Share, error) {
	pats := RingPattern | TreePattern
	if allToAll {
		pats |= AllToAllPattern
	}
	return StaticSharesFor(c, groups, pats)
}

// Patterns selects the traffic patterns StaticSharesFor routes: a set of
// RingPattern (Share.Ring), TreePattern (Share.Tree) and AllToAllPattern
// (Share.Direct).
type Patterns uint8

const (
	RingPattern Patterns = 1 << iota
	TreePattern
	AllToAllPattern
)

// StaticSharesFor is StaticShares routing only the patterns in pats: each
// routed pattern's share is the one StaticShares gives (every pattern is
// counted on its own, from empty links), each other pattern's is 1. Why:
// the tree pattern is ≈ 4× the ring's transfers, and its share is read only
// by an all-reduce (ReadsTreeShare), which many groups never run, so the
// pricer routes it when one is priced (issue 18). Errors are NewGroup's.
func StaticSharesFor(c *topology.Cluster, groups [][]int, pats Patterns) ([]Share, error) {
	var buf [3]pattern
	sc := scratches.get()
	defer scratches.put(sc)
	sh, err := staticLoadWith(sc, c, groups, pats.list(buf[:0]))
	if err != nil {
		return nil, err
	}
	out := make([]Share, len(groups))
	for i, s := range sh {
		out[i] = Share{Ring: s[patRing], Tree: s[patTree], Direct: s[patAllToAll]}
	}
	return out, nil
}

// LowestStaticShareFor is the lowest of StaticSharesFor's shares, per
// pattern (each field the least over the groups; no contention for no
// groups), without the list: the pricer reads only the lowest (every group
// of a kind and stage gets it), and the list was a fresh array for every
// kind and stage of every layout a sweep priced (≈ 0.25 MB of fresh pages
// over the 1,000-point 70B sweep command, whose collector seldom runs;
// issue 18, alloc43). Errors are StaticSharesFor's.
func LowestStaticShareFor(c *topology.Cluster, groups [][]int, pats Patterns) (Share, error) {
	var buf [3]pattern
	sc := scratches.get()
	defer scratches.put(sc)
	sh, err := staticLoadWith(sc, c, groups, pats.list(buf[:0]))
	if err != nil {
		return Share{}, err
	}
	low := noContention
	for _, s := range sh {
		low = Share{Ring: min(low.Ring, s[patRing]), Tree: min(low.Tree, s[patTree]), Direct: min(low.Direct, s[patAllToAll])}
	}
	return low, nil
}

// list appends the patterns pats selects to buf, in pattern order.
func (pats Patterns) list(buf []pattern) []pattern {
	for _, p := range [...]struct {
		sel Patterns
		pat pattern
	}{{RingPattern, patRing}, {TreePattern, patTree}, {AllToAllPattern, patAllToAll}} {
		if pats&p.sel != 0 {
			buf = append(buf, p.pat)
		}
	}
	return buf
}

// ReadsTreeShare reports whether pricing op (Group.Cost, any algorithm)
// may read Share.Tree: only an all-reduce, the one collective with tree
// algorithms (tree, and NVLS tree across domains; Group.pick's candidates).
// For every other op a Share's Tree value changes no cost, so a caller may
// leave it unrouted (StaticSharesFor) until an all-reduce is priced
// (TestTreeShareReadByAllReduceOnly).
func ReadsTreeShare(op Op) bool { return op == AllReduce }

// SendShares is StaticShares for point-to-point sends that run at once,
// pair i sending from pairs[i][0] to pairs[i][1] (one transfer each, routed
// as the runner routes a send): the share of each pair's send, for
// Share.Direct.
func SendShares(c *topology.Cluster, pairs [][2]int) ([]float64, error) {
	sc := scratches.get()
	defer scratches.put(sc)
	sh, err := sendLoad(sc, c, pairs)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(pairs))
	for i, s := range sh {
		out[i] = s[patSend]
	}
	return out, nil
}

// MeanSendShare is the mean of SendShares(c, pairs), summed in pair order
// and divided by len(pairs) as a caller of SendShares would, without
// allocating: the pricer asks it for every pipeline boundary, 8,192 pairs
// each at 131,072 GPUs (issue 18). No pairs: 1 (nothing contends).
func MeanSendShare(c *topology.Cluster, pairs [][2]int) (float64, error) {
	if len(pairs) == 0 {
		return 1, nil
	}
	sc := scratches.get()
	defer scratches.put(sc)
	sh, err := sendLoad(sc, c, pairs)
	if err != nil {
		return 0, err
	}
	sum := 0.0
	for _, s := range sh {
		sum += s[patSend]
	}
	return sum / float64(len(pairs)), nil
}

// sendLoad is staticLoadWith for pairs' sends, the pairs viewed as groups
// in the scratch (sc.pairs, cleared after so that it keeps no caller's
// pairs alive).
func sendLoad(sc *loadScratch, c *topology.Cluster, pairs [][2]int) ([][numPatterns]float64, error) {
	groups := slices.Grow(sc.pairs[:0], len(pairs))[:len(pairs)]
	for i := range pairs {
		groups[i] = pairs[i][:]
	}
	defer func() {
		clear(groups)
		sc.pairs = groups[:0]
	}()
	return staticLoadWith(sc, c, groups, []pattern{patSend})
}

// staticLoad computes the static-load share of every group for each of
// pats (1 for the others); see StaticShares.
func staticLoad(c *topology.Cluster, groups [][]int, pats []pattern) ([][numPatterns]float64, error) {
	sc := scratches.get()
	defer scratches.put(sc)
	out, err := staticLoadWith(sc, c, groups, pats)
	if err != nil {
		return nil, err
	}
	return slices.Clone(out), nil
}

// staticLoadWith is staticLoad in the scratch sc: the shares it returns
// are sc.out, valid until sc's next use.
func staticLoadWith(sc *loadScratch, c *topology.Cluster, groups [][]int, pats []pattern) ([][numPatterns]float64, error) {
	out := slices.Grow(sc.out[:0], len(groups))[:len(groups)]
	sc.out = out[:0]
	type gr = loadGroup
	// A send reads only its two ranks, so pairs skip the arrangement (three
	// allocations per pipeline pair) when no other pattern is routed.
	// (No pattern at all is not send-only: every share stays 1.)
	sendOnly := len(pats) > 0 && !slices.ContainsFunc(pats, func(p pattern) bool { return p != patSend })
	// gs and multi live in the scratch too: 8,192 pipeline pairs a call
	// otherwise cost fresh pages every call (issue 18).
	gs := slices.Grow(sc.gs[:0], len(groups))[:len(groups)]
	clear(gs)
	// The arrangements are carved from sc.orders and sc.offs, made with
	// room for every group's (a group's offsets hold at most its ranks
	// and one), so that no arrangement moves while gs holds it.
	if ranks := totalRanks(groups); cap(sc.orders) < ranks || cap(sc.offs) < ranks+len(groups) {
		sc.orders, sc.offs = make([]int32, 0, ranks), make([]int32, 0, ranks+len(groups))
	}
	sc.orders, sc.offs = sc.orders[:0], sc.offs[:0]
	multi := sc.multi[:0] // indices of groups spanning domains
	allPairs := true      // every group a pair (sendPairShares)
	defer func() {
		clear(gs) // drop the arrangements
		sc.gs, sc.multi = gs[:0], multi[:0]
	}()
	for i, ranks := range groups {
		out[i] = [numPatterns]float64{1, 1, 1, 1}
		if err := checkRanksInto(c, ranks, &sc.seen); err != nil {
			return nil, err
		}
		allPairs = allPairs && len(ranks) == 2
		if sendOnly && len(ranks) == 2 {
			x, y := ranks[0], ranks[1]
			if c.DomainOf(x) == c.DomainOf(y) {
				continue
			}
			lead := [2]int{x, y}
			if c.DomainOf(y) < c.DomainOf(x) { // arrange orders the domains
				lead = [2]int{y, x}
			}
			gs[i] = gr{first: [2]int{x, y}, lead: lead, ppnMin: 1}
			multi = append(multi, i)
			continue
		}
		if oneDomain(c, ranks) {
			// What arrange would show (one domain) without its three
			// allocations: a tensor-parallel stage has a group per node.
			continue
		}
		var a arrangement
		a.order, a.domOff, sc.ms = arrangeInto(c, ranks, slices.Grow(sc.ms[:0], len(ranks)), sc.orders[len(sc.orders):], sc.offs[len(sc.offs):])
		sc.orders, sc.offs = sc.orders[:len(sc.orders)+len(a.order)], sc.offs[:len(sc.offs)+len(a.domOff)]
		if a.domains() < 2 {
			continue
		}
		ppn := len(ranks)
		for d := 0; d < a.domains(); d++ {
			ppn = min(ppn, a.domSize(d))
		}
		gs[i] = gr{arr: a, first: [2]int{ranks[0], ranks[1]}, lead: [2]int{a.member(0, 0), a.member(1, 0)}, ppnMin: ppn}
		multi = append(multi, i)
	}
	if len(multi) == 0 {
		return out, nil
	}
	if sendOnly && allPairs {
		sc.route = sendPairShares(sc, c, gs, multi, out, sc.route[:0])
		return out, nil
	}
	each := func(i int, p pattern, f func(a, b, ch int)) {
		if p == patSend {
			if x, y := gs[i].first[0], gs[i].first[1]; c.DomainOf(x) != c.DomainOf(y) {
				f(x, y, 0)
			}
			return
		}
		gs[i].arr.crossings(p, gs[i].ppnMin, f)
	}
	eff := c.NIC.Comm.Efficiency
	bw := c.Bandwidths() // 8 bytes a link rather than a 32-byte Link
	load, fanOut, fanIn := sc.zeroed(c.NumLinks(), c.NumGPUs())
	route := sc.route[:0] // netRate's buffer
	defer func() { sc.route = route[:0] }()
	for _, p := range pats {
		for _, l := range sc.loaded {
			load[l] = 0
		}
		sc.loaded = sc.loaded[:0]
		// Every transfer's network links, in the order the transfers are
		// met (ends[t] closes transfer t), its two ranks (xfer[t]) and
		// where each group's transfers end (gEnd): the share pass below
		// meets them in the same order and reads them instead of routing
		// or listing the crossings again. Only the network links of a
		// route are computed (Cluster.AppendNetworkRoute): no other link
		// is counted.
		sc.netLinks, sc.ends = sc.netLinks[:0], sc.ends[:0]
		sc.xfer, sc.gEnd = sc.xfer[:0], sc.gEnd[:0]
		for _, i := range multi {
			each(i, p, func(a, b, ch int) {
				from := len(sc.netLinks)
				sc.netLinks = c.AppendNetworkRoute(sc.netLinks, a, b, routeHash(a, b, ch))
				for _, l := range sc.netLinks[from:] {
					if load[l] == 0 {
						sc.loaded = append(sc.loaded, l)
					}
					load[l]++
				}
				sc.ends = append(sc.ends, int32(len(sc.netLinks)))
				sc.xfer = append(sc.xfer, [2]int32{int32(a), int32(b)})
			})
			sc.gEnd = append(sc.gEnd, int32(len(sc.xfer)))
		}
		t0 := int32(0) // the group's first transfer in the share pass
		for gi, i := range multi {
			if gs[i].net == 0 {
				// The group's own uncontended rate per GPU (NewGroup's netBW).
				gs[i].net, route = groupNetRate(c, gs[i].lead[0], gs[i].lead[1], route)
			}
			xs := sc.xfer[t0:sc.gEnd[gi]]
			for _, x := range xs {
				fanOut[x[0]]++
				fanIn[x[1]]++
			}
			share := 1.0
			for j, x := range xs {
				t := int(t0) + j
				alone := gs[i].net / float64(max(fanOut[x[0]], fanIn[x[1]]))
				from := int32(0)
				if t > 0 {
					from = sc.ends[t-1]
				}
				for _, l := range sc.netLinks[from:sc.ends[t]] {
					share = min(share, float64(bw[l])*eff/float64(load[l])/alone)
				}
			}
			for _, x := range xs {
				fanOut[x[0]], fanIn[x[1]] = 0, 0
			}
			out[i][p] = share
			t0 = sc.gEnd[gi]
		}
	}
	return out, nil
}

// sendPairShares is staticLoadWith's share pass where every group is a
// pair and only sends are routed (the pricer's pipeline boundaries: 8,192
// pairs each, 30 a run at 131,072 GPUs; issue 18): multi holds the pairs
// crossing domains, gs their ranks. It writes out[i][patSend] for each and
// returns route (netRate's buffer). The same figures as the general pass,
// in the same order of operations: a pair's one transfer counts once at
// its source and once at its destination (the general pass's fanOut and
// fanIn, set and cleared per group), so its rate alone is the group's
// rate divided by 1, i.e. that rate exactly; the loads are counted over
// every pair's route first, then each pair takes the least of its links'
// bandwidth × efficiency / load / alone, links in route order.
func sendPairShares(sc *loadScratch, c *topology.Cluster, gs []loadGroup, multi []int, out [][numPatterns]float64, route []int32) []int32 {
	eff := c.NIC.Comm.Efficiency
	bw := c.Bandwidths()
	load, _, _ := sc.zeroed(c.NumLinks(), c.NumGPUs())
	sc.netLinks, sc.ends = sc.netLinks[:0], sc.ends[:0]
	for _, i := range multi {
		x, y := gs[i].first[0], gs[i].first[1]
		from := len(sc.netLinks)
		sc.netLinks = c.AppendNetworkRoute(sc.netLinks, x, y, routeHash(x, y, 0))
		for _, l := range sc.netLinks[from:] {
			if load[l] == 0 {
				sc.loaded = append(sc.loaded, l)
			}
			load[l]++
		}
		sc.ends = append(sc.ends, int32(len(sc.netLinks)))
	}
	from := int32(0)
	for t, i := range multi {
		var alone float64
		alone, route = groupNetRate(c, gs[i].lead[0], gs[i].lead[1], route)
		share := 1.0
		for _, l := range sc.netLinks[from:sc.ends[t]] {
			share = min(share, float64(bw[l])*eff/float64(load[l])/alone)
		}
		from = sc.ends[t]
		out[i][patSend] = share
	}
	return route
}

// oneDomain reports whether every rank of ranks (not empty) lies in the
// scale-up domain of the first.
func oneDomain(c *topology.Cluster, ranks []int) bool {
	d := c.DomainOf(ranks[0])
	for _, r := range ranks[1:] {
		if c.DomainOf(r) != d {
			return false
		}
	}
	return true
}

// loadGroup is staticLoad's view of one group.
type loadGroup struct {
	arr    arrangement // nil for a pair when only sends are routed
	first  [2]int      // ranks[0], ranks[1] (a send's direction)
	lead   [2]int      // the first rank of the first two domains (netRate)
	ppnMin int
	net    float64
}

// loadScratch is staticLoad's link- and GPU-sized counters, kept between
// calls so that a call costs its groups' routes, not the cluster's size
// (the pricer calls it once per group kind and stage). staticLoad leaves
// fanOut and fanIn zero, seen false (checkRanksInto), and load zero but at
// the links listed in loaded.
type loadScratch struct {
	load, fanOut, fanIn []int32
	loaded              []int32
	seen                []bool
	// netLinks and ends: one pattern's routed network links per transfer
	// (see staticLoad); xfer: each transfer's source and destination;
	// gEnd: where each spanning group's transfers end.
	netLinks, ends []int32
	xfer           [][2]int32
	gEnd           []int32
	// gs and multi: the groups of a call and those spanning domains.
	gs    []loadGroup
	multi []int
	// out: staticLoadWith's shares; pairs: sendLoad's pairs as groups.
	out   [][numPatterns]float64
	pairs [][]int
	route []int32 // netRate's route buffer
	// orders and offs: staticLoadWith's arrangements (arrangeInto), every
	// group's one after another, and NewGroup's, which it copies out; ms:
	// arrangeInto's members.
	orders, offs []int32
	ms           []member
	// sorted, ids and probe: NewGroup's rank check (checkRanksWith) and
	// probeDomain's links and route, kept between groups.
	sorted     []rankAt
	ids, probe []int32
}

// totalRanks is the number of ranks of all groups.
func totalRanks(groups [][]int) int {
	n := 0
	for _, g := range groups {
		n += len(g)
	}
	return n
}

// scratches keeps staticLoad's scratch between calls, one per caller
// running at once (sweep workers), up to GOMAXPROCS of them. Not a
// sync.Pool: a pool is emptied by every second garbage collection, and a
// run's pricer calls staticLoad across several, so the link-sized counters
// were made and first touched afresh a few times a run (8.7 MB a run at
// 131,072 GPUs; issue 18).
var scratches scratchStack

type scratchStack struct {
	mu   sync.Mutex
	free []*loadScratch
}

func (s *scratchStack) get() *loadScratch {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.free); n > 0 {
		sc := s.free[n-1]
		s.free[n-1] = nil
		s.free = s.free[:n-1]
		return sc
	}
	return new(loadScratch)
}

func (s *scratchStack) put(sc *loadScratch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.free) < runtime.GOMAXPROCS(0) {
		s.free = append(s.free, sc)
	}
}

// zeroed returns the counters sized for links links and gpus GPUs, all
// zero.
func (s *loadScratch) zeroed(links, gpus int) (load, fanOut, fanIn []int32) {
	for _, l := range s.loaded {
		s.load[l] = 0
	}
	s.loaded = s.loaded[:0]
	if len(s.load) < links {
		s.load = make([]int32, links)
	}
	if len(s.fanOut) < gpus {
		s.fanOut, s.fanIn = make([]int32, gpus), make([]int32, gpus)
	}
	return s.load[:links], s.fanOut[:gpus], s.fanIn[:gpus]
}

// checkRanks is NewGroup's validation of a rank list: the error
// checkRanksInto reports, found without cluster-sized scratch (a group is
// usually far smaller than its cluster, and NewGroup runs once per group).
func checkRanks(c *topology.Cluster, ranks []int) error {
	var sorted []rankAt
	return checkRanksWith(c, ranks, &sorted)
}

// rankAt is a rank and its index in a group's list (checkRanksWith).
type rankAt struct{ rank, i int }

// checkRanksWith is checkRanks sorting a group of more than smallGroup
// ranks in *sorted's storage (grown as needed, left for the next call):
// NewGroup's, from its pooled scratch (loadScratch.sorted), since a copy
// a group was fresh pages for a sweep whose collector seldom runs.
func checkRanksWith(c *topology.Cluster, ranks []int, sorted *[]rankAt) error {
	if c == nil || len(ranks) == 0 || len(ranks) > c.NumGPUs() {
		var seen []bool
		return checkRanksInto(c, ranks, &seen)
	}
	total := c.NumGPUs()
	// bad is the first index whose rank is out of range or repeats an
	// earlier one: the index where checkRanksInto's scan stops.
	bad := len(ranks)
	for i, r := range ranks {
		if r < 0 || r >= total {
			bad = i
			break
		}
	}
	if bad <= smallGroup {
		// A few ranks (a pipeline pair, a tensor group): compare each with
		// those before it rather than sort a copy.
		for i := 1; i < bad; i++ {
			if slices.Contains(ranks[:i], ranks[i]) {
				bad = i
				break
			}
		}
		return ranksError(ranks, bad, total)
	}
	list := (*sorted)[:0]
	for i, r := range ranks[:bad] {
		list = append(list, rankAt{r, i})
	}
	*sorted = list
	slices.SortFunc(list, func(a, b rankAt) int {
		if a.rank != b.rank {
			return cmp.Compare(a.rank, b.rank)
		}
		return cmp.Compare(a.i, b.i)
	})
	for k := 1; k < len(list); k++ {
		if list[k].rank == list[k-1].rank {
			bad = min(bad, list[k].i)
		}
	}
	return ranksError(ranks, bad, total)
}

// smallGroup is the most ranks checkRanks checks pairwise.
const smallGroup = 16

// ranksError is checkRanks' error for the first bad index (none when bad
// is len(ranks)).
func ranksError(ranks []int, bad, total int) error {
	switch {
	case bad == len(ranks):
		return nil
	case ranks[bad] < 0 || ranks[bad] >= total:
		return fmt.Errorf("collectives: rank %d outside the cluster (valid ranks: 0..%d)", ranks[bad], total-1)
	}
	return fmt.Errorf("collectives: rank %d appears twice in the group", ranks[bad])
}

// checkRanksInto is checkRanks with a scratch slice of flags that it leaves
// all false for the next call.
func checkRanksInto(c *topology.Cluster, ranks []int, seen *[]bool) error {
	if c == nil {
		return fmt.Errorf("collectives: nil cluster")
	}
	total := c.NumGPUs()
	if len(ranks) == 0 {
		return fmt.Errorf("collectives: group has no ranks (valid ranks: 0..%d)", total-1)
	}
	if len(ranks) > total {
		return fmt.Errorf("collectives: group of %d ranks is larger than the cluster's %d GPUs", len(ranks), total)
	}
	if len(*seen) < total {
		*seen = make([]bool, total)
	}
	s := *seen
	var err error
	for _, r := range ranks {
		if r < 0 || r >= total {
			err = fmt.Errorf("collectives: rank %d outside the cluster (valid ranks: 0..%d)", r, total-1)
			break
		}
		if s[r] {
			err = fmt.Errorf("collectives: rank %d appears twice in the group", r)
			break
		}
		s[r] = true
	}
	for _, r := range ranks {
		if r >= 0 && r < total {
			s[r] = false
		}
	}
	return err
}

// crossings calls f(src, dst, channel) for every cross-domain transfer the
// flow runner starts for pattern p on this arrangement (ppnMin the fewest
// ranks in a domain): ring, ppnMin rings leaving every domain once, ring c
// from position c-d-1 of domain d to position c-d-1 of the next
// (Runner.rings); tree, both directions of every parent-child edge of
// either tree on every rail j < ppnMin (Runner.trees); all-to-all, from
// every rank to the rank at its position in every other domain
// (Runner.direct). The channel is the one the runner hashes with.
func (a *arrangement) crossings(p pattern, ppnMin int, f func(src, dst, ch int)) {
	nd := a.domains()
	switch p {
	case patRing:
		for d := 0; d < nd; d++ {
			next := (d + 1) % nd
			for c := 0; c < ppnMin; c++ {
				f(a.member(d, c-d-1), a.member(next, c-next), c)
			}
		}
	case patTree:
		for t := 0; t < 2; t++ {
			for child := 0; child < nd; child++ {
				parent := dtreeParent(nd, child, t)
				if parent < 0 {
					continue
				}
				for j := 0; j < ppnMin; j++ {
					x, y := a.member(child, j), a.member(parent, j)
					f(x, y, t)
					f(y, x, t)
				}
			}
		}
	case patAllToAll:
		for d := 0; d < nd; d++ {
			for j := 0; j < a.domSize(d); j++ {
				src := a.member(d, j)
				for e := 0; e < nd; e++ {
					if e != d {
						f(src, a.member(e, j), e)
					}
				}
			}
		}
	}
}
