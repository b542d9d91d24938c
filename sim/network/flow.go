package network

import (
	"fmt"
	"math"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/units"
)

// Flow-fidelity state and the incremental max-min solver. The model and
// its correctness argument are in doc.go.

// flow is one transfer in transmission: the fields the solver reads only
// for flows it re-solves. Slots live in Fabric.flows, parallel to
// Fabric.hot, and are recycled through a free-index stack. A route of at
// most inlineHops links (a GPU's NVLink hop to the switch and back, most
// of a training step's flows) lies in the slot itself, so reading it costs
// no load beyond the slot's; a longer one lies in ext, which keeps its
// capacity across reuse, so steady state allocates nothing.
type flow struct {
	inl    [inlineHops]hop // the route, when it has at most inlineHops links
	nhop   int32           // links on the route
	ext    []hop           // the route, when it is longer
	bytes  float64         // size of the transfer
	rem    float64         // bytes left to transmit at time last
	last   engine.Time
	finish engine.Time // when the last byte is transmitted at the current rate
	lat    engine.Time // sum of the route's latencies
	seq    uint64      // start order: breaks ties between equal finish times
	del    int32       // delivery slot
	certEp uint32      // solve epoch in which cert was computed
	cert   bool        // the flow has an unchanged bottleneck link (see tied)
}

// hop is one link of a flow's route with the index of the flow's entry in
// that link's list (lk[link].es[pos]).
type hop struct {
	link int32
	pos  int32
}

// inlineHops is the longest route a flow slot holds in place. The bundled
// scenarios' flows cross 2 links (NVLink), 6 or 8 (a rail-optimised or
// two-tier fabric) or 10 (three tiers): four keeps the slot small for the
// first, which are 80–99% of the flows, and the others pay one load more.
const inlineHops = 4

// hops is the flow's route with its entries' positions; writes through it
// update the flow.
func (fl *flow) hops() []hop {
	if fl.nhop <= inlineHops {
		return fl.inl[:fl.nhop]
	}
	return fl.ext[:fl.nhop]
}

// flowHot holds the fields the solver reads for every flow on the links it
// visits, 32 bytes per flow in their own array so that scanning a link's
// flows touches little memory.
type flowHot struct {
	rate  float64 // current rate, bytes/s
	next  float64 // rate being computed by the current solve
	mark  uint32  // solve epoch in which the flow joined the re-solved set
	fixed uint32  // fill stamp (progressiveFill) at which the rate was fixed
	chk   uint32  // check stamp (fillLocal): already examined this round
	state uint8
}

const (
	flowFree    = iota
	flowPending // started, waiting for the solve at this instant
	flowActive  // on its links with a rate
)

// flink is one link's flow-fidelity state: its active flows, capacity and
// statistics, and the solver's scratch for it. The solver reads and writes
// a dozen figures of every link it visits, so they share one 128-byte
// record: a visit costs one or two cache lines rather than one per figure
// (the fabric of 16,384 GPUs has 180,416 links, and one array per figure
// put each visit out of cache a dozen times over; issue 18). The first 64
// bytes hold what a departure, an arrival and alone read, so the instants
// that need no re-solve touch one line per link; the second the re-solve's
// scratch. Marks equal to the current epoch are current.
type flink struct {
	es    []entry     // the active flows on the link
	bw    float64     // capacity, bytes/s (Fabric.bw's value)
	bytes float64     // bytes carried by flows that finished (see LinkBytes)
	busy  engine.Time // busy time of closed busy periods
	busyT engine.Time // start of the open busy period
	mark  uint32      // the link is in the current re-solved set
	chg   uint32      // the link gained or lost a flow at this instant

	rem    float64 // capacity left for the unfixed flows
	satMax float64 // highest rate on a saturated link, -1 if not saturated
	brem   float64 // capacity left after frozen flows (fillLocal)
	fmax   float64 // highest frozen rate on the link (fillLocal)
	old    float64 // satMax before this solve; -2 for a changed link (fillLocal)
	rmax   float64 // highest share fixed on the link by the last fill
	cnt    int32   // unfixed entries
	satEp  uint32  // satMax is valid
	bcnt   int32   // flows of the re-solved set on the link (fillLocal)
	fdirty bool    // fmax must be rescanned (fillLocal)
	heaped bool    // the link is in progressiveFill's heap
}

// entry is one flow crossing one link: lk[l].es holds the entries of the
// active flows on link l; hop is the index of l in the flow's route, with
// extHop added where the route lies in the flow's ext (index gives the
// index alone).
type entry struct {
	flow int32
	hop  int32
}

// extHop marks an entry whose flow's route lies in ext: removeEntry then
// knows where the hop of a moved entry is without first loading the
// flow's length, a cache miss on a random flow, so an inline route's hop
// is written blind.
const extHop = 1 << 30

// index is the entry's index into its flow's route.
func (en entry) index() int32 { return en.hop &^ extHop }

// Thresholds of the solver. freezeSlack widens the set of re-solved flows
// by a relative 1e-9 below the departure threshold so that flows tied with
// it up to floating-point noise are re-solved too (re-solving more flows
// than needed is always exact; see doc.go). sameRate treats a new rate
// within a relative 1e-12 of the old one as unchanged, so such a flow keeps
// its completion event instead of being rescheduled by rounding noise; it
// is also the tolerance of the rate comparisons in fillLocal's checks.
// satSlack: a link counts as saturated when its rates add up to within a
// relative 1e-10 of its capacity (a sum of n rates carries about n ulps of
// error, so this holds up to millions of flows per link).
const (
	freezeSlack = 1e-9
	sameRate    = 1e-12
	satSlack    = 1e-10
)

// linkRoom is the number of flows each link has room for before its list
// of flows needs its own allocation.
const linkRoom = 4

// maxLocalRounds bounds the rounds of fillLocal before solve falls back to
// the threshold re-solve. Each round adds the flows one more step away
// from the change; on a 100,000-flow random fat-tree load a solve takes
// about 7 rounds on average, so the bound rarely binds before fillLocal's
// own work budget does.
const maxLocalRounds = 64

type flowState struct {
	lk       []flink // per link, by link id
	flows    []flow
	hot      []flowHot
	flowFree []int32
	nActive  int
	seq      uint64
	arrivals []int32 // flows started at this instant, not yet on their links
	arrHops  int     // the arrived flows' entries on their links (their routes' lengths, summed)
	seeds    []int32 // links whose flow set changed at this instant
	fh       finishQueue
	// scanned is, per link, the epoch of the last local re-solve that took
	// the link's flows as its first set (fillLocal): a link is in seeds
	// once per flow that left or joined it, and an all-to-all's burst
	// puts hundreds of flows on one link at an instant.
	scanned []uint32

	solvePending bool        // an evSolve event is scheduled at now
	wakeAt       engine.Time // time of the valid pending evWake event, or -1
	wakeGen      int64       // generation of the valid evWake event

	// Solver scratch beyond the per-link records, reused across solves.
	epoch uint32
	viol  []int32 // frozen flows that failed the check (fillLocal)
	// frozen counts the entries, on the links of fillLocal's re-solved
	// set, of flows outside it (frozen flows), kept by addToSet.
	frozen int
	// hiVal is this instant's arrivalBound once hiSet (thetaA), worked out
	// only where the condition of fillLocal's first set reads it.
	hiVal     float64
	hiSet     bool
	worse     []int32 // links whose state got worse this round (fillLocal)
	fdirty    []int32 // links with fdirty set
	chk       uint32  // current check stamp
	fixStamp  uint32  // current progressiveFill stamp
	compLinks []int32
	compFlows []int32
	sh        shareHeap

	stats SolverStats

	// maxRounds is maxLocalRounds; tests lower it to exercise the
	// fallback. fullSolve re-solves whole connected components, and
	// noAlone turns off the shortcut for instants that touch no staying
	// flow (tests compare all these ways).
	maxRounds int
	fullSolve bool
	noAlone   bool
	// noFresh turns off fillLocal's shortcut for instants whose changed
	// links carry only arrived flows (fillFresh).
	noFresh bool
	// fresh says the solve at this instant re-solved the arrived flows
	// alone (fillFresh): its compFlows are f.arrivals, in another order.
	fresh bool
	// checkAll makes fillLocal check the max-min conditions even where
	// no flow is frozen (tests compare it with the default).
	checkAll bool
	// afterAlone, when set (tests), runs after alone has given the
	// arrived flows their rates, with fillLocal's thresholds.
	afterAlone func(lo, hi float64)
	// afterFresh, when set (tests), runs after fillFresh has filled.
	afterFresh func()
	// soleUntil, when set (CheckAlone, tests), is per link the end of the
	// last transfer a caller declared alone on it (HoldAlone); a flow that
	// joins the link before then counts in soleClashes.
	soleUntil   []engine.Time
	soleClashes int
}

func (f *Fabric) initFlow(n int) {
	// Every link starts with room for linkRoom flows in one shared
	// backing array, so the first flows on a link allocate nothing; a
	// busier link grows its own slice once and keeps it.
	f.lk = make([]flink, n)
	f.scanned = make([]uint32, n)
	room := make([]entry, n*linkRoom)
	for l := range f.lk {
		f.lk[l].es = room[l*linkRoom : l*linkRoom : (l+1)*linkRoom]
		f.lk[l].bw = f.bw[l]
	}
	f.wakeAt = -1
	f.maxRounds = maxLocalRounds
}

// startFlow takes a slot for a new flow and queues it for the solve at this
// instant, scheduling that solve if it is not pending yet.
func (f *Fabric) startFlow(now engine.Time, route []int32, bytes float64, del int32, lat engine.Time) {
	var fi int32
	if n := len(f.flowFree); n > 0 {
		fi = f.flowFree[n-1]
		f.flowFree = f.flowFree[:n-1]
	} else {
		f.flows = append(f.flows, flow{})
		f.hot = append(f.hot, flowHot{})
		f.fh.addSlot()
		fi = int32(len(f.flows) - 1)
	}
	fl := &f.flows[fi]
	h := &f.hot[fi]
	fl.nhop = int32(len(route))
	if len(route) > inlineHops && cap(fl.ext) < len(route) {
		// Room for the longest routes of common topologies (a 3-tier
		// fat tree through NVLink and PCIe has about 10 hops), so that
		// a recycled slot rarely grows again.
		fl.ext = make([]hop, max(len(route), 12))
	}
	hs := fl.hops()
	for k, l := range route {
		hs[k].link = l
	}
	fl.bytes = bytes
	fl.rem = bytes
	h.rate = 0
	fl.last = now
	fl.finish = engine.Forever
	fl.lat = lat
	f.seq++
	fl.seq = f.seq
	fl.del = del
	h.state = flowPending
	f.arrivals = append(f.arrivals, fi)
	if !f.solvePending {
		f.solvePending = true
		f.e.At(now, f.h, evSolve)
	}
}

// step brings the flow state to time now: flows whose last byte is due are
// removed and their deliveries scheduled, flows started at now join their
// links, the changed part of the allocation is re-solved, and the next wake
// is scheduled. Every step at one instant after the first finds little or
// nothing to do, and every flow's finish time is > now after a step unless
// it completes at the next step of this same instant, so no loop of
// zero-progress events is possible.
func (f *Fabric) step(now engine.Time) {
	// Threshold for the re-solve (doc.go): thetaD, the lowest rate of a
	// departing flow, +Inf when there are none.
	thetaD := math.Inf(1)

	// Departures.
	for _, fi := range f.fh.popDue(now) {
		fl := &f.flows[fi]
		thetaD = min(thetaD, f.hot[fi].rate)
		for _, hp := range fl.hops() {
			l := hp.link
			lk := &f.lk[l]
			f.removeEntry(lk, hp.pos)
			lk.bytes += fl.bytes
			if len(lk.es) == 0 {
				lk.busy += now - lk.busyT
			}
			f.seeds = append(f.seeds, l)
		}
		f.e.At(addTime(now, fl.lat), f.h, int64(fl.del)<<evKindBits|evDeliver)
		f.hot[fi].state = flowFree
		f.nActive--
		f.flowFree = append(f.flowFree, fi)
	}

	// Arrivals.
	if len(f.arrivals) > 0 {
		for _, fi := range f.arrivals {
			fl := &f.flows[fi]
			hs := fl.hops()
			if f.soleUntil != nil {
				f.clashes(hs, now)
			}
			ext := int32(0)
			if len(hs) > inlineHops {
				ext = extHop
			}
			for k := range hs {
				l := hs[k].link
				lk := &f.lk[l]
				if len(lk.es) == 0 {
					lk.busyT = now
				}
				hs[k].pos = int32(len(lk.es))
				lk.es = append(lk.es, entry{fi, int32(k) + ext})
				f.seeds = append(f.seeds, l)
			}
			f.arrHops += len(hs)
			f.nActive++
		}
	}

	if len(f.seeds) > 0 {
		f.solve(now, thetaD)
		f.seeds = f.seeds[:0]
	}
	f.arrivals = f.arrivals[:0]
	f.arrHops = 0

	// Schedule the next completion unless a valid wake at or before it is
	// already pending (that one will find nothing due and reschedule).
	if f.fh.len() == 0 {
		return
	}
	m := f.fh.minFinish()
	if m == engine.Forever || (f.wakeAt >= 0 && f.wakeAt <= m) {
		return
	}
	f.wakeGen++
	f.wakeAt = m
	f.e.At(m, f.h, f.wakeGen<<evKindBits|evWake)
}

// removeEntry deletes entry i of link lk by moving the last entry into its
// place.
func (f *Fabric) removeEntry(lk *flink, i int32) {
	es := lk.es
	last := int32(len(es) - 1)
	if i != last {
		moved := es[last]
		es[i] = moved
		if k := moved.hop; k < extHop {
			f.flows[moved.flow].inl[k].pos = i
		} else {
			f.flows[moved.flow].ext[k-extHop].pos = i
		}
	}
	lk.es = es[:last]
}

// solve recomputes the max-min rates of the flows that can change after
// the departures and arrivals of this instant, then gives every flow whose
// rate changed a new completion time. thetaD is the lowest rate among
// departed flows (+Inf when there are none); f.arrivals lists the arrived
// flows.
//
// When the changes touch no flow that stays (alone), the arrived flows'
// rates follow from their routes alone. Otherwise it tries a local
// re-solve (fillLocal), which grows the re-solved set from the changed
// links only as far as a check of the max-min conditions requires. If that
// does not settle within its budget, it re-solves the set that the
// thresholds prove sufficient (fillThreshold).
func (f *Fabric) solve(now engine.Time, thetaD float64) {
	lo := thetaD * (1 - freezeSlack)
	switch {
	case f.fullSolve:
		f.fillThreshold(0, 0, math.Inf(1))
	case !f.noAlone && f.alone():
		f.stats.Alone++
		if f.afterAlone != nil {
			f.afterAlone(lo, f.arrivalBound())
		}
	default:
		f.hiSet = false
		if !f.fillLocal(lo) {
			f.stats.Fallbacks++
			f.fillThreshold(lo, thetaD*(1+freezeSlack), f.thetaA())
		}
	}
	links, flows := f.compLinks, f.compFlows
	if f.fresh {
		// The same flows (fillFresh), in start order: the flows of a
		// completion time then join their bucket of the finish queue in
		// seq order, the order its popDue wants, and need no sort when
		// they leave (≈ 4% of an expert all-to-all's flow run, issue 18).
		// Each flow's new rate and completion depend on the flow alone.
		flows, f.fresh = f.arrivals, false
	}

	// New rates: advance each changed flow to now at its old rate, then
	// schedule its completion at the new one.
	resched := 0
	for _, fi := range flows {
		h := &f.hot[fi]
		r := h.next
		if h.state == flowActive {
			if math.Abs(r-h.rate) <= sameRate*h.rate {
				continue
			}
			if h.rate > 0 {
				fl := &f.flows[fi]
				fl.rem -= h.rate * float64(now-fl.last) / 1e9
			}
		}
		fl := &f.flows[fi]
		h.state = flowActive
		fl.last = now
		h.rate = r
		fl.finish = addTime(now, txTime(fl.rem, r))
		f.fh.update(fi, fl.finish, fl.seq)
		resched++
	}

	f.stats.Solves++
	f.stats.FlowsVisited += uint64(len(flows))
	f.stats.LinksVisited += uint64(len(links))
	f.stats.Rescheduled += uint64(resched)
}

// thetaA is arrivalBound, worked out at this instant's first call (solve
// clears hiSet): the local re-solve's first set needs it only for an
// active flow slower than the departure threshold, and a collective's
// burst of new flows often has none on its links, where the pass over
// the arrived flows' links was a cache miss a link on 16,384 GPUs (and
// 3.5% of DeepSeek-V3's flow run). The links' flow lists do not change
// between the arrivals and the re-solve, so the bound is the same
// whenever it is worked out.
func (f *Fabric) thetaA() float64 {
	if !f.hiSet {
		f.hiVal, f.hiSet = f.arrivalBound(), true
	}
	return f.hiVal
}

// arrivalBound is thetaA (doc.go): a lower bound on the rate any flow
// arrived at this instant will get, +Inf when there are none. A flow's
// max-min rate is at least the least over its links of capacity / (flows
// on the link).
func (f *Fabric) arrivalBound() float64 {
	thetaA := math.Inf(1)
	for _, fi := range f.arrivals {
		for _, hp := range f.flows[fi].hops() {
			lk := &f.lk[hp.link]
			thetaA = min(thetaA, lk.bw/float64(len(lk.es)))
		}
	}
	return thetaA
}

// alone reports whether every link that gained or lost a flow at this
// instant now carries nothing but flows that arrived at it, each alone on
// that link, and if so gives each arrived flow its rate: the least
// capacity on its route. That is what the local re-solve would find, to
// the bit. A departed flow left its links empty, so no flow that stays
// shared a link with it; an arrived flow shares none of its links (all of
// them are changed links); so every other flow keeps its bottleneck and
// its rate, and progressive filling fixes a flow alone on its links at
// the smallest of their fair shares, capacity / 1. Collective steps over
// NVLink and the rails are mostly such instants: each GPU's links carry
// one flow of the step at a time. compFlows lists the arrived flows;
// compLinks is left empty, as no link's state is re-solved.
func (f *Fabric) alone() bool {
	for _, l := range f.seeds {
		es := f.lk[l].es
		if len(es) > 1 || len(es) == 1 && f.hot[es[0].flow].state != flowPending {
			return false
		}
	}
	f.compLinks = f.compLinks[:0]
	flows := f.compFlows[:0]
	for _, fi := range f.arrivals {
		r := math.Inf(1)
		for _, hp := range f.flows[fi].hops() {
			r = min(r, f.lk[hp.link].bw)
		}
		f.hot[fi].next = r
		flows = append(flows, fi)
	}
	f.compFlows = flows
	return true
}

// nextEpoch starts a new solver epoch; marks equal to it are current.
func (f *Fabric) nextEpoch() uint32 {
	f.epoch++
	if f.epoch == 0 { // wrapped: clear every mark once per 2^32 epochs
		for l := range f.lk {
			f.lk[l].mark, f.lk[l].chg, f.lk[l].satEp = 0, 0, 0
			f.scanned[l] = 0
		}
		for i := range f.flows {
			f.hot[i].mark, f.flows[i].certEp = 0, 0
		}
		f.epoch = 1
	}
	return f.epoch
}

// nextCheck starts a new check stamp (a round of fillLocal, or fillFresh's);
// stamps equal to it are current.
func (f *Fabric) nextCheck() {
	f.chk++
	if f.chk == 0 { // wrapped: clear every stamp once per 2^32 rounds
		for i := range f.hot {
			f.hot[i].chk = 0
		}
		f.chk = 1
	}
}

// addToSet puts flow fi in the re-solved set R of epoch ep, with every link
// of its route, and keeps each link's base for the next round of
// fillLocal: brem, the capacity left after the frozen flows, bcnt, the
// number of R's flows on it, and fmax, the fastest frozen rate (rescanned
// at the next round when a flow left the frozen set).
func (f *Fabric) addToSet(fi int32, ep uint32) {
	h := &f.hot[fi]
	if h.mark == ep {
		return
	}
	h.mark = ep
	f.compFlows = append(f.compFlows, fi)
	for _, hp := range f.flows[fi].hops() {
		m := hp.link
		lk := &f.lk[m]
		if lk.mark == ep {
			// The flow was frozen on m until now.
			f.frozen--
			lk.brem += h.rate
			lk.bcnt++
			if !lk.fdirty {
				lk.fdirty = true
				f.fdirty = append(f.fdirty, m)
			}
			continue
		}
		lk.mark = ep
		f.compLinks = append(f.compLinks, m)
		// One pass for the base and for the link's state before this
		// solve (rates are still the old ones), which satMax would give;
		// a changed link counts as worse whatever happens.
		rem, cnt, fmax := lk.bw, int32(0), 0.0
		sum, mx := 0.0, 0.0
		for _, en := range lk.es {
			o := &f.hot[en.flow]
			sum += o.rate
			mx = max(mx, o.rate)
			if o.mark == ep {
				cnt++
			} else {
				rem -= o.rate
				fmax = max(fmax, o.rate)
			}
		}
		lk.brem, lk.bcnt, lk.fmax = rem, cnt, fmax
		f.frozen += len(lk.es) - int(cnt)
		if lk.satEp != ep {
			lk.satEp = ep
			lk.satMax = -1
			if sum >= lk.bw*(1-satSlack) {
				lk.satMax = mx
			}
		}
		if lk.chg == ep {
			lk.old = -2
		} else {
			lk.old = lk.satMax
		}
	}
}

// fillLocal re-solves a set R of flows that starts as the flows on the
// links that gained or lost a flow at this instant, less those that the
// thresholds prove unchanged (active, rate < lo and <= thetaA; see
// fillThreshold); every other flow on R's links keeps its rate (is frozen)
// and only reduces its links' capacity. After
// progressive filling on R, the result is checked against the
// characterisation of max-min fairness (doc.go): every flow needs a
// bottleneck, a saturated link on which no flow is faster. A frozen flow
// fails if none of its links is still such a bottleneck for it; a frozen
// flow also fails if it is faster than the share at which a flow of R was
// fixed on a common link. Failed flows join R and the round repeats. It
// returns false, leaving the caller to fall back, when maxLocalRounds rounds
// have not settled or the rounds so far have re-solved more flows, in
// total, than are active (the threshold re-solve costs at most that).
func (f *Fabric) fillLocal(lo float64) bool {
	ep := f.nextEpoch()
	f.frozen = 0
	f.compLinks = f.compLinks[:0]
	f.compFlows = f.compFlows[:0]
	entries := 0 // on the changed links, each counted once
	for _, l := range f.seeds {
		if lk := &f.lk[l]; lk.chg != ep {
			lk.chg = ep
			entries += len(lk.es)
		}
	}
	if entries == f.arrHops && !f.noFresh && !f.checkAll && f.maxRounds > 0 {
		// Every entry on the changed links is an arrived flow's.
		f.fillFresh(ep)
		return true
	}
	for _, l := range f.seeds {
		// A link is in seeds once per flow that left or joined it at
		// this instant. Its flows are taken once: the test gives the
		// same answer on every pass, and addToSet keeps the first, so
		// the set and its order are those of every pass (issue 18: the
		// passes again over an expert-parallel all-to-all's links were
		// ≈ 35% of a DeepSeek-V3 flow run).
		if f.scanned[l] == ep {
			continue
		}
		f.scanned[l] = ep
		for _, en := range f.lk[l].es {
			if h := &f.hot[en.flow]; h.state != flowActive || h.rate >= lo || h.rate > f.thetaA() {
				f.addToSet(en.flow, ep)
			}
		}
	}
	work := 0 // flows re-solved over all rounds so far
	for round := 0; round < f.maxRounds && work <= f.nActive; round++ {
		work += len(f.compFlows)
		f.nextCheck()
		for _, l := range f.fdirty {
			fmax := 0.0
			for _, en := range f.lk[l].es {
				if o := &f.hot[en.flow]; o.mark != ep {
					fmax = max(fmax, o.rate)
				}
			}
			f.lk[l].fmax = fmax
			f.lk[l].fdirty = false
		}
		f.fdirty = f.fdirty[:0]
		links := f.compLinks
		f.viol = f.viol[:0]
		f.progressiveFill(links, ep, true) // (rem, cnt and rmax from the base)

		// Bottleneck check for the frozen flows on R's links
		// (checkFrozen). With no frozen flow on R's links it would
		// examine no flow, and its pass over R's links is skipped: the
		// allocation is max-min at once (and the fill found no frozen
		// flow faster than a share, as there is none). A ring step's or
		// an expert all-to-all's burst re-solves every flow it meets: on
		// the bundled DeepSeek-V3 and 405B flow runs, 88–99% of the links
		// checked were in such sets, and on 16,384 GPUs the pass was a
		// cache miss a link.
		if f.checkAll {
			f.recountFrozen(links, ep)
		}
		if f.frozen > 0 || f.checkAll {
			f.checkFrozen(links, ep)
		} else {
			f.stats.Unchecked++
		}
		if len(f.viol) == 0 {
			for _, l := range f.fdirty {
				f.lk[l].fdirty = false
			}
			f.fdirty = f.fdirty[:0]
			return true
		}
		f.stats.LocalRounds++
		for _, fi := range f.viol {
			f.addToSet(fi, ep)
		}
	}
	for _, l := range f.fdirty {
		f.lk[l].fdirty = false
	}
	f.fdirty = f.fdirty[:0]
	return false
}

// fillFresh is fillLocal's round at an instant whose changed links carry
// only flows that arrived at it (a fresh burst: a collective step or an
// expert all-to-all on links nothing else uses now), to the bit: the same
// sets in the same order, the same bases and the same fill. Every flow on
// the changed links is pending, at rate 0, and an arrived flow's links are
// all changed links, so the re-solved set is the arrived flows, no flow is
// frozen on its links, and each link's base is its capacity (less the
// pending flows' rates, 0) and all its flows. What fillLocal would do
// beyond that, a pass over every link's flows to find the frozen ones'
// rates and a second one to find the fastest frozen rate again as the
// others joined, finds nothing; that was ≈ 15% of an expert-parallel
// all-to-all's flow run (issue 18). The links' saturation marks it leaves
// unset (satEp, satMax, old) are read only by checkFrozen, which a set
// with no frozen flow skips, and later epochs work them out again.
func (f *Fabric) fillFresh(ep uint32) {
	f.stats.Fresh++
	f.fresh = true
	for _, l := range f.seeds {
		if f.scanned[l] == ep {
			continue
		}
		f.scanned[l] = ep
		for _, en := range f.lk[l].es {
			h := &f.hot[en.flow]
			if h.mark == ep {
				continue
			}
			h.mark = ep
			f.compFlows = append(f.compFlows, en.flow)
			for _, hp := range f.flows[en.flow].hops() {
				m := hp.link
				lk := &f.lk[m]
				if lk.mark == ep {
					continue
				}
				lk.mark = ep
				f.compLinks = append(f.compLinks, m)
				lk.brem, lk.bcnt, lk.fmax = lk.bw, int32(len(lk.es)), 0
			}
		}
	}
	f.nextCheck()
	f.viol = f.viol[:0]
	f.progressiveFill(f.compLinks, ep, true)
	f.stats.Unchecked++
	if f.afterFresh != nil {
		f.afterFresh()
	}
}

// checkFrozen appends to f.viol the frozen flows on the links of the
// re-solved set of epoch ep (links) that lost their bottleneck, fillLocal's
// check, and records each link's satMax for the new rates. The new state
// of R's links first: the rates now add up to capacity - rem, and the
// fastest is the fastest frozen or re-solved one. A frozen flow had a
// bottleneck before (the old allocation was max-min fair); it still has it
// unless that link got worse: it changed, or was saturated and now is not,
// or now carries a faster flow. So only frozen flows on worse links are
// examined, over all their links (those outside R are unchanged; satMax).
func (f *Fabric) checkFrozen(links []int32, ep uint32) {
	worse := f.worse[:0]
	for _, l := range links {
		m := -1.0
		lk := &f.lk[l]
		if lk.rem <= lk.bw*satSlack {
			m = max(lk.fmax, lk.rmax)
		}
		lk.satEp = ep
		lk.satMax = m
		if old := lk.old; old == -2 || old >= 0 && (m < 0 || m > old*(1+sameRate)) {
			worse = append(worse, l)
		}
	}
	f.worse = worse
	for _, l := range worse {
		for _, en := range f.lk[l].es {
			h := &f.hot[en.flow]
			if h.mark == ep || h.chk == f.chk {
				continue
			}
			h.chk = f.chk
			ok := false
			for _, hp := range f.flows[en.flow].hops() {
				if m := f.satMax(hp.link, ep); m >= 0 && m <= h.rate*(1+sameRate) {
					ok = true
					break
				}
			}
			if !ok {
				f.viol = append(f.viol, en.flow)
			}
		}
	}
}

// recountFrozen panics unless f.frozen is the number of entries of flows
// outside the re-solved set of epoch ep on its links: a test's check of
// addToSet's count (checkAll).
func (f *Fabric) recountFrozen(links []int32, ep uint32) {
	n := 0
	for _, l := range links {
		for _, en := range f.lk[l].es {
			if f.hot[en.flow].mark != ep {
				n++
			}
		}
	}
	if n != f.frozen {
		panic(fmt.Sprintf("network: %d frozen entries on the re-solved links, addToSet counted %d", n, f.frozen))
	}
}

// satMax is, for a link outside the re-solved set of epoch ep (whose flows
// all keep their rates), the highest rate on it if its rates add up to its
// capacity and -1 otherwise; cached per epoch. For links in the set,
// fillLocal stores the same figure for the new rates.
func (f *Fabric) satMax(b int32, ep uint32) float64 {
	lk := &f.lk[b]
	if lk.satEp != ep {
		lk.satEp = ep
		sum, mx := 0.0, 0.0
		for _, en := range lk.es {
			r := f.hot[en.flow].rate
			sum += r
			mx = max(mx, r)
		}
		lk.satMax = -1
		if sum >= lk.bw*(1-satSlack) {
			lk.satMax = mx
		}
	}
	return lk.satMax
}

// fillThreshold re-solves the set that the thresholds prove sufficient
// (doc.go): an active flow is frozen when its rate is <= hi and either
// < lo or (<= tie and tied). Starting from the seed links, the set grows
// through every flow that is not frozen.
func (f *Fabric) fillThreshold(lo, tie, hi float64) {
	ep := f.nextEpoch()
	for _, l := range f.seeds {
		f.lk[l].chg = ep
	}
	links := f.compLinks[:0]
	flows := f.compFlows[:0]
	for _, l := range f.seeds {
		if f.lk[l].mark != ep {
			f.lk[l].mark = ep
			links = append(links, l)
		}
	}
	for i := 0; i < len(links); i++ {
		l := links[i]
		rem := f.lk[l].bw
		cnt := int32(0)
		for _, en := range f.lk[l].es {
			h := &f.hot[en.flow]
			if h.state == flowActive && h.rate <= hi && (h.rate < lo || h.rate <= tie && f.tied(en.flow, ep)) {
				rem -= h.rate // frozen
				continue
			}
			cnt++
			if h.mark == ep {
				continue
			}
			h.mark = ep
			flows = append(flows, en.flow)
			for _, hp := range f.flows[en.flow].hops() {
				if m := hp.link; f.lk[m].mark != ep {
					f.lk[m].mark = ep
					links = append(links, m)
				}
			}
		}
		f.lk[l].rem = rem
		f.lk[l].cnt = cnt
	}
	f.compLinks = links
	f.compFlows = flows
	f.progressiveFill(links, ep, false)
}

// progressiveFill runs progressive filling on the flows marked with ep over
// links, whose rem and cnt hold the capacity left for them and their
// number: repeatedly take the link whose fair share (capacity left /
// unfixed flows) is smallest and fix every unfixed flow on it at that
// share, in flow.next. Fixing a flow at the current minimum never lowers
// another link's share, so a popped key below the link's current share is
// stale and is pushed again with the current value. With check (a round
// of fillLocal), each link's rem and cnt are first set from its base
// (brem, bcnt) and its rmax cleared, in the pass that fills the heap (one
// pass over a burst's links fewer, each a cache miss on 16,384 GPUs), and
// a frozen flow faster than the share at which a link fixes its flows is
// appended to f.viol (fmax must hold each link's fastest frozen rate).
// f.compFlows must list the flows marked with ep: a link that carries one
// of them enters the heap only as the least of that flow's own links.
func (f *Fabric) progressiveFill(links []int32, ep uint32, check bool) {
	sh := &f.sh
	sh.items = sh.items[:0]
	own := 0 // links with one flow of the set
	for _, l := range links {
		lk := &f.lk[l]
		if check {
			lk.rem, lk.cnt, lk.rmax = lk.brem, lk.bcnt, 0
		}
		if lk.cnt > 1 {
			sh.push(lk.share(), l)
			lk.heaped = true
		} else if lk.cnt == 1 {
			own++
		}
	}
	// A link with one flow of the set is that flow's alone: its share
	// changes only when the flow is fixed, so of a flow's own links only
	// the least, in the heap's order, can fix it; the others leave the
	// heap after it is fixed and pass over. Only that one goes in. A
	// collective's flows across a fabric cross mostly their own links
	// (GPU, NIC and leaf ports), and popping those was most of the fill's
	// sifts (issue 18). The pass ends with the last such link (an expert
	// all-to-all's links each carry many of its flows: then it does not
	// start).
	for _, fi := range f.compFlows {
		if own == 0 {
			break
		}
		best, bl := 0.0, int32(-1)
		for _, hp := range f.flows[fi].hops() {
			if lk := &f.lk[hp.link]; lk.cnt == 1 {
				own--
				if s := lk.share(); bl < 0 || s < best || s == best && hp.link < bl {
					best, bl = s, hp.link
				}
			}
		}
		if bl >= 0 {
			sh.push(best, bl)
			f.lk[bl].heaped = true
		}
	}
	f.fixStamp++
	if f.fixStamp == 0 {
		for i := range f.hot {
			f.hot[i].fixed = 0
		}
		f.fixStamp = 1
	}
	fx := f.fixStamp
	// settled counts the links in the heap whose flows are all fixed: a
	// fill of a collective's burst fixes most links' flows through other
	// links, and popping each of them costs a sift. Once they are most of
	// the heap, they are dropped in one pass.
	settled := 0
	for len(sh.items) > 0 {
		if settled >= 32 && 2*settled > len(sh.items) {
			sh.keep(f.unsettled)
			settled = 0
			continue
		}
		key, l := sh.pop()
		lk := &f.lk[l]
		lk.heaped = false
		if lk.cnt == 0 {
			settled--
			continue
		}
		s := lk.share()
		if s > key {
			sh.push(s, l)
			lk.heaped = true
			continue
		}
		if check && s < lk.fmax*(1-sameRate) {
			for _, en := range lk.es {
				h := &f.hot[en.flow]
				if h.mark != ep && h.chk != f.chk && h.rate > s*(1+sameRate) {
					h.chk = f.chk
					f.viol = append(f.viol, en.flow)
				}
			}
		}
		for _, en := range lk.es {
			h := &f.hot[en.flow]
			if h.mark != ep || h.fixed == fx {
				continue
			}
			h.fixed = fx
			h.next = s
			for _, hp := range f.flows[en.flow].hops() {
				m := &f.lk[hp.link]
				m.rem -= s
				m.cnt--
				m.rmax = s
				if m.cnt == 0 && m.heaped {
					settled++
				}
			}
		}
	}
}

// unsettled reports whether link l still has flows to fix in the current
// fill; a link that has none leaves the heap (keep).
func (f *Fabric) unsettled(l int32) bool {
	lk := &f.lk[l]
	if lk.cnt > 0 {
		return true
	}
	lk.heaped = false
	return false
}

// tied reports whether active flow fi has a bottleneck link that nothing
// changed at this instant: a link that gained and lost no flow, whose rates
// add up to its capacity and on which no flow is faster than this one (see
// satMax). A flow tied with the departure threshold that has such a link
// keeps its rate (doc.go). Cached per flow for the current epoch.
func (f *Fabric) tied(fi int32, ep uint32) bool {
	fl := &f.flows[fi]
	if fl.certEp == ep {
		return fl.cert
	}
	fl.certEp = ep
	fl.cert = false
	rate := f.hot[fi].rate
	for _, hp := range fl.hops() {
		b := hp.link
		if f.lk[b].chg == ep {
			continue
		}
		if m := f.satMax(b, ep); m >= 0 && m <= rate*(1+freezeSlack) {
			fl.cert = true
			return true
		}
	}
	return false
}

// share is the link's fair share for its unfixed flows.
func (lk *flink) share() float64 {
	return max(lk.rem, 0) / float64(lk.cnt)
}

// flowLinkBytes is the bytes link has carried by now: those of flows that
// finished on it plus what its active flows have transmitted so far.
func (f *Fabric) flowLinkBytes(link int, now engine.Time) float64 {
	b := f.lk[link].bytes
	for _, en := range f.lk[link].es {
		fl := &f.flows[en.flow]
		rem := fl.rem - f.hot[en.flow].rate*float64(now-fl.last)/1e9
		b += fl.bytes - max(rem, 0)
	}
	return b
}

// AloneTime is how long a flow-fidelity transfer of size on route takes
// from its start to its delivery when no other transfer shares any of its
// links meanwhile: tx, its last byte, at the rate the max-min allocation
// gives a flow alone on its links (its narrowest link's capacity, what
// alone and every re-solve give it), and lat, the route's latency
// (RouteLatency), with the fabric's own rounding (txTime). A transfer on a
// link of zero capacity never arrives: tx is engine.Forever.
//
// Why: a caller that can prove a collective's transfers alone on their
// links (collectives.Runner.MakeSole) plays it as one timer of the time
// the fabric would give it, instead of two or three events and a re-solve
// for each transfer (issue 18).
func (f *Fabric) AloneTime(route []int32, size units.Bytes) (tx, lat engine.Time) {
	rate := math.Inf(1)
	for _, l := range route {
		rate = min(rate, f.lk[l].bw)
	}
	return txTime(float64(size), rate), f.RouteLatency(route)
}

// AddAlone adds to link the bytes and busy time of transfers a caller
// played alone on it (AloneTime), as their departures would have: for
// the same bytes to the bit, bytes must be their sum in the order they
// ended, on a link nothing else crossed.
func (f *Fabric) AddAlone(link int32, bytes float64, busy engine.Time) {
	lk := &f.lk[link]
	lk.bytes += bytes
	lk.busy += busy
}

// CheckAlone makes the fabric check, from now on, the transfers callers
// declare alone (HoldAlone): a flow that joins a link of one before it
// ends, or a declared transfer on a link that carries a flow, counts as a
// clash (AloneClashes). For tests: the check reads a link-sized array at
// every flow's arrival.
func (f *Fabric) CheckAlone() {
	if f.fid == Flow && f.soleUntil == nil {
		f.soleUntil = make([]engine.Time, len(f.lk))
	}
}

// HoldAlone declares that a transfer on route, played by the caller alone
// on its links, occupies them from from (now or later) until until
// (CheckAlone; nothing without it). A link that carries a flow now, or a
// declared transfer after from, is a clash.
func (f *Fabric) HoldAlone(route []int32, from, until engine.Time) {
	if f.soleUntil == nil {
		return
	}
	for _, l := range route {
		if len(f.lk[l].es) > 0 || f.soleUntil[l] > from {
			f.soleClashes++
		}
		f.soleUntil[l] = until
	}
}

// CheckingAlone reports whether CheckAlone is on.
func (f *Fabric) CheckingAlone() bool { return f.soleUntil != nil }

// AloneClashes is how many clashes CheckAlone has seen: 0 where every
// transfer declared alone was.
func (f *Fabric) AloneClashes() int { return f.soleClashes }

// clashes counts a flow arriving on a link held by a transfer declared
// alone (CheckAlone).
func (f *Fabric) clashes(hs []hop, now engine.Time) {
	for _, h := range hs {
		if f.soleUntil[h.link] > now {
			f.soleClashes++
		}
	}
}
