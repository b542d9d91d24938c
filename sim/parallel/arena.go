package parallel

import "github.com/simtrain/simtrain/sim/pipeline"

// Arena is storage that successive builds reuse: a sweep worker simulates
// thousands of layouts one after another, and without an arena every one of
// them grows its task slices from nothing and leaves them to the garbage
// collector (half of all bytes a sweep allocated). Build with
// StepConfig.Arena set takes each stage's program from the arena, keeping
// the capacity the previous build left there, and the symmetric executor of
// those programs takes its per-task state from it too.
//
// Reuse invalidates: a Build with an arena overwrites the programs of the
// previous Build with the same arena, and NewSymmetric on them the state of
// the previous execution. One goroutine uses an arena at a time; the zero
// value is ready to use.
type Arena struct {
	progs   []*Program
	recvs   recvIndex
	inst    []instanceBuffers
	events  [][]int32    // Executor.CountEvents' counters, per instance
	scratch statsScratch // Executor.Stats' storage
	// caches are Build's block-cost tables, one per device class, reset
	// for each build (≈ 45 KB each: allocating them afresh was 9% of the
	// bytes a sweep allocated).
	caches []*blockCache
	// orders are the last build's schedule orders per stage, for the
	// schedule and shape in orderKey: a sweep's neighbouring points mostly
	// share pp and micro-batches (ZeRO, recompute and sp turn fastest).
	orderKey orderKey
	orders   [][]pipeline.Step
	// names are the task names the builds have seen (builder.names).
	names nameCache
}

// orderKey identifies a schedule's orders: schedules are stateless values
// (pipeline.Schedule), so their name and the shape determine them.
type orderKey struct {
	name  string
	shape pipeline.Shape
}

// order returns stage s's order of schedule sched for shape, computed once
// per schedule and shape for consecutive builds. The slice is shared:
// callers must not modify it.
func (a *Arena) order(sched pipeline.Schedule, shape pipeline.Shape, s int) []pipeline.Step {
	if a == nil {
		return sched.Order(shape, s)
	}
	if k := (orderKey{sched.Name(), shape}); k != a.orderKey {
		a.orderKey = k
		a.orders = a.orders[:0]
	}
	for len(a.orders) <= s {
		a.orders = append(a.orders, nil)
	}
	if a.orders[s] == nil {
		a.orders[s] = sched.Order(shape, s)
	}
	return a.orders[s]
}

// blockCache returns the arena's cache for device class class, reset for
// cfg (a nil arena: a new one).
func (a *Arena) blockCache(class int, cfg *StepConfig, pr Pricer, stage int) *blockCache {
	if a == nil {
		return newBlockCache(cfg, pr, stage, nil)
	}
	for len(a.caches) <= class {
		a.caches = append(a.caches, new(blockCache))
	}
	return newBlockCache(cfg, pr, stage, a.caches[class])
}

// instanceBuffers are one executed instance's per-task storage.
type instanceBuffers struct {
	state []taskState
	need  []int32
}

// program returns stage s's program, emptied, with the capacity of the
// last program built for stage s (or, for a stage not built before, of
// stage 0: stages of one layout hold similar numbers of tasks).
func (a *Arena) program(s int) *Program {
	for len(a.progs) <= s {
		p := &Program{arena: a}
		if len(a.progs) > 0 {
			q := a.progs[0]
			p.Tasks = make([]Task, 0, cap(q.Tasks))
			p.deps = make([]int32, 0, cap(q.deps))
			p.depOff = make([]int32, 0, cap(q.depOff))
		}
		a.progs = append(a.progs, p)
	}
	p := a.progs[s]
	*p = Program{Stage: s, arena: a, Tasks: p.Tasks[:0], depOff: p.depOff[:0], deps: p.deps[:0],
		succOf: p.succOf[:0], succ: p.succ[:0], ndeps: p.ndeps[:0], entries: p.entries[:0],
		qends: p.qends, qids: p.qids, // setQueueWaits empties qends, qids
		qselfBuf: p.qselfBuf, qrestBuf: p.qrestBuf, // and clears what it takes of these
		bands: p.bands[:0], p2p: p.p2p[:0]}
	return p
}

// buffers returns instance i's state and need slices sized for n tasks
// (contents unspecified).
func (a *Arena) buffers(i, n int) ([]taskState, []int32) {
	for len(a.inst) <= i {
		a.inst = append(a.inst, instanceBuffers{})
	}
	b := &a.inst[i]
	b.state = resize(b.state, n)
	b.need = resize(b.need, n)
	return b.state, b.need
}

// resize returns s with length n, reusing its array when large enough, else
// a new one with a quarter to spare (a sweep's next point is often a little
// larger). The contents are unspecified: callers overwrite every element.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}
