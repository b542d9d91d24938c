package parallel

import (
	"iter"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/simtrain/simtrain/sim/engine"
)

// Pass copying (issue 18: whole micro-batch passes copied). A chunk pass
// (passes.go) run alone is emitted by the same code from the builder's
// state, the pass's chunk, direction, split and reduce flags, and its
// micro-batch, and as layer copying relies on (layercopy.go) the builder
// uses task indices only as references. The micro-batch enters what is
// emitted only as the tasks' Micro field, except through the builder's maps
// keyed by micro-batch: the hand-offs between two chunks of this stage
// (local), which a copied pass's builder must not hold, and the offloaded
// activations (offloaded), whose entries a copy makes and reads at its
// own micro-batch as emitting it would (offloadsCopy). So when pass C
// (micro-batch m) starts with the state the last pass B of its kind (same
// chunk, direction and split, micro-batch m−1, no gradient reduction in
// either) started with,
// relabelled — every task index from some threshold θ on moved by P, the
// distance from B's first task to C's, every index before θ unchanged —
// and with the same untracked state (gradient bucket, queued buckets, DP
// tasks, barrier, first-compute flag, no error, no interrupt, no pair
// waits), emitting C would append B's tasks relabelled, with Micro one
// further, and leave the state after B relabelled: the builder appends C
// as a copy of B instead (copyPass). Checks that fail fall back to
// emitting: the first pass of each kind, a pass after a different one
// (warm-up to steady state, cool-down), the pass that reduces the chunk's
// gradients, overlapped pairs, anything that changes the untracked state.
// TestLayerCopyEqualsEmit (every bundled, validation, holdout and
// test-data scenario: the programs equal with copies and with everything
// emitted) and TestPassCopy (hand-made cases) hold it to emitting;
// StepConfig.EmitEveryPass turns pass copying off.

// passStateInts is how many task indices of the builder's state a pass
// reads or moves (passState).
const passStateInts = int(NumStreams) + 11

// passKey is what a pass's emission reads besides the builder's state and
// its micro-batch.
type passKey struct {
	chunk       int32
	fwd, splitW bool
}

// passMark is the last pass of a kind emitted or copied in this step: its
// micro-batch, its task range [at, end), the state indices it started and
// ended with, and the untracked state, which it did not change.
type passMark struct {
	key        passKey
	mb         int
	step       int32
	at, end    int32
	start, fin [passStateInts]int32
	other      passOther
	// streams is the pass's tasks per stream (Program.streamTasks).
	streams [streamSlots]int32
	// checked says the pass is a copy (copyPass): its tasks name its
	// micro-batch or none, as copyPass checked of its source, so a copy
	// of it needs no check of its own; hosts says some task of it waits
	// for the host (hostAfter), as some of its source did. Both false for
	// an emitted pass (its tasks are checked when first copied).
	checked, hosts bool
	// issue is the pass's Program.issueSum share, Σ Issue over [at, end)
	// as add counts it, which each copy adds
	issue engine.Time
}

// passOther is the builder state a pass may read or change that the
// relabelling does not cover; a pass is copied only when it is the same
// before and after.
type passOther struct {
	first      bool
	dense, exp float64
	lens       [4]int // queued, dpTasks, barrier, pairWait
	clean      bool   // no error, no interrupt, no local hand-offs (offloaded activations: offloadsCopy)
}

// passState is the task indices of the builder's state that a pass reads
// or moves: the streams' last tasks, then the fields setPassState lists.
func (b *builder) passState() (s [passStateInts]int32) {
	n := int(NumStreams)
	copy(s[:n], b.last[:])
	s[n], s[n+1], s[n+2], s[n+3] = b.tpRecent, b.tpOlder, b.epRecent, b.epOlder
	s[n+4], s[n+5], s[n+6], s[n+7] = b.pendingBlock, b.reload, b.embAG, b.headAG
	s[n+8], s[n+9], s[n+10] = b.fsdpPrev, b.fsdpPrev2, b.hostBlock
	return s
}

// setPassState sets the indices passState reads to s, each relabelled
// (every index from theta on moved by P).
func (b *builder) setPassState(s *[passStateInts]int32, theta, P int32) {
	for i := range s {
		if v := s[i]; v >= theta {
			s[i] = v + P
		}
	}
	n := int(NumStreams)
	copy(b.last[:], s[:n])
	b.tpRecent, b.tpOlder, b.epRecent, b.epOlder = s[n], s[n+1], s[n+2], s[n+3]
	b.pendingBlock, b.reload, b.embAG, b.headAG = s[n+4], s[n+5], s[n+6], s[n+7]
	b.fsdpPrev, b.fsdpPrev2, b.hostBlock = s[n+8], s[n+9], s[n+10]
}

func (b *builder) passOther() passOther {
	return passOther{first: b.firstComp, dense: b.bucketDense, exp: b.bucketExpert,
		lens:  [4]int{len(b.queued), len(b.dpTasks), len(b.barrier), len(b.pairWait)},
		clean: b.err == nil && b.interrupt == nil && b.local == nil}
}

// runPass emits pass p alone, or copies it from the last pass of its kind
// (copyPass), and records it for the next.
func (b *builder) runPass(p *chunkPass) {
	if b.cfg.EmitEveryPass || b.cfg.EmitEveryLayer || p.reduce {
		b.run(p)
		b.passMarks = b.passMarks[:0] // a reducing pass ends what may be copied
		return
	}
	k := passKey{chunk: int32(p.ch.Index), fwd: p.fwd, splitW: p.splitW}
	ri := -1
	for i := range b.passMarks {
		if b.passMarks[i].key == k {
			ri = i
		}
	}
	at, issueAt := int32(len(b.prog.Tasks)), b.prog.issueSum
	start := b.passState()
	other := b.passOther()
	if ri >= 0 {
		if ok, hosts := b.copyPass(&b.passMarks[ri], p, start, other); ok {
			// (copyPass set r.fin: the state it left, which passState
			// would read back)
			r := &b.passMarks[ri]
			r.mb, r.at, r.end, r.start = p.mb, at, int32(len(b.prog.Tasks)), start
			r.checked, r.hosts = true, hosts
			return
		}
	}
	before := b.prog.streamTasks
	b.run(p)
	rec := passMark{key: k, mb: p.mb, step: b.step, at: at, end: int32(len(b.prog.Tasks)), start: start, fin: b.passState(), other: other,
		issue: b.prog.issueSum - issueAt}
	for s, v := range b.prog.streamTasks {
		rec.streams[s] = v - before[s]
	}
	if o := b.passOther(); o != other || !o.clean {
		rec.other.clean = false // the pass changed what copying does not carry
	}
	switch {
	case ri >= 0:
		b.passMarks[ri] = rec
	case b.passMarks == nil:
		// room for the kinds of four chunks at once: one allocation a
		// build instead of the append doublings
		b.passMarks = append(make([]passMark, 0, 8), rec)
	default:
		b.passMarks = append(b.passMarks, rec)
	}
}

// copyPass appends pass p (micro-batch p.mb, starting in state cur with
// untracked state other) as a copy of r's pass when the checks hold, and
// reports whether it did and whether some copied task waits for the host
// (hostAfter). When it copied, r.fin is the state the copy left (what
// passState reads now): the caller need not read it back, ≈ 20
// instructions of each of the ≈ 310 copies a 70B sweep point makes
// (cachegrind). Every other field of r is the source's.
func (b *builder) copyPass(r *passMark, p *chunkPass, cur [passStateInts]int32, other passOther) (copied, hosts bool) {
	prog := b.prog
	at := int32(len(prog.Tasks))
	P := at - r.at
	n := r.end - r.at
	if r.step != b.step || p.mb != r.mb+1 || n <= 0 || P < n || !r.other.clean || !other.clean ||
		other.first || other.first != r.other.first || other.dense != r.other.dense || other.exp != r.other.exp || other.lens != r.other.lens {
		return false, false
	}
	// θ: the least index of r's starting state that moved by P; every
	// index of the state from θ on must have moved, every one before it
	// stayed. One walk: each index moved (θ is the least of those before
	// r's pass) or stayed (the greatest of those must be below θ).
	theta, ok := passTheta(&r.start, &cur, P, r.at)
	// The step-start parameter gathers (paramAG), which the emitters name
	// without the state, stay.
	if !ok || theta < b.gathersEnd {
		return false, false
	}
	offloads := false
	if b.offloaded.length() > 0 {
		if offloads, ok = b.offloadsCopy(r, theta, P); !ok {
			return false, false
		}
	}
	if b.rp.on {
		copied, hosts = b.repricePass(r, at, P, n, theta, int32(r.mb))
		if copied && offloads {
			b.copyOffloads(r, at, false)
		}
		return copied, hosts
	}
	for cap(prog.Tasks)-len(prog.Tasks) < int(n) {
		prog.grow()
	}
	// One walk over the copies (the source is read once, by the bulk
	// copy): every task of the pass names its micro-batch or none, and
	// Micro moves by one for the copy; a task naming another undoes the
	// copy. A source that is itself a copy (r.checked) was checked when
	// it was made: its copy only moves Micro (bumpMicro), and relabels the
	// host waits only when it has some (r.hosts): ≈ 7.5 instructions a
	// task against the checking walk's ≈ 16 (cachegrind).
	mb := int32(r.mb)
	prog.Tasks = append(prog.Tasks, prog.Tasks[r.at:r.end]...)
	prog.hot = append(prog.hot, prog.hot[r.at:r.end]...) // (the played records, with the host waits)
	// (the loops below work on local slices: through prog, every store
	// would reload the slice)
	tasks, hot := prog.Tasks[at:], prog.hot[at:]
	hot = hot[:len(tasks)]
	switch {
	case r.checked && !r.hosts:
		bumpMicro(tasks)
	case r.checked:
		hosts = true
		bumpMicro(tasks)
		relabelHostWaits(hot, theta, P)
	default:
		for i := range tasks {
			t := &tasks[i]
			if m := t.Micro; m >= 0 {
				if m != mb {
					prog.Tasks, prog.hot = prog.Tasks[:at], prog.hot[:at]
					return false, false
				}
				t.Micro = m + 1
			}
		}
		hosts = relabelHostWaits(hot, theta, P)
	}
	d0, d1 := prog.depOff[r.at], int32(len(prog.deps)) // depOff has one entry per task while building
	if r.end < int32(len(prog.depOff)) {
		d1 = prog.depOff[r.end]
	}
	shift := int32(len(prog.deps)) - d0
	o := len(prog.depOff)
	off := slices.Grow(prog.depOff, int(n))[:o+int(n)]
	prog.depOff = off
	shiftBy(off[o:], off[r.at:r.end], shift)
	// The copied tasks' pipeline sends and receives (p2p) and band GEMMs
	// (taskBand), each listed in task order.
	i, _ := slices.BinarySearch(prog.p2p, r.at)
	for j := len(prog.p2p); i < j && prog.p2p[i] < r.end; i++ {
		prog.p2p = append(prog.p2p, prog.p2p[i]+P)
	}
	if len(prog.bands) > 0 {
		i, _ := slices.BinarySearchFunc(prog.bands, r.at, func(e taskBand, t int32) int { return int(e.task - t) })
		for j := len(prog.bands); i < j && prog.bands[i].task < r.end; i++ {
			e := prog.bands[i]
			e.task += P
			prog.bands = append(prog.bands, e)
		}
	}
	// The dependencies copied and relabelled in one pass, two at a time
	// (moveFrom).
	e := len(prog.deps)
	deps := growDeps(prog.deps, int(d1-d0))[:e+int(d1-d0)]
	prog.deps = deps
	moveFrom(deps[e:], deps[d0:d1], theta, P)
	if offloads {
		b.copyOffloads(r, at, true)
	}
	b.setPassState(&r.fin, theta, P) // (r.fin the copy's from here on)
	addStreams(&prog.streamTasks, &r.streams)
	if (at-1)>>14 != (at+n-1)>>14 && b.interrupt == nil { // add's polling: a multiple of 16,384 among the copies
		b.interrupt = b.cfg.interrupted()
	}
	prog.noteCopy(at, r.at, n)
	prog.issueSum += r.issue // the copy's tasks are the source's (r stays its mark, issue too)
	b.copied[1] += int64(n)  // (copiedPassTasks, at the stage's end)
	return true, hosts
}

// passTheta is copyPass' θ for a source pass that started in state s and
// a copy that starts in state c, P tasks further (P > 0): the least index
// of s that moved by P (theta0, the source's first task, when none did),
// and whether every index of s either moved (non-negative, moving by
// exactly P) or stayed, the stayed ones all below θ. It reads the two
// states two indices an iteration over the pointers, one difference a
// pair: c − v is P for a moved index and 0 for one that stayed, which no
// index is both (P ≠ 0), so it equals the walk that asks v ≥ 0 && c = v+P
// first and c = v second (TestPassThetaMatchesWalk). A negative index
// that "moved" needs no test of its own: θ is then negative, at most the
// stayed maximum's start of −1, and the final test fails. That walk, over a
// copy of s, cost ≈ 13–15 instructions an index (≈ 30 M of the 70B
// sweep's, cachegrind).
func passTheta(s, c *[passStateInts]int32, P, theta0 int32) (theta int32, ok bool) {
	theta, stayed := theta0, int32(-1)
	// (byte offsets, as moveQuads': indexing s[i+1] kept two bounds
	// checks an iteration, pair views of the arrays two nil checks)
	sp, cp := unsafe.Pointer(s), unsafe.Pointer(c)
	for off := uintptr(0); off < unsafe.Sizeof(*s); off += 8 {
		v0, v1 := *(*int32)(unsafe.Add(sp, off)), *(*int32)(unsafe.Add(sp, off+4))
		if d := *(*int32)(unsafe.Add(cp, off)) - v0; d != 0 {
			if d != P {
				return 0, false
			}
			theta = min(theta, v0)
		} else {
			stayed = max(stayed, v0)
		}
		if d := *(*int32)(unsafe.Add(cp, off+4)) - v1; d != 0 {
			if d != P {
				return 0, false
			}
			theta = min(theta, v1)
		} else {
			stayed = max(stayed, v1)
		}
	}
	return theta, stayed < theta
}

// passStateInts is even: passTheta reads the states two indices at a time.
var _ [1 - passStateInts%2]struct{}

// relabelHostWaits relabels the host waits of a pass's copied records
// (every task index from theta on moved by P) and reports whether any
// record waits.
func relabelHostWaits(hot []hotTask, theta, P int32) (hosts bool) {
	for i := range hot {
		if h := hot[i].hostAfter; h != 0 {
			hosts = true
			hot[i].hostAfter = relabel(h-1, theta, P, -1, -1) + 1
		}
	}
	return hosts
}

// copiedPassTasks counts the tasks copyPass appended (CopiedPassTasks).
var copiedPassTasks atomic.Int64

// CopiedPassTasks is how many tasks all builds so far appended as copies
// of a whole pass instead of emitting them.
func CopiedPassTasks() int64 { return copiedPassTasks.Load() }

// addStreams adds each of the pass's per-stream task counts d to the
// program's c, two counts a 64-bit word: both are non-negative int32s
// whose sums stay below 2³¹ (a program's task indices are int32s), so no
// lane carries into the next and the lanes' order does not matter
// (TestAddStreamsMatchesPlain). Sixteen adds one at a time cost a copy ≈
// 22 instructions. The arrays are only 4-byte aligned: where a word
// load needs 8 (wordLoadsUnaligned false) it adds one at a time.
func addStreams(c, d *[streamSlots]int32) {
	if !wordLoadsUnaligned { // (the arrays are only 4-byte aligned)
		for s, v := range d {
			c[s] += v
		}
		return
	}
	cw := (*[streamSlots / 2]uint64)(unsafe.Pointer(c))
	dw := (*[streamSlots / 2]uint64)(unsafe.Pointer(d))
	for i := range cw {
		cw[i] += dw[i]
	}
}

// Offloaded activations in a copied pass. A forward pass offloads each of
// its layers' inputs of its micro-batch (builder.offload: a D2H copy and
// the entry of b.offloaded keyed by the layer and micro-batch), and the
// backward pass of that micro-batch reloads them (reloadLayer: an H2D copy
// after the entry's D2H, made once and recorded in the entry). Those are
// the builder's only reads and writes of b.offloaded, each at its own
// pass's micro-batch, so a pass copied one micro-batch further reads and
// writes the next micro-batch's entries as emitting it would, provided
// they hold what the source's held when it ran: a forward makes its
// entries anew, a backward finds each of its layers' entries made and not
// yet reloaded. The copied reload must then wait for its own
// micro-batch's offload, which the relabelling cannot give it (the
// source's D2H is an earlier pass's task, kept or moved by P): copyOffloads
// points it there. TestLayerCopyEqualsEmit holds the copies to emitting on
// the scenarios that offload (DeepSeek-V3 on GB200), TestPassCopy counts
// them on a hand-made case, and TestRepricedWithOffloads holds the
// re-pricing builds that copy them to fresh builds.

// passHostCopies yields the index and record of each activation offload
// and reload (a host copy of a micro-batch) in the pass of r, in order:
// what offloadsCopy checks and copyOffloads copies.
func (p *Program) passHostCopies(r *passMark) iter.Seq2[int32, *Task] {
	return func(yield func(int32, *Task) bool) {
		for i := r.at; i < r.end; i++ {
			if t := &p.Tasks[i]; t.Kind == KindHostCopy && t.Micro >= 0 && !yield(i, t) {
				return
			}
		}
	}
}

// offloadsCopy reports whether the pass of r, copied one micro-batch
// further with the relabelling (theta, P), keeps b.offloaded as emitting it
// would (ok), and whether it holds offload copies at all (some). It
// changes nothing.
func (b *builder) offloadsCopy(r *passMark, theta, P int32) (some, ok bool) {
	prog := b.prog
	mb := r.mb
	for i, t := range prog.passHostCopies(r) {
		if int(t.Micro) != mb {
			return false, false
		}
		some = true
		l := int(t.Layer)
		src, ok := b.offloaded.get(l, mb)
		switch t.Stream {
		case StreamD2H:
			if !ok || src.d2h != i {
				return false, false // not the offload that made the source's entry
			}
		case StreamH2D:
			dst, made := b.offloaded.get(l, mb+1)
			if !ok || src.h2d != i || !made || dst.h2d >= 0 || dst.d2h < 0 || dst.bytes != src.bytes {
				return false, false
			}
			// The copy's dependencies are the source's relabelled, with
			// the source's D2H (once) replaced by the copy's: no other
			// may then equal it (emitting lists a dependency once).
			deps := prog.builtDeps(i)
			if j := slices.Index(deps, src.d2h); j < 0 || slices.Index(deps[j+1:], src.d2h) >= 0 {
				return false, false
			}
			for _, d := range deps {
				if d != src.d2h && relabel(d, theta, P, -1, -1) == dst.d2h {
					return false, false
				}
			}
		default:
			return false, false
		}
	}
	return some, true
}

// copyOffloads makes b.offloaded's entries for the pass of r copied at
// task at, one micro-batch further, as emitting it would have: a copied
// offload's entry, and a copied reload recorded in its entry and, when
// deps is set (a copy, not a re-pricing build's, whose dependencies are
// the last build's), waiting for its own micro-batch's offload. The
// caller checked the pass with offloadsCopy.
func (b *builder) copyOffloads(r *passMark, at int32, deps bool) {
	prog := b.prog
	mb := r.mb
	for i, t := range prog.passHostCopies(r) {
		c := at + (i - r.at)
		l := int(t.Layer)
		if t.Stream == StreamD2H {
			b.offloaded.set(l, mb+1, hostCopies{d2h: c, h2d: -1, bytes: t.Bytes})
			continue
		}
		src, _ := b.offloaded.get(l, mb)
		dst, _ := b.offloaded.get(l, mb+1)
		if deps {
			from := prog.builtDeps(i)
			to := prog.deps[prog.depOff[c]:][:len(from)]
			to[slices.Index(from, src.d2h)] = dst.d2h
		}
		dst.h2d = c
		b.offloaded.set(l, mb+1, dst)
	}
}

// builtDeps is Deps(i) while the program is being built, when depOff has
// no entry after the last task's.
func (p *Program) builtDeps(i int32) []int32 {
	hi := int32(len(p.deps))
	if int(i)+1 < len(p.depOff) {
		hi = p.depOff[i+1]
	}
	return p.deps[p.depOff[i]:hi]
}
