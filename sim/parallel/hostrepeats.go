package parallel

import "github.com/simtrain/simtrain/sim/engine"

// hostRepeats checks that the host thread of instance i leaves the
// unplayed copies of the unit [a, b) and the suffix as the played step
// shows them (issue 16). The thread's only state from one task to the next
// is when it is free: each task's issue begins at the later of that and
// the ends of the GPU tasks it waits for (a host synchronisation,
// HostAfter; a full launch queue, QueueAfter and QueueSelf) and lasts its
// Issue. While every task's issue ends no later than its inputs (ahead),
// the GPU plays as without a host thread and the issue costs no engine
// event; the figures read an issue only through the compute stream's wait
// for it (HostBound). So the full play's GPU tasks are the played ones
// and their copies (Replicate's hypothesis) if each task of a copy or of
// the suffix is ahead in the full play and in the played task it is
// measured from, or issued at the same time in both. Under that
// hypothesis every time the full play's thread waits for is known (a
// copy's task ends as the played unit's, shifted), so the thread is
// walked over the copies and the suffix as the full play would run it:
//
//   - a copy's synchronisation waits are the played unit's shifted by whole
//     units (or the same task: absolute); its queue waits fall on the task
//     holding the launch Queue places before its first, found by counting
//     launches (setQueueWaits counts them in integers, so the copies'
//     positions are the played unit's plus whole units' launches): in
//     played tasks for the first copies (J of them), in the copies after;
//   - from copy J on, in the copy's own frame (shifted back by its
//     periods), the thread is free after a copy at F(y) = max(y + h, C), y
//     when it was free before, h the unit's issue time, C = F(−∞): a
//     max-plus map, the same for every such copy. Copies 1…J+2 are walked;
//     if the thread is free no later after the last than after the one
//     before, it is free no later after every further one (F is monotone),
//     falling by P − h per copy to C and staying there (the host runs
//     ahead until the launch queue holds it: S_E = max(S_J+2 + (E − J −
//     2)(h − P), C)), and every further copy's issues lie between the last
//     walked copy's and the fixed point's; a thread free later after each
//     copy falls behind, a transient the played units may not reach: not
//     replicated;
//   - the suffix is walked from the last copy against the played suffix.
//
// A wait for a task before the checked units that the played unit shares
// with the unit before (absolute) never holds a copy back: the copy's task
// is issued after the played one, which already waited for it.
//
// The walk over a copy reads, per task, what hostFrame.tasks gathered once: a
// task's waits in copy j's frame are the same for every j from the first
// copy whose waits all fall in copies (from; each is a task of the played
// unit, shifted, or none), so from there each task costs two maxima and an
// addition; before it (the queue waits that fall on played tasks before
// the unit, the synchronisations with a task before it) they are looked up
// as they were.
func (x *Executor) hostRepeats(i int, a, b, win int32, period engine.Time, extra int) bool {
	in := &x.inst[i]
	p := in.prog
	if p.qwide != nil {
		return false // (its lists' ends are in p.qwide: queueEntry)
	}
	u := b - a
	n := int32(len(p.Tasks))
	s0 := never // when the thread is free after the played unit
	for t := b - 1; t >= a; t-- {
		if p.Tasks[t].Kind != KindRecv {
			s0 = in.state[t].Issued()
			break
		}
	}
	if s0 == never {
		return false // a unit the host issues nothing of
	}
	e := int32(extra)
	hot := x.hotTasks(i)
	h := hostFrame{p: p, state: in.state, a: a, b: b, u: u, e: e, period: period}
	// The full play's launch queues: per stream, the launches before the
	// unit (da) and in it (ls), the same in every copy (setQueueWaits
	// counts them in integers).
	for s := range h.da {
		h.da[s] = p.queueBefore(Stream(s), a)
		h.ls[s] = p.queueBefore(Stream(s), b) - h.da[s]
	}
	if x.scratch == nil {
		x.scratch = new(statsScratch)
	}
	sc := x.scratch
	// pos: each task's launches on its stream before it, from the unit on.
	pos := resize(sc.hostPos, int(n-a))
	clear(pos)
	sc.hostPos = pos
	if p.queued {
		var idx [NumStreams]int
		for s := range idx {
			idx[s] = p.queueIndex(Stream(s), h.da[s]) // the first entry of a task from a on
		}
		queuePos(pos, hot[a:n], a, &p.queue, &idx)
	}
	// Room for every task of the unit at once (tasks appends one a task
	// at most): appended from nothing, the scratch grew a quarter at a
	// time as units grew, ≈ 0.3 MB left behind over the 1,000-point 70B
	// sweep (walk43).
	ht, reachJ, selfBefore, ok := h.tasks(resize(sc.hostTasks, int(u))[:0], hot, pos, win)
	sc.hostTasks = ht
	if !ok {
		return false
	}
	if hostTasksHook != nil {
		// The hook sees a copy: given h's address, h itself was moved
		// to the heap, ≈ 60 fresh pages of garbage over the 1,000-point
		// 70B sweep (docs/design.md, heapf51).
		hc := h
		hostTasksHook(&hc, ht)
	}
	y := s0
	last := min(e, reachJ+2) // copies walked one by one
	if last >= 1 && selfBefore {
		return false // a launch-queue wait before the unit: not this reasoning
	}
	var prev engine.Time
	for j := int32(1); j <= last; j++ {
		prev = y
		// each task of copy j is ahead and so is the played one, or it
		// is issued as the played one (walkCheck)
		var ok bool
		if h.waiting {
			y, ok = h.walkWaits(ht, j, y-period)
		} else {
			y, ok = h.walkCheck(ht, j, y-period)
		}
		if !ok {
			return false
		}
	}
	// The tasks copy `last` issues as played (eq): once a copy passed
	// walkCheck, the played-ahead ones (hostTask.ahead); none before.
	for k := range ht {
		ht[k].eq = last >= 1 && ht[k].ahead
	}
	sE := y
	if e > last {
		if y > prev {
			return false // the thread falls behind copy after copy
		}
		if y < prev {
			// Running ahead to the fixed point C; the tasks issued as
			// played so far must be issued so at C too.
			var hs engine.Time
			for k := range ht {
				hs += ht[k].issue
			}
			if hs >= period {
				return false // not this reasoning (y < prev needs h < P)
			}
			c := h.walk(ht, last, never, false)
			sE = y + engine.Time(e-last)*(hs-period)
			if c > never/2 {
				// The fixed point: copies from here on are issued
				// between copy `last` and it.
				sE = max(sE, c)
				h.walk(ht, last, c-period, true)
			}
			for k := range ht {
				if c2 := &ht[k]; c2.eq && (c <= never/2 || c2.iss != c2.played) {
					return false // issued as played so far, not further on
				}
			}
		}
	}
	// The suffix: walked from S_E (full play, E periods back) against the
	// played one.
	y = sE
	for t := b; t < n; t++ {
		task := &hot[t] // p.Tasks[t]'s kind, stream, issue and host wait
		if task.kind == KindRecv {
			continue
		}
		begin := y
		if w := task.hostAfter - 1; w >= 0 { // p.HostAfter(t)
			if w < a {
				return false
			}
			begin = max(begin, h.end(w+e*u, e))
		}
		if p.queued {
			begin = max(begin, h.queueEnd(task.stream, pos[t-a]+int64(e)*h.ls[task.stream], e))
		}
		y = begin + task.issue
		if w, rest := p.QueueSelf(int(t)); w >= 0 {
			if int32(w) < a {
				return false
			}
			y = max(y, h.end(int32(w)+e*u, e)+rest)
		}
		played := in.state[t].Issued()
		if y == played {
			continue
		}
		r := never // its inputs that move with the suffix
		for _, d := range p.Deps(int(t)) {
			if d >= win {
				r = max(r, in.state[d].End())
			}
		}
		if played > r || y > r {
			return false // waits for its issue in one play, differently in the other
		}
	}
	return true
}

// queuePos sets pos[k], for each task a + k the host issues (hot holds
// the tasks from a on, as many as pos), to its stream's launches before it:
// the end of the stream's queue entry before the task's own, idx holding
// per stream the first entry of a task from a on (0: none before), moved
// past each task's entry as the walk meets it. A function of its own:
// inside hostRepeats its loop kept the unit's bounds and the slices on the
// stack, reloaded at every task.
func queuePos(pos []int64, hot []hotTask, a int32, queue *[NumStreams][]queueEntry, idx *[NumStreams]int) {
	hot = hot[:len(pos)]
	for k := range hot {
		h := &hot[k]
		if h.kind == KindRecv {
			continue
		}
		s := h.stream
		q, i := queue[s], idx[s]
		if i > 0 {
			pos[k] = q[i-1].end()
		}
		if i < len(q) && q[i].id == a+int32(k) {
			idx[s] = i + 1
		}
	}
}

// hostTasksHook, when set (tests), sees each frame and its tasks as
// hostRepeats gathered them.
var hostTasksHook func(h *hostFrame, ht []hostTask)

// never is a time before every other (hostRepeats).
const never = engine.Time(-1 << 61)

// hostFrame is what hostRepeats reads of instance i's play: the unit
// [a, b) of u tasks, its e unplayed copies one period apart, and the
// launch queues' counts.
type hostFrame struct {
	p          *Program
	state      []taskState
	a, b, u, e int32
	period     engine.Time
	// per stream, the launches before the unit (da) and in it (ls)
	da, ls [NumStreams]int64
	// hd: each stream's last queue lookup (queueEnd), 1 + its entry; 0:
	// search
	hd [NumStreams]int
	// dc: each stream's entry the last direct lookup found and the
	// launch it looked up (walkCheck)
	dc [NumStreams]int
	dx [NumStreams]int64
	// waiting: a task of the unit waits before its `from` copy for
	// something other than a direct lookup (tasks): the copies are
	// walked by walkWaits
	waiting bool
}

// hostTask is one task of the unit the host thread issues, as
// hostRepeats' walk over the copies reads it.
type hostTask struct {
	t    int32
	from int32 // the first copy whose waits for this task are lo
	// waitFrom: the first copy where it waits for anything (before it no
	// synchronisation and the launch Queue places before its first is
	// before the step's first: waits would leave y)
	waitFrom int32
	// direct: no synchronisation, and in every copy before from its queue
	// wait's launch is before the unit's (walkCheck)
	direct bool
	sync   int32 // the task its synchronisation waits for when not the played unit's own (HostAfter), -1: none
	stream Stream
	pos    int64       // its launches on its stream before it
	issue  engine.Time // Task.Issue
	// lo: the latest end it waits for, in the frame of any copy from
	// `from` on (never: none); once bound, also its QueueSelf wait less
	// its issue (self − issue), so that from `from` on its issue is
	// max(y, lo) + issue
	lo     engine.Time
	self   engine.Time // its own launches' wait past the queue (QueueSelf), the same in every copy's frame
	played engine.Time // its issue in the played unit
	ready  engine.Time // its inputs that move with the copies (the rest end before the window)
	iss    engine.Time // its issue in the copy walked last (walk)
	// issOff, issW: the issues a copy may give it (walkCheck), lo to
	// lo + issW where issOff = −lo (wrapped): played when ahead, else up
	// to ready; y is one exactly when uint64(y + issOff) ≤ issW, one
	// addition and one unsigned comparison
	issOff engine.Time
	issW   uint64
	ahead  bool // issued ahead of its inputs in the played unit, played > ready
	eq     bool // issued as played in the copy walked last (it or the played one waits for its issue)
}

// tasks appends to ht the unit's tasks that the host issues and returns
// the copies after which every queue wait falls in copies (J), whether a
// task's own launches wait for a task before the unit, and false when a
// queue wait never moves (not hostRepeats' reasoning). It reads each
// task's kind, stream, issue and synchronisation from hot (the instance's
// records, as the suffix's walk does): through p.Tasks, p.Issue and
// p.HostAfter (each a call that copies the record) they cost ≈ 25
// instructions a task more.
//
// A task's synchronisation wait in copy j's frame is the end of task
// w + j·u less j periods: for w + j·u ≥ a a copy's task, whose end less
// its periods is the played unit's task w' = a + (w − a) mod u, plus
// ⌊(w − a)/u⌋ periods, whatever j. Its queue wait is the task holding
// launch x = pos + j·ls − Queue: for x ≥ da (from copy ⌈(da + Queue −
// pos)/ls⌉ on, ls > 0) launch x − m·ls of copy m = j + c, c =
// ⌊(pos − Queue − da)/ls⌋ ≤ 0, so the played unit's task holding launch
// pos − Queue − c·ls, c periods back, again whatever j. So each such wait
// is read once, at the first copy it holds for (end, queueEnd), and is
// the same from there on; the others are looked up per copy (waits).
func (h *hostFrame) tasks(ht []hostTask, hot []hotTask, pos []int64, win int32) (out []hostTask, reachJ int32, selfBefore, ok bool) {
	p, a, b, u := h.p, h.a, h.b, h.u
	const far = int32(1<<31 - 1)
	for t := a; t < b; t++ {
		task := &hot[t] // p.Tasks[t]'s kind, stream, issue and host wait
		if task.kind == KindRecv {
			continue
		}
		c := hostTask{t: t, sync: -1, stream: task.stream, pos: pos[t-a], issue: task.issue, lo: never, self: never, played: h.state[t].Issued(), ready: never}
		for _, d := range p.Deps(int(t)) {
			if d >= win {
				c.ready = max(c.ready, h.state[d].End())
			}
		}
		if w := task.hostAfter - 1; w >= 0 && w != hot[t-u].hostAfter-1 { // p.HostAfter(t), p.HostAfter(t − u)
			c.sync = w
			var j int32 // the first copy whose task w + j·u is a copy's
			switch {
			case w >= b:
				j = far // (a synchronisation with a later task: looked up)
			case w < a:
				j = (a - w + u - 1) / u
			}
			c.from = j
			if j <= h.e {
				c.lo = h.end(w+j*u, j)
			}
		}
		if p.queued {
			s, ls := task.stream, h.ls[task.stream]
			need := h.da[s] + p.qlim - pos[t-a] // launches the copies must add
			if need > 0 {
				if ls == 0 {
					return ht, 0, false, false // a wait that never moves: not this reasoning
				}
				reachJ = max(reachJ, int32((need+ls-1)/ls))
			}
			var j int32 // the first copy whose queue wait falls in copies
			switch {
			case ls == 0 || p.qlim <= 0 || int64(far) <= (need+ls-1)/ls:
				j = far // (not the reasoning above: looked up)
			case need > 0:
				j = int32((need + ls - 1) / ls)
			}
			if j <= h.e {
				c.lo = max(c.lo, h.queueEnd(s, pos[t-a]+int64(j)*h.ls[s], j))
			}
			c.from = max(c.from, j)
			// Without a synchronisation, before copy j (from) its queue
			// wait's launch pos + j'·ls − Queue is below da: a played
			// task before the unit (walkCheck looks it up directly).
			c.direct = c.sync < 0 && j < far
		}
		if c.sync < 0 && p.queued && p.qlim > 0 && h.ls[task.stream] > 0 {
			// waits' queue wait is none while pos + j·ls − Queue < 0
			if need := p.qlim - pos[t-a]; need > 0 {
				c.waitFrom = int32(min((need+h.ls[task.stream]-1)/h.ls[task.stream], int64(far)))
			}
		}
		if w, rest := p.QueueSelf(int(t)); w >= 0 {
			if int32(w) < a {
				selfBefore = true
			} else {
				c.self = h.end(int32(w), 0) + rest // w in [a, t): the same in every copy
			}
		}
		c.bound()
		// (walkCheck meets waits from copy max(waitFrom, 1) to from − 1)
		h.waiting = h.waiting || !c.direct && max(c.waitFrom, 1) < c.from
		ht = append(ht, c)
	}
	return ht, reachJ, selfBefore, true
}

// walk plays the thread over copy j from y (in its frame), writing each
// task's issue to iss when write is set; the thread's free time after it.
func (h *hostFrame) walk(ht []hostTask, j int32, y engine.Time, write bool) engine.Time {
	for k := range ht {
		c := &ht[k]
		if j >= c.from {
			y = max(y, c.lo) + c.issue // (lo holds the QueueSelf wait: bound)
		} else {
			y = max(h.waits(c, j, y)+c.issue, c.self)
		}
		if write {
			c.iss = y
		}
	}
	return y
}

// bound sets c's ahead, issOff and issW from its played issue and ready
// time (walkCheck), and folds its QueueSelf wait into lo: max(max(y, lo)
// + issue, self) is max(y, lo, self − issue) + issue (self − issue does not
// overflow: never and the issues are far from the int64 limits), so the
// walks' common case (j ≥ from) takes one maximum.
func (c *hostTask) bound() {
	c.ahead = c.played > c.ready
	lo, hi := engine.Time(-1<<63), c.ready
	if c.ahead {
		lo, hi = c.played, c.played
	}
	c.issOff, c.issW = -lo, uint64(hi-lo) // (hi ≥ lo: the wrapped difference is the width)
	c.lo = max(c.lo, c.self-c.issue)
}

// walkCheck is walk over copy j from y (write unset) that also checks each
// task's issue y' against the played one: a task whose played issue is
// ahead of its inputs (ahead) must be issued at it, y' = played; any other
// must be ahead in the copy too, y' ≤ ready (its issue then cannot equal
// the played one, which is not ahead). ok is false at the first task that
// is neither. That is the check hostRepeats made after each walk, per
// task eq = played > ready || y' > ready and eq ⇒ y' = played: a copy
// passes it exactly when each task meets its bounds [lo, hi] (ahead:
// [played, played]; not: [never, ready]), and then eq = ahead. The bounds
// are tested as one unsigned comparison (y + issOff ≤ issW, wrapped), and
// from `from` on the QueueSelf wait is in lo (bound).
//
// A direct task in a copy j in [waitFrom, from) waits for the task
// holding launch x = pos + j·ls − Queue of its stream, x in [0, da): a
// task before the unit (the entry ending at da is one, and the holder is
// the first entry ending past x), whose end j periods back is its wait.
// walkCheck looks it up itself, for frames whose only waits before
// `from` are such (h.waiting unset; walkWaits walks the others): in
// calls of directWait and holder (≈ 48 and ≈ 50 instructions a lookup:
// the frame's fields loaded again, the calls' spills) the 70B sweep's
// 350 k lookups cost 34 M instructions, and a call left in this loop
// (waits) spilled and reloaded its values around each one. Each
// stream's scan resumes at the entry its last lookup found (dc): a
// frame's copies are walked in order, and a copy's tasks of one stream
// wait for launches in order, each copy's after the last copy's (a
// unit's launches on the stream span less than ls); should a launch lie
// before the last one looked up (dx), the scan starts again from the
// stream's first entry.
func (h *hostFrame) walkCheck(ht []hostTask, j int32, y engine.Time) (engine.Time, bool) {
	for k := range ht {
		c := &ht[k]
		// (The lookups' branch first: the common one, j ≥ from, then
		// falls through to the bounds' test without a jump, 1 instruction
		// of ≈ 17 a task; 1.09 M of the 70B sweep's 1.44 M task-copies:
		// walkCheck 47.3 → 46.2 M.)
		if j < c.from {
			begin := y
			if j >= c.waitFrom {
				if !c.direct {
					panic("parallel: walkCheck met a wait it does not look up (hostFrame.waiting)")
				}
				s := c.stream
				q := h.p.queue[s]
				x := c.pos + int64(j)*h.ls[s] - h.p.qlim
				i := h.dc[s]
				if x < h.dx[s] {
					i = 0
				}
				for q[i].end() <= x {
					i++
				}
				h.dc[s], h.dx[s] = i, x
				begin = max(begin, h.state[q[i].id].End()-engine.Time(j)*h.period)
			}
			y = max(begin+c.issue, c.self)
		} else {
			y = max(y, c.lo) + c.issue
		}
		if uint64(y+c.issOff) > c.issW {
			return y, false
		}
	}
	return y, true
}

// walkWaits is walkCheck with each wait before `from` looked up through
// waits: the walk over copies of frames with a synchronisation or a
// queue wait that is not direct (h.waiting).
func (h *hostFrame) walkWaits(ht []hostTask, j int32, y engine.Time) (engine.Time, bool) {
	for k := range ht {
		c := &ht[k]
		if j >= c.from {
			y = max(y, c.lo) + c.issue
		} else {
			y = max(h.waits(c, j, y)+c.issue, c.self)
		}
		if uint64(y+c.issOff) > c.issW {
			return y, false
		}
	}
	return y, true
}

// waits returns the latest of y and the ends task c of copy j waits for
// before its issue (in the copy's frame): its synchronisation, when not
// the played unit's own (absolute), and the task holding its stream's
// launch Queue places before its first.
func (h *hostFrame) waits(c *hostTask, j int32, y engine.Time) engine.Time {
	if c.sync >= 0 {
		y = max(y, h.end(c.sync+j*h.u, j))
	}
	if h.p.queued {
		y = max(y, h.queueEnd(c.stream, c.pos+int64(j)*h.ls[c.stream], j))
	}
	return y
}

// end is the end of the full play's task f, j periods back.
func (h *hostFrame) end(f, j int32) engine.Time {
	a, b, u, e := h.a, h.b, h.u, h.e
	switch {
	case f < a:
		return h.state[f].End() - engine.Time(j)*h.period
	case f < b+e*u:
		return h.state[a+(f-a)%u].End() + engine.Time((f-a)/u-j)*h.period
	default:
		return h.state[f-e*u].End() + engine.Time(e-j)*h.period
	}
}

// queueEnd is the end, j periods back, of the full play's queue wait of
// the task at launch x of stream s (the played task's position shifted by
// the copies before it): of the task holding launch x − Queue, never for
// none. It is end(queueWait(s, x), j) (hostrepeats_test.go's reference)
// without end's division and remainder: the holder is the task f' holding
// launch x − Queue − m·ls, m copies on (f' + m·u), and f' is the played
// unit's task (m < e: the launch lies in the unit's, [da, da + ls)), a
// task after it (m = e), or one before it (x − Queue < da, m = 0: the
// entries of the tasks before the unit end by da), so in each of end's
// cases f' + m·u, j periods back, ends m − j periods after f' ends. In
// the 70B sweep's checks (≈ 420 k queue waits, most of them the suffix's)
// end cost ≈ 18 instructions a call.
func (h *hostFrame) queueEnd(s Stream, x int64, j int32) engine.Time {
	p := h.p
	x -= p.qlim
	if x < 0 {
		return never
	}
	var m int32
	if x >= h.da[s] {
		m = h.e
		if h.ls[s] > 0 {
			m = min(int32((x-h.da[s])/h.ls[s]), h.e)
		}
		x -= int64(m) * h.ls[s]
	}
	// The holder: lookups mostly come in launch order, each starting
	// where the stream's last one ended (hd).
	q := p.queue[s]
	k := h.hd[s] - 1
	if k < 0 || (k > 0 && q[k-1].end() > x) {
		k = p.queueIndex(s, x)
	}
	for k < len(q) && q[k].end() <= x {
		k++
	}
	h.hd[s] = k + 1
	if k == len(q) {
		return never
	}
	return h.state[q[k].id].End() + engine.Time(m-j)*h.period
}
