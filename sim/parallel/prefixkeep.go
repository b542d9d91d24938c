package parallel

import (
	"reflect"
	"slices"
	"unsafe"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
)

// A failed shortened play's build resumed by the next build (issue 18,
// build50). After a shortened play fails, the next build in the same Arena
// (the full step, or a longer shortened play) begins every stage with the
// failed play's common prefix (Fork: the entries of the stage's schedule
// order the two orders share, before the played step's first last
// backward), and built it again: ≈ 0.68 M tasks on the 70B sweep, ≈ 105 M
// instructions (cachegrind, -bench Sweep70BAll: each such prefix built a
// second time, on purpose, in a throwaway program). The builder reads
// nothing of the order past the entry it emits, nor the micro-batch count
// (lastGrad's positions come after a common prefix), so at the prefix's
// end its state and the program's are those of the full step's build at
// the same entry. A shortened build asked to (Arena.KeepPrefixes) keeps
// the builder's state at each stage's common prefix (keptStage); the next
// build with the failed play's detached Fork takes the prefix's tasks, hot
// records and dependency lists from them and the Fork's copies, sets the
// builder's state, and emits from the entry on. Every condition is checked
// (the same stage and prefix, the same order up to it, the Fork's copies
// its own and of the same length, nothing the state does not carry: no
// error, no offloaded activations or hand-offs between this stage's
// chunks, not a re-pricing build itself), else the stage is built from its
// start. A re-pricing shortened build keeps its states as a fresh one.

// prefixKeep is an Arena's kept builder states (prefixKeep.stages) of its
// last build, and what the build in progress was asked to keep.
type prefixKeep struct {
	// want is, per stage, the order entry whose start the build in
	// progress keeps (-1: none); empty: none asked.
	want []int
	// build is the Arena's build whose states stages hold (Arena.builds);
	// a stage's state is valid when ok.
	build  uint64
	stages []keptStage
	// cfg and pr are the kept build's configuration (a shallow copy) and
	// pricer: a build resumes only where its own are the same but for the
	// micro-batches (sameStep).
	cfg StepConfig
	pr  Pricer
	// resumed counts the stages the last build resumed (tests).
	resumed int
}

// keptStage is a builder's state at the start of order entry entry of
// stage's step 0: the program's first tasks tasks (their hot records and
// dependencies are the Fork's copies), its lists' lengths and sums, and
// the builder's task indices and lists.
type keptStage struct {
	ok    bool
	entry int
	tasks int32
	// park is where keptPrefixes moved the prefix's tasks for this build:
	// the top of the task pool's populated pages, which this build's
	// programs reach last, if at all
	park   []Task
	order  []pipeline.Step
	nP2P   int
	nBands int
	nCopy  int
	// the program's
	streamTasks [streamSlots]int32
	// recount says a re-pricing build kept the state: its p2p and stream
	// counts and its pass marks' stream counts are to be counted (recount)
	recount                            bool
	issueSum                           engine.Time
	issueSumOK, noHostWaits, p2pListed bool
	// the builder's
	last                                [NumStreams]int32
	tpRecent, tpOlder                   int32
	epRecent, epOlder                   int32
	pendingBlock, reload                int32
	bucketDense, bucketExpert           float64
	embAG, headAG                       int32
	firstComp                           bool
	fsdpPrev, fsdpPrev2                 int32
	hostBlock                           int32
	gathersEnd                          int32
	copied                              [2]int64
	pairWait, dpTasks, paramAG, barrier []int32
	queued                              [][2]float64
	passMarks                           []passMark
}

// KeepPrefixes asks a's next build to keep its builder's state at each
// stage's common prefix of st (PlanSteady's plan for that build), for the
// build after it should st's play fail (Fork). A nil Arena keeps nothing.
func (a *Arena) KeepPrefixes(st *Steady) {
	if a == nil || st == nil {
		return
	}
	k := &a.keep
	k.want = k.want[:0]
	for _, s := range st.stages {
		k.want = append(k.want, s.common)
	}
}

// keepState records b's state at the start of order entry i of step 0
// into the Arena's kept stage b.stage, when what it carries is all the
// builder holds (else the stage keeps none).
func (b *builder) keepState(ks *keptStage, i int) {
	ks.ok = false
	if b.err != nil || b.interrupt != nil || b.offloaded.length() != 0 || b.local != nil || b.step != 0 || b.issue != 0 {
		return
	}
	p := b.prog
	c := int32(len(p.Tasks))
	ks.entry, ks.tasks = i, c
	ks.order = append(ks.order[:0], b.order[:i]...)
	ks.nP2P, ks.nBands, ks.nCopy = len(p.p2p), len(p.bands), len(p.copies)
	ks.streamTasks, ks.issueSum = p.streamTasks, p.issueSum
	// A re-pricing build keeps the last build's p2p list and stream counts
	// whole (repriceBuild): the prefix's are counted from its programs
	// when a build resumes from them (keptPrefixes), not at every
	// re-pricing shortened build.
	ks.recount = b.rp.on
	if b.rp.on && len(p.hot) < int(c) {
		return
	}
	ks.issueSumOK, ks.noHostWaits, ks.p2pListed = p.issueSumOK, p.noHostWaits, p.p2pListed
	ks.last = b.last
	ks.tpRecent, ks.tpOlder, ks.epRecent, ks.epOlder = b.tpRecent, b.tpOlder, b.epRecent, b.epOlder
	ks.pendingBlock, ks.reload = b.pendingBlock, b.reload
	ks.bucketDense, ks.bucketExpert = b.bucketDense, b.bucketExpert
	ks.embAG, ks.headAG, ks.firstComp = b.embAG, b.headAG, b.firstComp
	ks.fsdpPrev, ks.fsdpPrev2, ks.hostBlock = b.fsdpPrev, b.fsdpPrev2, b.hostBlock
	ks.gathersEnd, ks.copied = b.gathersEnd, b.copied
	ks.pairWait = append(ks.pairWait[:0], b.pairWait...)
	ks.dpTasks = append(ks.dpTasks[:0], b.dpTasks...)
	ks.paramAG = append(ks.paramAG[:0], b.paramAG...)
	ks.barrier = append(ks.barrier[:0], b.barrier...)
	ks.queued = append(ks.queued[:0], b.queued...)
	ks.passMarks = append(ks.passMarks[:0], b.passMarks...)
	ks.ok = true
}

// keptPrefixes readies the kept stages of a's last build for this one
// (from the failed play's Fork, after its Detach) and reports whether any
// may resume; those that may not are marked so. The prefixes' tasks are
// moved out of the last build's programs before this build reuses their
// storage, each send's and receive's peer and match set back to what the
// build wrote before linkP2P paired them. They are moved within the task
// pool, to the top of its populated pages, every stage's below the next
// one's: this build writes its programs from the pool's start, so a
// stage's moved tasks are still there when its build begins unless the
// stages before it reached them (resumeKept checks), and no page is
// touched that the builds before had not. (Copied to an array of their
// own, the 70B sweep command faulted ≈ 1,000 pages more, ≈ 4 MB on its two
// workers, which cost after an idle spell about what the resumed builds
// save.)
func (a *Arena) keptPrefixes(cfg *StepConfig, pr Pricer, from *Fork, place pipeline.Placement, stages int) bool {
	if !a.movePrefixes(cfg, pr, from, place, stages) {
		if from != nil {
			from.rescue(0) // no stage resumes: Resume compares them all (Fork.rescue)
		}
		return false
	}
	return true
}

// movePrefixes is keptPrefixes but for the Fork's copies' rescue.
func (a *Arena) movePrefixes(cfg *StepConfig, pr Pricer, from *Fork, place pipeline.Placement, stages int) bool {
	k := &a.keep
	if from == nil || !from.saved || !from.detached || from.cp == nil || from.cp.owner != from ||
		k.build+1 != a.builds || len(k.stages) < stages || len(from.inst) != stages || len(a.progs) < stages ||
		!samePricer(k.pr, pr) || !sameStep(&k.cfg, cfg) {
		return false
	}
	n := 0
	for s := range stages {
		ks, p := &k.stages[s], a.progs[s]
		ks.park = nil
		if ks.ok && ks.recount && !ks.counted(p) {
			ks.ok = false
		}
		if ks.ok && (from.inst[s].common != ks.tasks || len(p.Tasks) < int(ks.tasks) || len(p.p2p) < ks.nP2P ||
			len(p.bands) < ks.nBands || len(p.copies) < ks.nCopy || len(p.entries) < ks.entry) {
			ks.ok = false
		}
		if ks.ok {
			n += int(ks.tasks)
		}
	}
	// The pool's populated tasks (warmTo), above every task of the last
	// build that lies in the pool (its stages are carved from its start:
	// the last build's extent is a.tasks.used).
	buf := a.tasks.buf
	if n == 0 || len(buf) == 0 || a.tasks.warm.base != uintptr(unsafe.Pointer(unsafe.SliceData(buf))) {
		return false
	}
	top := min(int(a.tasks.warm.ready/unsafe.Sizeof(Task{})), len(buf))
	if top-n < a.tasks.used {
		for s := range stages {
			k.stages[s].ok = false
		}
		return false
	}
	at := top - n
	for s := range stages {
		ks, p := &k.stages[s], a.progs[s]
		if !ks.ok {
			continue
		}
		t := buf[at : at+int(ks.tasks) : at+int(ks.tasks)]
		at += copy(t, p.Tasks[:ks.tasks])
		ks.park = t
		for _, i := range p.p2p[:ks.nP2P] {
			switch x := &t[i]; x.Kind {
			case KindSend:
				to, _ := place.Next(s, int(x.Chunk))
				if x.Name == sendGradID {
					to, _ = place.Prev(s, int(x.Chunk))
				}
				x.aux = p2pAux(int32(to.Stage), int32(to.Chunk))
			case KindRecv:
				x.aux = p2pAux(x.Peer(), -1)
			}
		}
	}
	return true
}

// counted sets the counts a re-pricing build's kept state lacks from its
// program p (keepState): the prefix's p2p tasks and its tasks per stream,
// and each kept pass mark's tasks per stream (runPass takes them from the
// program's counts, which do not move while re-pricing: a copy of the
// pass adds them). The records' streams are the last build's, which are
// the re-pricing build's. False when p does not hold the prefix's records.
func (ks *keptStage) counted(p *Program) bool {
	c := ks.tasks
	if len(p.hot) < int(c) || len(p.Tasks) != len(p.hot) {
		return false
	}
	ks.nP2P, _ = slices.BinarySearch(p.p2p, c)
	ks.streamTasks = [streamSlots]int32{}
	for j := range p.hot[:c] {
		ks.streamTasks[p.hot[j].stream&(streamSlots-1)]++
	}
	for i := range ks.passMarks {
		r := &ks.passMarks[i]
		if r.at < 0 || r.end < r.at || r.end > c {
			return false
		}
		r.streams = [streamSlots]int32{}
		for j := r.at; j < r.end; j++ {
			r.streams[p.hot[j].stream&(streamSlots-1)]++
		}
	}
	ks.recount = false
	return true
}

// parkedIntact says this build has not written over stage ks's moved
// tasks (keptPrefixes): its programs so far end below them in the task
// pool's array, or, where the pool has grown into a new array since, had
// ended below them when it left the old one (pool.untouched).
func (a *Arena) parkedIntact(ks *keptStage) bool {
	return a.tasks.untouched(ks.park)
}

// resumeKept sets b's program and state to kept stage ks (keptPrefixes),
// with the prefix's hot records and dependencies from Fork from, and
// reports the order entry to emit from; 0 (nothing set) when ks does not
// resume this build's stage.
func (b *builder) resumeKept(ks *keptStage, from *Fork) int {
	s := int(b.stage)
	e := b.resumeStage(ks, from)
	if e == 0 {
		from.rescue(s) // built from its start: Resume compares it (Fork.rescue)
	} else if a := b.cfg.Arena; s > 0 && s < len(a.progs) {
		from.rescueAhead(s, a.progs[s-1])
	}
	return e
}

// resumeStage is resumeKept but for the Fork's copies' rescue.
func (b *builder) resumeStage(ks *keptStage, from *Fork) int {
	if !ks.ok || ks.entry <= 0 || ks.entry > len(b.order) || b.cfg.Steps != 1 || b.rp.on {
		return 0
	}
	for i, st := range ks.order {
		if b.order[i] != st {
			return 0
		}
	}
	fi, cp := &from.inst[b.stage], from.cp
	c := int(ks.tasks)
	p, a := b.prog, b.cfg.Arena
	if p.arena != a || len(p.Tasks) != 0 || len(ks.park) != c || !a.parkedIntact(ks) || fi.at+c > len(cp.hot) || fi.offAt+c+1 > len(cp.depOff) ||
		!from.prefixIntact(b.stage) {
		return 0
	}
	off := cp.depOff[fi.offAt : fi.offAt+c+1]
	nd := int(off[c])
	if off[0] != 0 || fi.depAt+nd > len(cp.deps) {
		return 0
	}
	if cap(p.Tasks) <= c || cap(p.hot) <= c || cap(p.depOff) <= c+1 || cap(p.deps) < nd {
		// room in the pools as Program.grow makes it (the task room the
		// least of the three, Arena.program)
		n := c + max(c/4, 256)
		p.Tasks, p.hot = a.tasks.grow(p.Tasks, n), a.hot.grow(p.hot, n)
		p.depOff, p.deps = a.depOff.grow(p.depOff, n+1), a.deps.grow(p.deps, max(nd, 2*n))
		p.Tasks = p.Tasks[:0:min(cap(p.Tasks), cap(p.depOff)-1, cap(p.hot))]
	}
	p.Tasks = append(p.Tasks[:0], ks.park...) // (below the park or overlapping it: copy's memmove either way)
	ks.park = nil
	// The played records as the failed play left them: they differ from
	// the build's only in the launch-queue waits, which setQueueWaits
	// writes for every task (walkQueues, copyQueues, resumeQueues), or,
	// without a queue bound, leaves as built in both builds (0).
	p.hot = append(p.hot[:0], cp.hot[fi.at:fi.at+c]...)
	p.depOff = append(p.depOff[:0], off[:c]...)
	p.deps = append(p.deps[:0], cp.deps[fi.depAt:fi.depAt+nd]...)
	p.prefix = prefixSource{cp: cp, gen: cp.gen, build: a.builds, c: ks.tasks, at: fi.at, offAt: fi.offAt, depAt: fi.depAt}
	p.entries = p.entries[:ks.entry] // (the last build's, in place: this stage's Program)
	p.p2p, p.bands, p.copies = p.p2p[:ks.nP2P], p.bands[:ks.nBands], p.copies[:ks.nCopy]
	p.streamTasks, p.issueSum = ks.streamTasks, ks.issueSum
	p.issueSumOK, p.noHostWaits, p.p2pListed = ks.issueSumOK, ks.noHostWaits, ks.p2pListed
	b.last = ks.last
	b.tpRecent, b.tpOlder, b.epRecent, b.epOlder = ks.tpRecent, ks.tpOlder, ks.epRecent, ks.epOlder
	b.pendingBlock, b.reload = ks.pendingBlock, ks.reload
	b.bucketDense, b.bucketExpert = ks.bucketDense, ks.bucketExpert
	b.embAG, b.headAG, b.firstComp = ks.embAG, ks.headAG, ks.firstComp
	b.fsdpPrev, b.fsdpPrev2, b.hostBlock = ks.fsdpPrev, ks.fsdpPrev2, ks.hostBlock
	b.gathersEnd, b.copied = ks.gathersEnd, ks.copied
	b.pairWait = append(b.pairWait[:0], ks.pairWait...)
	b.dpTasks = append(b.dpTasks[:0], ks.dpTasks...)
	b.paramAG = append(b.paramAG[:0], ks.paramAG...)
	b.barrier = append(b.barrier[:0], ks.barrier...)
	b.queued = append(b.queued[:0], ks.queued...)
	b.passMarks = append(b.passMarks[:0], ks.passMarks...)
	b.step, b.issue = 0, 0
	a.keep.resumed++
	return ks.entry
}

// prefixSource is where a resumed build's program took its first c
// tasks' hot records, dependency offsets and dependencies (resumeKept):
// a Fork's copies (cp, at its Detach gen) from at, offAt and depAt, in
// the arena's build build.
type prefixSource struct {
	cp               *forkCopy
	gen, build       uint64
	c                int32
	at, offAt, depAt int
	// below says every host and queue wait of the prefix's records
	// lies in it (resumeQueues, which reads them: Resume's test)
	below bool
}

// builtPrefix says p's hot records, dependency offsets and dependencies
// of stage s's common prefix are byte copies of f's copies (resumeKept,
// in the arena's latest build, from f's latest Detach), so that a
// comparison of the two would compare a copy with its source: after
// resumeKept the builder only appends (its later writes to a record's
// flags, smSized and the asynchronous TP pairs, and copyPass's host-wait
// relabelling are all to tasks it emits after the prefix) and
// setQueueWaits writes the prefix's queue waits as the copies hold them
// (resumeQueues), so Resume and resumeQueues compare only what the
// build wrote past the prefix, and test the bounds (what a prefix task
// waits for lies in it). Measured (issue 18, fork50b; cachegrind,
// -bench Sweep70BAll 1x): the comparisons of a copy with its source,
// ≈ 0.64 M records and their dependency lists in the 355 stages of the
// 70B sweep built from a Fork's copies, were 13.2 M instructions
// (memeqbody −6.7, resumeQueues −6.5 M; 3,795.7 → 3,781.6 M). False
// for a nil Fork or program.
func (f *Fork) builtPrefix(p *Program, s int) bool {
	if f == nil || p == nil || p.arena == nil || !f.saved || !f.detached || f.cp == nil || f.cp.owner != f || s < 0 || s >= len(f.inst) {
		return false
	}
	fi, ps := &f.inst[s], &p.prefix
	c := int(fi.common)
	return ps.cp == f.cp && ps.gen == f.cp.gen && ps.build == p.arena.builds && ps.c == fi.common &&
		ps.at == fi.at && ps.offAt == fi.offAt && ps.depAt == fi.depAt &&
		c <= len(p.hot) && c < len(p.depOff) && int(p.depOff[c]) <= len(p.deps)
}

// keepConfig records the build's configuration and pricer with its kept
// states (prefixKeep.cfg, pr).
func (k *prefixKeep) keepConfig(cfg *StepConfig, pr Pricer) {
	k.cfg, k.pr = *cfg, pr
	k.cfg.Arena, k.cfg.Interrupt = nil, nil // (neither is the step's)
}

// samePricer says a and b are one pricer (comparable and equal): a
// build's prices are its pricer's answers.
func samePricer(a, b Pricer) bool {
	if a == nil || b == nil || reflect.TypeOf(a) != reflect.TypeOf(b) || !reflect.TypeOf(a).Comparable() {
		return false
	}
	return a == b
}

// sameStep says a and b configure the same step but for their
// micro-batches (and the arena and interrupt, which are not the step's):
// every other field equal, through pointers, interfaces and maps; funcs
// equal when the same code (StepConfig.LayerParams follows from Model).
// The configurations of a shortened play and of its full step differ in
// Microbatches alone (simulation.Run).
func sameStep(a, b *StepConfig) bool {
	x, y := *a, *b
	x.Microbatches, x.Arena, x.Interrupt = 0, nil, nil
	y.Microbatches, y.Arena, y.Interrupt = 0, nil, nil
	return sameConfigValue(reflect.ValueOf(&x).Elem(), reflect.ValueOf(&y).Elem())
}

// sameConfigValue compares two values of one type as sameStep says.
func sameConfigValue(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return a.Pointer() == b.Pointer()
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return a.Elem().Type() == b.Elem().Type() && sameConfigValue(a.Elem(), b.Elem())
	case reflect.Pointer:
		if a.Pointer() == b.Pointer() {
			return true
		}
		if a.IsNil() || b.IsNil() {
			return false
		}
		return sameConfigValue(a.Elem(), b.Elem())
	case reflect.Map:
		if a.Len() != b.Len() || a.IsNil() != b.IsNil() {
			return false
		}
		it := a.MapRange()
		for it.Next() {
			w := b.MapIndex(it.Key())
			if !w.IsValid() || !sameConfigValue(it.Value(), w) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		if a.Len() == 0 || a.Pointer() == b.Pointer() {
			return true
		}
		fallthrough
	case reflect.Array:
		for i := 0; i < a.Len(); i++ {
			if !sameConfigValue(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if !sameConfigValue(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	}
	return sameValue(a, b)
}
