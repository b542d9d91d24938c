package parallel

import (
	"fmt"
	"slices"

	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/units"
)

// Executor plays the stage programs on the engine.
//
// Symmetric mode (analytic fidelity) plays one representative rank per
// pipeline stage: without contention every rank of a stage runs the same
// program with the same collective costs, so the representative's times are
// every such rank's times (the timeline replicates its rows for each rank it
// stands for). Full mode plays every rank: collectives start when all members
// of the group have reached them and run as transfers on the fabric through
// collectives.Runner; pipeline sends are transfers between the two ranks.
// After SetInterference, a compute task runs slower while communication is
// in flight on its rank (doc.go, "Compute slowed by concurrent
// communication"); its End includes the slowdown.
type Executor struct {
	eng    *engine.Engine
	layout *Layout
	progs  []*Program
	h      engine.HandlerID // task ends: full mode's Executor; symmetric mode's first instance's symEnds (instance.h)
	hh     engine.HandlerID // host-thread issues (hostIssuer)
	ends   []symEnds        // symmetric mode: per instance, its handler of task ends

	symmetric bool
	inst      []instance
	full      *fullMode // full mode's compact state (fullexec.go); nil in symmetric mode

	// full mode
	runner  *collectives.Runner
	groupOf [NumGroupKinds][]int32 // rank → group index
	groups  [NumGroupKinds][]*groupState
	// sendTo is, per rank, its pipeline-send groups (0: to the next
	// stage, 1: to the previous). Values in
	// one slice, not one allocation per rank: a send then reads one cache
	// line of it instead of a pointer and then its target.
	sendTo  [][2]groupState
	cluster GroupMaker

	done  int
	total int
	// pollAt is the done count at which a task's completion (symmetric
	// mode's Handle, full mode's complete1Full and completeFull) calls
	// poll next: the next multiple of 65,536, or the per-layer skip's
	// next moment (skip.go) or RunBefore's next check (bound.go) when
	// that is sooner. Compared with >=, so a
	// count moved on elsewhere (Resume) only calls poll once more.
	pollAt int
	skip   *skipState  // Run's per-layer skip (skip.go); nil: none
	cut    *cutState   // RunBefore's check of the step's end against its deadline (bound.go); nil: none
	cutEnd engine.Time // RunBefore's bound on the step's end where it gave up (CutEnd)
	floors CommFloors  // full mode: the collectives' floors RunBefore's bound counts (SetCommFloors); nil: none
	// watchLeft is how many watched tasks (instance.watch) have not ended.
	watchLeft int
	refusal   string // why replication was refused (steady.go, Refusal)
	reach     int    // the units the last replicate's check reached back (steady.go, Settle)
	unfit     bool   // the last refusal was of the programs, not of times (steady.go, structure)
	resumed   int    // tasks ended when the play was resumed (fork.go, Resume)
	// lazy: the task state past each instance's host thread, receives
	// aside, is not written yet (symBuffers, settle; reuse.go).
	lazy bool
	// eventsZero: every event counter is 0 (CountEvents cleared or made
	// them) as long as the engine has run no event since (eventsAt, its
	// Executed then): Resume then copies the prefixes' counts without
	// clearing past them (fork.go). Every play's end or pause (settle)
	// and Resume itself unset it.
	eventsZero bool
	eventsAt   uint64

	byTask  [NumGroupKinds]bool // collectives timed by Task.Dur (TimeByTask)
	floorBy [NumGroupKinds]bool // fabric-played collectives lasting at least Task.Dur (FloorByTask)
	minEnd  [][]engine.Time     // per leader instance, per task: earliest end under FloorByTask

	// sole, when set (SetSoleGroups), says which groups' collectives the
	// runner may play as one timer alone on their links; soleOverlaps
	// counts starts of such a collective while its group's last one had
	// not ended (SoleOverlaps: 0 where the proof holds).
	sole         func(k GroupKind, ranks []int) bool
	soleOverlaps int

	// compute slowdown under communication (interference.go); sms 0 = off
	sms        int64
	capCTAs    int32
	persistent bool                   // Interference.Persistent
	maxDur     engine.Time            // the longest Dur whose work (Dur × sms) fits int64
	ctas       [][NumGroupKinds]int32 // per stage, per group kind (GroupPP: send/recv)

	rep    []replica   // per instance, after Replicate succeeded (steady.go); nil: the played step is the step
	steady steadyCheck // what the replication checks established, made once per play (steady.go)
	// walkCopies makes Stats walk every copy of a replicated unit instead
	// of measuring one period (statsPeriodic); tests compare the two.
	walkCopies bool

	scratch *statsScratch // Stats' storage, reused instance after instance (with an Arena, run after run; nil: Stats makes it)

	// links is the storage of every instance's dense copy of its
	// program's sends' p2p links (symEnds.links), kept from play to play
	// with an Arena.
	links []sendLink

	// Progress, when set, is called every 65,536 task completions with the
	// tasks done and the total (for progress displays on long runs).
	Progress func(done, total int)
	// Interrupt, when set, is called every 65,536 task completions; a
	// non-nil error (a cancelled context's) stops the run, and Run returns
	// it.
	Interrupt   func() error
	interrupted error
}

// poll reports progress and checks for an interruption every 65,536
// completions, and (symmetric mode, pollAt) hands the per-layer skip its
// moments: the skip looks at the state once the completing event has run
// whole (Engine.AfterEvent).
func (x *Executor) poll() {
	if x.done&0xffff == 0 {
		if x.Progress != nil {
			x.Progress(x.done, x.total)
		}
		if x.Interrupt != nil && x.interrupted == nil {
			if err := x.Interrupt(); err != nil {
				x.interrupted = err
				x.eng.Stop()
			}
		}
	}
	x.pollAt = (x.done | 0xffff) + 1
	if sk := x.skip; sk != nil {
		if x.done == sk.at && x.eng.AfterEvent() == nil {
			x.eng.SetAfterEvent(sk.after)
		}
		if sk.at > x.done {
			x.pollAt = min(x.pollAt, sk.at)
		}
	}
	if c := x.cut; c != nil {
		x.checkCut(c)
		x.pollAt = min(x.pollAt, x.done+c.every)
	}
}

// GroupMaker builds collective groups on the simulated cluster.
type GroupMaker interface {
	NewGroup(ranks []int) (*collectives.Group, error)
}

type groupState struct {
	ranks []int
	g     *collectives.Group
	costs []groupCost        // collectives on g and how the runner plays them (groupPlan)
	plans []collectives.Plan // their Plans, for groupCost.plan
	// arrived counts, per collective some member has reached and not all,
	// the members that have (a group's members are at most a few
	// collectives apart, so the list stays short).
	arrived []arrival
	// sole: the group's collectives play alone on their links
	// (SetSoleGroups), the last one ending at soleEnd.
	sole    bool
	soleEnd engine.Time
}

// arrival is how many members of a group have reached its collective task.
type arrival struct{ task, n int32 }

// arrive counts one more member reaching task t and reports whether it was
// the last.
func (gs *groupState) arrive(t int) bool {
	for k := range gs.arrived {
		a := &gs.arrived[k]
		if int(a.task) != t {
			continue
		}
		a.n++
		if int(a.n) < len(gs.ranks) {
			return false
		}
		last := len(gs.arrived) - 1
		gs.arrived[k] = gs.arrived[last]
		gs.arrived = gs.arrived[:last]
		return true
	}
	if len(gs.ranks) == 1 {
		return true
	}
	gs.arrived = append(gs.arrived, arrival{int32(t), 1})
	return false
}

// taskState is one task's state on one rank, 24 bytes. The zero value is a
// task not yet started: times are stored plus one (0: not yet), so that the
// state of 16,384 ranks needs no filling before the run (issue 18), and
// what a completion touches shares a cache line. The inputs a task still
// waits for are counted apart (instance.need), on a dense array: an input
// that is not a task's last touches 4 bytes, not this record's line.
type taskState struct {
	// start is when the task started plus one; 0 until it starts.
	start engine.Time
	end   engine.Time // when it ended, plus one; 0: not yet
	// issued is when the host thread finished issuing the task, plus one
	// (0: not yet, and always for receives and without a host thread).
	issued engine.Time
}

// Start, End and Issued return the task's times, -1 when not yet.
func (s *taskState) Start() engine.Time {
	if s.start <= 0 {
		return -1
	}
	return s.start - 1
}
func (s *taskState) End() engine.Time    { return s.end - 1 }
func (s *taskState) Issued() engine.Time { return s.issued - 1 }

type instance struct {
	rank, stage int32
	prog        *Program
	// state is the rank's per-task state, in program order. need is,
	// per task, the inputs it waits for (its dependencies and, with a
	// host thread, its issue; fillHot): in symmetric mode the instance's
	// own, counted down as they arrive (symEnds.Handle, hostRun; 0: every
	// input in), in full mode shared by every rank of the stage and read
	// only (the play counts on fullTask).
	state []taskState
	need  []int32
	// hot is what the play reads of each task (hotTask), in program
	// order, shared by every rank of the stage.
	hot []hotTask
	// hostNext is the next task in program order the host thread issues;
	// hostWait the task whose end it waits for, -1 when it is not waiting;
	// hostFree when it has issued everything before hostNext.
	hostNext, hostWait int32
	hostFree           engine.Time
	// watch: RunSteady stops the play once tasks [0, watch) of every
	// instance have ended (0: none watched).
	watch int32
	// h is the handler of the instance's task ends: symmetric mode's
	// own symEnds, full mode's Executor.h.
	h   engine.HandlerID
	rem int64 // the running compute task's remaining work at since, in SM-nanoseconds
	// ctas is the stage's CTA counts (Executor.ctas[stage]) while the
	// model is on, else nil.
	ctas *[NumGroupKinds]int32

	// The last cache line (TestInstanceLayout): what every engine event
	// of a rank reads in full mode (Handle, commBusy), 16,384 ranks' worth
	// of instances being more than a cache holds.

	// events counts each task's engine events (CountEvents; nil: not
	// counted).
	events []int32
	// compute slowdown state (interference.go)
	busy  int32  // CTAs of the communication tasks in flight
	cur   int32  // running compute task, -1 when none
	share uint16 // its Task.GEMMShare
	// walk is the program's host-walk facts (hostNoWaits, hostQSelf),
	// set by NewSymmetric: hostRun reads them here, on a line every
	// event of the instance reads, rather than on two of the Program's.
	walk uint8
	// counted: events is not nil or watch is not 0 (setCounted), so
	// that symEnds.Handle tests one byte for both on every completion.
	counted bool
	sized   int32 // of busy, the CTAs of Task.SMSized tasks
	// rate is Executor.rate(busy, sized, share) while a compute task
	// runs (cur ≥ 0): set when it starts, updated by commBusy, so that a
	// change of communication computes the new rate only (integer
	// divisions; it was ≈ 5% of a sweep point's CPU).
	rate  int64
	since engine.Time // last rate change
	end   engine.Time // its scheduled end at the current rate
}

// setCounted sets in.counted: whether symEnds.Handle counts the
// instance's events (CountEvents) or watches its tasks (setWatch).
// Whatever sets events or watch calls it.
func (in *instance) setCounted() { in.counted = in.events != nil || in.watch != 0 }

// hotTask is what the play reads of a task on every event, copied from its
// Task once per execution (fillHot) but for the waits, which the
// program's records alone hold (Program.hot): 32 bytes, two to a cache line, where
// a Task is 88 and straddles two. The host thread's walk (hostAdvance)
// and the start and end of each task (readySym, finishSym), and Stats
// after the play, read these instead of the Tasks, whose lines, streamed
// once per play by each, were most of the play's cache misses on a
// sweep's long pipelines.
type hotTask struct {
	dur        engine.Time // Task.Dur
	issue      engine.Time // Task.Issue
	hostAfter  int32       // 1 + the task the host waits for before issuing this one (a device-to-host sync, the step boundary), 0: none
	queueAfter int32       // 1 + the task the host waits for because the stream's launch queue is full (HostModel.Queue, setQueueWaits), 0: none
	share      uint16      // Task.GEMMShare
	kind       Kind
	group      GroupKind
	stream     Stream
	flags      uint8 // hotCopyEngine, hotSMSized
	walk       uint8 // walkKey(kind, group, stream): the Stats walk's class index
}

// hotTask.flags: Task.CopyEngine, Task.SMSized.
const (
	hotCopyEngine = 1 << iota
	hotSMSized
)

func (h *hotTask) smSized() bool { return h.flags&hotSMSized != 0 }

// NewSymmetric prepares a symmetric (one rank per stage) execution. It
// registers one handler per program on eng for the instance's task ends
// (symEnds), then the host thread's (hostIssuer).
//
// With programs built in one Arena, the Executor, its instances and their
// handlers are the arena's, set afresh (symExecutor): valid until the next
// NewSymmetric over that arena's programs, as the task state already was
// (symBuffers).
func NewSymmetric(eng *engine.Engine, l *Layout, progs []*Program) *Executor {
	pooled := len(progs) > 0 && progs[0].arena != nil
	for _, p := range progs {
		pooled = pooled && p.arena == progs[0].arena
	}
	var x *Executor
	if pooled {
		x = progs[0].arena.symExecutor(len(progs))
	} else {
		x = &Executor{inst: make([]instance, len(progs)), ends: make([]symEnds, len(progs))}
	}
	x.eng, x.layout, x.progs, x.symmetric = eng, l, progs, true
	if len(progs) > 0 && progs[0].arena != nil {
		x.scratch = &progs[0].arena.scratch
	}
	for s, p := range progs {
		x.inst[s] = instance{rank: int32(l.RankOf(Coord{PP: s})), stage: int32(s), prog: p, cur: -1, hostWait: -1, walk: hostWalk(p)}
	}
	if pooled {
		x.lazy = progs[0].arena.symBuffers(x.inst) // reuse.go
	}
	for s, p := range progs {
		in := &x.inst[s]
		if !pooled {
			in.state, in.need = make([]taskState, len(p.Tasks)), make([]int32, len(p.Tasks))
			in.hot = make([]hotTask, len(p.Tasks))
		}
		if n := len(p.Tasks); p.keepHot && len(p.hot) == n {
			// the records an arena's build kept (Program.hot)
			in.hot = p.hot[:n:n]
			fillNeedCopied(in.need, in.hot, p)
		} else {
			if len(in.hot) < len(p.Tasks) {
				in.hot = make([]hotTask, len(p.Tasks))
			}
			fillHot(in.hot, in.need, p)
		}
		if hotChecks.on.Load() { // tests (SetHotChecks)
			checkHot(p)
		}
	}
	x.fillLinks()
	for i := range x.inst {
		x.inst[i].h = eng.Register(&x.ends[i])
	}
	if len(x.inst) > 0 {
		x.h = x.inst[0].h
	} else {
		x.h = eng.Register(&symEnds{x: x}) // (no instance, no event: Executor.h as ever)
	}
	x.hh = eng.Register((*hostIssuer)(x))
	return x
}

// symExecutor returns the arena's symmetric Executor, zeroed, with n
// instances and n handlers (their elements to be set whole). An Executor
// made per play was ≈ 1 KB of garbage a play with its instances and
// handlers, fresh pages once a sweep's workers had reserved their memory
// and the collector stopped running (≈ 250 page faults of the 1,000-point
// 70B sweep; docs/design.md "Speed", foot37). Nothing reads an executor
// after the next play over the arena's programs: those programs, and its
// task state (symBuffers), are rebuilt by then.
func (a *Arena) symExecutor(n int) *Executor {
	b := &a.sym
	inst, ends := resize(b.inst, n), resize(b.ends, n)
	b.inst, b.ends = inst, ends
	b.exec = Executor{inst: inst, ends: ends, links: b.exec.links[:0]}
	return &b.exec
}

// NewFull prepares an execution of every rank, with collectives played by r.
func NewFull(eng *engine.Engine, l *Layout, progs []*Program, r *collectives.Runner, gm GroupMaker) (*Executor, error) {
	x := &Executor{eng: eng, layout: l, progs: progs, runner: r, cluster: gm}
	n := l.World()
	x.inst = make([]instance, n)
	need := make([][]int32, len(progs))
	hot := make([][]hotTask, len(progs))
	for s, p := range progs {
		need[s], hot[s] = make([]int32, len(p.Tasks)), make([]hotTask, len(p.Tasks))
		fillHot(hot[s], need[s], p)
	}
	for rank := 0; rank < n; rank++ {
		st := l.CoordOf(rank).PP
		// The task times (state) are given to the kept ranks at Run
		// (KeepTimes); the play itself runs on x.full.
		x.inst[rank] = instance{rank: int32(rank), stage: int32(st), prog: progs[st], cur: -1, hostWait: -1, need: need[st], hot: hot[st]}
	}
	x.full = newFullMode(x)
	for k := GroupKind(0); k < NumGroupKinds; k++ {
		if k == GroupPP {
			continue
		}
		x.groupOf[k] = make([]int32, n)
		for i := range x.groupOf[k] {
			x.groupOf[k][i] = -1
		}
	}
	x.sendTo = make([][2]groupState, n)
	x.h = eng.Register(x)
	x.hh = eng.Register((*hostIssuer)(x))
	for i := range x.inst {
		x.inst[i].h = x.h
	}
	return x, nil
}

// fillHot sets need to the inputs each task of p waits for (its
// dependencies and, with a host thread, its issue: receives are not
// issued, their send starts them) and hot to the tasks' hotTask, in one
// pass over the Tasks. A nil need is left alone. The ranges an arena's
// build appended as bulk copies (Program.copies) take their source's
// records and input counts in one copy each (a copy has its source's
// dependency counts), without converting each Task. The issue times and
// the host and queue waits, which a Task does not hold, are the program's
// records' (p.hot, when it has one a task), else none.
func fillHot(hot []hotTask, need []int32, p *Program) {
	tasks := p.Tasks // (a local: through p, every store would reload it)
	hot = hot[:len(tasks)]
	w := p.hot
	if len(w) == len(hot) && len(hot) > 0 && &w[0] == &hot[0] {
		w = slices.Clone(w) // (the program's own records, refilled: tests)
	}
	i := 0
	for _, c := range p.copies {
		at, end := int(c.at), int(c.at+c.n)
		if at < i || end > len(tasks) || c.src < 0 || int(c.src+c.n) > at {
			break // not a build's list: the rest is converted below
		}
		fillHotTasks(hot[i:at], tasks[i:at])
		copy(hot[at:end], hot[c.src:c.src+c.n])
		i = end
	}
	fillHotTasks(hot[i:], tasks[i:])
	if len(w) == len(hot) {
		for k := range hot {
			hot[k].issue, hot[k].hostAfter, hot[k].queueAfter = w[k].issue, w[k].hostAfter, w[k].queueAfter
		}
	} else {
		for k := range hot {
			hot[k].issue, hot[k].hostAfter, hot[k].queueAfter = 0, 0, 0
		}
	}
	if need != nil {
		fillNeedCopied(need, hot, p)
	}
}

// fillNeedCopied is fillHot's need from the records hot: the copied
// ranges' (Program.copies) copied from their sources'.
//
// Consecutive copies that continue one another, each starting where the
// last ended and reading on where the last one's source ended (the same
// distance d back), are one run, copied at once (copyBack): of the 70B
// sweep's 355 k copies (10.7 M tasks, 30 a copy) 330 k continue the one
// before, and a copy call each cost ≈ 45 instructions of fillNeedCopied
// and memmove.
func fillNeedCopied(need []int32, hot []hotTask, p *Program) {
	n := len(p.Tasks)
	// (locals: through p, each copy reloaded them)
	need, hot, off, hosted := need[:n], hot[:n], p.depOff[:n+1], p.Hosted
	i := 0
	ra, rd := 0, 0 // the open run: need[ra:i] copied from d = rd back (none: ra = i)
	for _, c := range p.copies {
		at, src, m := int(c.at), int(c.src), int(c.n)
		if at < i || m < 0 || at+m > n || src < 0 || src+m > at {
			break // not a build's list: the rest is counted below
		}
		if d := at - src; at != i || d != rd {
			copyBack(need[:i], ra, rd)
			if i < at { // (none between consecutive copies, most of them)
				fillNeedOf(need[i:at], off[i:at+1], hot[i:at], hosted)
			}
			ra, rd = at, d
		}
		i = at + m
	}
	copyBack(need[:i], ra, rd)
	fillNeedOf(need[i:], off[i:], hot[i:], hosted)
}

// copyBack sets each v[k], k from a up to len(v) in turn, to v[k−d]
// (d ≥ 1, a ≥ d; nothing when a = len(v)): the copies of a run of
// fillNeedCopied, each of at most d elements and each reading d back, in
// order. Where the run is longer than d it repeats v[a−d:a] (each element
// read was set d earlier): copied in doubling blocks, each from the
// repeated part so far, which ends where the block starts.
func copyBack(v []int32, a, d int) {
	for a < len(v) {
		a += copy(v[a:], v[a-d:a])
		d += d
	}
}

// fillNeedOf sets need to the dependency counts, off's differences (a
// run of depOff one longer than need), plus one for the issue of each task
// but a receive when hosted (fillHot).
func fillNeedOf(need, off []int32, hot []hotTask, hosted bool) {
	off = off[:len(need)+1]
	if !hosted {
		for i := range need {
			need[i] = off[i+1] - off[i]
		}
		return
	}
	hot = hot[:len(need)] // issued by the host thread: all but receives
	for i := range need {
		n := off[i+1] - off[i]
		if hot[i].kind != KindRecv {
			n++
		}
		need[i] = n
	}
}

// fillHotTasks sets hot[i] to tasks[i]'s hotTask (hotOf: no issue time,
// no waits).
func fillHotTasks(hot []hotTask, tasks []Task) {
	hot = hot[:len(tasks)]
	for i := range tasks {
		t, h := &tasks[i], &hot[i]
		h.dur, h.issue, h.hostAfter, h.queueAfter = t.Dur, 0, 0, 0
		h.share, h.kind, h.group, h.stream = t.GEMMShare, t.Kind, t.Group, t.Stream
		h.walk = walkKey(t.Kind, t.Group, t.Stream)
		var f uint8
		if t.CopyEngine {
			f = hotCopyEngine
		}
		if t.SMSized {
			f |= hotSMSized
		}
		h.flags = f
	}
}

// hotOf is t's hotTask with no issue time and no host or queue wait
// (which the program's records hold: Program.hot).
func hotOf(t *Task) hotTask {
	h := hotTask{dur: t.Dur,
		share: t.GEMMShare, kind: t.Kind, group: t.Group, stream: t.Stream, walk: walkKey(t.Kind, t.Group, t.Stream)}
	if t.CopyEngine {
		h.flags |= hotCopyEngine
	}
	if t.SMSized {
		h.flags |= hotSMSized
	}
	return h
}

// fillNeed is fillHot's need alone.
func fillNeed(need []int32, p *Program) []int32 {
	for i := range need {
		need[i] = p.depCount(i)
	}
	if p.Hosted {
		for i := range need {
			if p.Tasks[i].Kind != KindRecv {
				need[i]++
			}
		}
	}
	return need
}

// Issued returns, for instance i, when the host thread finished issuing
// each task (-1 for receives, which it does not issue), or nil when the
// programs have no host thread (StepConfig.Host) or the instance's times
// were not kept (HasTimes). The slice is a copy.
func (x *Executor) Issued(i int) []engine.Time {
	in := &x.inst[i]
	if !in.prog.Hosted || in.state == nil {
		return nil
	}
	out := make([]engine.Time, len(in.state))
	for t := range in.state {
		out[t] = in.state[t].Issued()
	}
	return out
}

// Times appends instance i's task start and end times (and, when its
// program has a host thread, issue times; else issued stays nil) to the
// given slices, in program order; -1 for a time not reached. It appends
// nothing for an instance whose times were not kept (HasTimes).
func (x *Executor) Times(i int, start, end, issued []engine.Time) ([]engine.Time, []engine.Time, []engine.Time) {
	in := &x.inst[i]
	for t := range in.state {
		st := &in.state[t]
		start = append(start, st.Start())
		end = append(end, st.End())
		if in.prog.Hosted {
			issued = append(issued, st.Issued())
		}
	}
	return start, end, issued
}

// hostIssuer is the executor seen as the handler of host-thread issue
// events: a task whose inputs were ready before the host had issued it
// becomes ready when the issue ends.
type hostIssuer Executor

// Handle makes the task packed in arg ready: its issue has ended.
func (h *hostIssuer) Handle(now engine.Time, arg int64) {
	x := (*Executor)(h)
	i, t := unpack(arg)
	if ev := x.inst[i].events; ev != nil {
		ev[t]++
	}
	x.ready(i, t)
}

// hostAdvance plays instance i's host thread from its next task on: it
// issues task after task in program order, each starting when the
// previous ends, until it reaches one that must wait for a GPU task still
// running (Program.HostAfter), where it parks. Issue times are computed
// ahead of the simulation clock; an event is scheduled only for a task
// whose inputs are ready before its issue ends (hostIssued), so a thread
// that runs ahead of the GPU costs no events.
func (x *Executor) hostAdvance(i int) { x.hostAdvanceOn(&x.inst[i], i) }

// hostAdvanceOn is hostAdvance on in = &x.inst[i].
func (x *Executor) hostAdvanceOn(in *instance, i int) {
	for {
		t, ok := in.hostRun()
		if !ok {
			return
		}
		x.hostIssued(in, i, t)
	}
}

// instance.walk: Program.noHostWaits, and whether the program has
// QueueSelf waits (Program.qself).
const (
	hostNoWaits = 1 << iota
	hostQSelf
)

// hostWalk is p's instance.walk.
func hostWalk(p *Program) uint8 {
	var w uint8
	if p.noHostWaits {
		w |= hostNoWaits
	}
	if p.qself != nil {
		w |= hostQSelf
	}
	return w
}

// hostRun plays in's host thread from its next task on until it issues a
// task whose other inputs have all arrived, which it returns (ok), or
// parks (hostAdvance), or has issued every task. Its callers (hostAdvanceOn,
// symEnds.Handle) make a returned task ready (hostIssued) and call it
// again, until it parks. A loop without calls: its
// state stays in registers over the tasks the thread runs through. Where
// the build made no host wait (Program.noHostWaits) and the launch queues
// no QueueSelf wait (instance.walk is hostNoWaits alone: every program of
// the 70B sweep) it runs the same loop without either test, its free time
// kept plus one as the records keep times (the wait's end compared and the
// issue stored as they are), and tests the kind (a receive, skipped) only
// of a task without a launch-queue wait, a built program's receives having
// none (walkQueues, copyRun; CheckHot): hostRun 239.7 M → 193.8 M
// instructions on the sweep (cachegrind, Sweep70BAll). Every other program
// runs the loop with both tests.
func (in *instance) hostRun() (int, bool) {
	p := in.prog
	// The thread's position and free time live in locals while it runs
	// ahead (one task per iteration, often hundreds per call), and go back
	// to the instance where it parks or issues a task with its inputs in.
	hot := in.hot
	state, need := in.state[:len(hot)], in.need[:len(hot)] // (no bounds checks at t)
	t, free := int(uint32(in.hostNext)), in.hostFree       // (hostNext ≥ 0: no bounds checks at t)
	// (Program.QueueSelf's presence in a local: the stores to state and
	// need would otherwise reload it on every task.)
	qself := in.walk&hostQSelf != 0
	if in.walk == hostNoWaits {
		// The same walk without Program.HostAfter's and QueueSelf's
		// tests (the build made no host wait, and the queue no
		// QueueSelf wait): on a sweep, every program. The free time is
		// kept plus one, as the records store times, so that a wait's
		// end and the issue's record need no adjustment.
		free1 := free + 1
		for ; t < len(hot); t++ {
			task := &hot[t]
			begin := free1
			if w1 := task.queueAfter; w1 <= 0 { // (1 + the wait, tested as stored)
				if task.kind == KindRecv {
					continue // started by its send
				}
			} else {
				// (not a receive: a built program's receives have no
				// launch-queue wait, walkQueues and copyRun; CheckHot)
				e := state[w1-1].end
				if e == 0 {
					in.hostNext, in.hostFree, in.hostWait = int32(t), free1-1, w1-1
					return 0, false
				}
				begin = max(begin, e)
			}
			free1 = begin + task.issue
			state[t] = taskState{issued: free1} // whole: its first write (symBuffers)
			n := need[t] - 1                    // the issue is one of its inputs
			need[t] = n
			if n == 0 { // every input ready: the issue was the last
				in.hostNext, in.hostFree = int32(t+1), free1-1
				return t, true
			}
		}
		in.hostNext, in.hostFree = int32(t), free1-1
		return 0, false
	}
	for ; t < len(hot); t++ {
		task := &hot[t]
		if task.kind == KindRecv {
			continue // started by its send
		}
		begin := free
		// Program.HostAfter, then Program.QueueAfter: the first that has
		// not ended is the one the thread waits for.
		if w := task.hostAfter - 1; w >= 0 {
			e := state[w].end
			if e == 0 {
				in.hostNext, in.hostFree, in.hostWait = int32(t), free, w
				return 0, false
			}
			begin = max(begin, e-1)
		}
		if w := task.queueAfter - 1; w >= 0 {
			e := state[w].end
			if e == 0 {
				in.hostNext, in.hostFree, in.hostWait = int32(t), free, w
				return 0, false
			}
			begin = max(begin, e-1)
		}
		issued := begin + task.issue
		if qself { // Program.QueueSelf
			if w := p.qself[t] - 1; w >= 0 {
				e := state[w].end
				if e == 0 {
					in.hostNext, in.hostFree, in.hostWait = int32(t), free, w
					return 0, false
				}
				issued = max(issued, e-1+p.qrest[t])
			}
		}
		free = issued
		state[t] = taskState{issued: free + 1} // whole: its first write (symBuffers)
		n := need[t] - 1                       // the issue is one of its inputs
		need[t] = n
		if n == 0 { // every input ready: the issue was the last
			in.hostNext, in.hostFree = int32(t+1), free
			return t, true
		}
	}
	in.hostNext, in.hostFree = int32(t), free
	return 0, false
}

// depsIn reports whether every dependency of task t, not yet started, has
// arrived (symmetric mode): need[t] counts down its dependencies and, with
// a host thread, its issue (fillHot), which hostRun counts when it sets
// issued.
func (in *instance) depsIn(t int) bool {
	n := in.need[t]
	if in.prog.Hosted && in.hot[t].kind != KindRecv && in.state[t].issued == 0 {
		n-- // the issue, still to come
	}
	return n <= 0
}

// hostIssued makes task t of instance i (in = &x.inst[i], symmetric
// mode), whose inputs are all ready and whose issue is known, ready now
// or when its issue ends.
func (x *Executor) hostIssued(in *instance, i, t int) {
	if iss := in.state[t].issued - 1; iss > x.eng.Now() {
		x.eng.At(iss, x.hh, pack(i, t))
		return
	}
	x.readySym(in, i, t)
}

// Instances is the number of played ranks.
func (x *Executor) Instances() int { return len(x.inst) }

// Instance returns the rank, stage, program and task times of instance i
// (copies, as Times makes them).
func (x *Executor) Instance(i int) (rank, stage int, p *Program, start, end []engine.Time) {
	in := &x.inst[i]
	start, end, _ = x.Times(i, nil, nil, nil)
	return int(in.rank), int(in.stage), in.prog, start, end
}

// Place returns the rank and stage of instance i.
func (x *Executor) Place(i int) (rank, stage int, p *Program) {
	in := &x.inst[i]
	return int(in.rank), int(in.stage), in.prog
}

// Symmetric reports whether instances stand for every rank of their stage.
func (x *Executor) Symmetric() bool { return x.symmetric }

// Run plays every task to completion. It fails if some task can never run
// (a dependency cycle or a collective some member never reaches).
func (x *Executor) Run() error {
	x.begin()
	x.armSkip()
	x.eng.Run()
	x.settle()
	return x.ended()
}

// begin readies the tasks that wait for nothing (Run). Only an
// instance whose program has no host thread can have one: with a host
// thread every task but a receive waits for its issue (fillNeedOf counts
// it in need, and a receive is started by its send), so none is ready
// before the thread issues it (hostAdvance, after), and begin does not
// walk such an instance's tasks (5.3 M on the 70B sweep, ≈ 0.4% of its
// CPU samples, to find none).
func (x *Executor) begin() {
	for i := range x.inst {
		x.total += len(x.inst[i].prog.Tasks)
	}
	if x.full != nil {
		x.runFull()
	} else {
		for i := range x.inst {
			// (need and hot in locals: a start changes neither)
			in := &x.inst[i]
			if in.prog.Hosted {
				continue // every task but a receive awaits its issue
			}
			need := in.need
			hot := in.hot[:len(need)]
			for t, n := range need {
				if n == 0 && hot[t].kind != KindRecv {
					x.readySym(in, i, t)
				}
			}
		}
		for i := range x.inst {
			if x.inst[i].prog.Hosted {
				x.hostAdvance(i)
			}
		}
	}
}

// ended reports, after the engine ran out of events, an engine error, an
// interruption or a stall (Run).
func (x *Executor) ended() error {
	if err := x.eng.Err(); err != nil {
		return err
	}
	if err := x.interrupted; err != nil {
		return err
	}
	if x.done != x.total && x.full != nil {
		return x.stalledFull()
	}
	if x.done != x.total {
		for i := range x.inst {
			in := &x.inst[i]
			for t := range in.prog.Tasks {
				if in.state[t].end == 0 {
					task := in.prog.Tasks[t]
					return fmt.Errorf("simulation stalled: %d of %d tasks never ran (first: rank %d %s layer %d micro-batch %d)",
						x.total-x.done, x.total, in.rank, task.Name, task.Layer, task.Micro)
				}
			}
		}
	}
	return nil
}

func pack(i, t int) int64 { return int64(i)<<32 | int64(uint32(t)) }

// computeEnd marks, in an event's argument, the end of a compute task
// played under the interference model (startCompute, commBusy): Handle
// tells such an end from a stale one and completes the task without
// reading its Task, a 88-byte record that is otherwise the one cache line
// the completion of a compute task would touch for its kind alone. Bits
// 32–61 hold the instance (at most 2^30), bits 0–31 the task.
const computeEnd = 1 << 62

// unpack is pack's inverse, the computeEnd mark dropped.
func unpack(arg int64) (i, t int) { return int(arg>>32) & (1<<30 - 1), int(uint32(arg)) }

// Handle completes the task packed in arg.
func (x *Executor) Handle(now engine.Time, arg int64) {
	i, t := unpack(arg)
	if x.full == nil {
		x.ends[i].Handle(now, arg)
		return
	}
	in := &x.inst[i]
	if ev := in.events; ev != nil {
		ev[t]++
	}
	if arg&computeEnd != 0 {
		if int(in.cur) != t || now != in.end {
			return // superseded by a rate change
		}
		in.cur = -1
		// A compute task: finishFull would only complete it on its
		// own rank, communication aside.
		x.complete1Full(i, t)
		return
	}
	x.finish(i, t)
}

// symEnds is the handler of one instance's task ends in symmetric mode:
// NewSymmetric registers one per instance, instance i's as Executor.h + i
// (instance.h), so that Handle has its instance from its receiver, not by
// indexing Executor.inst with the event's argument (192-byte records: a
// multiply, a bounds check and the slice's loads on every event).
type symEnds struct {
	x  *Executor
	in *instance // &x.inst[i]
	i  int
	// links lists the sends of in's program in task order with their
	// Peer and Match, copied when the play is set up (fillLinks);
	// startAt and endAt are where the last lookups of a send's start
	// (readySym) and of its end (Handle) found theirs (link).
	links          []sendLink
	startAt, endAt int
}

// sendLink is a send's task index, Peer and Match (Task.p2p): 12 bytes,
// five to a cache line.
type sendLink struct{ t, peer, match int32 }

// fillLinks sets every instance's handler of task ends (x.ends) with its
// dense list of its program's sends and their links (symEnds.links),
// carved from x.links. A send's start reads its peer and match
// (readySym), and its Task record, 64 bytes that the play reads for
// nothing else, was a cache miss each time (≈ 80% of readySym's CPU
// samples on the 70B sweep): here the loads of every link are
// independent, so their misses overlap, and the play then reads a line
// for five sends.
func (x *Executor) fillLinks() {
	n := 0
	for i := range x.inst {
		n += len(x.inst[i].prog.p2p) // (sends and receives: at least the sends)
	}
	// Kept from play to play (Arena.symExecutor) and grown with room to
	// spare (resize): made exactly n, it was made again at each point
	// with more sends than any before, ≈ 0.36 MB over the 1,000-point 70B
	// sweep (walk43).
	x.links = resize(x.links, n)
	all := x.links
	off := 0
	for i := range x.inst {
		p := x.inst[i].prog
		links := all[off:off]
		tasks := p.Tasks
		for _, t := range p.p2p {
			if task := &tasks[t]; task.Kind == KindSend {
				peer, match := task.p2p()
				links = append(links, sendLink{t, int32(peer), int32(match)})
			}
		}
		off += len(links)
		x.ends[i] = symEnds{x: x, in: &x.inst[i], i: i, links: links}
	}
}

// link returns the peer stage and the match of send t of se's instance,
// as its Task's p2p would: from se.links, at t's entry, sought from *at,
// where the last lookup of its kind found its send (a stage's sends
// mostly start, and end, in program order), else by binary search (the
// list is in task order), else (t not listed: a program without its p2p
// list) from the Task. It leaves *at after the entry found.
func (se *symEnds) link(t int, at *int) (peer, match int) {
	links := se.links
	k := *at
	for k < len(links) && int(links[k].t) < t {
		k++
	}
	if k >= len(links) || int(links[k].t) != t {
		var ok bool
		k, ok = slices.BinarySearchFunc(links, int32(t), func(l sendLink, t int32) int { return int(l.t - t) })
		if !ok {
			return se.in.prog.Tasks[t].p2p()
		}
	}
	*at = k + 1
	l := &links[k]
	return int(l.peer), int(l.match)
}

// Handle completes the task packed in arg (of se's instance) in symmetric
// mode, where the peer of a send is the instance of its stage: a compute
// task's end under the interference model unless superseded; else the
// task's communication releases its SMs. The task then completes: its end
// is recorded, its successors count the input down, and those whose last
// input it was start now (or when their issue ends); its instance's host
// thread, if it waited for the task, runs on. A send's receive, on the
// peer stage's instance, then releases its SMs and completes, after the
// send: Handle calls the peer's handler for it, as for a task end there
// (the receive's event count aside: it is no engine event).
//
// One function, where Handle called a completion per task: the call, its
// frame and the spilled arguments cost ≈ 6 instructions a completion
// (docs/design.md "Speed", play27). The receive's completion is that
// call rather than a second round of a loop around the body (a receive
// ends with ≈ 1.6% of the completions on a 70B sweep), so that the body's
// instance, index and task are not loop-carried: ≈ 3 instructions a
// completion fewer (play31).
func (se *symEnds) Handle(now engine.Time, arg int64) {
	x, in, i := se.x, se.in, se.i
	t := int(uint32(arg)) // (unpack's task)
	send := false
	if arg&computeEnd != 0 {
		if int(in.cur) != t || now != in.end {
			// superseded by a rate change: an event all the same
			if ev := in.events; ev != nil {
				ev[t]++
			}
			return
		}
		in.cur = -1
	} else {
		task := &in.hot[t]
		kind := task.kind
		if x.sms > 0 && kind.IsComm() { // (a receive too)
			x.commBusyOn(in, i, -ctasHot(in, task), task.smSized())
		}
		send = kind == KindSend
	}
	// What the completion needs after the successor walk, and the walk
	// only where a successor starts, kept in memory (a non-escaping
	// record on the stack, read through its pointer) rather than in
	// variables: live in registers where the walk begins, the three were
	// reloaded at the head of every round of the walk (≈ 31 M
	// instructions on the 70B sweep), not once after it.
	late := &struct {
		x    *Executor
		t    int
		send bool
	}{x, t, send}
	state := in.state
	state[t].end = now + 1
	x.done++
	if x.done >= x.pollAt {
		x.poll()
	}
	// The event's count (CountEvents) and RunSteady's watch: one test
	// of in.counted for both on the common completion, which has
	// neither (the test of events here and watch's below it cost ≈ 4
	// instructions more a completion; docs/design.md, play50).
	if in.counted {
		if ev := in.events; ev != nil {
			ev[t]++
		}
		// One more of the watched tasks ended. (t, not int32(t),
		// which the compiler reads as arg's low half, keeping arg
		// spilled across the calls above for it; t < len(state) < 2³¹.)
		if t < int(in.watch) {
			if x.watchLeft--; x.watchLeft == 0 {
				x.eng.Stop()
			}
		}
	}
	// Program.Succ(t), walked by index: cheaper than making the subslice.
	p := in.prog
	off := p.succOf[t : t+2 : t+2]
	succ := p.succ[:uint32(off[1])]
	need := in.need[:len(state)] // (one bounds check at s for both)
	// (k unsigned: the loop's test is its bounds check; s read as a
	// uint32, one load without the sign extension's second instruction:
	// a malformed negative entry still fails need's bounds check)
	for k := uint(uint32(off[0])); k < uint(len(succ)); k++ {
		s := int(uint32(succ[k]))
		n := need[s] - 1 // one more input arrived
		need[s] = n
		if n != 0 {
			continue // (the task's state line untouched)
		}
		// Every input in. With a host thread the issue is one of them,
		// computed ahead of the clock: hostIssued, inlined (a task
		// without one, or a receive, has issued 0, and -1 is never
		// after now).
		x := late.x // (x.sms, x.eng, x.maxDur: read where a task starts)
		st := &state[s]
		if iss := st.issued - 1; iss > now {
			x.eng.At(iss, x.hh, packIndex(i, s))
			continue
		}
		// readySym, inlined for what is not a send.
		// (The interference model's test once: x.sms, read behind
		// stores, is otherwise loaded again for a communication task.)
		// The argument is packed first and s read back from its low
		// half: s's register then becomes the hot record's offset, and
		// s is neither spilled nor reloaded for the pack. A task's end
		// is computed on the branch that keeps it (endAfter, or later
		// for the inlined compute start), so that its duration is not
		// kept, spilled, across the tests.
		a := packIndex(i, s)
		h := &in.hot[s]
		kind := h.kind
		if kind == KindSend {
			x.readySym(in, i, int(uint32(a)))
			continue
		}
		st.start = now + 1
		var end engine.Time
		if x.sms > 0 {
			if kind.IsCompute() {
				if in.busy != 0 || h.dur > x.maxDur {
					x.startComputeOn(in, i, int(uint32(a)), h.dur, h.share)
					continue
				}
				// startComputeOn's case with no communication in
				// flight, inlined: the most common compute start
				// (no call, no reloads after it).
				end = later(now, h.dur)
				in.cur, in.share, in.since = int32(a), h.share, now // (a's low half: s)
				in.rate, in.rem, in.end = x.sms, int64(h.dur)*x.sms, end
				a |= computeEnd
			} else {
				end = endAfter(now, h.dur) // After(h.dur, …)
				if kind.IsComm() {
					x.commBusyOn(in, i, ctasHot(in, h), h.smSized())
				}
			}
		} else {
			end = endAfter(now, h.dur)
		}
		x.eng.At(end, in.h, a)
	}
	if int(in.hostWait) == late.t {
		// The host thread plays on (hostAdvanceOn) with its first
		// walk (hostRun) called from here: nearly every walk parks
		// (a 70B sweep: 1.29 M walks, 14 k issuing a task whose inputs
		// are in), and one that parks then costs no call of
		// hostAdvanceOn (its frame and spills, 17 instructions).
		in.hostWait = -1
		if u, ok := in.hostRun(); ok {
			late.x.hostIssued(in, i, u)
			late.x.hostAdvanceOn(in, i)
		}
	}
	if late.send {
		late.x.ends[i].recvAfter(now, late.t)
	}
}

// recvAfter completes the receive of send t (of se's instance), which
// ended at now, on the peer stage's instance (ends[j]): the same
// completion as a task end's (Handle), its communication releasing its
// SMs first. It is no engine event, so its count (CountEvents) is taken
// back before Handle adds one. (A call of its own: Handle's registers
// are not spent on the rare send.)
func (se *symEnds) recvAfter(now engine.Time, t int) {
	x := se.x
	j, m := se.link(t, &se.endAt)
	if ev := x.inst[j].events; ev != nil {
		ev[m]--
	}
	x.ends[j].Handle(now, int64(m))
}

// CollectiveDone completes a collective or send on every rank involved.
func (x *Executor) CollectiveDone(now engine.Time, tag int64) {
	i, t := unpack(tag)
	if x.minEnd != nil && x.minEnd[i] != nil && now < x.minEnd[i][t] {
		x.eng.After(x.minEnd[i][t]-now, x.h, tag) // FloorByTask: not before its priced end
		return
	}
	x.finish(i, t)
}

// finish completes task t of instance i in full mode, and for sends the
// matching receive, and for collectives every member (finishFull): the
// ends of the runner's collectives and sends (CollectiveDone) and the
// task ends Executor.Handle receives. Symmetric mode has no runner and
// registers each instance's symEnds, not the Executor, for its ends, so
// it never gets here.
func (x *Executor) finish(i, t int) {
	if x.full == nil {
		panic("parallel: finish in symmetric mode, whose task ends are symEnds.Handle's")
	}
	x.finishFull(i, t)
}

// endAfter is now.Add(max(dur, 0)) for a clock reading now ≥ 0 (the
// engine's time never goes below 0): with both terms non-negative, the
// sum overflows exactly when it wraps below 0, and then saturates at
// Forever as Add does; Add's tests for negative operands are not needed
// (≈ 4 instructions a task start, issue 18).
func endAfter(now, dur engine.Time) engine.Time {
	e := now + max(dur, 0)
	if e < 0 {
		return engine.Forever
	}
	return e
}

// ready starts task t of instance i, whose inputs have all arrived.
func (x *Executor) ready(i, t int) {
	if x.full == nil {
		x.readySym(&x.inst[i], i, t)
	} else {
		x.readyFull(i, t)
	}
}

// readyFull is ready in full mode (readyAt).
func (x *Executor) readyFull(i, t int) {
	fi := &x.full.inst[i]
	x.readyAt(i, t, fi, &x.full.stage[fi.stage], x.eng.Now())
}

// readySym is ready in symmetric mode, for in = &x.inst[i]: every task
// starts now, a send's receive on the peer stage's instance with it, and
// ends after its Dur (a compute task under the interference model: when
// its work is done).
func (x *Executor) readySym(in *instance, i, t int) {
	h := &in.hot[t]
	now := x.eng.Now()
	in.state[t].start = now + 1
	switch k := h.kind; {
	case k == KindSend:
		se := &x.ends[i]
		j, m := se.link(t, &se.startAt) // the peer stage's instance is the stage
		peer := &x.inst[j]
		peer.state[m].start = now + 1
		if x.sms > 0 {
			x.commBusyOn(in, i, ctasHot(in, h), h.smSized())
			recv := &peer.hot[m]
			x.commBusyOn(peer, j, ctasHot(peer, recv), recv.smSized())
		}
	case x.sms > 0 && k.IsCompute():
		x.startComputeOn(in, i, t, h.dur, h.share)
		return
	case x.sms > 0 && k.IsComm():
		x.commBusyOn(in, i, ctasHot(in, h), h.smSized())
	}
	x.eng.At(endAfter(now, h.dur), in.h, pack(i, t)) // After(h.dur, …)
}

// TimeByTask makes the collectives of group kind k take their task's priced
// duration (Task.Dur) once every member has arrived, instead of the
// runner's NCCL model. For collectives the runner cannot model at analytic
// fidelity (a DeepEP/HybridEP dispatch); it keeps full mode equal to the
// symmetric one.
func (x *Executor) TimeByTask(k GroupKind) { x.byTask[k] = true }

// FloorByTask makes the collectives of group kind k, played on the fabric by
// the runner, last at least their task's priced duration (Task.Dur): a
// library whose kernels reach a measured bandwidth on an idle fabric (a
// DeepEP/HybridEP dispatch) is no faster under flow fidelity, and slower
// when its flows contend.
func (x *Executor) FloorByTask(k GroupKind) { x.floorBy[k] = true }

// arrive counts a member reaching a collective; the last arrival starts it.
func (x *Executor) arrive(i, t int, task *Task) {
	rank := i // full mode's instance i is rank i (arrive is full mode's)
	// x.group's lookup where the group is made (every arrival but a
	// group's first: no call for ≈ 23 M arrivals in the 16,384-rank run).
	var gs *groupState
	if id := x.groupOf[task.Group][rank]; id >= 0 {
		gs = x.groups[task.Group][id]
	} else {
		gs = x.group(task.Group, rank)
	}
	if !gs.arrive(t) {
		return
	}
	leader := gs.ranks[0] // read only now: the members' list is another cache line
	now := x.eng.Now()
	// The members lie in rank i's stage (every group but the pipeline's,
	// which sends use, is within a stage): one fullTask and CTA count.
	st := int(x.full.inst[i].stage)
	fs := &x.full.stage[st]
	ft := &fs.task[t]
	var ctas int32
	if x.sms > 0 {
		ctas = x.ctasFull(st, ft)
	}
	for _, r := range gs.ranks {
		x.startedAt(r, t, &x.full.inst[r], fs, ft, now)
		if x.sms > 0 {
			x.commBusy(r, ctas, task.SMSized)
		}
	}
	if x.byTask[task.Group] {
		x.eng.After(task.Dur, x.h, pack(leader, t))
		return
	}
	d, plan, err := x.groupPlan(gs, task.Op, task.Bytes)
	floored := x.floorBy[task.Group]
	if err == nil && plan == nil && !floored {
		x.eng.After(d, x.h, pack(leader, t))
		return
	}
	if floored {
		if x.minEnd == nil {
			x.minEnd = make([][]engine.Time, len(x.inst))
		}
		if x.minEnd[leader] == nil {
			x.minEnd[leader] = make([]engine.Time, len(x.inst[leader].prog.Tasks))
		}
		x.minEnd[leader][t] = now.Add(task.Dur)
	}
	// The runner plays it: a kept Plan of transfers, or (floored) its own
	// timer through Start, which keeps nothing.
	switch {
	case err != nil:
	case plan != nil:
		if d, ok := plan.Sole(); ok {
			if now < gs.soleEnd {
				x.soleOverlaps++
			}
			gs.soleEnd = now.Add(d)
		}
		err = x.runner.StartPlan(plan, x, pack(leader, t))
	default:
		err = x.runner.Start(gs.g, task.Op, collectives.Auto, units.Bytes(task.Bytes), x, pack(leader, t))
	}
	if err != nil {
		panic(fmt.Sprintf("parallel: %s on %s group: %v", task.Name, task.Group, err))
	}
}

// groupCost is one collective on a group: what it depends on besides the
// group, and how the runner plays it. 24 bytes and no pointer: a group's
// list is scanned at every start of a collective on it (23 M at 16,384
// GPUs), and the every-rank run makes a list for each of its groups.
type groupCost struct {
	op    collectives.Op
	plan  int32       // the Plan the runner starts, in groupState.plans; -1: a timer of d
	bytes float64     // the size
	d     engine.Time // the timer's duration (plan -1)
}

// groupPlan is how the runner plays op of the given size on gs's group,
// kept on the group: every rank of a 16,384-GPU run repeats the same few
// collectives on its groups thousands of times, and NCCL's algorithm
// choice was ≈ 15% of the every-rank run (issue 18) and ≈ 7% of the
// instructions of a flow-fidelity one. A collective the runner plays as
// one timer (plan nil) the executor times itself: the same time through
// the same event order (one event scheduled at the same instant; the
// handler is not part of the order). One it plays as transfers (Plan.Timed
// not ok) it starts from the kept Plan. A group sees a handful of distinct
// (op, size) pairs, so a short list beats a map. The Plan pointer is into
// gs.plans: start it before the group's next groupPlan.
func (x *Executor) groupPlan(gs *groupState, op collectives.Op, bytes float64) (d engine.Time, plan *collectives.Plan, err error) {
	for k := range gs.costs {
		if c := &gs.costs[k]; c.op == op && c.bytes == bytes {
			if c.plan < 0 {
				return c.d, nil, nil
			}
			return 0, &gs.plans[c.plan], nil
		}
	}
	p, err := x.runner.Plan(gs.g, op, collectives.Auto, units.Bytes(bytes))
	if err != nil {
		return 0, nil, err
	}
	if d, timed := p.Timed(); timed {
		gs.costs = append(gs.costs, groupCost{op: op, plan: -1, bytes: bytes, d: d})
		return d, nil, nil
	}
	if gs.sole {
		x.runner.MakeSole(&p)
	}
	gs.costs = append(gs.costs, groupCost{op: op, plan: int32(len(gs.plans)), bytes: bytes})
	gs.plans = append(gs.plans, p)
	return 0, &gs.plans[len(gs.plans)-1], nil
}

func (x *Executor) group(k GroupKind, rank int) *groupState {
	id := x.groupOf[k][rank]
	if id >= 0 {
		return x.groups[k][id]
	}
	ranks := x.layout.Group(k, rank)
	g, err := x.cluster.NewGroup(ranks)
	if err != nil {
		panic(fmt.Sprintf("parallel: %s group: %v", k, err))
	}
	gs := &groupState{ranks: ranks, g: g, sole: x.sole != nil && x.sole(k, ranks)}
	id = int32(len(x.groups[k]))
	x.groups[k] = append(x.groups[k], gs)
	for _, r := range ranks {
		x.groupOf[k][r] = id
	}
	return gs
}

func (x *Executor) sendGroup(i, j int, forward bool) (*groupState, error) {
	rank := i // full mode's instance i is rank i (sendGroup is full mode's)
	k := 0
	if !forward {
		k = 1
	}
	gs := &x.sendTo[rank][k]
	if gs.g != nil {
		return gs, nil
	}
	g, err := x.cluster.NewGroup([]int{rank, j})
	if err != nil {
		return nil, err
	}
	gs.g = g
	return gs, nil
}

// packIndex is pack(i, s) for an s in [0, 2³²), as symEnds.Handle's
// successor index, read as a uint32, is: without pack's uint32(s), which
// the compiler reads from the index's load, not from its register,
// keeping that load's value live (a spill per successor walked).
func packIndex(i, s int) int64 { return int64(i)<<32 | int64(s) }

// SetSoleGroups lets the runner play the collectives of the groups sole
// accepts (by kind and ranks) as one timer each, alone on their links
// (collectives.Runner.MakeSole), at flow fidelity in full mode. The caller
// vouches that no other transfer uses those groups' links, and that a
// group's collectives never overlap one another; SoleOverlaps counts the
// starts that break the second. Nil: none. Set before the play.
func (x *Executor) SetSoleGroups(sole func(k GroupKind, ranks []int) bool) { x.sole = sole }

// SoleOverlaps is how many collectives of groups SetSoleGroups accepted
// started before their group's last one had ended: 0 where the caller's
// proof holds.
func (x *Executor) SoleOverlaps() int { return x.soleOverlaps }
