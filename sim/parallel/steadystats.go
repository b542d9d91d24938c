package parallel

import "github.com/simtrain/simtrain/sim/engine"

// Stats of a replicated step in O(played) (issue 18, design.md "Speed").
//
// After Replicate, the full step's tasks are, on the simulated clock: A,
// the played tasks before the replicated unit (as played); U_0 … U_E, the
// replicated unit [a, b) shifted by j periods (U_0 the played one, E the
// unplayed copies); and B, the suffix shifted by E periods. When every
// interval Stats draws from U_0 and B moves with the shift (a wait for the
// host thread that starts at the end of a dependency before the window
// does not: then this is not used), the figures are those of the same
// step with any K ≤ E copies plus E − K periods of what lies in one window
// [τ, τ+P) where only the U_j reach:
//
//   - τ ≥ the last end in A, and ≥ U_0's last end − P (no U_j with j < 0
//     there);
//   - τ+P ≤ B's first time shifted by K periods, and ≤ U_0's first time
//     shifted by K+1 (no U_j with j > K there).
//
// Then the step with E copies equals the one with K copies before τ+P, the
// one with K copies shifted by E−K periods from τ+(E−K)·P on, and in
// between repeats the window E−K times (nothing else reaches it), so every
// length Stats measures (compute, exposed communication per kind, the
// covered time) is the K-copy step's plus E−K times the window's, and the
// sums per task (compute, host stalls and issue, host-bound waits) are
// U_0's per copy. K is the least that leaves room for the window, so
// Stats walks the played tasks and about as many copies as a unit's tasks
// span periods, not all E: the 128-micro-batch points of the 70B sweep
// walked ~100 copies per stage. TestStatsPeriodicEqualsWalk and the
// steady-state tests (every copy walked, or the full play) check it.

// statsPeriodic returns instance i's Stats and true when they were
// measured as above; else (an interval does not move with the shift, or
// the copies are too few for the window) every copy is walked, and false.
// The prefix A is walked first, as the walk of either kind begins, and
// its last ends read from that walk (walker.copyEnd for the copy
// engine's transfers); the walk then goes on with the copies it needs.
func (x *Executor) statsPeriodic(i int) (Stats, bool) {
	in := &x.inst[i]
	p, state, r, hot := in.prog, in.state, x.rep[i], x.hotTasks(i)
	n, period, extra := int32(len(p.Tasks)), r.period, r.extra
	const inf = engine.Time(1<<62 - 1)
	uLo, uHi, bLo := inf, engine.Time(-1), inf
	var endSh engine.Time
	var unit Stats // one copy's sums
	hosted, win := p.Hosted, r.win
	// The wait for the issue is [ready, issued): it moves with the shift
	// only when its latest dependency does. rel is that dependency's end.
	relOf := func(t int32) (rel engine.Time, ok bool) {
		var abs engine.Time
		for _, d := range p.deps[p.depOff[t]:p.depOff[t+1]] { // Deps(t)
			if d >= win {
				rel, ok = max(rel, state[d].End()), true
			} else {
				abs = max(abs, state[d].End())
			}
		}
		return rel, ok && rel >= abs
	}
	// the unit, U_0: its extent and one copy's sums
	for t := r.a; t < r.b; t++ {
		task := &hot[t] // p.Tasks[t]'s kind, stream and issue
		s, e := state[t].Start(), state[t].End()
		lo := s
		if hosted && task.kind != KindRecv {
			unit.HostIssue += task.issue
			if task.stream == StreamCompute {
				rel, ok := relOf(t)
				if !ok {
					return x.statsWalk(i, extra, nil, false), false
				}
				lo = min(lo, rel)
				if is := state[t].Issued(); is > rel {
					unit.HostBound += is - rel
				}
			}
		}
		if task.kind != KindHostCopy {
			endSh = max(endSh, e)
		}
		uLo, uHi = min(uLo, lo), max(uHi, e)
		if e > s {
			switch {
			case task.kind.IsComm(), task.kind == KindHostCopy:
			case task.kind.IsCompute():
				unit.Compute += e - s
			default:
				unit.Host += e - s
			}
		}
	}
	// the suffix B: its first time
	for t := r.b; t < n; t++ {
		task := &hot[t]
		s, e := state[t].Start(), state[t].End()
		lo := s
		if hosted && task.kind != KindRecv && task.stream == StreamCompute {
			rel, ok := relOf(t)
			if !ok {
				return x.statsWalk(i, extra, nil, false), false
			}
			lo = min(lo, rel)
		}
		if task.kind != KindHostCopy {
			endSh = max(endSh, e)
		}
		bLo = min(bLo, lo)
	}
	if uHi < 0 || period <= 0 {
		return x.statsWalk(i, extra, nil, false), false
	}
	wk := x.newWalker(i, false, true)
	wk.walk(0, r.a, 0)       // A: the walk's first tasks either way
	endA, ok := wk.lastEnd() // A's last end as Stats counts it
	if !ok {
		return x.statsWalk(i, extra, nil, false), false
	}
	aHi := max(endA, wk.copyEnd)
	tau := max(aHi, uHi-period)
	k := max(0, periodsUntil(tau+period-bLo, period), periodsUntil(tau-uLo, period))
	if k >= extra {
		// as many copies as the walk: walk them, on from A
		x.walkFrom(&wk, i, r.a, extra)
		if st, ok := x.measure(&wk, nil); ok {
			st.HostIssue = x.hostIssueSum(i) + engine.Time(extra)*unit.HostIssue
			return st, false
		}
		return x.statsWalk(i, extra, nil, false), false
	}
	w := windowMeasure{lo: tau, hi: tau + period}
	x.walkFrom(&wk, i, r.a, k)
	st, ok := x.measure(&wk, &w)
	if !ok {
		st = x.statsWalk(i, k, &w, false)
	}
	more := engine.Time(extra - k)
	if st.End != max(endA, endSh+engine.Time(k)*period) {
		// not the step this reasoning describes
		return x.statsWalk(i, extra, nil, false), false
	}
	covered := st.End - st.Idle + more*w.covered
	st.End = max(endA, endSh+engine.Time(extra)*period)
	st.Compute += more * unit.Compute
	st.Host += more * unit.Host
	st.HostIssue = x.hostIssueSum(i) + engine.Time(extra)*unit.HostIssue // the walk leaves it (hostIssueSum)
	st.HostBound += more * unit.HostBound
	for c := range st.Exposed {
		st.Exposed[c] += more * w.exposed[c]
	}
	st.Idle = st.End - covered
	return st, true
}

// periodsUntil is ⌈d/p⌉ for p > 0 (d of any sign), the periods that cover d.
func periodsUntil(d, p engine.Time) int {
	q := d / p // rounds toward zero: up for d < 0
	if d%p > 0 {
		q++
	}
	return int(q)
}

// PeriodStats reports whether instance i's Stats are measured on one
// period (statsPeriodic) rather than by walking every copy of its unit.
func (x *Executor) PeriodStats(i int) bool {
	if x.rep == nil {
		return false
	}
	_, ok := x.statsPeriodic(i)
	return ok
}
