package parallel

// symBuffers sets each instance's per-task storage (state, need, hot) for a
// symmetric execution of their programs, carved in stage order from one
// array of each kind that the arena keeps (Arena.sym); state is cleared,
// need and hot are left for fillHot.
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
func (a *Arena) symBuffers(inst []instance) {
	n := 0
	kept := true
	for i := range inst {
		p := inst[i].prog
		n += len(p.Tasks)
		kept = kept && p.keepHot && len(p.hot) == len(p.Tasks)
	}
	b := &a.sym
	b.state, b.need = resize(b.state, n), resize(b.need, n)
	warmTo(&b.warmState, b.state, n)
	warmTo(&b.warmNeed, b.need, n)
	if !kept {
		b.hot = resize(b.hot, n)
		warmTo(&b.warmHot, b.hot, n)
	}
	clear(b.state) // read before written: start counts the inputs arrived
	off := 0
	for i := range inst {
		in := &inst[i]
		end := off + len(in.prog.Tasks)
		in.state, in.need = b.state[off:end:end], b.need[off:end:end]
		if !kept {
			in.hot = b.hot[off:end:end]
		}
		off = end
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
		off = end
	}
}
