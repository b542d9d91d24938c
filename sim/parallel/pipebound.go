package parallel

import (
	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/units"
)

// The pipeline bound (issue 18: a build stopped sooner in a search for the
// best layouts). ComputeBound counts one stage's computation and nothing
// of the pipeline around it; but a stage cannot start a micro-batch before
// the stages ahead of it have computed and sent it (the fill), and the
// step does not end before the stages ahead of it have computed the
// backward of the last micro-batch it sends them (the drain). Both are
// chains of dependencies that every play obeys, so a bound built from
// them is as safe as ComputeBound's. It rests on:
//
//   - a rank runs its compute tasks one at a time, in program order, each
//     for at least its Dur (ComputeBound's reasoning: interference only
//     slows them);
//   - any other task ends no earlier than its inputs, and, where every
//     such task takes exactly its Dur (StageCut.CommExact: the symmetric
//     executor at analytic fidelity), no earlier than its inputs plus its
//     Dur; elsewhere (flow fidelity, every rank) a collective no earlier
//     than its inputs plus its floor (StageCut.Floors: a collective
//     starts once its last member arrives, and the runner takes at least
//     that over it), any other such task as instant;
//   - a receive ends no earlier than the send it is matched with (the
//     executors complete both at the send's end).
//
// Relaxed times under these rules are lower bounds on the played ones,
// since every played end is a maximum of ends each at least as late plus
// a time at least as long. After building stage s the check knows stages
// 0..s. A whole step's stage is walked whole, each receive from an earlier
// stage ending at its send's relaxed end (fill); its last gradient send to
// stage s−1 is then followed, on every stage below, by what depends on its
// receipt before that stage's own last gradient send, down to stage 0's
// end (drain). For a 1F1B pipeline of m micro-batches this is at least
// (pp − 1 + m)·(F + B), the classic step time, against ComputeBound's
// m·(F + B), and with the priced communication it follows the tensor- and
// expert-parallel collectives on the critical path too. A shortened build
// walks only what it shares with the full step (stage's doc).
//
// The matching of sends and receives is read from the tasks' keys
// (gradient or activation, step, micro-batch, sending stage and chunk,
// receiving stage), as linkP2P matches them, so it holds before linkP2P
// and after; a chain whose keys do not match ends there, and a schedule
// whose last sends do not form one chain (a bidirectional one) simply gets
// a smaller bound.

// pipeCut is StageCut's record of one build's stages checked so far, and
// the scratch of its walks.
type pipeCut struct {
	// commExact: every task that is not compute takes exactly its Dur
	// (StageCut.CommExact), so the walks count it; else floors, where
	// set, bound the collectives (StageCut.Floors), memoised in floorMemo
	// for the stage walked.
	commExact bool
	floors    CommFloors
	floorMemo []floorEntry
	stages    []stageEdges
	// sent is the relaxed end of every send of the stages checked so far
	// to a later stage, by transfer.
	sent map[p2pEnd]engine.Time
	rel  []engine.Time // walk's relaxed end of each task
	// The walk of the stage being built (begin, walk): its tasks
	// [0, walked) are walked, with last, compute and most walk's results
	// so far.
	walked              int
	last, compute, most engine.Time
	// tail and valid: drainEdges' relaxed end of each task from the
	// receive it starts at, and whether it is a bound (the task depends
	// on the receive)
	tail  []engine.Time
	valid []bool
}

// p2pEnd identifies a pipeline transfer as linkP2P pairs it: the send and
// the receive of one transfer have the same p2pEnd.
type p2pEnd struct {
	grad            bool
	step            int16
	micro           int32
	from, fromChunk int32
	to              int32
}

// stageEdges is what the pipeline bound keeps of a checked stage for the
// drain of the stages after it.
type stageEdges struct {
	// recv is the stage's last gradient receive and send its last gradient
	// send (has: found). gain is the relaxed time from recv's end to
	// send's (gainOK: send depends on recv), end from recv's end to the
	// latest end of the stage's tasks that depend on it or run on the
	// compute stream after a compute task that does (endOK: recv found).
	recv, send       p2pEnd
	hasRecv, hasSend bool
	gain, end        engine.Time
	gainOK, endOK    bool
	sendTask         int32 // the last gradient send's index
}

// depsOf is task t's dependencies, also before the build has closed the
// dependency offsets (depOff without its final entry).
func depsOf(p *Program, t int) []int32 {
	hi := int32(len(p.deps))
	if t+1 < len(p.depOff) {
		hi = p.depOff[t+1]
	}
	return p.deps[p.depOff[t]:hi]
}

// sendKey is send task t of stage program p's transfer.
func sendKey(p *Program, t *Task) p2pEnd {
	return p2pEnd{grad: t.Name == sendGradID, step: t.Step, micro: t.Micro, from: int32(p.Stage), fromChunk: int32(t.Chunk), to: t.Peer()}
}

// recvKey is receive task t of stage program p's transfer, its sending
// chunk from the placement; false when the placement does not name the
// receive's peer as its sender.
func recvKey(p *Program, t *Task, place pipeline.Placement) (p2pEnd, bool) {
	grad := t.Stream == StreamPPRecvGrd
	if p.Stage >= place.Stages || t.Chunk < 0 || int(t.Chunk) >= place.Chunks {
		return p2pEnd{}, false
	}
	var from pipeline.Loc
	var ok bool
	if grad {
		from, ok = place.Next(p.Stage, int(t.Chunk))
	} else {
		from, ok = place.Prev(p.Stage, int(t.Chunk))
	}
	if !ok || int32(from.Stage) != t.Peer() {
		return p2pEnd{}, false
	}
	return p2pEnd{grad: grad, step: t.Step, micro: t.Micro, from: int32(from.Stage), fromChunk: int32(from.Chunk), to: int32(p.Stage)}, true
}

// floorEntry is one collective's floor in pipeCut.floorMemo.
type floorEntry struct {
	k     GroupKind
	op    collectives.Op
	bytes float64
	floor engine.Time
}

// floorMemoMax bounds pipeCut.floorMemo: a stage holds a handful of
// distinct collectives (per group kind, an op and a size or two each).
const floorMemoMax = 32

// commEnd is when task t of stage program p, neither compute nor a
// receive, ends at the earliest after its inputs end at in: with its Dur
// where every such task takes exactly that (commExact); a collective
// after its floor where floors are known (the pipeline send's time is
// not bounded: it counts as instant); else at in.
func (pc *pipeCut) commEnd(p *Program, t *Task, in engine.Time) engine.Time {
	switch {
	case pc.commExact:
		return in.Add(max(t.Dur, 0))
	case pc.floors == nil || !t.Kind.IsComm() || t.Kind.isP2P():
		return in
	}
	for i := range pc.floorMemo {
		if e := &pc.floorMemo[i]; e.k == t.Group && e.op == t.Op && e.bytes == t.Bytes {
			return in.Add(e.floor)
		}
	}
	f := max(pc.floors.CommFloor(t.Group, p.Stage, t.Op, units.Bytes(t.Bytes)), 0)
	if len(pc.floorMemo) < floorMemoMax {
		pc.floorMemo = append(pc.floorMemo, floorEntry{t.Group, t.Op, t.Bytes, f})
	}
	return in.Add(f)
}

// reset starts the record of a build (its stage 0 next), its floors'
// memo empty.
func (pc *pipeCut) reset(commExact bool, floors CommFloors) {
	pc.commExact, pc.floors = commExact, floors
	pc.floorMemo = pc.floorMemo[:0]
	pc.stages = pc.stages[:0]
	if pc.sent == nil {
		pc.sent = map[p2pEnd]engine.Time{}
	}
	clear(pc.sent)
}

// stage records stage program p (the next stage of the build, whose
// computation sums to compute: the full step's for a shortened build) and
// returns its pipeline bound, at least compute. For a whole step (st nil)
// that is the most of the relaxed end of its tasks (fill) and the drain
// bounds of its last gradient send; for a build shortened as st plans,
// where the full step holds st.Extra more copies of each stage's unit
// before the programs' suffixes, only what the full step shares with it
// is walked (walk's first tasks, and drainEdges' tails inside the
// suffixes), and the computation between is compute's.
func (pc *pipeCut) stage(p *Program, place pipeline.Placement, compute engine.Time, st *Steady) engine.Time {
	if pc.sent == nil {
		pc.reset(pc.commExact, pc.floors)
	}
	pc.stages = append(pc.stages, stageEdges{})
	e := &pc.stages[len(pc.stages)-1]
	if st == nil {
		_, _, _, most := pc.walk(p, place, len(p.Tasks), false)
		bound := max(compute, most)
		pc.drainEdges(p, place, e, 0)
		if e.hasSend {
			bound = max(bound, pc.drain(pc.rel[e.sendTask], len(pc.stages)-1))
		}
		return bound
	}
	suffix, ok := steadySuffix(p, st)
	if !ok {
		return compute
	}
	stop, prefixEnd, prefixCompute, _ := pc.walk(p, place, suffix, true)
	bound := max(compute, prefixEnd.Add(compute-prefixCompute))
	pc.drainEdges(p, place, e, suffix)
	if e.hasSend && int(e.sendTask) > stop {
		// The last gradient send ends no earlier than the compute task
		// it waits for, which runs after the prefix's: compute less what
		// the tail after that task holds.
		if through, ok := lastComputeInput(p, int(e.sendTask)); ok && through > stop && through >= suffix {
			at := prefixEnd.Add(compute - prefixCompute - computeSum(p.Tasks[through+1:]))
			bound = max(bound, pc.drain(at, len(pc.stages)-1))
		}
	}
	return bound
}

// steadySuffix is where stage program p, built shortened as st plans,
// and the full step part: its tasks before suffix are the full step's
// first ones (its order's first entries, its replicated unit's the last of
// them: checkFull), and its tasks from suffix on are the full step's last
// ones, st.Extra units later (Replicate's premise); false when st does not
// cut p's stage.
func steadySuffix(p *Program, st *Steady) (suffix int, ok bool) {
	if p.Stage >= len(st.stages) {
		return 0, false
	}
	c := st.stages[p.Stage]
	if c.unit <= 0 || c.end < c.unit || c.end >= len(p.entries) {
		return 0, false
	}
	return int(p.entries[c.end]), true
}

// recvEnd is a receive's relaxed end: its matched send's, when an earlier
// stage recorded it, else 0 (its own inputs not counted: it ends with its
// send).
func (pc *pipeCut) recvEnd(p *Program, place pipeline.Placement, task *Task) engine.Time {
	if k, ok := recvKey(p, task, place); ok && int(k.from) < p.Stage {
		return pc.sent[k]
	}
	return 0
}

// lastComputeInput is the latest compute task (in program order) among
// task t's inputs and their inputs, false when there is none.
func lastComputeInput(p *Program, t int) (int, bool) {
	best := -1
	for _, d := range depsOf(p, t) {
		if p.Tasks[d].Kind.IsCompute() {
			best = max(best, int(d))
			continue
		}
		for _, dd := range depsOf(p, int(d)) {
			if p.Tasks[dd].Kind.IsCompute() {
				best = max(best, int(dd))
			}
		}
	}
	return best, best >= 0
}

// walk relaxes stage program p's tasks before limit in order, on from
// those walked so far (the rules above: each receive whose send an earlier
// stage recorded ends at that send's relaxed end), leaves each task's end
// in pc.rel and records the relaxed end of each send to a later stage
// (pc.sent). With first it stops after the first activation send to a
// later stage (a shortened build's prefix walk: the next stage's fill is
// what it needs). It returns the last task walked, the relaxed end of the
// last compute task walked (all compute after the walk runs after it), the
// computation walked and the latest end.
func (pc *pipeCut) walk(p *Program, place pipeline.Placement, limit int, first bool) (stop int, last, compute, most engine.Time) {
	tasks := p.Tasks[:min(limit, len(p.Tasks))]
	if cap(pc.rel) < len(tasks) {
		rel := make([]engine.Time, max(len(tasks), 2*cap(pc.rel)))
		copy(rel, pc.rel[:pc.walked])
		pc.rel = rel
	}
	rel := pc.rel[:len(tasks)] // (each task's written before it is read)
	last, compute, most = pc.last, pc.compute, pc.most
	stop = pc.walked - 1
	for t := pc.walked; t < len(tasks); t++ {
		task := &tasks[t]
		var in engine.Time
		for _, d := range depsOf(p, t) {
			in = max(in, rel[d])
		}
		// The rules above: compute one at a time after the last, a
		// receive with its send, the rest after its inputs (plus its
		// time where exact).
		var end engine.Time
		switch k := task.Kind; {
		case k.IsCompute():
			d := max(task.Dur, 0)
			last = max(in, last).Add(d)
			end, compute = last, compute.Add(d)
		case k == KindRecv:
			end = pc.recvEnd(p, place, task)
		default:
			end = pc.commEnd(p, task, in)
		}
		rel[t], stop, most = end, t, max(most, end)
		if task.Kind == KindSend && int(task.Peer()) > p.Stage {
			pc.sent[sendKey(p, task)] = end
			if first && task.Name != sendGradID {
				break
			}
		}
	}
	pc.walked, pc.last, pc.compute, pc.most = stop+1, last, compute, most
	return stop, last, compute, most
}

// begin starts the walk of stage program p, about to be built (a stage 0
// starts the record of a build).
func (pc *pipeCut) begin(p *Program, commExact bool, floors CommFloors) {
	if p.Stage == 0 || pc.sent == nil {
		pc.reset(commExact, floors)
	}
	// This build's rules and floors whatever the record holds (the floors
	// are its pricer's, and the memo the stage's).
	pc.commExact, pc.floors = commExact, floors
	pc.walked, pc.last, pc.compute, pc.most = 0, 0, 0, 0
	pc.floorMemo = pc.floorMemo[:0]
}

// tailScratch returns drainEdges' storage for n tasks, cleared.
func (pc *pipeCut) tailScratch(n int) ([]engine.Time, []bool) {
	if cap(pc.tail) < n {
		pc.tail, pc.valid = make([]engine.Time, n), make([]bool, n)
	}
	rel, valid := pc.tail[:n], pc.valid[:n]
	clear(rel)
	clear(valid)
	return rel, valid
}

// drainEdges finds stage program p's last gradient receive and send (at or
// after task from: none found before it) and walks its tasks from the
// receive to the end: the relaxed time from the
// receive's end to the send's (e.gain) and to the last compute task's
// (e.end), counting only what depends on the receive and the compute
// tasks from the first one that does (the compute stream runs the rest
// after it).
func (pc *pipeCut) drainEdges(p *Program, place pipeline.Placement, e *stageEdges, from int) {
	tasks := p.Tasks
	r, s := -1, -1
	for t := len(tasks) - 1; t >= from && (r < 0 || s < 0); t-- {
		task := &tasks[t]
		switch {
		case r < 0 && task.Kind == KindRecv && task.Stream == StreamPPRecvGrd:
			r = t
		case s < 0 && task.Kind == KindSend && task.Name == sendGradID:
			s = t
		}
	}
	if s >= 0 {
		e.send, e.hasSend, e.sendTask = sendKey(p, &tasks[s]), true, int32(s)
	}
	if r < 0 {
		return
	}
	k, ok := recvKey(p, &tasks[r], place)
	if !ok {
		return
	}
	e.recv, e.hasRecv = k, true
	rel, valid := pc.tailScratch(len(tasks) - r)
	valid[0] = true // the receive: 0, its end
	var last, most engine.Time
	started := false // a compute task that depends on the receive has been seen
	for t := r + 1; t < len(tasks); t++ {
		task := &tasks[t]
		var in engine.Time
		dep := false
		for _, d := range depsOf(p, t) {
			if int(d) >= r && valid[int(d)-r] {
				in = max(in, rel[int(d)-r])
				dep = true
			}
		}
		var end engine.Time
		switch {
		case task.Kind.IsCompute() && (dep || started):
			started = true
			end = max(in, last).Add(max(task.Dur, 0))
			last = end
			dep = true
		case task.Kind == KindRecv:
			dep = false // ends with its own send, which need not wait for this one
		default:
			end = pc.commEnd(p, task, in)
		}
		rel[t-r], valid[t-r] = end, dep
		if dep {
			most = max(most, end)
		}
	}
	e.end, e.endOK = most, true
	if s > r && valid[s-r] {
		e.gain, e.gainOK = rel[s-r], true
	}
}

// drain is the most of the bounds the chain of last gradient sends gives,
// from stage top's, whose inputs end no earlier than at: each stage below
// receives it, then computes at least end before its computation is done,
// and gain before its own last gradient send, which the stage below it
// receives in turn.
func (pc *pipeCut) drain(at engine.Time, top int) engine.Time {
	var best engine.Time
	for j := top - 1; j >= 0; j-- {
		from, below := &pc.stages[j+1], &pc.stages[j]
		if !from.hasSend || !below.hasRecv || from.send != below.recv {
			break
		}
		if below.endOK {
			best = max(best, at.Add(below.end))
		}
		if !below.gainOK {
			break
		}
		at = at.Add(below.gain)
	}
	return best
}

// PipelineBound is the most of the pipeline bounds of a step's programs,
// progs (every stage, in stage order, as cfg builds them; shortened as st
// plans, nil for a whole step): what StageCut compares with its limit
// after each stage, the stage's computation included (the full step's for
// a shortened build). For tests and diagnostics; 0 when progs are not one
// program per stage in order.
func PipelineBound(cfg *StepConfig, progs []*Program, commExact bool, floors CommFloors, st *Steady) engine.Time {
	if cfg.Layout == nil || len(progs) != cfg.Layout.PP {
		return 0
	}
	shape := pipeline.Shape{Stages: cfg.Layout.PP, Microbatches: cfg.Microbatches, Virtual: max(cfg.Virtual, 1)}
	place := pipeline.Of(cfg.Schedule).Placement(shape)
	var pc pipeCut
	pc.reset(commExact, floors)
	var most engine.Time
	for s, p := range progs {
		if p == nil || p.Stage != s {
			return 0
		}
		sum := stageCompute(p, st)
		pc.begin(p, commExact, floors)
		most = max(most, pc.stage(p, place, sum, st))
	}
	return most
}
