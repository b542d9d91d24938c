package network

import (
	"math"

	"github.com/simtrain/simtrain/sim/engine"
)

// Flow-fidelity state and the incremental max-min solver. The model and
// its correctness argument are in doc.go.

// flow is one transfer in transmission: the fields the solver reads only
// for flows it re-solves. Slots live in Fabric.flows, parallel to
// Fabric.hot, and are recycled through a free-index stack; route and pos
// keep their capacity across reuse, so steady state allocates nothing.
type flow struct {
	route  []int32 // link ids
	pos    []int32 // pos[k]: index of this flow's entry in links[route[k]]
	bytes  float64 // size of the transfer
	rem    float64 // bytes left to transmit at time last
	last   engine.Time
	finish engine.Time // when the last byte is transmitted at the current rate
	lat    engine.Time // sum of the route's latencies
	seq    uint64      // start order: breaks ties between equal finish times
	hidx   int32       // index in the finish heap, -1 when not in it
	del    int32       // delivery slot
	certEp uint32      // solve epoch in which cert was computed
	cert   bool        // the flow has an unchanged bottleneck link (see tied)
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

// entry is one flow crossing one link: links[l] holds the entries of the
// active flows on link l; hop is the index of l in the flow's route.
type entry struct {
	flow int32
	hop  int32
}

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
	links    [][]entry
	flows    []flow
	hot      []flowHot
	flowFree []int32
	nActive  int
	seq      uint64
	arrivals []int32 // flows started at this instant, not yet on their links
	seeds    []int32 // links whose flow set changed at this instant
	fh       finishHeap

	solvePending bool        // an evSolve event is scheduled at now
	wakeAt       engine.Time // time of the valid pending evWake event, or -1
	wakeGen      int64       // generation of the valid evWake event

	// Solver scratch, indexed by link id and reused across solves.
	epoch     uint32
	lmark     []uint32  // link is in the current re-solved set when lmark == epoch
	lrem      []float64 // capacity left for the unfixed flows
	lcnt      []int32   // unfixed entries
	lchg      []uint32  // == epoch: the link gained or lost a flow at this instant
	lsatEp    []uint32  // == epoch: lsatMax is valid
	lsatMax   []float64 // highest rate on a saturated link, -1 if not saturated
	lfmax     []float64 // highest frozen rate on the link (fillLocal)
	viol      []int32   // frozen flows that failed the check (fillLocal)
	worse     []int32   // links whose state got worse this round (fillLocal)
	lold      []float64 // satMax before this solve; -2 for a changed link (fillLocal)
	lbrem     []float64 // capacity left after frozen flows (fillLocal)
	lbcnt     []int32   // flows of the re-solved set on the link (fillLocal)
	lrmax     []float64 // highest share fixed on the link by the last fill
	lfdirty   []bool    // lfmax must be rescanned (fillLocal)
	fdirty    []int32   // links with lfdirty set
	chk       uint32    // current check stamp
	fixStamp  uint32    // current progressiveFill stamp
	compLinks []int32
	compFlows []int32
	sh        shareHeap

	stats SolverStats

	// maxRounds is maxLocalRounds; tests lower it to exercise the
	// fallback. fullSolve re-solves whole connected components (tests
	// compare all three ways).
	maxRounds int
	fullSolve bool
}

func (f *Fabric) initFlow(n int) {
	// Every link starts with room for linkRoom flows in one shared
	// backing array, so the first flows on a link allocate nothing; a
	// busier link grows its own slice once and keeps it.
	f.links = make([][]entry, n)
	room := make([]entry, n*linkRoom)
	for l := range f.links {
		f.links[l] = room[l*linkRoom : l*linkRoom : (l+1)*linkRoom]
	}
	f.lmark = make([]uint32, n)
	f.lrem = make([]float64, n)
	f.lcnt = make([]int32, n)
	f.lchg = make([]uint32, n)
	f.lsatEp = make([]uint32, n)
	f.lsatMax = make([]float64, n)
	f.lfmax = make([]float64, n)
	f.lold = make([]float64, n)
	f.lbrem = make([]float64, n)
	f.lbcnt = make([]int32, n)
	f.lrmax = make([]float64, n)
	f.lfdirty = make([]bool, n)
	f.wakeAt = -1
	f.maxRounds = maxLocalRounds
	f.fh.flows = &f.flows
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
		fi = int32(len(f.flows) - 1)
	}
	fl := &f.flows[fi]
	h := &f.hot[fi]
	if cap(fl.route) < len(route) {
		// Room for the longest routes of common topologies (a 3-tier
		// fat tree through NVLink and PCIe has about 8 hops), so that a
		// recycled slot rarely grows again.
		c := max(len(route), 8)
		fl.route = make([]int32, 0, c)
		fl.pos = make([]int32, 0, c)
	}
	fl.route = append(fl.route[:0], route...)
	fl.pos = fl.pos[:len(route)]
	fl.bytes = bytes
	fl.rem = bytes
	h.rate = 0
	fl.last = now
	fl.finish = engine.Forever
	fl.lat = lat
	f.seq++
	fl.seq = f.seq
	fl.hidx = -1
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
	// Thresholds for the re-solve (doc.go): thetaD, the lowest rate of a
	// departing flow; thetaA, a lower bound on the rate any arriving flow
	// will get. +Inf when there are none.
	thetaD, thetaA := math.Inf(1), math.Inf(1)

	// Departures.
	for f.fh.len() > 0 {
		fi := f.fh.min()
		fl := &f.flows[fi]
		if fl.finish > now {
			break
		}
		f.fh.pop()
		thetaD = math.Min(thetaD, f.hot[fi].rate)
		for k, l := range fl.route {
			f.removeEntry(l, fl.pos[k])
			f.lbytes[l] += fl.bytes
			if len(f.links[l]) == 0 {
				f.lbusy[l] += now - f.lbusyT[l]
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
			for k, l := range fl.route {
				if len(f.links[l]) == 0 {
					f.lbusyT[l] = now
				}
				fl.pos[k] = int32(len(f.links[l]))
				f.links[l] = append(f.links[l], entry{fi, int32(k)})
				f.seeds = append(f.seeds, l)
			}
			f.nActive++
		}
		// A flow's max-min rate is at least min over its links of
		// capacity / (flows on the link).
		for _, fi := range f.arrivals {
			for _, l := range f.flows[fi].route {
				thetaA = math.Min(thetaA, f.bw[l]/float64(len(f.links[l])))
			}
		}
		f.arrivals = f.arrivals[:0]
	}

	if len(f.seeds) > 0 {
		f.solve(now, thetaD, thetaA)
		f.seeds = f.seeds[:0]
	}

	// Schedule the next completion unless a valid wake at or before it is
	// already pending (that one will find nothing due and reschedule).
	if f.fh.len() == 0 {
		return
	}
	m := f.flows[f.fh.min()].finish
	if m == engine.Forever || (f.wakeAt >= 0 && f.wakeAt <= m) {
		return
	}
	f.wakeGen++
	f.wakeAt = m
	f.e.At(m, f.h, f.wakeGen<<evKindBits|evWake)
}

// removeEntry deletes entry i of link l by moving the last entry into its
// place.
func (f *Fabric) removeEntry(l int32, i int32) {
	es := f.links[l]
	last := int32(len(es) - 1)
	if i != last {
		moved := es[last]
		es[i] = moved
		f.flows[moved.flow].pos[moved.hop] = i
	}
	f.links[l] = es[:last]
}

// solve recomputes the max-min rates of the flows that can change after
// the departures and arrivals of this instant, then gives every flow whose
// rate changed a new completion time. thetaD is the lowest rate among
// departed flows and thetaA a lower bound on the rate of every arrived flow
// (+Inf when there are none).
//
// It first tries a local re-solve (fillLocal), which grows the re-solved
// set from the changed links only as far as a check of the max-min
// conditions requires. If that does not settle within its budget, it
// re-solves the set that the thresholds prove sufficient (fillThreshold).
func (f *Fabric) solve(now engine.Time, thetaD, thetaA float64) {
	lo := thetaD * (1 - freezeSlack)
	switch {
	case f.fullSolve:
		f.fillThreshold(0, 0, math.Inf(1))
	case f.fillLocal(lo, thetaA):
	default:
		f.stats.Fallbacks++
		f.fillThreshold(lo, thetaD*(1+freezeSlack), thetaA)
	}
	links, flows := f.compLinks, f.compFlows

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
		f.fh.update(fi)
		resched++
	}

	f.stats.Solves++
	f.stats.FlowsVisited += uint64(len(flows))
	f.stats.LinksVisited += uint64(len(links))
	f.stats.Rescheduled += uint64(resched)
}

// nextEpoch starts a new solver epoch; marks equal to it are current.
func (f *Fabric) nextEpoch() uint32 {
	f.epoch++
	if f.epoch == 0 { // wrapped: clear every mark once per 2^32 epochs
		clear(f.lmark)
		clear(f.lchg)
		clear(f.lsatEp)
		for i := range f.flows {
			f.hot[i].mark, f.flows[i].certEp = 0, 0
		}
		f.epoch = 1
	}
	return f.epoch
}

// addToSet puts flow fi in the re-solved set R of epoch ep, with every link
// of its route, and keeps each link's base for the next round of
// fillLocal: lbrem, the capacity left after the frozen flows, lbcnt, the
// number of R's flows on it, and lfmax, the fastest frozen rate (rescanned
// at the next round when a flow left the frozen set).
func (f *Fabric) addToSet(fi int32, ep uint32) {
	h := &f.hot[fi]
	if h.mark == ep {
		return
	}
	h.mark = ep
	f.compFlows = append(f.compFlows, fi)
	for _, m := range f.flows[fi].route {
		if f.lmark[m] == ep {
			// The flow was frozen on m until now.
			f.lbrem[m] += h.rate
			f.lbcnt[m]++
			if !f.lfdirty[m] {
				f.lfdirty[m] = true
				f.fdirty = append(f.fdirty, m)
			}
			continue
		}
		f.lmark[m] = ep
		f.compLinks = append(f.compLinks, m)
		// One pass for the base and for the link's state before this
		// solve (rates are still the old ones), which satMax would give;
		// a changed link counts as worse whatever happens.
		rem, cnt, fmax := f.bw[m], int32(0), 0.0
		sum, mx := 0.0, 0.0
		for _, en := range f.links[m] {
			o := &f.hot[en.flow]
			sum += o.rate
			mx = math.Max(mx, o.rate)
			if o.mark == ep {
				cnt++
			} else {
				rem -= o.rate
				fmax = math.Max(fmax, o.rate)
			}
		}
		f.lbrem[m], f.lbcnt[m], f.lfmax[m] = rem, cnt, fmax
		if f.lsatEp[m] != ep {
			f.lsatEp[m] = ep
			f.lsatMax[m] = -1
			if sum >= f.bw[m]*(1-satSlack) {
				f.lsatMax[m] = mx
			}
		}
		if f.lchg[m] == ep {
			f.lold[m] = -2
		} else {
			f.lold[m] = f.lsatMax[m]
		}
	}
}

// fillLocal re-solves a set R of flows that starts as the flows on the
// links that gained or lost a flow at this instant, less those that the
// thresholds prove unchanged (active, rate < lo and <= hi; see
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
func (f *Fabric) fillLocal(lo, hi float64) bool {
	ep := f.nextEpoch()
	f.compLinks = f.compLinks[:0]
	f.compFlows = f.compFlows[:0]
	for _, l := range f.seeds {
		f.lchg[l] = ep
	}
	for _, l := range f.seeds {
		for _, en := range f.links[l] {
			if h := &f.hot[en.flow]; h.state != flowActive || h.rate >= lo || h.rate > hi {
				f.addToSet(en.flow, ep)
			}
		}
	}
	work := 0 // flows re-solved over all rounds so far
	for round := 0; round < f.maxRounds && work <= f.nActive; round++ {
		work += len(f.compFlows)
		f.chk++
		if f.chk == 0 {
			for i := range f.hot {
				f.hot[i].chk = 0
			}
			f.chk = 1
		}
		for _, l := range f.fdirty {
			fmax := 0.0
			for _, en := range f.links[l] {
				if o := &f.hot[en.flow]; o.mark != ep {
					fmax = math.Max(fmax, o.rate)
				}
			}
			f.lfmax[l] = fmax
			f.lfdirty[l] = false
		}
		f.fdirty = f.fdirty[:0]
		links := f.compLinks
		for _, l := range links {
			f.lrem[l], f.lcnt[l], f.lrmax[l] = f.lbrem[l], f.lbcnt[l], 0
		}
		f.viol = f.viol[:0]
		f.progressiveFill(links, ep, true)

		// Bottleneck check for the frozen flows on R's links. First the
		// new state of R's links: the rates now add up to capacity -
		// lrem, and the fastest is the fastest frozen or re-solved one.
		// A frozen flow had a bottleneck before (the old allocation was
		// max-min fair); it still has it unless that link got worse: it
		// changed, or was saturated and now is not, or now carries a
		// faster flow. So only frozen flows on worse links are examined,
		// over all their links (those outside R are unchanged; satMax).
		worse := f.worse[:0]
		for _, l := range links {
			m := -1.0
			if f.lrem[l] <= f.bw[l]*satSlack {
				m = math.Max(f.lfmax[l], f.lrmax[l])
			}
			f.lsatEp[l] = ep
			f.lsatMax[l] = m
			if old := f.lold[l]; old == -2 || old >= 0 && (m < 0 || m > old*(1+sameRate)) {
				worse = append(worse, l)
			}
		}
		f.worse = worse
		for _, l := range worse {
			for _, en := range f.links[l] {
				h := &f.hot[en.flow]
				if h.mark == ep || h.chk == f.chk {
					continue
				}
				h.chk = f.chk
				ok := false
				for _, b := range f.flows[en.flow].route {
					if m := f.satMax(b, ep); m >= 0 && m <= h.rate*(1+sameRate) {
						ok = true
						break
					}
				}
				if !ok {
					f.viol = append(f.viol, en.flow)
				}
			}
		}
		if len(f.viol) == 0 {
			for _, l := range f.fdirty {
				f.lfdirty[l] = false
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
		f.lfdirty[l] = false
	}
	f.fdirty = f.fdirty[:0]
	return false
}

// satMax is, for a link outside the re-solved set of epoch ep (whose flows
// all keep their rates), the highest rate on it if its rates add up to its
// capacity and -1 otherwise; cached per epoch. For links in the set,
// fillLocal stores the same figure for the new rates.
func (f *Fabric) satMax(b int32, ep uint32) float64 {
	if f.lsatEp[b] != ep {
		f.lsatEp[b] = ep
		sum, mx := 0.0, 0.0
		for _, en := range f.links[b] {
			r := f.hot[en.flow].rate
			sum += r
			mx = math.Max(mx, r)
		}
		f.lsatMax[b] = -1
		if sum >= f.bw[b]*(1-satSlack) {
			f.lsatMax[b] = mx
		}
	}
	return f.lsatMax[b]
}

// fillThreshold re-solves the set that the thresholds prove sufficient
// (doc.go): an active flow is frozen when its rate is <= hi and either
// < lo or (<= tie and tied). Starting from the seed links, the set grows
// through every flow that is not frozen.
func (f *Fabric) fillThreshold(lo, tie, hi float64) {
	ep := f.nextEpoch()
	for _, l := range f.seeds {
		f.lchg[l] = ep
	}
	links := f.compLinks[:0]
	flows := f.compFlows[:0]
	for _, l := range f.seeds {
		if f.lmark[l] != ep {
			f.lmark[l] = ep
			links = append(links, l)
		}
	}
	for i := 0; i < len(links); i++ {
		l := links[i]
		rem := f.bw[l]
		cnt := int32(0)
		for _, en := range f.links[l] {
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
			for _, m := range f.flows[en.flow].route {
				if f.lmark[m] != ep {
					f.lmark[m] = ep
					links = append(links, m)
				}
			}
		}
		f.lrem[l] = rem
		f.lcnt[l] = cnt
	}
	f.compLinks = links
	f.compFlows = flows
	f.progressiveFill(links, ep, false)
}

// progressiveFill runs progressive filling on the flows marked with ep over
// links, whose lrem and lcnt hold the capacity left for them and their
// number: repeatedly take the link whose fair share (capacity left /
// unfixed flows) is smallest and fix every unfixed flow on it at that
// share, in flow.next. Fixing a flow at the current minimum never lowers
// another link's share, so a popped key below the link's current share is
// stale and is pushed again with the current value. With check, a frozen
// flow faster than the share at which a link fixes its flows is appended to
// f.viol (lfmax must hold each link's fastest frozen rate).
func (f *Fabric) progressiveFill(links []int32, ep uint32, check bool) {
	sh := &f.sh
	sh.items = sh.items[:0]
	for _, l := range links {
		if f.lcnt[l] > 0 {
			sh.push(f.share(l), l)
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
	for len(sh.items) > 0 {
		key, l := sh.pop()
		if f.lcnt[l] == 0 {
			continue
		}
		s := f.share(l)
		if s > key {
			sh.push(s, l)
			continue
		}
		if check && s < f.lfmax[l]*(1-sameRate) {
			for _, en := range f.links[l] {
				h := &f.hot[en.flow]
				if h.mark != ep && h.chk != f.chk && h.rate > s*(1+sameRate) {
					h.chk = f.chk
					f.viol = append(f.viol, en.flow)
				}
			}
		}
		for _, en := range f.links[l] {
			h := &f.hot[en.flow]
			if h.mark != ep || h.fixed == fx {
				continue
			}
			h.fixed = fx
			h.next = s
			for _, m := range f.flows[en.flow].route {
				f.lrem[m] -= s
				f.lcnt[m]--
				f.lrmax[m] = s
			}
		}
	}
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
	for _, b := range fl.route {
		if f.lchg[b] == ep {
			continue
		}
		if m := f.satMax(b, ep); m >= 0 && m <= rate*(1+freezeSlack) {
			fl.cert = true
			return true
		}
	}
	return false
}

// share is link l's fair share for its unfixed flows.
func (f *Fabric) share(l int32) float64 {
	return math.Max(f.lrem[l], 0) / float64(f.lcnt[l])
}

// flowLinkBytes is the bytes link has carried by now: those of flows that
// finished on it plus what its active flows have transmitted so far.
func (f *Fabric) flowLinkBytes(link int, now engine.Time) float64 {
	b := f.lbytes[link]
	for _, en := range f.links[link] {
		fl := &f.flows[en.flow]
		rem := fl.rem - f.hot[en.flow].rate*float64(now-fl.last)/1e9
		b += fl.bytes - math.Max(rem, 0)
	}
	return b
}
