package parallel

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
)

// Re-pricing builds (issue 18, reuse37). A build whose StepConfig has the
// structure key of the arena's last build (StepConfig.StructureKey: the
// same task graph but for the tasks' durations and sizes) runs the
// builder over the arena's programs in a price-only mode instead of
// building them again: add and the layer and pass copies write each
// task's Dur, GEMMShare, Bytes and FLOPs (and its played record's dur and
// share) into the task already at its index, and list the bands, the
// entries, the copies' marks and the p2p list again; the dependencies,
// successor lists, launch-queue waits, self waits, host waits, flags and
// p2p links of the last build stay. What the builder reads to decide
// (task counts, dependency offsets, the tasks a copy compares) is what a
// fresh build would have at that point, so its decisions are the same.
// add checks every task it writes against the one in place (kind,
// stream, name, step, chunk, layer, micro-batch, group, op, issue time,
// host wait) and the build ends with the same task and dependency counts,
// else the re-pricing is abandoned and the build made afresh. The key and
// these checks are not a proof that the untouched parts equal a fresh
// build's: TestRepricedEqualsFresh and the check mode (SetRepriceChecks)
// compare every field.

// repricing is a re-pricing build's state in the builder: on, the last
// build's task count n of the stage, and its full dependency lists
// (depOff with its final entry, deps), which the program's lists are cut
// from as the builder goes.
type repricing struct {
	on     bool
	n      int
	depOff []int32
	deps   []int32
}

// errRepriceMismatch is what add or a copy panics with when the program
// in place is not the one being built (repriceBuild recovers it).
var errRepriceMismatch = errors.New("parallel: re-pricing build met a different task graph")

// repriceAdd is add for a re-pricing build: the same bookkeeping (index,
// issue time and host wait, issue sum, last task per stream, interrupt
// polling; the stream counts and the p2p list are the last build's), the
// task's prices written into the task in place after checking that it is
// the same task.
func (b *builder) repriceAdd(t *Task) int32 {
	p := b.prog
	n := len(p.Tasks)
	idx := int32(n)
	wait, issue := b.stampStepAndIssue(p, t)
	if n >= b.rp.n {
		panic(errRepriceMismatch)
	}
	p.Tasks = p.Tasks[:n+1]
	p.hot = p.hot[:n+1]
	o, h := &p.Tasks[n], &p.hot[n]
	if !sameIdentity(o, t) || h.issue != issue || h.hostAfter != wait {
		panic(errRepriceMismatch)
	}
	o.Dur, o.GEMMShare, o.Bytes = t.Dur, t.GEMMShare, t.Bytes
	if t.Kind != KindSend && t.Kind != KindRecv {
		o.aux = t.aux // FLOPs; a send's or receive's peer and match are linkP2P's, kept
	}
	h.dur, h.share = t.Dur, t.GEMMShare
	// The program's lists are the last build's cut (repriceBuild: the
	// same arrays, which nothing else re-points while re-pricing), so
	// only their lengths move: cut from b.rp's, every task stored both
	// slices' pointers again, each with its write-barrier check.
	p.depOff = p.depOff[:n+1]
	p.deps = p.deps[:b.rp.depOff[n+1]]
	b.last[t.Stream] = idx
	if idx&(1<<14-1) == 0 && b.interrupt == nil {
		b.interrupt = b.cfg.interrupted()
	}
	return idx
}

// repriceCopy is a layer or pass copy's share of a re-pricing build: the
// n tasks from at take the prices of the n from src (Dur, GEMMShare,
// Bytes, FLOPs, and the played records' dur and share) and are marked
// copied; the program's lists are cut to include them.
func (b *builder) repriceCopy(at, src, n int32) {
	p := b.prog
	end := int(at + n)
	if end > b.rp.n {
		panic(errRepriceMismatch)
	}
	p.Tasks = p.Tasks[:end]
	p.hot = p.hot[:end]
	// The played records take the copied Dur and GEMMShare from the
	// source Tasks, not from the source's played records: in a re-pricing
	// build every record below len(Tasks) was written with its Task's
	// (repriceAdd, and this loop), so they are the same values, and the
	// loop streams three arrays instead of four (a source record is 32
	// bytes read a task).
	repriceRange(p.Tasks[at:end], p.Tasks[src:src+n], p.hot[at:end])
	p.noteCopy(at, src, n)
	p.depOff = p.depOff[:end] // (the last build's arrays: repriceAdd)
	p.deps = p.deps[:b.rp.depOff[end]]
}

// sameIdentity says a and b have the same Kind, Stream, Group, Op, Name,
// Step, Chunk, Layer and Micro: what repriceAdd requires of the task it
// re-prices. Those fields fill Task's bytes 0–3 and 8–23 (taskIdentity
// below fails to compile otherwise; bytes 4–7 are GEMMShare and the two
// flags, which are not compared), so where words load from any boundary
// in little-endian order (wordLoadsUnaligned: amd64, arm64) it compares
// three words, bytes 4–7 shifted out of the first: ≈ 10 instructions
// against the nine fields' ≈ 27 (≈ 6 M of the 70B sweep's, cachegrind).
// TestSameIdentityMatchesFields holds it to the fields.
func sameIdentity(a, b *Task) bool {
	if !wordLoadsUnaligned {
		return a.Kind == b.Kind && a.Stream == b.Stream && a.Group == b.Group && a.Op == b.Op && a.Name == b.Name &&
			a.Step == b.Step && a.Chunk == b.Chunk && a.Layer == b.Layer && a.Micro == b.Micro
	}
	x, y := (*[3]uint64)(unsafe.Pointer(a)), (*[3]uint64)(unsafe.Pointer(b))
	return (x[0]^y[0])<<32|(x[1]^y[1])|(x[2]^y[2]) == 0
}

// sameTask says *a == *b, Go's comparison of every field (Bytes as a
// float64: NaN differs from itself, −0 equals +0): sameTaskLayer with a's
// own layer. The compiler's struct comparison is a call testing the
// fields one by one (type..eq.Task, 13.5 M of the 70B sweep's
// instructions, in copyLayers' sameTasks and unitsRepeat; issue 18,
// misc48, cachegrind). TestSameTaskMatchesStruct holds it to ==.
func sameTask(a, b *Task) bool { return sameTaskLayer(a, b, a.Layer) }

// sameTaskLayer says a with its Layer set to layer is *b, a left unchanged
// and not copied, on the layout sameIdentity reads: where words load
// unaligned it compares bytes 0–23 as three words (the nine identity
// fields and GEMMShare and the two flags, no padding between them:
// taskIdentity), the third word's low half (Layer) put to layer, then
// Dur, Bytes and aux.
func sameTaskLayer(a, b *Task, layer int32) bool {
	if !wordLoadsUnaligned {
		c := *a
		c.Layer = layer
		return c == *b
	}
	x, y := (*[3]uint64)(unsafe.Pointer(a)), (*[3]uint64)(unsafe.Pointer(b))
	return (x[0]^y[0])|(x[1]^y[1])|(x[2]^y[2]^uint64(uint32(a.Layer^layer))) == 0 &&
		a.Dur == b.Dur && a.Bytes == b.Bytes && a.aux == b.aux
}

// taskIdentity pins the layout sameIdentity and sameTask read: a constant index out
// of [1]struct{}'s range fails to compile, so a field that moves stops the
// build.
var taskIdentity = [...]struct{}{
	[1]struct{}{}[unsafe.Offsetof(Task{}.Kind)-0],
	[1]struct{}{}[unsafe.Offsetof(Task{}.Stream)-1],
	[1]struct{}{}[unsafe.Offsetof(Task{}.Group)-2],
	[1]struct{}{}[unsafe.Offsetof(Task{}.Op)-3],
	[1]struct{}{}[unsafe.Offsetof(Task{}.GEMMShare)-4],
	[1]struct{}{}[unsafe.Offsetof(Task{}.CopyEngine)-6],
	[1]struct{}{}[unsafe.Offsetof(Task{}.SMSized)-7],
	[1]struct{}{}[unsafe.Offsetof(Task{}.Name)-8],
	[1]struct{}{}[unsafe.Offsetof(Task{}.Step)-12],
	[1]struct{}{}[unsafe.Offsetof(Task{}.Chunk)-14],
	[1]struct{}{}[unsafe.Offsetof(Task{}.Layer)-16],
	[1]struct{}{}[unsafe.Offsetof(Task{}.Micro)-20],
	[1]struct{}{}[unsafe.Offsetof(Task{}.Dur)-24],
	[1]struct{}{}[unsafe.Sizeof(Task{})-48], // (sameTask: no field after aux)
}

// repriceRange sets each task of tasks' prices (Dur, GEMMShare, Bytes and
// aux: a send's or receive's aux, its peer and match, is put back at the
// stage's end, repriceBuild) to those of the task of from at its place,
// and its played record's duration and share to the same (from and hot at
// least as long as tasks). A function of its own, walking the three arrays
// by byte offsets: in repriceCopy's loop the compiler reloaded two spilled
// arguments every task, scaled the index by 48 and by 32, and read Dur and
// GEMMShare twice (the stores to a Task might have written them), ≈ 22
// instructions a task against ≈ 14 (≈ 14 M of the 70B sweep's,
// cachegrind).
//
//go:noinline
func repriceRange(tasks, from []Task, hot []hotTask) {
	if len(tasks) == 0 {
		return
	}
	_, _ = from[len(tasks)-1], hot[len(tasks)-1] // (the walk's bounds, checked once)
	tp, sp, hp := unsafe.Pointer(&tasks[0]), unsafe.Pointer(&from[0]), unsafe.Pointer(&hot[0])
	end := uintptr(len(tasks)) * unsafe.Sizeof(Task{})
	for to, ho := uintptr(0), uintptr(0); to < end; to, ho = to+unsafe.Sizeof(Task{}), ho+unsafe.Sizeof(hotTask{}) {
		t, s, h := (*Task)(unsafe.Add(tp, to)), (*Task)(unsafe.Add(sp, to)), (*hotTask)(unsafe.Add(hp, ho))
		dur, share, bytes, aux := s.Dur, s.GEMMShare, s.Bytes, s.aux
		t.Dur, t.GEMMShare, t.Bytes, t.aux = dur, share, bytes, aux
		h.dur, h.share = dur, share
	}
}

// repricePass is copyPass for a re-pricing build, from its first copy on
// (r's pass copied at at, P tasks after it, n tasks, θ and the copy's
// micro-batch mb): the same checks of the source's micro-batches, the
// prices copied (repriceCopy), the bands listed, the pass state moved.
func (b *builder) repricePass(r *passMark, at, P, n, theta, mb int32) (copied, hosts bool) {
	prog := b.prog
	src, hot := prog.Tasks[r.at:r.end], prog.hot[r.at:r.end]
	if r.checked {
		hosts = r.hosts
	} else {
		hot = hot[:len(src)]
		for i := range src {
			if m := src[i].Micro; m >= 0 && m != mb {
				return false, false
			}
			if hot[i].hostAfter != 0 {
				hosts = true
			}
		}
	}
	b.repriceCopy(at, r.at, n)
	if len(prog.bands) > 0 {
		i, _ := slices.BinarySearchFunc(prog.bands, r.at, func(e taskBand, t int32) int { return int(e.task - t) })
		for j := len(prog.bands); i < j && prog.bands[i].task < r.end; i++ {
			e := prog.bands[i]
			e.task += P
			prog.bands = append(prog.bands, e)
		}
	}
	b.setPassState(&r.fin, theta, P) // (r.fin the copy's from here on: copyPass)
	if (at-1)>>14 != (at+n-1)>>14 && b.interrupt == nil {
		b.interrupt = b.cfg.interrupted()
	}
	prog.issueSum += r.issue
	b.copied[1] += int64(n)
	return true, hosts
}

// repriceBuild re-prices the arena's last build for cfg (its structure
// key the last build's, checked by the caller): every stage's program
// rebuilt in the price-only mode, the builder b restarted for it, each
// stage's state kept at order entry keepAt[s] where asked (prefixkeep.go). It
// reports false, the arena's programs then half re-priced, when a stage
// is not the one in place (errRepriceMismatch), or when the builder
// fails (the fresh build that follows meets the same error and returns
// it). A stage over cfg's StageCut stops it with that error (a fresh
// build would stop at the same stage: its tasks are the same).
func (a *Arena) repriceBuild(cfg *StepConfig, pr Pricer, place pipeline.Placement, shape pipeline.Shape, b *builder, keepAt []int) (progs []*Program, ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			if r != errRepriceMismatch {
				panic(r)
			}
			progs, ok, err = nil, false, nil
		}
	}()
	l := cfg.Layout
	if len(a.progs) < l.PP {
		return nil, false, nil
	}
	b.restart(cfg, pr, place, &a.names, a.passMarks)
	var caches []*blockCache
	progs = make([]*Program, l.PP)
	for s := 0; s < l.PP; s++ {
		caches, b.cache = a.stageBlockCache(caches, cfg, pr, s)
		prog := a.progs[s]
		if prog.skipRuns != nil {
			prog.skipRuns.priced = false // (the records' dur and share rewritten: armSkip checks them)
		}
		prog.computeKnown = false // (every Dur priced again)
		n := len(prog.Tasks)
		if !prog.keepHot || len(prog.hot) != n || len(prog.depOff) != n+1 || int(prog.depOff[n]) != len(prog.deps) {
			return nil, false, nil
		}
		b.reset(s, prog, a.order(cfg.Schedule, shape, s))
		b.rp = repricing{on: true, n: n, depOff: prog.depOff, deps: prog.deps}
		b.keepTo = &a.keep.stages[s] // (prefixkeep.go, as buildAfter's)
		if s < len(keepAt) && keepAt[s] > 0 {
			b.keepAt = keepAt[s]
		}
		// The sends' and receives' peers and matches (linkP2P's), which
		// the copies overwrite with their sources'; the stream counts and
		// the p2p list stay the last build's.
		p2pAux := a.rpAux[:0]
		for _, t := range prog.p2p {
			p2pAux = append(p2pAux, prog.Tasks[t].aux)
		}
		a.rpAux = p2pAux
		prog.Tasks, prog.hot, prog.depOff, prog.deps = prog.Tasks[:0], prog.hot[:0], prog.depOff[:0], prog.deps[:0]
		prog.entries, prog.bands, prog.copies = prog.entries[:0], prog.bands[:0], prog.copies[:0]
		if err := b.build(); err != nil {
			return nil, false, nil
		}
		if err := cfg.interrupted(); err != nil {
			return nil, false, nil
		}
		if len(prog.Tasks) != n {
			return nil, false, nil
		}
		prog.depOff, prog.deps = b.rp.depOff, b.rp.deps
		for k, t := range prog.p2p {
			prog.Tasks[t].aux = p2pAux[k]
		}
		// (checked with the dependencies and peers in place: the
		// pipeline bound reads them)
		if err := cfg.StageCut.over(prog, place); err != nil {
			return nil, false, err
		}
		b.rp = repricing{}
		progs[s] = prog
	}
	a.passMarks = b.passMarks
	repricedBuilds.Add(1)
	if repriceChecks.on.Load() {
		if err := checkRepriced(cfg, pr, progs); err != nil {
			repriceChecks.err.CompareAndSwap(nil, &err)
		}
	}
	return progs, true, nil
}

// ForgetBuild says the arena's last build is not to be re-priced: its
// programs are not as a build of its configuration leaves them (a caller
// whose pricer failed during the build, which BuildAfter does not see).
func (a *Arena) ForgetBuild() { a.rpKeyed = false }

// repricedBuilds counts the builds made by re-pricing (RepricedBuilds).
var repricedBuilds atomic.Int64

// RepricedBuilds is how many builds so far re-priced an arena's last
// build instead of building afresh.
func RepricedBuilds() int64 { return repricedBuilds.Load() }

// repriceChecks is the check mode of re-pricing builds (tests).
var repriceChecks struct {
	on  atomic.Bool
	err atomic.Pointer[error]
}

// SetRepriceChecks turns on (or off) the check of every re-pricing build
// against the same configuration built afresh in an arena of its own,
// every Program field compared but the arena, the launch-queue walk's
// own record (qfrom, qbig, qcopied) and the layer skip's runs (skipRuns),
// and returns the first difference found since it was last turned on
// (nil: none). For tests: it builds
// every re-priced step twice.
func SetRepriceChecks(on bool) error {
	var err error
	if p := repriceChecks.err.Swap(nil); p != nil {
		err = *p
	}
	repriceChecks.on.Store(on)
	return err
}

// checkRepriced builds cfg afresh in an arena of its own and compares it
// with the re-priced programs got.
func checkRepriced(cfg *StepConfig, pr Pricer, got []*Program) error {
	c := *cfg
	c.Arena = new(Arena)
	want, err := BuildAfter(&c, pr, nil)
	if err != nil {
		return fmt.Errorf("re-pricing check: the fresh build failed: %w", err)
	}
	if len(want) != len(got) {
		return fmt.Errorf("re-pricing check: %d programs re-priced, %d built", len(got), len(want))
	}
	for s := range want {
		if f := programDiff(got[s], want[s]); f != "" {
			return fmt.Errorf("re-pricing check: stage %d differs from a fresh build in %s", s, f)
		}
	}
	return nil
}

// programDiff names the fields of a and b that differ (slices by their
// elements, not their capacity), "" when none, the arena and the queue
// walk's own record aside (qfrom, qbig, qcopied: how the walk went, not
// what it found), the layer skip's runs (skipRuns: found by a Run, not
// built) and where a resumed build took its prefix from (prefix).
func programDiff(a, b *Program) string {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	var diff []string
	for i := 0; i < va.NumField(); i++ {
		switch name := va.Type().Field(i).Name; name {
		case "arena", "qfrom", "qbig", "qcopied", "skipRuns", "prefix":
		default:
			if !sameValue(va.Field(i), vb.Field(i)) {
				diff = append(diff, name)
			}
		}
	}
	return fmt.Sprint(diff)[1 : len(fmt.Sprint(diff))-1]
}

// sameValue compares two values of one type element by element, through
// unexported fields too (reflect's Interface refuses them).
func sameValue(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.Float32, reflect.Float64:
		return a.Float() == b.Float() || a.Float() != a.Float() && b.Float() != b.Float()
	case reflect.String:
		return a.String() == b.String()
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return false
		}
		for i := 0; i < a.Len(); i++ {
			if !sameValue(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if !sameValue(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return sameValue(a.Elem(), b.Elem())
	}
	panic("sameValue: " + a.Kind().String())
}

// stampStepAndIssue sets t's step and returns its host issue time (the
// emitter's, builder.issue, which it sets back to 0; on a hosted program,
// the host model's Call for a collective, send or host copy) and host
// wait (1 + the task the host waits for, 0 for none), which its played
// record holds (hotTask), adding the issue to Program.issueSum on a
// hosted program: the part of a task's record that add and repriceAdd
// both work out before placing it.
func (b *builder) stampStepAndIssue(p *Program, t *Task) (hostAfter int32, issue engine.Time) {
	t.Step = int16(b.step)
	issue, b.issue = b.issue, 0
	if p.Hosted && t.Kind != KindRecv {
		if t.Kind.IsComm() || t.Kind == KindHostCopy {
			issue = b.cfg.Host.Call
		}
		if b.hostBlock >= 0 {
			hostAfter = b.hostBlock + 1
			b.hostBlock = -1
			p.noHostWaits = false
		}
		p.issueSum += issue // (Program.issueSum)
	}
	return hostAfter, issue
}
