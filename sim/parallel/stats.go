package parallel

import (
	"math"
	"slices"
	"unsafe"

	"github.com/simtrain/simtrain/sim/engine"
)

// Exposed communication is reported per kind: tensor (and expert tensor)
// parallel, context parallel, expert parallel, data parallel (dense and
// expert) and pipeline, in this order.
const NumExposed = 5

// ExposedOf is the exposed-communication kind of each group kind.
var ExposedOf = [NumGroupKinds]int{GroupTP: 0, GroupCP: 1, GroupEP: 2, GroupDP: 3, GroupPP: 4, GroupEDP: 3, GroupETP: 0}

// Stats is one played rank's time accounting over the simulated steps.
type Stats struct {
	End     engine.Time // the last task's end (a copy nobody waits for excepted)
	Compute engine.Time // compute-stream busy time (computation only)
	Host    engine.Time // host-synchronisation stalls (KindHostSync)
	// HostBound is the compute stream's wait for the host thread's issue
	// after every other input was ready; HostIssue the thread's busy time
	// (both 0 without a host thread, StepConfig.Host).
	HostBound, HostIssue engine.Time
	// Exposed is, per kind of ExposedOf, the time that kind's
	// communication is in flight while the compute stream is idle.
	Exposed [NumExposed]engine.Time
	Idle    engine.Time // neither compute nor communication
}

// interval is a task's [a, b) on the simulated clock.
type interval struct{ a, b engine.Time }

// statsScratch is Stats' reusable storage.
type statsScratch struct {
	lists [numLists][]interval // walker.lists'
	union [2][]interval        // unionLength's
	pp    [2][]interval        // walker.pipeline's
	// the window's (statsPeriodic)
	clipComp, clipComm []interval
	// hostRepeats'
	hostPos   []int64
	hostTasks []hostTask
}

// Stats measures instance i's compute time, the communication exposed per
// kind (in flight while compute is idle), idle time (neither) and, with a
// host thread, the time the compute stream waited for it: a wait for the
// host holds the compute stream like a host stall, so it is neither bubble
// nor exposed communication. Tasks on
// one stream run one after another in issue order, so the intervals come
// out sorted and the measuring is linear; a list that is not (pipeline
// receives, which start when their send does) is sorted first.
func (x *Executor) Stats(i int) Stats {
	if x.full != nil {
		return x.fullStats(i) // accumulated during the play (fullexec.go)
	}
	return x.statsOfTimes(i)
}

// StatsOfTimes is Stats measured on instance i's kept task times (HasTimes):
// what a full-mode play's accumulated Stats must equal, as tests check.
func (x *Executor) StatsOfTimes(i int) Stats { return x.statsOfTimes(i) }

// StatsEveryWait is StatsOfTimes with every copy walked, every hosted
// compute task's dependencies read for its wait for the host thread
// (walker.walk's shortcut off), and the covered and tensor-parallel
// exposed time measured from the separate lists (walker.both not used):
// the reference the shortcuts must equal, as tests check.
func (x *Executor) StatsEveryWait(i int) Stats {
	extra := 0
	if x.rep != nil {
		extra = x.rep[i].extra
	}
	return x.statsWalk(i, extra, nil, true)
}

func (x *Executor) statsOfTimes(i int) Stats {
	if x.rep != nil && !x.walkCopies {
		st, _ := x.statsPeriodic(i)
		return st
	}
	extra := 0
	if x.rep != nil {
		extra = x.rep[i].extra
	}
	return x.statsWalk(i, extra, nil, false)
}

// windowMeasure is what statsWalk measures inside a window of time: each
// kind's exposed communication and the time covered by anything.
type windowMeasure struct {
	lo, hi  engine.Time
	exposed [NumExposed]engine.Time
	covered engine.Time
}

// statsWalk measures instance i walking its played tasks, with extra
// copies of the replicated unit (Replicate) between the played units and
// the suffix, which is shifted after them; with w, also what lies inside
// [w.lo, w.hi). With scan, every hosted compute task's dependencies are
// read (walker.walk).
func (x *Executor) statsWalk(i, extra int, w *windowMeasure, scan bool) Stats {
	// Tensor parallelism's intervals go to the joint list only (walker.
	// joint), unless it comes out of order (never on the 70B sweep's 2,670
	// instances with tensor parallelism) or with scan (StatsEveryWait, the
	// reference, measures from the separate lists): then the tasks are
	// walked again into separate lists. The last end and Compute are
	// measured from the lists (walker.plain) unless they cannot be (a
	// wait for the host ending after its task, compute's intervals
	// overlapping): then the tasks are walked again summing them per
	// task, as scan always does.
	joint, plain := !scan, scan
	for {
		wk := x.newWalker(i, scan, joint)
		wk.plain = plain
		x.walkFrom(&wk, i, 0, extra)
		if st, ok := x.measure(&wk, w); ok {
			var unit engine.Time
			if x.rep != nil && extra > 0 {
				r := x.rep[i]
				unit = x.issueOf(i, r.a, r.b)
			}
			st.HostIssue = x.hostIssueSum(i) + engine.Time(extra)*unit
			return st
		}
		if wk.again {
			plain = true
		} else {
			joint = false
		}
	}
}

// hostIssueSum returns Σ issue over instance i's tasks but receives when
// its program is hosted (0 when not): Stats.HostIssue of the tasks walked
// once, as the walk summed it task by task before (walker.run leaves it
// to its callers: the sum is the same for every shift, so a copy walked
// again adds its unit's). A program that Build made and whose records
// the walk reads (Program.hot) has it from the build
// (Program.issueSum), a subtraction per copied layer or pass instead of
// an addition per task walked; any other sums its records here.
func (x *Executor) hostIssueSum(i int) engine.Time {
	in, hot := &x.inst[i], x.hotTasks(i)
	p := in.prog
	if !p.Hosted {
		return 0
	}
	if p.issueSumOK && p.keepHot && len(hot) > 0 && len(p.hot) == len(hot) && &p.hot[0] == &hot[0] {
		return p.issueSum
	}
	return x.issueOf(i, 0, int32(len(hot)))
}

// issueOf returns Σ issue over instance i's tasks [lo, hi) but receives
// when its program is hosted (0 when not): what the walk counted of them.
func (x *Executor) issueOf(i int, lo, hi int32) engine.Time {
	if !x.inst[i].prog.Hosted {
		return 0
	}
	var s engine.Time
	hot := x.hotTasks(i)[lo:hi]
	for j := range hot {
		if hot[j].kind != KindRecv {
			s += hot[j].issue
		}
	}
	return s
}

// newWalker is a walker of instance i with empty lists (the scratch's).
func (x *Executor) newWalker(i int, scan, joint bool) walker {
	in := &x.inst[i]
	x.hotTasks(i)
	if x.scratch == nil {
		x.scratch = new(statsScratch)
	}
	wk := walker{p: in.prog, hot: in.hot, state: in.state, hosted: in.prog.Hosted, scan: scan, joint: joint}
	for l := range wk.lists {
		v := x.scratch.lists[l]
		wk.lists[l] = v[:cap(v)]
		wk.open[l] = noInterval
	}
	// compute's open interval is kept in its storage (putComp): noInterval
	// there first. Its first storage has room for 8 chunks (walkChunk):
	// the 70B sweep's walks reach ≈ 4,400 intervals there (≈ 2,350 and a
	// chunk's room), which it grew to from 2,048 by doubling, each
	// worker's smaller arrays left behind (stats50).
	if len(wk.lists[listComp]) == 0 {
		wk.lists[listComp] = make([]interval, 8*walkChunk)
	}
	wk.lists[listComp][0] = noInterval
	if x.rep != nil {
		wk.win = x.rep[i].win
	}
	return wk
}

// walkFrom walks instance i's tasks from task from on (with replication,
// from up to the replicated unit's end) in segments, each shifted: with
// replication (Replicate) the tasks up to the last played unit as
// played, extra copies of that unit a period later each, then the suffix
// after them; without, every task as played. Walked from 0, these are
// all of statsWalk's; statsPeriodic walks the prefix before the unit
// first, whose last end it reads before it knows the copies to walk.
func (x *Executor) walkFrom(wk *walker, i int, from int32, extra int) {
	n := int32(len(wk.p.Tasks))
	if x.rep == nil {
		wk.walk(from, n, 0)
		return
	}
	r := x.rep[i]
	wk.walk(from, r.b, 0)
	for c := 1; c <= extra; c++ {
		wk.walk(r.a, r.b, engine.Time(c)*r.period)
	}
	wk.walk(r.b, n, engine.Time(extra)*r.period)
}

// measure returns the Stats of what wk walked and, with w, what lies in
// w's window; false when the joint list came out of order (walker.joint):
// then the tasks are to be walked again into separate lists, or when the
// last end and Compute cannot be measured from the lists (wk.again set:
// lastEnd, walker.plain): then they are to be walked again summing them.
func (x *Executor) measure(wk *walker, w *windowMeasure) (Stats, bool) {
	sc := x.scratch
	joint := wk.joint
	end, ok := wk.lastEnd()
	if !ok || !wk.plain && wk.unsorted[listComp] {
		sc.lists = wk.lists
		wk.again = true
		return Stats{}, false
	}
	ls := wk.closeLists()
	// Tensor parallelism widened the joint list somewhere unless it came
	// out as compute's: both get every other interval the same way, in
	// the same order, so without tensor parallelism they are equal, and
	// with some that lies under compute they are also equal and
	// compute's list measures the same (no exposed time, the same
	// covered). Compared here, in place of a flag stored on each of the
	// tensor-parallel tasks, half of those walked on the 70B sweep.
	wk.tp = joint && !slices.Equal(ls[listBoth], ls[listComp])
	if joint && wk.tp && wk.unsorted[listBoth] {
		sc.lists = wk.lists
		return Stats{}, false
	}
	st, comp := wk.st, ls[listComp]
	st.End = end
	var lenComp engine.Time // |comp|, when measured (below)
	if !wk.plain {
		// Compute's list holds each compute task's interval, each host
		// stall's and each wait for the host, none overlapping another
		// (put's overlap) and in order: its length is their sum.
		lenComp = lengthOf(comp)
		st.Compute = lenComp - st.Host - st.HostBound
	}
	var comm [NumExposed][]interval
	copy(comm[:], ls[listComm:listComm+NumExposed])
	if wk.unsorted[listComp] {
		comp = mergeIntervals(comp)
	}
	// The lists whose union is the covered time: compute and each kind
	// run (most runs use two or three kinds).
	var lists [1 + NumExposed][]interval
	lists[0] = comp
	nl := 1
	// Compute ∪ tensor parallelism, merged (the union's canonical form,
	// the same runs unionLength measures), in place of both.
	both := joint && wk.tp
	if both {
		lists[0] = ls[listBoth]
		// |T \ C| = |C ∪ T| − |C|, both lists merged
		if wk.plain {
			lenComp = lengthOf(comp)
		}
		st.Exposed[0] = lengthOf(ls[listBoth]) - lenComp
	}
	for k := range comm {
		if wk.unsorted[listComm+k] {
			comm[k] = mergeIntervals(comm[k])
		}
		if k == int(ExposedOf[GroupPP]) {
			comm[k] = wk.pipeline(comm[k], &ls, &sc.pp)
		}
		if len(comm[k]) == 0 {
			continue // nothing exposed, nothing more covered (tensor parallelism's with joint)
		}
		st.Exposed[k] = lengthMinus(comm[k], comp)
		lists[nl] = comm[k]
		nl++
	}
	var lo, hi engine.Time // an empty window unless w
	if w != nil {
		lo, hi = w.lo, w.hi
	}
	covered, inWindow := unionLength(lists[:nl], &sc.union, lo, hi)
	st.Idle = st.End - covered
	if w != nil {
		cw := clipIntervals(sc.clipComp[:0], comp, w.lo, w.hi)
		kw := sc.clipComm
		for k := range comm {
			kw = clipIntervals(kw[:0], comm[k], w.lo, w.hi)
			w.exposed[k] = lengthMinus(kw, cw)
		}
		if both {
			// |(C ∪ T) ∩ W| − |C ∩ W| = |(T \ C) ∩ W|
			kw = clipIntervals(kw[:0], ls[listBoth], w.lo, w.hi)
			w.exposed[0] = lengthOf(kw) - lengthOf(cw)
		}
		w.covered = inWindow
		sc.clipComp, sc.clipComm = cw, kw
	}
	sc.lists = wk.lists
	return st, true
}

// pipeline returns the pipeline's list, merged: the sends' (merged),
// with the receives of each stream (each merged unless already; ls are
// the walk's closed lists), in buf.
// A receive starts when its send does, so the receives of the two
// streams interleave out of order (1,346 times on the 70B sweep) but
// each stream's come in order (one receive out of order on that sweep;
// a list out of order is merged first): two linear unions in place of
// sorting the pipeline's list (which 2,151 of 2,856 Stats did).
func (w *walker) pipeline(sends []interval, ls *[numLists][]interval, buf *[2][]interval) []interval {
	acc := sends
	for j, l := range [2]int{listRecvAct, listRecvGrd} {
		v := ls[l]
		if len(v) == 0 {
			continue
		}
		if w.unsorted[l] {
			v = mergeIntervals(v)
		}
		if len(acc) == 0 {
			acc = v
			continue
		}
		buf[j] = unionIntervals(buf[j][:0], acc, v)
		acc = buf[j]
	}
	return acc
}

// unionLength is the length of the union of the lists (each merged), and
// of its part inside [lo, hi). The lists are merged in order, each union
// written into buf (alternately), but the last, which is only measured:
// with compute and one kind of communication, nothing is written. (Taken
// shortest first, the unions were longer: compute and tensor-parallel
// communication, the longest lists, mostly merge into few runs.) The
// unions are unionRuns', and the last is measured run by run as
// unionRuns grows them (the same runs as the merge in start order, so
// the same sums).
func unionLength(lists [][]interval, buf *[2][]interval, lo, hi engine.Time) (total, inside engine.Time) {
	var acc []interval
	if len(lists) > 0 {
		acc = lists[0]
	}
	for j := 1; j < len(lists)-1; j++ {
		buf[j%2] = unionRuns(buf[j%2][:0], acc, lists[j]) // merging into few runs
		acc = buf[j%2]
	}
	var last []interval
	if len(lists) > 1 {
		last = lists[len(lists)-1]
	}
	// the union of acc and last, run by run (grown as unionRuns grows
	// them)
	i, k := 0, 0
	for i < len(acc) || k < len(last) {
		var cur interval
		if k == len(last) || (i < len(acc) && acc[i].a <= last[k].a) {
			cur = acc[i]
			i++
		} else {
			cur = last[k]
			k++
		}
		for {
			if k < len(last) && last[k].a <= cur.b {
				cur.b = max(cur.b, last[k].b)
				k++
				continue
			}
			if i < len(acc) && acc[i].a <= cur.b {
				cur.b = max(cur.b, acc[i].b)
				i++
				continue
			}
			break
		}
		total += cur.b - cur.a
		inside += max(0, min(cur.b, hi)-max(cur.a, lo))
	}
	return total, inside
}

// unionIntervals appends to dst the union of a and b (each merged),
// merged: the union's canonical form, which does not depend on how the
// two are interleaved. dst is grown once to hold both, so the merge
// writes by index (no append's capacity check per interval), and what
// is left of one list when the other runs out is copied once its first
// intervals have merged into the last one written (the rest of a
// merged list starts after that one ends).
func unionIntervals(dst, a, b []interval) []interval {
	n := len(dst)
	dst = slices.Grow(dst, len(a)+len(b))
	out := dst[:cap(dst)]
	for len(a) > 0 && len(b) > 0 {
		var x interval
		if a[0].a <= b[0].a {
			x, a = a[0], a[1:]
		} else {
			x, b = b[0], b[1:]
		}
		if n > 0 && x.a <= out[n-1].b {
			out[n-1].b = max(out[n-1].b, x.b)
			continue
		}
		out[n] = x
		n++
	}
	if len(a) == 0 {
		a = b
	}
	for len(a) > 0 && n > 0 && a[0].a <= out[n-1].b {
		out[n-1].b = max(out[n-1].b, a[0].b)
		a = a[1:]
	}
	n += copy(out[n:], a)
	return out[:n]
}

// unionRuns is unionIntervals (the same result) for lists whose union
// merges into few runs: unionLength's, communication within or between
// compute's intervals (564 k intervals into 55 k runs on the 70B sweep,
// alternating between the two lists). Each run is grown in turn: from
// the earlier head (a's on a tie; dst's last interval first, which the
// union may widen), it takes the next interval of b, else of a, while
// one starts by its end, and is written when both heads start after
// it. That takes into each run the intervals the merge in start order
// takes (all those of either list that start by the run's end, as the
// merge reaches them before any later start), with one or two tests an
// interval and no choice of the earlier head; b is tested first as it
// has more of those intervals (the communication, second in
// unionLength). The pipeline's unions, whose lists interleave without
// merging, cost more this way (a run's start and end for each
// interval): they keep unionIntervals.
func unionRuns(dst, a, b []interval) []interval {
	n := len(dst)
	dst = slices.Grow(dst, len(a)+len(b))
	out := dst[:cap(dst)]
	i, k := 0, 0
	var cur interval
	switch {
	case n > 0:
		n--
		cur = out[n]
	case len(a) == 0:
		return out[:copy(out, b)]
	case len(b) == 0 || a[0].a <= b[0].a:
		cur, i = a[0], 1
	default:
		cur, k = b[0], 1
	}
	for {
		for {
			if k < len(b) && b[k].a <= cur.b {
				cur.b = max(cur.b, b[k].b)
				k++
				continue
			}
			if i < len(a) && a[i].a <= cur.b {
				cur.b = max(cur.b, a[i].b)
				i++
				continue
			}
			break
		}
		out[n] = cur
		n++
		if i == len(a) {
			return out[:n+copy(out[n:], b[k:])]
		}
		if k == len(b) {
			return out[:n+copy(out[n:], a[i:])]
		}
		if a[i].a <= b[k].a {
			cur = a[i]
			i++
		} else {
			cur = b[k]
			k++
		}
	}
}

// hotTasks returns instance i's hotTasks, made for an executor not made by
// NewSymmetric or NewFull (tests).
func (x *Executor) hotTasks(i int) []hotTask {
	in := &x.inst[i]
	if p := in.prog; len(in.hot) != len(p.Tasks) {
		in.hot = make([]hotTask, len(p.Tasks))
		fillHot(in.hot, nil, p)
	}
	return in.hot
}

// clipIntervals appends to dst the parts of v (merged) inside [lo, hi).
// A merged list's ends increase, so the intervals that end by lo are
// skipped by halving (skipEnded) and the walk stops at the first that
// starts at hi or after: statsPeriodic's window is one period, a small
// part of compute's list, which was clipped interval by interval.
func clipIntervals(dst, v []interval, lo, hi engine.Time) []interval {
	j := 0
	if len(v) > 0 && v[0].b <= lo {
		j = skipEnded(v, 1, lo)
	}
	for _, x := range v[j:] {
		if x.a >= hi {
			break
		}
		a, b := max(x.a, lo), min(x.b, hi)
		if a < b {
			dst = append(dst, interval{a, b})
		}
	}
	return dst
}

// walker is what statsWalk gathers as it walks: the sums and the
// interval lists, with the program and times it walks.
type walker struct {
	p      *Program
	hot    []hotTask
	state  []taskState
	hosted bool
	scan   bool  // read every hosted compute task's dependencies (below)
	win    int32 // the replicated unit's first task: dependencies from it on are shifted
	st     Stats
	// copyEnd is the last end of a copy engine's transfer, which st.End
	// leaves out (walkEnd), or 0.
	copyEnd engine.Time
	// lists are the intervals: compute's (listComp), each kind's
	// communication (listComm + k, ExposedOf; the pipeline's receives
	// apart, on listRecvAct and listRecvGrd by stream: pipeline) and
	// both (listBoth), compute's list and tensor parallelism's in one:
	// their tasks alternate in time and in program order (a layer's
	// collective waits for its GEMM, the next GEMM for it), so the walk
	// mostly widens its last interval, and the covered time need not
	// merge the two longest lists (unionLength) unless it went out of
	// order. With joint, tensor parallelism's intervals go there only (its
	// own list stays empty), and tp says, after the walk, that they left
	// it unequal to compute's (statsWalk).
	lists     [numLists][]interval
	joint, tp bool
	// unsorted says a list got an interval that starts before its last
	// one (put); the others are merged already
	unsorted [numLists]bool
	// open is each list's last interval, kept apart from lists[l] while
	// walking (put: the interval a task widens is at a fixed place in
	// the walker, not behind the list's length and pointer), noInterval
	// before the first; the first interval closed into lists[l] is that
	// noInterval, which closeLists leaves out.
	open [numLists]interval
	// tail is each list's length in bytes (count): lists[l][:count(l)]
	// are its closed intervals (noInterval first) and lists[l] its whole
	// storage, so that closing an interval stores at the list's data
	// plus tail, with no bounds check, and adds a constant (put)
	tail [numLists]uintptr
	// at and shift are run's last task (hi − 1) and shift, for hostWait
	at    int32
	shift engine.Time
	// issueLead is the least a hosted compute task's issue may come
	// after its start (both stored) for its dependencies to be read
	// (run): 0, a task that started by its issue, or with walkRead (the
	// walk's mode) MinInt64, every one
	issueLead engine.Time
	// room is the least room left in any list, as far as walk knows
	// (fit): 0 until it first looks.
	room int
	// plain: the walk sums Compute and the last end on every task (st),
	// as it did. Without it (Stats' walks), the two hottest paths, a
	// tensor-parallel collective of the joint list and a hosted compute
	// task that did not wait for its issue, leave both to the lists
	// (lastEnd, measure): each puts its interval into listBoth, so the
	// last end is the later of st.End and that list's last, and compute's
	// list is the compute tasks', the host stalls' and the waits for the
	// host, which overlap nowhere in a play (putComp), so Compute is its
	// length less Host and HostBound (−4 instructions a compute task, −2
	// a collective: issue 18, stats50).
	plain bool
	// waitLate: a wait for the host ended after its task's end
	// (hostWait), so that listBoth may end after the last end; again:
	// measure refused the walk for it or for compute's list out of order
	// or overlapping (putComp), and it is to be walked again plain.
	waitLate, again bool
}

// lastEnd is the last end of the tasks walked so far (Stats.End, a copy
// nobody waits for excepted) and true, or false when it cannot be told
// from the lists (a wait for the host that ended after its task: then the
// walk is to be made plain). Without plain, the tasks whose end st.End
// leaves out all put their intervals into listBoth, whose other intervals
// (the waits for the host) end by their tasks' ends, so its latest end is
// theirs: the open interval's unless the list went out of order.
func (w *walker) lastEnd() (engine.Time, bool) {
	if w.plain {
		return w.st.End, true
	}
	if w.waitLate {
		return 0, false
	}
	end := w.st.End
	if o := w.open[listBoth]; o != noInterval {
		end = max(end, o.b)
		if w.unsorted[listBoth] {
			for _, v := range w.lists[listBoth][1:w.count(listBoth)] {
				end = max(end, v.b)
			}
		}
	}
	return end, true
}

// noInterval is walker.open's interval before a list's first: it ends
// before any interval the walk puts starts (a walked time is at least
// −1: a start, issue or end stored plus one and shifted by a period ≥ 0,
// less one), so the first put closes it, where putInterval (as it was,
// in the tests) appended to an empty list.
var noInterval = interval{-1 << 62, -1 << 62}

// intervalBytes is an interval's size: walker.tail's unit.
const intervalBytes = unsafe.Sizeof(interval{})

// walker.lists' indices.
const (
	listComp    = 0
	listComm    = 1 // + the kind of ExposedOf
	listBoth    = listComm + NumExposed
	listRecvAct = listBoth + 1 // the pipeline's receives on StreamPPRecvAct (and any not on StreamPPRecvGrd)
	listRecvGrd = listBoth + 2 // on StreamPPRecvGrd
	numLists    = listBoth + 3
)

// walkClasses are, per walk mode (walkMode: hosted, reading every hosted
// compute task's dependencies, joint) and per task's walk key (walkKey:
// its kind, group and whether its stream is the one that matters, in
// hotTask.walk), what walker.run does with a task: its action (the low
// bits, walkAct…) and whether it is a hosted compute task whose wait for
// the host thread may be read (walkHost: hosted, on the compute stream
// and not a receive, which no host issues), whether its dependencies
// are read whatever its start (walkRead) and whether it counts for the
// last end (walkEnd: not a copy nobody waits for). One table read, of a
// byte the record carries, stands for IsComm, IsCompute, ExposedOf, the
// kind and stream comparisons and the walk's flags, with no bounds check.
//
// The table is written out, not computed at init, so that no command pays
// for building it (≈ 87,000 instructions and a fresh page of every process's
// start, `simtrain version` included; docs/design.md "Speed", start53):
// TestWalkKey holds every entry to the rules above (walkRule in
// stats_test.go), in every walk mode. Rows are 16 keys each (the
// kind in the low 4 bits, the group in bits 4–6, walkKeyStream in bit 7).
var walkClasses = [8][256]uint8{
	{ // mode 0
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x46, 0x46, 0x46, 0x46, 0x46, 0x46, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x45, 0x45, 0x45, 0x45, 0x45, 0x49, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x46, 0x46, 0x46, 0x46, 0x46, 0x46, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x4b, 0x4b, 0x4b, 0x4b, 0x4b, 0x4b, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x46, 0x46, 0x46, 0x46, 0x46, 0x46, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x45, 0x45, 0x45, 0x45, 0x45, 0x4a, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x46, 0x46, 0x46, 0x46, 0x46, 0x46, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x4b, 0x4b, 0x4b, 0x4b, 0x4b, 0x4b, 0x08, 0x47, 0x47, 0x47,
	},
	{ // mode 1
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x45, 0x45, 0x45, 0x45, 0x45, 0x49, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x4b, 0x4b, 0x4b, 0x4b, 0x4b, 0x4b, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x45, 0x45, 0x45, 0x45, 0x45, 0x4a, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x4b, 0x4b, 0x4b, 0x4b, 0x4b, 0x4b, 0x08, 0x47, 0x47, 0x47,
	},
	{ // mode 2
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x46, 0x46, 0x46, 0x46, 0x46, 0x46, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x45, 0x45, 0x45, 0x45, 0x45, 0x49, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x46, 0x46, 0x46, 0x46, 0x46, 0x46, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x4b, 0x4b, 0x4b, 0x4b, 0x4b, 0x4b, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x46, 0x46, 0x46, 0x46, 0x46, 0x46, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x45, 0x45, 0x45, 0x45, 0x45, 0x4a, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x46, 0x46, 0x46, 0x46, 0x46, 0x46, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x4b, 0x4b, 0x4b, 0x4b, 0x4b, 0x4b, 0x08, 0x47, 0x47, 0x47,
	},
	{ // mode 3
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x45, 0x45, 0x45, 0x45, 0x45, 0x49, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x4b, 0x4b, 0x4b, 0x4b, 0x4b, 0x4b, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x45, 0x45, 0x45, 0x45, 0x45, 0x4a, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x4b, 0x4b, 0x4b, 0x4b, 0x4b, 0x4b, 0x08, 0x47, 0x47, 0x47,
	},
	{ // mode 4
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x46, 0x46, 0x46, 0x46, 0x46, 0x46, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x45, 0x45, 0x45, 0x45, 0x45, 0x49, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x46, 0x46, 0x46, 0x46, 0x46, 0x46, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x4b, 0x4b, 0x4b, 0x4b, 0x4b, 0x4b, 0x08, 0x47, 0x47, 0x47,
		0x50, 0x50, 0x50, 0x50, 0x50, 0x57, 0x56, 0x56, 0x56, 0x56, 0x56, 0x46, 0x18, 0x57, 0x57, 0x57,
		0x50, 0x50, 0x50, 0x50, 0x50, 0x57, 0x52, 0x52, 0x52, 0x52, 0x52, 0x42, 0x18, 0x57, 0x57, 0x57,
		0x50, 0x50, 0x50, 0x50, 0x50, 0x57, 0x53, 0x53, 0x53, 0x53, 0x53, 0x43, 0x18, 0x57, 0x57, 0x57,
		0x50, 0x50, 0x50, 0x50, 0x50, 0x57, 0x54, 0x54, 0x54, 0x54, 0x54, 0x44, 0x18, 0x57, 0x57, 0x57,
		0x50, 0x50, 0x50, 0x50, 0x50, 0x57, 0x55, 0x55, 0x55, 0x55, 0x55, 0x4a, 0x18, 0x57, 0x57, 0x57,
		0x50, 0x50, 0x50, 0x50, 0x50, 0x57, 0x54, 0x54, 0x54, 0x54, 0x54, 0x44, 0x18, 0x57, 0x57, 0x57,
		0x50, 0x50, 0x50, 0x50, 0x50, 0x57, 0x56, 0x56, 0x56, 0x56, 0x56, 0x46, 0x18, 0x57, 0x57, 0x57,
		0x50, 0x50, 0x50, 0x50, 0x50, 0x57, 0x5b, 0x5b, 0x5b, 0x5b, 0x5b, 0x4b, 0x18, 0x57, 0x57, 0x57,
	},
	{ // mode 5
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x45, 0x45, 0x45, 0x45, 0x45, 0x49, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x4b, 0x4b, 0x4b, 0x4b, 0x4b, 0x4b, 0x08, 0x47, 0x47, 0x47,
		0x50, 0x50, 0x50, 0x50, 0x50, 0x57, 0x51, 0x51, 0x51, 0x51, 0x51, 0x41, 0x18, 0x57, 0x57, 0x57,
		0x50, 0x50, 0x50, 0x50, 0x50, 0x57, 0x52, 0x52, 0x52, 0x52, 0x52, 0x42, 0x18, 0x57, 0x57, 0x57,
		0x50, 0x50, 0x50, 0x50, 0x50, 0x57, 0x53, 0x53, 0x53, 0x53, 0x53, 0x43, 0x18, 0x57, 0x57, 0x57,
		0x50, 0x50, 0x50, 0x50, 0x50, 0x57, 0x54, 0x54, 0x54, 0x54, 0x54, 0x44, 0x18, 0x57, 0x57, 0x57,
		0x50, 0x50, 0x50, 0x50, 0x50, 0x57, 0x55, 0x55, 0x55, 0x55, 0x55, 0x4a, 0x18, 0x57, 0x57, 0x57,
		0x50, 0x50, 0x50, 0x50, 0x50, 0x57, 0x54, 0x54, 0x54, 0x54, 0x54, 0x44, 0x18, 0x57, 0x57, 0x57,
		0x50, 0x50, 0x50, 0x50, 0x50, 0x57, 0x51, 0x51, 0x51, 0x51, 0x51, 0x41, 0x18, 0x57, 0x57, 0x57,
		0x50, 0x50, 0x50, 0x50, 0x50, 0x57, 0x5b, 0x5b, 0x5b, 0x5b, 0x5b, 0x4b, 0x18, 0x57, 0x57, 0x57,
	},
	{ // mode 6
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x46, 0x46, 0x46, 0x46, 0x46, 0x46, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x45, 0x45, 0x45, 0x45, 0x45, 0x49, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x46, 0x46, 0x46, 0x46, 0x46, 0x46, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x4b, 0x4b, 0x4b, 0x4b, 0x4b, 0x4b, 0x08, 0x47, 0x47, 0x47,
		0x70, 0x70, 0x70, 0x70, 0x70, 0x77, 0x76, 0x76, 0x76, 0x76, 0x76, 0x46, 0x38, 0x77, 0x77, 0x77,
		0x70, 0x70, 0x70, 0x70, 0x70, 0x77, 0x72, 0x72, 0x72, 0x72, 0x72, 0x42, 0x38, 0x77, 0x77, 0x77,
		0x70, 0x70, 0x70, 0x70, 0x70, 0x77, 0x73, 0x73, 0x73, 0x73, 0x73, 0x43, 0x38, 0x77, 0x77, 0x77,
		0x70, 0x70, 0x70, 0x70, 0x70, 0x77, 0x74, 0x74, 0x74, 0x74, 0x74, 0x44, 0x38, 0x77, 0x77, 0x77,
		0x70, 0x70, 0x70, 0x70, 0x70, 0x77, 0x75, 0x75, 0x75, 0x75, 0x75, 0x4a, 0x38, 0x77, 0x77, 0x77,
		0x70, 0x70, 0x70, 0x70, 0x70, 0x77, 0x74, 0x74, 0x74, 0x74, 0x74, 0x44, 0x38, 0x77, 0x77, 0x77,
		0x70, 0x70, 0x70, 0x70, 0x70, 0x77, 0x76, 0x76, 0x76, 0x76, 0x76, 0x46, 0x38, 0x77, 0x77, 0x77,
		0x70, 0x70, 0x70, 0x70, 0x70, 0x77, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x4b, 0x38, 0x77, 0x77, 0x77,
	},
	{ // mode 7
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x45, 0x45, 0x45, 0x45, 0x45, 0x49, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x44, 0x44, 0x44, 0x44, 0x44, 0x44, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x08, 0x47, 0x47, 0x47,
		0x40, 0x40, 0x40, 0x40, 0x40, 0x47, 0x4b, 0x4b, 0x4b, 0x4b, 0x4b, 0x4b, 0x08, 0x47, 0x47, 0x47,
		0x70, 0x70, 0x70, 0x70, 0x70, 0x77, 0x71, 0x71, 0x71, 0x71, 0x71, 0x41, 0x38, 0x77, 0x77, 0x77,
		0x70, 0x70, 0x70, 0x70, 0x70, 0x77, 0x72, 0x72, 0x72, 0x72, 0x72, 0x42, 0x38, 0x77, 0x77, 0x77,
		0x70, 0x70, 0x70, 0x70, 0x70, 0x77, 0x73, 0x73, 0x73, 0x73, 0x73, 0x43, 0x38, 0x77, 0x77, 0x77,
		0x70, 0x70, 0x70, 0x70, 0x70, 0x77, 0x74, 0x74, 0x74, 0x74, 0x74, 0x44, 0x38, 0x77, 0x77, 0x77,
		0x70, 0x70, 0x70, 0x70, 0x70, 0x77, 0x75, 0x75, 0x75, 0x75, 0x75, 0x4a, 0x38, 0x77, 0x77, 0x77,
		0x70, 0x70, 0x70, 0x70, 0x70, 0x77, 0x74, 0x74, 0x74, 0x74, 0x74, 0x44, 0x38, 0x77, 0x77, 0x77,
		0x70, 0x70, 0x70, 0x70, 0x70, 0x77, 0x71, 0x71, 0x71, 0x71, 0x71, 0x41, 0x38, 0x77, 0x77, 0x77,
		0x70, 0x70, 0x70, 0x70, 0x70, 0x77, 0x7b, 0x7b, 0x7b, 0x7b, 0x7b, 0x4b, 0x38, 0x77, 0x77, 0x77,
	},
}

// walkKeyStream is walkKey's bit for the stream: on StreamCompute for a
// task that is not a receive (one the host thread may hold), on
// StreamPPRecvGrd for a receive (the pipeline's list it goes to).
const walkKeyStream = 128

// walkKey is a task's index in walkClasses' tables, kept in its record
// (hotTask.walk, set with the record's kind, group and stream: hotOf,
// storeHot, fillHotTasks; a copied record copies it): the kind's low 4
// bits, the group's low 3 and walkKeyStream (by the stream's low 4 bits:
// every Stream, NumStreams ≤ 16). Read from the record, it is one byte
// load per task walked where run loaded the kind and group, masked them,
// and loaded and tested the stream (2 to 4 instructions a task; design.md,
// walk48). One table load (walkKeys), so that storeHot stays inlined in
// the builder's add.
func walkKey(kind Kind, group GroupKind, stream Stream) uint8 {
	return walkKeys[kind&15][stream&15] | uint8(group&7)<<4
}

// walkKeys are walkKey's kind and stream bits, by kind and stream.
//
// Written out (start53, as walkClasses): row k is k, with walkKeyStream
// at the stream that matters for kind k (StreamCompute, StreamPPRecvGrd
// for KindRecv); walkKeysOf in statictables_test.go derives it.
var walkKeys = [16][16]uint8{
	{0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00},
	{0x81, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01},
	{0x82, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02, 0x02},
	{0x83, 0x03, 0x03, 0x03, 0x03, 0x03, 0x03, 0x03, 0x03, 0x03, 0x03, 0x03, 0x03, 0x03, 0x03, 0x03},
	{0x84, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04},
	{0x85, 0x05, 0x05, 0x05, 0x05, 0x05, 0x05, 0x05, 0x05, 0x05, 0x05, 0x05, 0x05, 0x05, 0x05, 0x05},
	{0x86, 0x06, 0x06, 0x06, 0x06, 0x06, 0x06, 0x06, 0x06, 0x06, 0x06, 0x06, 0x06, 0x06, 0x06, 0x06},
	{0x87, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07},
	{0x88, 0x08, 0x08, 0x08, 0x08, 0x08, 0x08, 0x08, 0x08, 0x08, 0x08, 0x08, 0x08, 0x08, 0x08, 0x08},
	{0x89, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09, 0x09},
	{0x8a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a},
	{0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x8b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b, 0x0b},
	{0x8c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c},
	{0x8d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d, 0x0d},
	{0x8e, 0x0e, 0x0e, 0x0e, 0x0e, 0x0e, 0x0e, 0x0e, 0x0e, 0x0e, 0x0e, 0x0e, 0x0e, 0x0e, 0x0e, 0x0e},
	{0x8f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f, 0x0f},
}

// walkClasses' actions (below walkHost) and flags. An action from
// listComm+1 to listBoth−1 is that list's communication.
const (
	walkActCompute  = 0            // compute's list and both; Stats.Compute
	walkActTP       = 1            // tensor parallelism's, to both only (walker.joint)
	walkActTPOwn    = listBoth     // tensor parallelism's, to both and its own list
	walkActHostSync = listBoth + 1 // compute's list and both; Stats.Host
	walkActNone     = listBoth + 2 // a copy engine's transfer
	walkActRecv     = listBoth + 3 // a pipeline receive: listRecvAct (any not on StreamPPRecvGrd)
	walkActRecvGrd  = listBoth + 4 // a pipeline receive on StreamPPRecvGrd: listRecvGrd
	walkActEnd      = listBoth + 5 // a collective of no group: its end only
	walkActMask     = 15           // the action's bits
	walkHost        = 16
	walkRead        = 32
	walkEnd         = 64
	walkPlain       = 128 // a plain walk's (walker.plain): no fast path
)

// walkMode is walkClasses' index of a walk: hosted, read and joint.
func walkMode(hosted, read, joint bool) int {
	m := 0
	if hosted {
		m |= 4
	}
	if read {
		m |= 2
	}
	if joint {
		m |= 1
	}
	return m
}

// walk adds tasks [lo, hi), their times shifted by shift (and their
// dependencies' too, those from win on), to the sums and interval lists;
// all but HostIssue, which its callers set (hostIssueSum), and unless
// plain the last end and Compute of its fast paths' tasks, which measure
// takes from the lists (lastEnd; walker.plain).
//
// A hosted compute task waits for the host thread over [ready, issued)
// when its issue ends after its last dependency, ready. The symmetric play
// starts a hosted task when the last of its inputs arrives (its
// dependencies' ends and its issue; the host thread issues no task before
// the time it resumes at, and Resume refuses a task past the prefix with
// every dependency ended), so start = max(ready, issued): a task played
// (shift 0) that started after its issue started at ready, no wait, and
// its dependencies are not read (most of them, with a thread that runs
// ahead). A copy (shift > 0) takes the dependencies before win as played,
// so its ready is read; and so is every task's with scan
// (StatsEveryWait, which tests hold the shortcut to).
//
// The tasks go through run in chunks, each list first given room for two
// intervals per task of the chunk (a task's wait for the host and its
// own), so that run's loop calls nothing on its common paths: Go keeps
// no value in a register across a call, and with append's growslice in
// the loop every value live across it was stored and loaded again on
// every task (hostWait, the rare path's call, stores them on that path
// only).
//
// A list grows to twice its storage at least (growIntervals), and the
// lists are looked at only when the room known left (walker.room, the
// least any list had when last looked at, less what the chunks since may
// have taken) is short of the next chunk's: the lists' storage is the
// arena's (statsScratch), kept for every walk of a sweep worker, and
// slices.Grow's quarter growth, asked for at each chunk, left one array
// behind per growth (37 growths over the 1,000-point 70B sweep, to
// ≈ 30,000 intervals a worker; walk43). (Chunks of 256 tasks, for less
// room, saved no more faults and cost 5 M instructions more: run's table
// is copied into each call, and passed by pointer the loop read it worse.)
func (w *walker) walk(lo, hi int32, shift engine.Time) {
	const chunk = walkChunk
	read := w.scan || shift != 0
	tab := walkClasses[walkMode(w.hosted, read, w.joint)]
	if w.plain {
		// no class is then a fast path's (run)
		for k := range tab {
			tab[k] |= walkPlain
		}
	}
	w.issueLead = 0
	if read {
		w.issueLead = math.MinInt64 // (walkRead: every hosted compute task's)
	}
	for j := lo; j < hi; j += chunk {
		k := min(hi, j+chunk)
		need := 2 * int(k-j)
		if w.room < need {
			w.room = w.fit(2 * chunk)
		}
		w.run(j, k, shift, shift-1, tab)
		w.room -= need
	}
}

// walkChunk is how many tasks walk gives run at a time.
const walkChunk = 1024

// fit grows each list with less than room intervals free
// (growIntervals) and returns the least room any list has then.
func (w *walker) fit(room int) int {
	least := int(^uint(0) >> 1)
	for l := range w.lists {
		v, n := w.lists[l], w.count(l)
		if len(v)-n < room {
			v = growIntervals(v, n, room)
			w.lists[l] = v
		}
		least = min(least, len(v)-n)
	}
	return least
}

// growIntervals returns the first n intervals of v (a list's whole
// storage) in an array with room for at least room more, used at its
// whole length: twice v's at least, so that a list that keeps growing is
// copied a few times, not once per chunk, and room for twice room at
// least, so that a list's first storage (from nothing) is not grown at the
// next chunk for the few intervals put in it: made with exactly a chunk's
// room, each list of the 70B sweep's walks but compute's grew once more
// to hold its first 8 to 146 intervals, ≈ 0.26 MB left behind a worker
// (pool47's regrowth; issue 18, stats50).
func growIntervals(v []interval, n, room int) []interval {
	u := make([]interval, max(2*len(v), n+2*room))
	copy(u, v[:n])
	return u
}

// run walks tasks [lo, hi) as walk says, each list having room for two
// intervals per task; tab is walkClasses' for the walk and off is shift −
// 1 (a parameter, so that the compiler adds it in one instruction: a
// state's times are stored plus one, taskState, a start as 0 until the
// task starts, so s.start + off is Start() + shift without its branch,
// -1 + shift for a task not started, which is skipped as its end is not
// after that). The last end lives in a local for the loop, the lists and
// the other sums in w (put): fewer values than registers.
func (w *walker) run(lo, hi int32, shift, off engine.Time, tab [256]uint8) {
	hot := w.hot[lo:hi]
	state := w.state[lo:hi]
	state = state[:len(hot)]
	if len(state) == 0 {
		return
	}
	w.at, w.shift = hi-1, shift // hostWait's
	end := w.st.End
	// The records and states are reached through byte offsets from the
	// last task's, each stepped by its element's size up to 0 (unsafe.Add,
	// each offset at most 0 and at least minus the last's in bytes): an
	// index made the loop compute both addresses (a shift and a multiply
	// by 3) and keep the index and the count apart (−8.7 M instructions);
	// offsets up from 0 kept their bound in a register, and the loop's
	// common path then reloaded off from the stack when a list closed an
	// interval (−1.2 M; walk48b). hostWait's task is w.at + ho / 32.
	n := len(state) - 1
	hp, sp := unsafe.Pointer(&hot[n]), unsafe.Pointer(&state[n])
	for ho, so := -n*int(unsafe.Sizeof(hotTask{})), -n*int(unsafe.Sizeof(taskState{})); so <= 0; ho, so = ho+int(unsafe.Sizeof(hotTask{})), so+int(unsafe.Sizeof(taskState{})) {
		t, s := (*hotTask)(unsafe.Add(hp, ho)), (*taskState)(unsafe.Add(sp, so))
		start, e := s.start+off, s.end+off
		c := tab[t.walk] // (walkKey)
		if c == walkActTP|walkEnd {
			// tensor parallelism's, to both (joint), not on the compute
			// stream (no walkHost): half the tasks walked (2.72 M of 5.32
			// M on the 70B sweep), tested first on the class itself,
			// before the host's test and the switch's mask (−13 M
			// instructions); its end is listBoth's (lastEnd). One of no
			// length (none on the sweep) puts an empty interval, which
			// measures nothing and leaves the union as it was (emptyPut):
			// no length test on the path (−5 M instructions; stats50).
			w.put(listBoth, interval{start, e})
			continue
		}
		if c == walkActCompute|walkHost|walkEnd && s.issued-s.start < w.issueLead {
			// a hosted compute task (all the 70B sweep's 1.86 M) that
			// started after its issue and so did not wait for it (below):
			// compute's action, tested on the class itself before the
			// host's test, the length's and the switch's mask (−0.9 M
			// instructions; walk48b); its end and length are the lists'
			// (lastEnd, measure), an empty interval's too (emptyPut)
			w.putComp(interval{start, e})
			w.put(listBoth, interval{start, e})
			continue
		}
		if c&walkHost != 0 {
			// a hosted task on the compute stream, not a receive: with
			// start <= issued (both stored plus one), the task may have
			// waited for its issue, and with walkRead every one may: its
			// ready is read. c, start and e are read again after the
			// call, not kept across it: kept, they were stored before
			// the test on every hosted compute task and loaded after it
			// (−5.1 M instructions). The test is one comparison of
			// issued − start with the walk's walker.issueLead (with
			// walkRead MinInt64: always), a constant of the walk, not
			// start <= issued || c&walkRead != 0 (walk48's two branches;
			// stats34's walkRead shifted into the start cost 2.4 M more):
			// with two branches into the call's block, the loop's offsets
			// and last end were stored for the call before the first, on
			// every hosted compute task (−7.3 M; walk48b).
			if s.issued-s.start >= w.issueLead {
				w.hostWait(ho/int(unsafe.Sizeof(hotTask{})), s.issued+off)
				c, start, e = tab[t.walk], s.start+off, s.end+off
			}
		}
		if e <= start {
			// not started (both stored 0) or of no length: its end only
			if c&walkEnd != 0 {
				end = max(end, e)
			} else {
				w.copyEnd = max(w.copyEnd, e)
			}
			continue
		}
		// Each action counts the task's end for the last end, but a
		// copy engine's transfer's (walkActNone, no walkEnd): walkEnd is
		// not tested on this path.
		x := interval{start, e}
		// The action as an int, compute's case first: with a byte, the
		// compiler kept a copy of c to widen the action again for put's
		// index (−7.2 M instructions; c is not read past this).
		switch act := int(c) & walkActMask; {
		case act == walkActCompute:
			end = max(end, e)
			if c&walkPlain != 0 {
				w.st.Compute += e - start // (else measure's: plain)
			}
			w.putComp(x)
			w.put(listBoth, x)
		case act == walkActTP:
			// on the compute stream, hosted (walkHost)
			end = max(end, e)
			w.put(listBoth, x)
		case act < listBoth:
			end = max(end, e)
			w.put(act, x)
		case act == walkActTPOwn:
			end = max(end, e)
			w.put(listBoth, x)
			w.put(listComm, x)
		case act == walkActRecv:
			end = max(end, e)
			w.put(listRecvAct, x)
		case act == walkActRecvGrd:
			end = max(end, e)
			w.put(listRecvGrd, x)
		case act == walkActHostSync:
			// A host stall holds the compute stream: communication
			// under it is not what the rank waits for, and it is not
			// pipeline bubble.
			end = max(end, e)
			w.putComp(x)
			w.put(listBoth, x)
			w.st.Host += e - start
		case act == walkActEnd:
			end = max(end, e) // a collective of no group: no list
		default:
			// a copy engine's transfer (walkActNone): a copy nobody
			// waits for (the states' offload after the optimizer step)
			// runs under the next step's forward, and what the compute
			// stream waits for one shows as idle time
			w.copyEnd = max(w.copyEnd, e)
		}
	}
	w.st.End = end
}

// hostWait puts the wait for the host thread of hosted compute task
// w.at + j (j ≤ 0: run's chunk's last task is w.at), [ready, issued) with ready its last
// dependency's end (those from w.win on shifted by w.shift), when the
// issue ends after it, and adds it to HostBound. Out of run's loop, on the rare path (a task that started by
// its issue, a copy's or StatsEveryWait's): inlined, its loop held
// registers that the loop's common path then reloaded from the stack on
// every task; as a call, only this path stores and reloads them.
//
//go:noinline
func (w *walker) hostWait(j int, issued engine.Time) {
	i, shift := int(w.at)+j, w.shift
	var ready engine.Time
	for _, d := range w.p.deps[w.p.depOff[i]:w.p.depOff[i+1]] { // Deps(i)
		de := w.state[d].End()
		if d >= w.win {
			de += shift
		}
		ready = max(ready, de)
	}
	if issued > ready {
		w.putComp(interval{ready, issued})
		w.put(listBoth, interval{ready, issued})
		w.st.HostBound += issued - ready
		if issued > w.state[i].end-1+shift {
			w.waitLate = true // (never in a play: lastEnd)
		}
	}
}

// appendInterval appends x to v, or widens v's last interval when x
// starts inside it or where it ends: most tasks of a stream start as the
// one before ends, so the lists stay short. The union is the same, and
// mergeIntervals' result (the union's canonical form) with it. Through a
// pointer, so that a widening stores nothing back and an append in place
// only the length: the lists live in the arena's scratch, and storing the
// whole slice header passed the collector's write barrier on each task.
func appendInterval(v *[]interval, x interval) {
	if n := len(*v); n > 0 && x.a >= (*v)[n-1].a && x.a <= (*v)[n-1].b {
		(*v)[n-1].b = max((*v)[n-1].b, x.b)
		return
	}
	*v = append(*v, x)
}

// put adds x to list l as appendInterval does, with the list's last
// interval kept apart (walker.open): x widens that one when it starts
// inside it or where it ends, else that one is closed into the list,
// which has room for it (walker.walk), and x is the open one; unsorted
// is set when x starts before it (without that, each interval closed
// ends before the next starts, so the list stays sorted and merged: what
// mergeIntervals would make of it, which it then need not). The list
// closed (closeLists) is the one putInterval made (a list's last
// interval widened in place, kept in the tests as the reference:
// TestPutEqualsPutInterval). Without the list's length and pointer
// loaded to reach its last interval, a widening (most tasks: they start
// as the one before on their stream ends) is two loads, two comparisons
// and a store; a close stores the count (walker.n), with no capacity
// check, and the open interval's end as loaded for the test (read from
// the walker again, it was loaded twice on compute's path: −4.1 M
// instructions, walk48b).
func (w *walker) put(l int, x interval) {
	o := &w.open[l]
	ob := o.b
	if x.a <= ob {
		if x.a >= o.a {
			o.b = max(ob, x.b)
			return
		}
		w.unsorted[l] = true
	}
	// lists[l][count(l)], which walk left room for
	t := w.tail[l]
	*(*interval)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(w.lists[l])), t)) = interval{o.a, ob}
	w.tail[l] = t + intervalBytes
	*o = x
}

// emptyPut: an interval of no length [s, s) that put or putComp adds (run's
// two fast paths do not test the length) changes no figure measure takes
// from the lists: put widens the open interval with it when s lies in it
// (its end then unchanged), else closes the open one and opens it; as a
// list's element it adds 0 to lengthOf, unionRuns' and unionLength's runs
// (a run of it alone measures 0, inside the window too) and to
// lengthMinus' a, and as b's element it ends where it starts, after the
// interval before it (ends still increase, which the skips need), and
// removes nothing; clipIntervals drops it; its end is that of a task
// walked (lastEnd). It only makes the joint list differ from compute's
// (measure's tp, then measured from the joint list: the same union) or
// marks a list unsorted (merged, or walked again): the same figures.
// TestStatsEmptyTasks holds Stats with such tasks to StatsEveryWait.

// putComp is put for compute's list, but for an interval that starts
// inside the open one (not where it ends): that one is closed and x
// opened, as for an interval that starts before it, and the list marked
// unsorted. The list's union is the same (measure merges a list so
// marked), and unless it is so marked its intervals overlap nowhere, so
// that its length is the sum of theirs (measure; walker.plain). In a play
// a stream's tasks run one after another and a wait for the host ends as
// its task starts: they touch, and none overlaps.
//
// Compute's intervals are separated by the tensor-parallel collectives
// between them, so most puts (1.66 M of the 70B sweep's 1.78 M on the
// fast path) close the open interval: it is kept in the list's storage,
// at tail (count is one more than its closed intervals), not apart in
// walker.open, so that a close stores x after it and moves tail, without
// copying the open one into the list and x into walker.open (−3
// instructions a close; stats50). walk gave the list room for it.
func (w *walker) putComp(x interval) {
	t := w.tail[listComp]
	base := unsafe.Pointer(unsafe.SliceData(w.lists[listComp]))
	o := (*interval)(unsafe.Add(base, t))
	if x.a <= o.b {
		if x.a == o.b {
			o.b = x.b // (x.b ≥ x.a)
			return
		}
		w.unsorted[listComp] = true
	}
	t += intervalBytes
	*(*interval)(unsafe.Add(base, t)) = x
	w.tail[listComp] = t
}

// count is list l's length: its closed intervals, noInterval first (and
// compute's open one, kept there: putComp).
func (w *walker) count(l int) int {
	n := int(w.tail[l] / intervalBytes)
	if l == listComp {
		n++
	}
	return n
}

// closeLists closes each list's open interval into it and returns the
// lists without their first interval, noInterval (empty where none was
// put): the lists putInterval made of the same intervals. w.lists keep
// their whole storage, which the scratch keeps (measure); the walk is
// over (a walker is closed once).
func (w *walker) closeLists() (v [numLists][]interval) {
	for l := range w.lists {
		if l == listComp {
			// its open interval is its last already (putComp)
			if n := w.count(l); n > 1 {
				v[l] = w.lists[l][1:n]
			}
			continue
		}
		if w.open[l] == noInterval {
			continue
		}
		n := w.count(l)
		if n == len(w.lists[l]) {
			u := append(w.lists[l], w.open[l])
			w.lists[l] = u[:cap(u)]
		} else {
			w.lists[l][n] = w.open[l]
		}
		w.open[l], w.tail[l] = noInterval, uintptr(n+1)*intervalBytes
		v[l] = w.lists[l][1 : n+1]
	}
	return v
}

// mergeIntervals sorts v by start (unless it already is) and merges
// overlapping or touching intervals, in place. It merges in the one pass
// that finds the list in order (the intervals of a stream's tasks mostly
// are); at the first interval that starts before the one before it, it
// sorts what it merged so far with the rest and merges again.
func mergeIntervals(v []interval) []interval {
	n := 0 // v[:n] merged, from the sorted v[:i]
	var prev engine.Time
	for i, x := range v {
		if i > 0 && x.a < prev {
			// not sorted: the merged v[:n] covers v[:i], v[i:] is untouched
			n += copy(v[n:], v[i:])
			v = v[:n]
			slices.SortFunc(v, compareIntervals)
			return mergeSorted(v)
		}
		prev = x.a
		if n > 0 && x.a <= v[n-1].b {
			v[n-1].b = max(v[n-1].b, x.b)
			continue
		}
		v[n] = x
		n++
	}
	return v[:n]
}

// mergeSorted merges v, sorted by start, in place.
func mergeSorted(v []interval) []interval {
	out := v[:0]
	for _, x := range v {
		if n := len(out); n > 0 && x.a <= out[n-1].b {
			out[n-1].b = max(out[n-1].b, x.b)
			continue
		}
		out = append(out, x)
	}
	return out
}

func compareIntervals(x, y interval) int {
	if x.a != y.a {
		return int(x.a - y.a)
	}
	return int(x.b - y.b)
}

// lengthOf returns the length of v (merged): four intervals a turn
// (compute's list is most of what it measures, 1.7 M intervals on the 70B
// sweep; integer sums, so the order of the additions changes nothing).
func lengthOf(v []interval) engine.Time {
	var s0, s1 engine.Time
	for len(v) >= 4 {
		s0 += v[0].b - v[0].a + v[2].b - v[2].a
		s1 += v[1].b - v[1].a + v[3].b - v[3].a
		v = v[4:]
	}
	for _, x := range v {
		s0 += x.b - x.a
	}
	return s0 + s1
}

// lengthMinus returns the length of a \ b (both merged). b is mostly
// compute's list, long, and a a kind of communication's, with a few to
// thousands of b's intervals between two of a's (on the 70B sweep 57%
// of the skips are of 2 or 3, 15% of 8 or more, which are two thirds of
// the intervals skipped): the ones of b that end by an interval of a's
// start are skipped by three halvings of the next 8 (skipFew) when the
// eighth ends after it, else by galloping from the ninth (skipEnded).
// Both find the first interval from j on that ends after the start (b's
// ends increase): the index the skip one by one reached, so the sum is
// the same. That skip cost ≈ 11 instructions an interval skipped (two
// bounds tests and the count to 8); skipFew costs ≈ 16 whatever it skips.
func lengthMinus(a, b []interval) engine.Time {
	var total engine.Time
	// j never decreases from 0 (skipEnded returns at least its start,
	// skipFew at least 0), so where j+8 ≤ len(b) the next eight intervals
	// are b's: read through unsafe.Add, without the index's and the
	// slice-to-array conversion's bounds checks (the compiler cannot see
	// that j ≥ 0; 6 instructions of ≈ 68 an interval of a; lists48), and
	// so are the overlapping intervals from j on, up to len(b).
	bp := unsafe.Pointer(unsafe.SliceData(b))
	j := 0
	for _, x := range a {
		cur := x.a
		if j+8 <= len(b) {
			r := (*[8]interval)(unsafe.Add(bp, uintptr(j)*unsafe.Sizeof(interval{})))
			if r[7].b <= cur {
				j = skipEnded(b, j+8, cur)
			} else {
				j += skipFew(r, cur)
			}
		} else {
			for j < len(b) && b[j].b <= cur {
				j++
			}
		}
		for k := j; k < len(b); k++ {
			y := (*interval)(unsafe.Add(bp, uintptr(k)*unsafe.Sizeof(interval{}))) // (0 ≤ j ≤ k)
			if y.a >= x.b {
				break
			}
			if y.a > cur {
				total += y.a - cur
			}
			cur = max(cur, y.b)
		}
		if cur < x.b {
			total += x.b - cur
		}
	}
	return total
}

// skipFew returns how many of r's intervals (ends increasing) end by t,
// given that r[7] ends after t (0 to 7): three halvings with no loop
// and no bounds test (the indices masked to the array), where a skip
// one by one tested each interval in turn.
func skipFew(r *[8]interval, t engine.Time) int {
	n := 0
	if r[3].b <= t {
		n = 4
	}
	if r[(n+1)&7].b <= t {
		n += 2
	}
	if r[n&7].b <= t {
		n++
	}
	return n
}

// skipEnded returns the first index from j on of an interval of b
// (merged: its ends increase) that ends after t, len(b) if none, given
// that b[j−1] ends by t: it gallops (j, j+1, j+3, j+7, …) to an interval
// that ends after t, then halves the range behind it.
func skipEnded(b []interval, j int, t engine.Time) int {
	lo, hi := j, len(b) // b[:lo] end by t; b[hi], if any, after t
	for step := 1; ; step <<= 1 {
		m := lo + step - 1
		if m >= len(b) {
			break
		}
		if b[m].b > t {
			hi = m
			break
		}
		lo = m + 1
	}
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if b[m].b > t {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}
