package parallel

import (
	"slices"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
)

// Steady-state replication (issue 18). In a pipeline schedule the
// micro-batches between the warm-up and the cool-down repeat one pattern:
// each stage's order is a prefix, a unit of entries repeated once per
// micro-batch (1F1B: one forward and one backward) and a suffix, and once
// the pipeline is full every unit's tasks run exactly one period after the
// previous unit's. A step of M micro-batches is then played as one of
// M' < M: PlanSteady checks that the schedule's order for M is the order for
// M' with M − M' more copies of one unit (the last before a tail unit, which
// runs beside the cool-down and is played with the suffix), the programs are
// built and played for M', and Executor.Replicate checks, per task and
// exactly in integer nanoseconds, that the units up to that one repeat
// (start, end and engine events one period after the unit before, over as
// many units as a unit's tasks reach back through their dependencies, plus
// one), and walks the host thread over the units not played, launch queue
// included (hostRepeats). The units not
// played are then that unit shifted by one period more each, and the suffix
// is shifted by all of them: Stats and ExtraEvents give the figures of the
// full play arithmetically. When a check fails (a host thread falling behind a little
// more each micro-batch, a transient that has not settled) the caller plays
// the full step. TestSteadyMatchesFull compares both plays' figures on every
// bundled, validation and holdout scenario.

// Steady is a plan to play a step of StepConfig.Microbatches as one of
// Played (PlanSteady).
type Steady struct {
	Played int // micro-batches built and played
	Extra  int // copies of each stage's replicated unit not played
	// Last says the caller will not ask Settle after this play fails (its
	// last shortened play): RunSteady may then fail it on the first
	// stage's units alone, before the other stages have played theirs.
	Last   bool
	g      int // micro-batches per unit
	stages []steadyStage
}

// steadyStage is one stage's cut of the played order: entries [0, end) hold
// the prefix and the units, the replicated unit is entries [end−unit, end),
// and the suffix (the tail unit included) is entries [end, len(order)).
type steadyStage struct{ end, unit, common int }

// steadyMinExtra is the fewest unplayed micro-batches worth replicating.
const steadyMinExtra = 2

// steadyTail is how many units before the suffix are not replicated but
// played as part of it (PlanSteady).
const steadyTail = 1

// PlanSteady returns how to play cfg's step with pp + margin + steadyTail
// micro-batches (margin: the units the pipeline gets to settle and the
// checked ones), or false when it cannot be replicated (one step only; no
// schedule entry that overlaps two passes; a schedule whose order does not
// grow by copies of one unit; not enough micro-batches for a gain).
func PlanSteady(cfg *StepConfig, margin int) (Steady, bool) {
	return planSteady(cfg, margin, 0)
}

// PlanSteadyPairs is PlanSteady with units of two micro-batches, for a
// schedule whose unit is one (not interleaved): a pipeline whose period
// alternates between two values repeats exactly in units of two, which
// Replicate then checks (and a settled one too, over a window twice as
// long). It plays pp + margin + 2·steadyTail micro-batches, or one more
// where the step's count needs it to be a whole number of units longer.
// Each stage's cut moves back by whole units, when its last unit would
// receive from a neighbour's suffix, until none does (alignPairs).
//
// Why (issue 18, round 56): with the persistent-GEMM waves a GEMM loses a
// wave when a communication kernel overlaps it, and on some layouts that
// overlap comes and goes every other micro-batch: the 70B sweep's points
// 924 and 964 (tp 16, pp 8 and 16) alternate between two periods from
// their first units on and were played whole after two failed shortened
// plays; in pairs they replicate on the second (5.8 → 4.0 and 13.5 → 5.3
// ms of thread CPU, the least of four runs each; played whole at once
// they take 4.1 and 9.1).
func PlanSteadyPairs(cfg *StepConfig, margin int) (Steady, bool) {
	return planSteady(cfg, margin, 2)
}

// PlanSteadyUnits is PlanSteadyPairs with units of g micro-batches (g ≥ 2):
// a pipeline that settles into a cycle of g micro-batches (periods that
// repeat every g: Executor.Cycle) repeats exactly in units of g. It plays
// pp + margin + g·steadyTail micro-batches, more where the step's count
// needs it to be a whole number of units longer.
//
// Why (issue 18, round 63): on plan's Llama 3 8B at 128 tokens on 64 GPUs,
// steps of 8,192–32,768 micro-batches settled into cycles of 2, 3 and 8
// micro-batches (tp 2 pp 8; tp 4 pp 16; tp 4 pp 8) and were played whole.
func PlanSteadyUnits(cfg *StepConfig, margin, g int) (Steady, bool) {
	if g < 2 {
		return Steady{}, false
	}
	return planSteady(cfg, margin, g)
}

// planSteady is PlanSteady (units 0) and PlanSteadyUnits (units ≥ 2).
func planSteady(cfg *StepConfig, margin, units int) (Steady, bool) {
	pairs := units >= 2 // (units of several micro-batches: their cuts aligned as pairs' are)
	played, g, ok := steadyCount(cfg, margin, units)
	if !ok {
		return Steady{}, false
	}
	sched := pipeline.Of(cfg.Schedule)
	pp, m := cfg.Layout.PP, cfg.Microbatches
	virtual := max(cfg.Virtual, 1)
	shape := func(n int) pipeline.Shape { return pipeline.Shape{Stages: pp, Microbatches: n, Virtual: virtual} }
	st := Steady{Played: played, Extra: (m - played) / g, g: g, stages: make([]steadyStage, pp)}
	var last []int // (indexed by chunk: lastBackwards)
	for s := 0; s < pp; s++ {
		// The orders from the arena (its kept ones, shared with the
		// builds of the played and the full step; read only here).
		o1, o2 := cfg.Arena.order(sched, shape(played), s), cfg.Arena.order(sched, shape(played+g), s)
		u := len(o2) - len(o1)
		if u <= 0 {
			return Steady{}, false
		}
		end := 0
		for end < len(o1) && o1[end] == o2[end] {
			end++
		}
		if end < u || !shifted(o2[end:end+u], o1[end-u:end], g) || !shifted(o2[end+u:], o1[end:], g) {
			return Steady{}, false
		}
		// The last backward of each chunk issues the gradient reduction:
		// keep it in the suffix, which is played once.
		if last, ok = lastBackwards(o1, last[:0]); !ok {
			return Steady{}, false
		}
		for moved := true; moved && end >= u; {
			moved = false
			for _, i := range last {
				if i >= end-u && i < end {
					moved = true
				}
			}
			if moved {
				end -= u
			}
		}
		// The last units played run beside the suffix (its sends and
		// receives, which slow compute while in flight, doc.go), where
		// the full step runs further units: they are played as part of
		// the suffix, and the copies are of a unit before them.
		end -= steadyTail * u
		if end < u {
			return Steady{}, false
		}
		st.stages[s] = steadyStage{end: end, unit: u}
		if pairs {
			continue // checked below, once the cuts are aligned
		}
		if st.stages[s].common, ok = checkFull(cfg.Arena.order(sched, shape(m), s), o1, end, u, g, st.Extra, last); !ok {
			return Steady{}, false
		}
	}
	if pairs {
		o := func(s int) []pipeline.Step { return cfg.Arena.order(sched, shape(played), s) }
		if !alignPairs(o, st.stages) {
			return Steady{}, false
		}
		for s := range st.stages {
			o1 := o(s)
			last, _ = lastBackwards(o1, last[:0])
			c := &st.stages[s]
			if c.common, ok = checkFull(cfg.Arena.order(sched, shape(m), s), o1, c.end, c.unit, g, st.Extra, last); !ok {
				return Steady{}, false
			}
		}
	}
	return st, true
}

// lastBackwards returns, per chunk, the index in o of the chunk's last
// backward (or weight-gradient) entry, -1 for a chunk with none, in last's
// storage; false when an entry overlaps two passes.
func lastBackwards(o []pipeline.Step, last []int) ([]int, bool) {
	for i, e := range o {
		if e.Overlap {
			return last, false
		}
		if e.Phase == pipeline.PhaseB || e.Phase == pipeline.PhaseW {
			for len(last) <= e.Chunk {
				last = append(last, -1)
			}
			last[e.Chunk] = i
		}
	}
	return last, true
}

// checkFull checks that full, the step's order, is played (the played
// step's order) with extra more copies of its unit [end−u, end), each g
// micro-batches on, and returns common: the entries the played and the
// full order share before the played step's first last backward (last:
// lastBackwards; whose gradient reductions the full step issues later),
// Fork's prefix.
func checkFull(full, played []pipeline.Step, end, u, g, extra int, last []int) (common int, ok bool) {
	if len(full) != len(played)+extra*u {
		return 0, false
	}
	for i := range full {
		var want pipeline.Step
		switch c := (i - end) / u; {
		case i < end:
			want = played[i]
		case c < extra:
			want = played[end-u+(i-end)%u]
			want.Microbatch += (c + 1) * g
		default:
			want = played[i-extra*u]
			want.Microbatch += extra * g
		}
		if full[i] != want {
			return 0, false
		}
	}
	for common < len(played) && played[common] == full[common] {
		common++
	}
	for _, i := range last {
		if i >= 0 {
			common = min(common, i)
		}
	}
	return common, true
}

// alignPairs moves stages' cuts (order(s): stage s's played order) back by
// whole units until no stage's last unit holds a forward whose activation
// comes from the stage before, or a backward whose gradient comes from the
// stage after, that the sending stage plays in its suffix: Replicate's
// structure check refuses such a unit ("receive from a suffix"). Cuts of
// one-micro-batch units meet this as the schedule cuts them; with units of
// two, the last stage's cut, moved back a whole unit for its last
// backward, leaves in its suffix a backward whose gradient the stage
// before receives in its last unit (TestPlanSteadyPairs counts one case
// by hand). Cuts only move back, so this ends; false when one falls below
// its unit.
func alignPairs(order func(s int) []pipeline.Step, stages []steadyStage) bool {
	pp := len(stages)
	// at(s, e): e's index in stage s's order, -1 when absent (orders are
	// short: pp + margin micro-batches)
	at := func(s int, e pipeline.Step) int {
		for i, f := range order(s) {
			if f == e {
				return i
			}
		}
		return -1
	}
	for moved := true; moved; {
		moved = false
		for s := range stages {
			c := &stages[s]
			for _, e := range order(s)[c.end-c.unit : c.end] {
				peer := s - 1 // a forward's input comes from the stage before
				if e.Phase != pipeline.PhaseF {
					peer = s + 1 // a backward's from the stage after
				}
				if e.Phase == pipeline.PhaseW || peer < 0 || peer >= pp {
					continue // (a weight gradient receives nothing)
				}
				if i := at(peer, e); i >= stages[peer].end {
					c.end -= c.unit
					moved = true
					break
				}
			}
			if c.end < c.unit {
				return false
			}
		}
	}
	return true
}

// Unit is the micro-batches of st's replicated unit.
func (st Steady) Unit() int { return st.g }

// SteadyPlayed is the micro-batches PlanSteady(cfg, margin) would play
// (Steady.Played), from the schedule's shapes alone, or false where it
// refuses the step for its count (one step only; a count the schedule does
// not take; too few micro-batches for a gain); PlanSteady may still refuse
// one it accepts, for its orders. For a caller that decides on the count
// first (simulation's worthShortening): PlanSteady compares every stage's
// orders for the played, the one unit longer and the full step, ≈ 0.1 M
// instructions at pp 16 (issue 18, fail49).
func SteadyPlayed(cfg *StepConfig, margin int) (played int, ok bool) {
	played, _, ok = steadyCount(cfg, margin, 0)
	return played, ok
}

// steadyCount is PlanSteady's count: the micro-batches played, those of a
// unit (g: 1, or pp for a schedule that takes only multiples of pp,
// interleaved), and false where the schedule refuses the count. The unit
// is found by asking the schedule for played + 1 micro-batches, so where
// that is itself a multiple of pp (interleaved at pp 2, 4 and 8 and the
// sweep's margin of 6) g comes out 1 and the count is refused. That
// refusal is kept on purpose: an interleaved step whose count is accepted
// is refused by its programs as Lasting (a unit's receive matched in the
// peer's suffix across the chunk wrap), so the count only saves the
// shortened play that would fail (docs/design.md, round 55).
//
// With units ≥ 2 (PlanSteadyPairs, PlanSteadyUnits) the unit is that many
// micro-batches, the tail unit too, and played is more where m − played
// would not be a whole number of units; false for a schedule whose unit is
// not one micro-batch, or that has virtual stages.
func steadyCount(cfg *StepConfig, margin, units int) (played, g int, ok bool) {
	pairs := units >= 2
	if cfg.Steps > 1 || cfg.Layout == nil {
		return 0, 0, false
	}
	sched := pipeline.Of(cfg.Schedule)
	pp, m := cfg.Layout.PP, cfg.Microbatches
	virtual := max(cfg.Virtual, 1)
	shape := func(n int) pipeline.Shape { return pipeline.Shape{Stages: pp, Microbatches: n, Virtual: virtual} }
	g = 1
	played = pp + margin + steadyTail
	switch {
	case sched.Check(shape(played+1)) != nil:
		if pairs {
			return 0, 0, false
		}
		g = pp
		played = (played + pp - 1) / pp * pp
	case pairs && virtual > 1:
		return 0, 0, false // (its units cross the chunk wrap: alignPairs does not hold)
	case pairs:
		g = units
		played = pp + margin + steadyTail*g
		played += (m - played) % g
	}
	if m < played+steadyMinExtra || (m-played)%g != 0 ||
		sched.Check(shape(played)) != nil || sched.Check(shape(played+g)) != nil {
		return 0, 0, false
	}
	return played, g, true
}

// shifted reports whether a is b with every micro-batch g higher.
func shifted(a, b []pipeline.Step, g int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		e := b[i]
		e.Microbatch += g
		if a[i] != e {
			return false
		}
	}
	return true
}

// replica is one stage's replication, found by Replicate: the replicated
// unit is tasks [a, b); the window [win, b) are the units it reaches back
// to, every one a period after the one before; extra copies of the unit
// follow it, each one period later; the suffix (from b) follows them.
type replica struct {
	a, b, win int32
	extra     int
	period    engine.Time
}

// CountEvents makes the executor count the engine events of each task, for
// Replicate; call it before Run.
func (x *Executor) CountEvents() {
	x.eventsZero, x.eventsAt = true, x.eng.Executed()
	if a := x.instArena(); a != nil {
		a.eventBuffers(x.inst) // reuse.go
		return
	}
	for i := range x.inst {
		in := &x.inst[i]
		in.events = make([]int32, len(in.prog.Tasks))
		in.setCounted()
	}
}

// instArena returns the arena every instance's program was built in, nil
// when one was built without or in another.
func (x *Executor) instArena() *Arena {
	if len(x.inst) == 0 {
		return nil
	}
	a := x.inst[0].prog.arena
	for i := range x.inst {
		if x.inst[i].prog.arena != a {
			return nil
		}
	}
	return a
}

// RunSteady is Run for the programs built for st.Played micro-batches, with
// CountEvents, that stops early when the step will not replicate (issue
// 18): when the programs alone show it (Replicate's checks that read no
// time: a receive from the peer's suffix, too few or unequal units) it
// returns failed before playing anything (Completed 0; Settle has no
// estimate then, as after the whole play); else the play pauses once every stage's prefix and units (the tasks
// before its suffix) have ended, and when their times already show that
// Replicate(st) fails (replicate's early check: a unit that does not
// repeat one period after the one before) it returns failed, leaving the
// suffix unplayed; only Settle may be called then, which reads those
// units' starts and so estimates as after the whole play. Otherwise the
// play resumes where it paused (the engine's order is the same whether it
// pauses or not) and ends as Run's, and the caller calls Replicate. With
// fork set it first pauses where the first stage's tasks before its
// common prefix's last unit have ended and saves the play's state in fork
// when no task past a prefix has started (fork.go): a failed play is then
// resumed as the full step's (Resume) instead of thrown away. With st.Last
// (no Settle to follow), when the first stage's tasks before its suffix
// have all ended by then (on the 70B sweep's failed plays they always
// have: its cut is one unit before its common prefix's end), the early
// check of that stage runs there, and its refusal, which is the whole
// early check's (stages are checked in order), fails the play at the
// save: nothing after the saved state is played.
func (x *Executor) RunSteady(st Steady, fork *Fork) (failed bool, err error) {
	x.begin()
	failed, err = x.runSteady(st, fork)
	x.settle() // (a refusal of the programs returns before any pause)
	return failed, err
}

// RunSteadyResumed is RunSteady for a play Resume started from another
// shortened play's state.
func (x *Executor) RunSteadyResumed(st Steady, fork *Fork) (failed bool, err error) {
	failed, err = x.runSteady(st, fork)
	x.settle()
	return failed, err
}

func (x *Executor) runSteady(st Steady, fork *Fork) (failed bool, err error) {
	if fork != nil {
		fork.Clear()
	}
	ok := x.symmetric && len(st.stages) == len(x.inst)
	if ok {
		// The programs alone may refuse: then nothing is played.
		if _, _, why := x.structure(st); why != "" {
			x.refusal, x.unfit = why, true
			return true, nil
		}
	}
	running := func() bool { return x.done < x.total && x.eng.Err() == nil && x.interrupted == nil }
	if fork != nil && ok {
		// Pause before the first task past a common prefix can start
		// (Fork: the first stage's cool-down starts first) and save the
		// state there.
		if x.setWatch(func(s int) int {
			if s != 0 {
				return 0
			}
			return st.stages[s].common - forkBack*st.stages[s].unit
		}) {
			if x.watchLeft > 0 {
				x.eng.Run()
			}
			x.settle() // the state is read from here on
			if running() && x.watchLeft == 0 {
				fork.save(x, st)
				// The first stage's tasks before its suffix have
				// mostly ended here too: when all have, and its units
				// do not repeat, the play fails now (the early check
				// below refuses on the first stage first) instead of
				// playing the other stages' units to their ends.
				if st.Last && x.stageEnded(0, st.stages[x.inst[0].stage].end) {
					if x.refusal = x.replicateStages(st, true, 1); x.refusal != "" {
						x.clearWatch()
						return true, nil
					}
				}
			}
		}
	}
	if ok && running() && x.setWatch(func(s int) int { return st.stages[s].end }) {
		if x.watchLeft > 0 {
			x.eng.Run()
		}
		x.settle()
		if x.watchLeft == 0 && running() {
			x.clearWatch()
			if x.refusal = x.replicate(st, true); x.refusal != "" {
				return true, nil
			}
		}
	}
	x.clearWatch() // every watched task has ended, or the play is over
	if running() {
		x.eng.Run()
	}
	x.settle()
	return false, x.ended()
}

// stageEnded reports whether instance i's tasks before entry e have all
// ended (e inside its order, as setWatch watches).
func (x *Executor) stageEnded(i, e int) bool {
	in := &x.inst[i]
	if e <= 0 || e >= len(in.prog.entries)-1 {
		return false
	}
	for _, s := range in.state[:in.prog.entries[e]] {
		if s.end == 0 {
			return false
		}
	}
	return true
}

// Completed is how many tasks have ended so far (every instance's): after
// Run all of them, after a RunSteady that failed those played before it
// stopped.
func (x *Executor) Completed() int { return x.done }

// Replicate checks, after Run of the programs built for st.Played
// micro-batches with CountEvents, that the units of every stage up to the
// replicated one repeat exactly, and if so makes Stats and ExtraEvents report the
// step of st.Played + st.Extra·g micro-batches. It returns false (and
// changes nothing) when they do not: the caller then plays the full step.
// Times and Instance keep returning the played tasks.
func (x *Executor) Replicate(st Steady) bool {
	x.refusal = x.replicate(st, false)
	return x.refusal == ""
}

// Refusal is why the last Replicate, or RunSteady's early check, refused
// the play ("" when it did not): a constant phrase, for diagnostics.
func (x *Executor) Refusal() string { return x.refusal }

// replicate is Replicate, returning why it failed ("" when it did not).
// early checks only what the prefix's and the units' times show, once they
// have ended (RunSteady): every check it makes is one of Replicate's on
// values that playing on does not change (the tasks' starts, ends and
// issues), so when it fails Replicate fails on the whole play; the engine
// events a task counts, the host thread's walk and the suffix are left to
// Replicate, and x.rep is not set. When it passes it records so
// (steadyCheck.timed), and Replicate of the same plan after the same play
// checks only what it left: the events and the host thread (issue 18: each
// check made once per play).
func (x *Executor) replicate(st Steady, early bool) string {
	return x.replicateStages(st, early, len(x.inst))
}

// replicateStages is replicate checking the first n stages' times only
// (n < len(x.inst): early, RunSteady's check of the first stage at its
// save, whose refusal is the whole check's: it checks the stages in order).
func (x *Executor) replicateStages(st Steady, early bool, n int) string {
	reps, reach, why := x.structure(st)
	if x.unfit = why != ""; x.unfit {
		return why
	}
	c := &x.steady
	if early {
		c.timed = false
	} else if c.timedFor(x) {
		return x.replicateTimed(reps, reach)
	}
	var period engine.Time = -1
	for i := range x.inst[:n] {
		in := &x.inst[i]
		p, r := in.prog, &reps[i]
		u := r.b - r.a
		lo := r.b - int32(reach+2)*u
		if period < 0 {
			period = in.state[r.a].Start() - in.state[r.a-u].Start()
		}
		if period <= 0 {
			return "no period"
		}
		if !x.unitsRepeat(i, lo, r.a, u, period, reps, !early) {
			return "units do not repeat"
		}
		r.win = r.b - int32(reach+1)*u
		if p.Hosted && !early && !x.hostRepeats(i, r.a, r.b, r.win, period, r.extra) {
			return "host thread does not repeat"
		}
		r.period = period
		// Everything before the checked units ends before the window
		// starts: no task the copies lack runs beside them.
		first := engine.Time(-1)
		for t := r.win; t < r.b; t++ {
			if s := in.state[t].Start(); first < 0 || s < first {
				first = s
			}
		}
		if lo > 0 && latestEnd(in.state[:lo]) > first {
			return "a task before the checked units runs beside them"
		}
		// The suffix depends on the window and itself only (or on tasks
		// that ended before the window began): its tasks' dependencies
		// are one run of the program's list.
		if !endBefore(p.deps[p.depOff[r.b]:p.depOff[len(p.Tasks)]], in.state, r.win, first) {
			return "the suffix waits for a task before the window"
		}
	}
	if early && n < len(x.inst) {
		return "" // the other stages not checked yet
	}
	if early {
		// RunSteady watched every stage's tasks before its suffix to
		// their ends (setWatch watches an entry before the order's last):
		// the times checked are final.
		c.timed, c.total, c.resumed = c.watched, x.total, x.resumed
	} else {
		x.rep = slices.Clone(reps) // not the record's: a later check may move its windows
	}
	return ""
}

// latestEnd returns the latest End of the tasks of state (at least one): two
// maxima a turn, one test after the loop instead of one a task (the 70B
// sweep's checks pass over ≈ 0.7 M tasks before the checked units; issue
// 18, stats50).
func latestEnd(state []taskState) engine.Time {
	m0, m1 := state[0].end, state[0].end
	for len(state) >= 2 {
		m0, m1 = max(m0, state[0].end), max(m1, state[1].end)
		state = state[2:]
	}
	if len(state) > 0 {
		m0 = max(m0, state[0].end)
	}
	return max(m0, m1) - 1 // (end is stored plus one)
}

// endBefore reports whether each of deps before win ends by first.
func endBefore(deps []int32, state []taskState, win int32, first engine.Time) bool {
	for _, d := range deps {
		if d < win && state[d].End() > first {
			return false
		}
	}
	return true
}

// replicateTimed is Replicate after RunSteady's early check passed on this
// play (steadyCheck.timedFor): what that check left, in Replicate's order
// (per stage, the units' engine events, then the host thread). The early
// check set each replica's window and period, as Replicate's would.
func (x *Executor) replicateTimed(reps []replica, reach int) string {
	for i := range x.inst {
		in := &x.inst[i]
		r := &reps[i]
		u := r.b - r.a
		ev := in.events[r.b-int32(reach+2)*u : r.b]
		for k := range ev[:len(ev)-int(u)] {
			if ev[k] != ev[k+int(u)] {
				return "units do not repeat"
			}
		}
		if in.prog.Hosted && !x.hostRepeats(i, r.a, r.b, r.win, r.period, r.extra) {
			return "host thread does not repeat"
		}
	}
	x.rep = slices.Clone(reps)
	return ""
}

// steadyCheck is what the replication checks established about this
// executor's programs and play (issue 18: RunSteady checks the programs
// before the play and the units' times when they have ended, and Replicate
// would check both again after the play): structure's result for one plan
// (held; the programs do not change under an executor, so it holds for any
// play of that plan), and whether the early check passed (timed) on the
// play stamped by total and resumed. A play starts with begin, which adds
// the programs' tasks to x.total, or with Resume, which sets x.total to them
// and x.resumed to the tasks the fork had ended: a record of another play,
// or of another plan, is not used (TestSteadyCheckOncePerPlay).
type steadyCheck struct {
	played, extra, g int
	stages           []steadyStage // a copy of the plan's
	reps             []replica
	reach            int
	held             bool // structure passed for the plan above
	watched          bool // RunSteady's watch reaches every stage's suffix (setWatch)
	timed            bool // RunSteady's early check passed, on the play below
	total, resumed   int  // the play: x.total and x.resumed when it passed
}

// plans reports whether c holds structure's result for st.
func (c *steadyCheck) plans(st Steady) bool {
	return c.held && c.played == st.Played && c.extra == st.Extra && c.g == st.g && slices.Equal(c.stages, st.stages)
}

// timedFor reports whether the early check passed on x's play as it is now,
// ended: the same play (total, resumed) and every task ended.
func (c *steadyCheck) timedFor(x *Executor) bool {
	return c.timed && c.total == x.total && c.resumed == x.resumed && x.done == x.total
}

// refusedReceive is structure's refusal of a unit whose receive is matched
// by a send in the peer's suffix (Lasting).
const refusedReceive = "receive from a suffix"

// structure is replicate's checks of the programs alone, before any time
// (RunSteady makes them before the play: a play they refuse need not be
// played): the replicated unit of each stage, how many units back its
// tasks depend (reach), and why the programs cannot replicate, "" when they
// may. It sets x.reach for Settle. The checks are made once per plan: a
// plan that passed is recorded (x.steady) and its result returned again,
// the same replicas (replicate sets their window and period; x.rep is a
// copy).
func (x *Executor) structure(st Steady) (reps []replica, reach int, why string) {
	c := &x.steady
	if c.plans(st) {
		x.reach = c.reach
		return c.reps, c.reach, ""
	}
	reps, reach, why = x.checkStructure(st)
	*c = steadyCheck{stages: c.stages[:0]}
	if why == "" {
		c.held, c.reps, c.reach = true, reps, reach
		c.played, c.extra, c.g = st.Played, st.Extra, st.g
		c.stages = append(c.stages, st.stages...)
		c.watched = true
		for i := range x.inst {
			if e := st.stages[x.inst[i].stage].end; e <= 0 || e >= len(x.inst[i].prog.entries)-1 {
				c.watched = false
			}
		}
	}
	return reps, reach, why
}

// checkStructure is structure's checks, made (reps: new storage).
func (x *Executor) checkStructure(st Steady) (reps []replica, reach int, why string) {
	if !x.symmetric || len(st.stages) != len(x.inst) {
		return nil, 0, "not symmetric"
	}
	for i := range x.inst {
		if x.inst[i].events == nil {
			return nil, 0, "events not counted (CountEvents)"
		}
	}
	reps = make([]replica, len(x.inst))
	// reach: how many units back the last unit's tasks depend, here or
	// (through receives) on another stage; one more for the alignment of
	// units across stages.
	reach = 1
	for i := range x.inst {
		in := &x.inst[i]
		p := in.prog
		cut := st.stages[in.stage]
		if len(p.entries) <= cut.end {
			return nil, 0, "programs cut elsewhere"
		}
		a, b := p.entries[cut.end-cut.unit], p.entries[cut.end]
		if b <= a {
			return nil, 0, "empty unit"
		}
		reps[i] = replica{a: a, b: b, extra: st.Extra}
	}
	// back is how many units before r's last unit task d lies.
	back := func(d int32, r replica) int {
		if d >= r.a {
			return 0
		}
		u := r.b - r.a
		return int((r.a - d + u - 1) / u)
	}
	// A dependency the last unit shares with the unit before (the step's
	// parameter all-gather every forward waits for) is absolute: it must
	// lie before the checked units (absLast), and it is not shifted.
	absLast := make([]int32, len(x.inst))
	for i := range x.inst {
		p, r := x.inst[i].prog, reps[i]
		u := r.b - r.a
		absLast[i] = -1
		if r.a < u {
			return nil, 0, "too few units"
		}
		for t := r.a; t < r.b; t++ {
			prev := p.Deps(int(t - u))
			for k, d := range p.Deps(int(t)) {
				if k < len(prev) && prev[k] == d {
					absLast[i] = max(absLast[i], d)
					continue
				}
				reach = max(reach, back(d, r))
			}
			// The host's waits for a synchronisation; those for a
			// full launch queue, which reach a queue's launches back,
			// are hostRepeats' (they hold no GPU task back).
			if w := p.HostAfter(int(t)); w >= 0 {
				if p.HostAfter(int(t-u)) == w {
					absLast[i] = max(absLast[i], int32(w))
				} else {
					reach = max(reach, back(int32(w), r))
				}
			}
			if task := &p.Tasks[t]; task.Kind == KindRecv {
				q := reps[task.Peer()]
				if task.Match() >= q.b {
					return nil, 0, refusedReceive
				}
				reach = max(reach, 1+back(task.Match(), q))
			}
		}
	}
	x.reach = reach // for Settle
	// Check reach+2 units per stage: reach+1 that the unplayed units depend
	// on, and one before them whose tasks may overlap them.
	for i := range x.inst {
		in := &x.inst[i]
		p, r := in.prog, reps[i]
		cut := st.stages[in.stage]
		if cut.end-(reach+2)*cut.unit < 0 {
			return nil, 0, "too few units"
		}
		u := r.b - r.a
		for k := 1; k <= reach+2; k++ {
			hi := cut.end - (k-1)*cut.unit
			if p.entries[hi]-p.entries[hi-cut.unit] != u {
				return nil, 0, "units of different sizes"
			}
		}
		if absLast[i] >= r.b-int32(reach+2)*u {
			return nil, 0, "absolute dependency inside the checked units"
		}
	}
	return reps, reach, ""
}

// Lasting reports whether the last refusal (Replicate, RunSteady) holds
// for a shortened play of any length of the same step, so that the caller
// plays the step whole rather than try a longer one: a unit's receive
// matched by a send in the peer's suffix. The stages' cuts lie a fixed
// number of units before their suffixes whatever the count, so a receive
// that reaches into the peer's suffix does at every count: measured on
// every interleaved scenario bundled, of scenarios/validation and of
// scenarios/holdout (7, each at every count PlanSteady accepts up to 3/4 of
// its step: refused every time). The other refusals are of times, or of
// too few or unequal units, which a longer play may pass.
func (x *Executor) Lasting() bool { return x.refusal == refusedReceive }

// unitsRepeat reports whether each task t in [lo, hi) of instance i is
// task t+u one unit earlier: the same work, its dependencies one unit
// later (relative) or the same (absolute: Replicate), its host wait one
// unit later or the same (the played records'; the launch-queue waits are
// the host thread's only: hostRepeats checks the replicated unit's, and
// the checked units' may reach before them, their issues not
// replicated), the same issue time, and its times and events one period
// later (the events only when events is set: a task's count can still
// grow after it ended, by a completion a rate change superseded). The
// unit's micro-batches are checked through the schedule's order, not
// here; a send's or receive's match is its peer's unit later.
//
// One loop over the tasks, the program's slices read once: a call per
// task (repeats) copied both tasks, looked each record up through
// Program.waits (four times, each checking the records' length) and
// Deps, ≈ 180 instructions a task with the struct's comparison, 301 k
// tasks on the 70B sweep (issue 18, steady48).
func (x *Executor) unitsRepeat(i int, lo, hi, u int32, period engine.Time, reps []replica, events bool) bool {
	in := &x.inst[i]
	p := in.prog
	tasks, state, hot, ev := p.Tasks, in.state, p.hot, in.events
	deps, off := p.deps, p.depOff
	if len(hot) != len(tasks) {
		hot = nil // a program without records: no waits, no issue (Program.waits)
	}
	if lo >= hi {
		return true
	}
	// Each task's dependency list ends where the next one's starts: the
	// offsets are read once a task, carried from one to the next (oa, ob).
	off = off[:hi+u+1]
	oa, ob := off[lo], off[lo+u]
	for t := lo; t < hi; t++ {
		n := t + u
		b := &tasks[n]
		a := tasks[t]
		if a.Micro >= 0 {
			a.Micro = b.Micro
		}
		if a.Kind == KindSend || a.Kind == KindRecv {
			q := reps[a.Peer()]
			a.setP2P(a.Peer(), a.Match()+q.b-q.a)
		}
		if hot != nil {
			ha, hb := &hot[t], &hot[n]
			if wa, wb := ha.hostAfter, hb.hostAfter; wa != wb && (wa <= 0 || wa+u != wb) || ha.issue != hb.issue {
				return false
			}
		}
		if !sameTask(&a, b) {
			return false
		}
		// The lists compared element by element through their offsets,
		// not sliced (two slicings checked six bounds; most tasks have
		// one dependency).
		ea, eb := off[t+1], off[n+1]
		if eb-ob != ea-oa {
			return false
		}
		for k, m := oa, ob-oa; k < ea; k++ {
			if d, e := deps[k], deps[k+m]; d+u != e && d != e { // relative or absolute (Replicate)
				return false
			}
		}
		oa, ob = ea, eb
		sa, sb := &state[t], &state[n]
		if sb.Start() != sa.Start()+period || sb.End() != sa.End()+period || events && ev[t] != ev[n] {
			return false
		}
		if (sa.issued == 0) != (sb.issued == 0) {
			return false
		}
	}
	return true
}

// ExtraEvents is the engine events the unplayed units would have executed
// (0 without Replicate).
func (x *Executor) ExtraEvents() uint64 {
	var n uint64
	for i, r := range x.rep {
		var unit uint64
		for t := r.a; t < r.b; t++ {
			unit += uint64(x.inst[i].events[t])
		}
		n += unit * uint64(r.extra)
	}
	return n
}

// Replicated reports whether Replicate succeeded.
func (x *Executor) Replicated() bool { return x.rep != nil }

// Settling: a pipeline whose units have not settled when Replicate checks
// them (issue 18). With Hopper's persistent-GEMM waves (interference.go) a
// compute task's slowdown depends on how much of it overlaps communication,
// so a change in one unit's timing changes the next unit's: the period of
// successive units then oscillates about its final value and the
// oscillation shrinks by a roughly constant factor per unit (measured on
// the 70B layout sweep: 0.57 on pp 16 tp 16 with 64 micro-batches, where
// 338, 591, 1,033, 1,806 ns were the last four units' changes of period;
// 0.89 on pp 8 tp 16 with 64, which has not settled after 64). In integer
// nanoseconds the oscillation dies out once it falls below 1 ns, after
// which the units repeat exactly. Settle estimates from the failed play how
// many units more that takes, so the caller can play a step just long
// enough, or the whole step at once when the units would settle too late
// for a gain (a shortened play that fails costs its time on top of the
// full play's). The estimate only chooses what to play: Replicate still
// checks the new play exactly.

// Reach is how many units back the last checked unit's tasks depend, as
// the last Replicate (or RunSteady's early check) found it: the check
// compares Reach + 2 units, so units of two micro-batches (PlanSteadyPairs)
// need Reach + 2 micro-batches more than units of one. 0 before any check.
func (x *Executor) Reach() int { return x.reach }

// settleUnits is how many units Settle measures the change of period on.
const settleUnits = 4

// settleSlack is the units added to Settle's estimate: the oscillation's
// decay is not exactly geometric (integer rounding, the stages' different
// phases), and Replicate checks reach+2 settled units before the copied one.
const settleSlack = 3

// Settle estimates, after Replicate(st) failed on the played step, how many
// micro-batches more the played step needs for its units to repeat: from
// the largest change of period (second difference of start times, over
// every stage and task) of each of the last settleUnits units up to the
// replicated one, d0 (that unit) … d3. When the latest z of them are zero
// but not all (the oscillation or the warm-up has died out at the copied
// unit, later than the check's first units), the units the check still
// lacks: Replicate needs its last reach changes zero (reach+2 units one
// period apart), and each unit played more adds one, so reach − z units,
// at least one (a settled pipeline stays settled: its state repeats). Else,
// when they shrink geometrically, the units until d0 falls below 1 ns at
// the slowest ratio seen, plus settleSlack. ok is false when they do not
// shrink (steady already, or changing otherwise: the caller has no
// estimate), and when the refusal was of the programs, not of times (before
// the play, RunSteady, or by Replicate's checks that read no time: the
// same decision whether the play ran or not); the result is capped at
// limit (micro-batches). Not after a play of a Steady with Last (RunSteady
// may have failed it before the other stages played their units).
func (x *Executor) Settle(st Steady, limit int) (more int, ok bool) {
	if len(st.stages) != len(x.inst) || x.unfit || st.Last {
		return 0, false // no times to read, or none that decided
	}
	var d [settleUnits]int64
	for i := range x.inst {
		in := &x.inst[i]
		p := in.prog
		cut := st.stages[in.stage]
		for j := range d {
			hi := cut.end - j*cut.unit
			lo := hi - cut.unit
			if lo-2*cut.unit < 0 || hi >= len(p.entries) {
				return 0, false
			}
			a, b := p.entries[lo], p.entries[hi]
			u := b - a
			if u <= 0 || p.entries[lo-cut.unit] != a-u || p.entries[lo-2*cut.unit] != a-2*u {
				return 0, false // units of different sizes: not this reasoning
			}
			for t := a; t < b; t++ {
				s0, s1, s2 := in.state[t-2*u].Start(), in.state[t-u].Start(), in.state[t].Start()
				v := int64((s2 - s1) - (s1 - s0))
				d[j] = max(d[j], v, -v)
			}
		}
	}
	if z := settled(d[:]); z > 0 && z < len(d) {
		// The latest units repeat already: the check needs reach of
		// them (x.reach, set by the replicate that refused), one more
		// per unit played.
		return min(max(x.reach-z, 1)*st.g, limit), true
	}
	n, ok := settleEstimate(d[:], limit/st.g+1)
	if !ok {
		return 0, false
	}
	return min((n+settleSlack)*st.g, limit), true
}

// Cycle is, after a shortened play of st failed, the fewest micro-batches
// (a multiple of st's unit, at most most) after which the first stage's
// latest units start their tasks one period later each, cycle after cycle:
// every task's change of start from one unit to the next equals its change
// k units before, over k + 1 units up to the cut. 0 when no such cycle
// shows (or the units are not all alike, or have not ended). A pipeline
// whose periods cycle so repeats exactly in units of that many
// micro-batches (PlanSteadyUnits), which Replicate then checks.
//
// Only the first stage: RunSteady with st.Last may end the play once that
// stage's units have ended and been refused, before the others play
// theirs.
func (x *Executor) Cycle(st Steady, most int) int {
	if len(st.stages) != len(x.inst) || x.unfit || len(x.inst) == 0 || st.g < 1 {
		return 0
	}
	in := &x.inst[0]
	p, cut := in.prog, st.stages[in.stage]
	if cut.unit <= 0 || cut.end >= len(p.entries) {
		return 0
	}
	b := int(p.entries[cut.end]) // (the cut: the checked units end here)
	u := b - int(p.entries[cut.end-cut.unit])
	if u <= 0 {
		return 0
	}
	for k := 1; k*st.g <= most; k++ {
		// units j = 0 … 2k+1 back from the cut, all of u tasks, ended
		n := 2*k + 2
		if cut.end-n*cut.unit < 0 || b-n*u < 0 {
			return 0
		}
		alike := true
		for j := 1; j <= n && alike; j++ {
			alike = int(p.entries[cut.end-(j-1)*cut.unit]-p.entries[cut.end-j*cut.unit]) == u
		}
		if !alike {
			return 0
		}
		for _, s := range in.state[b-n*u : b] {
			if s.end == 0 {
				return 0
			}
		}
		if cycles(in.state[:b], u, k) {
			return k * st.g
		}
	}
	return 0
}

// cycles reports whether the last k + 1 units of u tasks of state each
// change every task's start from the unit before by what the unit k
// earlier changed it (state holds 2k + 2 units or more).
func cycles(state []taskState, u, k int) bool {
	b := len(state)
	for t := b - (k+1)*u; t < b; t++ {
		d := state[t].Start() - state[t-u].Start()
		e := state[t-k*u].Start() - state[t-(k+1)*u].Start()
		if d != e {
			return false
		}
	}
	return true
}

// settleEstimate is how many units it takes d[0] to fall below 1 shrinking
// by the largest ratio d[j]/d[j+1] (d: the change of period of successive
// units, latest first), at most limit; false when d does not shrink from
// each unit to the next.
func settleEstimate(d []int64, limit int) (int, bool) {
	num, den := int64(0), int64(1) // the slowest ratio num/den < 1
	for j := 0; j+1 < len(d); j++ {
		if d[j] <= 0 || d[j] >= d[j+1] {
			return 0, false
		}
		if d[j]*den > num*d[j+1] {
			num, den = d[j], d[j+1]
		}
	}
	// Iterate in integers: v·num/den falls by at least one per unit
	// (products kept below 2⁶³: the ratio to 30 bits, v to 32, which only
	// matter for changes of seconds, beyond any limit).
	for num >= 1<<30 {
		num, den = num>>1, den>>1
	}
	n := 0
	for v := min(d[0], 1<<32); v >= 1 && n < limit; n++ {
		v = v * num / den
	}
	return n, true
}

// settled is how many of the latest changes of period d (latest first) are
// zero: the units that already repeat one period after the one before.
func settled(d []int64) int {
	z := 0
	for z < len(d) && d[z] == 0 {
		z++
	}
	return z
}
