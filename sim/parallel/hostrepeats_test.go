package parallel

import (
	"math/rand/v2"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
)

// hostRepeats reads each task's waits once and walks the copies from
// per-task constants (hostTasks); hostRepeatsRef is the walk it replaced
// (issue 18, stats22), every wait looked up per copy. The two must agree
// on every unit, copy count and host thread: ahead, host-bound, falling
// behind, a launch queue full from the warm-up, filling mid-step or never,
// and counts of copies below, at and past the walked ones.
func TestHostRepeatsEqualsReference(t *testing.T) {
	const m = 48
	_, p := unitHost(t, m, 0)
	h1, _ := unitHost(t, m, 1)
	slow := engine.Time(float64(p) * 1.01 / float64(h1))  // the last stage falls behind
	tight := engine.Time(float64(p) * 0.97 / float64(h1)) // just ahead
	fast := 20 * engine.Microsecond
	bound := 2 * engine.Millisecond
	hosts := []HostModel{
		{On: true, KernelFwd: fast, KernelBwd: fast, Call: 5 * engine.Microsecond},
		{On: true, KernelFwd: bound, KernelBwd: bound},
	}
	for _, k := range []engine.Time{slow, tight, fast, bound} {
		for _, q := range []int{1, 2, 6, 16, 64, 1024, 1 << 20} {
			hosts = append(hosts, HostModel{On: true, KernelFwd: k, KernelBwd: k, Call: k / 4, Queue: q})
		}
	}
	checked, accepted := 0, 0
	for n := range 3 * len(hosts) {
		host := hosts[n%len(hosts)]
		cfg := steadyConfig(t, m, host)
		if n >= len(hosts) { // more layers, more stages: more launches per unit, a longer warm-up
			pp, layers := 2, 8
			if n >= 2*len(hosts) {
				pp = 4
			}
			l, err := NewLayout(1, 1, 1, 1, pp, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
			if err != nil {
				t.Fatal(err)
			}
			chunks, err := Partition(layers, pp, 1, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			cfg = hostConfig(t, layers, host)
			cfg.Layout, cfg.Chunks, cfg.Microbatches = l, chunks, m
		}
		plan, short, units := copiedUnits(t, cfg)
		for _, c := range units {
			i := c.stage
			for _, extra := range []int{0, 1, 2, 3, 4, 7, 12, 20, plan.Extra, 3 * plan.Extra} {
				got := short.hostRepeats(i, c.a, c.b, c.win, c.period, extra)
				want := short.hostRepeatsRef(i, c.a, c.b, c.win, c.period, extra)
				if got != want {
					t.Errorf("%+v, stage %d, %d copies: hostRepeats %v, the reference %v", host, i, extra, got, want)
				}
				checked++
				if got {
					accepted++
				}
			}
		}
	}
	t.Logf("%d of %d accepted", accepted, checked)
	// both answers occur
	if accepted == 0 || accepted == checked {
		t.Errorf("%d of %d accepted: want some of each", accepted, checked)
	}
}

// copiedUnit is what hostRepeats is asked of one stage's copied unit: the
// unit [a, b), its check window's start and its period.
type copiedUnit struct {
	stage     int
	a, b, win int32
	period    engine.Time
}

// copiedUnits plays cfg's shortened step (PlanSteady, margin 8, which must
// accept it) and returns the plan, the play and, per stage, its copied
// unit's hostRepeats arguments, as replication asks them (structure's
// units, reach + 1 units of window).
func copiedUnits(t *testing.T, cfg *StepConfig) (Steady, *Executor, []copiedUnit) {
	t.Helper()
	plan, ok := PlanSteady(cfg, 8)
	if !ok {
		t.Fatalf("PlanSteady refused %d micro-batches", cfg.Microbatches)
	}
	_, short, _, _, _ := playSteady(t, cfg)
	reps, reach, why := short.structure(plan)
	if why != "" {
		t.Fatalf("%+v: %s", cfg.Host, why)
	}
	units := make([]copiedUnit, len(short.inst))
	for i := range short.inst {
		in, r := &short.inst[i], reps[i]
		u := r.b - r.a
		units[i] = copiedUnit{stage: i, a: r.a, b: r.b, win: r.b - int32(reach+1)*u,
			period: in.state[r.a].Start() - in.state[r.a-u].Start()}
	}
	return plan, short, units
}

// hostRepeatsRef is hostRepeats as it was before stats22 (the reference).
func (x *Executor) hostRepeatsRef(i int, a, b, win int32, period engine.Time, extra int) bool {
	in := &x.inst[i]
	p := in.prog
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
	// end is the end of the full play's task f, j periods back.
	end := func(f, j int32) engine.Time {
		switch {
		case f < a:
			return in.state[f].End() - engine.Time(j)*period
		case f < b+e*u:
			return in.state[a+(f-a)%u].End() + engine.Time((f-a)/u-j)*period
		default:
			return in.state[f-e*u].End() + engine.Time(e-j)*period
		}
	}
	// The full play's launch queues: per stream, the launches before the
	// unit (da) and in it (ls), the same in every copy (setQueueWaits
	// counts them in integers).
	var da, ls [NumStreams]int64
	for s := range da {
		da[s] = p.queueBefore(Stream(s), a)
		ls[s] = p.queueBefore(Stream(s), b) - da[s]
	}
	// queueWait is the full play's queue wait of the task at launch x of
	// stream s (the played task's position shifted by the copies before
	// it): the task holding launch x − Queue, -1 for none.
	// pos: each task's launches on its stream before it, from the unit on.
	pos := make([]int64, n-a)
	if p.queued {
		var idx [NumStreams]int
		for s := range idx {
			idx[s] = p.queueIndex(Stream(s), da[s]) // the first entry of a task from a on
		}
		for t := a; t < n; t++ {
			s := p.Tasks[t].Stream
			if p.Tasks[t].Kind == KindRecv {
				continue
			}
			q := p.queue[s]
			h := idx[s]
			if h > 0 {
				pos[t-a] = q[h-1].end()
			}
			if h < len(q) && q[h].id == t {
				idx[s]++
			}
		}
	}
	// The walks below ask in launch order mostly: each stream's lookup
	// starts where the last one ended (hd, 1 + the entry; 0: search).
	var hd [NumStreams]int
	holder := func(s Stream, x int64) int32 {
		q := p.queue[s]
		h := hd[s] - 1
		if h < 0 || (h > 0 && q[h-1].end() > x) {
			h = p.queueIndex(s, x)
		}
		for h < len(q) && q[h].end() <= x {
			h++
		}
		hd[s] = h + 1
		if h == len(q) {
			return -1
		}
		return q[h].id
	}
	queueWait := func(s Stream, x int64) int32 {
		x -= p.qlim
		if x < 0 {
			return -1
		}
		if x < da[s] {
			return holder(s, x)
		}
		m := e
		if ls[s] > 0 {
			m = min(int32((x-da[s])/ls[s]), e)
		}
		f := holder(s, x-int64(m)*ls[s])
		if f < 0 {
			return -1
		}
		return f + m*u
	}
	// walk plays the thread over copy j from y (in its frame), writing
	// each task's issue to iss when set; the thread's free time after it.
	// ok is false for a wait it cannot place.
	walk := func(j int32, y engine.Time, iss []engine.Time) (engine.Time, bool) {
		for t := a; t < b; t++ {
			task := &p.Tasks[t]
			if task.Kind == KindRecv {
				continue
			}
			begin := y
			if w := p.HostAfter(int(t)); w >= 0 && w != p.HostAfter(int(t-u)) {
				begin = max(begin, end(int32(w)+j*u, j))
			}
			if p.queued {
				s := task.Stream
				if f := queueWait(s, pos[t-a]+int64(j)*ls[s]); f >= 0 {
					begin = max(begin, end(f, j))
				}
			}
			y = begin + p.Issue(int(t))
			if w, rest := p.QueueSelf(int(t)); w >= 0 {
				if int32(w) < a {
					return 0, false
				}
				y = max(y, end(int32(w)+j*u, j)+rest)
			}
			if iss != nil {
				iss[t-a] = y
			}
		}
		return y, true
	}
	// ready: each task's inputs that move with the copies (the rest end
	// before the window).
	ready := make([]engine.Time, u)
	for t := a; t < b; t++ {
		r := never
		for _, d := range p.Deps(int(t)) {
			if d >= win {
				r = max(r, in.state[d].End())
			}
		}
		ready[t-a] = r
	}
	// check: each task of copy j is ahead and so is the played one, or it
	// is issued as the played one (eq: the tasks that must be).
	iss := make([]engine.Time, u)
	eq := make([]bool, u)
	check := func() bool {
		for t := a; t < b; t++ {
			if p.Tasks[t].Kind == KindRecv {
				continue
			}
			k := t - a
			i0 := in.state[t].Issued()
			eq[k] = i0 > ready[k] || iss[k] > ready[k]
			if eq[k] && iss[k] != i0 {
				return false
			}
		}
		return true
	}
	// From copy J on every queue wait falls in the copies: the same map F.
	var reachJ int32
	if p.queued {
		for t := a; t < b; t++ {
			task := &p.Tasks[t]
			if task.Kind == KindRecv {
				continue
			}
			s := task.Stream
			need := da[s] + p.qlim - pos[t-a] // launches the copies must add
			if need <= 0 {
				continue
			}
			if ls[s] == 0 {
				return false // a wait that never moves: not this reasoning
			}
			reachJ = max(reachJ, int32((need+ls[s]-1)/ls[s]))
		}
	}
	y := s0
	last := min(e, reachJ+2) // copies walked one by one
	var prev engine.Time
	for j := int32(1); j <= last; j++ {
		prev = y
		var ok bool
		if y, ok = walk(j, y-period, iss); !ok {
			return false
		}
		if !check() {
			return false
		}
	}
	sE := y
	if e > last {
		if y > prev {
			return false // the thread falls behind copy after copy
		}
		if y < prev {
			// Running ahead to the fixed point C; the tasks issued as
			// played so far must be issued so at C too.
			var h engine.Time
			for t := a; t < b; t++ {
				if p.Tasks[t].Kind != KindRecv {
					h += p.Issue(int(t))
				}
			}
			if h >= period {
				return false // not this reasoning (y < prev needs h < P)
			}
			c, _ := walk(last, never, nil)
			sE = y + engine.Time(e-last)*(h-period)
			if c > never/2 {
				// The fixed point: copies from here on are issued
				// between copy `last` and it.
				sE = max(sE, c)
				walk(last, c-period, iss)
			}
			for t := a; t < b; t++ {
				if k := t - a; p.Tasks[t].Kind != KindRecv && eq[k] && (c <= never/2 || iss[k] != in.state[t].Issued()) {
					return false // issued as played so far, not further on
				}
			}
		}
	}
	// The suffix: walked from S_E (full play, E periods back) against the
	// played one.
	y = sE
	for t := b; t < n; t++ {
		task := &p.Tasks[t]
		if task.Kind == KindRecv {
			continue
		}
		begin := y
		if w := p.HostAfter(int(t)); w >= 0 {
			if int32(w) < a {
				return false
			}
			begin = max(begin, end(int32(w)+e*u, e))
		}
		if p.queued {
			if f := queueWait(task.Stream, pos[t-a]+int64(e)*ls[task.Stream]); f >= 0 {
				begin = max(begin, end(f, e))
			}
		}
		y = begin + p.Issue(int(t))
		if w, rest := p.QueueSelf(int(t)); w >= 0 {
			if int32(w) < a {
				return false
			}
			y = max(y, end(int32(w)+e*u, e)+rest)
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

// queueWait is the full play's queue wait of the task at launch x of
// stream s (the played task's position shifted by the copies before it):
// the task holding launch x − Queue, -1 for none; queueEnd's reference
// (the lookup hostRepeats made before issue 18's round 51).
func (h *hostFrame) queueWait(s Stream, x int64) int32 {
	x -= h.p.qlim
	if x < 0 {
		return -1
	}
	if x < h.da[s] {
		return h.holder(s, x)
	}
	m := h.e
	if h.ls[s] > 0 {
		m = min(int32((x-h.da[s])/h.ls[s]), h.e)
	}
	f := h.holder(s, x-int64(m)*h.ls[s])
	if f < 0 {
		return -1
	}
	return f + m*h.u
}

// queueEnd is end(queueWait(s, x), j) (never for none) without end's
// division: on the reference test's frames (launch queues of 1 to 2^20,
// pp 1, 2 and 4, several copy counts), for every stream, at launches
// before the step's first wait, before, in and past the unit's, in the
// copies and the suffix (the edges of each, every task's position in
// copies 0 to e + 2, and random ones), j periods back for j from 0 to
// e + 2, the two agree.
func TestQueueEndEqualsEndOfQueueWait(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 2))
	checked, none, before, in, past := 0, 0, 0, 0, 0
	hostTasksHook = func(h *hostFrame, ht []hostTask) {
		if !h.p.queued {
			return
		}
		for s := range NumStreams {
			q := h.p.queue[s]
			if len(q) == 0 {
				continue
			}
			da, ls, ql := h.da[s], h.ls[s], h.p.qlim
			last := q[len(q)-1].end() + int64(h.e+1)*ls
			xs := []int64{0, ql - 1, ql, ql + da - 1, ql + da, ql + da + ls - 1, ql + da + ls,
				ql + da + int64(h.e)*ls - 1, ql + da + int64(h.e)*ls, ql + da + int64(h.e+1)*ls, ql + last - 1, ql + last}
			for k := range ht {
				if c := &ht[k]; c.stream == Stream(s) {
					for j := range h.e + 3 {
						xs = append(xs, c.pos+int64(j)*ls)
					}
				}
			}
			for range 64 {
				xs = append(xs, rng.Int64N(ql+last+1))
			}
			f, g := *h, *h
			for _, x := range xs {
				if x < 0 {
					continue
				}
				for j := range h.e + 3 {
					want := never
					if w := f.queueWait(Stream(s), x); w >= 0 {
						want = f.end(w, j)
					}
					if got := g.queueEnd(Stream(s), x, j); got != want {
						t.Fatalf("stream %d launch %d (Queue %d, da %d, ls %d, e %d), %d periods back: queueEnd %d, end of queueWait %d",
							s, x, ql, da, ls, h.e, j, got, want)
					}
					checked++
					switch y := x - ql; {
					case want == never:
						none++
					case y < da:
						before++
					case y < da+ls:
						in++
					default:
						past++
					}
				}
			}
		}
	}
	defer func() { hostTasksHook = nil }()
	TestHostRepeatsEqualsReference(t)
	t.Logf("%d lookups: %d none, %d before the unit, %d in it, %d past it", checked, none, before, in, past)
	if none == 0 || before == 0 || in == 0 || past == 0 {
		t.Errorf("%d lookups: %d none, %d before the unit, %d in it, %d past it: want some of each", checked, none, before, in, past)
	}
}

// queueEnd agrees with end(queueWait(s, x), j) on random frames too: a
// unit of 1 to 6 tasks after 0 to 6 played ones, a suffix of 0 to 6,
// each task on stream 0 or 1 with 0 to 3 launches (so that a stream may
// have no launches in the unit, ls = 0, and some before or after it), a
// launch queue of 0 to 5, 0 to 4 copies, at every launch up to past the
// suffix's and j from 0 to e + 2.
func TestQueueEndRandomFrames(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 3))
	checked, flat := 0, 0
	for range 3000 {
		a, u := int32(rng.IntN(7)), int32(1+rng.IntN(6))
		n := a + u + int32(rng.IntN(7))
		p := &Program{qlim: int64(rng.IntN(6))}
		var ends [2]int64
		for id := range n {
			if l := int64(rng.IntN(4)); l > 0 {
				s := rng.IntN(2)
				ends[s] += l
				p.queue[s] = append(p.queue[s], qEntry(ends[s], id))
			}
		}
		state := make([]taskState, n)
		for k := range state {
			state[k].end = engine.Time(1 + rng.IntN(1000))
		}
		h := hostFrame{p: p, state: state, a: a, b: a + u, u: u, e: int32(rng.IntN(5)), period: engine.Time(1 + rng.IntN(100))}
		for s := range h.da {
			h.da[s] = p.queueBefore(Stream(s), a)
			h.ls[s] = p.queueBefore(Stream(s), a+u) - h.da[s]
		}
		for s := range 2 {
			if h.ls[s] == 0 && ends[s] > h.da[s] {
				flat++
			}
			f, g := h, h
			for x := int64(0); x <= p.qlim+ends[s]+int64(h.e+1)*h.ls[s]+1; x++ {
				for j := range h.e + 3 {
					want := never
					if w := f.queueWait(Stream(s), x); w >= 0 {
						want = f.end(w, j)
					}
					if got := g.queueEnd(Stream(s), x, j); got != want {
						t.Fatalf("%+v stream %d launch %d, %d periods back: queueEnd %d, end of queueWait %d", h, s, x, j, got, want)
					}
					checked++
				}
			}
		}
	}
	t.Logf("%d lookups, %d streams with launches after the unit and none in it", checked, flat)
	if flat == 0 {
		t.Error("no stream without launches in the unit and some after it")
	}
}

// holder is the task holding launch x of stream s, -1 for none (queueWait's
// lookup, each starting where the stream's last one ended).
func (h *hostFrame) holder(s Stream, x int64) int32 {
	p := h.p
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
		return -1
	}
	return q[k].id
}

// tasks reads each task's synchronisation from the hot records: one the
// unit shares with the unit before (the same task: absolute) is none, one
// that moves with the unit (relative: to a task in the unit or before it)
// is kept, with the first copy whose task is a copy's (from) and that
// task's end in the copy's frame (lo). (The reference test's plays have
// no relative synchronisation in a unit.)
func TestHostTasksSync(t *testing.T) {
	const a, u, n = 6, 3, 9 // the unit: tasks 6, 7 and 8; the one before: 3, 4 and 5
	hot := make([]hotTask, n)
	state := make([]taskState, n)
	for k := range n {
		hot[k].issue = 1
		state[k].end, state[k].issued = engine.Time(10*k+1), engine.Time(10*k+1) // End and Issued 10·k
	}
	hot[6].hostAfter, hot[3].hostAfter = 1+1, 1+1 // both wait for task 1: absolute
	hot[7].hostAfter, hot[4].hostAfter = 1+6, 1+3 // the unit's first task: relative, in the unit
	hot[8].hostAfter, hot[5].hostAfter = 1+4, 1+1 // four tasks back: relative, before the unit
	h := hostFrame{p: &Program{depOff: make([]int32, n+1)}, state: state, a: a, b: n, u: u, e: 4, period: 100}
	ht, _, _, ok := h.tasks(nil, hot, make([]int64, u), 0)
	if !ok || len(ht) != u {
		t.Fatalf("tasks: %d tasks, %v", len(ht), ok)
	}
	want := []struct {
		sync, from int32
		lo         engine.Time
	}{
		{-1, 0, never},
		{6, 0, 60},       // task 6 itself in every copy's frame
		{4, 1, 70 - 100}, // from copy 1: task 4 + 3 = 7 of copy 1, its end one period back
	}
	for k, w := range want {
		if c := &ht[k]; c.sync != w.sync || c.from != w.from || c.lo != w.lo {
			t.Errorf("task %d: sync %d from %d lo %d, want %d, %d, %d", c.t, c.sync, c.from, c.lo, w.sync, w.from, w.lo)
		}
	}
}

// hostRepeats allocates nothing once its scratch has room (the frame stays
// on its stack: heapf51), whether it accepts the unit or not, with the test
// hook unset: each unit, copy count and host thread is asked twice, the
// second time counted.
func TestHostRepeatsAllocatesNothing(t *testing.T) {
	const m = 48
	_, p := unitHost(t, m, 0)
	h1, _ := unitHost(t, m, 1)
	tight := engine.Time(float64(p) * 0.97 / float64(h1))
	for _, tc := range []struct {
		name string
		host HostModel
	}{
		{"fast", HostModel{On: true, KernelFwd: 20 * engine.Microsecond, KernelBwd: 20 * engine.Microsecond, Call: 5 * engine.Microsecond}},
		{"bound", HostModel{On: true, KernelFwd: 2 * engine.Millisecond, KernelBwd: 2 * engine.Millisecond}},
		{"tight, queue 6", HostModel{On: true, KernelFwd: tight, KernelBwd: tight, Call: tight / 4, Queue: 6}},
		{"tight, queue 1024", HostModel{On: true, KernelFwd: tight, KernelBwd: tight, Call: tight / 4, Queue: 1024}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, short, units := copiedUnits(t, steadyConfig(t, m, tc.host))
			for _, c := range units {
				i := c.stage
				for _, extra := range []int{0, 3, plan.Extra} {
					short.hostRepeats(i, c.a, c.b, c.win, c.period, extra) // the scratch's room
					if n := testing.AllocsPerRun(3, func() { short.hostRepeats(i, c.a, c.b, c.win, c.period, extra) }); n != 0 {
						t.Errorf("stage %d, %d copies: %v allocations a call, want 0", i, extra, n)
					}
				}
			}
		})
	}
}
