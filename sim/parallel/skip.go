package parallel

import (
	"slices"
	"sync/atomic"

	"github.com/simtrain/simtrain/sim/engine"
)

// The per-layer skip of the play (issue 18, docs/design.md "Per-layer skip
// of the play: built for one stage"): where a pass's layers repeat, Run
// derives the layers in the middle of the pass instead of playing them,
// exactly.
//
// The rule. Inside one pass's run of layers that play alike (skipPass:
// each layer's tasks those of the layer before, the same hotTask, with
// every dependency moved on by the layer's L tasks or the same task before
// the layers), the instance is a deterministic machine whose state is: the
// dependency counts (need) of the run's tasks, the records of the tasks
// walked by the host thread (an issue that ended by the moment counts as
// ended, whenever: it no longer acts), the host thread's position, free
// time and wait, the running compute task's rate state (cur, share, rate,
// rem, since, end, busy, sized), and its pending engine events. At two
// moments one layer apart (after the event that completes the done
// count's next L-th task has run whole, Engine.AfterEvent), the skip
// compares that state whole (skipState.compare): every count, record,
// field and pending event of the second moment must be the first's moved
// on by L tasks and by the time D between the moments. If it is, the play
// from the second moment is the play from the first moved on by (L, D),
// layer after layer, as long as it stays inside the run and nothing
// outside the run acts on the instance: so the m layers that follow are
// derived, not played (teleport). Every start and end recorded between
// the two moments is written again m times, L tasks and D later each; the
// counts, the rate state and the pending events (Engine.Replace, which
// keeps their sequence numbers: their order at equal times) move on by
// m·L tasks and m·D; the derived ends count their successors outside the
// run down (refused where one would become ready); the engine's executed
// events (Engine.AddExecuted) and the done count grow by m times the
// period's. The host thread is either inside the run, its state compared
// and moved on with its walks' records (strict: from where the run's host
// and queue waits repeat too), or ahead of it (skipSnap.ahead: it has
// walked the whole run), and then its walk is replayed on the derived
// ends (hostRun), refused and undone where it would make a task ready
// inside the window. The moments' state carries the proof: a period whose
// state does not repeat whole is played.
//
// What it is limited to (skipEligible): one instance (pp 1: no pipeline
// send or receive, so no other instance acts on it, and every engine event
// is the instance's), a host thread, a plain Run (no RunSteady watch, no
// Fork save, no event counters, no other AfterEvent hook). With pp > 1 a
// receive could start inside the window (the foreign bound of
// layerskip.go), and the moved events, keeping their sequence numbers,
// would run before other instances' events at equal times that the play
// would have run first.

// layerSkip, when set, makes Run skip repeating layers (SetLayerSkip).
// Off by default: exact on everything bundled (TestLayerSkipExact), but on
// the 1,000-point 70B sweep its checks and derivation cost more
// instructions than the play it saves (docs/design.md "Per-layer skip of
// the play: built for one stage").
var layerSkip atomic.Bool

// SetLayerSkip turns the per-layer skip of Run on or off for every
// Executor made from then on, and reports whether it was on: tests play
// with and without it and compare every time.
func SetLayerSkip(on bool) (was bool) { return layerSkip.Swap(on) }

// skipFault, when not 0, makes teleport wrong on purpose (SetLayerSkipFault).
var skipFault atomic.Int32

// Layer-skip faults for tests (SetLayerSkipFault): each makes every skip
// wrong in one way the play must show.
const (
	// SkipFaultPeriod derives the skipped layers one nanosecond a layer
	// later than the period.
	SkipFaultPeriod = 1 + iota
	// SkipFaultEvents leaves the instance's pending events where they are.
	SkipFaultEvents
)

// SetLayerSkipFault makes every layer skip wrong on purpose (a
// SkipFault… value; 0: none), for tests that must see the difference,
// and returns the previous value.
func SetLayerSkipFault(f int) int { return int(skipFault.Swap(int32(f))) }

// skipPass is one pass's run of repeating layers: tasks [r0, r1), layers
// of l tasks. From task strict on, their host and launch-queue waits
// repeat too (else only the played tasks and their dependencies do, and
// only a skip that replays the host's walk is made: skipSnap.ahead), and
// reach at most back tasks behind.
// oo is where the run's edges out (skipRuns.outOff) start.
type skipPass struct{ r0, r1, l, back, strict, oo int32 }

// skipRuns is a program's runs of repeating layers (skipPassOf, one a
// pass) and, for each task of a run, its successors outside the run
// (outOff: CSR from skipPass.oo, one entry a task of the run and one
// more; out: the successors), which teleport counts down for the tasks it
// derives. Found once per arena program and kept with it
// (Program.skipRuns): the arena's programs are reused by every point of
// one structure key, whose builds are mostly re-pricings of the last
// one, and the runs' check and the successor walk were 75% of what the
// skip cost on the 70B sweep (docs/design.md "Per-layer skip of the
// play: built for one stage"). A fresh build drops it (Arena.program
// sets the Program afresh); a re-pricing clears priced (repriceBuild):
// it keeps the graph, the issue times and the waits (repriceAdd checks
// them) and rewrites only the played records' dur and share, so armSkip
// then checks only those repeat along the runs (samePrices), and finds
// the runs afresh where they do not.
type skipRuns struct {
	priced bool // the records' dur and share are those the runs were found on
	passes []skipPass
	outOff []int32
	out    []int32
}

// skipRunChecks, when set, makes armSkip find the runs afresh every time
// and compare them with the kept ones (SetSkipRunChecks), for tests.
var skipRunChecks struct {
	on     atomic.Bool
	bad    atomic.Int64 // kept runs that differed from those found afresh
	reused atomic.Int64 // kept runs used after a re-pricing (samePrices)
}

// SetSkipRunChecks turns on (or off) the check of the program's kept
// layer runs (skipRuns) against the runs found afresh at every Run with
// the skip, and returns how many kept runs differed and how many were
// reused after a re-pricing since it was last turned on. For tests.
func SetSkipRunChecks(on bool) (bad, reused int64) {
	bad, reused = skipRunChecks.bad.Swap(0), skipRunChecks.reused.Swap(0)
	skipRunChecks.on.Store(on)
	return bad, reused
}

// skipSnap is the instance's state at one moment (skipState.snap): what
// compare needs of it, relative where compare moves it.
type skipSnap struct {
	ok     bool
	ahead  bool // the host thread has walked the whole run (hn ≥ r1)
	pass   int
	ref    engine.Time // the moment
	b      int32       // the lowest task of the run not ended
	lo, hn int32       // need and records kept from lo; hn: the host's next task
	exec   uint64      // the engine's executed events
	done   int         // the executor's completed tasks
	free   engine.Time // hostFree
	wait   int32       // hostWait
	cur    int32
	share  uint16
	busy   int32
	sized  int32
	rate   int64
	rem    int64
	since  engine.Time
	end    engine.Time
	need   []int32     // need[lo:r1]
	st     []taskState // state[lo:hn]
	ev     []engine.PendingEvent
}

// skipState is Run's per-layer skip of one instance (Executor.skip).
type skipState struct {
	x      *Executor
	i      int
	passes []skipPass
	pass   int   // the pass the play is in
	fails  int   // compares that failed in this pass
	at     int   // the done count of the next moment
	cursor int32 // no task of the pass's run before it is still to end
	prev   skipSnap
	cur    skipSnap
	after  func(engine.Time)
	outOff []int32 // the runs' edges out (skipRuns)
	out    []int32
	ext    []int32     // teleport's scratch: successors counted down
	saved  []taskState // teleport's scratch: the records it writes over
	// Skips and Tasks count the skips and the tasks they derived.
	Skips, Tasks int
}

// skipMaxFails is how many moments of a pass may fail the compare before
// the pass is played out: each costs a copy of the run's counts.
const skipMaxFails = 6

// skipEligible reports whether Run may skip layers of x's play.
func (x *Executor) skipEligible() bool {
	if !layerSkip.Load() || !x.symmetric || x.full != nil || len(x.inst) != 1 || x.rep != nil || x.eng.AfterEvent() != nil {
		return false
	}
	in := &x.inst[0]
	p := in.prog
	return p.Hosted && in.events == nil && in.watch == 0 && in.state != nil && len(p.entries) >= 2
}

// armSkip sets up the skip for Run when x is eligible (skipEligible).
func (x *Executor) armSkip() {
	x.skip = nil
	if !x.skipEligible() {
		return
	}
	p := x.inst[0].prog
	for _, t := range p.p2p {
		if k := p.Tasks[t].Kind; k == KindSend || k == KindRecv {
			return
		}
	}
	in := &x.inst[0]
	var runs *skipRuns
	if p.arena != nil && p.keepHot && len(p.hot) == len(p.Tasks) && len(in.hot) == len(p.Tasks) && &in.hot[0] == &p.hot[0] {
		// (an arena's program whose records the instance plays: kept)
		runs = p.skipRuns
		if runs != nil && !runs.priced {
			if runs.samePrices(in.hot) {
				runs.priced = true
				skipRunChecks.reused.Add(1)
			} else {
				runs = nil
			}
		}
		if runs == nil {
			runs = findSkipRuns(in, p.skipRuns)
			p.skipRuns = runs
		} else if skipRunChecks.on.Load() {
			if f := findSkipRuns(in, nil); !slices.Equal(f.passes, runs.passes) || !slices.Equal(f.outOff, runs.outOff) || !slices.Equal(f.out, runs.out) {
				skipRunChecks.bad.Add(1)
			}
		}
	} else {
		runs = findSkipRuns(in, nil)
	}
	passes := runs.passes
	if len(passes) == 0 {
		return
	}
	sk := &skipState{x: x, passes: passes, outOff: runs.outOff, out: runs.out}
	sk.after = sk.afterEvent
	sk.at = x.done + int(passes[0].l)
	x.skip = sk
	x.pollAt = min((x.done|0xffff)+1, sk.at)
}

// findSkipRuns finds in's program's runs of repeating layers (skipPassOf)
// and their edges out, in old's storage when not nil.
func findSkipRuns(in *instance, old *skipRuns) *skipRuns {
	r := old
	if r == nil {
		r = new(skipRuns)
	}
	p := in.prog
	r.priced = true
	r.passes, r.outOff, r.out = r.passes[:0], r.outOff[:0], r.out[:0]
	var starts []int32
	succOf, succ := p.succOf, p.succ
	for e := 0; e+1 < len(p.entries); e++ {
		ps, ok := skipPassOf(in, p.entries[e], p.entries[e+1], &starts)
		if !ok {
			continue
		}
		ps.oo = int32(len(r.outOff))
		for u := ps.r0; u < ps.r1; u++ {
			r.outOff = append(r.outOff, int32(len(r.out)))
			for _, y := range succ[succOf[u]:succOf[u+1]] {
				if y < ps.r0 || y >= ps.r1 {
					r.out = append(r.out, y)
				}
			}
		}
		r.outOff = append(r.outOff, int32(len(r.out)))
		r.passes = append(r.passes, ps)
	}
	return r
}

// samePrices reports whether the records hot (a re-priced program's)
// still repeat along r's runs in what a re-pricing rewrites (dur and
// share): then the runs are the program's as found (skipRuns).
func (r *skipRuns) samePrices(hot []hotTask) bool {
	for _, ps := range r.passes {
		if int(ps.r1) > len(hot) {
			return false
		}
		a, b := hot[ps.r0:ps.r1-ps.l], hot[ps.r0+ps.l:ps.r1]
		b = b[:len(a)]
		for i := range a {
			if a[i].dur != b[i].dur || a[i].share != b[i].share {
				return false
			}
		}
	}
	return true
}

// skipPassOf finds pass [a, b)'s longest run of layers that repeat
// structurally (skipPass), of 4 layers or more, in in's program: a layer
// starts where Task.Layer changes (tasks of no layer stay in the layer
// before); starts is storage for the layers' starts.
func skipPassOf(in *instance, a, b int32, starts *[]int32) (skipPass, bool) {
	p := in.prog
	tasks := p.Tasks[:b]
	st := (*starts)[:0]
	cur, lastT := int32(-1), int32(-1)
	for t := a; t < b; t++ {
		if l := tasks[t].Layer; l >= 0 {
			if l != cur {
				st = append(st, t)
				cur = l
			}
			lastT = t
		}
	}
	*starts = st
	n := len(st)
	if n < 4 {
		return skipPass{}, false
	}
	seg := func(k int) (int32, int32) {
		if k+1 < n {
			return st[k], st[k+1]
		}
		return st[k], lastT + 1
	}
	base := st[0]
	best, bestK, bestLen := skipPass{}, -1, 0
	k0, runL, back, strict := -1, int32(0), int32(0), int32(0)
	for k := 0; k+1 < n; k++ {
		x0, x1 := seg(k)
		y0, y1 := seg(k + 1)
		m := x1 - x0
		okPair := m > 0 && y1-y0 == m
		var bk int32
		waits := false
		if okPair {
			bk, waits, okPair = skipPairOK(in, x0, y0, m, base)
		}
		if !okPair || (k0 >= 0 && m != runL) {
			k0 = -1
			if !okPair {
				continue
			}
		}
		if k0 < 0 {
			k0, runL, back, strict = k, m, 0, x0
		}
		if waits {
			back = max(back, bk)
		} else {
			strict = y0 + m // (past the pair's later layer)
		}
		if layers := k + 2 - k0; layers > bestLen {
			_, end := seg(k + 1)
			best, bestK, bestLen = skipPass{r0: st[k0], r1: end, l: runL, back: back, strict: strict}, k0, layers
		}
	}
	if bestK < 0 || bestLen < 4 {
		return skipPass{}, false
	}
	return best, true
}

// skipPairOK reports whether the n tasks from y play as those from x (the
// same hotTask, host and queue waits aside) moved on by n tasks in every
// dependency (or the same task, before base), whether in every host and
// queue wait too, and then how far back (in tasks) their relative waits
// reach.
func skipPairOK(in *instance, x, y, n, base int32) (back int32, waits, ok bool) {
	p := in.prog
	hot := in.hot[:len(p.Tasks)]
	off, deps := p.depOff[:len(p.Tasks)+1], p.deps
	waits = true
	for i := range n {
		u, v := x+i, y+i
		tu, tv := &hot[u], &hot[v]
		if tu.dur != tv.dur || tu.issue != tv.issue || tu.share != tv.share || tu.kind != tv.kind ||
			tu.group != tv.group || tu.stream != tv.stream || tu.flags != tv.flags ||
			tu.kind == KindSend || tu.kind == KindRecv {
			return 0, false, false
		}
		du, dv := deps[off[u]:off[u+1]], deps[off[v]:off[v+1]]
		if len(du) != len(dv) {
			return 0, false, false
		}
		for k, d := range du {
			if e := dv[k]; e != d+n && (e != d || d >= base) {
				return 0, false, false
			}
		}
		if !waits {
			continue
		}
		if !sameWait(tu.hostAfter, tv.hostAfter, n, base) || !sameWait(tu.queueAfter, tv.queueAfter, n, base) {
			waits = false
			continue
		}
		if w := tv.hostAfter; w > 0 && w-1 >= base {
			back = max(back, v-(w-1))
		}
		if w := tv.queueAfter; w > 0 && w-1 >= base {
			back = max(back, v-(w-1))
		}
		if p.qself != nil {
			if !sameWait(p.qself[u], p.qself[v], n, base) || p.qrest[u] != p.qrest[v] {
				waits = false
				continue
			}
			if w := p.qself[v]; w > 0 && w-1 >= base {
				back = max(back, v-(w-1))
			}
		}
	}
	return back, waits, true
}

// sameWait reports whether wait b (stored +1, 0: none) is wait a moved on
// by n tasks, or the same task before base.
func sameWait(a, b, n, base int32) bool {
	switch {
	case a == 0 || b == 0:
		return a == b
	case b == a+n:
		return true
	}
	return a == b && a-1 < base
}

// afterEvent is the engine's AfterEvent while a moment is due: the event
// that completed the moment's task has run whole.
func (sk *skipState) afterEvent(now engine.Time) {
	x := sk.x
	x.eng.SetAfterEvent(nil)
	sk.moment(now)
	x.pollAt = (x.done | 0xffff) + 1
	if sk.at > x.done {
		x.pollAt = min(x.pollAt, sk.at)
	}
}

// moment takes the instance's state at now and, where it repeats the
// state one layer before, skips (teleport).
func (sk *skipState) moment(now engine.Time) {
	x := sk.x
	in := &x.inst[sk.i]
	state := in.state
	hn := in.hostNext
	// b: the lowest task of the pass's run not ended (tasks before the
	// run that have not ended are frozen in the window: snap and
	// teleport refuse a window where one would move).
	var b int32
	for {
		if sk.pass == len(sk.passes) {
			sk.at = -1 // no more
			return
		}
		ps := &sk.passes[sk.pass]
		b = max(sk.cursor, ps.r0)
		for b < hn && state[b].end != 0 {
			b++
		}
		sk.cursor = b
		if b < ps.r1 {
			break
		}
		sk.pass++
		sk.fails, sk.prev.ok = 0, false
	}
	ps := &sk.passes[sk.pass]
	sk.at = x.done + int(ps.l)
	if b-ps.l < ps.r0 || sk.fails >= skipMaxFails {
		sk.prev.ok = false
		return
	}
	sk.snap(&sk.cur, now, b, ps)
	if !sk.cur.ok {
		sk.prev.ok = false
		return
	}
	if p := &sk.prev; p.ok && p.pass == sk.pass && p.done+int(ps.l) == x.done {
		if d, ok := sk.compare(ps); ok {
			if sk.teleport(ps, d) {
				// (the pass may skip again, from two moments on)
				sk.prev.ok, sk.cur.ok = false, false
				sk.fails = 0
				sk.at = x.done + int(ps.l)
				return
			}
		}
		sk.fails++
	}
	sk.prev, sk.cur = sk.cur, sk.prev
}

// snap fills s with the instance's state at now (b: the run's lowest task
// not ended); s.ok is false where the state cannot be moved (a pending
// event of another task than the run's, or at now).
func (sk *skipState) snap(s *skipSnap, now engine.Time, b int32, ps *skipPass) {
	x := sk.x
	in := &x.inst[sk.i]
	s.ok = false
	hn := in.hostNext
	s.ahead = hn >= ps.r1
	lo, top := min(b, hn-ps.back), hn
	if s.ahead {
		// The host's walk is replayed after the skip (teleport), not
		// moved: no record is read for its waits, every record of the
		// run is written.
		lo, top = b, ps.r1
	}
	if lo < ps.r0 || hn < b || !s.ahead && hn < ps.strict {
		return
	}
	s.pass, s.ref, s.b, s.lo, s.hn = sk.pass, now, b, lo, hn
	s.exec, s.done = x.eng.Executed(), x.done
	s.free, s.wait = in.hostFree, in.hostWait
	s.cur, s.share, s.busy, s.sized = in.cur, in.share, in.busy, in.sized
	s.rate, s.rem, s.since, s.end = in.rate, in.rem, in.since, in.end
	s.need = append(s.need[:0], in.need[lo:ps.r1]...)
	s.st = append(s.st[:0], in.state[lo:top]...)
	s.ev = x.eng.AppendPending(s.ev[:0])
	const far = engine.Forever / 4
	for k := range s.ev {
		e := &s.ev[k]
		if e.At <= now || e.At >= far {
			return
		}
		if e.Handler != in.h && (e.Handler != x.hh || s.ahead) {
			return
		}
		if i, t := unpack(e.Arg); i != sk.i || int32(t) < ps.r0 || int32(t) >= ps.r1 {
			return
		}
	}
	if s.cur >= 0 && (s.end >= far || s.since > now) {
		return
	}
	s.ok = true
}

// compare reports whether sk.cur is sk.prev moved on by one layer of ps,
// and the period.
func (sk *skipState) compare(ps *skipPass) (engine.Time, bool) {
	p, c := &sk.prev, &sk.cur
	l := ps.l
	d := c.ref - p.ref
	if d <= 0 || c.ahead != p.ahead || c.b-p.b != l || c.lo-p.lo != l || (!c.ahead && c.hn-p.hn != l) {
		return 0, false
	}
	stLen := len(p.st)
	if c.ahead {
		stLen -= int(l) // (state[lo:r1])
	}
	if len(c.need) != len(p.need)-int(l) || len(c.st) != stLen || len(c.ev) != len(p.ev) {
		return 0, false
	}
	for k := range c.need {
		if c.need[k] != p.need[k] {
			return 0, false
		}
	}
	rel := func(a, b engine.Time) bool { // stored +1, 0: unset
		return (a == 0) == (b == 0) && (a == 0 || a-c.ref == b-p.ref)
	}
	// An issue that ended by the moment no longer acts on the play (a
	// task whose inputs arrive after it starts then, Handle): such issues
	// compare equal whenever they ended. (The host's walk reads ends, not
	// issues: its own state is compared apart, or replayed when ahead.)
	past := func(a engine.Time, ref engine.Time) bool { return a != 0 && a-1 <= ref }
	for k := range c.st {
		x, y := &c.st[k], &p.st[k]
		if !rel(x.start, y.start) || !rel(x.end, y.end) {
			return 0, false
		}
		if px, py := past(x.issued, c.ref), past(y.issued, p.ref); px != py || !px && !rel(x.issued, y.issued) {
			return 0, false
		}
	}
	if !c.ahead && (c.free-c.ref != p.free-p.ref || (c.wait < 0) != (p.wait < 0) || (c.wait >= 0 && c.wait-l != p.wait)) {
		return 0, false
	}
	if (c.cur < 0) != (p.cur < 0) || c.busy != p.busy || c.sized != p.sized {
		return 0, false
	}
	if c.cur >= 0 && (c.cur-l != p.cur || c.share != p.share || c.rate != p.rate || c.rem != p.rem ||
		c.since-c.ref != p.since-p.ref || c.end-c.ref != p.end-p.ref) {
		return 0, false
	}
	for k := range c.ev {
		x, y := &c.ev[k], &p.ev[k]
		if x.At-c.ref != y.At-p.ref || x.Handler != y.Handler || x.Arg&^0xffffffff != y.Arg&^0xffffffff ||
			int32(uint32(x.Arg))-l != int32(uint32(y.Arg)) {
			return 0, false
		}
	}
	return d, true
}

// teleport moves the instance on by m layers of ps (as many as stay inside
// the run), d each, from sk.cur's moment, deriving what the period between
// sk.prev and sk.cur did m times over. It reports false, changing
// nothing, where no layer can be skipped, a task outside the run would
// become ready inside the window, or (ahead) the host's replayed walk
// would make a task ready there (that walk is undone).
func (sk *skipState) teleport(ps *skipPass, d engine.Time) bool {
	x := sk.x
	in := &x.inst[sk.i]
	c := &sk.cur
	l, s, r1 := ps.l, c.ref, ps.r1
	hn := c.hn
	state, need := in.state, in.need
	var m int32
	top := min(hn, r1) // the records written
	// The records that can hold a start or end of the period: below top,
	// and (ahead) to the last task started (an end needs a start), not the
	// whole run after it: the scans below stop there (issue 18: with the
	// host ahead, top is the run's end, and the scans were ≈ 4 M
	// instructions on the 70B sweep).
	seen := top
	if c.ahead {
		// The window starts the tasks the period's starts are moved to
		// (up to maxS + m·l) and may make the next layer's ready: each of
		// them must have been issued by the moment.
		maxS := c.b - 1
		for u := c.b; u < r1; u++ {
			if state[u].start != 0 {
				maxS = u
			}
		}
		seen = min(top, maxS+1)
		m = (r1 - l - 1 - maxS) / l
		for u := c.b; u <= maxS+m*l+l && u < r1; u++ {
			if iss := state[u].issued; iss == 0 || iss-1 > s {
				m = min(m, (u-1-maxS-l)/l)
				break
			}
		}
	} else {
		m = (r1 - l - hn) / l
	}
	for k := range c.ev {
		m = min(m, (r1-1-int32(uint32(c.ev[k].Arg)))/l)
	}
	if m < 1 {
		return false
	}
	scan := min(c.lo, c.b-l)
	in1 := func(v engine.Time) bool { return v != 0 && v-1 > s-d && v-1 <= s }
	// The ends of the period: their count must be the period's
	// completions (none outside the run), and the successors outside the
	// run of their m copies must not become ready in the window.
	ends := 0
	ext := sk.ext[:0] // the successors counted down, to count up again on a refusal
	outOff, out := sk.outOff, sk.out
	for v := scan; v < seen; v++ {
		if !in1(state[v].end) {
			continue
		}
		ends++
		for u := v + l; u <= v+m*l; u += l {
			if u < ps.r0 || u >= r1 {
				return refuseExt(need, ext) // (not reached: the window stays inside the run)
			}
			k := ps.oo + u - ps.r0
			for _, y := range out[outOff[k]:outOff[k+1]] {
				need[y]--
				ext = append(ext, y)
			}
		}
	}
	sk.ext = ext
	refuse := func() bool { return refuseExt(need, ext) }
	if ends != c.done-sk.prev.done {
		return refuse()
	}
	for _, y := range ext {
		if need[y] <= 0 {
			return refuse()
		}
	}
	saved := append(sk.saved[:0], state[scan:top]...) // (ahead: to undo if the host's walk refuses)
	sk.saved = saved
	if skipFault.Load() == SkipFaultPeriod {
		d++
	}
	dm := engine.Time(m) * d
	lm := m * l
	if !c.ahead {
		// The host's walks of the period (hn−l … hn−1) m times over,
		// whole records, before the starts and ends are written in.
		for v := hn - l; v < hn; v++ {
			if state[v].issued == 0 {
				return false // (not reached: a walked task is issued)
			}
		}
		for v := hn - l; v < hn; v++ {
			iss := state[v].issued
			for k := int32(1); k <= m; k++ {
				state[v+k*l] = taskState{issued: iss + engine.Time(k)*d}
			}
		}
	}
	for v := scan; v < seen; v++ {
		st := state[v]
		if in1(st.start) {
			for k := int32(1); k <= m; k++ {
				state[v+k*l].start = st.start + engine.Time(k)*d
			}
		}
		if in1(st.end) {
			for k := int32(1); k <= m; k++ {
				state[v+k*l].end = st.end + engine.Time(k)*d
			}
		}
	}
	// Counts: the run's moved on (its tasks below lo+m·l have all
	// started by the window's end), the successors outside it counted down.
	lo := c.lo
	copy(need[lo+lm:r1], c.need[:r1-lo-lm])
	for u := c.b; u < lo+lm; u++ {
		need[u] = 0
	}
	if c.ahead {
		// The host's walk, replayed on the window's ends: where it makes
		// a task ready, that task would start inside the window, which
		// is played instead (all undone).
		hn0, free0, wait0 := in.hostNext, in.hostFree, in.hostWait
		if _, ok := in.hostRun(); ok {
			for u := hn0; u < in.hostNext; u++ {
				if in.hot[u].kind != KindRecv {
					need[u]++
					state[u] = taskState{}
				}
			}
			in.hostNext, in.hostFree, in.hostWait = hn0, free0, wait0
			copy(state[scan:top], saved)
			copy(need[lo:r1], c.need)
			return refuse()
		}
	} else {
		in.hostNext += lm
		in.hostFree += dm
		if in.hostWait >= 0 {
			in.hostWait += lm
		}
	}
	if in.cur >= 0 {
		in.cur += lm
		in.since += dm
		in.end += dm
	}
	for k := range c.ev {
		e := &c.ev[k]
		e.At += dm
		e.Arg += int64(lm) // (the task in the low 32 bits stays below r1)
	}
	if skipFault.Load() != SkipFaultEvents {
		x.eng.Replace(c.ev)
	}
	before := x.done
	x.done += int(m) * ends
	x.eng.AddExecuted(uint64(m) * (c.exec - sk.prev.exec))
	if before>>16 != x.done>>16 && x.Progress != nil {
		x.Progress(x.done, x.total)
	}
	sk.Skips++
	sk.Tasks += int(m) * ends
	return true
}

// refuseExt counts up again the successors ext that teleport counted down,
// and returns false.
func refuseExt(need, ext []int32) bool {
	for _, y := range ext {
		need[y]++
	}
	return false
}

// SkippedTasks reports the layer skips of the last Run and the tasks they
// derived rather than played (0, 0 without the skip).
func (x *Executor) SkippedTasks() (skips, tasks int) {
	if x.skip == nil {
		return 0, 0
	}
	return x.skip.Skips, x.skip.Tasks
}
