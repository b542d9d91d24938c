package parallel

import (
	"fmt"
	"math"

	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/units"
)

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
		if p != nil {
			most = max(most, stageCompute(p, st))
		}
	}
	return most
}

// stageCompute is ComputeBound's sum for one program p: its compute tasks'
// Dur, with st set each replicated unit once more per copy (Steady.Extra).
func stageCompute(p *Program, st *Steady) engine.Time {
	sum := programCompute(p)
	if st != nil && st.Extra > 0 && p.Stage < len(st.stages) {
		c := st.stages[p.Stage]
		if c.unit > 0 && c.end < len(p.entries) && c.end >= c.unit {
			unit := computeSum(p.Tasks[p.entries[c.end-c.unit]:p.entries[c.end]])
			sum = sum.Add(engine.Time(satMul(int64(unit), int64(st.Extra)))) // (unit ≥ 0, Extra > 0)
		}
	}
	return sum
}

// StageCut is a build's cutoff on its stages' lower bounds
// (StepConfig.StageCut): with On, a stage whose compute, summed as
// ComputeBound sums a program (Steady: the shortened build's plan, nil for
// a whole step), or whose pipeline bound (pipebound.go: the stages before
// it, the relaxed play of its tasks, the drain below it; the full step's
// for a shortened build) is over Limit stops the build, a whole step's
// already while the stage is built (during). Both are lower bounds on the
// full step's end, so a point ruled out here could not have ended by the
// Limit.
//
// Why: in a search for the best layouts (simtrain plan) most of a ruled-out
// point's cost was its build, every stage of it built before the bound was
// taken; a stage over the cutoff rules the point out as well as the whole
// build does.
type StageCut struct {
	On     bool
	Limit  engine.Time
	Steady *Steady
	// CommExact says every task that is not compute takes exactly its Dur
	// in the play (the symmetric executor at analytic fidelity), so the
	// pipeline bound counts it; else it counts a collective as its floor
	// in Floors (nil: 0) and any other such task as 0.
	CommExact bool
	Floors    CommFloors
	// pipe is the pipeline bound's record of the stages checked so far,
	// for a build whose programs have no arena (an arena keeps its own).
	pipe *pipeCut
}

// over returns a *ComputeOverError when the cut is on and stage program
// p's computation is over its limit, or when its stage's pipeline bound
// is (pipeCut.stage, the stages before it checked in order; place: the
// schedule's placement), else nil.
func (c *StageCut) over(p *Program, place pipeline.Placement) error {
	if !c.On {
		return nil
	}
	sum := stageCompute(p, c.Steady)
	if sum > c.Limit {
		return &ComputeOverError{Stage: p.Stage, Compute: sum}
	}
	pc := c.pipeOf(p)
	if len(pc.stages) != p.Stage {
		return nil // stages not checked in order: no pipeline term
	}
	if b := pc.stage(p, place, sum, c.Steady); b > c.Limit {
		return &ComputeOverError{Stage: p.Stage, Compute: b}
	}
	return nil
}

// pipeOf is the pipeline bound's record for program p's build: its
// arena's, else the cut's own.
func (c *StageCut) pipeOf(p *Program) *pipeCut {
	if p.arena != nil {
		return &p.arena.cut
	}
	if c.pipe == nil {
		c.pipe = new(pipeCut)
	}
	return c.pipe
}

// begin starts the cut's walk of stage program p, about to be built (the
// builder calls it at the build's start; stage 0 starts a build's record).
func (c *StageCut) begin(p *Program) {
	if c.On {
		c.pipeOf(p).begin(p, c.CommExact, c.Floors)
	}
}

// during returns a *ComputeOverError when the tasks stage program p has so
// far (a whole step's, built in place: the builder's check after each
// schedule entry) already end, relaxed, after the limit, else nil: their
// relaxed ends only grow as the stage is built further, so a stage cut
// here is cut by over too, with as much built as it took.
func (c *StageCut) during(p *Program, place pipeline.Placement) error {
	if !c.On || c.Steady != nil {
		return nil
	}
	pc := c.pipeOf(p)
	if len(pc.stages) != p.Stage {
		return nil
	}
	if _, _, _, most := pc.walk(p, place, len(p.Tasks), false); most > c.Limit {
		return &ComputeOverError{Stage: p.Stage, Compute: most}
	}
	return nil
}

// CommFloors gives the pipeline bound (StageCut.Floors) lower bounds on
// the collectives of a play where they do not take exactly their Dur: the
// every-rank executor, whose collectives the runner plays (at flow
// fidelity as transfers on the fabric; collectives.Group.PlayFloor).
type CommFloors interface {
	// CommFloor is a lower bound on how long op of bytes on any kind-k
	// group of pipeline stage `stage` lasts in the play, from its start
	// (its last member's arrival) to its end; 0 where none is known.
	CommFloor(k GroupKind, stage int, op collectives.Op, bytes units.Bytes) engine.Time
}

// ComputeOverError is BuildAfter's report that a stage's computation is
// over the build's StageCut: Compute, that stage's sum, is a lower bound on
// the step (ComputeBound's reasoning), above the cut's Limit.
type ComputeOverError struct {
	Stage   int
	Compute engine.Time
}

func (e *ComputeOverError) Error() string {
	return fmt.Sprintf("parallel: stage %d computes for %v, over the build's cutoff", e.Stage, e.Compute)
}

// programCompute is computeSum of p's tasks, summed once a build
// (Program.compute).
func programCompute(p *Program) engine.Time {
	if !p.computeKnown {
		p.compute, p.computeKnown = computeSum(p.Tasks), true
	}
	return p.compute
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

// RunBefore is Run (or, resumed, RunResumed) that gives up once the step
// cannot end by deadline: some rank's compute left, counted from now (in
// full mode with floors, SetCommFloors, the longest chain of its tasks
// ahead), would end after it (checkCut, every cutEvery task ends, or every
// cutEvery times the ranks a stage in full mode), or the clock passes it
// with some rank's compute unfinished. It then returns false with the
// play left where it stopped (its figures are not to be read; the
// executor's storage is set again by the next play). Otherwise it plays
// on to the end, exactly as Run: the engine keeps the order of events
// across a pause (engine.RunUntil). Both modes give up: the
// representative-rank play and the every-rank one (flow fidelity,
// --all-ranks), where every rank's compute is counted.
//
// Why: a search for the best layouts needs the exact figures of the best
// few only (sim/simulation Options.StepCutoffS); a layout whose step
// outlasts the best found so far is ruled out at the cutoff instead of
// played to its end. At flow fidelity, where every rank plays and each
// transfer is a flow on the fabric, the plays of such layouts were ≈ 86%
// of a plan's CPU (Llama 3 70B on 512 H100; issue 18, docs/design.md
// "Speed", round 67).
func (x *Executor) RunBefore(deadline engine.Time, resumed bool) (ended bool, err error) {
	if !resumed {
		x.begin()
		x.armSkip()
	}
	x.cutEnd = 0
	x.armCut(deadline)
	x.eng.RunUntil(deadline)
	if x.eng.Err() == nil && x.interrupted == nil && (x.cut.over || x.computeLeft(x.cut)) {
		x.cutEnd = x.leftEnd(x.cut)
		return false, nil
	}
	x.cut = nil
	x.eng.Run()
	x.settle()
	return true, x.ended()
}

// cutState is RunBefore's running bound on the step's end: per instance,
// the compute not yet ended (rest), found by walking its compute tasks in
// program order (at: the first not seen ended), which the compute stream
// ends in that order.
type cutState struct {
	deadline engine.Time
	at       []int
	rest     []engine.Time
	over     bool // the bound passed the deadline: the play was stopped
	// every is how many task ends apart poll checks the bound: cutEvery,
	// times the ranks a stage in full mode, whose check walks every rank
	// (so that a check costs about as much a task end in both modes).
	every int
	// tail, in full mode with floors (SetCommFloors), is each stage's
	// stageTail, by stage; nil: none.
	tail [][]engine.Time
}

// SetCommFloors gives RunBefore's bound in full mode the collectives'
// floors (the pipeline bound's, CommFloors): a rank's step then ends no
// sooner than the longest chain of its own tasks from its first compute
// task not ended (stageTail), each collective on it at its floor, not
// only its compute. Nil: compute only.
//
// Why: at flow fidelity the plays a plan gives up on were stopped at 55%
// of their deadline, the median, on the plan of Mixtral 8x7B on 64 H100,
// counting compute alone (issue 18, round 68).
func (x *Executor) SetCommFloors(f CommFloors) { x.floors = f }

// TailBound is the most of stage program p's tails (stageTail) with the
// collectives at floors (nil: compute only): a lower bound on the end of
// the step of each rank p plays, from its start. For tests and
// diagnostics.
func TailBound(p *Program, floors CommFloors) engine.Time {
	var pc pipeCut
	pc.reset(false, floors)
	var most engine.Time
	for _, t := range stageTail(p, &pc) {
		most = max(most, t)
	}
	return most
}

// stageTail is, for each task of stage program p, a lower bound on the
// time from its start to the end of the rank's step: the longest chain of
// dependencies from it, each compute task also before the next one in
// program order (the compute stream runs them so), counting a compute
// task at its Dur and a collective at its floor (pc.commEnd's rules, its
// floors pc's), anything else as instant. A receive ends with its send,
// not necessarily after its own inputs, so no chain runs through it to
// them.
func stageTail(p *Program, pc *pipeCut) []engine.Time {
	tasks := p.Tasks
	sl := make([]engine.Time, len(tasks)) // first the most over the successors seen, then the task's own
	var nextCompute engine.Time
	for t := len(tasks) - 1; t >= 0; t-- {
		task := &tasks[t]
		after := sl[t]
		if task.Kind.IsCompute() {
			after = max(after, nextCompute).Add(max(task.Dur, 0))
			nextCompute = after
		} else {
			after = pc.commEnd(p, task, after)
		}
		sl[t] = after
		if task.Kind == KindRecv {
			continue
		}
		for _, d := range depsOf(p, t) {
			sl[d] = max(sl[d], after)
		}
	}
	return sl
}

// cutEvery is how many task ends apart poll checks the bound (checkCut):
// cutEveryDefault, or what SetCutEvery set.
var cutEvery = cutEveryDefault

// cutEveryDefault: a check walks each stage's compute ended since the last
// one and compares pp sums, far less than 512 task ends cost.
const cutEveryDefault = 512

// SetCutEvery sets how many task ends apart RunBefore checks its bound (n
// ≥ 1; 0: the default) and returns the previous setting, for tests that
// check it at every end. Not safe while a play runs.
func SetCutEvery(n int) int {
	old := cutEvery
	if n < 1 {
		n = cutEveryDefault
	}
	cutEvery = n
	return old
}

// armCut starts RunBefore's check: each instance's compute at first, and
// a poll within cutEvery task ends.
func (x *Executor) armCut(deadline engine.Time) {
	c := &cutState{deadline: deadline, at: make([]int, len(x.inst)), rest: make([]engine.Time, len(x.inst)), every: cutEvery}
	for i := range x.inst {
		c.rest[i] = programCompute(x.inst[i].prog)
	}
	if x.full != nil {
		c.every = satMulInt(cutEvery, max(1, len(x.inst)/max(1, len(x.progs))))
		if x.floors != nil {
			var pc pipeCut
			c.tail = make([][]engine.Time, len(x.full.stage))
			for st := range x.full.stage {
				p := x.full.stage[st].prog
				pc.reset(false, x.floors) // (each stage's floors apart)
				c.tail[st] = stageTail(p, &pc)
			}
		}
	}
	x.cut = c
	x.pollAt = min(x.pollAt, x.done+c.every)
}

// satMulInt is a·b for a, b ≥ 0, saturated at the largest int.
func satMulInt(a, b int) int {
	if b != 0 && a > math.MaxInt/b {
		return math.MaxInt
	}
	return a * b
}

// checkCut stops the play (cut.over) once some instance's step provably
// ends after the deadline: the compute it has not ended, beyond a task now
// running, runs one task at a time from now on and none faster than
// priced, so the instance's last compute task ends at now + that or later.
// This tightens the bound by the idle time the play has shown so far
// (exposed communication, pipeline bubbles), so a slow layout stops well
// before its clock reaches the deadline. The task running is the
// instance's cur in both modes (startComputeOn sets it, the compute end
// clears it); where compute runs without the interference model (no SMs)
// cur is never set, and the first compute task not ended counts as
// running, none of it left.
func (x *Executor) checkCut(c *cutState) {
	now := x.eng.Now()
	for i := range x.inst {
		if now.Add(x.computeAhead(c, i)) > c.deadline {
			c.over = true
			x.eng.Stop()
			return
		}
	}
}

// advanceCut moves instance i's place in c past the compute tasks that have
// ended since (c.at: the first compute task not ended, or the program's
// end), taking their Dur off c.rest, and returns it. The compute stream
// ends them in program order; a record past the host thread (lazy state:
// symBuffers) is not read, its task not yet issued.
func (x *Executor) advanceCut(c *cutState, i int) int {
	if x.full != nil {
		return x.advanceCutFull(c, i)
	}
	in := &x.inst[i]
	tasks := in.prog.Tasks
	k, rest := c.at[i], c.rest[i]
	for ; k < len(tasks); k++ {
		t := &tasks[k]
		if !t.Kind.IsCompute() {
			continue
		}
		if x.lazy && in.prog.Hosted && k >= int(in.hostNext) || in.state[k].end == 0 {
			break
		}
		rest -= max(t.Dur, 0)
	}
	c.at[i], c.rest[i] = k, rest
	return k
}

// advanceCutFull is advanceCut in full mode, where rank i's ends are its
// column of its stage's counters (fullStage.ended).
func (x *Executor) advanceCutFull(c *cutState, i int) int {
	fi := &x.full.inst[i]
	fs := &x.full.stage[fi.stage]
	col := int(fi.col)
	tasks := x.inst[i].prog.Tasks
	k, rest := c.at[i], c.rest[i]
	for ; k < len(tasks); k++ {
		t := &tasks[k]
		if !t.Kind.IsCompute() {
			continue
		}
		if !fs.ended(k, col) {
			break
		}
		rest -= max(t.Dur, 0)
	}
	c.at[i], c.rest[i] = k, rest
	return k
}

// computeAhead is checkCut's bound on what instance i has left to play
// from now: its compute not yet ended (advanceCut), less the task
// running; with the stages' tails (cutState.tail), at least the tail of
// its first compute task not ended, less that task where it is running
// (it ends no sooner than now, and what follows it after that).
func (x *Executor) computeAhead(c *cutState, i int) engine.Time {
	k := x.advanceCut(c, i)
	left := c.rest[i]
	tasks := x.inst[i].prog.Tasks
	if k >= len(tasks) {
		return left
	}
	running := int32(k) == x.inst[i].cur || x.sms == 0
	if running {
		left -= max(tasks[k].Dur, 0) // part of it may be done
	}
	if c.tail != nil {
		tail := c.tail[x.full.inst[i].stage][k]
		if running {
			tail -= max(tasks[k].Dur, 0)
		}
		left = max(left, tail)
	}
	return left
}

// leftEnd is the latest end checkCut's bound gives any instance now: the
// clock plus the compute it has not ended (computeAhead), a lower bound on
// the step's end, at least the clock.
func (x *Executor) leftEnd(c *cutState) engine.Time {
	now := x.eng.Now()
	end := now
	for i := range x.inst {
		end = max(end, now.Add(x.computeAhead(c, i)))
	}
	return end
}

// CutEnd is, after RunBefore gave up, a lower bound on the simulated time
// the step would have ended at: the latest of the clock and each rank's
// compute left from it (leftEnd), past the deadline; 0 before.
func (x *Executor) CutEnd() engine.Time { return x.cutEnd }

// computeLeft reports whether some instance has a compute task not ended
// (advanceCut stops short of the program's end).
func (x *Executor) computeLeft(c *cutState) bool {
	for i := range x.inst {
		if x.advanceCut(c, i) < len(x.inst[i].prog.Tasks) {
			return true
		}
	}
	return false
}
