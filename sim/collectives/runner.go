package collectives

import (
	"fmt"
	"math"
	"slices"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/topology"
	"github.com/simtrain/simtrain/sim/units"
)

// Done is told when a collective started with Runner.Start has finished on
// every rank.
type Done interface {
	CollectiveDone(now engine.Time, tag int64)
}

// Runner plays collectives in simulated time: at analytic fidelity one timer
// of Cost.Time, at flow fidelity the algorithm's transfers on the fabric
// (see the package doc for each algorithm's flows). Not safe for concurrent
// use; deterministic like the engine that drives it.
type Runner struct {
	e     *engine.Engine
	f     *network.Fabric
	fid   network.Fidelity
	c     *topology.Cluster
	h     engine.HandlerID
	runs  []run
	free  []int32
	route []int32 // scratch
	count []int   // scratch
	flows int64
	// floor is set on PlayFloor's runner, which starts nothing: each
	// transfer only raises phaseMax to its time alone on its route and
	// adds its size to the load of each link it crosses (loads, with the
	// least route latency of the transfers crossing it in lats).
	floor    bool
	phaseMax engine.Time
	loads    map[int32]float64
	lats     map[int32]engine.Time
	// capture is set on MakeSole's runner, which starts nothing either:
	// each transfer is appended to it.
	capture *planFlows
	// soleStarts counts the collectives started as sole plans (MakeSole).
	soleStarts int64
	// soleAcc is each sole group's link figures, in the order the groups
	// were first made sole (FlushSole), and soleOf finds a group's.
	soleAcc []*soleLinks
	soleOf  map[*Group]*soleLinks
	// noSoleSums: the caller reads no link figures (SkipSoleLinks)
	noSoleSums bool
	// soleShapes holds one copy of each sole plan's transfers and slots
	// that some group's plan has (shareShape), by a hash of them.
	soleShapes map[uint64][]*solePlan
}

// run is one collective in flight.
type run struct {
	g       *Group
	op      Op
	e       est // the chosen algorithm and protocol
	bytes   float64
	done    Done
	tag     int64
	phase   int // current phase (hierarchical has 2 or 3, everything else 1)
	nphase  int
	pending int         // flows of the current phase not yet arrived
	after   float64     // seconds of fixed time (launch, latency, ramp) of the current phase
	wire    engine.Time // route latency of the phase's last-arriving flow
	scale   float64     // volume inflation of the current phase (protocol, channels)
	// The kept Plan's transfers (StartPlan): replayed from flows where
	// they hold the current phase, recorded into it while rec is set.
	flows *planFlows
	rec   bool
	// sole is the run's plan when it plays as one timer alone on its
	// links (MakeSole): its transfers are added to the links' figures
	// when it ends.
	sole *solePlan
}

// runnerTimer and runnerFlows adapt the Runner to engine.Handler and
// network.Done without exporting those methods on Runner.
type (
	runnerTimer Runner
	runnerFlows Runner
)

// NewRunner returns a runner on engine e. At network.Flow fidelity it plays
// transfers on fabric f, which must be built over c's links
// (c.Bandwidths(), c.Latencies()); at network.Analytic f may be nil.
func NewRunner(e *engine.Engine, f *network.Fabric, fid network.Fidelity, c *topology.Cluster) *Runner {
	r := &Runner{e: e, f: f, fid: fid, c: c}
	r.h = e.Register((*runnerTimer)(r))
	return r
}

// Flows is the number of fabric transfers the runner has started.
func (r *Runner) Flows() int64 { return r.flows }

// Start begins op on g now; done.CollectiveDone(now, tag) fires once when
// it ends on every rank. The algorithm and protocol are those Group.Cost
// picks. Analytic fidelity: done fires after Cost.Time. Flow fidelity: each
// phase's transfers start together on the fabric (volumes inflated by the
// achievable fraction of each transfer's bottleneck link and by the
// protocol's bandwidth factor), and when the last one arrives the phase's
// fixed time (launch, latency, ramp) elapses before the next phase or done.
// Errors: those of Cost, a nil group or done, a group of another cluster, or
// flow fidelity without a fabric. done is never called from inside Start.
func (r *Runner) Start(g *Group, op Op, algo Algo, size units.Bytes, done Done, tag int64) error {
	if g == nil || done == nil {
		return fmt.Errorf("collectives: Start needs a group and a done")
	}
	p, err := r.Plan(g, op, algo, size)
	if err != nil {
		return err
	}
	return r.startPlan(&p, done, tag, false)
}

// Plan is what Start does for one collective on one group, worked out
// ahead (Runner.Plan): the algorithm and protocol picked, and whether the
// runner plays it as one timer or as transfers on the fabric. A caller
// that starts the same collective on the same group many times keeps the
// Plan and starts it with StartPlan: every rank of a flow-fidelity run of
// 2,048 GPUs or more repeats a few collectives on each of its groups
// thousands of times, and working out NCCL's choice for each start was ≈
// 7% of the run's instructions (issue 18).
type Plan struct {
	g     *Group
	op    Op
	bytes float64
	e     est
	timed bool // played as one timer of e.t (Plan.Timed's ok)
	// flows are the plan's transfers, recorded by its first StartPlan
	// and replayed by the others (planFlows).
	flows *planFlows
	// sole, when set (MakeSole), plays the plan as one timer of the time
	// its transfers take alone on their links.
	sole *solePlan
}

// solePlan is a Plan whose transfers its caller has proven alone on their
// links (MakeSole): the time from its start to its done, as the fabric and
// the runner would play it, and its transfers, phase by phase, for the
// links' figures.
type solePlan struct {
	d      engine.Time
	flows  []soleFlow
	routes []int32
	// acc is the group's link figures, and slots, per flow, the
	// acc.links index of each link of its route (slots[at:at+n]).
	acc   *soleLinks
	slots []int32
}

// soleLinks is a sole group's transfers' bytes and busy time on each of
// its links, summed as they end, kept with the group until FlushSole adds
// them to the fabric's links. Why: the links are the group's alone, so
// their sums are the fabric's, added in the same order; adding them to
// the fabric's link records as each collective ended missed the cache on
// every link of every transfer (128-byte records, 180 k links on 16,384
// GPUs), and took back half of what the timer saved.
type soleLinks struct {
	links []int32
	bytes []float64
	busy  []engine.Time
}

// slot is the index of link l in a, added at the end when it is new.
func (a *soleLinks) slot(l int32) int32 {
	for k, m := range a.links {
		if m == l {
			return int32(k)
		}
	}
	a.links = append(a.links, l)
	a.bytes = append(a.bytes, 0)
	a.busy = append(a.busy, 0)
	return int32(len(a.links) - 1)
}

// soleFlow is one transfer of a solePlan: its size, its route
// (solePlan.routes[at:at+n]), when it starts after the plan's start
// (from) and how long it transmits alone (tx, Fabric.AloneTime).
type soleFlow struct {
	size     units.Bytes
	from, tx engine.Time
	at, n    int32
}

// planFlows is a kept Plan's transfers, phase by phase, in the order its
// first start made them: each one's route, size and route latency, and
// each phase's fixed time and protocol scale. They follow from the plan
// alone (routes from the ranks and their hashes, sizes from its bytes and
// choice), so a later start of the plan replays them, the same fabric
// calls in the same order, without the routing, the inflation and the
// latency sums behind each one: ≈ 11% of the instructions of a
// flow-fidelity run (BenchmarkFlow/llama3-405b-2048; issue 18).
type planFlows struct {
	phases []planPhase
	flows  []plannedFlow
	routes []int32 // the flows' routes, end to end
}

// planPhase is one phase of a kept plan: its run fields and its flows,
// planFlows.flows[first:end].
type planPhase struct {
	after, scale float64
	first, end   int32
}

// plannedFlow is one transfer of a kept plan: Fabric.Start's size, the
// fabric's latency of its route (RouteLatency), the route latency in its
// tag, and its route, planFlows.routes[at:at+n].
type plannedFlow struct {
	size  units.Bytes
	lat   engine.Time
	wire  int32
	at, n int32
}

// Timed returns how long the planned collective takes when the runner
// plays it as one timer (analytic fidelity, a group of one rank, or
// nothing to move), and ok = false when it plays transfers on the fabric.
// It is what Start waits for, computed the same way, so a caller may
// schedule the end itself and remember the time for repeats of the same
// collective on the same group (the every-rank executor does: issue 18).
func (p Plan) Timed() (d engine.Time, ok bool) {
	if !p.timed {
		return 0, false
	}
	return engine.Seconds(p.e.t), true
}

// Plan works out what Start(g, op, algo, size, …) would do, with its
// errors: a nil group, a group of another cluster, flow fidelity without a
// fabric, or those of Cost. The result depends on its arguments alone, so
// it may be kept and started any number of times on this runner.
func (r *Runner) Plan(g *Group, op Op, algo Algo, size units.Bytes) (Plan, error) {
	bytes := float64(size)
	if g == nil {
		return Plan{}, fmt.Errorf("collectives: Plan needs a group")
	}
	if g.c != r.c {
		return Plan{}, fmt.Errorf("collectives: group was built on a different cluster than the runner's")
	}
	if r.fid == network.Flow && r.f == nil {
		return Plan{}, fmt.Errorf("collectives: flow fidelity needs a fabric")
	}
	e, err := g.estimate(op, algo, bytes)
	if err != nil {
		return Plan{}, err
	}
	timed := r.fid != network.Flow || g.sh.n < 2 || bytes == 0
	return Plan{g: g, op: op, bytes: bytes, e: e, timed: timed}, nil
}

// StartPlan begins the collective *p now, as Start does; p must come from
// this runner's Plan, and is kept by the caller to be started again: the
// first start records the plan's transfers in it, and the others replay
// them. done.CollectiveDone(now, tag) fires once when it ends. It fails
// only for a nil done or a zero Plan.
func (r *Runner) StartPlan(p *Plan, done Done, tag int64) error {
	if done == nil || p == nil || p.g == nil {
		return fmt.Errorf("collectives: Start needs a group and a done")
	}
	rec := false
	if !p.timed && p.flows == nil {
		p.flows, rec = new(planFlows), true
	}
	return r.startPlan(p, done, tag, rec)
}

// startPlan begins p now; its transfers are replayed from p.flows where it
// holds them, and recorded into it with rec.
func (r *Runner) startPlan(p *Plan, done Done, tag int64, rec bool) error {
	id := r.alloc()
	ru := &r.runs[id]
	*ru = run{g: p.g, op: p.op, e: p.e, bytes: p.bytes, done: done, tag: tag, nphase: 1, flows: p.flows, rec: rec}
	if p.timed {
		r.e.After(engine.Seconds(p.e.t), r.h, int64(id))
		ru.nphase = 0 // the timer finishes it
		return nil
	}
	if sp := p.sole; sp != nil {
		r.soleStarts++
		ru.sole, ru.nphase = sp, 0 // the timer finishes it
		r.e.After(sp.d, r.h, int64(id))
		if r.f.CheckingAlone() {
			r.holdAlone(sp)
		}
		return nil
	}
	if p.e.kind == kHier {
		_, ru.nphase = p.g.sh.hierPlan(p.op, p.bytes)
	}
	r.startPhase(id)
	return nil
}

func (r *Runner) alloc() int32 {
	if n := len(r.free); n > 0 {
		id := r.free[n-1]
		r.free = r.free[:n-1]
		return id
	}
	r.runs = append(r.runs, run{})
	return int32(len(r.runs) - 1)
}

// Handle runs a phase's fixed-time timer (or an analytic collective's end).
func (t *runnerTimer) Handle(now engine.Time, arg int64) {
	r := (*Runner)(t)
	id := int32(arg)
	ru := &r.runs[id]
	if ru.phase+1 < ru.nphase {
		ru.phase++
		r.startPhase(id)
		return
	}
	done, tag := ru.done, ru.tag
	if sp := ru.sole; sp != nil && !r.noSoleSums {
		acc := sp.acc
		for k := range sp.flows {
			fl := &sp.flows[k]
			b := float64(fl.size)
			for _, j := range sp.slots[fl.at : fl.at+fl.n] {
				acc.bytes[j] += b
				acc.busy[j] += fl.tx
			}
		}
	}
	*ru = run{}
	r.free = append(r.free, id)
	done.CollectiveDone(now, tag)
}

// TransferDone counts a phase's arrivals and starts its fixed-time timer
// after the last.
func (t *runnerFlows) TransferDone(now engine.Time, tag int64) {
	r := (*Runner)(t)
	id := tag & flowIDMask
	ru := &r.runs[id]
	ru.pending--
	if ru.pending == 0 {
		ru.wire = engine.Time(tag >> 32)
		r.e.After(ru.remaining(), r.h, id)
	}
}

// A flow's tag packs its run id (low 32 bits) and its route latency in ns
// (high bits).
const flowIDMask = 1<<32 - 1

// remaining is the fixed time still to wait once a phase's flows have
// arrived: NCCL's latency constants already include the wire latency that
// the fabric charged the last flow, so that is taken off.
func (ru *run) remaining() engine.Time {
	return max(0, engine.Seconds(ru.after)-ru.wire)
}

// startPhase starts the current phase's flows of run id.
func (r *Runner) startPhase(id int32) {
	ru := &r.runs[id]
	if pf := ru.flows; pf != nil && !ru.rec && ru.phase < len(pf.phases) {
		r.replayPhase(id, ru, pf)
		return
	}
	first := 0
	if ru.rec {
		first = len(ru.flows.flows)
	}
	r.phaseFlows(id)
	ru = &r.runs[id]
	if ru.rec {
		pf := ru.flows
		pf.phases = append(pf.phases, planPhase{ru.after, ru.scale, int32(first), int32(len(pf.flows))})
	}
	if ru.pending == 0 {
		r.e.After(ru.remaining(), r.h, int64(id))
	}
}

// phaseFlows sets the current phase's fixed time and protocol scale on
// run id and starts its transfers (start).
func (r *Runner) phaseFlows(id int32) {
	ru := &r.runs[id]
	g, s := ru.g, &ru.g.sh
	ru.pending, ru.wire = 0, 0
	ru.after, ru.scale = ru.e.fixed, 1
	if ru.e.ideal > 0 {
		ru.scale = ru.e.xfer / ru.e.ideal
	}
	S := ru.bytes
	switch ru.e.kind {
	case kRing:
		rings := 1
		if s.domains > 1 {
			rings = s.ppnMin
		}
		open := ru.op == Broadcast || ru.op == Reduce
		r.rings(id, g, 0, len(g.domOff)-1, rings, S*busFactor(ru.op, s.n)/float64(rings), open)
	case kTree:
		r.chains(id, g, S)
		r.trees(id, g, S/2/float64(s.ppnMin))
	case kNVLS:
		r.nvlsFlows(id, g, ru.op, 0, s.domains)
	case kNVLSTree:
		r.nvlsFlows(id, g, AllReduce, 0, s.domains)
		r.trees(id, g, S/2/float64(s.ppnMin))
	case kHier:
		phases, _ := s.hierPlan(ru.op, S)
		ph := phases[ru.phase]
		e, _ := s.hierPhaseEst(ph)
		ru.after, ru.scale = e.fixed, 1
		if e.ideal > 0 {
			ru.scale = e.xfer / e.ideal
		}
		if ph.inter {
			vol := ph.bytes * busFactor(ph.op, s.domains)
			for j := 0; j < s.ppnMin; j++ {
				r.railRing(id, g, j, vol)
			}
		} else {
			vol := ph.bytes * busFactor(ph.op, s.ppnMax)
			for d := 0; d+1 < len(g.domOff); d++ {
				r.rings(id, g, d, d+1, 1, vol, false)
			}
		}
	case kDirect:
		r.direct(id, g, ru.op, S)
	case kAllPairs:
		r.allPairs(id, g, S)
	}
}

// replayPhase starts the current phase of run id from its kept plan's
// record: what startPhase would start, call for call.
func (r *Runner) replayPhase(id int32, ru *run, pf *planFlows) {
	ph := &pf.phases[ru.phase]
	ru.wire = 0
	ru.after, ru.scale = ph.after, ph.scale
	flows := pf.flows[ph.first:ph.end]
	ru.pending = len(flows)
	r.flows += int64(len(flows))
	for k := range flows {
		fl := &flows[k]
		r.f.StartWithLatency(pf.routes[fl.at:fl.at+fl.n], fl.size, (*runnerFlows)(r), int64(id)|int64(fl.wire)<<32, fl.lat)
	}
	if len(flows) == 0 {
		r.e.After(ru.remaining(), r.h, int64(id))
	}
}

// flow starts one transfer of vol bytes from rank a to rank b, inflated by
// the achievable fraction of its bottleneck link (p2p selects the
// point-to-point rather than the ring fraction on NVLink) and by the phase's
// protocol scale.
func (r *Runner) flow(id int32, g *Group, a, b int, vol float64, ch int, p2p bool) {
	if a == b || vol <= 0 {
		return
	}
	r.route = r.c.AppendRoute(r.route[:0], a, b, routeHash(a, b, ch))
	r.start(id, r.route, vol*g.inflation(r.route, p2p))
}

// inflation is how much a flow's volume grows on route so that it crosses
// at the route's achievable rate rather than its line rate: the line
// bottleneck over the achievable one (each link at its kind's fraction for
// the group's traffic), 1 where either is missing.
//
// Bandwidths come from the cluster's dense array, which the fabric reads
// next for the same links, and kinds from the link ids
// (Cluster.LinkKindOf), rather than from the links' 24-byte records: one
// array less to bring in per link of a flow (links.arrow's reconstruction
// starts ~800 k flows at 131,072 GPUs; issue 18). The same values as the
// records', so the same result.
func (g *Group) inflation(route []int32, p2p bool) float64 {
	line, ach := math.Inf(1), math.Inf(1)
	bw := g.c.Bandwidths()
	for _, l := range route {
		b := float64(bw[l])
		line = min(line, b) // builtin min: math.Min's rules, inlined (a call per flow)
		ach = min(ach, b*g.linkEff(g.c.LinkKindOf(l), p2p))
	}
	inflate := 1.0
	if ach > 0 && !math.IsInf(line, 0) {
		inflate = line / ach
	}
	return inflate
}

func (r *Runner) start(id int32, route []int32, vol float64) {
	ru := &r.runs[id]
	lat := r.c.Latencies()
	var wire engine.Time
	for _, l := range route {
		wire += lat[l]
	}
	wire = min(wire, math.MaxInt32)
	ru.pending++
	r.flows++
	size := units.Bytes(vol * ru.scale)
	if pf := r.capture; pf != nil {
		pf.flows = append(pf.flows, plannedFlow{size, 0, int32(wire), int32(len(pf.routes)), int32(len(route))})
		pf.routes = append(pf.routes, route...)
		return
	}
	if r.floor {
		r.floorTransfer(route, size)
		return
	}
	if ru.rec {
		pf := ru.flows
		pf.flows = append(pf.flows, plannedFlow{size, r.f.RouteLatency(route), int32(wire), int32(len(pf.routes)), int32(len(route))})
		pf.routes = append(pf.routes, route...)
	}
	r.f.Start(route, size, (*runnerFlows)(r), int64(id)|int64(wire)<<32)
}

// member returns the rank at position j of domain d (positions follow local
// indices, so equal positions in rail-aligned domains share a rail).
func (a *arrangement) member(d, j int) int {
	off, size := int(a.domOff[d]), int(a.domOff[d+1]-a.domOff[d])
	return int(a.order[off+((j%size)+size)%size])
}

func (a *arrangement) domSize(d int) int { return int(a.domOff[d+1] - a.domOff[d]) }

// rings starts `rings` rings over domains [d0, d1), each ring edge carrying
// vol. Ring c visits each domain's ranks contiguously, starting in domain d
// at position c-d, so it leaves domain d from position c-d-1 and enters the
// next domain at its own position c-(d+1): in domains of equal size both are
// the same position, so the crossing stays on one rail, and the rings leave
// each domain through different GPUs (NICs). The rings are played
// aggregated: inside a domain every ring uses the edge p -> p+1 except the
// one ring that leaves from p, so that edge is one transfer of vol times the
// rings using it, and each ring's crossing is one transfer of vol; O(n)
// transfers in all. open drops each ring's closing edge (a pipelined chain
// for broadcast and reduce).
func (r *Runner) rings(id int32, g *Group, d0, d1, rings int, vol float64, open bool) {
	nd := d1 - d0
	for d := d0; d < d1; d++ {
		size := g.domSize(d)
		r.count = r.count[:0]
		for range size {
			r.count = append(r.count, rings)
		}
		for c := 0; c < rings; c++ {
			r.count[mod(c-(d-d0)-1, size)]--
		}
		for p, k := range r.count {
			if k > 0 {
				r.flow(id, g, g.member(d, p), g.member(d, p+1), vol*float64(k), p, false)
			}
		}
		next := d0 + (d-d0+1)%nd
		if open && next == d0 {
			continue
		}
		for c := 0; c < rings; c++ {
			exit, entry := g.member(d, c-(d-d0)-1), g.member(next, c-(next-d0))
			r.flow(id, g, exit, entry, vol, c, false)
		}
	}
}

func mod(a, m int) int { return ((a % m) + m) % m }

// railRing starts a ring over the rank at position j of every domain.
func (r *Runner) railRing(id int32, g *Group, j int, vol float64) {
	nd := len(g.domOff) - 1
	for d := 0; d < nd; d++ {
		r.flow(id, g, g.member(d, j), g.member((d+1)%nd, j), vol, j, false)
	}
}

// chains starts a tree all-reduce's intra-domain chains: the buffer moves
// up (reduce) and down (broadcast) each link of a chain over the domain's
// ranks.
func (r *Runner) chains(id int32, g *Group, S float64) {
	for d := 0; d+1 < len(g.domOff); d++ {
		size := g.domSize(d)
		for j := 0; j+1 < size; j++ {
			a, b := g.member(d, j), g.member(d, j+1)
			r.flow(id, g, a, b, S, 0, false)
			r.flow(id, g, b, a, S, 0, false)
		}
	}
}

// trees starts NCCL's double binary tree across domains (dtreeParent):
// every parent-child pair of either tree exchanges vol in each direction on
// every rail (position) j < ppnMin.
func (r *Runner) trees(id int32, g *Group, vol float64) {
	nd := len(g.domOff) - 1
	for t := 0; t < 2; t++ {
		for child := 0; child < nd; child++ {
			parent := dtreeParent(nd, child, t)
			if parent < 0 {
				continue
			}
			for j := 0; j < g.sh.ppnMin; j++ {
				a, b := g.member(child, j), g.member(parent, j)
				r.flow(id, g, a, b, vol, t, false)
				r.flow(id, g, b, a, vol, t, false)
			}
		}
	}
}

// nvlsFlows starts, for every rank of domains [d0, d1), one transfer on its
// port to the NVSwitch and one on the switch's port to it, with the volumes
// of an NVLS op on that domain (see nvlsVolume), at NVLSEfficiency.
func (r *Runner) nvlsFlows(id int32, g *Group, op Op, d0, d1 int) {
	S := r.runs[id].bytes
	eff := g.sh.p.NVLSEfficiency
	for d := d0; d < d1; d++ {
		size := g.domSize(d)
		if size < 2 {
			continue
		}
		fn := float64(size)
		up, down := S*(fn+1)/fn, S*(fn+1)/fn
		switch op {
		case AllGather:
			up, down = S/fn, S*(fn-1)/fn
		case ReduceScatter:
			up, down = S*(fn-1)/fn, S/fn
		}
		for j := 0; j < size; j++ {
			me, other := g.member(d, j), g.member(d, j+1)
			r.route = r.c.AppendRoute(r.route[:0], me, other, 0)
			if len(r.route) > 0 {
				r.start(id, r.route[:1], up/eff)
			}
			r.route = r.c.AppendRoute(r.route[:0], other, me, 0)
			if n := len(r.route); n > 0 {
				r.route[0] = r.route[n-1]
				r.start(id, r.route[:1], down/eff)
			}
		}
	}
}

// direct starts point-to-point flows: all_to_all sends S/n from every rank
// to every other rank of its domain and, to each other domain, one
// aggregated transfer of (that domain's ranks) x S/n to the rank at the same
// position there (rail-aligned, as PXN does); send_recv sends S from each
// rank to the next in the given order; send sends S from ranks[0] to
// ranks[1].
// allPairs plays RCCL's all-pairs all_reduce of S bytes inside the group's
// one domain: each rank sends each other rank its 1/n chunk to reduce and
// then the reduced chunk back, 2S/n bytes a pair, at the ring's achievable
// fraction (the closed form prices it at the ring rate).
func (r *Runner) allPairs(id int32, g *Group, S float64) {
	n := len(g.ranks)
	vol := 2 * S / float64(n)
	for i, a := range g.ranks {
		for j, b := range g.ranks {
			if i != j {
				r.flow(id, g, a, b, vol, j, false)
			}
		}
	}
}

func (r *Runner) direct(id int32, g *Group, op Op, S float64) {
	switch op {
	case AllToAll:
		n := float64(g.sh.n)
		nd := len(g.domOff) - 1
		for d := 0; d < nd; d++ {
			size := g.domSize(d)
			for j := 0; j < size; j++ {
				src := g.member(d, j)
				for k := 0; k < size; k++ {
					if k != j {
						r.flow(id, g, src, g.member(d, k), S/n, k, true)
					}
				}
				for e := 0; e < nd; e++ {
					if e != d {
						r.flow(id, g, src, g.member(e, j), float64(g.domSize(e))*S/n, e, true)
					}
				}
			}
		}
	case SendRecv:
		n := len(g.ranks)
		for i, a := range g.ranks {
			r.flow(id, g, a, g.ranks[(i+1)%n], S, 0, true)
		}
	case Send:
		r.flow(id, g, g.ranks[0], g.ranks[1], S, 0, true)
	}
}

// PlayFloor is a lower bound on how long a Runner at fidelity fid takes
// over op of size on g (algo as Start takes it), from its start to its
// done, whatever else the fabric carries at the time. Where the runner
// plays it as one timer (analytic fidelity, one rank, nothing to move) it
// is that timer's time. At flow fidelity it is the sum over the
// algorithm's phases of a bound on each (phaseFloor): a phase ends once
// its last transfer arrives and the fixed time less that transfer's route
// latency has elapsed (Runner.TransferDone), so no sooner than its fixed
// time, nor than any of its transfers can arrive. Its errors are Cost's.
//
// Why: a search for the best layouts (simtrain plan) rules out a layout
// before playing it when a bound on its step is over the best found so
// far; at flow fidelity such a bound counted the collectives as instant,
// so that most layouts were played until their compute alone showed them
// out (issue 18, round 68).
func (g *Group) PlayFloor(fid network.Fidelity, op Op, algo Algo, size units.Bytes) (engine.Time, error) {
	bytes := float64(size)
	e, err := g.estimate(op, algo, bytes)
	if err != nil {
		return 0, err
	}
	if fid != network.Flow || g.sh.n < 2 || bytes == 0 {
		return engine.Seconds(e.t), nil // (Plan.Timed's time)
	}
	r := dryRunner(g, op, e, bytes)
	r.floor, r.loads, r.lats = true, map[int32]float64{}, map[int32]engine.Time{}
	var total engine.Time
	for ph := 0; ph < r.runs[0].nphase; ph++ {
		r.runs[0].phase, r.phaseMax = ph, 0
		clear(r.loads)
		clear(r.lats)
		r.phaseFlows(0)
		total = total.Add(max(r.phaseFloor(), engine.Seconds(r.runs[0].after)))
	}
	return total, nil
}

// dryRunner is a flow-fidelity runner without engine or fabric holding
// one run of op of bytes on g with e, in its every phase's count (the
// hierarchical plan's): PlayFloor and MakeSole work its phases out one by
// one (phaseFlows) with their transfers taken apart (floor, capture)
// rather than started.
func dryRunner(g *Group, op Op, e est, bytes float64) *Runner {
	r := &Runner{fid: network.Flow, c: g.c}
	r.runs = append(r.runs, run{g: g, op: op, e: e, bytes: bytes, nphase: 1})
	if e.kind == kHier {
		_, r.runs[0].nphase = g.sh.hierPlan(op, bytes)
	}
	return r
}

// floorTransfer is start on PlayFloor's runner: a transfer of size on
// route raises the phase's bound to when it could arrive alone (its
// route's latency, as the fabric charges it, Fabric.RouteLatency, plus its
// size at the route's narrowest line rate) and adds its size to each of
// its links' loads.
func (r *Runner) floorTransfer(route []int32, size units.Bytes) {
	bw, lat := r.c.Bandwidths(), r.c.Latencies()
	var wire engine.Time
	rate := math.Inf(1)
	for _, l := range route {
		wire = wire.Add(lat[l])
		rate = min(rate, float64(bw[l]))
	}
	b := float64(size)
	r.phaseMax = max(r.phaseMax, wire.Add(floorTx(b, rate)))
	if !(b > 0) {
		return
	}
	for _, l := range route {
		r.loads[l] += b
		if w, ok := r.lats[l]; !ok || wire < w {
			r.lats[l] = wire
		}
	}
}

// phaseFloor is the bound on the current phase's transfers: the latest
// any could arrive alone, and for each link the time to carry every byte
// the phase sends over it at its line rate (a max-min share of a link
// never exceeds that, and the phase's transfers start together), plus the
// least route latency of the transfers crossing it, one of which carries
// its last byte.
func (r *Runner) phaseFloor() engine.Time {
	bw := r.c.Bandwidths()
	most := r.phaseMax
	for l, load := range r.loads { // (a maximum: the order does not matter)
		most = max(most, r.lats[l].Add(floorTx(load, float64(bw[l]))))
	}
	return most
}

// floorTx is a lower bound on the time to carry bytes at rate: their
// time, less a nanosecond and a part in 10⁹ to stay below the fabric's
// rounding; 0 for nothing to carry or a zero or unknown rate (a transfer
// on a zero-rate link never arrives: the bound stays finite).
func floorTx(bytes, rate float64) engine.Time {
	if !(bytes > 0) || !(rate > 0) || math.IsInf(rate, 1) {
		return 0
	}
	ns := math.Floor(bytes/rate*1e9*(1-1e-9)) - 1
	if !(ns > 0) || ns > 9e18 {
		return 0
	}
	return engine.Time(ns)
}

// MakeSole makes p, a plan this runner plays as transfers on its fabric,
// play as one timer: the time its phases take with each transfer alone on
// its links, as the fabric and the runner would play them to the
// nanosecond. Each phase's transfers start together; each arrives after
// its time alone (Fabric.AloneTime: its last byte, then its route's
// latency); the phase ends at the last arrival, plus its fixed time less
// that transfer's wire latency (TransferDone). When the plan ends, its
// transfers' bytes and busy time are summed with its group's, which
// FlushSole adds to their links (Fabric.AddAlone). It reports whether p
// now plays so: not where p plays as a timer already, nor where two
// transfers of one phase share a link (they would share its capacity) or
// a phase's transfers differ in wire latency (which one arrives last
// would then matter).
//
// The caller vouches that no other transfer (of another group, or of
// another collective of p's group) uses any of p's links while p plays:
// the runner does not check it (Fabric.CheckAlone does, in tests). The
// every-rank executor proves it from the layout (issue 18): a group inside
// one NVSwitch domain whose members' scale-up ports no other group's
// routes cross (topology.Cluster.ScaleUpLinksOf), whose collectives run on
// one stream. It plays two or three events and a share of a re-solve per
// transfer as one event a collective: 40% of the CPU of Llama 3 70B's
// step on 1,024 H100 at flow fidelity, 17% of Llama 3 405B's on 16,384.
func (r *Runner) MakeSole(p *Plan) bool {
	if p == nil || p.g == nil || p.sole != nil {
		return p != nil && p.sole != nil
	}
	if p.timed || r.fid != network.Flow || r.f == nil {
		return false
	}
	dry := dryRunner(p.g, p.op, p.e, p.bytes)
	dry.capture = new(planFlows)
	sp := &solePlan{}
	used := make(map[int32]bool)
	var at engine.Time // the phase's start, from the plan's
	for ph := 0; ph < dry.runs[0].nphase; ph++ {
		dry.runs[0].phase = ph
		first := len(dry.capture.flows)
		dry.phaseFlows(0)
		ru := &dry.runs[0]
		var last, wire engine.Time
		clear(used)
		for k, fl := range dry.capture.flows[first:] {
			route := dry.capture.routes[fl.at : fl.at+fl.n]
			for _, l := range route {
				if used[l] {
					return false
				}
				used[l] = true
			}
			if k > 0 && engine.Time(fl.wire) != wire {
				return false
			}
			wire = engine.Time(fl.wire)
			tx, lat := r.f.AloneTime(route, fl.size)
			if tx >= engine.Forever/4 || lat >= engine.Forever/4 {
				return false
			}
			last = max(last, tx+lat)
			sp.flows = append(sp.flows, soleFlow{size: fl.size, from: at, tx: tx, at: int32(len(sp.routes)), n: fl.n})
			sp.routes = append(sp.routes, route...)
		}
		// (a phase without transfers waits its fixed time alone: wire 0)
		end := last + max(0, engine.Seconds(ru.after)-wire)
		if at >= engine.Forever/4-end {
			return false
		}
		at += end
	}
	sp.d = at
	acc := r.soleOf[p.g]
	if acc == nil {
		if r.soleOf == nil {
			r.soleOf = make(map[*Group]*soleLinks)
		}
		acc = new(soleLinks)
		r.soleOf[p.g] = acc
		r.soleAcc = append(r.soleAcc, acc)
	}
	sp.acc = acc
	for _, l := range sp.routes {
		sp.slots = append(sp.slots, acc.slot(l))
	}
	r.shareShape(sp)
	p.sole = sp
	return true
}

// shareShape points sp's transfers and slots at an earlier sole plan's
// where they are equal. The groups of one kind play the same collectives
// over their own links, and a group's links take their slots in the order
// its plans first name them, so the 2,048 tensor-parallel groups of the
// 405B step on 16,384 GPUs hold one copy of each plan's transfers and
// slots between them rather than one each: each collective's end reads
// them (runnerTimer.Handle) before it adds to its group's sums, and a copy
// of its own missed the cache (issue 18). The values are the same, so is
// every sum.
func (r *Runner) shareShape(sp *solePlan) {
	h := uint64(14695981039346656037) // FNV-1a over what Handle reads
	mix := func(v uint64) { h = (h ^ v) * 1099511628211 }
	for k := range sp.flows {
		fl := &sp.flows[k]
		mix(math.Float64bits(float64(fl.size)))
		mix(uint64(fl.from))
		mix(uint64(fl.tx))
		mix(uint64(fl.at)<<32 | uint64(uint32(fl.n)))
	}
	for _, j := range sp.slots {
		mix(uint64(j))
	}
	for _, o := range r.soleShapes[h] {
		if slices.Equal(o.flows, sp.flows) && slices.Equal(o.slots, sp.slots) {
			sp.flows, sp.slots = o.flows, o.slots
			return
		}
	}
	if r.soleShapes == nil {
		r.soleShapes = make(map[uint64][]*solePlan)
	}
	r.soleShapes[h] = append(r.soleShapes[h], sp)
}

// FlushSole adds the bytes and busy time of the sole plans' transfers
// that have ended (MakeSole) to their links on the fabric
// (Fabric.AddAlone), and starts their sums again. Call it once the play
// has ended, before reading the links' figures.
func (r *Runner) FlushSole() {
	for _, acc := range r.soleAcc {
		for k, l := range acc.links {
			r.f.AddAlone(l, acc.bytes[k], acc.busy[k])
			acc.bytes[k], acc.busy[k] = 0, 0
		}
	}
}

// holdAlone declares a sole plan's transfers to the fabric's check
// (Fabric.CheckAlone), each from its start to its last byte.
func (r *Runner) holdAlone(sp *solePlan) {
	now := r.e.Now()
	for k := range sp.flows {
		fl := &sp.flows[k]
		r.f.HoldAlone(sp.routes[fl.at:fl.at+fl.n], now+fl.from, now+fl.from+fl.tx)
	}
}

// SkipSoleLinks says the caller reads no link figures (a sweep worker's
// play: Options.FiguresOnly): the sole plans' transfers are not summed on
// their links as each collective ends, and the fabric's links lack them.
// Their ends are the same. Summing them was a loop over every transfer and
// hop of each collective, ≈ 8% of the CPU of the 405B plan at flow
// fidelity on 2,048 H100 (issue 18).
func (r *Runner) SkipSoleLinks() { r.noSoleSums = true }

// SoleStarts is how many collectives the runner has played as sole plans
// (MakeSole).
func (r *Runner) SoleStarts() int64 { return r.soleStarts }

// Sole reports whether the plan plays as one timer alone on its links
// (Runner.MakeSole), and that timer's time.
func (p *Plan) Sole() (d engine.Time, ok bool) {
	if p.sole == nil {
		return 0, false
	}
	return p.sole.d, true
}
