package parallel

import (
	"sync/atomic"

	"github.com/simtrain/simtrain/sim/engine"
)

// symBuffers sets each instance's per-task storage (state, need, hot) for a
// symmetric execution of their programs, carved in stage order from one
// array of each kind that the arena keeps (Arena.sym); need and hot are
// left for fillHot. The state is cleared, or, when it reports lazy, only
// the receives' (a build's Program.p2p lists them: p2pListed): every program has a host thread,
// which writes each other task's record whole when it issues it
// (instance.hostRun), before any input of the task can have arrived, and
// the records past it are cleared once the play pauses or ends
// (Executor.settle). Until then a record the thread has not reached holds
// whatever the arena's last play left there, and only settle and setWatch,
// which know that, look past the thread.
//
// Why not clear the whole state first: the play rewrites nearly all of
// it anyway (97% of the records the 70B sweep's plays cleared had been
// written by the play before, and the host thread had issued all but 2.5%
// of the tasks where its plays first paused), and the clear streamed
// ≈ 24 bytes a task through the caches once more before the play wrote
// them: ≈ 150 MB on that sweep, NewSymmetric's memclr, 1.5–2% of its CPU
// samples (par43).
//
// Why one array for all stages, not one per stage: the arena kept stage
// i's storage apart, sized by the largest stage i it had met, so a sweep
// worker that met pp 1's one large stage and pp 16's sixteen small ones
// held the sum of both (1.9–2.0× its largest point's tasks on the 70B
// sweep, measured: 352,880 task slots for 182,836 tasks, 152,432 for
// 75,144) and grew each stage's storage on its own. One array holds the
// largest point's tasks, whatever its pipeline depth. Each stage's slices
// are capped at its length (three-index slices), so no append through one
// reaches the next stage's.
//
// The storage is valid until the next NewSymmetric with the same arena, as
// before (a Fork detaches its copies before the next build).
//
// Programs whose build kept their hot records (Program.hot) need no hot
// storage: when every program did, none is carved (NewSymmetric takes
// theirs).
func (a *Arena) symBuffers(inst []instance) (lazy bool) {
	n := 0
	kept := true
	lazy = len(inst) > 0
	for i := range inst {
		p := inst[i].prog
		n += len(p.Tasks)
		kept = kept && p.keepHot && len(p.hot) == len(p.Tasks)
		lazy = lazy && p.Hosted && p.p2pListed
	}
	b := &a.sym
	b.state, b.need = resize(b.state, n), resize(b.need, n)
	warmTo(&b.warmState, b.state, n)
	warmTo(&b.warmNeed, b.need, n)
	if !kept {
		b.hot = resize(b.hot, n)
		warmTo(&b.warmHot, b.hot, n)
	}
	if !lazy {
		clear(b.state) // read before written: 0 is "not yet"
	} else if stateChecks.Load() {
		poisonState(b.state)
	}
	off := 0
	for i := range inst {
		in := &inst[i]
		end := off + len(in.prog.Tasks)
		in.state, in.need = b.state[off:end:end], b.need[off:end:end]
		if !kept {
			in.hot = b.hot[off:end:end]
		}
		if lazy {
			// A receive is started by its send on the peer stage,
			// never issued: cleared here, as everything was.
			state := in.state
			for _, t := range in.prog.p2p {
				state[t] = taskState{}
			}
		}
		off = end
	}
	return lazy
}

// stateChecks, when set (tests: SetStateChecks), makes symBuffers fill
// the records it leaves to the play (lazy) with garbage rather than the
// last play's: a play that read one before writing it would then differ
// from the same play on fresh storage.
var stateChecks atomic.Bool

// SetStateChecks turns symBuffers' garbage (stateChecks) on or off, for
// tests that play whole sweeps, and returns the previous setting.
func SetStateChecks(on bool) bool { return stateChecks.Swap(on) }

// poisonState fills s with records no play writes: times far past any
// step's, an end before its start.
func poisonState(s []taskState) {
	for i := range s {
		s[i] = taskState{start: 1<<40 + engine.Time(i), end: 3, issued: 1<<41 - engine.Time(i)}
	}
}

// settle ends a play's lazy state (symBuffers): the records the host
// threads have not reached yet, receives aside, are cleared, as
// symBuffers cleared them before, so that every record reads as in a play
// that cleared them first. A play calls it before anything reads a record
// past its host thread (a pause of RunSteady, the end of Run); it costs
// the tasks not issued yet (2.5% of them on the 70B sweep's first
// pauses). After it the state is complete, and stays so: the host
// thread's whole-record writes then write what was there.
func (x *Executor) settle() {
	x.eventsZero = false // a play ran: the counters count it
	if !x.lazy {
		return
	}
	x.lazy = false
	for i := range x.inst {
		in := &x.inst[i]
		state, hot := in.state, in.hot[:len(in.state)]
		for t := int(in.hostNext); t < len(state); t++ {
			if hot[t].kind != KindRecv {
				state[t] = taskState{}
			}
		}
	}
}

// eventBuffers sets each instance's event counters (Executor.CountEvents),
// cleared, carved in stage order from one array that the arena keeps
// (Arena.sym.events), as symBuffers carves the state: valid until the next
// CountEvents with the same arena.
//
// Why one array, not one per instance index: each index's array was
// sized by the largest stage that index had met and grew on its own (with
// a quarter to spare, resize), so a sweep worker held pp 1's large stage
// and pp 16's sixteen small ones, and each growth left the array before it
// to the collector, which a worker's reserved arena lets run seldom: new
// pages (1.4 MB of the 70B sweep's allocations). One array reserved with
// the programs' storage (Arena.Reserve) is written once, up to the
// largest point's tasks (docs/design.md "Speed", mem34).
func (a *Arena) eventBuffers(inst []instance) {
	n := 0
	for i := range inst {
		n += len(inst[i].prog.Tasks)
	}
	b := &a.sym
	b.events = resize(b.events, n)
	warmTo(&b.warmEvents, b.events, n)
	clear(b.events)
	off := 0
	for i := range inst {
		end := off + len(inst[i].prog.Tasks)
		inst[i].events = b.events[off:end:end]
		inst[i].setCounted()
		off = end
	}
}
