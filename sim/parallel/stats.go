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
	comp, union, tmp []interval
	comm             [NumExposed][]interval
	// the window's (statsPeriodic)
	clipComp, clipComm []interval
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
	return x.statsWalk(i, extra, nil)
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
// [w.lo, w.hi).
func (x *Executor) statsWalk(i, extra int, w *windowMeasure) Stats {
	in := &x.inst[i]
	p, state, hosted := in.prog, in.state, in.prog.Hosted
	if len(in.hot) != len(p.Tasks) { // an executor not made by NewSymmetric or NewFull (tests)
		in.hot = make([]hotTask, len(p.Tasks))
		fillHot(in.hot, nil, p)
	}
	if x.scratch == nil {
		x.scratch = new(statsScratch)
	}
	sc := x.scratch
	var st Stats
	comp := sc.comp[:0]
	var comm [NumExposed][]interval
	for k := range comm {
		comm[k] = sc.comm[k][:0]
	}
	// The played tasks in segments, each shifted: with replication
	// (Replicate) the tasks up to the last played unit as played, that
	// unit's copies a period later each, then the suffix after them.
	type segment struct {
		lo, hi int32
		shift  engine.Time
	}
	segs := [3]segment{{0, int32(len(p.Tasks)), 0}}
	nseg, win := 1, int32(0)
	if x.rep != nil {
		r := x.rep[i]
		segs[0].hi, win = r.b, r.win
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
			for t := seg.lo; t < seg.hi; t++ {
				statsTask(&st, p, in.hot, state, hosted, int(t), seg.shift, win, &comp, &comm)
			}
		}
	}
	comp = mergeIntervals(comp)
	union := append(sc.union[:0], comp...)
	tmp := sc.tmp
	for k := range comm {
		comm[k] = mergeIntervals(comm[k])
		if len(comm[k]) == 0 {
			continue // nothing exposed, the union unchanged (most runs use two or three kinds)
		}
		st.Exposed[k] = lengthMinus(comm[k], comp)
		tmp = unionIntervals(tmp[:0], union, comm[k])
		union, tmp = tmp, union
	}
	var covered engine.Time
	for _, v := range union {
		covered += v.b - v.a
	}
	st.Idle = st.End - covered
	if w != nil {
		cw := clipIntervals(sc.clipComp[:0], comp, w.lo, w.hi)
		kw := sc.clipComm
		for k := range comm {
			kw = clipIntervals(kw[:0], comm[k], w.lo, w.hi)
			w.exposed[k] = lengthMinus(kw, cw)
		}
		kw = clipIntervals(kw[:0], union, w.lo, w.hi)
		w.covered = lengthOf(kw)
		sc.clipComp, sc.clipComm = cw, kw
	}
	sc.comp, sc.union, sc.tmp, sc.comm = comp, union, tmp, comm
	return st
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

// lengthOf is the total length of v (merged).
func lengthOf(v []interval) engine.Time {
	var n engine.Time
	for _, x := range v {
		n += x.b - x.a
	}
	return n
}

// statsTask adds task i, its times shifted by shift (and its dependencies'
// too, those from win on), to st and the interval lists.
func statsTask(st *Stats, p *Program, hot []hotTask, state []taskState, hosted bool, i int, shift engine.Time, win int32,
	comp *[]interval, comm *[NumExposed][]interval) {
	t := &hot[i] // p.Tasks[i]'s fields, on a quarter of the cache lines
	start, end := state[i].Start()+shift, state[i].End()+shift
	if t.kind != KindHostCopy {
		// a copy nobody waits for (the states' offload after the
		// optimizer step) runs under the next step's forward
		st.End = max(st.End, end)
	}
	if hosted && t.kind != KindRecv {
		issued := state[i].Issued() + shift
		st.HostIssue += t.issue
		if t.stream == StreamCompute {
			var ready engine.Time
			for _, d := range p.Deps(i) {
				e := state[d].End()
				if d >= win {
					e += shift
				}
				ready = max(ready, e)
			}
			if issued > ready {
				appendInterval(comp, interval{ready, issued})
				st.HostBound += issued - ready
			}
		}
	}
	if end <= start {
		return
	}
	switch {
	case t.kind.IsComm():
		k := ExposedOf[t.group]
		appendInterval(&comm[k], interval{start, end})
	case t.kind.IsCompute():
		appendInterval(comp, interval{start, end})
		st.Compute += end - start
	case t.kind == KindHostCopy:
		// a copy engine's transfer: what the compute stream waits
		// for it shows as idle time
	default:
		// A host stall holds the compute stream: communication
		// under it is not what the rank waits for, and it is not
		// pipeline bubble.
		appendInterval(comp, interval{start, end})
		st.Host += end - start
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

// mergeIntervals sorts v by start (unless it already is) and merges
// overlapping or touching intervals, in place.
func mergeIntervals(v []interval) []interval {
	if !slices.IsSortedFunc(v, compareIntervals) {
		slices.SortFunc(v, compareIntervals)
	}
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
