package network

import (
	"fmt"
	"math"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/hugepages"
	"github.com/simtrain/simtrain/sim/units"
)

// Fidelity selects how transfers share links.
type Fidelity uint8

const (
	// Analytic gives every transfer its route's bottleneck bandwidth and
	// ignores other traffic (no contention).
	Analytic Fidelity = iota
	// Flow shares every link max-min fairly among the transfers crossing it,
	// re-solving only the links a flow arrival or departure touches.
	Flow
)

func (f Fidelity) String() string {
	if f == Flow {
		return "flow"
	}
	return "analytic"
}

// FidelityNames lists the values ParseFidelity accepts.
func FidelityNames() []string { return []string{"analytic", "flow"} }

// ParseFidelity parses "analytic" or "flow".
func ParseFidelity(s string) (Fidelity, error) {
	switch s {
	case "analytic":
		return Analytic, nil
	case "flow":
		return Flow, nil
	}
	return 0, fmt.Errorf("unknown fidelity %q (valid: analytic, flow)", s)
}

// Done is told when a transfer has fully arrived.
type Done interface {
	TransferDone(now engine.Time, tag int64)
}

// SolverStats counts the work of the flow-fidelity solver since New. They
// measure cost only; results never depend on them.
type SolverStats struct {
	Solves       uint64 // max-min re-solves (one per simulated instant with arrivals or departures)
	FlowsVisited uint64 // flows whose rate was recomputed, summed over solves
	LinksVisited uint64 // links in the re-solved sets, summed over solves
	Rescheduled  uint64 // flows whose rate changed and got a new completion time
	LocalRounds  uint64 // extra rounds of the local re-solve (its check failed and the set grew)
	Fallbacks    uint64 // solves where the local re-solve did not settle and the threshold re-solve ran
	Alone        uint64 // solves where every changed link carried only arrived flows, each alone (no re-solve)
	Unchecked    uint64 // rounds of the local re-solve whose set left no flow frozen on its links (no check)
	Fresh        uint64 // local re-solves whose changed links carried only arrived flows (fillFresh; counted in Unchecked too)
}

// Fabric plays transfers on directed links at one Fidelity. Create with New.
//
// A Fabric is driven by its engine and is not safe for concurrent use. Every
// method is deterministic: the same calls at the same simulated times give
// the same completion times and the same callbacks in the same order.
type Fabric struct {
	e   *engine.Engine
	h   engine.HandlerID
	fid Fidelity
	bw  []float64
	lat []engine.Time

	// Completion callbacks: a slab with a free-index stack. Event arguments
	// carry the slot index.
	dels     []delivery
	delFree  []int32
	inFlight int

	// an is every link's state at analytic fidelity, one record per link
	// (see alink); abw its bandwidths, New's slice itself (not copied).
	an  []alink
	abw []units.BytesPerSecond
	// tr is traffic mode's state (NewTraffic; traffic.go), nil otherwise.
	tr *traffic

	// Analytic fidelity with TrackChanges: the links whose statistics may
	// have moved since the last Changed, each once (marked), and beside
	// each its figures at the last Changed (taken when it was first
	// crossed since, before the crossing changed them).
	changed       []int32
	changedBefore []LinkFigures
	changedMark   []bool

	flowState // flow fidelity only; see flow.go

	// afterEvent, when set (tests only), runs after every event the fabric
	// handles.
	afterEvent func(now engine.Time)
}

// alink is one link's analytic-fidelity state: bytes carried (see
// LinkBytes), busy time so far and the end of the union of its busy
// intervals. A transfer writes all three for every link of its route, so
// they share one 24-byte record: a link costs one cache line rather than
// one per array, and the fabric's memory is 24 bytes a link instead of 32
// (links.arrow's reconstruction at 131,072 GPUs starts ~800 k transfers
// over 1.4 M links, and on this machine first touching memory costs
// ~3.5 s of CPU per GB; issue 18).
type alink struct {
	bytes       float64
	busy, busyT engine.Time
}

// cross adds a transfer of bytes busy over [now, end). Starts arrive in
// time order, so the union of the busy intervals grows only at its right
// edge.
func (a *alink) cross(bytes float64, now, end engine.Time) {
	a.bytes += bytes
	if be := a.busyT; now >= be {
		a.busy += end - now
		a.busyT = end
	} else if end > be {
		a.busy += end - be
		a.busyT = end
	}
}

type delivery struct {
	done Done
	tag  int64
}

// Event arguments: the low two bits say what the event is.
const (
	evDeliver  = iota // payload: delivery slot
	evSolve           // payload: none; re-solve at this instant
	evWake            // payload: wake generation
	evKindBits = 2
)

type fabricHandler struct{ f *Fabric }

func (h fabricHandler) Handle(now engine.Time, arg int64) {
	f := h.f
	switch arg & (1<<evKindBits - 1) {
	case evDeliver:
		slot := int32(arg >> evKindBits)
		d := f.dels[slot]
		f.dels[slot] = delivery{}
		f.delFree = append(f.delFree, slot)
		f.inFlight--
		if f.afterEvent != nil {
			f.afterEvent(now)
		}
		if d.done != nil {
			d.done.TransferDone(now, d.tag)
		}
		return
	case evSolve:
		f.solvePending = false
		f.step(now)
	case evWake:
		if arg>>evKindBits != f.wakeGen {
			return // stale: a later step rescheduled the wake
		}
		f.wakeAt = -1
		f.step(now)
	}
	if f.afterEvent != nil {
		f.afterEvent(now)
	}
}

// New makes a fabric over links with the given per-direction bandwidths
// and latencies, indexed by link id. The latencies are not copied and must
// not change afterwards; nor are the bandwidths at analytic fidelity (flow
// fidelity copies them).
//
// New trusts its inputs: len(latency) must equal len(bandwidth), every
// bandwidth must be finite and >= 0 (0 means a transfer over that link never
// completes) and every latency >= 0. Callers holding untrusted values check
// them first with CheckLinks.
func New(e *engine.Engine, bandwidth []units.BytesPerSecond, latency []engine.Time, f Fidelity) *Fabric {
	n := len(bandwidth)
	fb := &Fabric{e: e, fid: f, lat: latency}
	fb.h = e.Register(fabricHandler{fb})
	if f != Flow {
		fb.an, fb.abw = hugepages.Advise(make([]alink, n)), bandwidth
		return fb
	}
	fb.bw = make([]float64, n) // the solver's arithmetic is in plain bytes/s
	for i, b := range bandwidth {
		fb.bw[i] = float64(b)
	}
	fb.initFlow(n)
	return fb
}

// CheckLinks reports the first problem with link arrays meant for New, or
// nil: lengths must match, bandwidths finite and >= 0, latencies >= 0.
func CheckLinks(bandwidth []units.BytesPerSecond, latency []engine.Time) error {
	if len(bandwidth) != len(latency) {
		return fmt.Errorf("network: %d bandwidths but %d latencies (need one of each per link)", len(bandwidth), len(latency))
	}
	for i, b := range bandwidth {
		if !(b >= 0) || math.IsInf(float64(b), 1) {
			return fmt.Errorf("network: bandwidth[%d] = %v: must be finite and >= 0 bytes/s", i, b)
		}
	}
	for i, l := range latency {
		if l < 0 {
			return fmt.Errorf("network: latency[%d] = %v: must be >= 0", i, l)
		}
	}
	return nil
}

// CheckTransfer reports the first problem with arguments meant for Start, or
// nil: bytes must be finite and >= 0, every link id in [0, NumLinks()), and
// no link may appear twice in the route (routes are simple paths).
func (f *Fabric) CheckTransfer(route []int32, bytes units.Bytes) error {
	if !(bytes >= 0) || math.IsInf(float64(bytes), 1) {
		return fmt.Errorf("network: transfer bytes = %v: must be finite and >= 0", bytes)
	}
	for i, l := range route {
		if l < 0 || int(l) >= f.NumLinks() {
			return fmt.Errorf("network: route[%d] = %d: link id out of range [0, %d)", i, l, f.NumLinks())
		}
		for j := range i {
			if route[j] == l {
				return fmt.Errorf("network: route[%d] = %d repeats route[%d]: a route may cross a link once", i, l, j)
			}
		}
	}
	return nil
}

// Fidelity is the fidelity the fabric was made with.
func (f *Fabric) Fidelity() Fidelity { return f.fid }

// NumLinks is the number of links.
func (f *Fabric) NumLinks() int {
	if f.tr != nil {
		return len(f.tr.cls)
	}
	return len(f.bw) + len(f.an) // one of them is empty
}

// Start begins moving bytes along route (link ids, in order; the slice is
// copied). The transfer's last byte arrives at the end of transmission plus
// the sum of the route's latencies; then done.TransferDone(now, tag) is called
// (done may be nil when nobody needs to know).
// An empty route (same endpoint) completes after zero time.
//
// Analytic: transmission takes bytes / (min bandwidth on the route), rounded
// up to whole nanoseconds, whatever else is running. Flow: the transfer is a
// flow that holds every link of its route from now until its last byte is
// transmitted, at its max-min fair rate (see the package doc). Zero bytes
// complete after the route latency without occupying links. A transfer over a
// zero-bandwidth link never completes.
//
// Start trusts its inputs, which come from topology code, not from users:
// bytes finite and >= 0, link ids valid, no link twice (see CheckTransfer).
// Done is never called from inside Start.
func (f *Fabric) Start(route []int32, size units.Bytes, done Done, tag int64) {
	f.StartWithLatency(route, size, done, tag, f.RouteLatency(route))
}

// RouteLatency is the latency a transfer on route is charged: the sum of
// its links' latencies (Forever if that overflows).
func (f *Fabric) RouteLatency(route []int32) engine.Time {
	var lat engine.Time
	for _, l := range route {
		lat = addTime(lat, f.lat[l])
	}
	return lat
}

// StartWithLatency is Start for a caller that has the route's latency from
// this fabric's RouteLatency: the same transfer, without reading every
// link's latency again (a replayed collective's transfers: a link's
// latency was a cache miss per hop at 2,048 GPUs and more; issue 18).
func (f *Fabric) StartWithLatency(route []int32, size units.Bytes, done Done, tag int64, lat engine.Time) {
	bytes := float64(size)
	now := f.e.Now()
	d := f.newDelivery(done, tag)
	f.inFlight++
	if len(route) == 0 || !(bytes > 0) {
		f.e.At(addTime(now, lat), f.h, int64(d)<<evKindBits|evDeliver)
		return
	}
	if f.fid == Analytic {
		abw := f.abw
		bw := float64(abw[route[0]])
		for _, l := range route[1:] {
			bw = min(bw, float64(abw[l])) // builtin min: math.Min's NaN and signed-zero rules, inlined
		}
		tx := txTime(bytes, bw)
		end := addTime(now, tx)
		if f.tr != nil {
			f.startTraffic(route, bytes, now, end)
			if tx == engine.Forever {
				f.tr.unbounded = true
				return
			}
			f.e.At(addTime(end, lat), f.h, int64(d)<<evKindBits|evDeliver)
			return
		}
		an := f.an
		for _, l := range route {
			a := &an[l]
			if f.changedMark != nil && !f.changedMark[l] {
				f.markChanged(l, a)
			}
			a.cross(bytes, now, end)
		}
		if tx == engine.Forever {
			return // a zero-bandwidth link: never arrives
		}
		f.e.At(addTime(end, lat), f.h, int64(d)<<evKindBits|evDeliver)
		return
	}
	f.startFlow(now, route, bytes, d, lat)
}

func (f *Fabric) newDelivery(done Done, tag int64) int32 {
	if n := len(f.delFree); n > 0 {
		s := f.delFree[n-1]
		f.delFree = f.delFree[:n-1]
		f.dels[s] = delivery{done, tag}
		return s
	}
	f.dels = append(f.dels, delivery{done, tag})
	return int32(len(f.dels) - 1)
}

// InFlight is the number of transfers started whose done has not been
// called yet (including those that will never complete).
func (f *Fabric) InFlight() int { return f.inFlight }

// ActiveFlows is, at flow fidelity, the number of flows holding links now:
// started with bytes > 0 on a non-empty route and not yet fully transmitted.
// At analytic fidelity, where transfers hold nothing, it is InFlight().
func (f *Fabric) ActiveFlows() int {
	if f.fid == Flow {
		return f.nActive
	}
	return f.inFlight
}

// LinkBytes is the number of bytes carried by link. Flow fidelity: bytes
// transmitted so far, including the transmitted part of flows still
// running. Analytic fidelity: the whole size of every transfer started over
// the link (transfers are not tracked while in flight). Once every transfer
// has completed both count each transfer's bytes once per link it crossed.
func (f *Fabric) LinkBytes(link int) units.Bytes {
	if f.fid == Flow {
		return units.Bytes(f.flowLinkBytes(link, f.e.Now()))
	}
	return units.Bytes(f.rec(link).bytes)
}

// rec is link's analytic figures.
func (f *Fabric) rec(link int) *alink {
	if f.tr != nil {
		return &f.tr.at(f.tr.cls[link]).alink
	}
	return &f.an[link]
}

// LinkBusy is the time up to now during which link carried at least one
// transfer (flow fidelity: an active flow; analytic: a transfer between its
// start and the end of its transmission). It never exceeds Now.
func (f *Fabric) LinkBusy(link int) engine.Time {
	now := f.e.Now()
	if f.fid == Flow {
		lk := &f.lk[link]
		b := lk.busy
		if len(lk.es) > 0 {
			b += now - lk.busyT
		}
		return b
	}
	a := f.rec(link)
	b := a.busy
	if be := a.busyT; be > now {
		b -= be - now
	}
	return b
}

// TrackChanges makes an analytic fabric remember which links its transfers
// cross, for Changed. It has no effect at flow fidelity or in traffic mode
// (NewTraffic). Call it before the first transfer (or while none is
// transmitting).
func (f *Fabric) TrackChanges() {
	if f.fid == Analytic && f.changedMark == nil && f.tr == nil { // a traffic-mode fabric tracks its own way
		f.changedMark = hugepages.Advise(make([]bool, len(f.an)))
	}
}

// LinkFigures are a link's LinkBytes and LinkBusy at one instant.
type LinkFigures struct {
	Bytes float64
	Busy  engine.Time
}

// markChanged records link l, with state a, as changed since the last
// Changed, with its figures then: a link not marked had ended its
// transmission by that Changed and has not been crossed since, so its
// figures then are its bytes and busy time now, before the crossing that
// marks it.
func (f *Fabric) markChanged(l int32, a *alink) {
	f.changedMark[l] = true
	f.changed = append(f.changed, l)
	f.changedBefore = append(f.changedBefore, LinkFigures{Bytes: a.bytes, Busy: a.busy})
}

// Changed appends to buf every link whose LinkBytes or LinkBusy may differ
// from what they were at the previous Changed (since TrackChanges for the
// first): the links transfers have crossed since then and those still
// transmitting (a link's busy time grows with Now until its transmission
// ends). It appends to before, in the same order, each such link's figures
// at the previous Changed (zero before the first), and returns both. Every
// other link's figures are unchanged, so a caller needs no copy of every
// link's figures to tell what moved. Analytic fidelity after TrackChanges
// only; otherwise it returns buf and before.
func (f *Fabric) Changed(buf []int32, before []LinkFigures) ([]int32, []LinkFigures) {
	if f.changedMark == nil {
		return buf, before
	}
	now := f.e.Now()
	keep, keepBefore := f.changed[:0], f.changedBefore[:0]
	for i, l := range f.changed {
		buf = append(buf, l)
		before = append(before, f.changedBefore[i]) // read before keepBefore overwrites index <= i
		if f.an[l].busyT > now {
			keep = append(keep, l)
			keepBefore = append(keepBefore, LinkFigures{Bytes: f.an[l].bytes, Busy: f.LinkBusy(int(l))})
		} else {
			f.changedMark[l] = false
		}
	}
	f.changed, f.changedBefore = keep, keepBefore
	return buf, before
}

// Listed returns the links the next Changed would return, each beside its
// figures at the previous Changed, without clearing them: they stay listed
// (Pending), and links crossed since are appended after them. The slices
// are the fabric's own, read-only and valid until the next Changed or
// FoldChanged (later crossings append past their length). A caller that
// needs the links one collective touched, and later the figures of every
// link it and what follows touched, lists once instead of twice.
func (f *Fabric) Listed() ([]int32, []LinkFigures) {
	if f.tr != nil {
		return f.listedTraffic()
	}
	return f.changed, f.changedBefore
}

// FoldChanged is Changed handing each link to fn instead of appending it:
// fn(link, before, now) for every link Changed would return, in the same
// order, with its figures at the previous Changed and now (LinkBytes and
// LinkBusy). Reading a link's figures where Changed decides whether it
// stays listed touches its state once rather than again in a second pass
// (links.arrow's reconstruction reads ~1.2 M links a collective at
// 131,072 GPUs; issue 18). fn must not start transfers. Analytic fidelity
// after TrackChanges only; otherwise it does nothing.
func (f *Fabric) FoldChanged(fn func(link int32, before, now LinkFigures)) {
	if f.changedMark == nil {
		return
	}
	now := f.e.Now()
	keep, keepBefore := f.changed[:0], f.changedBefore[:0]
	for i, l := range f.changed {
		a := &f.an[l]
		cur := LinkFigures{Bytes: a.bytes, Busy: a.busy}
		if be := a.busyT; be > now {
			cur.Busy -= be - now // LinkBusy
		}
		fn(l, f.changedBefore[i], cur) // before keepBefore overwrites index <= i
		if a.busyT > now {
			keep = append(keep, l)
			keepBefore = append(keepBefore, cur)
		} else {
			f.changedMark[l] = false
		}
	}
	f.changed, f.changedBefore = keep, keepBefore
}

// Pending reports whether link is among those the next Changed returns
// (crossed since the last Changed, or still transmitting then). Analytic
// fidelity after TrackChanges only; false otherwise.
func (f *Fabric) Pending(link int) bool {
	if f.tr != nil {
		return f.tr.at(f.tr.cls[link]).marked
	}
	return f.changedMark != nil && f.changedMark[link]
}

// Repeat makes link dst's analytic figures what they would be had it
// carried, since the last Changed, the same transfers as link src at the
// same times: dst's bytes become src's, its busy time grows by what src's
// grew (srcBusyBefore: src's LinkBusy at the last Changed) and its busy
// period ends where src's ends. dst is marked changed. Exact when both
// links carried equal bytes before (a link's bytes are a running float sum,
// so equal sums plus the same transfers in the same order stay equal) and
// nothing else crossed dst since; callers check the first and guarantee
// the second. Analytic fidelity after TrackChanges only, with nothing in
// flight on src.
func (f *Fabric) Repeat(dst, src int, srcBusyBefore engine.Time) {
	if f.tr != nil {
		f.repeatTraffic(dst, src, srcBusyBefore)
		return
	}
	if f.changedMark == nil {
		return
	}
	d, s := &f.an[dst], &f.an[src]
	if !f.changedMark[dst] {
		f.markChanged(int32(dst), d)
	}
	d.bytes = s.bytes
	d.busy += s.busy - srcBusyBefore
	d.busyT = s.busyT
}

// Stats returns the solver's work counters (all zero at analytic fidelity).
func (f *Fabric) Stats() SolverStats { return f.stats }

// txTime is the transmission time of bytes at rate bytes/s, rounded up to a
// whole nanosecond. A quotient within a relative 1e-14 (about 45 float64
// ulps) above a whole number of nanoseconds is taken as that number, so that
// floating-point noise in rates and remaining bytes does not add a spurious
// nanosecond to times that are exact on paper. Zero or negative bytes take
// no time; a zero rate takes forever.
func txTime(bytes, rate float64) engine.Time {
	if !(bytes > 0) {
		return 0
	}
	if !(rate > 0) {
		return engine.Forever
	}
	ns := bytes / rate * 1e9
	if !(ns < 9.2e18) { // beyond int64 range (292 years), or +Inf
		return engine.Forever
	}
	t := math.Floor(ns)
	if ns-t > ns*1e-14 {
		t++
	}
	return engine.Time(t)
}

// addTime adds two non-negative times, saturating at engine.Forever.
func addTime(a, b engine.Time) engine.Time {
	if b >= engine.Forever-a {
		return engine.Forever
	}
	return a + b
}
