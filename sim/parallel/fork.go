package parallel

import (
	"bytes"
	"errors"
	"slices"
	"unsafe"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/hugepages"
)

// Resuming a failed shortened play as the full step's play (issue 18).
// The played step's programs (PlanSteady's Played micro-batches) and the
// full step's agree on each stage's tasks up to the first schedule entry
// where their orders differ (the played step's cool-down; its first last
// backward, which issues the gradient reductions, at the latest): its
// common prefix. Until the first task past a common prefix gets all its
// inputs, in either play, both plays run the same events in the same
// order. RunSteady with a Fork saves the shortened play's state (the
// engine's pending events, the prefix's task states, the host thread and
// the interference state) at a pause before that moment; when the play
// then fails, Resume loads the state into the full step's executor, which
// plays on from there instead of from the start. Every condition is
// checked on the saved state and both programs (ErrNoResume otherwise, and
// the caller plays the full step from the start), so the resumed play is
// the full play event for event.

// ErrNoResume says the saved state is not one the full step's play passes
// through (Resume); the caller plays the full step from the start.
var ErrNoResume = errors.New("parallel: the saved shortened play does not resume as the full step")

// Fork is a shortened play's state saved by RunSteady for Resume. The zero
// value is empty; it reuses its storage from one save to the next.
type Fork struct {
	eng   engine.Snapshot
	saved bool
	done  int // tasks ended at the save
	base  int // of them, those the saving play itself resumed (Resume)
	h, hh engine.HandlerID
	// cp holds the common prefixes' copies (Detach), its own or shared
	// with other Forks (ShareCopies); valid while cp.owner is f.
	cp       *forkCopy
	progs    []*Program // the shortened play's, until Detach
	detached bool       // the prefixes are copied (Detach)
	inst     []forkInst
}

// forkCopy is what the play reads of the common prefixes' tasks (their
// hotTasks, and the sends' and receives' peers and matches, forkP2P),
// their dependency offsets, dependencies and launch-queue waits, every
// stage's one after the other (forkInst.at …), copied by the Detach of
// owner.
//
// The symmetric play reads a task's hotTask (the times, waits, kind,
// group, stream and flags, which fillHot copied from its Task) and, for a
// send, its peer stage and match. The rest (name, layer, micro-batch,
// FLOPs, bytes …) is read only from the executor's own programs, after
// the play or in full mode, so two prefixes equal in these play the same
// events. The hotTasks are copied from the saving executor's own (32
// bytes a task, in one run, not built from the 80-byte Tasks), and the
// peers and matches of the prefix's sends and receives (few) beside them.
type forkCopy struct {
	owner *Fork
	// gen counts the Detaches and Reserves that rewrote or replaced the
	// copies (a resumed build's Program.prefix names the one it copied)
	gen uint64
	// saver's saved prefixes' task states, inputs awaited and event
	// counts (save), every stage's one after the other (forkInst.state,
	// need, events are windows of them)
	saver        *Fork
	state        []taskState
	need, events []int32
	hot          []hotTask
	p2p          []forkP2P
	deps         []int32
	depOff       []int32
	qself        []int32
	qrest        []engine.Time
	// queue holds the prefixes' launch-queue entries, each stage's
	// streams one after the other (forkInst.qEnt, qn)
	queue []queueEntry
	// hot, depOff, deps and queue are where Detach put its copies: each
	// in the arena's pool of its kind (parkA, parkBuild: parked) or in
	// own's arrays (Reserve's)
	own struct {
		hot          []hotTask
		depOff, deps []int32
		queue        []queueEntry
	}
	// parkA is the arena whose pools hold one of Detach's copies (nil:
	// none; parked), and parkBuild its build they were copied after
	parkA     *Arena
	parkBuild uint64
	// rescued is the first stage whose copies rescue moved to own's
	// arrays (0: none moved); the stages before it hold none
	rescued int
	// how far each array's pages are mapped (warm.go): save and Detach
	// size their copies before appending, so the pages are mapped in one
	// call each rather than faulted one by one
	warmState, warmNeed, warmEvents, warmHot   warmth
	warmDepOff, warmDeps, warmQself, warmQrest warmth
	warmQueue                                  warmth
	// maps holds the storage Reserve made outside the Go heap (fresh.go)
	maps mappings
}

// forkP2P is a prefix send's or receive's peer stage and match.
type forkP2P struct{ t, peer, match int32 }

// ShareCopies makes f keep the prefixes it copies (Detach) and the state
// it saves in o's storage, which both then reuse: the copies are most of a
// Fork's memory (a 32-byte hotTask and its dependencies per prefix task,
// against 32 bytes of state), and a sweep worker's two Forks are saved and
// detached one after the other, each resumed before the other saves (the
// second shortened play resumes from the first's Fork and saves its own,
// which the full play resumes). A Fork whose copies or state another
// Fork's Detach or save has since replaced no longer resumes (ErrNoResume,
// and the caller plays from the start).
//
// A state f saved in copies it shared no longer is dropped: its windows
// (forkInst) would otherwise outlive the copies' storage (mappings).
func (f *Fork) ShareCopies(o *Fork) {
	if o.cp == nil {
		o.cp = new(forkCopy)
	}
	if f.cp != nil && f.cp != o.cp {
		f.Clear()
		f.inst, f.detached = nil, false
	}
	f.cp = o.cp
}

// prefix is the first task of entry e, every task for e past the order.
func prefix(p *Program, e int) int32 {
	if e < len(p.entries) {
		return p.entries[e]
	}
	return int32(len(p.Tasks))
}

type forkInst struct {
	common  int32       // the common prefix's tasks
	state   []taskState // theirs (in forkCopy.state)
	need    []int32     // their inputs still awaited (instance.need; in forkCopy.need)
	events  []int32     // their engine events (CountEvents; counted: kept; in forkCopy.events)
	counted bool
	// hot is the saving executor's hotTasks of the program, until Detach
	// copies the prefix's (the executor's storage, like the program's, is
	// reused by the next build in the same Arena, which Detach precedes).
	hot []hotTask
	// where the prefix's hotTasks, dependency offsets, dependencies and
	// launch-queue waits start in Fork's copies (Detach), and its sends'
	// and receives' [p2pAt, p2pEnd)
	at, offAt, depAt, qAt int
	p2pAt, p2pEnd         int
	// the prefix's launch-queue entries per stream, from qEnt in Fork's
	// copies, and the program's queue bound and per-kernel costs, when
	// setQueueWaits walked it with ends its entries hold (qwalk:
	// Program.qwide nil; queuePrefix)
	qwalk bool
	qEnt  int
	qn    [NumStreams]int32
	qlim  int64
	qperK [2]int64
	// the instance's other state (instance)
	hosted, queued     bool // the program has a host thread, launch-queue waits (QueueSelf)
	hostNext, hostWait int32
	hostFree           engine.Time
	busy, cur, sized   int32
	share              uint16
	rem, rate          int64
	since, end         engine.Time
}

// Saved reports whether f holds a state, and then how many tasks had
// ended when it was saved (those a Resume does not play again) and how
// many of them the saving play played itself (the others it had resumed
// from another Fork). A nil Fork holds none.
func (f *Fork) Saved() (saved bool, done, own int) {
	if f == nil || !f.saved {
		return false, 0, 0
	}
	return true, f.done, f.done - f.base
}

// forkBack is how many units before the end of its common prefix the
// first stage's tasks must have ended for RunSteady to save a Fork. The
// pause must come before any task past a prefix gets its inputs in either
// play, and the first stage's cool-down starts first (a pipeline's
// backward reaches it last); a pause later than one unit before was
// refused on most plays of the 70B sweep, so one (save checks it anyway).
const forkBack = 1

// save saves x's state into f when every task past each stage's common
// prefix is still waiting for an input (else f stays empty).
func (f *Fork) save(x *Executor, st Steady) {
	f.Clear()
	f.detached = false
	f.inst = f.inst[:0]
	nc, counted := 0, false
	for i := range x.inst {
		in := &x.inst[i]
		p := in.prog
		c := prefix(p, st.stages[in.stage].common)
		hot := x.hotTasks(i) // the Tasks' kinds, on fewer cache lines
		// (the instance's slices and flag in locals: through in, as
		// depsIn reads them, every task reloaded four of them; issue
		// 18, fork50b)
		n := int32(len(p.Tasks))
		state, need, hosted := in.state[:n], in.need[:n], p.Hosted
		hot = hot[:n]
		for t := c; t < n; t++ {
			st := &state[t]
			if st.start > 0 {
				return // started (a receive by its send), past the common prefix
			}
			if hot[t].kind == KindRecv {
				continue
			}
			// depsIn: all inputs in, the issue aside with a host thread
			if k := need[t]; k <= 0 || hosted && st.issued == 0 && k <= 1 {
				return // this play has run past the common prefix
			}
		}
		if len(f.inst) < cap(f.inst) {
			f.inst = f.inst[:len(f.inst)+1]
		} else {
			f.inst = append(f.inst, forkInst{})
		}
		f.inst[len(f.inst)-1].common = c
		nc += int(c)
		counted = counted || in.events != nil
	}
	// Every stage's prefix state one after the other in one array of
	// each kind, kept from save to save (roomy) and shared with the other
	// Fork (ShareCopies): arrays per stage were each grown by the stages
	// of the layouts a sweep worker met, ≈ 340 growths and 14 MB of the
	// 1,000-point 70B sweep's garbage (issue 18, garb24).
	if f.cp == nil {
		f.cp = new(forkCopy)
	}
	cp := f.cp
	cp.saver = f
	cp.state, cp.need = roomy(cp.state, nc), roomy(cp.need, nc)
	warmTo(&cp.warmState, cp.state, nc)
	warmTo(&cp.warmNeed, cp.need, nc)
	cp.events = cp.events[:0]
	if counted {
		cp.events = roomy(cp.events, nc)
		warmTo(&cp.warmEvents, cp.events, nc)
	}
	for i := range x.inst {
		in, fi := &x.inst[i], &f.inst[i]
		c := fi.common
		// (field by field: Detach's fields are its own)
		a := len(cp.state)
		cp.state, cp.need = append(cp.state, in.state[:c]...), append(cp.need, in.need[:c]...)
		fi.state, fi.need = cp.state[a:len(cp.state):len(cp.state)], cp.need[a:len(cp.need):len(cp.need)]
		fi.events, fi.counted = nil, in.events != nil
		if fi.counted {
			a := len(cp.events)
			cp.events = append(cp.events, in.events[:c]...)
			fi.events = cp.events[a:len(cp.events):len(cp.events)]
		}
		fi.hot = in.hot
		fi.hostNext, fi.hostWait, fi.hostFree = in.hostNext, in.hostWait, in.hostFree
		fi.busy, fi.cur, fi.sized, fi.share = in.busy, in.cur, in.sized, in.share
		fi.rem, fi.rate, fi.since, fi.end = in.rem, in.rate, in.since, in.end
	}
	f.progs = append(f.progs[:0], x.progs...)
	f.done, f.base, f.h, f.hh = x.done, x.resumed, x.h, x.hh
	x.eng.Save(&f.eng)
	f.saved = true
}

// roomy returns s emptied with room for n elements: s's array when it
// holds n, else a new one of n and half as many again, left unwritten
// (grown, builder.go). A sweep's forks meet larger prefixes point after
// point: sized exactly (or grown by append's quarter) they were
// reallocated at each larger one, 24 MB of the 1,000-point 70B sweep's
// allocations (size24), all of it first touches once the collector runs
// seldom (Arena.Reserve).
func roomy[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:0]
	}
	return make([]T, 0, n+n/2)
}

// Reserve makes room in f's copies (its own, or those it shares:
// ShareCopies) for the saved state and detached prefixes of programs of up
// to tasks tasks in all (an upper bound given before the first play, as
// for Arena.Reserve; a prefix is at most its program's tasks): the prefix
// states, inputs awaited and event counts (save) and the prefixes' hot
// records, dependency offsets and lists (as many dependencies a task as
// Arena.Reserve), launch-queue waits and entries (Detach) then fit without
// a new array. Storage already that large is kept; smaller storage is
// replaced, not copied, by storage at least twice as large. Call it
// between plays: it drops what f and the Forks sharing its copies hold (a
// Resume from them is refused, ErrNoResume). The storage is fresh memory
// outside the Go heap where the system maps it (freshSlice, given back
// when the copies' holder is collected): zero without a clear, no page
// mapped until a prefix reaches it, and reserving it starts no collection
// (mappings, fresh.go). tasks <= 0 reserves nothing and drops nothing.
//
// Why: roomy grows each array by half as much again when a larger prefix
// arrives, and a sweep worker meets larger prefixes point after point:
// each growth leaves the array before it, written, for the collector,
// which a worker's reserved arena makes run seldom, so every growth was
// new pages (on the 70B sweep, page faults in save and Detach 4,636 →
// 2,080 with the reservation; docs/design.md "Speed", mem34).
func (f *Fork) Reserve(tasks int) {
	if tasks <= 0 {
		return
	}
	if f.cp == nil {
		f.cp = new(forkCopy)
	}
	cp := f.cp
	cp.owner, cp.saver = nil, nil // the copies and state held no longer valid
	cp.gen++
	m := &cp.maps
	cp.state, cp.need = reserveEmpty(m, cp.state, tasks), reserveEmpty(m, cp.need, tasks)
	cp.events = reserveEmpty(m, cp.events, tasks)
	o := &cp.own
	o.hot = reserveEmpty(m, o.hot, tasks)
	o.depOff = reserveEmpty(m, o.depOff, tasks+tasks/64+64) // one more per stage
	o.deps = reserveEmpty(m, o.deps, int(float64(tasks)*reserveDepsPerTask))
	cp.qself, cp.qrest = reserveEmpty(m, cp.qself, tasks), reserveEmpty(m, cp.qrest, tasks)
	o.queue = reserveEmpty(m, o.queue, tasks)
	cp.hot, cp.depOff, cp.deps, cp.queue = o.hot, o.depOff, o.deps, o.queue
	cp.parkA, cp.rescued = nil, 0
}

// reserveEmpty returns s emptied, replaced when its capacity is under n
// by an empty slice of fresh storage (freshSlice, owned by m: zero, no
// page mapped until written, nothing to copy) with room for n, or for
// twice s's capacity if more.
func reserveEmpty[T any](m *mappings, s []T, n int) []T {
	if cap(s) < n {
		return freshSlice[T](m, max(n, 2*cap(s)))[:0]
	}
	return s[:0]
}

// Clear empties f.
func (f *Fork) Clear() {
	f.saved = false
	clear(f.progs)
	f.progs = f.progs[:0]
	for i := range f.inst {
		f.inst[i].hot = nil
	}
}

// Detach copies what Resume compares of the shortened play's programs
// (what the play reads of their common prefixes' tasks, forkCopy; their
// dependencies and launch-queue waits) into f, so that the programs' and
// the saving executor's storage may be reused: the full step built in the
// same Arena. It must come before that build. The hot records,
// dependency offsets, dependencies and launch-queue entries are parked in
// the arena's pools where they have populated room (parkCopy): they then
// hold through the arena's next build (which resumes the stages from
// them, or rescues a stage's before it writes over them: Fork.rescue,
// rescueAhead) and the start of the one after; a Resume after a later
// build, or one whose build wrote over them, is refused (ErrNoResume).
func (f *Fork) Detach() {
	if !f.saved || len(f.progs) == 0 {
		return
	}
	if f.cp == nil {
		f.cp = new(forkCopy)
	}
	cp := f.cp
	cp.owner = f
	cp.gen++
	// Sized at once: a sweep's failed plays grow, and appending would
	// copy the largest ones several times.
	// The p2p tasks and launch-queue entries copied are at most the
	// programs' (Program.p2p, when listed, and queue): room for those too,
	// where they grew by append, ≈ 0.16 MB over the 1,000-point 70B sweep
	// (walk43).
	// The launch-queue entries copied are each stream's up to the
	// prefix's end (fi.qn, found here once): their pages are mapped
	// before the copies as the other arrays' are (warmTo; the prefixes'
	// entries were ≈ 0.9 MB at the 70B sweep's largest, faulted page by
	// page before).
	var nt, nd, nq, np, ne, nqe int
	for i := range f.inst {
		p, fi := f.progs[i], &f.inst[i]
		c := int(fi.common)
		nt += c
		nd += int(p.depOff[c])
		if p.qself != nil {
			nq += c
		}
		np += len(p.p2p)
		if p.qwalk {
			for s, q := range p.queue {
				ne += len(q)
				n, _ := slices.BinarySearchFunc(q, int32(c), func(e queueEntry, t int32) int { return int(e.id - t) })
				fi.qn[s] = int32(n)
				nqe += n
			}
		}
	}
	// The records, offsets, dependencies and queue entries parked in
	// the arena's populated room where it has it (parkCopy), else in
	// the Fork's own arrays.
	a := f.progs[0].arena
	for _, p := range f.progs {
		if p.arena != a {
			a = nil // (programs of several arenas: nothing parked)
		}
	}
	var hotP *pool[hotTask]
	var offP, depP *pool[int32]
	var qP *pool[queueEntry]
	if a != nil {
		hotP, offP, depP, qP = &a.hot, &a.depOff, &a.deps, &a.queue
	}
	cp.parkA, cp.rescued = nil, 0
	var parked [4]bool
	cp.hot, parked[0] = parkCopy(hotP, &cp.own.hot, &cp.warmHot, nt, nt)
	cp.depOff, parked[1] = parkCopy(offP, &cp.own.depOff, &cp.warmDepOff, nt+len(f.inst), nt+len(f.inst))
	cp.deps, parked[2] = parkCopy(depP, &cp.own.deps, &cp.warmDeps, nd, nd)
	cp.queue, parked[3] = parkCopy(qP, &cp.own.queue, &cp.warmQueue, ne, nqe)
	if parked != [4]bool{} {
		cp.parkA, cp.parkBuild = a, a.builds
	}
	cp.p2p = roomy(cp.p2p, np)
	cp.qself, cp.qrest = roomy(cp.qself, nq), roomy(cp.qrest, nq)
	warmTo(&cp.warmQself, cp.qself, nq)
	warmTo(&cp.warmQrest, cp.qrest, nq)
	for i := range f.inst {
		p, fi := f.progs[i], &f.inst[i]
		c := int(fi.common)
		// One flat copy for every stage (storage reused point after
		// point); Deps(t) is deps[depOff[t]:depOff[t+1]].
		fi.at, fi.offAt, fi.depAt, fi.qAt = len(cp.hot), len(cp.depOff), len(cp.deps), len(cp.qself)
		if len(fi.hot) == len(p.Tasks) {
			cp.hot = append(cp.hot, fi.hot[:c]...)
		} else { // not an executor's own (NewSymmetric fills them)
			for t := range p.Tasks[:c] {
				h, w := hotOf(&p.Tasks[t]), p.waits(t)
				h.issue, h.hostAfter, h.queueAfter = w.issue, w.hostAfter, w.queueAfter
				cp.hot = append(cp.hot, h)
			}
		}
		fi.hot = nil
		// The prefix's sends and receives: from the build's list of
		// them (p2pListed: every one, in task order, CheckHot) rather
		// than a test of every record's kind in a loop, which also
		// reloaded cp's slices after each append: Detach 15.4 → 8.7 M
		// instructions on the 70B sweep (0.68 M prefix tasks;
		// cachegrind, -bench Sweep70BAll). (The largest host and queue
		// wait, once taken here in a loop of its own, is sameHot's.)
		fi.p2pAt = len(cp.p2p)
		hot := cp.hot[fi.at:len(cp.hot):len(cp.hot)]
		pp := cp.p2p
		if p.p2pListed {
			for _, t := range p.p2p {
				if t >= int32(c) {
					break
				}
				task := &p.Tasks[t]
				pp = append(pp, forkP2P{t, task.Peer(), task.Match()})
			}
		} else {
			for t := range hot {
				if k := hot[t].kind; k == KindSend || k == KindRecv {
					task := &p.Tasks[t]
					pp = append(pp, forkP2P{int32(t), task.Peer(), task.Match()})
				}
			}
		}
		cp.p2p = pp
		fi.p2pEnd = len(cp.p2p)
		cp.depOff = append(cp.depOff, p.depOff[:c+1]...)
		cp.deps = append(cp.deps, p.deps[:p.depOff[c]]...)
		fi.queued = p.qself != nil
		if fi.queued {
			cp.qself, cp.qrest = append(cp.qself, p.qself[:c]...), append(cp.qrest, p.qrest[:c]...)
		}
		fi.qwalk, fi.qEnt, fi.qlim, fi.qperK = p.qwalk && p.qwide == nil, len(cp.queue), p.qlim, p.qperK
		if p.qwalk { // the entries of the prefix's tasks: each stream's first ones (fi.qn, above)
			for s, q := range p.queue {
				cp.queue = append(cp.queue, q[:fi.qn[s]]...)
			}
		}
		fi.hosted = p.Hosted
	}
	clear(f.progs)
	f.progs = f.progs[:0]
	f.detached = true
}

// parkCopy returns an empty slice with room for n elements for one of
// Detach's copies: at the top of pool p's populated pages (warmTo's),
// above its last build's extent, when it has that room (parked), else
// own's array (roomy, with room for room elements, its first n mapped
// ahead: w). The next build writes its programs from the pool's start,
// so a parked copy lies where that build reaches last, if at all; its
// readers test that it has not (pool.above, Fork.prefixIntact).
//
// Why: Detach's copies were arrays of their own, 1,093 pages populated
// on the 70B sweep's two workers (hot records 634, launch-queue entries
// 234, dependencies 145, offsets 80; a throwaway counter of warmTo's
// populated bytes, issue 18, detach51), pages nothing else writes, while
// the pools' populated room above a shortened build, which the worker's
// larger builds populated before, lay unused.
func parkCopy[T any](p *pool[T], own *[]T, w *warmth, room, n int) ([]T, bool) {
	if p != nil && n > 0 {
		buf := p.buf
		var zero T
		if len(buf) > 0 && p.warm.base == uintptr(unsafe.Pointer(unsafe.SliceData(buf))) {
			top := min(int(p.warm.ready/unsafe.Sizeof(zero)), len(buf))
			if top-n >= p.used {
				return buf[top-n : top-n : top], true
			}
		}
	}
	*own = roomy(*own, room)
	warmTo(w, *own, n)
	return *own, false
}

// prefixIntact says stage s's copies of its prefix's hot records,
// dependency offsets and dependencies (Detach) still hold what Detach
// wrote: each in the Fork's own arrays (from stage rescued on), or parked
// (parkCopy) in an arena where at most one build has written its pools
// since (Arena.written) and has not filled them up to the copies
// (pool.above; a build that resumes the stage reads them at the stage's
// start, Resume after the build, the build after it's rescue at its
// start).
func (f *Fork) prefixIntact(s int) bool {
	cp, fi := f.cp, &f.inst[s]
	a := cp.parkA
	if a == nil {
		return s >= cp.rescued
	}
	if a.written > cp.parkBuild+1 {
		return false
	}
	c := int(fi.common)
	if !a.hot.above(cp.hot[fi.at:fi.at+c]) || !a.depOff.above(cp.depOff[fi.offAt:fi.offAt+c+1]) {
		return false
	}
	return a.deps.above(cp.deps[fi.depAt : fi.depAt+int(cp.depOff[fi.offAt+c])])
}

// rescue moves the parked copies (parkCopy) of stage s and the stages
// after it into the Fork's own arrays, at the same offsets, when they are
// intact: the build in progress, at stage s's start, does not resume
// stage s from them (resumeKept), so Resume compares the stage's prefix
// with them after the build, which may by then have written over the
// park. The copies of the stages before s are given up (prefixIntact
// refuses them): their builds resumed from them (builtPrefix: Resume does
// not read them) or found them written over.
func (f *Fork) rescue(s int) {
	cp := f.cp
	if cp == nil || cp.parkA == nil || cp.owner != f || s < 0 || s >= len(f.inst) {
		return
	}
	fi := &f.inst[s]
	if !f.prefixIntact(s) || !cp.parkA.queue.above(cp.queue[fi.qEnt:]) {
		return // (the stage's park written over: Resume refuses it)
	}
	cp.hot = unpark(&cp.own.hot, cp.hot, fi.at)
	cp.depOff = unpark(&cp.own.depOff, cp.depOff, fi.offAt)
	cp.deps = unpark(&cp.own.deps, cp.deps, fi.depAt)
	cp.queue = unpark(&cp.own.queue, cp.queue, fi.qEnt)
	cp.parkA.unguardPools()
	cp.parkA, cp.rescued = nil, s
}

// guardPark keeps the build of stage s in arena a below the copies parked
// there (parkCopy) of the stages after it, which their builds and Resume
// read later (pool.stop): a stage that needs the room past them rescues
// them first. Stage s's own copy lies below theirs, and its build reads it
// at its start (resumeKept), before it writes past it. With a nil f (no
// Fork to resume from) it only drops the pools' stops.
//
// Why: a stage's build could reach a later stage's parked copies, whose
// start (rescue, or rescueAhead's estimate one stage ahead) then found
// them written over, and Resume refused the whole play. Whether a build
// reached them depended on how far the arena's earlier builds had
// populated its pools (the park lies at their top), so a Reuse's history
// decided whether a failed shortened play was resumed or played again:
// the 70B sweep's point 965, after eleven other points on one Reuse,
// played 188,293 tasks where a fresh run played 169,608 (issue 18, round
// 56; TestResumeIndependentOfHistory, and TestClusterSendSharesEqualFresh
// holds Reuse runs to fresh ones).
func (f *Fork) guardPark(s int, a *Arena) {
	a.unguardPools()
	if f == nil || a == nil || f.cp == nil || f.cp.parkA != a || f.cp.owner != f || s+1 >= len(f.inst) {
		return
	}
	cp := f.cp
	fi := &f.inst[s+1]
	guardPool(&a.hot, cp.hot, fi.at, f, s+1)
	guardPool(&a.depOff, cp.depOff, fi.offAt, f, s+1)
	guardPool(&a.deps, cp.deps, fi.depAt, f, s+1)
	guardPool(&a.queue, cp.queue, fi.qEnt, f, s+1)
}

// guardPool sets pool p's stop at the start of parked[at:] (the copies
// of stage and the stages after it), when that lies in p's array.
func guardPool[T any](p *pool[T], parked []T, at int, f *Fork, stage int) {
	if at >= len(parked) || !inPool(p, parked) {
		return
	}
	var zero T
	b0 := uintptr(unsafe.Pointer(unsafe.SliceData(p.buf)))
	p.stop = int((uintptr(unsafe.Pointer(unsafe.SliceData(parked[at:]))) - b0) / unsafe.Sizeof(zero))
	p.guard, p.guardStage = f, stage
}

// rescueAhead rescues the copies of the stages after s when stage s's
// build, at its start, is likely to write over the next stage's (as
// large as stage s-1's program in this build, prev, would).
//
// Why: a stage whose kept tasks the stages before reached (keptPrefixes,
// parkedIntact) is built from its start, and by then the same stages had
// reached its parked copies too, which rescue at its start found written
// over: Resume had nothing to compare, and 4 of the 70B sweep's points
// (5 stages) played from the start, +72.5 k tasks played (+1.35%). With
// the rescue one stage ahead every point plays what it played before
// (TestSweepPlayedReport's table unchanged); 3 rescues in the sweep in
// all, ≈ 15.7 k records.
func (f *Fork) rescueAhead(s int, prev *Program) {
	cp := f.cp
	if cp == nil || cp.parkA == nil || cp.owner != f || s+1 >= len(f.inst) {
		return
	}
	a, fi := cp.parkA, &f.inst[s+1]
	if reaches(&a.hot, cp.hot, fi.at, len(prev.hot)) || reaches(&a.deps, cp.deps, fi.depAt, len(prev.deps)) ||
		reaches(&a.depOff, cp.depOff, fi.offAt, len(prev.depOff)) {
		f.rescue(s + 1)
	}
}

// reaches says n more elements past pool p's used would reach s[at:], when
// s is in p's array.
func reaches[T any](p *pool[T], s []T, at, n int) bool {
	if at >= len(s) || !inPool(p, s) {
		return false
	}
	var zero T
	b0 := uintptr(unsafe.Pointer(unsafe.SliceData(p.buf)))
	o := int((uintptr(unsafe.Pointer(unsafe.SliceData(s[at:]))) - b0) / unsafe.Sizeof(zero))
	return p.used+n > o
}

// inPool says s's array is p's.
func inPool[T any](p *pool[T], s []T) bool {
	if cap(s) == 0 || len(p.buf) == 0 {
		return false
	}
	var zero T
	b0 := uintptr(unsafe.Pointer(unsafe.SliceData(p.buf)))
	at := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	return at >= b0 && at < b0+uintptr(len(p.buf))*unsafe.Sizeof(zero)
}

// unpark returns s's elements from from on at the same indices in own's
// array (made large enough), the elements before them unspecified; s
// itself when it is own's array. The pages the copy writes are mapped in
// one call before it (hugepages.Populate).
//
// Why: own's arrays are the Fork's reservation, pages nothing wrote
// before, and the copy faulted them one by one: 140–255 page faults of
// the 70B sweep command after an idle spell, ≈ 12 µs each against ≈ 5–7
// µs a page mapped in a batch (perf record -e page-faults, memmove under
// rescueAhead; issue 18, docs/design.md "Speed", reserve52).
func unpark[T any](own *[]T, s []T, from int) []T {
	if cap(s) == 0 || cap(*own) > 0 && unsafe.SliceData(s) == unsafe.SliceData(*own) {
		return s
	}
	*own = roomy(*own, len(s))
	t := (*own)[:len(s)]
	hugepages.Populate(t[from:])
	copy(t[from:], s[from:])
	return t
}

// queuePrefix sets pre to stage s's common prefix as setQueueWaits takes
// it (its records, launch-queue entries, self waits, queue bound and
// per-kernel costs), from the copies Detach made, and reports whether f
// holds one: detached, its copies still its own, stages programs saved
// and the stage's walked with a queue bound. A nil Fork holds none.
func (f *Fork) queuePrefix(s, stages int, pre *queuePrefix) bool {
	if f == nil || !f.saved || !f.detached || f.cp == nil || f.cp.owner != f || len(f.inst) != stages || s < 0 || s >= stages {
		return false
	}
	fi, cp := &f.inst[s], f.cp
	if !fi.qwalk || fi.common <= 0 {
		return false
	}
	c := int(fi.common)
	if !f.prefixIntact(s) {
		return false // (its launch-queue entries: resumeQueues tests them)
	}
	pre.hot, pre.own = cp.hot[fi.at:fi.at+c], false
	e := fi.qEnt
	for i, n := range fi.qn {
		pre.queue[i] = cp.queue[e : e+int(n)]
		e += int(n)
	}
	pre.qself, pre.qrest = nil, nil
	if fi.queued {
		pre.qself, pre.qrest = cp.qself[fi.qAt:fi.qAt+c], cp.qrest[fi.qAt:fi.qAt+c]
	}
	pre.qlim, pre.perK = fi.qlim, fi.qperK
	return true
}

// Resume makes x, a new symmetric executor of the full step's programs
// (its handlers registered on a reset engine, as the shortened play's
// were), continue from the state f saved: ErrNoResume, with x unchanged,
// when the full step's programs differ from the shortened play's in the
// common prefixes or the full play would have started a task past them
// before the save. Then Run's remainder is RunResumed. x may also be a
// longer shortened play's (Settle's second play, with CountEvents before
// Resume; the saved event counts are carried): then RunSteadyResumed.
func (x *Executor) Resume(f *Fork) error {
	if !f.saved || !x.symmetric || len(f.inst) != len(x.inst) || x.h != f.h || x.hh != f.hh || x.eng.Pending() != 0 {
		return ErrNoResume
	}
	f.Detach() // a no-op when the caller did
	if !f.detached || f.cp.owner != f || f.cp.saver != f {
		return ErrNoResume // not copied, or the copies or state since replaced (ShareCopies)
	}
	cp := f.cp
	for i := range x.inst {
		in, fi := &x.inst[i], &f.inst[i]
		p, c := in.prog, fi.common
		if len(p.Tasks) < int(c) || len(in.hot) != len(p.Tasks) || p.Hosted != fi.hosted || int(in.stage) != i || in.events != nil && !fi.counted {
			return ErrNoResume
		}
		// The dependencies, all at once: the prefixes' offsets equal (both
		// from 0) and their lists one after the other equal is every
		// task's list equal; what a prefix task waits for lies in the
		// prefix (the builder's references point back; guarded, not
		// assumed).
		// A program whose build took its prefix's records and lists from
		// these copies, which the executor plays in place, holds them
		// byte for byte (builtPrefix): only the bounds are tested.
		own := f.builtPrefix(p, i) && len(in.hot) >= int(c) && c > 0 && &in.hot[0] == &p.hot[0]
		var deps []int32
		if own {
			deps = p.deps[:p.depOff[c]]
		} else {
			if !f.prefixIntact(i) {
				return ErrNoResume // parked and written over since (parkCopy)
			}
			saved, off := cp.hot[fi.at:fi.at+int(c)], cp.depOff[fi.offAt:fi.offAt+int(c)+1]
			if !sameBytes(p.depOff[:c+1], off) {
				return ErrNoResume
			}
			if deps = p.deps[:off[c]]; !sameBytes(deps, cp.deps[fi.depAt:fi.depAt+int(off[c])]) {
				return ErrNoResume
			}
			// The tasks: the executor's hotTasks (what the play reads,
			// filled from p.Tasks by NewSymmetric) equal the saved
			// ones, so the sends and receives sit where the saved ones
			// do (Detach listed them, cp.p2p).
			if same, _ := sameHot(in.hot[:c], saved, c+1); !same {
				return ErrNoResume
			}
		}
		// None waits past the prefix (HostAfter, QueueAfter ≥ c: 1 + the
		// task, at most c).
		if !allBelow(deps, c) || !(own && p.prefix.below) && !hotWaitsBelow(in.hot[:c], c+1) {
			return ErrNoResume
		}
		for _, b := range cp.p2p[fi.p2pAt:fi.p2pEnd] {
			a := &p.Tasks[b.t]
			match := a.Match()
			if a.Kind == KindSend && a.Match() >= f.inst[a.Peer()].common && b.match >= f.inst[b.peer].common {
				match = b.match // to the peer's tasks past its prefix, where the orders differ
			}
			if a.Peer() != b.peer || match != b.match {
				return ErrNoResume
			}
		}
		if (p.qself != nil) != fi.queued || p.qself != nil &&
			(!sameBytes(p.qself[:c], cp.qself[fi.qAt:fi.qAt+int(c)]) || !sameBytes(p.qrest[:c], cp.qrest[fi.qAt:fi.qAt+int(c)]) ||
				!allBelow(p.qself[:c], c+1)) { // QueueSelf ≥ c
			return ErrNoResume // launch-queue waits differ
		}
	}
	// The state: the prefixes', and past them the inputs that have
	// arrived (need past a prefix is as NewSymmetric filled it). Past a
	// prefix the records stay as NewSymmetric left them: cleared, or
	// lazy (symBuffers: the receives' cleared, the rest unwritten), which
	// they still are, the host thread resuming at the prefix's end at
	// the latest (below) and no task past it having started. (Cleared
	// here as well, they were ≈ 2 M of the 70B sweep's 6 M cleared
	// records: a resumed play is the full step's.) The event counters
	// past a prefix are 0 when CountEvents cleared them and nothing has
	// played since (Executor.eventsZero: simulation.Run counts, then
	// resumes), so they are not cleared twice.
	zero := x.eventsZero && x.eng.Executed() == x.eventsAt
	for i := range x.inst {
		in, fi := &x.inst[i], &f.inst[i]
		copy(in.state, fi.state)
		if !x.lazy {
			clear(in.state[fi.common:])
		}
		copy(in.need, fi.need)
		if in.events != nil {
			copy(in.events, fi.events)
			if !zero {
				clear(in.events[fi.common:])
			}
		}
	}
	x.eventsZero = false // the prefixes' counts copied
	for i := range x.inst {
		// None has all its inputs: the full play would have started it
		// (or, with a host thread, scheduled it) before. Arrivals come
		// from the prefix's ended tasks, through their successor lists
		// as the play delivers them (in task order: a list whose last
		// successor lies in the prefix is done); a task without
		// dependencies has all of them.
		in, c := &x.inst[i], f.inst[i].common
		p, state, hot, need := in.prog, in.state, in.hot, in.need
		early := prefixArrivals(p, state[:c], need, hot) || freePast(p, hot, int(c))
		if early {
			for j := range x.inst {
				in := &x.inst[j]
				clear(in.state)
				fillNeed(in.need, in.prog) // as NewSymmetric left it
			}
			return ErrNoResume
		}
	}
	x.total = 0
	for i := range x.inst {
		in, fi := &x.inst[i], &f.inst[i]
		p, c := in.prog, fi.common
		in.hostNext, in.hostWait, in.hostFree = fi.hostNext, fi.hostWait, fi.hostFree
		if in.hostNext >= c {
			// The shortened play's host thread reached past the prefix
			// (issuing its own tasks there, or parked before one): it
			// issues the full step's tasks from the prefix's end, free
			// when it finished the prefix's last issue.
			in.hostNext, in.hostWait, in.hostFree = c, -1, 0
			for t := c - 1; t >= 0; t-- {
				if p.Tasks[t].Kind != KindRecv {
					in.hostFree = fi.state[t].Issued()
					break
				}
			}
		}
		in.busy, in.cur, in.sized, in.share = fi.busy, fi.cur, fi.sized, fi.share
		in.rem, in.rate, in.since, in.end = fi.rem, fi.rate, fi.since, fi.end
		x.total += len(p.Tasks)
	}
	x.done, x.resumed = f.done, f.done
	x.eng.Restore(&f.eng)
	for i := range x.inst {
		if in := &x.inst[i]; in.prog.Hosted && in.hostWait < 0 && int(in.hostNext) < len(in.prog.Tasks) {
			x.hostAdvance(i)
		}
	}
	return nil
}

// prefixArrivals delivers to the tasks past a common prefix of c =
// len(state) tasks the inputs its ended tasks sent them (in.need[t]−− for
// each successor t ≥ c of each prefix task d whose state says it ended,
// as the play delivers them), and reports whether some task past the
// prefix that is not a receive then has all its inputs (depsIn: need ≤ 0,
// ≤ 1 with a host thread), stopping after the first task whose arrivals
// made one. A task's successors are in task order, so those past the
// prefix end its list.
//
// The prefix's lists lie one after the other in p.succ, and few of their
// entries reach past the prefix (the tasks just past it, and the few
// waits of later tasks on early ones): they are found four entries at a
// time (laneBias: two a word, an add and two ORs each, ≈ 2.5 instructions
// an entry with the loop, ≈ 2.4 entries a task), each one's task d by the
// list offsets (a search from the last one's), instead of a test of every
// prefix task's list end and state (≈ 12.8 instructions a task):
// prefixArrivals 17.6 M → 12.4 M on -bench Sweep70BAll (issue 18,
// fail49; eight entries an iteration cost as much an entry). The arrivals are those
// of the walk over every task in order (TestPrefixArrivalsMatchPlain): a
// task's entries past the prefix, all of them, one task after the other.
func prefixArrivals(p *Program, state []taskState, need []int32, hot []hotTask) (early bool) {
	c := int32(len(state))
	if c == 0 { // (a program of no tasks may have no successor offsets)
		return false
	}
	succOf := p.succOf[:c+1] // list d is succ[succOf[d]:succOf[d+1]]
	base := succOf[0]
	list := p.succ[base:succOf[c]]
	k := laneBias(c)
	d, cur := int32(0), int32(-1) // the last entry's task; the task whose arrivals were delivered last
	// deliver delivers entry j's arrival (list[j] ≥ c), after finding its
	// task, and reports whether the walk stops there: a task before it
	// made one early.
	deliver := func(j int) bool {
		e := base + int32(j)
		if succOf[d+1] <= e { // a later task's: the first list ending past e
			// galloping from the last one (the next is most often
			// near), then halving: succOf[lo] ≤ e < succOf[hi]
			lo, hi := d+1, c
			for step := int32(1); lo+step < hi; step *= 2 {
				if succOf[lo+step] > e {
					hi = lo + step
					break
				}
				lo += step
			}
			for hi-lo > 1 {
				if m := lo + (hi-lo)/2; succOf[m] <= e {
					lo = m
				} else {
					hi = m
				}
			}
			d = lo
		}
		if d != cur {
			if early {
				return true
			}
			cur = d
		}
		if state[d].end == 0 {
			return false
		}
		t := list[j]
		need[t]-- // one more input arrived
		// depsIn, for a task past the prefix, not issued (its record may
		// be lazy: not read)
		if n := need[t]; hot[t].kind != KindRecv && (n <= 0 || p.Hosted && n <= 1) {
			early = true
		}
		return false
	}
	lp := unsafe.Pointer(unsafe.SliceData(list))
	n4 := len(list) &^ 3
	for j := 0; j < n4; j += 4 {
		v, u := *(*uint64)(unsafe.Add(lp, j*4)), *(*uint64)(unsafe.Add(lp, j*4+8))
		if (v|(v+k)|u|(u+k))&laneSigns == 0 {
			continue // all four before c
		}
		for i := j; i < j+4; i++ {
			if list[i] >= c && deliver(i) {
				return true
			}
		}
	}
	for i := n4; i < len(list); i++ {
		if list[i] >= c && deliver(i) {
			return true
		}
	}
	return early
}

// sameBytes reports whether a and b hold the same bytes (the runtime's
// vectorised memequal; Resume's prefix checks compare tens of thousands of
// values, issue 18 fail24): slices.Equal for these types, which have no
// padding.
func sameBytes[T int32 | engine.Time](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 {
		return true
	}
	n := len(a) * int(unsafe.Sizeof(a[0]))
	return bytes.Equal(unsafe.Slice((*byte)(unsafe.Pointer(&a[0])), n), unsafe.Slice((*byte)(unsafe.Pointer(&b[0])), n))
}

// sameHot reports whether a and b hold equal hotTasks (as a[i] == b[i]),
// and whether every host and queue wait of a's is below lim (hostAfter and
// queueAfter < lim: Resume's test that no prefix task waits for a task past
// the prefix; laneBias on the word that holds both). Records equal byte for
// byte are equal: the runtime's vectorised memequal decides those first
// (on the 70B sweep every prefix compared, 376 of 376, was equal byte for
// byte: its builds write or copy whole records), and the waits are tested
// then in a loop of their own: sameHot 14.9 M instructions on -bench
// Sweep70BAll → 6.1 M and memequal's 5.1 M (issue 18, fail49). Otherwise each record is
// read as four words and the differences OR-ed, without a branch per task
// (issue 18 fail24), the waits tested in the same loop. The fields it
// compares fill bytes 0 to 29 (TestSameHot; the assertions below fail to
// compile if the last one moves); the last word's 2 other bytes, walk
// (walkKey of kind, group and stream, equal where those are) and a byte of
// padding, which no store is bound to write, are masked out (hotPadMask).
func sameHot(a, b []hotTask, lim int32) (same, below bool) {
	if len(a) != len(b) {
		return false, false
	}
	if lim <= 0 {
		same, _ = sameHot(a, b, 1<<31-1)
		return same, len(a) == 0 // (no value is below)
	}
	k := laneBias(lim)
	if len(a) > 0 && bytes.Equal(hotBytes(a), hotBytes(b)) {
		return true, hotWaitsBelow(a, lim)
	}
	b = b[:len(a)]
	var d, w uint64
	mask := hotPadMask
	for i := range a {
		x, y := (*[4]uint64)(unsafe.Pointer(&a[i])), (*[4]uint64)(unsafe.Pointer(&b[i]))
		// (^ and | bind alike in Go: each difference parenthesised)
		d |= (x[0] ^ y[0]) | (x[1] ^ y[1]) | (x[2] ^ y[2]) | (x[3]^y[3])&mask
		w |= x[2] | (x[2] + k) // hostAfter and queueAfter (the assertions below)
	}
	return d == 0, w&laneSigns == 0
}

// hotWaitsBelow reports whether every host and queue wait of a's is
// below lim (0 < lim < 2³¹: sameHot's bound, laneBias on the word that
// holds both, a load and three operations a record).
func hotWaitsBelow(a []hotTask, lim int32) bool {
	k := laneBias(lim)
	var w uint64
	for i := range a {
		v := (*[4]uint64)(unsafe.Pointer(&a[i]))[2]
		w |= v | (v + k)
	}
	return w&laneSigns == 0
}

// hotBytes is the bytes of a's records (len(a) > 0).
func hotBytes(a []hotTask) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&a[0])), len(a)*int(unsafe.Sizeof(hotTask{})))
}

// laneSigns is the sign bits of a word's two 32-bit lanes.
const laneSigns = 0x8000_0000_8000_0000

// laneBias is 2³¹ − lim in each 32-bit lane of a word (0 < lim < 2³¹):
// added to a word of two lanes v in [0, 2³¹), no lane carries into the
// next (v + 2³¹ − lim < 2³²), and a lane's sign bit is then set exactly
// when v ≥ lim. OR-ed with the word itself, whose lanes' sign bits are set
// for a negative int32, a lane's sign bit says v ≥ lim or v < 0 (then the
// other lane may be read wrong: the caller refuses either way). Two
// comparisons for an add and two ORs, without a branch: the bound tests
// of Resume (issue 18, fail49).
func laneBias(lim int32) uint64 {
	return uint64(uint32(1<<31-uint32(lim))) * 0x1_0000_0001
}

// allBelow reports whether every value of s lies in [0, lim): Resume's
// test that a prefix's dependencies and self waits point inside it (as
// slices.Max(s) < lim for values that are never negative, and refusing a
// negative one), two values a word (laneBias), four an iteration:
// ≈ 2.8 instructions a value against slices.Max's ≈ 5 (issue 18, fail49).
func allBelow(s []int32, lim int32) bool {
	if lim <= 0 {
		return len(s) == 0
	}
	k := laneBias(lim)
	var acc uint64
	p := unsafe.Pointer(unsafe.SliceData(s))
	n4 := uintptr(len(s)&^3) * 4 // bytes in runs of four
	for o := uintptr(0); o < n4; o += 16 {
		v, u := *(*uint64)(unsafe.Add(p, o)), *(*uint64)(unsafe.Add(p, o+8))
		acc |= v | (v + k) | u | (u + k)
	}
	for _, v := range s[len(s)&^3:] {
		u := uint64(uint32(v)) // (its high lane 0)
		acc |= u | (u + k)
	}
	return acc&laneSigns == 0
}

// freePast reports whether a task of p at or after c that is not a receive
// has no dependencies (Resume: the full play would have had its inputs
// from the start), from the dependency offsets and hot, the executor's
// records. A range the build copied (Program.copies) has its source's
// kinds and dependency counts (fillHot and fillNeedCopied take the play's
// records and inputs awaited from the source; CheckHot holds both to the
// tasks'), so a copy whose source lies at or after c, which the walk has
// passed, has none either and is skipped: a full step past its prefix is
// mostly copied passes and layers, and the scan of every task past it
// cost 10.5 M instructions of the 70B sweep (issue 18, fail49). The
// copies are taken as fillNeedCopied takes them: up to the first that is
// not a build's, the rest scanned whole.
func freePast(p *Program, hot []hotTask, c int) bool {
	n := len(p.Tasks)
	if c >= n {
		return false
	}
	off, hot := p.depOff[:n+1], hot[:n]
	free := func(lo, hi int) bool {
		for t := lo; t < hi; t++ {
			if off[t+1] == off[t] && hot[t].kind != KindRecv {
				return true
			}
		}
		return false
	}
	i, end := c, 0 // scanned or skipped: [c, i); the copies' last end
	for _, s := range p.copies {
		at, src, m := int(s.at), int(s.src), int(s.n)
		if at < end || m < 0 || at+m > n || src < 0 || src+m > at {
			break // not a build's list (fillNeedCopied)
		}
		end = at + m
		if at < i || src < c {
			continue // before c, across it, or copied from the prefix: scanned
		}
		if free(i, at) {
			return true
		}
		i = end
	}
	return free(i, n)
}

var (
	_ = [1]struct{}{}[unsafe.Sizeof(hotTask{})-32]
	_ = [1]struct{}{}[unsafe.Offsetof(hotTask{}.flags)-29]
	// sameHot's third word: hostAfter, queueAfter
	_ = [1]struct{}{}[unsafe.Offsetof(hotTask{}.hostAfter)-16]
	_ = [1]struct{}{}[unsafe.Offsetof(hotTask{}.queueAfter)-20]
)

// hotPadMask keeps the bytes 24 to 29 of a word loaded from a hotTask's
// byte 24 (whatever the byte order): its fields, not walk or its padding.
var hotPadMask = func() uint64 {
	m := [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	return *(*uint64)(unsafe.Pointer(&m))
}()

// RunResumed plays on after Resume, as Run after begin.
func (x *Executor) RunResumed() error {
	x.eng.Run()
	x.settle()
	return x.ended()
}

// setWatch makes the play pause once every instance's tasks before entry
// cut(stage) have ended (watchLeft: how many have not); false when no
// instance has such an entry (cut outside 1 … len(order) − 1), and nothing
// is watched.
func (x *Executor) setWatch(cut func(stage int) int) bool {
	x.watchLeft = 0
	watched := false
	for i := range x.inst {
		in := &x.inst[i]
		in.watch = 0
		e := cut(int(in.stage))
		if e <= 0 || e >= len(in.prog.entries)-1 {
			in.setCounted()
			continue
		}
		watched = true
		in.watch = in.prog.entries[e]
		in.setCounted()
		if x.done == 0 {
			// No task has ended (a play from the start, before its
			// first event): every watched one is left, none read. The
			// first pause of a shortened play (RunSteady's save) is
			// set there: its scan of the first stage's records to the
			// cut was ≈ a third of setWatch's 12 M instructions on the
			// 70B sweep (issue 18, fail49).
			x.watchLeft += int(in.watch)
			continue
		}
		read := in.watch
		// Counted in locals: through x and in, the count's store made
		// every iteration load the slices again (setWatch 17.8 → 12.1 M
		// instructions on -bench Sweep70BAll; the loop below is now a
		// load, a SETE and an add a task).
		left := 0
		if x.lazy {
			// Past the host thread only the receives' records are
			// written (symBuffers): the other tasks, not issued,
			// have not ended.
			read = min(read, in.hostNext)
			hot, state := in.hot[read:in.watch], in.state[read:in.watch]
			for t := range hot {
				if hot[t].kind != KindRecv || state[t].end == 0 {
					left++
				}
			}
		}
		// Four records an iteration, one bounds check each (the loop's
		// own increment, compare and branch were half its instructions;
		// issue 18, fork50b).
		state := in.state[:read]
		n4 := len(state) &^ 3
		for t := 0; t < n4; t += 4 {
			q := state[t : t+4 : t+4]
			left += b2i(q[0].end == 0) + b2i(q[1].end == 0) + b2i(q[2].end == 0) + b2i(q[3].end == 0)
		}
		for t := n4; t < len(state); t++ {
			if state[t].end == 0 {
				left++
			}
		}
		x.watchLeft += left
	}
	if !watched {
		x.clearWatch()
	}
	return watched
}

// clearWatch stops watching (setWatch).
func (x *Executor) clearWatch() {
	x.watchLeft = 0
	for i := range x.inst {
		x.inst[i].watch = 0
		x.inst[i].setCounted()
	}
}

// Resumed is how many tasks had ended when the play was resumed (Resume;
// 0 for a play from the start).
func (x *Executor) Resumed() int { return x.resumed }
