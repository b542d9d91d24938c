package parallel

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/units"
	"github.com/simtrain/simtrain/sim/workload"
)

const (
	sendActName  = "send_act"
	sendGradName = "send_grad"
)

// builder emits one stage's program. Dependencies follow the frameworks:
// stream order (each task waits for the previous task on its stream), data
// (a block waits for its inputs: the previous block or the collective that
// produced them), and the overlap rules in Overlap.
type builder struct {
	cfg   *StepConfig
	pr    Pricer
	cache *blockCache
	stage int
	prog  *Program
	step  int32
	// issue is the host's issue time of the next task add appends (a
	// Task does not hold it: Program.Issue), set by the emitters of
	// launched compute (compute, the optimizer step) right before add,
	// which takes it and sets it back to 0; a collective's, a send's or a
	// host copy's is the host model's Call (stampStepAndIssue).
	issue engine.Time
	// a2a is a2aBytes' answer once a2aKnown (per stage: reset drops it).
	a2a      float64
	a2aKnown bool

	// rp is a re-pricing build's state (reprice.go): rp.on says the
	// stage's program is the arena's last build of the same structure,
	// whose prices add and the copies rewrite in place.
	rp repricing

	// recomputed marks the layers (global index) this stage recomputes
	// under full recomputation (StepConfig.RecomputeEvery).
	recomputed []bool

	last [NumStreams]int32 // last task on each stream in this program

	// TP overlap: with Overlap.TPComm the compute stream waits only for the
	// TP collective before the most recent one.
	tpRecent, tpOlder int32
	// EP overlap: the same rule for the MoE all-to-alls with Overlap.EP.
	epRecent, epOlder int32
	// pendingBlock is a task the next compute must wait for (blocking sends).
	pendingBlock int32
	// pairWait are the two inputs of an overlapped forward and backward
	// (runOverlapped) that the pair's first compute waits for; empty when
	// none.
	pairWait []int32
	// reload is the host-to-device copy of offloaded activations the next
	// compute (a layer's backward) must wait for; offloaded holds, by
	// layer and micro-batch, the copies that took them to the host and
	// back (its storage kept from stage to stage and build to build, its
	// entries removed: reset, restart).
	reload    int32
	offloaded offloadTable

	// DP gradient buckets (ZeRO 0-2): parameters accumulated since the last
	// bucket was issued, and the DP tasks of this step.
	bucketDense, bucketExpert float64
	queued                    [][2]float64 // buckets waiting for the end of the backward
	dpTasks                   []int32

	// ZeRO-1/2 parameter all-gather per layer, by global layer index
	// (issued at step start with Overlap.ParamGather); nil or -1 when none.
	paramAG   []int32
	embAG     int32
	headAG    int32
	barrier   []int32 // tasks the next step's first compute waits for (emptied, not nil, when none: its storage is reused)
	firstComp bool    // the next compute is the step's first

	// FSDP: compute ends of the last two layers processed (buffer reuse).
	fsdpPrev, fsdpPrev2 int32

	// hostBlock is the task whose end the host thread waits for before it
	// issues the next task (StepConfig.Host), -1 when none.
	hostBlock int32

	// place is the schedule's placement of model chunks; order this
	// stage's steps; lastGrad, per chunk, the index in order of the step
	// that completes its weight gradients last (the DP reduction point).
	place    pipeline.Placement
	order    []pipeline.Step
	lastGrad []int
	// plans are the block emitters of each layer of this stage (by
	// global layer index); passes the two chunk passes being emitted.
	plans []*layerPlan
	// plansByKey are the plans made in this build (layerBlocks).
	plansByKey []keyedPlan
	passes     [2]chunkPass
	// local holds, for pipeline hand-offs between two chunks of this
	// stage (a V-shaped placement's turn), the task that produced the
	// activation or gradient.
	local map[p2pKey]int32
	err   error // the first error while emitting

	// interrupt is StepConfig.Interrupt's error, polled every 16,384
	// tasks; the build stops at the next schedule entry.
	interrupt error

	// depBuf is compute's scratch list of dependencies, reused so that
	// collecting them allocates nothing.
	depBuf []int32
	// optOps is optimizer's scratch list of the ops it prices
	// (Pricer.OpsTime keeps none).
	optOps []workload.Op

	// classes numbers each layer's class for layer copying (layercopy.go),
	// -1 for a layer never copied; copying says some layer has a class.
	classes   []int32
	classKeys []layerKey
	copying   bool

	// passMarks are the last passes of each kind in this step (passcopy.go);
	// gathersEnd is the end of the step-start gathers' tasks.
	passMarks  []passMark
	gathersEnd int32

	// copied counts the tasks this stage's build appended as layer copies
	// (copied[0]) and pass copies (copied[1]), added to copiedTasks and
	// copiedPassTasks when the stage's build returns (flushCopied): the
	// two sweep workers adding to those shared counters at every copy
	// bounced their cache line between the cores, ≈ 0.15% of the 70B
	// sweep's CPU samples on copyPass's locked add alone.
	copied [2]int64

	// tpGather and tpOther are tpBytes' two answers for this build's
	// configuration (setTPBytes, at the start of each stage's build).
	tpGather, tpOther float64

	// names finds a task name's TaskName (the Arena's, kept from build
	// to build).
	names *nameCache
	// keepAt is the order entry of step 0 at whose start the stage's state
	// is kept into keepTo (prefixkeep.go), -1: none; resumeFrom, when
	// set, is the failed play's Fork whose common prefix the stage
	// resumes from resumeKS, kept by the last build.
	keepAt     int
	keepTo     *keptStage
	resumeFrom *Fork
	resumeKS   *keptStage
	// sendTimes are this build's latest Pricer.SendTime answers
	// (sendTime), nSend of them, the oldest replaced when all are taken.
	sendTimes [8]sendTimeEntry
	nSend     int
}

// sendTimeEntry is one Pricer.SendTime answer.
type sendTimeEntry struct {
	from, to int32
	bytes    float64
	t        engine.Time
}

// sendTime is b.pr.SendTime(from, to, bytes), asked once per build for
// each stage pair and size (a pipeline send's pricing was ≈ 3% of a
// sweep's CPU): a build's sends are priced by one pricer, whose answer
// depends on the arguments only, and a step's sends go to one or two
// stages in one size, so a few entries hold them all.
func (b *builder) sendTime(from, to int, bytes float64) engine.Time {
	for _, e := range b.sendTimes[:min(b.nSend, len(b.sendTimes))] {
		if e.from == int32(from) && e.to == int32(to) && e.bytes == bytes {
			return e.t
		}
	}
	t := b.pr.SendTime(from, to, units.Bytes(bytes))
	b.sendTimes[b.nSend%len(b.sendTimes)] = sendTimeEntry{int32(from), int32(to), bytes, t}
	b.nSend++
	return t
}

// reset readies the builder to emit stage s into prog with the stage's
// schedule order, keeping only reusable scratch storage from the stage
// before.
func (b *builder) reset(s int, prog *Program, order []pipeline.Step) {
	off := b.offloaded
	off.reset()
	*b = builder{offloaded: off, cfg: b.cfg, pr: b.pr, cache: b.cache, place: b.place, stage: s, prog: prog, order: order,
		recomputed: b.recomputed, pairWait: b.pairWait[:0], queued: b.queued[:0], dpTasks: b.dpTasks[:0],
		paramAG: b.paramAG, lastGrad: b.lastGrad, depBuf: b.depBuf[:0], classes: b.classes, classKeys: b.classKeys[:0], names: b.names,
		sendTimes: b.sendTimes, nSend: b.nSend, plans: b.plans, plansByKey: b.plansByKey,
		passMarks: b.passMarks[:0], barrier: b.barrier[:0], optOps: b.optOps[:0], keepAt: -1}
}

// restart readies the arena's builder for a new build of cfg priced by
// pr: every field as a new builder{cfg, pr, place, names, passMarks[:0]}
// has it, except that the scratch lists reset keeps from stage to stage
// (and optimizer's) keep their storage, emptied or to be resized and
// filled before any read, as reset's are within a build. Nothing of the
// last build is read: plansByKey, made for the last configuration, is
// emptied (its plans depend on cfg), and sendTimes are dropped (the
// answers of another pricer). Dropping the lists instead made a build's
// plans, layer classes, recomputed marks and the like garbage: ≈ 330 page
// faults a 70B sweep on one worker once the workers had reserved their memory
// (TestArenaBuilderRestartEqualsFresh).
func (b *builder) restart(cfg *StepConfig, pr Pricer, place pipeline.Placement, names *nameCache, passMarks []passMark) {
	off := b.offloaded
	off.reset()
	*b = builder{offloaded: off, cfg: cfg, pr: pr, place: place, names: names, passMarks: passMarks[:0],
		recomputed: b.recomputed, pairWait: b.pairWait[:0], queued: b.queued[:0], dpTasks: b.dpTasks[:0],
		paramAG: b.paramAG[:0], lastGrad: b.lastGrad, depBuf: b.depBuf[:0], classes: b.classes, classKeys: b.classKeys[:0],
		plans: b.plans, plansByKey: b.plansByKey[:0], barrier: b.barrier[:0], optOps: b.optOps[:0]}
}

func (b *builder) dense() float64 { return float64(b.cfg.Layout.TP) }

func (b *builder) build() error {
	defer b.flushCopied() // (also when a re-pricing build panics out of it)
	cfg := b.cfg
	cfg.StageCut.begin(b.prog)
	// A whole step built afresh is checked against its cutoff after each
	// schedule entry (StageCut.during), not only once built (over): the
	// walk is the same, and a stage far over stops early. A re-pricing
	// build's dependencies are the last build's until it ends.
	cutDuring := cfg.StageCut.On && cfg.StageCut.Steady == nil && !b.rp.on
	for i := range b.last {
		b.last[i] = -1
	}
	b.tpRecent, b.tpOlder, b.pendingBlock, b.reload = -1, -1, -1, -1
	b.epRecent, b.epOlder = -1, -1
	b.fsdpPrev, b.fsdpPrev2 = -1, -1
	b.hostBlock = -1
	b.prog.Hosted = cfg.Host.On
	b.prog.noHostWaits = true // until add makes one
	b.prog.issueSum, b.prog.issueSumOK = 0, true
	b.prog.p2pListed = true
	b.setTPBytes()
	b.recomputed = resize(b.recomputed, cfg.Model.StackLayers())
	clear(b.recomputed)
	pos := 0
	for _, ch := range cfg.Chunks[b.stage] {
		for l := ch.FirstLayer; l < ch.FirstLayer+ch.Layers && l < len(b.recomputed); l++ {
			pos++
			b.recomputed[l] = workload.RecomputesLayer(cfg.RecomputeEvery, pos)
		}
	}
	b.planLayers()
	b.classifyLayers()
	b.lastGrad = resize(b.lastGrad, len(cfg.Chunks[b.stage]))
	for i := range b.lastGrad {
		b.lastGrad[i] = -1
	}
	for i, st := range b.order {
		if st.Phase == pipeline.PhaseB || st.Phase == pipeline.PhaseW {
			b.lastGrad[st.Chunk] = i
		}
	}
	for step := 0; step < cfg.Steps; step++ {
		i0 := 0
		if step == 0 && b.resumeFrom != nil {
			i0 = b.resumeKept(b.resumeKS, b.resumeFrom)
		}
		if step == 0 && b.keepTo != nil {
			b.keepTo.ok = false // until kept below (after the resume read it)
		}
		if i0 == 0 {
			b.step = int32(step)
			b.dpTasks = b.dpTasks[:0]
			b.bucketDense, b.bucketExpert = 0, 0
			b.firstComp = true
			b.startParamGather()
			b.gathersEnd = int32(len(b.prog.Tasks))
			b.passMarks = b.passMarks[:0]
		}
		for i := i0; i < len(b.order); i++ {
			if i == b.keepAt && step == 0 && b.keepTo != nil {
				b.keepState(b.keepTo, i)
			}
			st := b.order[i]
			if step == 0 {
				b.prog.entries = append(b.prog.entries, int32(len(b.prog.Tasks)))
			}
			if b.interrupt != nil {
				return b.interrupt
			}
			ch := cfg.Chunks[b.stage][st.Chunk]
			last := i == b.lastGrad[st.Chunk]
			switch st.Phase {
			case pipeline.PhaseF:
				f := b.newPass(&b.passes[0], ch, st.Microbatch, true, false, false)
				if st.Overlap && i+1 < len(b.order) && b.order[i+1].Phase != pipeline.PhaseF && b.order[i+1].Phase != pipeline.PhaseW {
					i++
					if step == 0 { // the pair is emitted interleaved: no boundary between them
						b.prog.entries = append(b.prog.entries, int32(len(b.prog.Tasks)))
					}
					nx := b.order[i]
					g := b.newPass(&b.passes[1], cfg.Chunks[b.stage][nx.Chunk], nx.Microbatch, false,
						nx.Phase == pipeline.PhaseI, nx.Phase == pipeline.PhaseB && i == b.lastGrad[nx.Chunk])
					b.runOverlapped(f, g)
					continue
				}
				b.runPass(f)
			case pipeline.PhaseB, pipeline.PhaseI:
				b.runPass(b.newPass(&b.passes[0], ch, st.Microbatch, false, st.Phase == pipeline.PhaseI, st.Phase == pipeline.PhaseB && last))
			case pipeline.PhaseW:
				b.wgradChunk(ch, st.Microbatch, last)
			}
			if b.err != nil {
				return b.err
			}
			if cutDuring {
				if err := cfg.StageCut.during(b.prog, b.place); err != nil {
					return err
				}
			}
		}
		if step == 0 {
			b.prog.entries = append(b.prog.entries, int32(len(b.prog.Tasks)))
		}
		b.flushBucket()
		b.optimizer()
	}
	return nil
}

// flushCopied adds the stage's copy counts to the process's counters
// (CopiedTasks, CopiedPassTasks) and zeroes them.
func (b *builder) flushCopied() {
	if c := b.copied[0]; c != 0 {
		copiedTasks.Add(c)
	}
	if c := b.copied[1]; c != 0 {
		copiedPassTasks.Add(c)
	}
	b.copied = [2]int64{}
}

// add appends t with its stream-order dependency and deps (negative ids are
// skipped). Receives have no local dependencies: the matching send starts them.
func (b *builder) add(t *Task, deps ...int32) int32 {
	if b.rp.on {
		return b.repriceAdd(t)
	}
	p := b.prog
	idx := int32(len(p.Tasks))
	wait, issue := b.stampStepAndIssue(p, t)
	if len(p.Tasks) == cap(p.Tasks) {
		p.grow()
	}
	start := len(p.deps)
	p.depOff = append(p.depOff, int32(start))
	if t.Kind != KindRecv {
		// p.deps = append(p.deps, …) in place: the compiler stores only
		// the length back (no write barrier) unless the array grows.
		if d := b.last[t.Stream]; d >= 0 {
			p.deps = append(p.deps, d)
		}
		for _, d := range deps {
			if d >= 0 && !slices.Contains(p.deps[start:], d) {
				p.deps = append(p.deps, d)
			}
		}
	}
	// The task stored straight into its slot (grow made the room above):
	// append(p.Tasks, *t) copied it to the stack first (its growslice
	// call could have written *t), 8 more instructions a task.
	n := len(p.Tasks)
	p.Tasks = p.Tasks[:n+1]
	p.Tasks[n] = *t
	// The played record, which holds the task's host wait (a built
	// program always keeps them: Program.hot).
	if h := len(p.hot); h < cap(p.hot) {
		p.hot = p.hot[:h+1]
		storeHot(&p.hot[h], t, issue, wait)
	} else {
		r := hotOf(t)
		r.issue, r.hostAfter = issue, wait
		p.hot = append(p.hot, r)
	}
	b.last[t.Stream] = idx
	p.streamTasks[t.Stream&(streamSlots-1)]++
	if t.Kind == KindSend || t.Kind == KindRecv {
		p.p2p = append(p.p2p, idx)
	}
	if idx&(1<<14-1) == 0 && b.interrupt == nil {
		b.interrupt = b.cfg.interrupted()
	}
	return idx
}

// storeHot sets *h to hotOf(t) with issue time issue and host wait
// hostAfter (1 + the task waited for, 0 for none), one field at a time:
// add's append(p.hot, hotOf(t)) built the record on the stack and copied
// it twice before storing it (TestStoreHotIsHotOf).
func storeHot(h *hotTask, t *Task, issue engine.Time, hostAfter int32) {
	var flags uint8
	if t.CopyEngine {
		flags |= hotCopyEngine
	}
	if t.SMSized {
		flags |= hotSMSized
	}
	h.dur, h.issue, h.hostAfter, h.queueAfter = t.Dur, issue, hostAfter, 0
	h.share, h.kind, h.group, h.stream, h.flags = t.GEMMShare, t.Kind, t.Group, t.Stream, flags
	h.walk = walkKey(t.Kind, t.Group, t.Stream)
}

// grow doubles the capacity of the program's task and dependency slices
// (at least 256 tasks): append grows a large slice by a quarter, so a
// sweep worker's arena warming up to its largest point's program would
// copy the tasks a dozen times over.
//
// An arena's program grows in the arena's pools (pool.grow): in place
// while their tails have room, else into new arrays the pools keep.
func (p *Program) grow() {
	n := max(len(p.Tasks), 256)
	if a := p.arena; a != nil {
		// Each kind grows by what n more tasks need (hot and depOff hold
		// one entry per task while building, depOff one more at the end).
		p.Tasks = a.tasks.grow(p.Tasks, n)
		p.hot = a.hot.grow(p.hot, len(p.Tasks)+n-len(p.hot))
		p.depOff = a.depOff.grow(p.depOff, len(p.Tasks)+n+1-len(p.depOff))
		if cap(p.deps)-len(p.deps) < 2*n {
			p.deps = a.deps.grow(p.deps, max(len(p.deps), 2*n))
		}
		// The task room is the least of the three (Arena.program).
		c := min(cap(p.Tasks), cap(p.depOff)-1, cap(p.hot))
		p.Tasks = p.Tasks[:len(p.Tasks):c]
		return
	}
	p.Tasks = grown(p.Tasks, n)
	p.hot = grown(p.hot, cap(p.Tasks)-len(p.hot))
	p.depOff = grown(p.depOff, n+1)
	if cap(p.deps)-len(p.deps) < 2*n { // a task has about two dependencies
		p.deps = grown(p.deps, max(len(p.deps), 2*n))
	}
}

// grown returns s with room for n more elements: s itself when it has
// it, else a new array of exactly len(s)+n holding s's elements. Unlike
// slices.Grow it leaves the spare capacity as make hands it over: the
// runtime's growslice clears a pointer-free array's tail, so every page
// of a doubled array was written (a first-touch page fault each, ≈ 4 µs
// on this project's machine: the sweep's ≈ 34,000 faults are nearly all
// of its 0.11–0.17 s of kernel time; docs/design.md, "Speed") whether or
// not the build then used it, where make takes a large array from fresh
// memory without writing it.
func grown[T any](s []T, n int) []T {
	if cap(s)-len(s) >= n {
		return s
	}
	t := make([]T, len(s), len(s)+n)
	copy(t, s)
	return t
}

// compute adds a compute task; it waits for deps, the stream, any blocking
// send, overlapped TP and EP collectives and, for the step's first compute,
// the previous step's barrier.
func (b *builder) compute(kind Kind, name string, layer, micro, chunk int, c blockCost, deps ...int32) int32 {
	all := append(b.depBuf[:0], deps...)
	all = append(all, b.pendingBlock, b.tpOlder, b.epOlder, b.reload)
	if len(b.pairWait) > 0 {
		all = append(all, b.pairWait...)
		b.pairWait = b.pairWait[:0]
	}
	b.pendingBlock, b.reload = -1, -1
	if b.firstComp {
		all = append(all, b.barrier...)
		b.firstComp = false
	}
	b.depBuf = all
	b.issue = b.issueTime(kind, c.kernels)
	idx := b.add(&Task{Kind: kind, Stream: StreamCompute, Name: b.names.of(name), Layer: int32(layer), Micro: int32(micro),
		Chunk: int16(chunk), Dur: c.dur, GEMMShare: c.gemmShare(), aux: math.Float64bits(c.flops), Bytes: c.bytes}, all...)
	if c.band > 0 && c.dur > 0 {
		b.prog.bands = append(b.prog.bands, taskBand{task: idx, share: uint16(min(int64(c.band)*65535/int64(c.dur), 65535)), ctas: c.bandCTAs})
	}
	return idx
}

// gemmShare is c's GEMM time as a share of its duration, in 1/65535ths
// (Task.GEMMShare).
func (c blockCost) gemmShare() uint16 {
	if c.dur <= 0 || c.gemm <= 0 {
		return 0
	}
	return uint16(min(int64(c.gemm)*65535/int64(c.dur), 65535))
}

// issueTime is the host time to issue kernels GPU kernels of a task of
// kind (StepConfig.Host): forward-type and backward-type passes cost
// differently per kernel.
func (b *builder) issueTime(kind Kind, kernels float64) engine.Time {
	h := &b.cfg.Host
	if !h.On {
		return 0
	}
	per := h.KernelFwd
	if kind == KindBackward || kind == KindWGrad {
		per = h.KernelBwd
	}
	return engine.Time(kernels*float64(per) + 0.5)
}

var groupStream = [NumGroupKinds]Stream{StreamTP, StreamCP, StreamEP, StreamDP, StreamPPSend, StreamDP, StreamTP}

// comm adds a collective on the group kind's stream.
func (b *builder) comm(k GroupKind, op collectives.Op, bytes float64, name string, layer, micro, chunk int, deps ...int32) int32 {
	d := b.cache.commTime(k, b.stage, op, bytes)
	return b.add(&Task{Kind: kindOfOp(op), Stream: groupStream[k], Group: k, Op: op, Name: b.names.of(name),
		Layer: int32(layer), Micro: int32(micro), Chunk: int16(chunk), Dur: d, Bytes: bytes}, deps...)
}

// tpComm adds a TP collective after `after` and returns the task the next
// compute must depend on (the collective itself unless TP comm is overlapped).
func (b *builder) tpComm(op collectives.Op, name string, layer, micro, chunk int, after int32) int32 {
	bytes := b.tpBytes(op, layer >= 0)
	seqCopy := b.cfg.TPImplDTensor && b.cfg.Shape.SP && !b.cfg.Overlap.TPComm &&
		(op == collectives.AllGather || op == collectives.ReduceScatter)
	if seqCopy && op == collectives.ReduceScatter {
		after = b.tpSeqCopy(name, layer, micro, chunk, bytes, after)
	}
	t := b.comm(GroupTP, op, bytes, name, layer, micro, chunk, after)
	if seqCopy && op == collectives.AllGather {
		return b.tpSeqCopy(name, layer, micro, chunk, bytes, t)
	}
	if !b.cfg.Overlap.TPComm {
		return t
	}
	b.tpOlder, b.tpRecent = b.tpRecent, t
	return after
}

// epComm adds an expert-parallel all-to-all after `after` and returns the
// task the next compute must depend on. Without Overlap.EP that is the
// all-to-all itself: the experts wait for the dispatch, the combine for
// the experts' output. With Overlap.EP — Megatron-Core's combined 1F1B
// schedule (--overlap-moe-expert-parallel-comm: the dispatch and combine
// all-to-alls of one micro-batch run under the attention/MLP compute of an
// adjacent micro-batch; Megatron-Core developer guide, "Combined 1F1B:
// Expert-Parallel All-to-All Overlap") and DeepEP-style overlap — it is
// modelled like overlapped TP communication: the compute stream waits only
// for the all-to-all before the most recent one, so each all-to-all hides
// behind the compute that follows it and is exposed only where it is longer
// than that compute (the EP stream stays serial).
func (b *builder) epComm(name string, layer, micro, chunk int, after int32) int32 {
	t := b.comm(GroupEP, collectives.AllToAll, b.a2aBytes(), name, layer, micro, chunk, after)
	if !b.cfg.Overlap.EP {
		return t
	}
	b.epOlder, b.epRecent = b.epRecent, t
	return after
}

// tpSeqCopy adds the copy DTensor makes around a sequence-dimension
// collective on batch-first activations (StepConfig.TPImplDTensor): one
// read and one write of the full tensor, on the compute stream, in the pass
// the collective's name says (recompute, backward or forward).
func (b *builder) tpSeqCopy(name string, layer, micro, chunk int, bytes float64, after int32) int32 {
	kind := KindForward
	switch {
	case strings.Contains(name, "recompute"):
		kind = KindRecompute
	case strings.Contains(name, "bwd"):
		kind = KindBackward
	}
	return b.memTask(kind, name+"_cat", layer, micro, chunk, bytes, bytes, after)
}

// memTask adds one memory-bound kernel (read and written bytes) on the
// compute stream: the copies and reductions the TP implementations add
// around their collectives.
func (b *builder) memTask(kind Kind, name string, layer, micro, chunk int, read, written float64, deps ...int32) int32 {
	c := b.cache.price([]workload.Op{{Name: name, Class: workload.ClassMemory,
		BytesRead: read, BytesWritten: written, Batch: 1}})
	return b.compute(kind, name, layer, micro, chunk, c, deps...)
}

// tpReduce adds the collective that combines the TP ranks' partial sums
// after a row-parallel GEMM (Megatron's "g"): an all-reduce, or with
// sequence parallelism a reduce-scatter.
func (b *builder) tpReduce(name string, layer, micro, chunk int, after int32) int32 {
	op := collectives.AllReduce
	if b.cfg.Shape.SP {
		op = collectives.ReduceScatter
	}
	return b.tpComm(op, name, layer, micro, chunk, after)
}

// actBytes is one micro-batch's layer-boundary activation: b·s/cp·h values
// at the storage width (bf16 in FP8/FP4 training: a layer's output is the
// bf16 residual stream; the recipes quantise only GEMM inputs).
func (b *builder) actBytes() float64 {
	s := &b.cfg.Shape
	return float64(s.MicroBatch) * float64(s.Seq) / float64(max(s.CP, 1)) * float64(b.cfg.Model.Hidden) * s.Dtype.StorageBytes()
}

// logitsBytes is one micro-batch's logits over the padded vocabulary at
// the activation storage width (bf16 in FP8/FP4 training, as the LM head
// writes them), the tensor StepConfig.TPLogitsReplicated gathers.
func (b *builder) logitsBytes() float64 {
	s := b.cfg.Shape
	tp := max(b.cfg.Layout.TP, 1)
	v := (b.cfg.Model.Vocab + tp - 1) / tp * tp
	return float64(s.MicroBatch) * float64(s.Seq) / float64(max(s.CP, 1)) * float64(v) * s.Dtype.StorageBytes()
}

// tpBytes is the tensor a TP collective of kind op moves (the nccl-tests
// size convention of actBytes) at the width the frameworks send it.
// Reductions (the reduce-scatter or all-reduce of a row-parallel GEMM's
// output, and of the input gradient in the backward) always move the
// 16-bit activation: GEMMs write bf16 outputs even in FP8 training. An
// all-gather inside a transformer layer (inLayer) moves the FP8 copy when
// the recipe quantises before the gather: torchao's Float8ColwiseParallel /
// PrepareFloat8ModuleInput cast the block input before redistributing it,
// and Float8RowwiseParallel's output hook (_NoopFwToFloat8BwDynamic) casts
// the output gradient before the backward all-gather; the reduce-scatter
// and the input-gradient reduction stay bf16 (pytorch/ao
// torchao/float8/float8_tensor_parallel.py). Transformer Engine also
// gathers quantised inputs and output gradients, so every recipe but
// rowwise keeps 1-byte gathers. torchtitan runs the rowwise recipe with
// plain tensor parallelism ("float8 all-gather with TP is only supported
// for tensorwise float8 scaling recipes", parallelize_llama.py at 820504e),
// so its gathers are bf16. The output layer's input gather and the
// embedding's reduction are bf16 (plain ColwiseParallel/RowwiseParallel).
//
// It returns one of two sizes build worked out for the stage (setTPBytes):
// the same product, evaluated at every call, was a float division and
// four conversions ahead of the hash that prices it (commTime), ≈ 0.3% of
// the 70B sweep's CPU samples for ≈ 10 instructions a call.
func (b *builder) tpBytes(op collectives.Op, inLayer bool) float64 {
	if op == collectives.AllGather && inLayer {
		return b.tpGather
	}
	return b.tpOther
}

// setTPBytes sets the two sizes tpBytes answers for b.cfg: an all-gather
// inside a layer, and every other TP collective.
func (b *builder) setTPBytes() {
	b.tpGather = tpBytesOf(b.cfg, collectives.AllGather, true)
	b.tpOther = tpBytesOf(b.cfg, collectives.AllReduce, true)
}

// tpBytesOf is tpBytes worked out for cfg (every op but AllGather, and
// AllGather outside a layer, are one case).
func tpBytesOf(cfg *StepConfig, op collectives.Op, inLayer bool) float64 {
	s := &cfg.Shape
	w := s.Dtype.Bytes()
	if w < 2 && (op != collectives.AllGather || !inLayer ||
		(s.Dtype == workload.FP8 && s.FP8Recipe == workload.FP8Rowwise)) {
		w = 2 // 8- and 4-bit training keeps activations and gradients in bf16
	}
	return float64(s.MicroBatch) * float64(s.Seq) / float64(max(s.CP, 1)) * float64(cfg.Model.Hidden) * w
}

// p2pBytes is what a pipeline send carries: one micro-batch's activations,
// split over the TP ranks. With sequence parallelism each rank holds 1/tp
// of the sequence; without it every rank holds the whole activation and
// sends only its 1/tp slice, which the receiving TP group all-gathers over
// the scale-up fabric (Megatron-LM's scatter/gather of pipeline tensors,
// Narayanan et al. SC21 §4.1, on by default since 2021): each stage
// boundary crosses the scale-out network once, not tp times.
func (b *builder) p2pBytes() float64 {
	return b.actBytes() / float64(max(b.cfg.Layout.TP, 1))
}

// p2pGather returns the task after which a received activation (or
// gradient) is whole on this rank: the receive itself, or, with TP and no
// sequence parallelism, the all-gather of the tp slices that follows it.
func (b *builder) p2pGather(rcv int32, name string, micro, chunk int) int32 {
	if b.cfg.Layout.TP <= 1 || b.cfg.Shape.SP {
		return rcv
	}
	return b.comm(GroupTP, collectives.AllGather, b.actBytes(), name, -1, micro, chunk, rcv)
}

// kvBytes is the K and V a context-parallel all-gather assembles: the full
// sequence's keys and values of this rank's heads.
func (b *builder) kvBytes() float64 {
	m, s := b.cfg.Model, b.cfg.Shape
	kvh := max(m.KVHeads/max(s.TP, 1), 1)
	if s.RepeatKV && m.KVHeads < m.Heads {
		kvh = max(m.Heads/max(s.TP, 1), 1) // repeated to the query heads before the ring
	}
	hd := m.HeadDim
	if m.Attention == "mla" && m.MLA != nil {
		// MLA caches the compressed latent plus the shared rope key.
		return float64(s.MicroBatch) * float64(s.Seq) * float64(m.MLA.KVLoRARank+m.MLA.RopeHeadDim) * s.Dtype.StorageBytes()
	}
	// Attention runs in bf16 even in FP8 training (PyTorch's ring attention
	// and Transformer Engine's CP exchange the bf16 K and V).
	return 2 * float64(s.MicroBatch) * float64(s.Seq) * float64(kvh*hd) * s.Dtype.StorageBytes()
}

// a2aBytes is what one rank's EP dispatch (or combine) sends. NCCL
// all-to-all (EPNCCL): its tokens × top-k × capacity factor × hidden at the
// compute dtype's width (the padded all-to-all of Megatron's alltoall
// dispatcher; the width of FP8 recipes there is left as it was,
// docs/validation.md round 4). DeepEP and HybridEP: tokens ×
// ExpectedDistinct(experts, ep, top-k) × hidden × 2 — one bf16 row per
// destination rank, dropless (epdispatch.go gives the sources). Both scale
// by the most-loaded rank's routing imbalance (workload.MoE.Imbalance): an
// all-to-all ends when its largest receiver has its rows.
//
// It depends on the configuration only, so a stage computes it once (the
// product over top-k in ExpectedDistinct was ≈ 4% of a DeepSeek-V3 layout
// sweep's CPU, recomputed for every all-to-all; issue 18).
func (b *builder) a2aBytes() float64 {
	if !b.a2aKnown {
		b.a2a, b.a2aKnown = b.a2aBytesOf(), true
	}
	return b.a2a
}

// a2aBytesOf computes a2aBytes.
func (b *builder) a2aBytesOf() float64 {
	m, s := b.cfg.Model, b.cfg.Shape
	tokens := float64(s.MicroBatch) * float64(s.Seq) / float64(max(s.CP, 1))
	if s.SP {
		tokens /= float64(max(s.TP, 1))
	}
	if b.cfg.EPBackend != EPNCCL {
		return tokens * ExpectedDistinct(m.MoE.Experts, b.cfg.Layout.EP, m.MoE.TopK) * max(m.MoE.Imbalance, 1) * float64(m.Hidden) * 2
	}
	return tokens * float64(m.MoE.TopK) * m.MoE.RankLoad() * float64(m.Hidden) * s.Dtype.Bytes()
}

// recv adds the receive of micro-batch mb's activation (or, with grad, its
// output gradient) for chunk ch from the chunk that feeds it, and returns
// the task after which it is here. A hand-off between two chunks of this
// stage is no transfer: it returns the task that produced the data.
func (b *builder) recv(grad bool, micro int, ch Chunk) int32 {
	st, name := StreamPPRecvAct, "recv_act"
	from, _ := b.place.Prev(ch.Stage, ch.Index)
	if grad {
		st, name = StreamPPRecvGrd, "recv_grad"
		from, _ = b.place.Next(ch.Stage, ch.Index)
	}
	if from.Stage == b.stage {
		t, ok := b.local[p2pKey{grad: grad, step: b.step, micro: int32(micro), toChunk: int32(ch.Index)}]
		if !ok && b.err == nil {
			b.err = fmt.Errorf("pipeline: stage %d chunk %d uses micro-batch %d's %s before its own chunk %d produced it (schedule %s)",
				b.stage, ch.Index, micro, name, from.Chunk, b.cfg.Schedule.Name())
		}
		if !ok {
			return -1
		}
		return t
	}
	return b.add(&Task{Kind: KindRecv, Stream: st, Group: GroupPP, Op: collectives.Send, Name: b.names.of(name), Layer: -1,
		Micro: int32(micro), Chunk: int16(ch.Index), Bytes: b.p2pBytes(), aux: p2pAux(int32(from.Stage), -1)})
}

// send adds the send of micro-batch mb's output (or, with grad, its input
// gradient) of chunk ch after task after to the chunk that takes it.
func (b *builder) send(grad bool, micro int, ch Chunk, after int32) {
	to, _ := b.place.Next(ch.Stage, ch.Index)
	name := sendActName
	if grad {
		to, _ = b.place.Prev(ch.Stage, ch.Index)
		name = sendGradName
	}
	if to.Stage == b.stage {
		if b.local == nil {
			b.local = map[p2pKey]int32{}
		}
		b.local[p2pKey{grad: grad, step: b.step, micro: int32(micro), toChunk: int32(to.Chunk)}] = after
		return
	}
	t := b.add(&Task{Kind: KindSend, Stream: StreamPPSend, Group: GroupPP, Op: collectives.Send, Name: b.names.of(name), Layer: -1,
		Micro: int32(micro), Chunk: int16(ch.Index), Bytes: b.p2pBytes(), aux: p2pAux(int32(to.Stage), int32(to.Chunk)),
		Dur: b.sendTime(b.stage, to.Stage, b.p2pBytes())}, after)
	if !b.cfg.Overlap.P2P {
		b.pendingBlock = t
	}
}

func (b *builder) moe(layer int) bool {
	return b.cfg.Model.MoE != nil && b.cfg.Model.IsMoELayer(layer)
}

// mlpTP reports whether layer l's MLP part is wrapped in TP collectives
// (the sequence all-gather before it with SP, the reduction after it):
// always, except for an MoE layer of a folded layout (Layout.Folded)
// without shared experts. With folding the routed experts are split by
// ETP, not TP: the router and the EP dispatch take the rank's own
// sequence-parallel tokens, and the TP ranks are part of the EP group
// (Megatron-Core's MoE layer: its token dispatchers use the expert TP
// group, pg_collection.expt_tp, for the gather after the dispatch and the
// reduce-scatter before the combine; megatron/core/transformer/moe/
// token_dispatcher.py at NVIDIA/Megatron-LM d98e8a6). Shared experts are
// dense MLPs on the attention TP group and keep its collectives.
func (b *builder) mlpTP(layer int) bool {
	return !b.moe(layer) || !b.cfg.Layout.Folded() || b.cfg.Model.MoE.SharedExperts > 0
}

// etpComm adds, on a folded layout with expert TP > 1, the expert-TP
// collective around the experts (op: the all-gather of the dispatched
// tokens, or the reduce-scatter of the experts' partial outputs) and
// returns the task the next compute waits for; without one it returns
// after.
func (b *builder) etpComm(op collectives.Op, name string, layer, micro, chunk int, after int32) int32 {
	l := b.cfg.Layout
	if !l.Folded() || l.GroupSize(GroupETP) < 2 {
		return after
	}
	return b.comm(GroupETP, op, b.etpBytes(), name, layer, micro, chunk, after)
}

// etpBytes is the tensor an expert-TP all-gather assembles (or a
// reduce-scatter splits), in the nccl-tests size convention of tpBytes:
// the etp ranks' dispatched tokens — each rank's routed tokens × top-k ×
// capacity factor after the balanced all-to-all — × hidden at the
// activation storage width.
func (b *builder) etpBytes() float64 {
	m, s := b.cfg.Model, b.cfg.Shape
	tokens := float64(s.MicroBatch) * float64(s.Seq) / float64(max(s.CP, 1))
	if s.SP {
		tokens /= float64(max(s.TP, 1))
	}
	etp := float64(b.cfg.Layout.GroupSize(GroupETP))
	return etp * tokens * float64(m.MoE.TopK) * m.MoE.RankLoad() * float64(m.Hidden) * s.Dtype.StorageBytes()
}

// unpadSync adds the compute-stream stall of an unpadded attention path's
// host synchronisations (StepConfig.UnpadHostSync) to layer l's forward or
// recomputed forward, after task in, and returns the task that follows
// (in itself when there is none).
func (b *builder) unpadSync(l, mb, c int, in int32) int32 {
	if b.cfg.UnpadHostSync <= 0 {
		return in
	}
	return b.hostSync("unpad_host_sync", b.cfg.UnpadHostSync, l, mb, c, in)
}

// layerSync adds Megatron-DeepSpeed's per-layer host wait
// (StepConfig.LayerHostSync) after task in, between a layer's attention
// and its MLP, and returns the task that follows (in itself when there is
// none). ParallelTransformerLayer.forward makes two scalar tensors with
// torch.tensor(0.0, device=...) there; the second finds the stream
// already drained, so one wait stands for both. The stall is 0: the host
// waits for in's end, and the GPU idles while the host issues what
// follows.
func (b *builder) layerSync(l, mb, c int, in int32) int32 {
	if !b.cfg.LayerHostSync || !b.prog.Hosted {
		return in
	}
	return b.hostSync("layer_host_sync", 0, l, mb, c, in)
}

// DeepSpeed's pipeline engine (deepspeed/runtime/pipe/engine.py @ v0.9.5,
// the version of Megatron-DeepSpeed's rebase README) under
// Megatron-DeepSpeed's GPTModelPipe (@ 99d1eead) reads back from the GPU,
// every micro-batch, at these points; each read blocks the host until the
// stream has drained (PyTorch copies between pageable host memory and the
// GPU with cudaMemcpyAsync then cudaStreamSynchronize unless non_blocking),
// so the GPU idles until the host has issued the next kernels.
//
//   - LoadMicroBatch, on the first and the last stage (schedule.py
//     TrainSchedule): pretrain_gpt.py get_batch_pipe →
//     megatron/core/tensor_parallel/data.py broadcast_data: the sizes
//     built as get_accelerator().LongTensor(list) (a copy to the GPU),
//     sizes_cuda.cpu() after their broadcast, and the flattened tokens
//     .to(device) on the TP source rank: dsLoadSyncs.
//   - With TP (is_pipe_partitioned = is_grad_partitioned =
//     is_model_parallel), what crosses a stage boundary is a
//     PartitionedTensor (runtime/utils.py): to_meta() builds its metadata
//     with torch.LongTensor(meta).to(device) (one copy to the GPU, before
//     each SendActivation and SendGrad), from_meta() reads it back with
//     meta.tolist() (one read in ForwardPass on a receiving stage, two in
//     BackwardPass on a sending stage: the saved output's and the received
//     gradient's metadata). BackwardPass also all-gathers the saved output
//     again over the TP group (part_output.full()), the stage having kept
//     only its 1/tp slice.
const dsLoadSyncs = 3

// Passes of Megatron-DeepSpeed's optimizer-state statistics
// (StepConfig.LogOptimizerStates), counted from training_log's 16
// reductions over tensors of the flat partition's size:
//
//	exp_avg_sq read by norm, norm p=1, max, min and three sqrt()   7
//	the three sqrt() results read by norm, norm p=1, abs_, max     4
//	exp_avg read by norm, norm p=1, max, min                       4
//	master weights read by norm, norm p=1, max, min                4
//	written: three sqrt() results and abs_ in place                4
const (
	optStatsReads      = 15
	optStatsParamReads = 4
	optStatsWrites     = 4
)

// pipeSync adds n of the pipeline engine's host synchronisations
// (StepConfig.PipeEngineSync each) after task after and returns the task
// that follows (after itself when there are none).
func (b *builder) pipeSync(name string, n int, mb, c int, after int32) int32 {
	if b.cfg.PipeEngineSync <= 0 || n <= 0 {
		return after
	}
	if after < 0 { // nothing received: the read drains what the stream ran before
		after = b.last[StreamCompute]
	}
	return b.hostSync(name, engine.Time(n)*b.cfg.PipeEngineSync, -1, mb, c, after)
}

// lossReadback adds the training loop's read of the micro-batch's loss
// (StepConfig.LossReadback) before the backward of the model chunk that
// computes it, and returns the task that follows (in itself when the loop
// reads nothing). The read (.item()) drains the compute stream: the wait
// depends on the last compute task issued, which on the loss stage of a
// 1F1B or unpipelined step is that micro-batch's loss.
func (b *builder) lossReadback(mb, c int, in int32) int32 {
	if b.cfg.LossReadback <= 0 || b.cfg.LossReadbackAfter {
		return in
	}
	return b.hostSync("loss_readback", b.cfg.LossReadback, -1, mb, c, b.last[StreamCompute])
}

// lossReadbackAfter adds the read of StepConfig.LossReadbackAfter: once
// the backward of the model chunk that computes the loss has been issued
// (and its input gradient sent), the host reads the loss and so waits
// for the compute stream to run everything issued before; the next
// micro-batch (or the optimizer step) is issued after the read.
func (b *builder) lossReadbackAfter(mb, c int) {
	if b.cfg.LossReadback <= 0 || !b.cfg.LossReadbackAfter {
		return
	}
	b.hostSync("loss_readback", b.cfg.LossReadback, -1, mb, c, b.last[StreamCompute])
}

// pipeTP reports whether the pipeline engine partitions stage-boundary
// tensors over TP (DeepSpeed's is_pipe_partitioned).
func (b *builder) pipeTP() bool { return b.cfg.PipeEngineSync > 0 && b.cfg.Layout.TP > 1 }

// hostSync adds a compute-stream stall of dur (KindHostSync) after task
// after and returns it.
// With a host thread (StepConfig.Host) the host, having issued up to the
// sync, waits for task after (the kernels whose results it reads) before
// it issues anything more: the GPU then idles for the longer of the stall
// and the re-issue of what follows.
func (b *builder) hostSync(name string, dur engine.Time, l, mb, c int, after int32) int32 {
	t := b.add(&Task{Kind: KindHostSync, Stream: StreamCompute, Name: b.names.of(name), Layer: int32(l), Micro: int32(mb),
		Chunk: int16(c), Dur: dur}, after)
	b.hostBlock = after
	return t
}

// cpAttention emits a context-parallel attention forward (pass passFwd)
// or its recomputation (passRec, full recomputation: the checkpointed
// layer runs the ring again, K/V exchange included) after task in and
// returns the task that ends it. The all-gather implementations overlap
// the K/V all-gather with the local block's attention (1/cp of the work);
// the rest waits for the remote K/V. Transformer Engine's p2p ring passes
// one rank's K/V per step while a step computes (ringSteps).
func (b *builder) cpAttention(pass, l, mb, c int, in, gather int32) int32 {
	kind, sfx := KindForward, "_fwd"
	gname := "cp_kv_gather"
	if pass == passRec {
		kind, sfx, gname = KindRecompute, "_recompute", "cp_kv_recompute_gather"
	}
	cp := float64(b.cfg.Layout.CP)
	pre := b.compute(kind, "attn_pre"+sfx, l, mb, c, b.cache.block(l, pass, workload.BlockAttnPre), in, gather)
	core := b.cache.block(l, pass, workload.BlockAttnCore)
	post := b.cache.block(l, pass, workload.BlockAttnPost)
	if b.cfg.Shape.CPImpl == workload.CPP2P {
		rname := "cp_kv_ring"
		if pass == passRec {
			rname = "cp_kv_recompute_ring"
		}
		return b.ringSteps(kind, "attn_core"+sfx, rname, l, mb, c, core, post, false, b.kvBytes()/cp, pre)
	}
	kv := b.comm(GroupCP, collectives.AllGather, b.kvBytes(), gname, l, mb, c, pre)
	b.compute(kind, "attn_core_local"+sfx, l, mb, c, scaleCost(core, 1/cp), pre)
	return b.compute(kind, "attn_core_post"+sfx, l, mb, c, addCost(scaleCost(core, 1-1/cp), post), kv)
}

// ringSteps emits cp ring steps of an attention core (cost core; extra
// runs with the first step when extraFirst is set, after the last
// otherwise) after task after, each step passing step bytes one rank
// along the ring while it computes, and returns the last step's task. The first step
// uses local data; step i (i ≥ 1) needs the i-th transfer, so with
// per-step compute c and transfer r the ring ends after
// max(c, r)·(cp − 1) + c when both are uniform. It is played as the first
// step, the middle cp − 2 steps, and the last step, which also waits for
// the cp − 1 transfers (one all-gather's worth of ring traffic, cp·step
// bytes in the all-gather convention, started with the first step).
func (b *builder) ringSteps(kind Kind, name, ring string, l, mb, c int, core, extra blockCost, extraFirst bool, step float64, after int32) int32 {
	cp := float64(b.cfg.Layout.CP)
	head, tail := scaleCost(core, 1/cp), scaleCost(core, 1/cp)
	if extraFirst {
		head = addCost(extra, head)
	} else {
		tail = addCost(tail, extra)
	}
	r := b.comm(GroupCP, collectives.AllGather, cp*step, ring, l, mb, c, after)
	x := b.compute(kind, name+"_first", l, mb, c, head, after)
	if cp > 2 {
		x = b.compute(kind, name+"_middle", l, mb, c, scaleCost(core, (cp-2)/cp), x)
	}
	return b.compute(kind, name+"_last", l, mb, c, tail, x, r)
}

// smSized marks TP collective t as one Transformer Engine's userbuffers
// overlap pairs with a GEMM launched for the SMs the collective leaves
// (Task.SMSized): Megatron's TP (not StepConfig.TPImplDTensor, whose
// AsyncTP pairs use the copy engines or NCCL without an SM target).
func (b *builder) smSized(t int32) {
	if !b.cfg.TPImplDTensor {
		b.prog.Tasks[t].SMSized = true
		if b.prog.keepHot {
			b.prog.hot[t].flags |= hotSMSized
		}
	}
}

// tpPaired reports whether layer l's TP collectives are paired with their
// GEMMs (tpPairedLayer): tensor parallelism with Overlap.TPComm, a dense
// layer and no context parallelism. Other layers with Overlap.TPComm use
// tpComm's rule.
func (b *builder) tpPaired(l int) bool {
	cfg := b.cfg
	return cfg.Layout.TP > 1 && cfg.Overlap.TPComm && cfg.Layout.CP <= 1 && !b.moe(l)
}

// tpPairedLayer emits a dense layer's forward (pass passFwd) or backward
// (passBwd, after its recomputation) with Overlap.TPComm, following how
// the frameworks overlap TP communication: each collective is pipelined
// with the GEMM it is fused with — Megatron-Core's TP overlap with
// Transformer Engine userbuffers (all-gather chunks feed the GEMM that
// consumes them; the reduce-scatter of a GEMM's output runs as the GEMM
// produces it; in the backward the reduce-scatter of the input gradient
// runs under the weight-gradient GEMM), and PyTorch's AsyncTP
// (fused_all_gather_matmul, fused_matmul_reduce_scatter). Each of the
// attention and MLP parts is split (blockCache.split) into a head (up to
// its first GEMM), a middle and a tail (its last GEMM on): the part's
// all-gather (sequence parallelism) runs alongside the head, its
// reduce-scatter (all-reduce without SP) alongside the tail, and the middle
// waits for the all-gather. A collective is exposed only by what it takes
// beyond its GEMM. Backward: the weight gradients are reduced after the
// attention tail. With StepConfig.TPImplDTensor and sequence parallelism
// the pairs are PyTorch's symmetric-memory ops (asyncTPGather,
// asyncTPReduce). It returns the task the next layer waits for.
func (b *builder) tpPairedLayer(pass, l, mb, c int, in, gather int32, reduce ...bool) int32 {
	sp := b.cfg.Shape.SP
	asyncTP := sp && b.cfg.TPImplDTensor
	red := collectives.AllReduce
	if sp {
		red = collectives.ReduceScatter
	}
	kind := KindForward
	parts := &pairedForward
	if pass == passBwd {
		kind, parts = KindBackward, &pairedBackward
	}
	x, tail := in, int32(-1)
	for i := range parts {
		p := &parts[i]
		head, mid, end := b.cache.split(l, pass, p.blocks...)
		ag := int32(-1)
		if sp {
			ag = b.comm(GroupTP, collectives.AllGather, b.tpBytes(collectives.AllGather, true), p.gather, l, mb, c, x)
			b.smSized(ag)
		}
		var h int32 = -1
		if head.dur > 0 {
			g := int32(-1)
			if i == 0 {
				g = gather
			}
			h = b.compute(kind, p.head, l, mb, c, head, x, g)
		}
		if asyncTP {
			b.asyncTPGather(ag, kind, l, mb, c, x, h)
		}
		m := b.compute(kind, p.mid, l, mb, c, mid, x, h, ag, gather)
		tail = m
		if end.dur > 0 {
			tail = b.compute(kind, p.tail, l, mb, c, end, m)
		}
		rname := p.reduce
		if pass == passBwd && b.cfg.TPImplDTensor {
			// PyTorch's micro-pipeline TP cannot fuse the input-gradient
			// reduce-scatter (a sum of the separate projections' dgrads):
			// it waits for the whole block (StepConfig.TPImplDTensor).
			x = b.comm(GroupTP, red, b.tpBytes(red, true), rname, l, mb, c, tail)
			continue
		}
		x = b.comm(GroupTP, red, b.tpBytes(red, true), rname, l, mb, c, m)
		b.smSized(x)
		if asyncTP {
			x = b.asyncTPReduce(x, kind, l, mb, c)
		}
	}
	if pass == passBwd {
		dense, expert := b.layerParams(l)
		b.gradReady(dense, expert, tail, len(reduce) > 0 && reduce[0])
	}
	b.releaseLayer(tail)
	return x
}

// pairedPart is one part (attention or MLP) of a TP-paired layer pass: its
// blocks in pass order and its tasks' names, spelled out once so that
// emitting a layer builds no strings.
type pairedPart struct {
	blocks                          []workload.Block
	gather, head, mid, tail, reduce string
}

func newPairedPart(name string, bwd bool, blocks ...workload.Block) pairedPart {
	dir, rs := "fwd", ""
	if bwd {
		dir, rs = "bwd", "_bwd"
	}
	return pairedPart{blocks: blocks, gather: "tp_" + name + rs + "_gather", head: name + "_head_" + dir,
		mid: name + "_" + dir, tail: name + "_tail_" + dir, reduce: "tp_" + name + rs}
}

// The parts of a paired layer's forward and backward, in emission order.
var (
	pairedForward = [2]pairedPart{
		newPairedPart("attn", false, workload.BlockAttnPre, workload.BlockAttnCore, workload.BlockAttnPost),
		newPairedPart("mlp", false, workload.BlockMLP),
	}
	pairedBackward = [2]pairedPart{
		newPairedPart("mlp", true, workload.BlockMLP),
		newPairedPart("attn", true, workload.BlockAttnPost, workload.BlockAttnCore, workload.BlockAttnPre),
	}
)

// asyncTPGather turns the all-gather ag of a paired layer into PyTorch's
// fused_all_gather_matmul (torch/distributed/_symmetric_memory/__init__.py,
// _pipelined_multi_all_gather_and_consume, 2025 versions): the peers'
// shards arrive by p2p copy_ between contiguous tensors, which ATen runs as
// cudaMemcpyAsync (aten/src/ATen/native/cuda/Copy.cu,
// copy_device_to_device, memcpy_eligible) on the copy engines, so the
// gather holds no SMs (Task.CopyEngine). Before the first shard is
// consumed, each rank copies its own shard into its symmetric buffer on
// the compute stream ("mv"; the source gives up overlapping it with the
// first GEMM): a read and a write of 1/tp of the gathered tensor, added
// here after the head (deps), which the first GEMM waits for.
func (b *builder) asyncTPGather(ag int32, kind Kind, l, mb, c int, deps ...int32) {
	t := &b.prog.Tasks[ag]
	t.CopyEngine = true
	if b.prog.keepHot {
		b.prog.hot[ag].flags |= hotCopyEngine
	}
	shard := t.Bytes / b.dense()
	b.memTask(kind, t.Name.String()+"_shard_copy", l, mb, c, shard, shard, deps...)
}

// asyncTPReduce turns the reduce-scatter rs of a paired layer into
// PyTorch's fused_matmul_reduce_scatter (the same file,
// _fused_matmul_reduce_scatter_impl and _pipelined_produce_and_all2all):
// each GEMM chunk is written to a symmetric buffer and pulled by its
// destination rank with copy_ (copy engine, no SMs: Task.CopyEngine); the
// rank then sums the tp partial results it received (reduce_fn, torch.sum
// over the stacked partials) on the compute stream after the last chunk.
// That reduction reads the whole stacked tensor (rs's bytes, tp partials
// of 1/tp each) and writes 1/tp of it; it is returned as the task the
// next compute waits for.
func (b *builder) asyncTPReduce(rs int32, kind Kind, l, mb, c int) int32 {
	t := &b.prog.Tasks[rs]
	if t.Op != collectives.ReduceScatter {
		return rs
	}
	t.CopyEngine = true
	if b.prog.keepHot {
		b.prog.hot[rs].flags |= hotCopyEngine
	}
	return b.memTask(kind, t.Name.String()+"_reduce", l, mb, c, t.Bytes, t.Bytes/b.dense(), rs)
}

func scaleCost(c blockCost, f float64) blockCost {
	return blockCost{dur: engine.Time(float64(c.dur)*f + 0.5), gemm: engine.Time(float64(c.gemm)*f + 0.5), flops: c.flops * f, bytes: c.bytes * f, kernels: c.kernels * f,
		band: engine.Time(float64(c.band)*f + 0.5), bandCTAs: c.bandCTAs}
}

func addCost(a, b blockCost) blockCost {
	return blockCost{dur: a.dur + b.dur, gemm: a.gemm + b.gemm, flops: a.flops + b.flops, bytes: a.bytes + b.bytes, kernels: a.kernels + b.kernels,
		band: a.band + b.band, bandCTAs: max(a.bandCTAs, b.bandCTAs)}
}

// wgradFraction is the share of a backward that computes weight gradients:
// a linear layer's backward is two GEMMs of equal FLOPs (input gradient and
// weight gradient), so half of the GEMM time; attention and elementwise work
// is all input-gradient work.
const wgradFraction = 0.5

// bwdPart returns the input-gradient part of a backward cost under splitW.
func (b *builder) bwdPart(c blockCost, splitW bool) blockCost {
	if !splitW {
		return c
	}
	return scaleCost(c, 1-wgradFraction)
}

// pytorchRingBackward emits the attention output projection's and core's
// backward under PyTorch's ring attention (workload.CPPyTorch) after task
// x and returns the task after which dK and dV are complete. The backward
// all-gathers K and V again (its own rotater), overlapped with the local
// block; after each of the cp steps the fp32 dK and dV travel one rank
// along the ring (_templated_ring_attention_backward's ALL_TO_ALL rotater)
// while the next step computes, and the last pass is waited for after the
// loop. The cp−1 overlapped passes are one all-gather's worth of ring
// traffic (cp−1 steps of the rank's fp32 dK/dV) running with the core's
// remaining steps; the last is priced as one more ring step.
func (b *builder) pytorchRingBackward(l, mb, c int, x int32, splitW bool) int32 {
	cp := float64(b.cfg.Layout.CP)
	kvg := b.comm(GroupCP, collectives.AllGather, b.kvBytes(), "cp_kv_bwd_gather", l, mb, c, x)
	core := b.cache.block(l, passBwd, workload.BlockAttnCore)
	post := b.cache.block(l, passBwd, workload.BlockAttnPost)
	local := b.compute(KindBackward, "attn_post_core_local_bwd", l, mb, c, b.bwdPart(addCost(post, scaleCost(core, 1/cp)), splitW), x)
	// one rank's dK and dV in fp32: its share of the all-gathered K and V
	step := b.kvBytes() / cp * 4 / b.cfg.Shape.Dtype.StorageBytes()
	rot := b.comm(GroupCP, collectives.AllGather, cp*step, "cp_dkv_rotate", l, mb, c, local)
	rest := b.compute(KindBackward, "attn_core_rest_bwd", l, mb, c, b.bwdPart(scaleCost(core, 1-1/cp), splitW), local, kvg)
	return b.comm(GroupCP, collectives.AllGather, cp*step/(cp-1), "cp_dkv_rotate_last", l, mb, c, rest, rot)
}

// wgradChunk emits the weight-gradient pass of a chunk split out of its
// backward (zero-bubble schedules); reduce says it completes the chunk's
// gradients for the step.
func (b *builder) wgradChunk(ch Chunk, mb int, reduce bool) {
	if ch.Head {
		w := b.compute(KindWGrad, "head_wgrad", -1, mb, ch.Index, scaleCost(b.cache.embHead(true, passBwd), wgradFraction))
		b.gradReady(b.headParams(), 0, w, reduce)
	}
	for l := ch.FirstLayer + ch.Layers - 1; l >= ch.FirstLayer; l-- {
		all := b.cache.block(l, passBwd, workload.BlockAttnPre, workload.BlockAttnCore, workload.BlockAttnPost,
			workload.BlockMLP, workload.BlockRouter, workload.BlockExperts, workload.BlockCombine)
		w := b.compute(KindWGrad, "layer_wgrad", l, mb, ch.Index, scaleCost(all, wgradFraction))
		dense, expert := b.layerParams(l)
		b.gradReady(dense, expert, w, reduce)
	}
	if ch.Embedding {
		w := b.compute(KindWGrad, "embedding_wgrad", -1, mb, ch.Index, scaleCost(b.cache.embHead(false, passBwd), wgradFraction))
		b.gradReady(b.embParams(), 0, w, reduce)
	}
}

// layerParams are the parameters of layer l held by one rank: dense weights
// split by TP, routed experts split by EP and expert TP (= TP unless the
// layout is folded).
func (b *builder) layerParams(l int) (dense, expert float64) {
	var d, e float64
	if b.cache != nil {
		d, e = b.cache.layerParams(l)
	} else {
		d, e = b.cfg.LayerParams(l)
	}
	return perGPUParams(b.cfg, d, e)
}

// perGPUParams is a layer's dense and expert parameters d, e on one GPU
// of cfg: the dense ones split over tp, the experts' over etp × ep.
func perGPUParams(cfg *StepConfig, d, e float64) (dense, expert float64) {
	return d / float64(cfg.Layout.TP), e / (float64(cfg.Layout.GroupSize(GroupETP)) * float64(cfg.Layout.EP))
}

func (b *builder) embParams() float64 { return embParams(b.cfg) }

// embParams is the embedding's parameters on one GPU of cfg.
func embParams(cfg *StepConfig) float64 {
	if cfg.TPEmbeddingReplicated {
		return float64(cfg.Model.Vocab) * float64(cfg.Model.Hidden)
	}
	return float64(cfg.Model.Vocab) * float64(cfg.Model.Hidden) / float64(cfg.Layout.TP)
}

func (b *builder) headParams() float64 { return headParams(b.cfg) }

// headParams are the output layer's parameters on the last stage: none
// when tied on a single stage, and with multi-token prediction on pp > 1
// also the copy of the untied embedding Megatron builds there for the MTP
// modules' lookups (gpt_model.py: pre_process or mtp_process).
func headParams(cfg *StepConfig) float64 {
	m := &cfg.Model
	if m.TiedEmbeddings && cfg.Layout.PP == 1 {
		return 0
	}
	vh := float64(m.Vocab) * float64(m.Hidden) / float64(cfg.Layout.TP)
	if m.MTPLayers > 0 && !m.TiedEmbeddings && cfg.Layout.PP > 1 {
		return 2 * vh
	}
	return vh
}

// gradReady records that a layer's gradients are complete after task t. For
// ZeRO 0-2 they go into the DP bucket on the last micro-batch; for FSDP every
// micro-batch reduce-scatters the layer (PyTorch FSDP without no_sync), or
// only the last one with StepConfig.Zero3GradSyncLast (FSDP2's
// set_requires_gradient_sync(False) on the others).
func (b *builder) gradReady(dense, expert float64, t int32, lastMicro bool) {
	cfg := b.cfg
	dpSize := cfg.Layout.GroupSize(GroupDP)
	if cfg.Zero == 3 {
		if cfg.Zero3GradSyncLast && !lastMicro {
			return
		}
		if dpSize > 1 && dense > 0 {
			c := b.fsdpGradCopies(dense, dpSize, t)
			b.comm(GroupDP, collectives.ReduceScatter, dense*cfg.GradDtype.Bytes(), "fsdp_grad_scatter", int(b.prog.Tasks[t].Layer), int(b.prog.Tasks[t].Micro), int(b.prog.Tasks[t].Chunk), c)
		}
		if edp := cfg.Layout.GroupSize(GroupEDP); edp > 1 && expert > 0 {
			c := b.fsdpGradCopies(expert, edp, t)
			b.comm(GroupEDP, collectives.ReduceScatter, expert*cfg.GradDtype.Bytes(), "fsdp_expert_grad_scatter", int(b.prog.Tasks[t].Layer), int(b.prog.Tasks[t].Micro), int(b.prog.Tasks[t].Chunk), c)
		}
		return
	}
	if !lastMicro {
		return
	}
	if cfg.DDPGradCopy && cfg.Zero == 0 && dpSize > 1 && dense+expert > 0 {
		tk := &b.prog.Tasks[t]
		g := (dense + expert) * cfg.GradDtype.Bytes()
		t = b.memTask(KindBackward, "ddp_grad_copy_in", int(tk.Layer), int(tk.Micro), int(tk.Chunk), g, g, t)
	}
	b.bucketDense += dense
	b.bucketExpert += expert
	if b.bucketDense+b.bucketExpert >= cfg.BucketParams {
		b.issueBucket(t)
	}
}

// issueBucket reduces the accumulated bucket right after task t when DP
// reduction overlaps the backward; otherwise it queues the bucket, and
// flushBucket reduces the queue bucket by bucket once the backward is done
// (what the frameworks do with overlap disabled).
func (b *builder) issueBucket(after int32) {
	if b.cfg.Overlap.GradReduce {
		b.reduce(after, b.bucketDense, b.bucketExpert)
	} else {
		b.queued = append(b.queued, [2]float64{b.bucketDense, b.bucketExpert})
	}
	b.bucketDense, b.bucketExpert = 0, 0
}

func (b *builder) reduce(after int32, dense, expert float64) {
	cfg := b.cfg
	if cfg.GradBucketSync > 0 && dense+expert > 0 {
		// The bucket's NaN check (StepConfig.GradBucketSync) reads its
		// norm back before the collective is issued.
		after = b.hostSync("grad_nan_check", cfg.GradBucketSync, -1, -1, -1, after)
	}
	op := collectives.AllReduce
	if cfg.Zero >= 1 {
		op = collectives.ReduceScatter
	}
	if dense > 0 && cfg.Layout.GroupSize(GroupDP) > 1 {
		b.dpTasks = append(b.dpTasks, b.comm(GroupDP, op, dense*cfg.GradDtype.Bytes(), "dp_grad_reduce", -1, -1, -1, after))
	}
	if expert > 0 && cfg.Layout.GroupSize(GroupEDP) > 1 {
		b.dpTasks = append(b.dpTasks, b.comm(GroupEDP, op, expert*cfg.GradDtype.Bytes(), "edp_grad_reduce", -1, -1, -1, after))
	}
}

func (b *builder) flushBucket() {
	if b.cfg.Zero == 3 {
		return
	}
	if b.bucketDense+b.bucketExpert > 0 {
		b.issueBucket(b.last[StreamCompute])
	}
	for _, q := range b.queued {
		b.reduce(b.last[StreamCompute], q[0], q[1])
	}
	b.queued = b.queued[:0]
	if cfg := b.cfg; cfg.DDPGradCopy && cfg.Zero == 0 && len(b.dpTasks) > 0 {
		// finalize_backward: every bucket view back into .grad, after the
		// last all-reduce (StepConfig.DDPGradCopy)
		dense, expert := b.stageParams()
		g := (dense + expert) * cfg.GradDtype.Bytes()
		deps := append([]int32{b.last[StreamCompute]}, b.dpTasks...)
		b.memTask(KindBackward, "ddp_grad_copy_out", -1, -1, -1, g, g, deps...) // the optimizer follows on the compute stream
	}
}

// hostCopies are the copies of one layer's offloaded activations of one
// micro-batch: to the host and back (-1 until issued), and their size.
type hostCopies struct {
	d2h, h2d int32
	bytes    float64
}

// offloadKey identifies a layer's activations of one micro-batch.
func offloadKey(l, mb int) int64 { return int64(l)<<32 | int64(uint32(mb)) }

// offloadedBytes is what layer l keeps in host memory per micro-batch
// (workload.Model.OffloadBytes at the layer's recompute policy).
func (b *builder) offloadedBytes(l int) float64 {
	cfg := b.cfg
	if cfg.Shape.Offload == 0 || cfg.HostD2H <= 0 || cfg.HostH2D <= 0 {
		return 0
	}
	r := cfg.Recompute
	if r == workload.RecomputeFull && l < len(b.recomputed) && !b.recomputed[l] {
		r = workload.RecomputeNone
	}
	return cfg.Model.OffloadBytes(l, cfg.Shape, r)
}

// offload copies layer l's offloaded inputs of micro-batch mb to the host
// once its forward (ending at task after) is done. The chunk's last layer
// keeps them: its backward comes first, and Megatron leaves the last
// groups on the GPU so that the backward does not wait for a reload.
func (b *builder) offload(ch Chunk, l, mb int, after int32) {
	bytes := b.offloadedBytes(l)
	if bytes <= 0 || l == ch.FirstLayer+ch.Layers-1 {
		return
	}
	d2h := b.add(&Task{Kind: KindHostCopy, Stream: StreamD2H, Name: b.names.of("offload_d2h"),
		Layer: int32(l), Micro: int32(mb), Chunk: int16(ch.Index), Dur: copyTime(bytes, b.cfg.HostD2H),
		Bytes: bytes, CopyEngine: true}, after)
	b.offloaded.set(l, mb, hostCopies{d2h: d2h, h2d: -1, bytes: bytes})
}

// reloadLayer issues, once, the copy of layer l's offloaded inputs of
// micro-batch mb back to the GPU, after their offload and task after, and
// returns it (-1 when nothing was offloaded).
func (b *builder) reloadLayer(l, mb, chunk int, after int32) int32 {
	c, ok := b.offloaded.get(l, mb)
	if !ok {
		return -1
	}
	if c.h2d < 0 {
		c.h2d = b.add(&Task{Kind: KindHostCopy, Stream: StreamH2D, Name: b.names.of("reload_h2d"), Layer: int32(l), Micro: int32(mb),
			Chunk: int16(chunk), Dur: copyTime(c.bytes, b.cfg.HostH2D), Bytes: c.bytes, CopyEngine: true}, c.d2h, after)
		b.offloaded.set(l, mb, c)
	}
	return c.h2d
}

// copyTime is a host copy of bytes at bw bytes/s, in simulated ns.
func copyTime(bytes, bw float64) engine.Time { return engine.Time(math.Ceil(bytes / bw * 1e9)) }

// optimizer adds the optimizer step (memory-bound update of this rank's
// shard) and, for ZeRO-1/2 without overlapped parameter gathers, the
// all-gather of the updated parameters.
func (b *builder) optimizer() {
	cfg := b.cfg
	dense, expert := b.stageParams()
	dp, edp := float64(cfg.Layout.GroupSize(GroupDP)), float64(cfg.Layout.GroupSize(GroupEDP))
	local := dense + expert
	if cfg.Zero >= 1 {
		local = dense/dp + expert/edp
	}
	// deps in depBuf: add copies them, and nothing below that reads
	// depBuf (compute) runs before the last add that takes them.
	deps := append(append(b.depBuf[:0], b.last[StreamCompute]), b.dpTasks...)
	deps = append(deps, b.last[StreamDP])
	b.depBuf = deps
	states := 0.0
	if cfg.OffloadOptimizer && cfg.HostH2D > 0 && cfg.HostD2H > 0 {
		// Megatron-Core reloads the states when the gradients are being
		// finalised (finalize_model_grads, after the backward) and
		// offloads them after the step (optimizer_state_offloader.py).
		states = local * (cfg.MasterDtype.Bytes() + cfg.StateDtype.Bytes()*optimizerStates(cfg.Optimizer))
		deps = append(deps, b.add(&Task{Kind: KindHostCopy, Stream: StreamH2D, Name: b.names.of("optimizer_reload_h2d"), Layer: -1, Micro: -1, Chunk: -1,
			Dur: copyTime(states, cfg.HostH2D), Bytes: states, CopyEngine: true}, b.last[StreamCompute]))
	}
	op := optimizerOp(cfg, local)
	b.optOps = append(b.optOps[:0], op)
	ops, kernels := b.optOps, 1.0
	if cfg.OptimizerTensors > 0 {
		ops = optimizerLoopOps(cfg, local)
		kernels = float64(len(ops))
		op = workload.Op{}
		for _, o := range ops {
			op.FLOPs += o.FLOPs
			op.BytesRead += o.BytesRead
			op.BytesWritten += o.BytesWritten
		}
	}
	d := b.pr.OpsTime(b.stage, ops)
	b.issue = b.issueTime(KindOptimizer, kernels)
	opt := b.add(&Task{Kind: KindOptimizer, Stream: StreamCompute, Name: b.names.of("optimizer_step"), Layer: -1, Micro: -1, Chunk: -1,
		Dur: d, aux: math.Float64bits(op.FLOPs), Bytes: op.BytesRead + op.BytesWritten}, deps...)
	if cfg.LogOptimizerStates {
		sb, mb := cfg.StateDtype.Bytes(), cfg.MasterDtype.Bytes()
		opt = b.memTask(KindOptimizer, "optimizer_state_stats", -1, -1, -1,
			local*(optStatsReads*sb+optStatsParamReads*mb), local*optStatsWrites*sb, opt)
	}
	// The step boundary: the host reads the step's loss, gradient norm or
	// overflow flag back before it issues the next step.
	b.hostBlock = opt
	if states > 0 {
		b.add(&Task{Kind: KindHostCopy, Stream: StreamD2H, Name: b.names.of("optimizer_offload_d2h"), Layer: -1, Micro: -1, Chunk: -1,
			Dur: copyTime(states, cfg.HostD2H), Bytes: states, CopyEngine: true}, opt)
	}
	b.barrier = append(b.barrier[:0], opt)
	if (cfg.Zero == 1 || cfg.Zero == 2) && !cfg.Overlap.ParamGather {
		var ag []int32
		if dense > 0 && dp > 1 {
			ag = append(ag, b.comm(GroupDP, collectives.AllGather, dense*cfg.ParamDtype.Bytes(), "dp_param_gather", -1, -1, -1, opt))
		}
		if expert > 0 && edp > 1 {
			ag = append(ag, b.comm(GroupEDP, collectives.AllGather, expert*cfg.ParamDtype.Bytes(), "edp_param_gather", -1, -1, -1, opt))
		}
		b.barrier = append(b.barrier, ag...)
	}
}

// optimizerOp prices the update of n parameters: read the gradient, read and
// write the master weight and every optimizer state, write the
// compute-precision copy. About 10 FLOPs per parameter for Adam.
func optimizerOp(cfg *StepConfig, n float64) workload.Op {
	// master weight and states, read and written once each
	kept := cfg.MasterDtype.Bytes() + cfg.StateDtype.Bytes()*optimizerStates(cfg.Optimizer)
	written := kept
	if cfg.ParamDtype != cfg.MasterDtype {
		written += cfg.ParamDtype.Bytes()
	}
	return workload.Op{Name: "optimizer", Class: workload.ClassMemory, FLOPs: 10 * n,
		BytesRead: n * (cfg.GradDtype.Bytes() + kept), BytesWritten: n * written, Batch: 1}
}

// optimizerLoopOps prices an optimizer that is a Python loop over
// cfg.OptimizerTensors parameter tensors holding n parameters in all
// (training.optimizer_tensors): Hugging Face's transformers.AdamW
// (src/transformers/optimization.py, AdamW.step, 4.x releases) runs, for
// each parameter p with gradient g and states m, v,
//
//	kernel                               read        write
//	m.mul_(beta1)                        S           S
//	m.add_(g, alpha=1-beta1)             S+G         S
//	v.mul_(beta2)                        S           S
//	v.addcmul_(g, g, value=1-beta2)      S+2G        S
//	denom = v.sqrt()                     S           S
//	denom.add_(eps)                      S           S
//	p.addcdiv_(m, denom, value=-step)    M+2S        M
//
// per parameter in bytes (S the state, G the gradient, M the master
// weight's width; weight decay 0, its default, skips p.add_), and the
// optimizer's zero_grad (torch.optim.Optimizer.zero_grad with
// set_to_none=False, PyTorch < 2.0) fills each gradient, one kernel
// writing G. With 16-bit model weights under a wider master copy, a copy
// kernel per tensor writes the model weight (M read, P written). Each
// kernel is one op over its tensor: the tensors' sizes are not known, so
// each kind of kernel is split into T equal ops (the bytes add up the
// same; every op pays the kernel overhead), and the host issues every one
// (the eager per-kernel cost, issueTime). The fused pass (optimizerOp)
// reads G+M+2S and writes M+2S instead, in one kernel.
//
// torch.optim's single-tensor AdamW (cfg.OptimizerLoopTorch,
// training.optimizer_loop: torch; pytorch/pytorch torch/optim/adamw.py
// _single_tensor_adamw at 002d2f0b, what AdamW runs with foreach=False,
// and by default before PyTorch 2.0) runs per parameter instead
//
//	kernel                                     read        write
//	p.mul_(1 - lr*weight_decay)                M           M
//	m.lerp_(g, 1-beta1)                        S+G         S
//	v.mul_(beta2)                              S           S
//	v.addcmul_(g, g, value=1-beta2)            S+2G        S
//	v.sqrt()                                   S           S
//	/ bias_correction2_sqrt                    S           S
//	.add_(eps)                                 S           S
//	p.addcdiv_(m, denom, value=-step_size)     M+2S        M
//
// the decay unconditionally (a kernel even at weight_decay 0) and the bias
// correction as a division of its own, where transformers.AdamW folds
// neither into a kernel; its step counter is a CPU tensor (no kernel
// without capturable).
func optimizerLoopOps(cfg *StepConfig, n float64) []workload.Op {
	t := cfg.OptimizerTensors
	s, g, m := cfg.StateDtype.Bytes(), cfg.GradDtype.Bytes(), cfg.MasterDtype.Bytes()
	type kernel struct {
		name        string
		read, write float64 // bytes per parameter
	}
	ks := []kernel{
		{"zero_grad", 0, g},
		{"exp_avg_mul", s, s},
		{"exp_avg_add", s + g, s},
		{"exp_avg_sq_mul", s, s},
		{"exp_avg_sq_addcmul", s + 2*g, s},
		{"sqrt", s, s},
		{"add_eps", s, s},
		{"addcdiv", m + 2*s, m},
	}
	if cfg.OptimizerLoopTorch {
		ks = []kernel{
			{"zero_grad", 0, g},
			{"decay", m, m},
			{"exp_avg_lerp", s + g, s},
			{"exp_avg_sq_mul", s, s},
			{"exp_avg_sq_addcmul", s + 2*g, s},
			{"sqrt", s, s},
			{"div_bias_correction", s, s},
			{"add_eps", s, s},
			{"addcdiv", m + 2*s, m},
		}
	}
	if p := cfg.ParamDtype.Bytes(); cfg.ParamDtype != cfg.MasterDtype {
		ks = append(ks, kernel{"copy_param", m, p})
	}
	per := n / float64(t)
	ops := make([]workload.Op, 0, len(ks)*t)
	for _, k := range ks {
		for range t {
			ops = append(ops, workload.Op{Name: "optimizer_" + k.name, Class: workload.ClassMemory, FLOPs: per,
				BytesRead: per * k.read, BytesWritten: per * k.write, Batch: 1})
		}
	}
	return ops
}

// stageParams sums the parameters this rank holds over its chunks.
func (b *builder) stageParams() (dense, expert float64) {
	for _, ch := range b.cfg.Chunks[b.stage] {
		for l := ch.FirstLayer; l < ch.FirstLayer+ch.Layers; l++ {
			d, e := b.layerParams(l)
			dense += d
			expert += e
		}
		if ch.Embedding {
			dense += b.embParams()
		}
		if ch.Head {
			dense += b.headParams()
		}
	}
	return dense, expert
}

// startParamGather issues, at the start of a step, the ZeRO-1/2 all-gathers
// of the parameters updated by the previous step (Megatron's distributed
// optimizer with overlap_param_gather), one per layer in forward order.
func (b *builder) startParamGather() {
	cfg := b.cfg
	b.paramAG = b.paramAG[:0]
	b.embAG, b.headAG = -1, -1
	if !(cfg.Zero == 1 || cfg.Zero == 2) || !cfg.Overlap.ParamGather || cfg.Layout.GroupSize(GroupDP) <= 1 {
		return
	}
	b.paramAG = resize(b.paramAG, cfg.Model.StackLayers())
	for i := range b.paramAG {
		b.paramAG[i] = -1
	}
	prev := b.barrier
	for _, ch := range cfg.Chunks[b.stage] {
		if ch.Embedding {
			b.embAG = b.comm(GroupDP, collectives.AllGather, b.embParams()*cfg.ParamDtype.Bytes(), "dp_param_gather", -1, -1, ch.Index, prev...)
		}
		for l := ch.FirstLayer; l < ch.FirstLayer+ch.Layers; l++ {
			d, _ := b.layerParams(l)
			b.paramAG[l] = b.comm(GroupDP, collectives.AllGather, d*cfg.ParamDtype.Bytes(), "dp_param_gather", l, -1, ch.Index, prev...)
		}
		if ch.Head && b.headParams() > 0 {
			b.headAG = b.comm(GroupDP, collectives.AllGather, b.headParams()*cfg.ParamDtype.Bytes(), "dp_param_gather", -1, -1, ch.Index, prev...)
		}
	}
	b.barrier = b.barrier[:0]
}

// gatherLayer returns the task layer l's compute must wait for to have its
// parameters: the ZeRO-1/2 start-of-step gather, or a ZeRO-3/FSDP per-use
// all-gather (prefetched one layer ahead with Overlap.ParamGather).
func (b *builder) gatherLayer(l int, forward bool) int32 {
	cfg := b.cfg
	if cfg.Zero != 3 {
		if l < len(b.paramAG) && forward {
			return b.paramAG[l]
		}
		return -1
	}
	if cfg.Layout.GroupSize(GroupDP) <= 1 {
		return -1
	}
	d, _ := b.layerParams(l)
	return b.fsdpGather(d, l, forward)
}

func (b *builder) fsdpGather(params float64, l int, forward bool) int32 {
	// With prefetch the gather may run while the previous layer computes:
	// it waits only for the layer before that (whose buffer it reuses).
	wait := b.fsdpPrev
	if b.cfg.Overlap.ParamGather {
		wait = b.fsdpPrev2
	}
	return b.fsdpGatherAfter(params, l, forward, wait)
}

// bwdPrefetching says whether ZeRO-3 backward gathers are prefetched one
// unit ahead (bwdPrefetch).
func (b *builder) bwdPrefetching() bool {
	return b.cfg.Zero3BackwardPrefetch && b.cfg.Zero == 3 && b.cfg.Overlap.ParamGather && b.cfg.Layout.GroupSize(GroupDP) > 1
}

// bwdPrefetch issues, as a ZeRO-3 backward unit (the output layer, a
// layer) begins, the parameter all-gather of the unit the backward of
// chunk p.ch runs next: layer next, or the embedding when next is below
// the chunk's first layer (nothing when the chunk has none). The frameworks
// prefetch it so: PyTorch FSDP1's default BackwardPrefetch.BACKWARD_PRE
// issues the next all-gather in the current unit's pre-backward hook,
// before its gradient computation, and BACKWARD_POST in its post-backward
// hook before the current reduce-scatter (torch/distributed/fsdp/api.py
// BackwardPrefetch; _runtime_utils.py _post_backward_reshard then
// _reduce_grad); FSDP2 unshards the next module in its pre-backward
// (_fsdp_state.py _pre_backward, _backward_prefetch); DeepSpeed stage 3
// prefetches the traced next sub-modules (partitioned_param_coordinator.py
// fetch_sub_module). With the CPU ahead of the GPU either hook puts the
// next all-gather before the current reduce-scatter on the group's one
// NCCL stream, so it runs while the current unit computes instead of
// queueing behind that unit's gradient reduction. The gather reuses the
// buffer of the unit before the current one (two units live, as with the
// forward prefetch): it waits for that unit's end (fsdpPrev).
func (b *builder) bwdPrefetch(p *chunkPass, next int) {
	if !b.bwdPrefetching() || p.prefetched >= 0 {
		return
	}
	var t int32 = -1
	switch {
	case next >= p.ch.FirstLayer:
		d, _ := b.layerParams(next)
		t = b.fsdpGatherAfter(d, next, false, b.fsdpPrev)
	case p.ch.Embedding && b.embParams() > 0:
		t = b.fsdpGatherAfter(b.embParams(), -1, false, b.fsdpPrev)
	default:
		return
	}
	p.prefetched = t
}

// bwdGather returns the task the backward of unit l (a layer, or -1 the
// embedding) waits for to have its parameters: the gather bwdPrefetch
// issued for it, else one issued now.
func (b *builder) bwdGather(p *chunkPass, l int) int32 {
	if p.prefetched >= 0 {
		t := p.prefetched
		p.prefetched = -1
		return t
	}
	if l < 0 {
		return b.gatherExtra(false, false)
	}
	return b.gatherLayer(l, false)
}

// fsdpGatherAfter issues the ZeRO-3 all-gather calls of params parameters
// of unit l after task wait.
func (b *builder) fsdpGatherAfter(params float64, l int, forward bool, wait int32) int32 {
	name := "fsdp_param_gather_fwd"
	if !forward {
		name = "fsdp_param_gather_bwd"
	}
	calls := zero3GatherCalls(params, b.cfg.Zero3GatherParams)
	bytes := params / float64(calls) * b.cfg.ParamDtype.Bytes()
	t := wait
	for range calls {
		t = b.comm(GroupDP, collectives.AllGather, bytes, name, l, -1, -1, t)
	}
	return t
}

// zero3GatherCalls is the number of all-gather calls a ZeRO-3 framework
// issues for a unit of params parameters when one call moves at most
// perCall (0: one call per unit, FSDP's flat parameter). DeepSpeed stage 3
// (deepspeed/runtime/zero/partitioned_param_coordinator.py,
// fetch_sub_module at 00a31c99) issues one all_gather_coalesced per
// submodule fetch and, once the module trace is complete, one per prefetch
// of the next parameters up to stage3_prefetch_bucket_size elements; in
// steady state every parameter arrives by prefetch, so a layer is gathered
// in ⌈params / bucket⌉ calls (whole-tensor packing, which can add one call
// where a bucket closes on a large tensor, is not modelled).
func zero3GatherCalls(params, perCall float64) int {
	if !(perCall > 0) || params <= perCall {
		return 1
	}
	return int(math.Ceil(params / perCall))
}

// gradBytes is the width of the gradients autograd computes for the
// gathered parameters: their compute copy's storage (bf16 in mixed
// precision, also under FP8 training, whose recipes keep bf16 weights and
// weight gradients).
func (b *builder) gradBytes() float64 {
	return b.cfg.Shape.Dtype.StorageBytes()
}

// fsdpCopyOut adds, on the compute stream after the ZeRO-3 all-gather
// gather of params parameters of unit l, FSDP2's copy-out and returns the
// task the unit's compute waits for (gather itself for other versions).
// FSDP2 all-gathers every parameter of a unit into one flat buffer and,
// before the unit runs, copies each parameter's rows out of it into the
// unsharded parameter: foreach_all_gather_copy_out, a
// torch.split_with_sizes_copy on the current (compute) stream after it
// waits for the all-gather's event (torch/distributed/_composable/fsdp/
// _fsdp_collectives.py at 01d66d21, called from FSDPParamGroup
// wait_for_unshard in the unit's pre-forward and pre-backward): one read
// and one write of every gathered byte. FSDP1 gathers straight into its
// flat parameter and views it (torch/distributed/fsdp/_flat_param.py
// _all_gather_flat_param, _use_unsharded_views): no copy.
func (b *builder) fsdpCopyOut(gather int32, params float64, kind Kind, l, mb, c int) int32 {
	if b.cfg.FSDPVersion != 2 || gather < 0 || !(params > 0) {
		return gather
	}
	by := params * b.cfg.ParamDtype.Bytes()
	return b.memTask(kind, "fsdp_copy_out", l, mb, c, by, by, gather)
}

// extraCopyOut is fsdpCopyOut for the embedding (head=false) or output
// layer's gather g under ZeRO-3.
func (b *builder) extraCopyOut(g int32, head bool, kind Kind, mb, c int) int32 {
	if b.cfg.Zero != 3 || b.cfg.FSDPVersion != 2 {
		return g
	}
	p := b.embParams()
	if head {
		p = b.headParams()
	}
	return b.fsdpCopyOut(g, p, kind, -1, mb, c)
}

// fsdpGradCopies adds the memory-bound kernels PyTorch FSDP runs on a
// unit's params gradients (reduce-scattered over a group of n) between
// the unit's backward (task t) and its reduce-scatter, and returns the
// task the reduce-scatter waits for. With g the autograd gradients' width
// (gradBytes) and r the reduce dtype's (GradDtype):
//   - FSDP1: the gradient of the flat parameter is the concatenation of the
//     original parameters' gradients (the backward of the split into views,
//     _flat_param.py _use_unsharded_views), one read and one write of g;
//     then _post_backward_hook casts it to the reduce dtype when that
//     differs (flat_param.grad.to(reduce_dtype), _runtime_utils.py) and
//     _reduce_grad divides it in place by the gradient predivide factor
//     (_div_if_needed), read and write of r: FSDP1 has no AVG path, and
//     the factor (DefaultState._get_gradient_predivide_factor: f doubles
//     from 1 while n % f == 0 and n/f > f) is at least 2 for every n ≥ 2.
//   - FSDP2: the reduce-scatter copy-in concatenates the gradients into
//     the reduce-scatter input in the reduce dtype (foreach_reduce_scatter_
//     copy_in, torch.cat into the reduce_dtype buffer, _fsdp_collectives.py
//     at 01d66d21), read g and write r; an fp32 reduction divides inside
//     NCCL (ReduceOp.AVG: _fsdp_param_group.py _init_grad_divide_factors at
//     012c62d6, and later bf16 too, _get_gradient_divide_factors), so no
//     divide kernel (the fp16 pre/post-divide is not priced).
//
// FSDP runs the cast, divide and copy-in on its post-backward /
// reduce-scatter stream, concurrently with the next unit's backward; they
// are priced on the compute stream because a memory-bound kernel beside a
// GEMM takes the SMs and HBM bandwidth it would otherwise use.
func (b *builder) fsdpGradCopies(params float64, n int, t int32) int32 {
	v := b.cfg.FSDPVersion
	if (v != 1 && v != 2) || !(params > 0) || n < 2 {
		return t
	}
	g, r := params*b.gradBytes(), params*b.cfg.GradDtype.Bytes()
	tk := &b.prog.Tasks[t]
	l, mb, c := int(tk.Layer), int(tk.Micro), int(tk.Chunk)
	if v == 2 {
		return b.memTask(KindBackward, "fsdp_grad_copy_in", l, mb, c, g, r, t)
	}
	read, write := g+r, g+r // the flat-gradient concatenation and the predivide
	if r != g {
		read, write = read+g, write+r // the cast to the reduce dtype
	}
	return b.memTask(KindBackward, "fsdp_grad_prep", l, mb, c, read, write, t)
}

// releaseLayer records the end of a layer's compute for FSDP buffer reuse.
func (b *builder) releaseLayer(t int32) {
	b.fsdpPrev2, b.fsdpPrev = b.fsdpPrev, t
}

// gatherExtra is gatherLayer for the embedding (head=false) or output layer.
func (b *builder) gatherExtra(head, forward bool) int32 {
	cfg := b.cfg
	if cfg.Zero != 3 {
		if !forward {
			return -1
		}
		if head {
			return b.headAG
		}
		return b.embAG
	}
	if cfg.Layout.GroupSize(GroupDP) <= 1 {
		return -1
	}
	p := b.embParams()
	if head {
		p = b.headParams()
	}
	if p == 0 {
		return -1
	}
	return b.fsdpGather(p, -1, forward)
}

func (b *builder) releaseExtra(t int32) { b.releaseLayer(t) }

// optimizerStates is the optimizer's per-parameter states: Adam's two
// moments, SGD's momentum, Adagrad's sum.
func optimizerStates(name string) float64 {
	switch name {
	case "sgd", "adagrad":
		return 1
	}
	return 2
}

// tpAsync reports whether a layer pass's backward runs Megatron's
// asynchronous TP communication (tpAsyncBackward): Overlap.TPBwd, Megatron's
// TP (not TPImplDTensor) without the userbuffers overlap of Overlap.TPComm,
// and no zero-bubble split of the weight gradients (whose GEMMs then run
// elsewhere in the schedule).
func (b *builder) tpAsync(p *layerPass) bool {
	cfg := b.cfg
	return cfg.Layout.TP > 1 && cfg.Overlap.TPBwd && !cfg.Overlap.TPComm && !cfg.TPImplDTensor && !p.splitW
}

// asyncNames are the task names of one part's tpAsyncBackward, spelled
// out once so that emitting a layer builds no strings.
type asyncNames struct{ pre, dgrad, wgrad, post, gather, reduce string }

var (
	mlpAsync  = asyncNames{"mlp_bwd", "fc1_dgrad_bwd", "fc1_wgrad_bwd", "mlp_norm_bwd", "tp_mlp_bwd_input_gather", "tp_mlp_bwd"}
	attnAsync = asyncNames{"attn_bwd", "qkv_dgrad_bwd", "qkv_wgrad_bwd", "attn_norm_bwd", "tp_attn_bwd_input_gather", "tp_attn_bwd"}
)

// tpAsyncBackward emits the backward of one part (attention or MLP) of a
// layer after task in as Megatron's column-parallel linear runs it
// (megatron/core/tensor_parallel/layers.py,
// LinearWithGradAccumulationAndAsyncCommunication.backward; the same in
// Megatron-DeepSpeed's copy and in Transformer Engine's Linear and
// LayerNormLinear): the ops before the linear's backward (pre); with
// sequence parallelism the all-gather of the linear's saved input shard,
// issued before the input-gradient GEMM and waited for before the weight-
// gradient GEMM, which needs it; the input-gradient GEMM (dgrad); the
// reduction of the input gradient (all-reduce, or reduce-scatter with
// sequence parallelism), issued before the weight-gradient GEMM (wgrad)
// and waited for when the linear's backward returns, so before the ops
// after it (post: the norm's backward). CUDA_DEVICE_MAX_CONNECTIONS=1 makes
// the GPU start the kernels in that issue order, which is what lets each
// collective run beside the GEMM issued after it. It returns the task the
// next part waits for, the last compute task (the layer's weight gradients
// are complete there), and ok false when the part has no column-parallel
// GEMM pair (then nothing was emitted).
func (b *builder) tpAsyncBackward(n asyncNames, p *layerPass, in int32, blocks ...workload.Block) (next, last int32, ok bool) {
	pre, dgrad, wgrad, post, ok := b.cache.splitColumn(p.l, blocks...)
	if !ok {
		return -1, -1, false
	}
	l, mb, c := p.l, p.mb, p.c
	x := b.compute(KindBackward, n.pre, l, mb, c, pre, in, p.gather)
	red, ag := collectives.AllReduce, int32(-1)
	if b.cfg.Shape.SP {
		red = collectives.ReduceScatter
		ag = b.comm(GroupTP, collectives.AllGather, b.tpBytes(collectives.AllGather, true), n.gather, l, mb, c, x)
	}
	d := b.compute(KindBackward, n.dgrad, l, mb, c, dgrad, x)
	r := b.comm(GroupTP, red, b.tpBytes(red, true), n.reduce, l, mb, c, d)
	last = b.compute(KindBackward, n.wgrad, l, mb, c, wgrad, d, ag)
	if post.dur > 0 {
		last = b.compute(KindBackward, n.post, l, mb, c, post, last, r)
		return last, last, true
	}
	return r, last, true
}
