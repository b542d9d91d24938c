package parallel

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/engine"
)

// Full mode's compact state (issue 18: a 16,384-GPU --all-ranks run in
// seconds). A 24-byte record of start, end and issue time per task and rank
// is 1.3 GB for the Llama 3 405B run, and on this class of machine merely
// touching fresh memory costs ≈ 3.5 s of CPU per GB (page faults; measured
// with a loop writing one byte per 4 KiB page of a 1.25 GB slice: 4.5 s of
// system time with 2 MiB pages advised, 6.8 s without). The records are
// read only for the ranks whose timeline is written (and by Check, in
// tests), so full mode keeps them only for the ranks asked for (KeepTimes)
// and plays every other rank on:
//
//   - one byte per task: the inputs that have arrived (dependencies'
//     ends; a task waiting for more than 254, which no bundled scenario
//     has — 19 at most — counts in an int32 beside), cntEnded once the
//     task has ended, task-major within a stage (task
//     t's counters of the stage's ranks side by side): the ranks of a
//     stage run the same program nearly in step, so the counters in use at
//     any moment are a few cache lines per stage instead of one per rank,
//     and a collective's members (adjacent ranks) share theirs;
//   - the statistics Stats reports, accumulated as tasks start and end
//     (liveStats): a rank's compute, communication per kind and host waits
//     are counted open at each instant, and the time between two changes
//     is charged to what was open, which gives the lengths of the same
//     unions and differences Stats measures on the records, exactly
//     (integer nanoseconds);
//   - a host thread that issues lazily: a task's issue time is computed
//     when the task's other inputs are in (it is a running maximum and sum
//     along program order, so it does not depend on when it is computed),
//     and the issue times of tasks it passes on the way are kept in a small
//     ring until those tasks ask for them. The host still parks where it
//     must wait for a GPU task (Program.HostAfter) and resumes when that
//     task ends, calling the tasks that were waiting in program order, so
//     events are scheduled in the same order as by the eager host of the
//     representative-rank play (hostAdvance), and the times are the same.
type fullMode struct {
	inst  []fullInst
	rare  []fullRare // per instance, beside inst
	stage []fullStage
	keep  []bool // per instance: records kept (nil: every instance's)
	// stepEnd is, per step, the last end of a task other than a host copy
	// on any rank (what stepEnds measures on the records).
	stepEnd []engine.Time
}

// fullStage is what full mode needs of a stage's program, shared by its
// ranks.
type fullStage struct {
	// cnt holds the input counters of the stage's ranks, task-major:
	// task t of the rank in column c at t*ranks+c. A task whose need is
	// cntEnded or more counts in big instead, at bigOrd[t]*ranks+c (-1:
	// ended).
	cnt    []uint8
	ranks  int
	bigOrd []int32 // per task, its row in big, -1 (nil: no such task)
	big    []int32
	// initial lists the tasks with no dependencies, other than receives
	// (a send starts them), in program order: ready at the start without
	// a host thread, waiting only for their issue with one.
	initial []int32
	// task is, per task, what full mode reads of it on every event
	// (fullTask), 16 bytes where a Task is 88 and straddles two cache
	// lines.
	task  []fullTask
	nwait int
	// waitEnd is, per host-wait target and rank, the target's end plus
	// one (0: not yet), task-major like cnt: target w (waitOrd) of the
	// rank in column c at w*ranks+c. With the launch-queue bound nearly
	// every task is a target (the task 1024 launches back on its stream
	// holds the host), ≈ 900 per rank in the 405B run: rank-major rows of
	// 7 KB made every end a cache miss (1.2 s of the run's CPU, issue 18).
	waitEnd []engine.Time
	// hostIssue is the host thread's busy time over the program: the
	// sum of the issue times of the tasks it issues.
	hostIssue engine.Time
	// hostStall is the host stalls' time over the program (Stats.Host),
	// the same on every rank of the stage: a KindHostSync task holds the
	// compute stream for its Dur (startAt's default case), so the sum of
	// its ends less its starts is the sum of the Durs.
	hostStall engine.Time
	hosted    bool // Program.Hosted
	// keep is set when some rank of the stage keeps its task times
	// (fullMode.keep): the ranks of the others skip the per-rank test.
	keep bool
	prog *Program  // the stage's program
	hot  []hotTask // the stage's hotTasks (instance.hot)
	// next lists, per task, its successors with their input counts
	// (Program.Succ with fullTask.need), task t's at
	// next[nextOf[t]:nextOf[t+1]]: a task's end reads one run of
	// 8-byte records, shared by the stage's ranks, instead of slicing
	// Succ and loading each successor's fullTask.
	nextOf []int32
	next   []fullSucc
}

// fullSucc is one successor of a task in full mode (fullStage.next): the
// successor and the inputs it waits for (its fullTask.need).
type fullSucc struct{ task, need int32 }

// fullTask is what full mode reads of a stage's task when it becomes ready,
// asks for its issue and ends, shared by the stage's ranks: the input count
// (fillNeed), where its end is kept for the host thread, and the fields of
// Task the statistics and the interference model use. Four share a cache
// line (issue 18: the Task's Kind, Group and Step sat on two lines of an
// 88-byte record, one of the few misses left per event).
type fullTask struct {
	need int32 // inputs it waits for (fillNeed)
	// waitOrd is its index among the tasks the host thread waits for
	// (HostAfter, QueueAfter and QueueSelf targets), -1 for the others.
	waitOrd int32
	// step is the step whose end it counts in (fullMode.stepEnd): its
	// Task.Step, or -1 for a host copy or a task outside every step.
	step   int32
	kind   Kind
	group  GroupKind
	stream Stream
	flags  uint8 // hotCopyEngine, hotSMSized
}

// cntEnded marks an ended task's counter; tasks with as many inputs or more
// count in fullStage.big.
const cntEnded = 255

// bump counts one more arrived input of task t for the rank in column col
// and returns the count.
func (fs *fullStage) bump(t, col int, need int32) int32 {
	if need < cntEnded {
		k := t*fs.ranks + col
		c := fs.cnt[k] + 1
		fs.cnt[k] = c
		return int32(c)
	}
	k := int(fs.bigOrd[t])*fs.ranks + col
	fs.big[k]++
	return fs.big[k]
}

// end marks task t ended for the rank in column col.
func (fs *fullStage) end(t, col int) {
	if fs.bigOrd == nil || fs.bigOrd[t] < 0 {
		fs.cnt[t*fs.ranks+col] = cntEnded
		return
	}
	fs.big[int(fs.bigOrd[t])*fs.ranks+col] = -1
}

// ended reports whether task t ended for the rank in column col.
func (fs *fullStage) ended(t, col int) bool {
	if fs.bigOrd == nil || fs.bigOrd[t] < 0 {
		return fs.cnt[t*fs.ranks+col] == cntEnded
	}
	return fs.big[int(fs.bigOrd[t])*fs.ranks+col] == -1
}

// fullInst is one rank's compact state, 128 bytes laid out by use (issue
// 18): the first cache line holds what nearly every start, end and issue
// of the rank's tasks touches (its column and stage, the host thread's
// position, the statistics' clock, compute count, open kinds and the sums
// of compute and host waits), the second the communication counts and
// exposed times, which only a communication task's start and end, or a
// change while communication alone is in flight, touch
// (TestFullInstLayout holds the offsets). What few events touch is in the
// rank's fullRare. The instance's own host-thread fields are the
// representative-rank play's; full mode keeps these.
type fullInst struct {
	col   int32 // the rank's column in its stage's counters (fullStage.cnt, waitEnd)
	stage int32 // the rank's pipeline stage (instance.stage)
	// hostNext is the next task in program order the host thread issues;
	// hostWait the task whose end it waits for, -1 when it is not waiting;
	// hostFree when it has issued everything before hostNext.
	hostNext, hostWait int32
	hostFree           engine.Time
	live               liveStats
}

// fullRare is the part of one rank's state that few events touch, kept
// apart so that fullInst fits two cache lines: what a host thread that
// runs ahead or parks needs.
type fullRare struct {
	// ring holds, at index task & (len-1), the issue time plus one of a
	// task the host thread has passed before the task asked for it (0:
	// empty); it grows when a slot is still taken.
	ring []engine.Time
	// waiting holds the tasks whose other inputs are in while the host
	// thread is parked before them.
	waiting []int32
}

// newFullMode prepares full mode's state for the executor's instances.
func newFullMode(x *Executor) *fullMode {
	f := &fullMode{inst: make([]fullInst, len(x.inst)), rare: make([]fullRare, len(x.inst)), stage: make([]fullStage, len(x.progs))}
	steps := 0
	cells := 0
	for s, p := range x.progs {
		fs := &f.stage[s]
		fs.task = make([]fullTask, len(p.Tasks))
		for t, need := range fillNeed(make([]int32, len(p.Tasks)), p) {
			task := &p.Tasks[t]
			ft := &fs.task[t]
			ft.need, ft.waitOrd, ft.step = need, -1, int32(task.Step)
			if task.Kind == KindHostCopy || task.Step < 0 {
				ft.step = -1
			}
			ft.kind, ft.group, ft.stream = task.Kind, task.Group, task.Stream
			if task.CopyEngine {
				ft.flags |= hotCopyEngine
			}
			if task.SMSized {
				ft.flags |= hotSMSized
			}
		}
		for t := range p.Tasks {
			task := &p.Tasks[t]
			steps = max(steps, int(task.Step)+1)
			if p.depCount(t) == 0 && task.Kind != KindRecv {
				fs.initial = append(fs.initial, int32(t))
			}
			if p.Hosted && task.Kind != KindRecv {
				fs.hostIssue += p.Issue(t)
			}
			if task.Kind == KindHostSync {
				fs.hostStall += task.Dur
			}
			self, _ := p.QueueSelf(t)
			for _, w := range [3]int{p.HostAfter(t), p.QueueAfter(t), self} {
				if w >= 0 && fs.task[w].waitOrd < 0 {
					fs.task[w].waitOrd = int32(fs.nwait)
					fs.nwait++
				}
			}
		}
		fs.nextOf, fs.next = fullNext(p, fs.task)
		fs.keep = true // every rank's times until KeepTimes
	}
	for i := range x.inst {
		in := &x.inst[i]
		fs := &f.stage[in.stage]
		f.inst[i].col, f.inst[i].stage, f.inst[i].hostWait = int32(fs.ranks), int32(in.stage), -1
		fs.hot, fs.hosted, fs.prog = in.hot, in.prog.Hosted, in.prog
		fs.ranks++
	}
	waits := 0
	for s := range f.stage {
		cells += f.stage[s].ranks * len(x.progs[s].Tasks)
		waits += f.stage[s].ranks * f.stage[s].nwait
	}
	// One allocation for every rank's wait ends too (zero: not yet).
	if waits > 0 {
		ends := make([]engine.Time, waits)
		adviseHugePages(ends)
		for s := range f.stage {
			fs := &f.stage[s]
			n := fs.ranks * fs.nwait
			fs.waitEnd, ends = ends[:n:n], ends[n:]
		}
	}
	// One allocation for every rank's counters: fresh memory is zero,
	// every task's initial count.
	cnt := make([]uint8, cells)
	adviseHugePages(cnt)
	for s := range f.stage {
		fs := &f.stage[s]
		n := fs.ranks * len(x.progs[s].Tasks)
		fs.cnt, cnt = cnt[:n:n], cnt[n:]
		rows := 0
		for t := range fs.task {
			if fs.task[t].need >= cntEnded {
				if fs.bigOrd == nil {
					fs.bigOrd = make([]int32, len(x.progs[s].Tasks))
					for k := range fs.bigOrd {
						fs.bigOrd[k] = -1
					}
				}
				fs.bigOrd[t] = int32(rows)
				rows++
			}
		}
		if rows > 0 {
			fs.big = make([]int32, rows*fs.ranks)
		}
	}
	f.stepEnd = make([]engine.Time, steps)
	return f
}

// KeepTimes makes a full-mode executor keep the task times of the given
// ranks only (for Times, Issued, Instance and Check); every rank still
// plays and counts in Stats. Without it every rank's are kept. Call it
// before Run; it is an error after, in symmetric mode (which keeps its few
// instances' times), or with a rank outside the layout.
func (x *Executor) KeepTimes(ranks []int) error {
	if x.symmetric {
		return fmt.Errorf("parallel: KeepTimes applies to full mode only")
	}
	if x.total != 0 {
		return fmt.Errorf("parallel: KeepTimes after Run")
	}
	keep := make([]bool, len(x.inst))
	for _, r := range ranks {
		if r < 0 || r >= len(x.inst) {
			return fmt.Errorf("parallel: KeepTimes: rank %d outside 0..%d", r, len(x.inst)-1)
		}
		keep[r] = true // full mode's instance i is rank i
	}
	x.full.keep = keep
	for s := range x.full.stage {
		x.full.stage[s].keep = false
	}
	for _, r := range ranks {
		x.full.stage[x.inst[r].stage].keep = true
	}
	return nil
}

// fullNext lays out program p's successor lists for full mode
// (fullStage.next): per task, in Succ's order, each successor with its
// input count from task (the stage's fullTasks).
func fullNext(p *Program, task []fullTask) (nextOf []int32, next []fullSucc) {
	nextOf = make([]int32, len(p.Tasks)+1)
	for t := range p.Tasks {
		for _, s := range p.Succ(t) {
			next = append(next, fullSucc{s, task[s].need})
		}
		nextOf[t+1] = int32(len(next))
	}
	return nextOf, next
}

// HasTimes reports whether instance i's task times were kept (always in
// symmetric mode; in full mode, the ranks KeepTimes named, or all).
func (x *Executor) HasTimes(i int) bool { return x.inst[i].state != nil }

// StepEnds returns, per simulated step, the last end of a task other than a
// host copy on any rank, measured as full mode plays (nil in symmetric
// mode, whose caller measures it on the kept times).
func (x *Executor) StepEnds() []engine.Time {
	if x.full == nil {
		return nil
	}
	return slices.Clone(x.full.stepEnd)
}

// allocTimes gives the kept instances their task records, in one
// allocation (fresh memory is zero: every task's "not yet").
func (f *fullMode) allocTimes(x *Executor) {
	n := 0
	for i := range x.inst {
		if f.keep == nil || f.keep[i] {
			n += len(x.inst[i].prog.Tasks)
		}
	}
	state := make([]taskState, n)
	adviseHugePages(state)
	for i := range x.inst {
		in := &x.inst[i]
		if f.keep == nil || f.keep[i] {
			k := len(in.prog.Tasks)
			in.state, state = state[:k:k], state[k:]
		}
	}
}

// runFull starts full mode's play: tasks with no inputs start, and those
// waiting only for their issue ask the host thread, rank by rank in program
// order (as the representative-rank play's Run does).
func (x *Executor) runFull() {
	f := x.full
	f.allocTimes(x)
	for i := range x.inst {
		in := &x.inst[i]
		if in.prog.Hosted {
			continue
		}
		for _, t := range f.stage[in.stage].initial {
			x.ready(i, int(t))
		}
	}
	for i := range x.inst {
		in := &x.inst[i]
		if !in.prog.Hosted {
			continue
		}
		for _, t := range f.stage[in.stage].initial {
			x.ask(i, int(t))
		}
	}
}

// started records that task t of instance i started now.
func (x *Executor) started(i, t int, now engine.Time) {
	f := x.full
	if f == nil {
		x.inst[i].state[t].start = now + 1
		return
	}
	fi := &f.inst[i]
	fs := &f.stage[fi.stage]
	x.startedAt(i, t, fi, fs, &fs.task[t], now)
}

// startedAt is started in full mode for rank i's fullInst fi, its stage's
// fullStage fs and the task's fullTask ft: the task's start is kept where
// the rank's times are, and the rank's statistics open a task of its kind
// and group (a communication task's) at now, which liveStats.end closes.
// The opening is written out here rather than in a liveStats method: one
// call a start fewer (≈ 44 M starts in the 16,384-rank run, issue 18).
func (x *Executor) startedAt(i, t int, fi *fullInst, fs *fullStage, ft *fullTask, now engine.Time) {
	if x.full.kept(fs, i) {
		x.inst[i].state[t].start = now + 1
	}
	l := &fi.live
	switch kind := ft.kind; {
	case kind.IsComm():
		l.advance(now)
		k := ExposedOf[ft.group]
		if l.comm[k]++; l.comm[k] == 1 {
			l.open |= 1 << k
		}
	case kind.IsCompute():
		l.advance(now)
		l.comp++
		l.compute -= now
	case kind == KindHostCopy:
		// a copy engine's transfer: not the compute stream's, and no
		// change (liveStats.end)
	default:
		l.advance(now)
		l.comp++ // a host stall holds the compute stream (its length: fullStage.hostStall)
	}
}

// kept reports whether instance i, of the stage fs, keeps its task times
// (allocTimes). The stage's flag comes first: with --no-timeline no stage
// keeps any, and the test is one load of a line the caller holds.
func (f *fullMode) kept(fs *fullStage, i int) bool {
	return fs.keep && (f.keep == nil || f.keep[i])
}

// complete1Full completes task t on rank i alone in full mode (a send or
// its receive, a compute task): completeFull for the one rank, in the same
// order (end mark, statistics, CTAs, successors, host resumption), written
// out without completeFull's rank loop. Most completions are of one rank
// (≈ 20.8 M of ≈ 23.6 M in the 16,384-rank run, issue 18), and through
// the loop each paid its set-up: a one-element slice, the per-task values
// held for later ranks (CTA count, SM flag, wait index) kept across the
// loop's calls on the stack. TestComplete1FullIsCompleteFull holds the two
// equal.
func (x *Executor) complete1Full(i, t int) {
	f := x.full
	fi := &f.inst[i]
	fs := &f.stage[fi.stage]
	now := x.eng.Now()
	ft := &fs.task[t]
	if ft.step >= 0 {
		f.stepEnd[ft.step] = now // events come in time order: the latest end
	}
	if f.kept(fs, i) {
		x.inst[i].state[t].end = now + 1
	}
	col := int(fi.col)
	fs.end(t, col)
	fi.live.end(ft.kind, ft.group, now)
	if x.sms > 0 && ft.kind.IsComm() {
		x.commBusyOn(&x.inst[i], i, -x.ctasFull(int(fi.stage), ft), ft.flags&hotSMSized != 0) // (commBusy, inlined)
	}
	x.done++
	if x.done >= x.pollAt {
		x.poll()
	}
	for _, n := range fs.next[fs.nextOf[t]:fs.nextOf[t+1]] {
		s := int(n.task)
		switch c := fs.bump(s, col, n.need); {
		case c == n.need:
			x.ready(i, s)
		case c == n.need-1 && fs.hosted:
			x.askAt(i, s, fi, fs, now) // every input in but the issue (receives have no dependencies)
		}
	}
	// After the successors, as the eager host resumes after them.
	if wait := int(ft.waitOrd); wait >= 0 {
		fs.waitEnd[wait*fs.ranks+col] = now + 1
		if int(fi.hostWait) == t {
			x.hostResume(i)
		}
	}
}

// completeFull completes task t of stage st on each of the given ranks of
// that stage in turn (a collective's members, or one rank), releasing its
// communication's SMs: symEnds.Handle's completion of one task, rank after
// rank, each rank's successors readied (or asking for their issue) and its
// host thread resumed before the next rank's, as one complete per rank
// did. What does not depend on the rank (the fullStage and fullTask, the
// step's end, the CTA count, the successor run) is read once (issue 18: a
// 16,384-rank run completes ≈ 23 M collective members, ≈ 8 a collective).
// It reads each rank's fullInst and the instance only where its times are
// kept.
func (x *Executor) completeFull(ranks []int, t, st int) {
	f := x.full
	fs := &f.stage[st]
	now := x.eng.Now()
	ft := &fs.task[t]
	if ft.step >= 0 {
		f.stepEnd[ft.step] = now // events come in time order: the latest end
	}
	kind, group := ft.kind, ft.group
	// The CTAs each rank's communication releases (interference model).
	var ctas int32
	comm := x.sms > 0 && kind.IsComm()
	if comm {
		ctas = -x.ctasFull(st, ft)
	}
	sized := ft.flags&hotSMSized != 0
	wait := int(ft.waitOrd)
	next := fs.next[fs.nextOf[t]:fs.nextOf[t+1]]
	for _, i := range ranks {
		fi := &f.inst[i]
		if f.kept(fs, i) {
			x.inst[i].state[t].end = now + 1
		}
		col := int(fi.col)
		fs.end(t, col)
		fi.live.end(kind, group, now)
		if comm {
			x.commBusyOn(&x.inst[i], i, ctas, sized) // (commBusy, inlined)
		}
		x.done++
		if x.done >= x.pollAt {
			x.poll()
		}
		for _, n := range next {
			s := int(n.task)
			switch c := fs.bump(s, col, n.need); {
			case c == n.need:
				x.ready(i, s)
			case c == n.need-1 && fs.hosted:
				x.askAt(i, s, fi, fs, now) // every input in but the issue (receives have no dependencies)
			}
		}
		// After the successors, as the eager host resumes after them: a
		// task that asked meanwhile waits for the resumption, in program
		// order.
		if wait >= 0 {
			fs.waitEnd[wait*fs.ranks+col] = now + 1
			if int(fi.hostWait) == t {
				x.hostResume(i)
			}
		}
	}
}

// finishFull is finish in full mode: it completes task t of rank i, a
// send's receive on the peer rank with it, and a collective on every
// member. It reads the task's fullTask, and its Task only for a send.
func (x *Executor) finishFull(i, t int) {
	f := x.full
	st := int(f.inst[i].stage)
	ft := &f.stage[st].task[t]
	switch {
	case ft.kind == KindSend:
		task := &f.stage[st].prog.Tasks[t]
		// The peer rank: ranks are linear in their coordinates
		// (Layout.RankOf), so only the stage term changes.
		peer, m := task.p2p()
		j := i + (peer-st)*x.layout.stride[DimPP]
		x.complete1Full(i, t)
		x.complete1Full(j, m)
	case ft.kind.IsComm():
		// The members lie in rank i's stage (every group but the
		// pipeline's, which sends use, is within a stage).
		gs := x.groups[ft.group][x.groupOf[ft.group][i]]
		x.completeFull(gs.ranks, t, st)
	default:
		x.complete1Full(i, t)
	}
}

// ctasFull is ctasOf for a task of stage st in full mode.
func (x *Executor) ctasFull(st int, ft *fullTask) int32 {
	if ft.flags&hotCopyEngine != 0 {
		return 0
	}
	return x.ctas[st][ft.group]
}

// ask is told that every input of hosted task t of instance i but its issue
// is in (now): the task starts when its issue ends, or now if it has. On
// the compute stream the wait for the issue holds the stream (Stats'
// HostBound) from now until the task is ready.
func (x *Executor) ask(i, t int) {
	fi := &x.full.inst[i]
	x.askAt(i, t, fi, &x.full.stage[fi.stage], x.eng.Now())
}

// askAt is ask for rank i's fullInst fi and its stage's fullStage fs. Where
// the issue time is known it does what issuedAt does itself: nearly every
// hosted task asks once and is issued at once (≈ 40 M in the 16,384-rank
// run), and the call between cost ≈ 15 instructions each (issue 18). A
// compute-stream task's wait for its issue (HostBound) opens only where
// the task does not start now: one that does would open and close it at
// the same instant, which changes no statistic (liveStats charges time
// between changes, and the counts it charges by are the same before and
// after), so it starts without either (startAt). A task that is the host
// thread's next to issue (≈ 39.6 M of ≈ 39.6 M hostTo calls issued one
// task) is issued here by hostTo's walk for that one task, written out:
// the call, hostTo's set-up and its two results cost ≈ 32 instructions a
// task (issue 18); later tasks, and hostResume, go through hostTo.
// TestAskIssuesAsRepresentative holds the issue times to the eager host's.
func (x *Executor) askAt(i, t int, fi *fullInst, fs *fullStage, now engine.Time) {
	var iss engine.Time
	switch {
	case int32(t) < fi.hostNext:
		r := &x.full.rare[i]
		slot := t & (len(r.ring) - 1)
		iss = r.ring[slot] - 1
		r.ring[slot] = 0
	case fi.hostWait >= 0:
		x.waitIssue(i, t, fi, fs, now)
		return
	case int32(t) == fi.hostNext:
		// hostTo's walk for its one task t (t asks: not a receive).
		task := &fs.hot[t]
		col := int(fi.col)
		begin := fi.hostFree
		if w := task.hostAfter - 1; w >= 0 && !fs.prog.noHostWaits {
			e := fs.waitEnd[int(fs.task[w].waitOrd)*fs.ranks+col]
			if e == 0 {
				fi.hostWait = w
				x.waitIssue(i, t, fi, fs, now)
				return
			}
			begin = max(begin, e-1)
		}
		if w := task.queueAfter - 1; w >= 0 {
			e := fs.waitEnd[int(fs.task[w].waitOrd)*fs.ranks+col]
			if e == 0 {
				fi.hostWait = w
				x.waitIssue(i, t, fi, fs, now)
				return
			}
			begin = max(begin, e-1)
		}
		iss = begin + task.issue
		if p := fs.prog; p.qself != nil { // Program.QueueSelf
			if w := p.qself[t] - 1; w >= 0 {
				e := fs.waitEnd[int(fs.task[w].waitOrd)*fs.ranks+col]
				if e == 0 {
					fi.hostWait = w
					x.waitIssue(i, t, fi, fs, now)
					return
				}
				iss = max(iss, e-1+p.qrest[t])
			}
		}
		fi.hostFree = iss
		fi.hostNext++
		if x.full.kept(fs, i) {
			x.inst[i].state[t].issued = iss + 1
		}
	default:
		var ok bool
		if iss, ok = x.hostTo(i, t, fi, fs); !ok {
			x.waitIssue(i, t, fi, fs, now)
			return
		}
	}
	// issuedAt
	if d := iss - now; d > 0 {
		if fs.task[t].stream == StreamCompute {
			fi.live.hostWaitOpen(now)
		}
		x.eng.After(d, x.hh, pack(i, t))
		return
	}
	x.startAt(i, t, fi, fs, now)
}

// waitIssue parks task t, every input of which but its issue is in, until
// the host thread resumes (hostResume): a compute-stream task's wait for
// its issue opens now.
func (x *Executor) waitIssue(i, t int, fi *fullInst, fs *fullStage, now engine.Time) {
	if fs.task[t].stream == StreamCompute {
		fi.live.hostWaitOpen(now)
	}
	r := &x.full.rare[i]
	r.waiting = append(r.waiting, int32(t))
}

// issuedAt makes task t of instance i, whose other inputs are in, ready when
// its issue ends at iss (now if that has passed): hostIssued's rule.
func (x *Executor) issuedAt(i, t int, iss engine.Time, fi *fullInst, fs *fullStage, now engine.Time) {
	if d := iss - now; d > 0 {
		x.eng.After(d, x.hh, pack(i, t))
		return
	}
	x.readyAt(i, t, fi, fs, now)
}

// hostTo advances instance i's host thread through task t (t >= hostNext):
// it issues task after task in program order, each when the previous issue
// ends and, where the host waits for a GPU task, not before that task's
// end; the issue times of the tasks before t wait in the ring. It returns
// t's issue end, or ok = false when the host parked on a GPU task that has
// not ended (hostWait). Most calls issue one task (t is the next), so the
// walk reads its state through fi and fs rather than copying it to locals
// first (copies that ringPut's call would make the compiler keep on the
// stack: measured, ≈ 50 instructions a call more); the two waits are
// tested one after the other (a range over a two-element array cost ≈ 40
// instructions a task, issue 18), and HostAfter's test is skipped where
// the build made no host wait (Program.noHostWaits), as in hostRun.
func (x *Executor) hostTo(i, t int, fi *fullInst, fs *fullStage) (engine.Time, bool) {
	hot := fs.hot
	var state []taskState
	if x.full.kept(fs, i) {
		state = x.inst[i].state
	}
	col := int(fi.col)
	for {
		u := int(fi.hostNext)
		task := &hot[u]
		if task.kind == KindRecv {
			fi.hostNext++ // started by its send
			continue
		}
		begin := fi.hostFree
		// Program.HostAfter, then Program.QueueAfter: the first that has
		// not ended is the one the thread waits for.
		if w := task.hostAfter - 1; w >= 0 && !fs.prog.noHostWaits {
			e := fs.waitEnd[int(fs.task[w].waitOrd)*fs.ranks+col]
			if e == 0 {
				fi.hostWait = w
				return 0, false
			}
			begin = max(begin, e-1)
		}
		if w := task.queueAfter - 1; w >= 0 {
			e := fs.waitEnd[int(fs.task[w].waitOrd)*fs.ranks+col]
			if e == 0 {
				fi.hostWait = w
				return 0, false
			}
			begin = max(begin, e-1)
		}
		issued := begin + task.issue
		if p := fs.prog; p.qself != nil { // Program.QueueSelf
			if w := p.qself[u] - 1; w >= 0 {
				e := fs.waitEnd[int(fs.task[w].waitOrd)*fs.ranks+col]
				if e == 0 {
					fi.hostWait = w
					return 0, false
				}
				issued = max(issued, e-1+p.qrest[u])
			}
		}
		fi.hostFree = issued
		fi.hostNext++
		if state != nil {
			state[u].issued = issued + 1
		}
		if u == t {
			return issued, true
		}
		x.full.rare[i].ringPut(u, issued)
	}
}

// hostResume unparks instance i's host thread (the task it waited for has
// ended) and serves the tasks waiting for their issue in program order,
// until it parks again.
func (x *Executor) hostResume(i int) {
	fi := &x.full.inst[i]
	fs := &x.full.stage[fi.stage]
	now := x.eng.Now()
	fi.hostWait = -1
	r := &x.full.rare[i]
	ws := r.waiting
	slices.Sort(ws)
	k := 0
	for ; k < len(ws); k++ {
		t := int(ws[k])
		iss, ok := x.hostTo(i, t, fi, fs)
		if !ok {
			break
		}
		x.issuedAt(i, t, iss, fi, fs, now) // schedules or starts: never asks on this rank meanwhile
	}
	r.waiting = ws[:copy(ws, ws[k:])]
}

// ringPut keeps the issue end iss of task u, which the host thread passed
// before u asked for it.
func (r *fullRare) ringPut(u int, iss engine.Time) {
	if len(r.ring) == 0 {
		r.ring = make([]engine.Time, 64)
	}
	if r.ring[u&(len(r.ring)-1)] != 0 {
		// The slot holds task u-len, still waiting: double the ring. Its
		// tasks are those in [u-len, u), each at its index mod len.
		c := len(r.ring)
		ring := make([]engine.Time, 2*c)
		base := u - c
		for s, v := range r.ring {
			if v != 0 {
				task := base + (s-base%c+c)%c
				ring[task&(2*c-1)] = v
			}
		}
		r.ring = ring
	}
	r.ring[u&(len(r.ring)-1)] = iss + 1
}

// fullStats is Stats in full mode: what liveStats accumulated.
func (x *Executor) fullStats(i int) Stats {
	l := &x.full.inst[i].live
	st := Stats{End: l.since, Compute: l.compute, Host: x.full.stage[x.inst[i].stage].hostStall, HostBound: l.hostBound, Exposed: l.exposed}
	st.Idle = st.End - l.covered
	if x.inst[i].prog.Hosted {
		st.HostIssue = x.full.stage[x.inst[i].stage].hostIssue
	}
	return st
}

// stalledFull names the first task of the first rank that never ended.
func (x *Executor) stalledFull() error {
	for i := range x.inst {
		in := &x.inst[i]
		fs := &x.full.stage[in.stage]
		for t := range in.prog.Tasks {
			if !fs.ended(t, int(x.full.inst[i].col)) {
				task := in.prog.Tasks[t]
				return fmt.Errorf("simulation stalled: %d of %d tasks never ran (first: rank %d %s layer %d micro-batch %d)",
					x.total-x.done, x.total, in.rank, task.Name, task.Layer, task.Micro)
			}
		}
	}
	return nil
}

// liveStats accumulates one rank's Stats as its tasks start and end, in
// time order: comp counts the compute stream's holders open now (compute,
// host stalls, waits for an issue), comm the communication tasks in flight
// per exposed kind; the time since the last change is charged to what was
// open (covered, or exposed kind k when only communication was). compute
// and hostBound, Stats' Compute and HostBound, are sums of ends minus
// starts; Stats.Host is the stage's (fullStage.hostStall). since, the last
// change, is Stats.End once the step has played: every change but the
// last end is followed by a task's end no earlier (a start by its end, a
// wait for the issue by the task's start), and a host copy, which
// Stats.End leaves out, changes nothing here. The fields every start and
// end touch come first (fullInst's layout).
type liveStats struct {
	since, covered, compute, hostBound engine.Time
	comp                               int32
	// open has bit k set while comm[k] > 0: advance charges the kinds
	// in flight without looking at the others.
	open    uint32
	comm    [NumExposed]int32
	exposed [NumExposed]engine.Time
}

// advance charges the time from the last change to now.
func (l *liveStats) advance(now engine.Time) {
	d := now - l.since
	if d == 0 {
		return
	}
	l.since = now
	if l.comp > 0 {
		l.covered += d
		return
	}
	if l.open == 0 {
		return
	}
	for m := l.open; m != 0; m &= m - 1 {
		l.exposed[bits.TrailingZeros32(m)] += d
	}
	l.covered += d
}

// end closes what startedAt opened.
func (l *liveStats) end(kind Kind, group GroupKind, now engine.Time) {
	// Each case advances the clock on its own: a host copy must not (its
	// end is no change, and since is Stats.End), and a test ahead of the
	// switch would cost every end a comparison.
	switch {
	case kind.IsComm():
		l.advance(now)
		k := ExposedOf[group]
		if l.comm[k]--; l.comm[k] == 0 {
			l.open &^= 1 << k
		}
	case kind.IsCompute():
		l.advance(now)
		l.comp--
		l.compute += now
	case kind == KindHostCopy:
		// a copy nobody waits for runs under the next step: not in End
	default:
		l.advance(now)
		l.comp--
	}
}

// hostWaitOpen and hostWaitClose bracket a compute-stream task's wait for
// its issue after its dependencies ended.
func (l *liveStats) hostWaitOpen(now engine.Time) {
	l.advance(now)
	l.comp++
	l.hostBound -= now
}

func (l *liveStats) hostWaitClose(now engine.Time) {
	l.advance(now)
	l.comp--
	l.hostBound += now
}

// readyAt is ready in full mode, now, for rank i's fullInst fi and its
// stage's fullStage fs: a hosted compute-stream task's wait for its issue
// (askAt) closes, and the task starts (startAt).
func (x *Executor) readyAt(i, t int, fi *fullInst, fs *fullStage, now engine.Time) {
	if fs.hosted && fs.task[t].stream == StreamCompute {
		fi.live.hostWaitClose(now) // its wait for the issue (ask)
	}
	x.startAt(i, t, fi, fs, now)
}

// startAt starts task t of rank i, whose inputs and issue are in, now
// (readyAt without the close of a wait for the issue): a collective starts
// when its last member arrives, a send on the fabric. It reads the task's
// fullTask and hotTask, and its Task only for a send or a collective.
func (x *Executor) startAt(i, t int, fi *fullInst, fs *fullStage, now engine.Time) {
	st := int(fi.stage)
	ft := &fs.task[t]
	switch kind := ft.kind; {
	case kind == KindSend:
		x.startedAt(i, t, fi, fs, ft, now)
		task := &fs.prog.Tasks[t]
		// The peer: instance i is rank i, and a rank is linear in its
		// coordinates (Layout.RankOf), so only the stage term changes.
		peer, m := task.p2p()
		j := i + (peer-st)*x.layout.stride[DimPP]
		x.started(j, m, now)
		if x.sms > 0 {
			x.commBusy(i, x.ctasFull(st, ft), ft.flags&hotSMSized != 0)
			recv := &x.full.stage[peer].task[m]
			x.commBusy(j, x.ctasFull(peer, recv), recv.flags&hotSMSized != 0)
		}
		gs, err := x.sendGroup(i, j, peer == (st+1)%x.layout.PP)
		var plan *collectives.Plan
		if err == nil {
			var d engine.Time
			if d, plan, err = x.groupPlan(gs, collectives.Send, task.Bytes); err == nil && plan == nil {
				x.eng.After(d, x.h, pack(i, t))
				return
			}
		}
		if err == nil {
			err = x.runner.StartPlan(plan, x, pack(i, t))
		}
		if err != nil {
			panic(fmt.Sprintf("parallel: pipeline send: %v", err))
		}
	case kind.IsComm():
		x.arrive(i, t, &fs.prog.Tasks[t]) // starts when its last member arrives
	case x.sms > 0 && kind.IsCompute():
		x.startedAt(i, t, fi, fs, ft, now)
		h := &fs.hot[t]
		x.startCompute(i, t, h.dur, h.share)
	default:
		x.startedAt(i, t, fi, fs, ft, now)
		x.eng.After(fs.hot[t].dur, x.h, pack(i, t))
	}
}
