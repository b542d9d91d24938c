package parallel

import (
	"unsafe"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
)

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
	progs []*Program
	// rpKey is the structure key of the last build (StepConfig.StructureKey)
	// when rpKeyed: it ended well and its programs are as it left them, so
	// a build of the same key may re-price them (reprice.go).
	rpKey   uint64
	rpKeyed bool
	rpAux   []uint64 // a re-pricing stage's p2p tasks' aux (repriceBuild)
	// builds counts the builds made in the arena (BuildAfter); keep is
	// the last build's kept prefix states (prefixkeep.go).
	builds uint64
	keep   prefixKeep
	// written is the build that last began writing the pools
	// (startBuild): what lies past their used was written by earlier
	// builds (Fork.prefixIntact)
	written uint64
	recvs   recvIndex
	sym     instanceBuffers // the symmetric executor's (Arena.symBuffers, reuse.go)
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
	// cut is the pipeline bound's record of the build's stages
	// (StageCut.over, pipebound.go), kept for its storage.
	cut pipeCut
	// passMarks is the builder's storage for pass copying (passcopy.go).
	passMarks []passMark
	// maps holds the storage Reserve made outside the Go heap (fresh.go)
	maps mappings
	// builder is Build's builder, set afresh (zeroed) at each build: a
	// 1,144-byte object allocated per build was new memory every time
	// once a worker's reserved arena let the collector run seldom (≈ 420
	// of the 70B sweep's page faults; docs/design.md "Speed", mem34).
	builder builder
	// The programs' per-task storage, every stage's carved in stage order
	// from one array of each kind (pool): tasks, hot, depOff and deps as
	// the builder appends (Program.grow), succOf and succ at
	// Program.finish.
	tasks            pool[Task]
	hot              pool[hotTask]
	depOff, deps     pool[int32]
	succOf, succList pool[int32]
	// and setQueueWaits' launch-queue lists (queue: per stream, a
	// stage's all together one entry per task at most) and waits (qself,
	// qrest).
	queue pool[queueEntry]
	qself pool[int32]
	qrest pool[engine.Time]
}

// pool is one kind of a build's per-task storage: every stage's program
// carved from one array in stage order, so that the array a sweep worker
// keeps is sized by its largest point's tasks whatever the point's
// pipeline depth, and grows only when a point holds more in all.
//
// Why: each stage's program kept its own arrays, sized by the largest
// stage s the worker had met, and grew them on its own (doubling, copying
// what it held) whenever it met a larger stage s: a worker that met pp
// 1's one large stage and pp 16's sixteen small ones held both and had
// copied each up to its size. The 1,000-point 70B sweep with two workers
// allocated ≈ 100 MB in those growths and the finish's resizes (heap
// profile of -bench Sweep70BAll: grow's 55 MB of tasks, 22 of hot
// records, 8 of dependency lists; finish's 17), beside a live heap of
// ≈ 77 MB at its end. Pooled alone (without Arena.Reserve) they do not
// allocate less: a worker's one array per kind still doubles from 256 to
// its largest point's, and a growth copies every stage's (docs/design.md
// "Speed", size24).
//
// buf is used with its length at its capacity; used is where the next
// stage's storage starts; need is what this build asked for in all
// (next build's size when a stage's slice left the array).
type pool[T any] struct {
	buf  []T
	used int
	need int
	// warm is how far buf's pages are mapped (warm.go); most is the
	// largest stage slice sealed, how far ahead of a new stage ahead
	// maps them.
	warm warmth
	most int
	// stop, while guard is set, is where the stage being built ends in
	// buf: the start of the parked copies (parkCopy) of the stages after
	// it, which their builds and Resume read after this one
	// (Fork.guardPark). A stage that needs the room past stop gives those
	// copies up first (guard.rescue(guardStage), which clears every
	// pool's guard).
	stop       int
	guard      *Fork
	guardStage int
	// left is the array this build started in, once a growth has
	// replaced it (grow, carve), and leftWritten how far this build had
	// written it then (nothing writes it after): untouched reads them.
	left        []T
	leftWritten int
}

// room is where the stage being built must end in buf: stop while a
// parked copy lies there or above, else buf's end.
func (p *pool[T]) room() int {
	if p.guard != nil && p.stop >= p.used {
		return p.stop
	}
	return len(p.buf)
}

// ahead maps the pages of the array's tail that a stage as large as the
// largest sealed so far would write (warm.go): builds write the tasks,
// records and dependencies of a stage by appending in place, so the pages
// are mapped before the stage starts, not faulted one by one as it grows.
// A stage larger than any before faults beyond that as before.
func (p *pool[T]) ahead() { warmTo(&p.warm, p.buf, p.used+p.most) }

// reset starts a build: nothing carved. When the last build needed more
// than the array holds (a stage's appends moved it elsewhere), the array is
// replaced by one a quarter larger than that, before anything is in it
// (nothing to copy).
func (p *pool[T]) reset() {
	if p.need > len(p.buf) {
		p.buf = make([]T, p.need+p.need/4)
	}
	p.used, p.need = 0, 0
	p.left, p.leftWritten = nil, 0
	p.unguarded()
}

// leave records, before a growth replaces the array, that this build
// wrote it up to written (the first array left only: the later ones hold
// nothing a build reads back).
func (p *pool[T]) leave(written int) {
	if p.left == nil {
		p.left, p.leftWritten = p.buf, written
	}
}

// untouched says this build has not written s, a slice of the array the
// build started in or of the one it uses now: s starts at or past what
// the build wrote there. False for an empty s or one of another array.
//
// Why both arrays (issue 18, round 63): a failed shortened play's kept
// prefixes are parked at the top of the array (keptPrefixes), and a stage
// appends in place up to the array's end before it grows into a new one;
// judged by the new array alone, a park the stage had written over before
// it grew was taken as intact, and the resumed stage got another stage's
// tasks (plan's 8B at 128 tokens on 64 GPUs: "send from stage 6 has no
// matching receive on stage 7" at tp 2 pp 8, after other points).
func (p *pool[T]) untouched(s []T) bool {
	past, held := p.past(s)
	return held && past
}

// past says whether s starts at or past what this build wrote in the
// array that holds it, and held whether one of the two does: the pool's
// array (used) or the one the build started in (left, leftWritten).
func (p *pool[T]) past(s []T) (past, held bool) {
	if i, ok := offsetIn(p.buf, s); ok {
		return i >= p.used, true
	}
	if i, ok := offsetIn(p.left, s); ok {
		return i >= p.leftWritten, true
	}
	return false, false
}

// offsetIn is the index in a of s's first element, false when it does not
// lie in a.
func offsetIn[T any](a, s []T) (int, bool) {
	if len(a) == 0 || len(s) == 0 {
		return 0, false
	}
	size := unsafe.Sizeof(a[0])
	b0 := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
	at := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	if at < b0 || at >= b0+uintptr(len(a))*size {
		return 0, false
	}
	return int((at - b0) / size), true
}

// unguardPools drops the stops of the pools a Fork parks its copies in
// (Fork.guardPark); nothing for a nil arena.
func (a *Arena) unguardPools() {
	if a != nil {
		a.hot.unguarded()
		a.depOff.unguarded()
		a.deps.unguarded()
		a.queue.unguarded()
	}
}

// unguarded drops the stop (the copies above it given up, or not read
// again).
func (p *pool[T]) unguarded() { p.stop, p.guard = 0, nil }

// next returns an empty slice at the array's free tail, with its room.
func (p *pool[T]) next() []T { return p.buf[p.used:p.used:p.room()] }

// in says whether s starts at the array's free tail (next's slice,
// appended to in place).
func (p *pool[T]) in(s []T) bool {
	return cap(s) > 0 && p.used < len(p.buf) && &s[:1][0] == &p.buf[p.used]
}

// seal ends a stage's slice s (begun by next): the array's tail moves past
// it, and s is capped at its length, so that no append through it reaches
// the next stage's storage.
func (p *pool[T]) seal(s []T) []T {

	p.need += len(s)
	p.most = max(p.most, len(s))
	if p.in(s) {
		p.used += len(s)
	}
	return s[:len(s):len(s)]
}

// grow returns s (begun by next) with room for n more elements: in place
// when the array's tail has it, else s copied to the start of a new array
// that the pool keeps from then on, at least twice what this build has
// carved so far with s (the stages before keep the old one until the next
// build). The spare room is left as make hands it over (grown, builder.go).
func (p *pool[T]) grow(s []T, n int) []T {
	if cap(s)-len(s) >= n {
		return s
	}
	if p.in(s) {
		if p.room()-p.used >= len(s)+n {
			return p.buf[p.used : p.used+len(s) : p.room()]
		}
		if p.guard != nil && len(p.buf)-p.used >= len(s)+n {
			// The room past the copies parked above: they are moved
			// out of the way first (Fork.rescue), not written over.
			p.guard.rescue(p.guardStage)
			p.unguarded() // (rescue dropped every pool's stop, unless it found the copies written over)
			return p.buf[p.used : p.used+len(s)]
		}
	}
	t := make([]T, max(2*(p.used+len(s)), len(s)+n))
	copy(t, s)
	if p.in(s) {
		p.leave(p.used + len(s))
	} else {
		p.leave(p.used)
	}
	p.buf, p.used = t, 0
	p.unguarded() // (the copies stay where they are, in the old array)
	return t[:len(s)]
}

// above says the build in progress has not written s (a slice of the
// array or of another one): s is empty, in neither the array nor the one
// this build started in, or starts at or past what this build wrote there
// (untouched: in the array, the stages it has sealed or carved, used). A
// parked copy (parkCopy) is read at a stage's start or after a whole
// stage is sealed, when used is all this build wrote in the array.
//
// The array this build left for a larger one (issue 18, round 63): a
// stage appends in place up to the array's end before it grows, so a copy
// parked there may have been written over; judged as "another array" it
// was taken as intact, and a resumed build read a dependency offset of
// another stage (plan's Mixtral 8x7B at 1,024 tokens on 64 GPUs, point
// 2540 on two workers, about one run in three: "slice bounds out of
// range" in prefixIntact).
func (p *pool[T]) above(s []T) bool {
	past, held := p.past(s)
	return past || !held
}

// carve returns n elements of the array's tail, capped at n, with
// unspecified contents; the tail moves past them. Without room, a new
// array at least twice the old one's and a quarter above what this build
// has carved (the slices carved before keep the old one).
func (p *pool[T]) carve(n int) []T {
	p.need += n
	if p.room()-p.used < n {
		if p.guard != nil && len(p.buf)-p.used >= n {
			p.guard.rescue(p.guardStage) // (the copies parked above moved out of the way first: grow)
			p.unguarded()
		} else {
			c := p.used + n
			p.leave(p.used)
			p.buf, p.used = make([]T, max(2*len(p.buf), c+c/4)), 0
			p.unguarded()
		}
	}
	warmTo(&p.warm, p.buf, p.used+n)
	s := p.buf[p.used : p.used+n : p.used+n]
	p.used += n
	return s
}

// Dependencies per task that Reserve makes room for: the 70B sweep's
// programs hold 1.8–2.2 (its 420 builds, size24), each task its stream
// predecessor and about one more. A build with more grows as without a
// reservation.
const reserveDepsPerTask = 5 / 2.0

// Reserve makes room in the arena for builds of up to tasks tasks, every
// stage's together (an upper bound given before the build, such as
// simulation.EstimateWork's ProgramTasks), and for their symmetric
// execution: a build within it grows nothing, so no task array is copied
// and none left for the collector. Storage already that large is kept;
// smaller storage is replaced, not copied, by storage at least twice as
// large (call it between builds: the last build's programs keep what they
// hold). The storage is fresh memory outside the Go heap where the system
// maps it (freshSlice; the arena gives it back when it is itself
// collected): zero without a clear, no page mapped until a build reaches
// it, and not counted in the heap the collector paces itself by, so
// reserving starts no collection (mappings says why). tasks <= 0 reserves
// nothing.
func (a *Arena) Reserve(tasks int) {
	if tasks <= 0 {
		return
	}
	deps := int(float64(tasks) * reserveDepsPerTask)
	m := &a.maps
	a.tasks.reserve(m, tasks)
	a.hot.reserve(m, tasks)
	a.depOff.reserve(m, tasks+tasks/64+64) // one more per stage
	a.deps.reserve(m, deps)
	a.succOf.reserve(m, tasks+tasks/32+128) // two more per stage
	a.succList.reserve(m, deps)
	a.queue.reserve(m, tasks)
	a.qself.reserve(m, tasks)
	a.qrest.reserve(m, tasks)
	if cap(a.sym.state) < tasks {
		a.sym.state = reserveEmpty(m, a.sym.state, tasks)
	}
	if cap(a.sym.need) < tasks {
		a.sym.need = reserveEmpty(m, a.sym.need, tasks)
	}
	if cap(a.sym.events) < tasks {
		a.sym.events = reserveEmpty(m, a.sym.events, tasks)
	}
}

// reserve replaces an array smaller than n by fresh storage (freshSlice,
// owned by m) of n, or twice the old one's length if more (between
// builds).
func (p *pool[T]) reserve(m *mappings, n int) {
	if len(p.buf) < n {
		p.buf, p.used = freshSlice[T](m, max(n, 2*len(p.buf))), 0
	}
}

// startBuild empties the pools for a new build (Build with the arena).
func (a *Arena) startBuild() {
	// The last build's programs let go of the pools' arrays: a stage this
	// build has not (a shallower pipeline) would otherwise keep an array
	// the pools replaced alive.
	for _, p := range a.progs {
		p.Tasks, p.hot, p.depOff, p.deps = nil, nil, nil, nil
		p.succOf, p.succ = nil, nil
		p.queue, p.qwide = [NumStreams][]queueEntry{}, nil
		p.qselfBuf, p.qrestBuf = nil, nil
	}
	a.written = a.builds
	a.tasks.reset()
	a.hot.reset()
	a.depOff.reset()
	a.deps.reset()
	a.succOf.reset()
	a.succList.reset()
	a.queue.reset()
	a.qself.reset()
	a.qrest.reset()
}

// sealProgram ends stage program p's builder storage (Build, after the
// stage is built): what follows in the pools is the next stage's.
func (a *Arena) sealProgram(p *Program) {
	p.Tasks = a.tasks.seal(p.Tasks)
	p.hot = a.hot.seal(p.hot)
	p.depOff = a.depOff.seal(p.depOff)
	p.deps = a.deps.seal(p.deps)
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
	state  []taskState
	need   []int32
	hot    []hotTask // Arena.hotBuffer (exec.go)
	events []int32   // Executor.CountEvents' counters (Arena.eventBuffers, reuse.go)
	// how far each array's pages are mapped (warm.go)
	warmState, warmNeed, warmHot, warmEvents warmth
	// the executor itself, its instances and their handlers
	// (Arena.symExecutor, exec.go)
	exec Executor
	inst []instance
	ends []symEnds
}

// program returns stage s's program, emptied, its task and dependency
// storage at the pools' free tails (the stages before it sealed:
// sealProgram). Its task capacity is the least of the tails' (one depOff
// entry more), so that add's one check of the tasks' room covers hot and
// depOff too.
func (a *Arena) program(s int, from *Fork) *Program {
	if s == 0 {
		a.startBuild()
	}
	from.guardPark(s, a) // (before the stage's storage is taken: next)
	for len(a.progs) <= s {
		a.progs = append(a.progs, &Program{arena: a})
	}
	p := a.progs[s]
	a.tasks.ahead()
	a.hot.ahead()
	a.depOff.ahead()
	a.deps.ahead()
	tasks, hot, depOff := a.tasks.next(), a.hot.next(), a.depOff.next()
	if c := min(cap(tasks), cap(hot), cap(depOff)-1); c < cap(tasks) {
		tasks = tasks[:0:max(c, 0)]
	}
	*p = Program{Stage: s, arena: a, Tasks: tasks, depOff: depOff, deps: a.deps.next(),
		entries: p.entries[:0],
		bands:   p.bands[:0], p2p: p.p2p[:0], copies: p.copies[:0], hot: hot, keepHot: true}
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

// stageBlockCache returns caches grown to hold stage's device class and
// that class's block cache, made on first use (a nil arena makes one
// without kept storage): one cache per device class, shared by its stages.
func (a *Arena) stageBlockCache(caches []*blockCache, cfg *StepConfig, pr Pricer, stage int) ([]*blockCache, *blockCache) {
	class := 0
	if stage < len(cfg.DeviceClass) {
		class = cfg.DeviceClass[stage]
	}
	for len(caches) <= class {
		caches = append(caches, nil)
	}
	if caches[class] == nil {
		caches[class] = a.blockCache(class, cfg, pr, stage)
	}
	return caches, caches[class]
}
