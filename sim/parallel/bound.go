package parallel

import "github.com/simtrain/simtrain/sim/engine"

// ComputeBound is a lower bound on the simulated time at which the programs'
// steps end, whatever the play: the most GPU computation any one program
// holds, at its priced durations. A rank runs its compute tasks one at a
// time (the executor keeps one running compute task per rank, and the
// builder orders them on the compute stream), and communication running
// beside a compute task only ever slows it (interference.go: its rate is at
// most the GPU's SMs), so a program's compute alone takes at least the sum
// of its tasks' Dur, and its last task cannot end before that.
//
// With st set (progs are a shortened build played as st plans), each
// stage's replicated unit counts once more for every copy the play
// replicates (Steady.Extra), so the bound is the full step's, not the
// played one's. Nil st: progs are the whole step.
//
// Why: a search for the best layouts (simtrain plan) needs the exact
// figures of the best few only; a layout whose computation alone exceeds
// the best step found so far cannot be among them and need not be played
// (sim/simulation Options.StepCutoffS).
func ComputeBound(progs []*Program, st *Steady) engine.Time {
	var most engine.Time
	for _, p := range progs {
		if p == nil {
			continue
		}
		sum := computeSum(p.Tasks)
		if st != nil && st.Extra > 0 && p.Stage < len(st.stages) {
			c := st.stages[p.Stage]
			if c.unit > 0 && c.end < len(p.entries) && c.end >= c.unit {
				unit := computeSum(p.Tasks[p.entries[c.end-c.unit]:p.entries[c.end]])
				sum = sum.Add(engine.Time(satMul(int64(unit), int64(st.Extra)))) // (unit ≥ 0, Extra > 0)
			}
		}
		most = max(most, sum)
	}
	return most
}

// computeSum is the sum of the compute tasks' Dur in tasks (negative ones
// as 0), saturated at engine.Forever.
func computeSum(tasks []Task) engine.Time {
	var sum engine.Time
	for i := range tasks {
		if t := &tasks[i]; t.Kind.IsCompute() && t.Dur > 0 {
			sum = sum.Add(t.Dur)
		}
	}
	return sum
}

// RunBefore is Run (or, resumed, RunResumed) that gives up once the clock
// passes deadline with the step's computation unfinished: some rank's last
// compute task has not ended by then, so the step ends after deadline. It
// then returns false with the play left where it stopped (its figures are
// not to be read; the executor's storage is set again by the next play).
// Otherwise it plays on to the end, exactly as Run: the engine keeps the
// order of events across a pause (engine.RunUntil). Only symmetric mode
// gives up; an every-rank play plays whole.
//
// Why: a search for the best layouts needs the exact figures of the best
// few only (sim/simulation Options.StepCutoffS); a layout whose step
// outlasts the best found so far is ruled out at the cutoff instead of
// played to its end.
func (x *Executor) RunBefore(deadline engine.Time, resumed bool) (ended bool, err error) {
	if !resumed {
		x.begin()
		x.armSkip()
	}
	if x.full == nil {
		x.eng.RunUntil(deadline)
		if x.eng.Err() == nil && x.interrupted == nil && x.computeLeft() {
			return false, nil
		}
	}
	x.eng.Run()
	x.settle()
	return true, x.ended()
}

// computeLeft reports whether some instance's last compute task has not
// ended (symmetric mode). Compute tasks run one at a time in program order
// on the compute stream, so the last one ends last; a record past the host
// thread (lazy state: symBuffers) is not read, its task not yet issued.
func (x *Executor) computeLeft() bool {
	for i := range x.inst {
		in := &x.inst[i]
		tasks := in.prog.Tasks
		last := len(tasks) - 1
		for last >= 0 && !tasks[last].Kind.IsCompute() {
			last--
		}
		if last < 0 {
			continue
		}
		if x.lazy && in.prog.Hosted && last >= int(in.hostNext) {
			return true
		}
		if in.state[last].end == 0 {
			return true
		}
	}
	return false
}
