package parallel

import (
	"slices"
	"sync/atomic"

	"github.com/simtrain/simtrain/sim/engine"
)

// Layer copying (issue 18: fewer tasks to build for the same program). In a
// pass through a chunk every layer of one class (same block costs,
// parameters, recomputation and emitters: layerKey) is emitted by the same
// code from the builder's state, and the builder uses task indices only as
// references: it stores them, makes them dependencies and reads the tasks
// they name. So once two consecutive layers A and B of a class have been
// emitted with the same tasks (Layer one apart) and the state after B is
// the state after A relabelled — every task index from some threshold θ on
// moved by n, the tasks of one layer, every index before θ unchanged — the
// next layer of that class is B relabelled the same way, and the state after
// it the state after B relabelled again: the builder appends it as a copy
// of B with its dependencies and host waits relabelled (copyLayers) instead
// of emitting it block by block. TestLayerCopyEqualsEmit (every bundled,
// validation, holdout and test-data scenario, built both ways: the
// programs equal) and TestSweepLayerCopyEqualsEmit (every simulated point
// of the 70B sweep played both ways: the figures and events equal) hold it
// to emitting; StepConfig.EmitEveryLayer turns copying off.

// copyMinLayers is the fewest layers a chunk needs for its passes to be
// copied: the first two or three of a pass are emitted and checked, so with
// fewer the checks cost more than the copies save (BenchmarkBuildLayerCopy,
// best of six under load: 4 layers per chunk 160 µs copying against 123
// µs emitting, 5 layers 167 against 150, 10 layers 468 against 557, 40
// layers 1.84 ms against 2.91).
const copyMinLayers = 8

// layerStateInts is how many task indices of the builder's state a layer's
// emission can change (stateInts).
const layerStateInts = int(NumStreams) + 14

// layerMark is the builder at the boundary before layer l of a pass: the
// index of that layer's first task and what the emitters read and change.
type layerMark struct {
	at    int32
	l     int
	ints  [layerStateInts]int32
	first bool    // firstComp
	dense float64 // bucketDense
	exp   float64 // bucketExpert
	lens  [6]int  // queued, dpTasks, barrier, local, offloaded, pairWait
	noErr bool    // err == nil
	// issue is Program.issueSum at the mark: the sum over tasks [0, at),
	// so that a range between two marks sums by one subtraction
	issue engine.Time
}

// stateInts returns the task indices in the builder's and the pass's state
// that emitting a layer reads or moves.
func (b *builder) stateInts(p *chunkPass) [layerStateInts]*int32 {
	var r [layerStateInts]*int32
	for i := range b.last {
		r[i] = &b.last[i]
	}
	i := int(NumStreams)
	for _, f := range [...]*int32{&b.tpRecent, &b.tpOlder, &b.epRecent, &b.epOlder, &b.pendingBlock, &b.reload,
		&b.embAG, &b.headAG, &b.fsdpPrev, &b.fsdpPrev2, &b.hostBlock, &p.lp.in, &p.prefetched, &p.lp.gather} {
		r[i] = f
		i++
	}
	return r
}

// layerState returns the values stateInts points to, in its order (the
// pass's state indices, passState, then the pass's input, prefetched
// gather and layer gather), read directly: through stateInts' 25
// pointers, a mark cost ≈ 195 instructions (cachegrind).
// TestLayerStateMatchesStateInts holds the two to one order.
func (b *builder) layerState(p *chunkPass) (s [layerStateInts]int32) {
	ps := b.passState()
	copy(s[:passStateInts], ps[:])
	s[passStateInts], s[passStateInts+1], s[passStateInts+2] = p.lp.in, p.prefetched, p.lp.gather
	return s
}

// setLayerState sets the indices stateInts points to to s, in its order.
func (b *builder) setLayerState(p *chunkPass, s *[layerStateInts]int32) {
	n := int(NumStreams)
	copy(b.last[:], s[:n])
	b.tpRecent, b.tpOlder, b.epRecent, b.epOlder = s[n], s[n+1], s[n+2], s[n+3]
	b.pendingBlock, b.reload, b.embAG, b.headAG = s[n+4], s[n+5], s[n+6], s[n+7]
	b.fsdpPrev, b.fsdpPrev2, b.hostBlock = s[n+8], s[n+9], s[n+10]
	p.lp.in, p.prefetched, p.lp.gather = s[n+11], s[n+12], s[n+13]
}

// the layer state is the pass state and three of the pass's own
var _ [layerStateInts - passStateInts - 3]struct{}
var _ [passStateInts + 3 - layerStateInts]struct{}

func (b *builder) mark(p *chunkPass) layerMark {
	return layerMark{at: int32(len(b.prog.Tasks)), l: p.l, first: b.firstComp, dense: b.bucketDense, exp: b.bucketExpert,
		lens:  [6]int{len(b.queued), len(b.dpTasks), len(b.barrier), len(b.local), b.offloaded.length(), len(b.pairWait)},
		noErr: b.err == nil, ints: b.layerState(p), issue: b.prog.issueSum}
}

// layerKey is what the emitters read of a layer besides the builder's
// state: two layers with equal keys are emitted alike.
type layerKey struct {
	kind               int
	recomputed         bool
	dense, expert      float64
	paired, moe, mlpTP bool
	offloaded          bool
	// prefetchEdge: the chunk's first layer when ZeRO-3 backward gathers
	// are prefetched, whose backward prefetches the embedding or nothing
	// instead of the layer below (bwdPrefetch)
	prefetchEdge bool
}

// classifyLayers numbers the classes of this stage's layers
// (b.classes[l], -1 for a layer that is never copied: one whose
// activations are offloaded).
func (b *builder) classifyLayers() {
	b.classes = resize(b.classes, b.cfg.Model.StackLayers())
	b.copying = false
	for i := range b.classes {
		b.classes[i] = -1
	}
	if b.cfg.EmitEveryLayer || b.cache == nil {
		return
	}
	keys := b.classKeys[:0]
	for _, ch := range b.cfg.Chunks[b.stage] {
		for l := ch.FirstLayer; l < ch.FirstLayer+ch.Layers && l < len(b.classes); l++ {
			d, e := b.layerParams(l)
			k := layerKey{kind: b.cache.layerKind(l), recomputed: l < len(b.recomputed) && b.recomputed[l], dense: d, expert: e,
				paired: b.tpPaired(l), moe: b.moe(l), mlpTP: b.mlpTP(l), offloaded: b.offloadedBytes(l) > 0,
				prefetchEdge: l == ch.FirstLayer && b.bwdPrefetching()}
			if k.offloaded {
				continue
			}
			c := 0
			for c < len(keys) && keys[c] != k {
				c++
			}
			if c == len(keys) {
				keys = append(keys, k)
			}
			b.classes[l] = int32(c)
			b.copying = true
		}
	}
	b.classKeys = keys
}

// runCopying emits pass p alone, copying layers where copyLayers can.
func (b *builder) runCopying(p *chunkPass) {
	var hist [3]layerMark // the boundaries before the last layers emitted, oldest first
	nh := 0
	for {
		if p.state == passLayers && !p.inLayer {
			cur := b.mark(p)
			if nh >= 2 && b.copyLayers(p, hist[:nh], &cur) {
				nh = 0
				continue
			}
			if nh == len(hist) {
				copy(hist[:], hist[1:])
				nh--
			}
			hist[nh] = cur
			nh++
		}
		if !b.emitNext(p) {
			return
		}
	}
}

// copyLayers, at the boundary cur before layer cur.l, checks that the last
// layer emitted (B, from hist[len−1]) repeats the one before it (A) and
// that the state moved with it, and if so appends the copies of B for
// cur.l and the following layers of its class in the chunk, leaving p
// and the builder where emitting them would have. It reports whether it
// copied.
func (b *builder) copyLayers(p *chunkPass, hist []layerMark, cur *layerMark) bool {
	hb, ha := &hist[len(hist)-1], &hist[len(hist)-2]
	n := cur.at - hb.at
	dl := hb.l - ha.l
	cls := b.classOf(hb.l)
	if n <= 0 || hb.at-ha.at != n || (dl != 1 && dl != -1) || cur.l != hb.l+dl ||
		cls < 0 || b.classOf(ha.l) != cls || b.classOf(cur.l) != cls || !cur.noErr || b.interrupt != nil ||
		cur.first != hb.first || cur.dense != hb.dense || cur.exp != hb.exp || cur.lens != hb.lens {
		return false
	}
	// A forward's parameters gathered at step start (Overlap.ParamGather
	// on ZeRO-1/2): one task per layer, issued before the passes, that the
	// layer waits for; the copy waits for its own layer's.
	gA, gB := b.paramGather(p, ha.l), b.paramGather(p, hb.l)
	if (gA < 0) != (gB < 0) || gA >= 0 && b.paramGather(p, cur.l) < 0 {
		return false
	}
	prog := b.prog
	if !b.sameTasks(ha.at, hb.at, n, dl) {
		return false
	}
	// θ: the start of A, or earlier where the state refers to tasks
	// before A that B's emission replaced by their next (FSDP's buffer
	// reuse, two layers back); the tasks from θ on must repeat one layer
	// later, as the emitters may read them.
	theta := ha.at
	for i, v := range hb.ints {
		if v >= 0 && v < theta && cur.ints[i] == v+n {
			theta = v
		}
	}
	for i, v := range hb.ints {
		if relabel(v, theta, n, gA, gB) != cur.ints[i] {
			return false
		}
	}
	if theta < ha.at && !b.sameTasks(theta, theta+n, ha.at-theta, dl) {
		return false
	}
	ch := p.ch
	// The state's indices are relabelled in a local array, layer after
	// layer, and stored back once after the copies (setLayerState) (through the pointers, each layer's relabelling cost ≈ 15
	// instructions an index, cachegrind); cur, this boundary's mark,
	// holds them as the copies start.
	vals := cur.ints
	src := hb.at // the layer copied: B, then each copy
	// every copy's issue sum is B's, [hb.at, cur.at) (Program.issueSum)
	layerIssue := cur.issue - hb.issue
	// Without a gather to replace (from < 0), a copy moves every index of
	// vals that is θ or later by n and θ by n: an index moved stays past
	// the next θ, one not moved stays before it, so k such copies in a
	// row move the indices from the first one's θ (pendFrom) on by k·n.
	// They are moved once, when a copy replacing a gather reads vals or
	// after the last copy (movePending): copyLayers 69.6 M → 61.4 M
	// instructions on the 70B sweep (cachegrind), against moving them
	// copy by copy. (Each copy's from is
	// the last one's to, so a run has gathers to replace in every copy or
	// in none; movePending before a gather copy is a guard.)
	var pend, pendFrom int32
	movePending := func() {
		if pend > 0 {
			for i, v := range vals {
				if v >= pendFrom {
					vals[i] = v + pend*n
				}
			}
			pend = 0
		}
	}
	var l int
	for l = cur.l; l >= ch.FirstLayer && l < ch.FirstLayer+ch.Layers && b.classOf(l) == cls; l += dl {
		from, to := b.paramGather(p, l-dl), b.paramGather(p, l)
		if (from < 0) != (to < 0) {
			break
		}
		if from >= 0 {
			movePending()
			if !onlyGather(&vals, from) {
				break
			}
		}
		at := int32(len(prog.Tasks))
		if b.rp.on {
			// A re-pricing build: the tasks, their records and
			// dependencies are in place; only the prices move.
			d0, d1 := prog.depOff[src], int32(len(prog.deps))
			if from != to && slices.Contains(prog.deps[d0:d1], to) {
				break
			}
			b.repriceCopy(at, src, n)
			if len(prog.bands) > 0 {
				i, _ := slices.BinarySearchFunc(prog.bands, src, func(e taskBand, t int32) int { return int(e.task - t) })
				for j := len(prog.bands); i < j && prog.bands[i].task < src+n; i++ {
					e := prog.bands[i]
					e.task += at - src
					prog.bands = append(prog.bands, e)
				}
			}
		} else {
			for cap(prog.Tasks)-len(prog.Tasks) < int(n) {
				prog.grow()
			}
			d0, d1 := prog.depOff[src], int32(len(prog.deps))
			if from != to && slices.Contains(prog.deps[d0:d1], to) {
				break // relabel would not be one to one
			}
			prog.deps = growDeps(prog.deps, int(d1-d0))
			shift := int32(len(prog.deps)) - d0
			// One bulk copy, then relabelled in place.
			// (the loops work on local slices, as copyPass's: through prog,
			// every store reloaded the slice)
			prog.Tasks = append(prog.Tasks, prog.Tasks[src:src+n]...)
			prog.noteCopy(at, src, n)
			prog.hot = append(prog.hot, prog.hot[src:src+n]...) // (the played records, with the host waits)
			tasks, hot, count := prog.Tasks[at:], prog.hot[at:], &prog.streamTasks
			hot = hot[:len(tasks)]
			for i := range tasks {
				t := &tasks[i]
				if t.Layer >= 0 {
					t.Layer += int32(dl)
				}
				count[t.Stream&(streamSlots-1)]++
				if t.Kind == KindSend || t.Kind == KindRecv { // none so far: a layer sends nothing
					prog.p2p = append(prog.p2p, at+int32(i))
				}
				if h := &hot[i]; h.hostAfter != 0 {
					h.hostAfter = relabel(h.hostAfter-1, theta, n, from, to) + 1
				}
			}
			o := len(prog.depOff) // one entry per task while building: o == at
			off := slices.Grow(prog.depOff, int(n))[:o+int(n)]
			prog.depOff = off
			shiftBy(off[o:], off[src:src+n], shift)
			if len(prog.bands) > 0 { // the copied tasks' band GEMMs (taskBand), in task order
				i, _ := slices.BinarySearchFunc(prog.bands, src, func(e taskBand, t int32) int { return int(e.task - t) })
				for j := len(prog.bands); i < j && prog.bands[i].task < src+n; i++ {
					e := prog.bands[i]
					e.task += at - src
					prog.bands = append(prog.bands, e)
				}
			}
			e := len(prog.deps)
			if from < 0 { // no gather to replace: copied and moved two at a time
				deps := prog.deps[:e+int(d1-d0)] // growDeps made the room
				prog.deps = deps
				moveFrom(deps[e:], deps[d0:d1], theta, n)
			} else {
				prog.deps = append(prog.deps, prog.deps[d0:d1]...)
				nd := prog.deps[e:]
				for i, d := range nd {
					nd[i] = relabel(d, theta, n, from, to)
				}
			}
		}
		// (onlyGather above: no slot but the last holds the gather
		// replaced, so the others only move; in place: relabel over
		// range's copy of vals was a third of copyLayers' CPU samples)
		if from < 0 {
			if pend == 0 {
				pendFrom = theta
			}
			pend++
		} else {
			last := len(vals) - 1
			for i := range vals[:last] {
				if v := vals[i]; v >= theta {
					vals[i] = v + n
				}
			}
			vals[last] = relabel(vals[last], theta, n, from, to)
		}
		if (at-1)>>14 != (at+n-1)>>14 && b.interrupt == nil { // add's polling: a multiple of 16,384 among the copies
			b.interrupt = b.cfg.interrupted()
		}
		prog.issueSum += layerIssue
		src, theta = at, theta+n
		p.lp.l = l
	}
	movePending()
	b.setLayerState(p, &vals)
	b.copied[0] += int64(src + n - hb.at - n) // (copiedTasks, at the stage's end)
	p.l, p.inLayer, p.blocks = l, false, nil
	if l < ch.FirstLayer || l >= ch.FirstLayer+ch.Layers {
		p.state = passEnd
	}
	return true
}

// copiedTasks counts the tasks copyLayers appended, for tests
// (CopiedTasks).
var copiedTasks atomic.Int64

// CopiedTasks is how many tasks all builds so far appended as copies of a
// layer instead of emitting them.
func CopiedTasks() int64 { return copiedTasks.Load() }

// relabel moves task index v by n when it is θ or later, and replaces the
// parameter gather of the layer copied (from, when not -1) by the copy's
// (to).
func relabel(v, theta, n, from, to int32) int32 {
	if from >= 0 && v == from {
		return to
	}
	if v >= theta {
		return v + n
	}
	return v
}

// paramGather is the step-start gather that layer l's forward in pass p
// waits for (gatherLayer), or -1.
func (b *builder) paramGather(p *chunkPass, l int) int32 {
	if !p.fwd || b.cfg.Zero == 3 || l < 0 || l >= len(b.paramAG) {
		return -1
	}
	return b.paramAG[l]
}

// onlyGather reports whether no state index (stateInts' order) but the
// pass's gather is g: relabel then replaces g only where the layer's
// gather went.
func onlyGather(state *[layerStateInts]int32, g int32) bool {
	for i, v := range state {
		if v == g && i != len(state)-1 {
			return false
		}
	}
	return true
}

func (b *builder) classOf(l int) int32 {
	if l < 0 || l >= len(b.classes) {
		return -1
	}
	return b.classes[l]
}

// sameTasks reports whether the n tasks from index y are those from x,
// their layers dl further: what the emitters read of a task they refer to
// (never its dependencies) is the same. It compares each pair in place,
// sameTaskLayer with x's layer moved: a copy of each Task and the
// compiler's struct comparison (a call per pair) cost ≈ 17 M more of the
// 70B sweep's instructions (issue 18, misc48, cachegrind).
func (b *builder) sameTasks(x, y, n int32, dl int) bool {
	if n <= 0 {
		return true
	}
	prog := b.prog
	ta, tb := prog.Tasks[x:x+n], prog.Tasks[y:y+n]
	ha, hb := prog.hot[x:x+n], prog.hot[y:y+n]
	tb, ha, hb = tb[:len(ta)], ha[:len(ta)], hb[:len(ta)] // (one length: no checks in the loop)
	for i := range ta {
		a := &ta[i]
		layer := a.Layer
		if layer >= 0 {
			layer += int32(dl)
			if layer < 0 {
				return false
			}
		}
		// (a negative layer is compared as it is: a layer's task
		// against one of no layer differs)
		// the issue times (the records', with the waits, which are not
		// compared), as when a Task held them
		if !sameTaskLayer(a, &tb[i], layer) || ha[i].issue != hb[i].issue {
			return false
		}
	}
	return true
}

// growDeps makes room for n more dependencies, doubling as Program.grow
// does.
func growDeps(d []int32, n int) []int32 {
	if cap(d)-len(d) >= n {
		return d
	}
	return slices.Grow(d, max(n, len(d)))
}
