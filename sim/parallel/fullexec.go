package parallel

import (
	"fmt"
	"slices"

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
	// waitOrd is, per task, its index among the tasks the host thread
	// waits for (HostAfter targets), -1 for the others.
	waitOrd []int32
	nwait   int
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

// fullInst is one rank's compact state.
type fullInst struct {
	col int // the rank's column in its stage's counters (fullStage.cnt, waitEnd)
	// ring holds, at index task & (len-1), the issue time plus one of a
	// task the host thread has passed before the task asked for it (0:
	// empty); it grows when a slot is still taken.
	ring []engine.Time
	// waiting holds the tasks whose other inputs are in while the host
	// thread is parked before them.
	waiting []int32
	live    liveStats
}

// newFullMode prepares full mode's state for the executor's instances.
func newFullMode(x *Executor) *fullMode {
	f := &fullMode{inst: make([]fullInst, len(x.inst)), stage: make([]fullStage, len(x.progs))}
	steps := 0
	cells := 0
	for s, p := range x.progs {
		fs := &f.stage[s]
		fs.waitOrd = make([]int32, len(p.Tasks))
		for t := range fs.waitOrd {
			fs.waitOrd[t] = -1
		}
		for t := range p.Tasks {
			task := &p.Tasks[t]
			steps = max(steps, int(task.Step)+1)
			if p.ndeps[t] == 0 && task.Kind != KindRecv {
				fs.initial = append(fs.initial, int32(t))
			}
			if p.Hosted && task.Kind != KindRecv {
				fs.hostIssue += task.Issue
			}
			self, _ := p.QueueSelf(t)
			for _, w := range [3]int{p.HostAfter(t), p.QueueAfter(t), self} {
				if w >= 0 && fs.waitOrd[w] < 0 {
					fs.waitOrd[w] = int32(fs.nwait)
					fs.nwait++
				}
			}
		}
	}
	for i := range x.inst {
		in := &x.inst[i]
		fs := &f.stage[in.stage]
		f.inst[i].col = fs.ranks
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
		for t, need := range fillNeed(make([]int32, len(x.progs[s].Tasks)), x.progs[s]) {
			if need >= cntEnded {
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
	return nil
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
	in := &x.inst[i]
	if in.state != nil {
		in.state[t].start = now + 1
	}
	if x.full != nil {
		x.full.inst[i].live.start(&in.prog.Tasks[t], now)
	}
}

// complete1Full is complete1 in full mode.
func (x *Executor) complete1Full(i, t int) {
	in := &x.inst[i]
	fi := &x.full.inst[i]
	fs := &x.full.stage[in.stage]
	now := x.eng.Now()
	task := &in.prog.Tasks[t]
	if in.state != nil {
		in.state[t].end = now + 1
	}
	fs.end(t, fi.col)
	fi.live.end(task, now)
	if task.Kind != KindHostCopy && task.Step >= 0 {
		se := &x.full.stepEnd[task.Step]
		*se = max(*se, now)
	}
	if x.sms > 0 && task.Kind.IsComm() {
		x.commBusy(i, -x.ctasOf(i, task), task.SMSized)
	}
	x.done++
	if x.done&0xffff == 0 {
		x.poll()
	}
	p := in.prog
	for _, s := range p.Succ(t) {
		need := in.need[s]
		switch c := fs.bump(int(s), fi.col, need); {
		case c == need:
			x.ready(i, int(s))
		case c == need-1 && p.Hosted:
			x.ask(i, int(s)) // every input in but the issue (receives have no dependencies)
		}
	}
	// After the successors, as the eager host resumes after them: a task
	// that asked meanwhile waits for the resumption, in program order.
	if w := fs.waitOrd[t]; w >= 0 {
		fs.waitEnd[int(w)*fs.ranks+fi.col] = now + 1
		if int(in.hostWait) == t {
			x.hostResume(i)
		}
	}
}

// ask is told that every input of hosted task t of instance i but its issue
// is in (now): the task starts when its issue ends, or now if it has. On
// the compute stream the wait for the issue holds the stream (Stats'
// HostBound) from now until the task is ready.
func (x *Executor) ask(i, t int) {
	in := &x.inst[i]
	fi := &x.full.inst[i]
	now := x.eng.Now()
	if in.prog.Tasks[t].Stream == StreamCompute {
		fi.live.hostWaitOpen(now)
	}
	switch {
	case int32(t) < in.hostNext:
		slot := t & (len(fi.ring) - 1)
		iss := fi.ring[slot] - 1
		fi.ring[slot] = 0
		x.issuedAt(i, t, iss)
	case in.hostWait >= 0:
		fi.waiting = append(fi.waiting, int32(t))
	default:
		if iss, ok := x.hostTo(i, t); ok {
			x.issuedAt(i, t, iss)
		} else {
			fi.waiting = append(fi.waiting, int32(t))
		}
	}
}

// issuedAt makes task t of instance i, whose other inputs are in, ready when
// its issue ends at iss (now if that has passed): hostIssued's rule.
func (x *Executor) issuedAt(i, t int, iss engine.Time) {
	if d := iss - x.eng.Now(); d > 0 {
		x.eng.After(d, x.hh, pack(i, t))
		return
	}
	x.ready(i, t)
}

// hostTo advances instance i's host thread through task t (t >= hostNext):
// it issues task after task in program order, each when the previous issue
// ends and, where the host waits for a GPU task, not before that task's
// end; the issue times of the tasks before t wait in the ring. It returns
// t's issue end, or ok = false when the host parked on a GPU task that has
// not ended (hostWait).
func (x *Executor) hostTo(i, t int) (engine.Time, bool) {
	in := &x.inst[i]
	fi := &x.full.inst[i]
	p := in.prog
	fs := &x.full.stage[in.stage]
	for {
		u := int(in.hostNext)
		task := &p.Tasks[u]
		if task.Kind == KindRecv {
			in.hostNext++ // started by its send
			continue
		}
		begin := in.hostFree
		for _, w := range [2]int{p.HostAfter(u), p.QueueAfter(u)} {
			if w < 0 {
				continue
			}
			e := fs.waitEnd[int(fs.waitOrd[w])*fs.ranks+fi.col]
			if e == 0 {
				in.hostWait = int32(w)
				return 0, false
			}
			begin = max(begin, e-1)
		}
		issued := begin + task.Issue
		if w, rest := p.QueueSelf(u); w >= 0 {
			e := fs.waitEnd[int(fs.waitOrd[w])*fs.ranks+fi.col]
			if e == 0 {
				in.hostWait = int32(w)
				return 0, false
			}
			issued = max(issued, e-1+rest)
		}
		in.hostFree = issued
		in.hostNext++
		if in.state != nil {
			in.state[u].issued = in.hostFree + 1
		}
		if u == t {
			return in.hostFree, true
		}
		fi.ringPut(u, in.hostFree)
	}
}

// hostResume unparks instance i's host thread (the task it waited for has
// ended) and serves the tasks waiting for their issue in program order,
// until it parks again.
func (x *Executor) hostResume(i int) {
	in := &x.inst[i]
	fi := &x.full.inst[i]
	in.hostWait = -1
	ws := fi.waiting
	slices.Sort(ws)
	k := 0
	for ; k < len(ws); k++ {
		t := int(ws[k])
		iss, ok := x.hostTo(i, t)
		if !ok {
			break
		}
		x.issuedAt(i, t, iss) // schedules or starts: never asks on this rank meanwhile
	}
	fi.waiting = ws[:copy(ws, ws[k:])]
}

// ringPut keeps the issue end iss of task u, which the host thread passed
// before u asked for it.
func (fi *fullInst) ringPut(u int, iss engine.Time) {
	if len(fi.ring) == 0 {
		fi.ring = make([]engine.Time, 64)
	}
	if fi.ring[u&(len(fi.ring)-1)] != 0 {
		// The slot holds task u-len, still waiting: double the ring. Its
		// tasks are those in [u-len, u), each at its index mod len.
		c := len(fi.ring)
		ring := make([]engine.Time, 2*c)
		base := u - c
		for s, v := range fi.ring {
			if v != 0 {
				task := base + (s-base%c+c)%c
				ring[task&(2*c-1)] = v
			}
		}
		fi.ring = ring
	}
	fi.ring[u&(len(fi.ring)-1)] = iss + 1
}

// fullStats is Stats in full mode: what liveStats accumulated.
func (x *Executor) fullStats(i int) Stats {
	l := &x.full.inst[i].live
	st := l.st
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
			if !fs.ended(t, x.full.inst[i].col) {
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
// open (covered, or exposed kind k when only communication was).
// Compute, Host and HostBound are sums of ends minus starts.
type liveStats struct {
	since   engine.Time
	comp    int32
	comm    [NumExposed]int32
	covered engine.Time
	st      Stats
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
	open := false
	for k, n := range l.comm {
		if n > 0 {
			l.st.Exposed[k] += d
			open = true
		}
	}
	if open {
		l.covered += d
	}
}

func (l *liveStats) start(t *Task, now engine.Time) {
	l.advance(now)
	switch {
	case t.Kind.IsComm():
		l.comm[ExposedOf[t.Group]]++
	case t.Kind.IsCompute():
		l.comp++
		l.st.Compute -= now
	case t.Kind == KindHostCopy:
		// a copy engine's transfer: not the compute stream's
	default:
		l.comp++ // a host stall holds the compute stream
		l.st.Host -= now
	}
}

func (l *liveStats) end(t *Task, now engine.Time) {
	l.advance(now)
	switch {
	case t.Kind.IsComm():
		l.comm[ExposedOf[t.Group]]--
	case t.Kind.IsCompute():
		l.comp--
		l.st.Compute += now
	case t.Kind == KindHostCopy:
		return // a copy nobody waits for runs under the next step: not in End
	default:
		l.comp--
		l.st.Host += now
	}
	l.st.End = max(l.st.End, now)
}

// hostWaitOpen and hostWaitClose bracket a compute-stream task's wait for
// its issue after its dependencies ended.
func (l *liveStats) hostWaitOpen(now engine.Time) {
	l.advance(now)
	l.comp++
	l.st.HostBound -= now
}

func (l *liveStats) hostWaitClose(now engine.Time) {
	l.advance(now)
	l.comp--
	l.st.HostBound += now
}
