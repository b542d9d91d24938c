package parallel

import (
	"fmt"

	"github.com/simtrain/simtrain/sim/engine"
)

// The per-layer fast-forward's online decision, measured on finished plays
// (issue 18, docs/design.md "Per-layer fast-forward: the online decision
// measured"). Nothing in a simulation reads this file.
//
// MeasureLayers (layerrepeat.go) counts, in hindsight, the layers of each
// pass that repeat exactly. A fast-forward in the play cannot use
// hindsight: it must decide, when a few layers of a pass have played, to
// derive the rest, and it is exact only where nothing it did not see
// changes them. Inside one instance (a stage's representative rank) the
// play is a deterministic function of the instance's own state, so what it
// does not see is its inputs from other instances: in symmetric mode an
// instance's handlers touch another instance only through a pipeline send
// (the send's start starts its receive on the peer, readySym; its end
// ends the receive, recvAfter). Two instances' events at one instant run
// in sequence order, but an instance's own events keep their relative
// order whatever the other instances schedule between them (sequence
// numbers only grow, and an instance schedules its events in the order of
// its own handler calls), so the engine's order at equal times matters
// only where a receive starts or ends. What decides whether an optimistic
// skip stands is therefore: (1) the skipped layers repeat (the instance's
// own state at the check is one layer on from its state a layer before:
// an online check of that state is the fast-forward's trigger, which
// layerStateRepeats makes from what the times show of it), and (2)
// no receive of the instance starts inside the skipped window: proven
// beforehand where a bound on the earliest start of every receive clears
// the window (Executor.foreignBound), else detected when its send starts
// (then the skip is undone, the point played again whole, or the derived
// tasks materialised up to that instant).
//
// MeasureOnlineSkips plays that rule on a finished play, per pass: the
// first layer c where reach+1 consecutive pairs c, c+1, … repeat exactly at
// one period (the check, as Replicate checks units; reach as layerReach
// finds it for the pass's last pair), settled when the last task of the
// checked layers ends (td); the tasks of the layers after the checked ones
// up to the pass's last (kept: the host thread, running ahead of the
// clock, issues the pass's tail during it) that start after td are
// skipped. Each skip is then clean (its layers did repeat at the checked
// period, no receive started in its window), hit (a receive of the
// instance started in its window, from td to the last skipped task's end,
// both included, since a tie is not replayed) or wrong (no receive, but
// its layers did not repeat: the online state check must refuse it).

// OnlineSkips is what the online rule would have done on one play or more
// (Add).
type OnlineSkips struct {
	// Passes is the passes with two layers or more; Fired those where
	// the check passed with a layer or more left to skip; P2P those
	// where it passed but the layers to skip hold a send or receive
	// (not skipped).
	Passes, Fired, P2P int
	// Clean, Hit and Wrong count the skips by their outcome, and
	// CleanTasks, HitTasks and WrongTasks their skipped tasks.
	Clean, Hit, Wrong                int
	CleanTasks, HitTasks, WrongTasks int
	// HitEarly is, of HitTasks, the tasks that ended before the
	// receive started: what a skip materialised up to the receive's
	// start would still have saved.
	HitEarly int
	// RecvBeside is, of the clean skips, those with a receive of the
	// instance in flight (started before the window) when the window
	// opens: its share of the GPU is part of the state the online check
	// must find one layer on.
	RecvBeside int
	// FirstHit is the earliest start of a receive inside a skip's window
	// (-1: none), and BeforeHit (Executor.OnlineSkips) the tasks of every
	// instance started before it: the play a point-level fallback throws
	// away before it plays the point again whole.
	FirstHit  engine.Time
	BeforeHit int
	// Proven is, of the fired skips, those no receive can reach as far
	// as it is known when the window opens (Executor.OnlineSkips,
	// foreignBound): every receive of the instance not yet started
	// starts when its send on the peer does, and that send cannot start
	// before its dependencies on the peer have ended, each at least its
	// Dur after it could start; where that bound lies after the window's
	// last end, the skip is exact without a fallback. ProvenClean and
	// ProvenWrong are the proven skips' tasks by outcome (a proven skip
	// is never a hit unless the bound is wrong: Violations counts the
	// receives that started before their bound, which must be none).
	Proven, ProvenClean, ProvenWrong, Violations int
	// ChainProven and ChainClean are Proven and ProvenClean for the
	// cheaper bound foreignBound also finds (chain): a send's dependency
	// on the compute stream ends no sooner than the Durs of the stream's
	// tasks up to it not yet started (the stream is a chain: each task
	// waits for the one before it), its other dependencies' bounds being
	// their ends where they ended, else ws: a prefix sum and the
	// stream's position per peer, O(1) a receive where the full bound
	// walks the peer's graph.
	ChainProven, ChainClean int
	// WrongWhy counts the wrong skips by the first task off the checked
	// period in the first pair that breaks (layerBreak's labels, and
	// where in the pass: "first skipped" when the pair's later layer is
	// the first skipped, else "later"), "period" where that pair
	// repeats at another period.
	WrongWhy map[string]int
	// StateOK is, of the fired skips, those whose instance state at td
	// is, as far as the times show it, its state one period before moved
	// on by one layer (layerStateRepeats: every task started by then and
	// not ended before the running compute started has its partner a
	// layer back at the same offset from the instant, and the reverse).
	// StateClean is the tasks of the skips clean, proven and StateOK:
	// what a skip exact by construction would take; StateWrong the wrong
	// skips the state check passes (it misses them), StateRefused the
	// clean proven skips it refuses.
	StateOK, StateClean, StateWrong, StateRefused int
	// Outside is, of the skips clean, proven and StateOK, those in whose
	// window (after td, up to its last end) a task of the instance
	// outside the skipped ones starts, receives aside (a DP collective
	// whose bucket's last gradient is skipped, a task of the pass's last
	// layer or tail, issued ahead): the skip must start it, at its
	// derived time, rather than leave it to the play; OutsideTasks
	// counts those tasks, OutsideStreams them by stream.
	Outside, OutsideTasks int
	OutsideStreams        map[string]int
}

// Add adds r's counts to s (FirstHit: the earlier).
func (s *OnlineSkips) Add(r OnlineSkips) {
	s.Passes += r.Passes
	s.Fired += r.Fired
	s.P2P += r.P2P
	s.Clean += r.Clean
	s.Hit += r.Hit
	s.Wrong += r.Wrong
	s.CleanTasks += r.CleanTasks
	s.HitTasks += r.HitTasks
	s.WrongTasks += r.WrongTasks
	s.HitEarly += r.HitEarly
	s.RecvBeside += r.RecvBeside
	s.BeforeHit += r.BeforeHit
	s.Proven += r.Proven
	s.ProvenClean += r.ProvenClean
	s.ProvenWrong += r.ProvenWrong
	s.Violations += r.Violations
	s.ChainProven += r.ChainProven
	s.ChainClean += r.ChainClean
	s.StateOK += r.StateOK
	s.Outside += r.Outside
	s.OutsideTasks += r.OutsideTasks
	addCounts(&s.OutsideStreams, r.OutsideStreams)
	s.StateClean += r.StateClean
	s.StateWrong += r.StateWrong
	s.StateRefused += r.StateRefused
	addCounts(&s.WrongWhy, r.WrongWhy)
	if r.FirstHit >= 0 && (s.FirstHit < 0 || r.FirstHit < s.FirstHit) {
		s.FirstHit = r.FirstHit
	}
}

// OnlineSkips measures every played instance of x after Run (CountEvents
// called before it; without it the events are not compared), and counts
// the tasks of every instance started before the first hit (BeforeHit).
func (x *Executor) OnlineSkips() OnlineSkips {
	rep := OnlineSkips{FirstHit: -1}
	for i := range x.inst {
		in := &x.inst[i]
		if in.state == nil {
			continue
		}
		start, end, issued := x.Times(i, nil, nil, nil)
		rep.Add(measureOnlineSkips(in.prog, start, end, issued, in.events, func(ws, we engine.Time) (bool, bool, int) {
			return x.foreignBound(i, ws, we)
		}))
	}
	if rep.FirstHit >= 0 {
		for i := range x.inst {
			for t := range x.inst[i].state {
				if s := x.inst[i].state[t].Start(); s >= 0 && s < rep.FirstHit {
					rep.BeforeHit++
				}
			}
		}
	}
	return rep
}

// MeasureOnlineSkips plays the online rule (above) on one program's play:
// each task's start and end, its host issue's end (nil without a host
// thread) and its engine events (nil: not compared), in program order.
// Without the other instances no skip is proven (Proven 0).
func MeasureOnlineSkips(p *Program, start, end, issued []engine.Time, events []int32) OnlineSkips {
	return measureOnlineSkips(p, start, end, issued, events, nil)
}

// measureOnlineSkips is MeasureOnlineSkips with proof, when not nil,
// telling whether no receive can start in a skip's window [ws, we] as
// known at ws, and the receives that started before their bound.
func measureOnlineSkips(p *Program, start, end, issued []engine.Time, events []int32, proof func(ws, we engine.Time) (bool, bool, int)) OnlineSkips {
	rep := OnlineSkips{FirstHit: -1}
	for e := 0; e+1 < len(p.entries); e++ {
		onlinePass(p, p.entries[e], p.entries[e+1], start, end, issued, events, proof, &rep)
	}
	return rep
}

// onlinePass adds pass [a, b)'s skip, if the rule fires, to rep.
func onlinePass(p *Program, a, b int32, start, end, issued []engine.Time, events []int32, proof func(ws, we engine.Time) (bool, bool, int), rep *OnlineSkips) {
	starts, last := layerSegments(p, a, b)
	if starts == nil {
		return
	}
	rep.Passes++
	n := len(starts)
	seg := func(k int) (int32, int32) {
		if k+1 < n {
			return starts[k], starts[k+1]
		}
		return starts[k], last
	}
	// exact[k], period[k]: pair (k, k+1) repeats exactly at period[k].
	exact := make([]bool, n-1)
	period := make([]engine.Time, n-1)
	var shifts []engine.Time
	for k := range n - 1 {
		x0, x1 := seg(k)
		y0, y1 := seg(k + 1)
		m := x1 - x0
		dl := p.Tasks[y0].Layer - p.Tasks[x0].Layer
		if y1-y0 != m || (dl != 1 && dl != -1) || !layerSame(p, x0, y0, m, dl) {
			continue
		}
		d := modeShift(start[x0:x0+m], start[y0:y0+m], &shifts)
		ok := true
		for i := range m {
			if !layerRepeats(p, x0+i, y0+i, d, start, end, issued, events) {
				ok = false
				break
			}
		}
		exact[k], period[k] = ok, d
	}
	// The structural reach: the pass's last pair's, as MeasureLayers
	// takes its runs' last.
	x0, _ := seg(n - 2)
	y0, y1 := seg(n - 1)
	reach, _ := layerReach(p, a, x0, y0, y1-y0)
	// The check: pairs c … c+reach exact at one period.
	c := -1
	for k := 0; k+reach < n-1; k++ {
		ok := true
		for j := k; j <= k+reach; j++ {
			if !exact[j] || period[j] != period[k] {
				ok = false
				break
			}
		}
		if ok {
			c = k
			break
		}
	}
	if c < 0 {
		return
	}
	// Layers c … c+reach+1 played and checked: the check is settled when
	// their last task ends (td; a TP or DP task can run a layer after its
	// compute). The tasks of layers c+reach+2 … n−2 that start after td
	// are skipped; those before it have played.
	l0, l1 := c+reach+2, n-2
	if l1 < l0 {
		return
	}
	c0, _ := seg(c)
	_, c1 := seg(c + reach + 1)
	td := end[c0]
	for t := c0; t < c1; t++ {
		td = max(td, end[t])
	}
	s0, _ := seg(l0)
	_, s1 := seg(l1)
	tasks := 0
	we := td
	for t := s0; t < s1; t++ {
		if k := p.Tasks[t].Kind; k == KindSend || k == KindRecv {
			rep.P2P++
			return
		}
		if start[t] > td {
			tasks++
			we = max(we, end[t])
		}
	}
	if tasks == 0 {
		return
	}
	rep.Fired++
	ws := td
	hit, beside := engine.Time(-1), false
	for t := range int32(len(p.Tasks)) {
		if p.Tasks[t].Kind != KindRecv || start[t] < 0 {
			continue
		}
		if start[t] >= ws && start[t] <= we && (hit < 0 || start[t] < hit) {
			hit = start[t]
		}
		if start[t] < ws && end[t] > ws {
			beside = true
		}
	}
	repeats := true
	for j := c; j < l1; j++ {
		if !exact[j] || period[j] != period[c] {
			repeats = false
			break
		}
	}
	lo, _ := seg(0)
	_, l0end := seg(0)
	stateOK := layerStateRepeats(p, lo, last, l0end-lo, td, period[c], start, end)
	if stateOK {
		rep.StateOK++
		if !repeats && hit < 0 {
			rep.StateWrong++
		}
	}
	if proof != nil {
		ok, chain, bad := proof(ws, we)
		rep.Violations += bad
		if ok && repeats && hit < 0 {
			if stateOK {
				rep.StateClean += tasks
				if k := startsOutside(p, s0, s1, last, td, we, start, rep); k > 0 {
					rep.Outside++
					rep.OutsideTasks += k
				}
			} else {
				rep.StateRefused++
			}
		}
		if ok {
			rep.Proven++
			if repeats && hit < 0 {
				rep.ProvenClean += tasks
			} else {
				rep.ProvenWrong += tasks
			}
		}
		if chain {
			rep.ChainProven++
			if repeats && hit < 0 {
				rep.ChainClean += tasks
			}
		}
	}
	switch {
	case hit >= 0:
		rep.Hit++
		rep.HitTasks += tasks
		for t := s0; t < s1; t++ {
			if start[t] > td && end[t] < hit {
				rep.HitEarly++
			}
		}
		if rep.FirstHit < 0 || hit < rep.FirstHit {
			rep.FirstHit = hit
		}
	case repeats:
		rep.Clean++
		rep.CleanTasks += tasks
		if beside {
			rep.RecvBeside++
		}
	default:
		rep.Wrong++
		rep.WrongTasks += tasks
		if rep.WrongWhy == nil {
			rep.WrongWhy = map[string]int{}
		}
		rep.WrongWhy[wrongWhy(p, c, l0, l1, seg, exact, period, start, end, issued, events)]++
	}
}

// layerStateRepeats reports whether, as far as the times show it, the
// instance's state at instant td is its state at td−d moved on by one
// layer of n tasks, within the pass's layers [lo, hi): the tasks that make
// the state at an instant τ are those started by τ (a start at τ
// included: every event at τ has run) and not ended by the start of the
// compute task running at τ (by τ when none runs), whose overlaps set the
// running compute's rate and remaining work; each of them at td must lie
// in [lo+n, hi) with its partner, n tasks before, in the state at td−d
// with the same start (and end, where it ended) relative to its instant,
// and the two states must be as large.
func layerStateRepeats(p *Program, lo, hi, n int32, td, d engine.Time, start, end []engine.Time) bool {
	set := func(tau engine.Time) (sc engine.Time) {
		sc = tau
		for t := range int32(len(p.Tasks)) {
			if p.Tasks[t].Stream == StreamCompute && start[t] >= 0 && start[t] <= tau && end[t] > tau {
				return start[t]
			}
		}
		return sc
	}
	in := func(t int32, tau, sc engine.Time) bool { return start[t] >= 0 && start[t] <= tau && end[t] > sc }
	t1, t0 := td, td-d
	sc1, sc0 := set(t1), set(t0)
	n1, n0 := 0, 0
	for t := range int32(len(p.Tasks)) {
		if in(t, t0, sc0) {
			n0++
		}
		if !in(t, t1, sc1) {
			continue
		}
		n1++
		u := t - n
		if t >= hi || u < lo || !in(u, t0, sc0) || start[u]-t0 != start[t]-t1 {
			return false
		}
		if end[t] <= t1 && end[u]-t0 != end[t]-t1 {
			return false
		}
	}
	return n0 == n1
}

// startsOutside counts the tasks of p, receives and the skipped ones
// (those of [s0, s1) that start after td) aside, that start in (td, we],
// by stream into rep.OutsideStreams (the kept last layer's, [s1, last),
// apart: the resumed play's, overlapping the skipped layers' last TP and
// DP tasks).
func startsOutside(p *Program, s0, s1, last int32, td, we engine.Time, start []engine.Time, rep *OnlineSkips) int {
	k := 0
	for t := range int32(len(p.Tasks)) {
		if p.Tasks[t].Kind == KindRecv || (t >= s0 && t < s1) || start[t] <= td || start[t] > we {
			continue
		}
		k++
		if rep.OutsideStreams == nil {
			rep.OutsideStreams = map[string]int{}
		}
		key := p.Tasks[t].Stream.String()
		if t >= s1 && t < last {
			key = "kept last layer's " + key
		}
		rep.OutsideStreams[key]++
	}
	return k
}

// wrongWhy labels a wrong skip (OnlineSkips.WrongWhy): the first pair j
// of c … l1−1 that does not repeat at pair c's period (l0: the first
// skipped layer).
func wrongWhy(p *Program, c, l0, l1 int, seg func(int) (int32, int32), exact []bool, period []engine.Time, start, end, issued []engine.Time, events []int32) string {
	d := period[c]
	for j := c; j < l1; j++ {
		if exact[j] && period[j] == d {
			continue
		}
		where := "later"
		if j+1 == l0 {
			where = "first skipped"
		}
		if exact[j] {
			return "period, " + where
		}
		x0, x1 := seg(j)
		y0, _ := seg(j + 1)
		for i := range x1 - x0 {
			if !layerRepeats(p, x0+i, y0+i, d, start, end, issued, events) {
				return layerBreak(p, y0+i, x0+i, x0, d, start, end, issued, events) + ", " + where + fmt.Sprintf(" (pair %d of %d)", j, len(exact))
			}
		}
		return "none, " + where
	}
	return "none"
}

// foreignBound reports whether no receive of instance i (symmetric mode,
// after the play) not started before ws can start in [ws, we], as far as
// it is known at ws, and how many of those receives started before the
// bound found for them (a wrong bound: none expected).
//
// A receive starts with its send on the peer stage's instance. The bound
// of a task's end on the peer is its end where it ended before ws; ws
// where it started before ws and still runs (or a receive not yet started:
// its send is another instance's); else the latest bound of its
// dependencies' ends (ws at least) plus its Dur: a compute task runs no
// faster than its Dur (interference only slows it) and a communication
// task lasts its Dur in symmetric mode; host issues and launch queues
// only delay a start, so leaving them out keeps the bound below the truth.
func (x *Executor) foreignBound(i int, ws, we engine.Time) (proven, chain bool, bad int) {
	in := &x.inst[i]
	p := in.prog
	proven, chain = true, true
	memo := map[int][]engine.Time{}
	var bound func(j int, t int32) engine.Time
	bound = func(j int, t int32) engine.Time {
		m := memo[j]
		if m[t] != 0 {
			return m[t] - 1
		}
		pj := x.inst[j].prog
		st := &x.inst[j].state[t]
		var e engine.Time
		switch {
		case st.end != 0 && st.End() < ws:
			e = st.End()
		case st.start != 0 && st.Start() < ws, pj.Tasks[t].Kind == KindRecv:
			e = ws
		default:
			s := ws
			for _, d := range pj.Deps(int(t)) {
				s = max(s, bound(j, d))
			}
			e = s + max(pj.Tasks[t].Dur, 0)
		}
		m[t] = e + 1
		return e
	}
	for r := range p.Tasks {
		task := &p.Tasks[r]
		if task.Kind != KindRecv {
			continue
		}
		if st := &in.state[r]; st.start != 0 && st.Start() < ws {
			continue
		}
		j, m := task.p2p()
		if !x.symmetric || x.inst[j].prog.Tasks[m].Kind != KindSend {
			panic("parallel: foreignBound: a receive whose link is not a send of the peer stage's instance")
		}
		if memo[j] == nil {
			memo[j] = make([]engine.Time, len(x.inst[j].prog.Tasks))
		}
		lb := ws
		for _, d := range x.inst[j].prog.Deps(m) {
			lb = max(lb, bound(j, d))
		}
		if lb <= we {
			proven = false
		}
		if s := in.state[r].Start(); s >= 0 && s < lb {
			bad++
		}
		if cb := x.chainBound(j, m, ws); cb <= we {
			chain = false
		} else if s := in.state[r].Start(); s >= 0 && s < cb {
			bad++
		}
	}
	return proven, chain, bad
}

// chainBound is foreignBound's cheaper bound (OnlineSkips.ChainProven) on
// the start of send m of instance j, known at ws.
func (x *Executor) chainBound(j, m int, ws engine.Time) engine.Time {
	pj, state := x.inst[j].prog, x.inst[j].state
	lb := ws
	for _, d := range pj.Deps(m) {
		switch st := &state[d]; {
		case st.end != 0 && st.End() < ws:
			lb = max(lb, st.End())
		case pj.Tasks[d].Stream == StreamCompute:
			sum := ws
			for u := int32(0); u <= d; u++ {
				if t := &pj.Tasks[u]; t.Stream == StreamCompute && (state[u].start == 0 || state[u].Start() >= ws) {
					sum += max(t.Dur, 0)
				}
			}
			lb = max(lb, sum)
		}
	}
	return lb
}

// addCounts adds src's counts into *dst, making *dst when src has any.
func addCounts(dst *map[string]int, src map[string]int) {
	for k, n := range src {
		if *dst == nil {
			*dst = map[string]int{}
		}
		(*dst)[k] += n
	}
}
