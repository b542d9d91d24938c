package parallel

import (
	"slices"

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
	comp  []interval
	comm  [NumExposed][]interval
	both  []interval    // compute's and tensor parallelism's (walker.both)
	union [2][]interval // unionLength's
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
		if st, ok := x.statsPeriodic(i); ok {
			return st
		}
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
	in := &x.inst[i]
	p, state, hosted := in.prog, in.state, in.prog.Hosted
	x.hotTasks(i)
	if x.scratch == nil {
		x.scratch = new(statsScratch)
	}
	sc := x.scratch
	// Tensor parallelism's intervals go to the joint list only (walker.
	// joint), unless it comes out of order (never on the 70B sweep's 2,670
	// instances with tensor parallelism) or with scan (StatsEveryWait, the
	// reference, measures from the separate lists): then the tasks are
	// walked again into separate lists.
	joint := !scan
again:
	wk := walker{p: p, hot: in.hot, state: state, hosted: hosted, scan: scan, joint: joint, comp: sc.comp[:0], both: sc.both[:0]}
	for k := range wk.comm {
		wk.comm[k] = sc.comm[k][:0]
	}
	// The played tasks in segments, each shifted: with replication
	// (Replicate) the tasks up to the last played unit as played, that
	// unit's copies a period later each, then the suffix after them.
	type segment struct {
		lo, hi int32
		shift  engine.Time
	}
	segs := [3]segment{{0, int32(len(p.Tasks)), 0}}
	nseg := 1
	if x.rep != nil {
		r := x.rep[i]
		segs[0].hi, wk.win = r.b, r.win
		segs[1] = segment{r.a, r.b, 0} // repeated r.extra times
		segs[2] = segment{r.b, int32(len(p.Tasks)), engine.Time(extra) * r.period}
		nseg = 3
	}
	for sg := 0; sg < nseg; sg++ {
		copies := 1
		if sg == 1 {
			copies = extra
		}
		for c := 1; c <= copies; c++ {
			seg := segs[sg]
			if sg == 1 {
				seg.shift = engine.Time(c) * x.rep[i].period
			}
			wk.walk(seg.lo, seg.hi, seg.shift)
		}
	}
	if joint && wk.tp && wk.unsorted[1+NumExposed] {
		sc.comp, sc.comm, sc.both = wk.comp, wk.comm, wk.both
		joint = false
		goto again
	}
	st, comp, comm := wk.st, wk.comp, wk.comm
	if wk.unsorted[0] {
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
		lists[0] = wk.both
		// |T \ C| = |C ∪ T| − |C|, both lists merged
		st.Exposed[0] = lengthOf(wk.both) - lengthOf(comp)
	}
	for k := range comm {
		if wk.unsorted[1+k] {
			comm[k] = mergeIntervals(comm[k])
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
			kw = clipIntervals(kw[:0], wk.both, w.lo, w.hi)
			w.exposed[0] = lengthOf(kw) - lengthOf(cw)
		}
		w.covered = inWindow
		sc.clipComp, sc.clipComm = cw, kw
	}
	sc.comp, sc.comm, sc.both = comp, comm, wk.both
	return st
}

// unionLength is the length of the union of the lists (each merged), and
// of its part inside [lo, hi). The lists are merged in order, each union
// written into buf (alternately), but the last, which is only measured:
// with compute and one kind of communication, nothing is written. (Taken
// shortest first, the unions were longer: compute and tensor-parallel
// communication, the longest lists, mostly merge into few runs.)
func unionLength(lists [][]interval, buf *[2][]interval, lo, hi engine.Time) (total, inside engine.Time) {
	var acc []interval
	if len(lists) > 0 {
		acc = lists[0]
	}
	for j := 1; j < len(lists)-1; j++ {
		buf[j%2] = unionIntervals(buf[j%2][:0], acc, lists[j])
		acc = buf[j%2]
	}
	var last []interval
	if len(lists) > 1 {
		last = lists[len(lists)-1]
	}
	// the union of acc and last, run by run
	var cur interval
	open := false
	i, j := 0, 0
	for i < len(acc) || j < len(last) {
		var x interval
		if j >= len(last) || (i < len(acc) && acc[i].a <= last[j].a) {
			x = acc[i]
			i++
		} else {
			x = last[j]
			j++
		}
		if open && x.a <= cur.b {
			cur.b = max(cur.b, x.b)
			continue
		}
		if open {
			total += cur.b - cur.a
			inside += max(0, min(cur.b, hi)-max(cur.a, lo))
		}
		cur, open = x, true
	}
	if open {
		total += cur.b - cur.a
		inside += max(0, min(cur.b, hi)-max(cur.a, lo))
	}
	return total, inside
}

// unionIntervals appends to dst the union of a and b (each merged), merged.
func unionIntervals(dst, a, b []interval) []interval {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		var x interval
		if j >= len(b) || (i < len(a) && a[i].a <= b[j].a) {
			x = a[i]
			i++
		} else {
			x = b[j]
			j++
		}
		if n := len(dst); n > 0 && x.a <= dst[n-1].b {
			dst[n-1].b = max(dst[n-1].b, x.b)
			continue
		}
		dst = append(dst, x)
	}
	return dst
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
func clipIntervals(dst, v []interval, lo, hi engine.Time) []interval {
	for _, x := range v {
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
	comp   []interval
	comm   [NumExposed][]interval
	// both is compute's list and tensor parallelism's in one: their
	// tasks alternate in time and in program order (a layer's collective
	// waits for its GEMM, the next GEMM for it), so the walk mostly
	// widens its last interval, and the covered time need not merge the
	// two longest lists (unionLength) unless it went out of order. With
	// joint, tensor parallelism's intervals go there only (comm[0] stays
	// empty) and tp says there were some.
	both      []interval
	joint, tp bool
	// unsorted says a list got an interval that starts before its last
	// one (addInterval); the others are merged already: compute's, each
	// kind's, both's
	unsorted [2 + NumExposed]bool
}

// walk adds tasks [lo, hi), their times shifted by shift (and their
// dependencies' too, those from win on), to the sums and interval lists.
// The sums and lists live in locals for the loop.
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
func (w *walker) walk(lo, hi int32, shift engine.Time) {
	p, hot, state, win := w.p, w.hot[lo:hi], w.state[lo:hi], w.win
	hosted, read := w.hosted, w.scan || shift != 0
	end, compute, host := w.st.End, w.st.Compute, w.st.Host
	hostIssue, hostBound := w.st.HostIssue, w.st.HostBound
	comp, comm, both, unsorted := w.comp, w.comm, w.both, w.unsorted
	joint, tp := w.joint, w.tp
	const bothAt = 1 + NumExposed
	for j := range hot {
		t, s := &hot[j], &state[j] // p.Tasks[i]'s fields, on a quarter of the cache lines
		// s.Start() without its branch: every task played has started
		// (start > 0); one that has not reads -1 as there
		start, e := max(s.start, 0)-1+shift, s.End()+shift
		if t.kind != KindHostCopy {
			// a copy nobody waits for (the states' offload after the
			// optimizer step) runs under the next step's forward
			end = max(end, e)
		}
		if hosted && t.kind != KindRecv {
			issued := s.Issued() + shift
			hostIssue += t.issue
			if t.stream == StreamCompute && (read || start <= issued) {
				var ready engine.Time
				for _, d := range p.Deps(int(lo) + j) {
					de := w.state[d].End()
					if d >= win {
						de += shift
					}
					ready = max(ready, de)
				}
				if issued > ready {
					addInterval(&comp, interval{ready, issued}, &unsorted[0])
					addInterval(&both, interval{ready, issued}, &unsorted[bothAt])
					hostBound += issued - ready
				}
			}
		}
		if e <= start {
			continue
		}
		switch {
		case t.kind.IsComm():
			k := ExposedOf[t.group]
			if k == 0 {
				addInterval(&both, interval{start, e}, &unsorted[bothAt])
				if joint {
					tp = true
					continue
				}
			}
			addInterval(&comm[k], interval{start, e}, &unsorted[1+k])
		case t.kind.IsCompute():
			addInterval(&comp, interval{start, e}, &unsorted[0])
			addInterval(&both, interval{start, e}, &unsorted[bothAt])
			compute += e - start
		case t.kind == KindHostCopy:
			// a copy engine's transfer: what the compute stream waits
			// for it shows as idle time
		default:
			// A host stall holds the compute stream: communication
			// under it is not what the rank waits for, and it is not
			// pipeline bubble.
			addInterval(&comp, interval{start, e}, &unsorted[0])
			addInterval(&both, interval{start, e}, &unsorted[bothAt])
			host += e - start
		}
	}
	w.st.End, w.st.Compute, w.st.Host = end, compute, host
	w.st.HostIssue, w.st.HostBound = hostIssue, hostBound
	w.comp, w.comm, w.both, w.unsorted, w.tp = comp, comm, both, unsorted, tp
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

// addInterval is appendInterval that also sets *unsorted when x starts
// before v's last interval. Without that, each interval it appends starts
// after the last one ends (else it widens that one), so v stays sorted and
// merged: what mergeIntervals would make of it, which it then need not.
func addInterval(v *[]interval, x interval, unsorted *bool) {
	if n := len(*v); n > 0 && x.a <= (*v)[n-1].b {
		if x.a >= (*v)[n-1].a {
			(*v)[n-1].b = max((*v)[n-1].b, x.b)
			return
		}
		*unsorted = true
	}
	*v = append(*v, x)
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

// lengthOf returns the length of v (merged).
func lengthOf(v []interval) engine.Time {
	var total engine.Time
	for _, x := range v {
		total += x.b - x.a
	}
	return total
}

// lengthMinus returns the length of a \ b (both merged).
func lengthMinus(a, b []interval) engine.Time {
	var total engine.Time
	j := 0
	for _, x := range a {
		cur := x.a
		for j < len(b) && b[j].b <= cur {
			j++
		}
		k := j
		for k < len(b) && b[k].a < x.b {
			if b[k].a > cur {
				total += b[k].a - cur
			}
			cur = max(cur, b[k].b)
			k++
		}
		if cur < x.b {
			total += x.b - cur
		}
	}
	return total
}
