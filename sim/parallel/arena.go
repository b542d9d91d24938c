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
	sym     instanceBuffers // the symmetric executor's (Arena.symBuffers, reuse.go)
	events  [][]int32       // Executor.CountEvents' counters, per instance
	scratch statsScratch    // Executor.Stats' storage
	// caches are Build's block-cost tables, one per device class, reset
	// for each build (≈ 45 KB each: allocating them afresh was 9% of the
	// bytes a sweep allocated).
	caches []*blockCache
	// orders are recent builds' schedule orders per stage, by schedule
	// and shape: a sweep's neighbouring points mostly share pp and
	// micro-batches (ZeRO, recompute and sp turn fastest), and a
	// replicated step builds its shortened step between two full ones
	// (with one entry the orders of both were made again point after
	// point: 16 MB of the 1,000-point sweep's 180 MB). nextOrder is the
	// entry the next new key replaces once all are taken.
	orders    [8]orderSet
	nextOrder int
	// names are the task names the builds have seen (builder.names).
	names nameCache
	// passMarks is the builder's storage for pass copying (passcopy.go).
	passMarks []passMark
}

// orderKey identifies a schedule's orders: schedules are stateless values
// (pipeline.Schedule), so their name and the shape determine them.
type orderKey struct {
	name  string
	shape pipeline.Shape
}

// orderSet is one key's orders per stage, nil until asked.
type orderSet struct {
	key    orderKey
	ok     bool
	orders [][]pipeline.Step
}

// order returns stage s's order of schedule sched for shape, computed once
// per schedule and shape while the arena holds it (the last eight). The
// slice is shared and stays valid when its entry is replaced (a new entry
// gets new storage): callers must not modify it.
func (a *Arena) order(sched pipeline.Schedule, shape pipeline.Shape, s int) []pipeline.Step {
	if a == nil {
		return sched.Order(shape, s)
	}
	k := orderKey{sched.Name(), shape}
	var e *orderSet
	for i := range a.orders {
		if a.orders[i].ok && a.orders[i].key == k {
			e = &a.orders[i]
			break
		}
	}
	if e == nil {
		e = &a.orders[a.nextOrder]
		a.nextOrder = (a.nextOrder + 1) % len(a.orders)
		*e = orderSet{key: k, ok: true}
	}
	for len(e.orders) <= s {
		e.orders = append(e.orders, nil)
	}
	if e.orders[s] == nil {
		e.orders[s] = sched.Order(shape, s)
	}
	return e.orders[s]
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

// instanceBuffers are a symmetric execution's per-task storage, every
// stage's in one array (Arena.symBuffers, reuse.go).
type instanceBuffers struct {
	state []taskState
	need  []int32
	hot   []hotTask // Arena.hotBuffer (exec.go)
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
			p.hot = make([]hotTask, 0, cap(q.Tasks))
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
		bands: p.bands[:0], p2p: p.p2p[:0], copies: p.copies[:0], hot: p.hot[:0], keepHot: true}
	return p
}

// resize returns s with length n, reusing its array when large enough, else
// a new one with a quarter to spare (a sweep's next point is often a little
// larger) and at least twice the old one's capacity (an arena warming up to
// a sweep's largest point reallocated its slices a dozen times by
// quarters: 45 MB of the 1,000-point sweep's 180 MB). The contents are
// unspecified: callers overwrite every element.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, max(n+n/4, 2*cap(s)))
	}
	return s[:n]
}
