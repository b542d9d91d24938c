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

// statsPeriodic returns instance i's Stats measured as above, or false
// when an interval does not move with the shift or the copies are too few
// for the window (the caller walks every copy).
func (x *Executor) statsPeriodic(i int) (Stats, bool) {
	in := &x.inst[i]
	p, state, r, hot := in.prog, in.state, x.rep[i], x.hotTasks(i)
	n, period, extra := int32(len(p.Tasks)), r.period, r.extra
	aHi, endA := prefixEnds(hot[:r.a], state[:r.a])
	const inf = engine.Time(1<<62 - 1)
	uLo, uHi, bLo := inf, engine.Time(-1), inf
	var endSh engine.Time
	var unit Stats // one copy's sums
	for t := r.a; t < n; t++ {
		task := &hot[t] // p.Tasks[t]'s kind, stream and issue
		s, e := state[t].Start(), state[t].End()
		lo := s
		if p.Hosted && task.kind != KindRecv && task.stream == StreamCompute {
			// The wait for the issue is [ready, issued): it moves with
			// the shift only when its latest dependency does.
			var rel, abs engine.Time
			hasRel := false
			for _, d := range p.Deps(int(t)) {
				if d >= r.win {
					rel, hasRel = max(rel, state[d].End()), true
				} else {
					abs = max(abs, state[d].End())
				}
			}
			if !hasRel || rel < abs {
				return Stats{}, false
			}
			lo = min(lo, rel)
			if t < r.b {
				unit.HostIssue += task.issue
				if is := state[t].Issued(); is > rel {
					unit.HostBound += is - rel
				}
			}
		} else if p.Hosted && task.kind != KindRecv && t < r.b {
			unit.HostIssue += task.issue
		}
		if task.kind != KindHostCopy {
			endSh = max(endSh, e)
		}
		if t >= r.b {
			bLo = min(bLo, lo)
			continue
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
	if uHi < 0 || period <= 0 {
		return Stats{}, false
	}
	tau := max(aHi, uHi-period)
	k := max(0, periodsUntil(tau+period-bLo, period), periodsUntil(tau-uLo, period))
	if k >= extra {
		return Stats{}, false // as many copies as the walk: walk them
	}
	w := windowMeasure{lo: tau, hi: tau + period}
	st := x.statsWalk(i, k, &w, false)
	more := engine.Time(extra - k)
	if st.End != max(endA, endSh+engine.Time(k)*period) {
		return Stats{}, false // not the step this reasoning describes
	}
	covered := st.End - st.Idle + more*w.covered
	st.End = max(endA, endSh+engine.Time(extra)*period)
	st.Compute += more * unit.Compute
	st.Host += more * unit.Host
	st.HostIssue += more * unit.HostIssue
	st.HostBound += more * unit.HostBound
	for c := range st.Exposed {
		st.Exposed[c] += more * w.exposed[c]
	}
	st.Idle = st.End - covered
	return st, true
}

// prefixEnds returns the latest end of the tasks, hot and state (the
// same tasks' records), and of those that are not a copy engine's
// transfer (KindHostCopy), each at least 0: the prefix A's last time and
// its last end as Stats counts it (statsPeriodic). One pass on the
// stored ends (plus one), without End's subtraction per task or a bounds
// check, and not inlined: in statsPeriodic's body its loop kept its
// values on the stack (15 M instructions on the 70B sweep, 10 here).
//
//go:noinline
func prefixEnds(hot []hotTask, state []taskState) (all, notCopy engine.Time) {
	state = state[:len(hot)]
	all, notCopy = 1, 1 // 0, stored plus one
	for j := range hot {
		e := state[j].end
		if hot[j].kind == KindHostCopy { // (rare: a branch, one maximum per task)
			all = max(all, e)
			continue
		}
		notCopy = max(notCopy, e)
	}
	return max(all, notCopy) - 1, notCopy - 1
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
