package parallel

import (
	"fmt"
	"math"
	"strings"
	"unsafe"

	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/units"
	"github.com/simtrain/simtrain/sim/workload"
)

// Stream is a serial queue of work on one GPU. Compute has one stream; each
// process-group kind has its own communication stream (NCCL uses one
// communicator per group), so work on different streams overlaps and work on
// one stream never does.
type Stream uint8

const (
	StreamCompute Stream = iota
	StreamTP
	StreamCP
	StreamEP
	StreamDP
	StreamPPSend    // pipeline sends (both directions), in issue order
	StreamPPRecvAct // activations arriving from the previous model chunk
	StreamPPRecvGrd // gradients arriving from the next model chunk
	StreamD2H       // copies to host memory (offloading), copy engine
	StreamH2D       // copies back from host memory (reloads), copy engine
	// StreamHost is the rank's host thread (StepConfig.Host). No task of a
	// program is on it: the executor plays each task's issue (Task.Issue)
	// there, and the timeline shows it as its own track.
	StreamHost
	NumStreams
)

// StreamNames are the timeline's stream names, indexed by Stream.
var StreamNames = []string{"compute", "tp", "cp", "ep", "dp", "pp_send", "pp_recv_act", "pp_recv_grad", "host_d2h", "host_h2d", "host"}

func (s Stream) String() string { return StreamNames[s] }

// Kind is what a task does.
type Kind uint8

const (
	KindForward Kind = iota
	KindBackward
	KindWGrad // weight-gradient pass (zero-bubble)
	KindRecompute
	KindOptimizer
	// KindHostSync is time the GPU idles on its compute stream because the
	// host blocked on a device-to-host synchronisation and has not yet
	// issued the next kernels (StepConfig.MoEHostSync). It is neither
	// compute nor communication.
	KindHostSync
	KindAllReduce
	KindAllGather
	KindReduceScatter
	KindAllToAll
	KindSend
	KindRecv
	// KindHostCopy is a copy between the GPU and pinned host memory by a
	// copy engine (activation offloading and its reload, optimizer-state
	// offloading): neither compute nor communication, it holds no SMs.
	KindHostCopy
	// KindHostIssue is the host thread's time issuing a task (Task.Issue):
	// a kind of the timeline's host track, never of a program's task.
	KindHostIssue
	NumKinds
)

// KindNames are the timeline's kind names, indexed by Kind.
var KindNames = []string{"forward", "backward", "wgrad", "recompute", "optimizer", "host_sync",
	"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send", "recv", "host_copy", "host_issue"}

func (k Kind) String() string { return KindNames[k] }

// IsComm reports whether the kind is communication.
func (k Kind) IsComm() bool { return k >= KindAllReduce && k <= KindRecv }

// IsCompute reports whether the kind is GPU computation (not communication,
// not a host stall).
func (k Kind) IsCompute() bool { return k < KindHostSync }

func kindOfOp(op collectives.Op) Kind {
	switch op {
	case collectives.AllReduce:
		return KindAllReduce
	case collectives.AllGather:
		return KindAllGather
	case collectives.ReduceScatter:
		return KindReduceScatter
	case collectives.AllToAll:
		return KindAllToAll
	}
	return KindSend
}

// Task is one unit of work of one rank in one step.
type Task struct {
	Kind   Kind
	Stream Stream
	Group  GroupKind // communication tasks: the process group
	Op     collectives.Op
	// GEMMShare is the share of a compute task's Dur spent in GEMM
	// kernels, in 1/65535ths (interference.go prices their slowdown
	// under concurrent communication by waves of CTAs); 0 for other
	// tasks.
	GEMMShare uint16
	// CopyEngine marks a communication task whose data the GPU's copy
	// engines move (PyTorch AsyncTP's symmetric-memory p2p copies,
	// cudaMemcpyAsync): it holds no SMs, so it does not slow compute
	// (interference.go). False for NCCL kernels. (These two flags sit beside
	// the narrow fields: at the end they padded a Task from 88 to 96 bytes.)
	CopyEngine bool
	// SMSized marks a communication task whose overlapped GEMMs are
	// launched for the SMs it leaves them (a cuBLASLt SM-count target:
	// Transformer Engine's userbuffers TP overlap, CommOverlapCore
	// _math_sms = sm_count − num_comm_sm with set_sm_margin,
	// transformer_engine/common/comm_gemm_overlap/comm_gemm_overlap.cpp):
	// it slows them by the SMs it holds but pushes no CTAs into a second
	// wave (interference.go rate).
	SMSized bool
	// Name is the task's name (its String), an index into the name
	// table so that a Task holds no pointer (TaskName).
	Name TaskName
	// Step and Chunk are int16: Build refuses more than math.MaxInt16
	// steps or chunks per stage (checkNarrow), so no value is cut. With
	// them narrow and FLOPs, Peer and Match sharing one word (aux), a
	// Task is 64 bytes instead of 80 (issue 18 slim24: every built task
	// is written once and copied by copyPass and copyLayers).
	Step  int16
	Chunk int16 // -1 when not per chunk
	Layer int32 // -1 when not a layer's work
	Micro int32 // -1 when not per micro-batch
	// (The host's issue time and waits are the program's played records'
	// alone, Program.Issue, HostAfter and QueueAfter: a Task is 48 bytes,
	// not 64, written once and copied by copyPass and copyLayers: issue
	// 18, build45.)
	Dur   engine.Time
	Bytes float64 // compute: HBM bytes; communication: message size (nccl-tests convention)
	// aux holds what only some kinds carry, one word for both: a send's
	// or receive's peer stage (high 32 bits) and matching task (low 32
	// bits, two's complement), read by Peer and Match; any other task's
	// FLOPs as float64 bits (FLOPs), which sends and receives never have.
	aux uint64
}

// p2pAux is a send's or receive's aux word for peer and match.
func p2pAux(peer, match int32) uint64 { return uint64(uint32(peer))<<32 | uint64(uint32(match)) }

// isP2P reports whether the kind is a pipeline send or receive, whose aux
// holds Peer and Match.
func (k Kind) isP2P() bool { return k == KindSend || k == KindRecv }

// FLOPs is the FLOPs a compute task executes; 0 for a send or receive.
func (t *Task) FLOPs() float64 {
	if t.Kind.isP2P() {
		return 0
	}
	return math.Float64frombits(t.aux)
}

// setFLOPs sets FLOPs of a task that is not a send or receive.
func (t *Task) setFLOPs(f float64) { t.aux = math.Float64bits(f) }

// Peer is a send's or receive's peer pipeline stage; -1 for other tasks.
func (t *Task) Peer() int32 {
	if !t.Kind.isP2P() {
		return -1
	}
	return int32(t.aux >> 32)
}

// Match is a send's index of the matching receive in the peer stage's
// program, a receive's of the send (before linkP2P: the send's receiving
// chunk, the receive's -1); -1 for other tasks.
func (t *Task) Match() int32 {
	if !t.Kind.isP2P() {
		return -1
	}
	return int32(uint32(t.aux))
}

// p2p is Peer and Match of a task known to be a send or receive, without
// the kind check (the executors' send paths, which switched on the kind).
func (t *Task) p2p() (peer, match int) { return int(int32(t.aux >> 32)), int(int32(uint32(t.aux))) }

// setP2P sets a send's or receive's Peer and Match.
func (t *Task) setP2P(peer, match int32) { t.aux = p2pAux(peer, match) }

// taskBand is a compute task's band GEMMs (blockCost.band): their share
// of its Dur in 1/65535ths, counted as full-grid GEMMs (Task.GEMMShare)
// while at least ctas communication CTAs run beside it.
type taskBand struct {
	task  int32
	share uint16
	ctas  int32
}

// Program is one pipeline stage's tasks for the simulated steps, in issue
// order, with dependencies inside the stage. Every rank of the stage runs the
// same program; cross-rank coupling (collectives, send/recv) is resolved by
// the executor.
type Program struct {
	Stage int
	Tasks []Task
	// Hosted says the tasks wait for their issue by the rank's host
	// thread (StepConfig.Host.On).
	Hosted bool
	// queued says some task waits for a full launch queue (QueueAfter,
	// QueueSelf).
	queued bool
	// qself and qrest: per task, nil when no task has more launches than
	// the queue holds (QueueSelf).
	qself []int32
	qrest []engine.Time
	// qselfBuf and qrestBuf are storage for qself and qrest that an
	// arena's program keeps from its last build (Arena.program), used
	// only by setQueueWaits, which clears what it takes.
	qselfBuf []int32
	qrestBuf []engine.Time
	// bands lists, in task order, the compute tasks with GEMMs in the
	// wave band (blockCost.band): nil for most programs.
	bands []taskBand
	// queue lists, per stream, the launches through each task with any
	// and the task (in 1/launchScale; setQueueWaits; empty without a
	// queue bound).
	qlim  int64 // HostModel.Queue in 1/launchScale
	queue [NumStreams][]queueEntry
	// qwalk says setQueueWaits walked the tasks with a queue bound (the
	// lists and qlim are valid), with qperK the per-kernel issue costs
	// of a forward and a backward task; qfrom is the task the walk
	// started at: 0, or the end of a failed shortened play's prefix whose
	// waits it took (queuePrefix).
	qwalk bool
	// qwide, when not nil, holds the lists' exact ends: some stream's
	// launches reached queueWide, past what an entry holds (queueEntry);
	// nil otherwise.
	qwide *wideQueues
	// qnarrow says no stream's launches can reach queueWide in this
	// walk (launchBound), so that copyQueues need not test its copies'
	// ends.
	qnarrow bool
	qperK   [2]int64
	qfrom   int
	// qcopied counts the tasks of copied ranges whose waits setQueueWaits
	// took from their sources' list entries (copyQueues), for tests.
	qcopied int
	// qbig says some task setQueueWaits has met so far may have more
	// launches than the queue holds (a self wait): copyQueues looks for
	// self waits in its copies only then.
	qbig bool
	// streamTasks counts the tasks on each stream (by the stream masked
	// to streamSlots), kept by the builder as it appends them (add,
	// copyPass, copyLayers): setQueueWaits sizes its lists from it, and
	// counts again when the counts do not add up to the tasks (a program
	// not made by the builder).
	streamTasks [streamSlots]int32
	depOff      []int32 // CSR: dependencies of task i are deps[depOff[i]:depOff[i+1]]
	deps        []int32
	succOf      []int32 // CSR: successors, built by finish
	succ        []int32
	arena       *Arena // where the program's storage comes from; nil: its own
	// p2p lists the pipeline sends and receives, in task order, as the
	// builder added them: what linkP2P pairs, without walking every task.
	p2p []int32
	// entries[i] is the first task of the first step's schedule entry i
	// (pipeline.Schedule.Order), entries[len(order)] the first task after
	// them (the gradient flush and optimizer): the boundaries steady-state
	// replication (steady.go) cuts the program at.
	entries []int32
	// copies lists, in task order, the task ranges an arena's build
	// appended as bulk copies of earlier ranges (copyPass, copyLayers),
	// whose played fields (hotTask) other than hostAfter and queueAfter
	// are their source's: fillHot copies those records instead of
	// converting each Task (the waits it takes from Program.hot). Kept for arena programs only (Arena.program;
	// a program built without one lists none, so that it equals the same
	// program built with nothing copied), and valid while the program's
	// tasks are as Build left them: code that changes a built program's
	// played fields must set it to nil.
	copies []copySeg
	// hot is the tasks' hotTask records, which every build keeps as it
	// appends the tasks (keepHot: add, copyPass and copyLayers append
	// them with the tasks, the builder's later flag changes are written
	// to both), so that NewSymmetric takes them instead of converting
	// each Task (fillHot); valid while the program's tasks are as Build
	// left them. They alone hold the tasks' host and queue waits
	// (hostAfter, queueAfter: HostAfter, QueueAfter), which the
	// relabelling of copies and setQueueWaits write there: a Task does
	// not carry them, 56 bytes instead of 64 written and copied a task
	// (issue 18, build45). A program made by hand (keepHot false) holds
	// its waits here when it has a record a task (else none), the
	// records' other fields unused.
	hot     []hotTask
	keepHot bool
	// prefix says the first tasks' hot records, dependency offsets and
	// dependencies are byte copies of a Fork's (resumeKept, this
	// program's build): Fork.builtPrefix.
	prefix prefixSource
	// skipRuns is the per-layer skip's runs of an arena's program, found
	// at its first Run with the skip (skip.go); nil after every fresh
	// build, its priced cleared by a re-pricing.
	skipRuns *skipRuns
	// compute is the sum of the compute tasks' Dur (computeSum), where
	// computeKnown: taken once a build by the first to ask
	// (programCompute: the build's StageCut check, RunBefore's running
	// bound, ComputeBound), and read by the others instead of summing
	// again. Cleared
	// by every fresh build (Arena.program makes the Program anew) and by a
	// re-pricing one (repriceBuild); only the builder writes a Dur.
	compute      engine.Time
	computeKnown bool
	// noHostWaits guarantees that no task has a host wait (every
	// hotTask.hostAfter is 0), so that the
	// host thread's walk (hostRun) can skip that test on every task.
	// builder.build sets it and add, the only place that makes a host
	// wait (copyLayers and copyPass relabel waits the program already
	// has, and copy its own tasks), clears it; false, the safe default,
	// elsewhere (programs made by hand, or that Build did not make).
	noHostWaits bool
	// issueSum is Σ Task.Issue over the tasks but receives when Hosted
	// (0 when not), the host thread's busy time Stats.HostIssue counts
	// of a play without replication, valid with issueSumOK: add adds
	// each task's, copyLayers and copyPass their source range's (their
	// marks hold the sum at their ends, so a range costs one subtraction,
	// not a walk). builder.build sets issueSumOK; false, the safe
	// default, elsewhere. Stats reads it only where the walk reads the
	// build's own records (Program.hot, keepHot: hostIssueSum).
	issueSum   engine.Time
	issueSumOK bool
	// p2pListed: p2p lists every send and receive (CheckHot), which
	// symBuffers' lazy state relies on to clear the receives' records.
	// builder.build sets it (add, copyLayers and copyPass list theirs; a
	// re-pricing keeps the last build's list, of the same tasks); false,
	// the safe default, elsewhere (programs made by hand).
	p2pListed bool
}

// copySeg is a range of a program's tasks that a build appended as a
// bulk copy: tasks [at, at+n) are tasks [src, src+n) with only Micro and
// Layer (and the dependencies, which hotTask does not hold), and in their
// records hostAfter and queueAfter, changed. src+n <= at.
type copySeg struct {
	at, src, n int32
}

// noteCopy records tasks [at, at+n) as a bulk copy of [src, src+n)
// (Program.copies), for an arena's program. (A run of layer copies, each
// copied from the one before, stays one range a layer: merged, a range
// would overlap its source, which one bulk copy does not repeat.)
func (p *Program) noteCopy(at, src, n int32) {
	if p.arena == nil {
		return
	}
	p.copies = append(p.copies, copySeg{at: at, src: src, n: n})
}

// HostAfter returns the task whose end the host thread waits for before
// issuing task i, or -1.
func (p *Program) HostAfter(i int) int { return int(p.waits(i).hostAfter) - 1 }

// QueueAfter returns the task whose end the host thread waits for before
// issuing task i because task i's stream already holds HostModel.Queue
// launches not yet finished, or -1.
func (p *Program) QueueAfter(i int) int { return int(p.waits(i).queueAfter) - 1 }

// Issue returns the host time to issue task i (StepConfig.Host): its
// kernels' launches and the framework's dispatch, or one library call.
// The rank's host thread issues the tasks one after another in program
// order (receives excepted: the matching send starts them), and a task
// starts no earlier than its issue ends.
func (p *Program) Issue(i int) engine.Time { return p.waits(i).issue }

// waits is task i's issue time and host and queue waits (issue,
// hostAfter, queueAfter; the rest zero): its record's (Program.hot), none
// for a program that keeps no record a task (made by hand).
func (p *Program) waits(i int) hotTask {
	_ = p.Tasks[i]
	if len(p.hot) != len(p.Tasks) {
		return hotTask{}
	}
	h := &p.hot[i]
	return hotTask{issue: h.issue, hostAfter: h.hostAfter, queueAfter: h.queueAfter}
}

// QueueSelf returns, for a task of more launches than the launch queue
// holds, the task before it on its stream and the host time of its
// launches beyond the queue's: the host issues the first Queue launches,
// then each further one only as the GPU retires one, and the GPU reaches
// the task's own launches when the task before it ends, so the task's
// issue ends no earlier than that end plus the rest. -1 for other tasks.
func (p *Program) QueueSelf(i int) (int, engine.Time) {
	if p.qself == nil {
		return -1, 0
	}
	return int(p.qself[i]) - 1, p.qrest[i]
}

// setQueueWaits gives every hosted task the task it waits for when its
// stream's launch queue is full: CUDA holds at most h.Queue launches per
// stream issued but not finished, and a launch into a full queue blocks
// the host until the GPU retires the oldest (hardware.LaunchQueueDepth).
// A task of k kernels is k launches (its Issue over the per-kernel cost),
// a collective, send or host copy one. A stream runs its tasks in order,
// so the launch Queue places before task t's first is done when the task
// holding it ends: the host waits for that task (whole tasks: it waits up
// to one task's time longer than a kernel-by-kernel queue would).
//
// With pre, a failed shortened play's program's first tasks (Fork's
// detached copy: queuePrefix), the walk starts after them when they are
// this program's first tasks as far as the walk reads them (kind, stream
// and issue time, under the same queue bound and per-kernel costs): their
// waits and lists are then the shortened program's (the walk over a task
// reads only the tasks before it), so their waits, self waits and list
// entries are copied and the walk goes on from the state they left
// (resumeQueues). Otherwise it walks every task. Copied ranges after that
// (Program.copies, an arena's program) take their waits, entries and self
// waits from their sources' entries, which the lists already hold, where
// every task of the range is a receive or has launches (copyQueues); the
// walk goes over the rest.
func (p *Program) setQueueWaits(h *HostModel, pre *queuePrefix) {
	p.queued = false
	p.qself, p.qrest = nil, nil
	p.qwalk, p.qfrom, p.qcopied, p.qbig = false, 0, 0, false
	p.qwide = nil
	if !p.Hosted || h.Queue <= 0 {
		for s := range p.queue {
			p.queue[s] = p.queue[s][:0]
		}
		return // the tasks keep their waits (none from a build)
	}
	// The walk reads and writes the played records alone (kind, stream,
	// issue; the queue wait), which hold the waits: half the bytes of
	// the Tasks (issue 18, build45).
	p.ensureHot()
	tasks := p.hot
	// Each stream's state lives in a local during the walk (through p,
	// every store would reload the lists), indexed by the stream masked
	// to the array's size (no bounds check), and its lists go back to p
	// at the end. The lists are sized once, for every task of the stream
	// (a few have no launches; Program.streamTasks), and filled by index
	// (appends checked the capacity per task).
	var st [streamSlots]streamQueue
	count := &p.streamTasks
	if sum := sumCounts(count); sum != int64(len(tasks)) {
		*count = [streamSlots]int32{}
		for i := range tasks {
			count[tasks[i].stream&(streamSlots-1)]++
		}
	}
	p.queueLists(&st, count)
	// Launches are counted in 1/launchScale: integer sums, the same
	// whatever the order they are added in, so that a unit's launches
	// repeat exactly (steady-state replication, hostRepeats).
	q := int64(h.Queue) * launchScale
	p.qlim = q
	// the per-kernel issue cost per queueClass: the walk computes
	// HostModel.launches without its kind tests (the class tells them
	// apart) and without h, one register fewer in the loop. It keeps no
	// cache of the last issue time's launches: on the 70B sweep no
	// compute task repeated the previous one's of its class (2.1 M
	// misses of 2.1 M, cachegrind), so the test and the stores were waste.
	perK := [2]int64{int64(h.KernelFwd), int64(h.KernelBwd)}
	p.qwalk, p.qperK = true, perK
	p.qnarrow = p.issueSumOK && p.keepHot && launchBound(p.issueSum, len(tasks), perK) < queueWide
	queued, start := false, 0
	if pre != nil {
		start, queued = p.resumeQueues(&st, pre, q, perK)
		p.qfrom = start
		p.qbig = start > 0 // (the prefix's tasks are not looked at)
	}
	// Copied ranges (Program.copies) whose launches the lists already
	// hold take their waits and entries from their sources' entries
	// (copyQueues); the walk goes over the tasks between them and the
	// ranges it refuses.
	t := start
	if cs := p.copies; len(cs) > 0 {
		var cur copyCursor
		var streams [NumStreams]Stream
		ns := 0
		for s := range streams {
			if count[s] > 0 {
				streams[ns] = Stream(s)
				ns++
			}
		}
		for k := 0; k < len(cs); {
			c := cs[k]
			if int(c.at) < t {
				k++ // in a prefix resumeQueues took
				continue
			}
			w := p.walkQueues(&st, t, int(c.at), q, perK)
			queued = w || queued
			t = int(c.at)
			m, w := p.copyQueues(&st, streams[:ns], cs[k:], q, &cur)
			if m == 0 {
				k++ // refused: the walk goes over it
				continue
			}
			queued = w || queued
			e := cs[k+m-1]
			t = int(e.at + e.n)
			p.qcopied += t - int(c.at)
			k += m
		}
	}
	w := p.walkQueues(&st, t, len(tasks), q, perK)
	queued = w || queued
	for s := range p.queue {
		p.queue[s] = st[s].q[:st[s].n]
	}
	p.queued = queued
}

// ensureHot gives a program that keeps no played records (made by hand:
// Build's keep them) records converted from its Tasks, with the waits its
// records held (none when it had none), so that the waits have a place.
func (p *Program) ensureHot() {
	if p.keepHot && len(p.hot) == len(p.Tasks) {
		return
	}
	h := make([]hotTask, len(p.Tasks))
	fillHot(h, nil, p)
	p.hot = h
}

// walkQueues walks tasks [from, to) of setQueueWaits, going on from the
// streams' state st after the tasks before from, and reports whether any
// of them waits. It sets every task's queue wait (0: none), appends each
// task of launches to its stream's list and records the self waits. From
// the first task whose stream's launches would reach queueWide (and in a
// program already past it) it keeps the exact ends in p.qwide and walks
// on in walkWide.
func (p *Program) walkQueues(st *[streamSlots]streamQueue, from, to int, q int64, perK [2]int64) (queued bool) {
	if p.qwide != nil {
		return p.walkWide(st, from, to, q, perK)
	}
	tasks := p.hot[:to] // the played records (setQueueWaits)
	// (t unsigned: tasks[t] needs no bounds check)
	for t := uint(from); t < uint(to); t++ {
		task := &tasks[t]
		task.queueAfter = 0
		c := queueClass[task.kind]
		if c == queueNone {
			continue
		}
		sq := &st[task.stream&(streamSlots-1)]
		k := int64(launchScale)
		if c != queueCall {
			k = 0
			if per := perK[c&1]; per > 0 {
				k = (int64(task.issue)*launchScale + per/2) / per
			}
		}
		if sq.done+k >= queueWide {
			// past what an entry holds: the rest exactly (≈ 3
			// instructions a task)
			p.widen(st)
			return p.walkWide(st, int(t), to, q, perK) || queued
		}
		// The launch `done - q` (0-based) must have finished before
		// this task's first launch: wait for the task holding it.
		// The search needs no bound check of its own: done > 0 here, so
		// some task added launches and the list has entries, and the
		// last ends at done or later (only an entry adds launches),
		// after first (the bound was two of the loop's ≈ 7 instructions
		// an entry, cachegrind).
		if first := sq.done - q; first >= 0 {
			q, i := sq.q, sq.head
			for q[i].end() <= first {
				i++
			}
			sq.head = i
			task.queueAfter = q[i].id + 1
			queued = true
		}
		if k > q {
			p.qbig = true
			// after a copied prefix, a stream the walk has not met since
			// has its previous task among the prefix's (prevMet)
			last := sq.prev()
			if int(last) <= p.qfrom {
				last = p.prevMet(p.qfrom, task.stream)
			}
			if last > 0 {
				p.queueSelf(int(t), last, task.issue, k, q)
				queued = true
			}
		}
		sq.done += k
		if k > 0 {
			i := sq.n
			sq.q[i] = qEntry(sq.done, int32(t))
			sq.n = i + 1
		} else {
			sq.last = int32(t) + 1
		}
	}
	return queued
}

// walkWide is walkQueues for a program whose lists' exact ends are in
// p.qwide (widen): it reads and writes the ends there, and the entries'
// ids and low words in the lists.
func (p *Program) walkWide(st *[streamSlots]streamQueue, from, to int, q int64, perK [2]int64) (queued bool) {
	w := p.qwide
	tasks := p.hot[:to] // the played records (setQueueWaits)
	// (t unsigned: tasks[t] needs no bounds check)
	for t := uint(from); t < uint(to); t++ {
		task := &tasks[t]
		task.queueAfter = 0
		c := queueClass[task.kind]
		if c == queueNone {
			continue
		}
		sq := &st[task.stream&(streamSlots-1)]
		k := int64(launchScale)
		if c != queueCall {
			k = 0
			if per := perK[c&1]; per > 0 {
				k = (int64(task.issue)*launchScale + per/2) / per
			}
		}
		// The launch `done - q` (0-based) must have finished before
		// this task's first launch: wait for the task holding it.
		// The search needs no bound check of its own: done > 0 here, so
		// some task added launches and the list has entries, and the
		// last ends at done or later (only an entry adds launches),
		// after first (the bound was two of the loop's ≈ 7 instructions
		// an entry, cachegrind).
		if first := sq.done - q; first >= 0 {
			q, e, i := sq.q, w.ends[task.stream&(streamSlots-1)], sq.head
			for e[i] <= first {
				i++
			}
			sq.head = i
			task.queueAfter = q[i].id + 1
			queued = true
		}
		if k > q {
			p.qbig = true
			// after a copied prefix, a stream the walk has not met since
			// has its previous task among the prefix's (prevMet)
			last := sq.prev()
			if int(last) <= p.qfrom {
				last = p.prevMet(p.qfrom, task.stream)
			}
			if last > 0 {
				p.queueSelf(int(t), last, task.issue, k, q)
				queued = true
			}
		}
		sq.done += k
		if k > 0 {
			i := sq.n
			sq.q[i] = qEntry(sq.done, int32(t))
			w.ends[task.stream&(streamSlots-1)][i] = sq.done
			sq.n = i + 1
		} else {
			sq.last = int32(t) + 1
		}
	}
	return queued
}

// widen gives p the exact ends of its lists' entries so far (the walk's
// state st), all under queueWide, in room for each stream's tasks
// (Program.qwide).
//
//go:noinline
func (p *Program) widen(st *[streamSlots]streamQueue) {
	w := &wideQueues{}
	for s := range w.ends {
		sq := &st[s]
		w.ends[s] = make([]int64, len(sq.q))
		for i, x := range sq.q[:sq.n] {
			w.ends[s][i] = x.end()
		}
	}
	p.qwide = w
}

// queueLists gives each stream's walk state its lists' storage, count[s]
// entries (contents unspecified): carved from the arena's pools for an
// arena's program, else the program's own, resized. A call of its own,
// not inlined: inside setQueueWaits the branches cost the walk's loop
// registers (+28 M instructions on -bench Sweep70BAll, cachegrind).
//
//go:noinline
func (p *Program) queueLists(st *[streamSlots]streamQueue, count *[streamSlots]int32) {
	for s := range p.queue {
		if a := p.arena; a != nil {
			st[s].q = a.queue.carve(int(count[s]))
		} else {
			st[s].q = resize(p.queue[s], int(count[s]))
		}
	}
}

// queueSelf records that task t, of k launches (in 1/launchScale) more
// than the queue's q, waits for task last-1 on its stream: its first
// k - q launches' share of its issue time comes after that task's end
// (qrest, rounded to the nanosecond). A call of its own, not inlined
// (few tasks outlaunch a queue): inside setQueueWaits, its floating-point
// constant was loaded again on the walk's every path (cachegrind).
//
//go:noinline
func (p *Program) queueSelf(t int, last int32, issue engine.Time, k, q int64) {
	if p.qself == nil {
		p.queueWaitBufs(len(p.Tasks))
	}
	p.qself[t] = last
	p.qrest[t] = engine.Time(float64(issue)*float64(k-q)/float64(k) + 0.5)
}

// queueWaitBufs sets qself and qrest to n cleared entries (from the
// arena's pools for an arena's program; queueLists says why not inlined).
//
//go:noinline
func (p *Program) queueWaitBufs(n int) {
	if a := p.arena; a != nil {
		p.qselfBuf, p.qrestBuf = a.qself.carve(n), a.qrest.carve(n)
	} else {
		p.qselfBuf, p.qrestBuf = resize(p.qselfBuf, n), resize(p.qrestBuf, n)
	}
	p.qself, p.qrest = p.qselfBuf, p.qrestBuf
	clear(p.qself)
	clear(p.qrest)
}

// sumCounts is the sum of a program's per-stream task counts.
func sumCounts(c *[streamSlots]int32) (s int64) {
	for _, v := range c {
		s += int64(v)
	}
	return s
}

// streamSlots is the power of two above NumStreams: setQueueWaits'
// per-stream state is indexed by a stream masked to it.
const streamSlots = 16

// streamQueue is one stream's launch queue during setQueueWaits: its
// list (Program.queue) and how many entries they hold, the oldest entry
// not yet known done, the launches before the task and 1 + the last task
// of no launches on the stream (0: none). The walk stores last on those
// tasks alone: the entries name every other, so the stream's previous
// task is the later of last and the newest entry's (prev), which only
// the rare task of more launches than the queue needs.
type streamQueue struct {
	q       []queueEntry
	n, head int
	done    int64
	last    int32
}

// prev is 1 + the last task the walk has met on the stream (0: none).
func (sq *streamQueue) prev() int32 {
	last := sq.last
	if n := sq.n; n > 0 {
		last = max(last, sq.q[n-1].id+1)
	}
	return last
}

// queueClass is how setQueueWaits counts a task kind's launches: a
// forward (queueFwd) or backward (queueBwd) compute task's from its
// Issue over the per-kernel cost (HostModel.launches), a collective,
// send or host copy as one call (queueCall); a receive is not issued
// (queueNone). It has an entry for every value of a Kind's byte, so
// indexing it needs no bounds check.
//
// Written out as static data rather than computed at init (start53: no
// init code, no page written at a process's start); every kind not named
// is queueFwd (0), and queueClassOf in statictables_test.go derives the table
// from the rule above (TestStaticTablesDerived).
var queueClass = [256]uint8{
	KindBackward: queueBwd, KindWGrad: queueBwd,
	KindAllReduce: queueCall, KindAllGather: queueCall, KindReduceScatter: queueCall,
	KindAllToAll: queueCall, KindSend: queueCall, KindHostCopy: queueCall,
	KindRecv: queueNone,
}

// queueClass values (queueFwd and queueBwd index lastIssue and lastK).
const (
	queueFwd = iota
	queueBwd
	queueCall
	queueNone
)

// launchScale is the fraction of a launch that launch queues count in
// (setQueueWaits).
const launchScale = 1 << 10

// launches is the launches of task t, of issue time issue, in
// 1/launchScale: a task of k kernels is k (its issue over the per-kernel
// cost), a collective, send or host copy one.
func (h *HostModel) launches(t *Task, issue engine.Time) int64 {
	if t.Kind.IsComm() || t.Kind == KindHostCopy {
		return launchScale
	}
	per := h.KernelFwd
	if t.Kind == KindBackward || t.Kind == KindWGrad {
		per = h.KernelBwd
	}
	if per <= 0 {
		return 0
	}
	return (int64(issue)*launchScale + int64(per)/2) / int64(per)
}

// queueIndex returns the index into queue[s] of the entry holding launch
// x (0-based, in 1/launchScale): the first whose launches end after x;
// len(queue[s]) when none does.
func (p *Program) queueIndex(s Stream, x int64) int {
	q := p.queue[s]
	lo, hi := 0, len(q)
	for lo < hi {
		m := (lo + hi) / 2
		if q[m].end() <= x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// queueBefore returns the launches of stream s before task t (in
// 1/launchScale).
func (p *Program) queueBefore(s Stream, t int32) int64 {
	q := p.queue[s]
	lo, hi := 0, len(q)
	for lo < hi {
		m := (lo + hi) / 2
		if q[m].id < t {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return 0
	}
	return q[lo-1].end()
}

// queueEntry is a launch-queue list's entry (Program.queue): the launches
// on the stream through task id (in 1/launchScale; end). One list of
// records, not one of ends and one of ids: setQueueWaits' append checks
// one length, and its lookup reads the id beside the end it compared.
//
// The end is kept in 32 bits, so that an entry is 8 bytes: an arena's
// queue lists hold an entry for nearly every task, and a sweep worker
// writes them up to its largest point's tasks, each page for the first
// time once (and a Fork's Detach copies a prefix's): 12 → 8 bytes a
// task, ≈ 400 fewer minor faults on the 70B sweep (issue 18, q851; 16 →
// 12 was faults41). An end is exact while its stream's launches stay
// under 2^32 (4,194,304 launches of a step's stage); a program whose
// walk passes that (setQueueWaits sets Program.qwide) keeps its exact
// ends beside the lists (wideQueues), and no reader but the walk reads
// its lists' ends: the host-repeat check, copied ranges and a Fork's
// prefix refuse it, their general paths giving the same answer.
type queueEntry struct {
	lo uint32 // the end, when under 2^32 (Program.qwide nil)
	id int32
}

// qEntry is the entry of end launches through task id; end is the
// entry's end when 0 <= end < 2^32.
func qEntry(end int64, id int32) queueEntry {
	return queueEntry{lo: uint32(end), id: id}
}

// end is the launches on the stream through the entry's task, when its
// program's walk kept them under 2^32 (Program.qwide nil).
func (e queueEntry) end() int64 { return int64(e.lo) }

// queueWide is the first count of launches (in 1/launchScale) a
// queueEntry does not hold.
const queueWide = 1 << 32

// launchBound bounds the launches (in 1/launchScale) of any stream of a
// program of n tasks whose issue times, receives' aside, add up to sum,
// with perK the per-kernel costs: a compute task's are its issue over
// its cost, rounded (≤ issue·launchScale/cost + 1), a call's launchScale.
// It is queueWide or more where it cannot tell (a sum of 2^40 or more).
func launchBound(sum engine.Time, n int, perK [2]int64) int64 {
	if sum < 0 || sum >= 1<<40 {
		return queueWide
	}
	b := int64(n) * (launchScale + 1)
	per := int64(0)
	for _, k := range perK {
		if k > 0 && (per == 0 || k < per) {
			per = k
		}
	}
	if per > 0 {
		b += int64(sum) * launchScale / per
	}
	return b
}

// wideQueues holds, for a program whose launches on some stream reach
// queueWide (Program.qwide), every list entry's exact end: ends[s][i] is
// Program.queue[s][i]'s.
type wideQueues struct {
	ends [streamSlots][]int64
}

// Deps returns task i's dependencies (indices into Tasks).
func (p *Program) Deps(i int) []int32 { return p.deps[p.depOff[i]:p.depOff[i+1]] }

// Succ returns the tasks that depend on task i.
func (p *Program) Succ(i int) []int32 { return p.succ[p.succOf[i]:p.succOf[i+1]] }

// finish builds the successor lists (Succ, each in task order) and the
// dependency counts from the dependency lists. The counts of task j's
// successors go to cnt[j+2], so that after the prefix sums cnt[j+1] is
// where j's list starts; filling the lists advances cnt[j+1] to where
// j+1's starts, which leaves cnt[:n+1] the lists' offsets without a copy.
//
// The loops read the program's slices through locals (through p, every
// store to a list reloaded them) and walk the dependencies as one run,
// task i's ending at off[i+1], instead of slicing each task's.
func (p *Program) finish() {
	n := len(p.Tasks)
	off := p.depOff[1 : n+1] // off[i] is where task i's dependencies end
	deps := p.deps[:0]
	if n > 0 {
		deps = p.deps[:off[n-1]]
	}
	var cnt, succ []int32
	if a := p.arena; a != nil {
		cnt, succ = a.succOf.carve(n+2), a.succList.carve(len(deps))
	} else {
		cnt, succ = resize(p.succOf, n+2), resize(p.succ, len(deps))
	}
	succLists(off, deps, cnt)
	fillSucc(off, deps, cnt, succ)
	p.succOf, p.succ = cnt[:n+1], succ
}

// depCount is how many dependencies task t has (its entry in depOff's
// differences: the build keeps no count of its own, which finish's walk
// would have to write for every task).
func (p *Program) depCount(t int) int32 { return p.depOff[t+1] - p.depOff[t] }

// succLists is finish's counting walks, given its storage: task i's
// dependencies end at off[i] (deps[:off[len(off)-1]] all of them), cnt
// has room for len(off)+2 entries. It leaves cnt[j+1] where task j's
// successor list starts; a dependency outside [0, len(off)) panics (an index out of
// range), so that fillSucc, run after it on the same lists, may index
// without checks. It is a function of its own, not inlined, with no
// calls: inside finish (whose storage comes from calls), the compiler
// kept the walks' values on the stack and reloaded three of them for
// every dependency (cachegrind, the 70B sweep: 11.7 M dependencies, 6.1 M
// tasks); with fillSucc's call at its end, it spilled the prefix sums'
// values (+12 M).
//
//go:noinline
func succLists(off, deps, cnt []int32) {
	// countSucc's unchecked increments read each index again after its
	// or tested it: the counts must not overlap the dependencies (finish's
	// never do: its own storage), or an increment could change one in
	// between. (Checked here: inside countSucc, the check's code moved the
	// loop's layout and the assembler padded two jumps in it, +3.8 M.)
	if dp, cp := unsafe.Pointer(unsafe.SliceData(deps)), unsafe.Pointer(unsafe.SliceData(cnt)); len(deps) > 0 && len(cnt) > 0 &&
		uintptr(dp) < uintptr(cp)+uintptr(len(cnt))*4 && uintptr(cp) < uintptr(dp)+uintptr(len(deps))*4 {
		panic("parallel: successor counts overlap the dependencies")
	}
	clear(cnt)
	counts := cnt[2:] // task j's successors counted at cnt[j+2]
	// Four dependencies an iteration (the loop's own load, compare and
	// branch were half its instructions: 93.7 M → 79 M on the 70B sweep);
	// each count's index is checked, so a dependency outside the program
	// panics here (a negative one, read as a uint32, is past the end).
	// The four loads go through unsafe.Add at byte offset k < n4 ≤
	// 4·len(deps), so every word read lies in deps: walked by re-slicing
	// (d = d[4:]) the loop kept a pointer, a length and a capacity (9
	// instructions an iteration of its own), with indices (deps[i+3]) the
	// loads' bounds checks, and with int32 loads the compiler computed
	// each address in two instructions before a sign-extending load
	// (≈ 25 → 20 instructions a run of four; build28).
	//
	// The four indices are tested together: their bitwise or is at least
	// the largest of them, so when it is below len(counts) every one is,
	// and the counts are incremented through unsafe.Add without a test
	// each; otherwise (a dependency near the program's end whose bits the
	// others' widen, or one outside it) each is checked as before. A
	// task's dependencies lie close to it, so the or rarely exceeds the
	// largest by more than a few low bits (≈ 15 k of the 1.89 M runs of
	// four on the 70B sweep are checked): 20 → 17 instructions a run (the
	// four compares and branches against three ors, one compare and one
	// branch; the indices are loaded twice), succLists 52.9 → 15.0 +
	// countSucc 32.9 M (lists48).
	countSucc(deps, counts)
	// The prefix sums (cnt[0] and cnt[1] stay 0). The dependency counts,
	// once written here for every task (≈ 25 M instructions on the 70B
	// sweep), are depOff's differences (depCount, fillNeedOf). Four
	// tasks an iteration, through unsafe.Add at k < c4 ≤ 4·len(c): one
	// at a time the loop cost 7 instructions a task, here ≈ 15 a run of
	// four (42 → 23 M on the 70B sweep; build28).
	var sum int32
	c := counts[:len(off)]
	cp := unsafe.Pointer(unsafe.SliceData(c))
	c4 := uintptr(len(c)&^3) * 4
	for k := uintptr(0); k < c4; k += 16 {
		q := unsafe.Add(cp, k)
		s0 := sum + *(*int32)(q)
		s1 := s0 + *(*int32)(unsafe.Add(q, 4))
		s2 := s1 + *(*int32)(unsafe.Add(q, 8))
		sum = s2 + *(*int32)(unsafe.Add(q, 12))
		*(*int32)(q), *(*int32)(unsafe.Add(q, 4)) = s0, s1
		*(*int32)(unsafe.Add(q, 8)), *(*int32)(unsafe.Add(q, 12)) = s2, sum
	}
	for i := int(c4 / 4); i < len(c); i++ {
		sum += c[i]
		c[i] = sum
	}
}

// countSucc adds to counts[j] one for each dependency j in deps (succLists'
// counting walk; one outside counts panics), counts not overlapping deps
// (succLists checks). A function of its own, so
// that none of succLists' values for its prefix sums is live across the
// loop: with them, the compiler spilled two of the four indices a run.
//
//go:noinline
func countSucc(deps, counts []int32) {
	dp := unsafe.Pointer(unsafe.SliceData(deps))
	cp := unsafe.Pointer(unsafe.SliceData(counts))
	lim := uint32(min(len(counts), math.MaxUint32))
	n4 := uintptr(len(deps)&^3) * 4
	k := uintptr(0)
	for k < n4 {
		for ; k < n4; k += 16 {
			q := unsafe.Add(dp, k)
			if *(*uint32)(q)|*(*uint32)(unsafe.Add(q, 4))|*(*uint32)(unsafe.Add(q, 8))|*(*uint32)(unsafe.Add(q, 12)) >= lim {
				break
			}
			// each index loaded again after the store before it (the
			// compiler cannot keep the or's loads across a store that may
			// alias them: kept in registers, two were spilled instead)
			*(*int32)(unsafe.Add(cp, uintptr(*(*uint32)(q))*4))++
			*(*int32)(unsafe.Add(cp, uintptr(*(*uint32)(unsafe.Add(q, 4)))*4))++
			*(*int32)(unsafe.Add(cp, uintptr(*(*uint32)(unsafe.Add(q, 8)))*4))++
			*(*int32)(unsafe.Add(cp, uintptr(*(*uint32)(unsafe.Add(q, 12)))*4))++
		}
		if k < n4 { // four whose or is not below len(counts): each checked
			for _, j := range deps[k/4 : k/4+4] {
				counts[j]++
			}
			k += 16
		}
	}
	for _, j := range deps[k/4:] {
		counts[j]++
	}
}

// fillSucc fills the successor lists in task order, after succLists on
// the same off, deps and cnt: next (cnt[1:]) holds where each list starts,
// and next[j] is advanced past each successor put in j's list, which
// leaves cnt[:len(off)+1] the lists' offsets. It reads and writes through
// unsafe.Add, without bounds checks, and every access lies in its slice:
// each task's end is checked against len(deps) (malformed panics), so
// every k read is below it, and each is read at most once; every
// dependency j lies in [0, len(off)) (succLists' checked count), so
// next[j] is in cnt; j's slot starts at the count of the successors of
// the tasks before j and advances at most as many times as j is listed,
// so c < len(deps) ≤ len(succ) (checked on entry, with cnt's length and
// total). The bounds checks of deps[k], next[j] and succ[c] were 6 of
// ≈ 17 instructions a dependency, and the registers their lengths took
// made the loop reload off from the stack on every one; bounds-checked, a
// walk over all the dependencies with a check for the task's end per
// dependency cost 23 instructions a dependency against 18, and ranging
// over each task's deps[k:e] made the compiler reload three values per
// dependency. The inner loop is entered only for a task with dependencies
// and tests its end at the bottom: as a for loop with its test on top,
// its layout put the assembler's padding (a NOP that keeps a jump off a
// 32-byte boundary) inside the loop, run once a dependency (9
// instructions a dependency against 8: fillSucc 160.2 → 148.4 M on the
// 70B sweep; build28). Padding follows the code's layout, so a later
// change may bring it back: count the loop's instructions (go build
// -gcflags=-S) after editing it. A task's end is compared with k first
// and checked only for a task with dependencies (an end past len(deps) is
// past k ≤ len(deps), so no malformed end is skipped); the loop panics
// itself (malformedAt) instead of calling malformed, so the compiler
// moves the branch out of the loop and spills nothing around it (the call
// had put it, and a NOP of padding, inside); and the slot is advanced in
// place (`*at++` after the store through it: its second load is not
// folded into the first, and the increment becomes one INCL on memory):
// 10 instructions a task + 8 a dependency → 9 + 7, fillSucc 96.3 → 88.5 M
// on the 70B sweep (3.96 M tasks, 7.58 M dependencies; post48).
//
//go:noinline
func fillSucc(off, deps, cnt, succ []int32) {
	if len(cnt) != len(off)+2 || int(cnt[len(off)+1]) != len(deps) || len(succ) < len(deps) {
		malformed(len(off), len(deps), -1)
	}
	next := cnt[1:]
	if len(deps) == 0 {
		return
	}
	dp := unsafe.Pointer(unsafe.SliceData(deps))
	np := unsafe.Pointer(unsafe.SliceData(next))
	sp := unsafe.Pointer(unsafe.SliceData(succ))
	k := uintptr(0)
	for t, e := range off {
		end := uintptr(uint32(e))
		if k >= end {
			continue
		}
		if end > uintptr(len(deps)) {
			panic(malformedAt(len(off), len(deps), t))
		}
		for {
			j := uintptr(*(*uint32)(unsafe.Add(dp, k*4)))
			at := (*uint32)(unsafe.Add(np, j*4))
			*(*int32)(unsafe.Add(sp, uintptr(*at)*4)) = int32(t)
			*at++
			if k++; k == end {
				break
			}
		}
	}
}

// malformed panics on dependency lists that are not a program's
// (fillSucc): task t's dependencies end outside them (t ≥ 0), or the
// lists' storage does not fit them.
//
//go:noinline
func malformed(tasks, deps, t int) {
	panic(malformedAt(tasks, deps, t))
}

// malformedAt is malformed's message (a value: fillSucc's loop panics with
// it itself, so that the compiler knows the branch does not come back and
// keeps the loop's values in registers across it).
func malformedAt(tasks, deps, t int) string {
	if t >= 0 {
		return fmt.Sprintf("parallel: task %d of %d: its dependencies end past the %d listed", t, tasks, deps)
	}
	return fmt.Sprintf("parallel: successor lists of %d tasks: storage does not fit %d dependencies", tasks, deps)
}

// Overlap says which communication the frameworks overlap with compute.
type Overlap struct {
	GradReduce  bool // DP gradient reduction in buckets under the backward pass
	ParamGather bool // ZeRO parameter all-gathers prefetched ahead of use
	TPComm      bool // TP collectives overlapped with the neighbouring GEMMs
	// TPBwd is Megatron's asynchronous TP communication in the backward
	// of a column-parallel linear (builder.tpAsyncBackward); it applies
	// where TPComm does not and TP is Megatron's (not TPImplDTensor).
	TPBwd bool
	P2P   bool // pipeline sends do not block the compute stream
	EP    bool // MoE all-to-alls overlapped with expert compute
}

// StepConfig is everything the task-graph builder needs.
type StepConfig struct {
	Layout    *Layout
	Model     workload.Model
	Shape     workload.Shape // per-GPU problem: micro-batch, sequence, dtype, split
	Recompute workload.Recompute
	// RecomputeEvery applies full recomputation only to every k-th layer
	// of each pipeline rank, counted in model order
	// (workload.RecomputesLayer); 0 or 1 = every layer.
	RecomputeEvery int
	// Schedule is the pipeline schedule (nil: 1F1B); it places the model
	// chunks and orders each stage's steps. Chunks must be cut for its
	// placement (Place).
	Schedule     pipeline.Schedule
	Virtual      int
	Microbatches int // per pipeline per step
	// DeviceClass is, per pipeline stage, which GPU type prices its
	// compute (Pricer.OpsTime): stages of one class price alike. nil or
	// all 0 on a homogeneous cluster.
	DeviceClass []int
	Chunks      [][]Chunk
	Zero        int
	Optimizer   string
	ParamDtype  workload.Dtype // the weight copy the parameter all-gathers move and the optimizer writes (bf16 for FP8 training unless fp8_param_gather)
	GradDtype   workload.Dtype
	MasterDtype workload.Dtype
	StateDtype  workload.Dtype // the optimizer states' dtype (MasterDtype unless narrower)
	Overlap     Overlap
	// TPImplDTensor prices tensor parallelism as PyTorch DTensor runs it on
	// batch-first [b, s, h] activations (torchtitan). With sequence
	// parallelism a sequence all-gather is an all-gather along dim 0
	// followed by torch.cat(torch.chunk(...), dim=1), and a reduce-scatter
	// along the sequence is preceded by the reverse cat
	// (torch/distributed/_functional_collectives.py all_gather_tensor /
	// reduce_scatter_tensor with a dim other than 0): one extra read and
	// write of the gathered tensor per collective. torchtitan notes the
	// cost and does not fold batch and sequence (parallelize_llama.py at
	// 9dec370 and 820504e, "we can accelerate Sequence Parallel by folding
	// ... the batch dimension and the sequence dimension", PR #437, which
	// measured the two cats at 0.18 ms of a 3 ms FFN). AsyncTP's fused
	// all-gather-matmul and matmul-reduce-scatter need no copies, but
	// PyTorch's micro-pipeline pass fuses a reduce-scatter only when its
	// input is a matmul output; the backward input gradient of torchtitan's
	// separate q/k/v and w1/w3 projections is a sum of matmuls, so that
	// reduce-scatter runs after the whole block's backward, exposed.
	// The fused ops move data by copy-engine p2p copies (no SMs) and add a
	// shard copy per all-gather and a partial-sum reduction per forward
	// reduce-scatter on the compute stream (builder.go asyncTPGather,
	// asyncTPReduce; package documentation, "PyTorch AsyncTP").
	TPImplDTensor bool
	// TPLogitsReplicated all-gathers the LM head's vocabulary-sharded
	// logits over the TP group after the output layer's forward, one call
	// per micro-batch of micro-batch·seq/cp·V·(16-bit) bytes (nccl-tests
	// size: the gathered tensor), as DTensor's ColwiseParallel(
	// output_layouts=Replicate()) does before a loss computed on every TP
	// rank over the whole vocabulary (KempnerForge's output head); the
	// backward needs no collective (the replicated gradient is sliced to
	// the shard). The cross-entropy over tok·V logits and the gather's
	// concatenation copy are the output layer's ops
	// (workload.Shape.ReplicatedLogits). No effect without TP.
	TPLogitsReplicated bool
	// TPEmbeddingReplicated keeps the input embedding whole on every TP
	// rank instead of splitting its vocabulary (KempnerForge's TP plan:
	// "Token embedding: Replicated", distributed/tensor_parallel.py): its
	// parameters, gradients, optimizer states and ZeRO/FSDP collectives
	// are the whole table's, its forward ends without a TP collective (the
	// replicated output's SequenceParallel redistribution to the sequence
	// shard is a local slice) and its backward starts with an all-gather
	// of the sequence-sharded output gradient (the redistribution's
	// backward), one b·s·h tensor per micro-batch. Without sequence
	// parallelism neither pass needs a collective. No effect without TP.
	TPEmbeddingReplicated bool
	// RecomputeToOutput says that full recomputation reruns each layer's
	// forward to the layer's output, the MLP's closing TP reduce-scatter
	// (all-reduce without sequence parallelism) included, as a reentrant
	// checkpoint does: Megatron-Core's tensor_parallel.CheckpointFunction
	// (megatron/core/tensor_parallel/random.py @ d98e8a6: backward reruns
	// run_function, then torch.autograd.backward(outputs, grads)), Transformer
	// Engine's distributed.checkpoint (use_reentrant default True), which
	// Megatron-Core uses under FP8/FP4 (megatron/core/recompute.py @ d98e8a6),
	// and DeepSpeed's activation checkpointing. False is PyTorch's
	// non-reentrant checkpoint (torchtitan's checkpoint_wrapper): it stops
	// the recomputation once every saved tensor is recomputed
	// (torch/utils/checkpoint.py set_checkpoint_early_stop, on by default),
	// before the closing reduction, whose backward needs no saved tensor.
	// Set by the scenario's training.recompute_reentrant.
	RecomputeToOutput bool
	// EPBackend is the library running the MoE dispatch and combine
	// (epdispatch.go). EPNCCL, the zero value, is an all-to-all of
	// tokens × top-k rows at the compute width; DeepEP and HybridEP send
	// each token once per destination rank in bf16 (a2aBytes), and the
	// pricer times them with EPDispatch.
	EPBackend EPBackend
	// Zero3GatherParams is the most parameters one ZeRO-3 parameter
	// all-gather call moves, the framework's call granularity: 0 gathers
	// each layer in one call (PyTorch FSDP1/FSDP2 and Megatron-FSDP: one
	// flat parameter per wrapped unit, a transformer block); DeepSpeed
	// stage 3 gathers by its prefetch bucket (stage3_prefetch_bucket_size,
	// 5e7 elements by default), so a layer of P parameters takes
	// ⌈P / bucket⌉ calls of P/⌈P/bucket⌉ each (see fsdpGather), every one
	// paying a collective's launch and ring latency.
	Zero3GatherParams float64
	// Zero3GradSyncLast makes ZeRO-3 reduce-scatter each layer's
	// gradients on the step's last micro-batch only: PyTorch FSDP2 with
	// set_requires_gradient_sync(False) on the other micro-batches (FSDP1's
	// no_sync), which accumulates the unsharded gradient (in the reduce
	// dtype) instead of reducing it every micro-batch. The parameter
	// all-gathers are unchanged: reshard_after_forward/backward still free
	// the gathered parameters, so every micro-batch gathers them again.
	// False (the default) reduce-scatters every micro-batch.
	Zero3GradSyncLast bool
	// Zero3BackwardPrefetch issues each ZeRO-3 backward parameter
	// all-gather one unit ahead, before the current unit's gradient
	// reduce-scatter (builder.go bwdPrefetch), when Overlap.ParamGather
	// prefetches. Off (the default) issues it when its unit's backward
	// begins, behind the previous unit's reduce-scatter on the DP stream.
	// No scenario field sets it yet: docs/validation.md round 16
	// (helper fsdp16b) has what it does to the validation and holdout.
	Zero3BackwardPrefetch bool
	// FSDPVersion prices the memory-bound copies PyTorch FSDP makes around
	// its ZeRO-3 collectives (builder.go fsdpCopyOut, fsdpGradCopies): 1
	// FSDP1's flat parameter, 2 FSDP2's per-parameter sharding; 0 prices
	// none (DeepSpeed stage 3, Megatron-FSDP, or zero < 3).
	FSDPVersion int
	// DDPGradCopy prices the copies PyTorch DistributedDataParallel's
	// reducer makes with gradient_as_bucket_view=False, its default
	// (pytorch/pytorch torch/csrc/distributed/c10d/reducer.cpp, 2.x):
	// on the step's last micro-batch each gradient, once ready, is copied
	// into its bucket while divided by the world size
	// (mark_variable_ready_dense: at::mul_out(bucket_view, grad, 1/dp),
	// read and write G bytes per parameter on the compute stream, before
	// its bucket's all-reduce), and once every bucket is reduced
	// finalize_backward copies each bucket view back into .grad
	// (finalize_bucket_dense: copy_bucket_to_grad, read and write G), after
	// the last all-reduce and before the optimizer. builder.go gradReady
	// and flushBucket add them (ddp_grad_copy_in, ddp_grad_copy_out); only
	// with zero 0 and more than one DP rank. False prices neither
	// (Megatron's and DeepSpeed's contiguous gradient buffers reduce in
	// place; Thunder's DDP transform keeps no bucket copy).
	DDPGradCopy bool
	// GEMMSMs is the SM count a GEMM's output tiles (workload.GEMMTiles)
	// must reach to fill a persistent grid (Task.GEMMShare counts only
	// those GEMMs; smaller ones of more than GEMMSMs/2 tiles are band GEMMs,
	// blockCache.bandTiles): the GPU's SMs. 0 counts every GEMM.
	GEMMSMs int
	// BucketParams is the DP gradient bucket size in parameters; 0 picks
	// Megatron-LM's default max(40M, 1M·dp) (megatron/core/distributed/
	// distributed_data_parallel_config.py, bucket_size).
	BucketParams float64
	Steps        int
	// LayerParams returns layer l's parameters over the whole model: dense
	// (attention, norms, dense MLP, router, shared experts) and routed experts.
	LayerParams func(l int) (dense, expert float64)
	// MoEHostSync is the time the compute stream idles in every MoE
	// layer's forward per micro-batch (and its recomputed forward under
	// full recomputation), after the router: a dropless dispatch copies the token counts to the host
	// (input/output splits of the all-to-all, the grouped GEMM's m-splits)
	// and the host, blocked until the router's kernels finish, then issues
	// the rest of the layer (Megatron-Core token_dispatcher.py: "A
	// synchronization is needed before expert parallel AlltoAll
	// communication to get the input_splits and output_splits CPU values";
	// HybridEP: "None means no up-bound, will cause a CPU sync"). 0 = no
	// stall: token dropping with padding to capacity, or a sync-free
	// dispatch under whole-iteration CUDA graphs.
	MoEHostSync engine.Time
	// UnpadHostSync is the time the compute stream idles per layer forward
	// (and recomputed forward) for the host synchronisations of an
	// unpadded attention path (workload.Shape.AttentionUnpad): flash-attn's
	// bert_padding.unpad_input calls torch.nonzero and .item() on each of
	// Q, K and V. 0 = none.
	UnpadHostSync engine.Time
	// PipeEngineSync is the time the compute stream idles per host
	// synchronisation of DeepSpeed's pipeline engine as Megatron-DeepSpeed
	// drives it (pp > 1): loading a micro-batch on the first and last
	// stages, and, with TP, reading the metadata of the TP-partitioned
	// activations and gradients it sends between stages (dsLoadSyncs,
	// the builder's pipe* functions give the counts and their sources). 0
	// = Megatron's schedules, which read nothing back per micro-batch.
	PipeEngineSync engine.Time
	// LayerHostSync makes the host thread wait, in every layer forward and
	// recomputed forward, between the attention's TP reduction and the
	// MLP, until the compute stream has run everything before: Megatron-
	// DeepSpeed's ParallelTransformerLayer.forward creates moe_loss and
	// mlp_bias with torch.tensor(0.0, device=...) on every call
	// (megatron/model/transformer.py @ 99d1eead and cc3a94c6), a blocking
	// host-to-device copy (cudaMemcpyAsync then cudaStreamSynchronize,
	// pytorch/pytorch#120996). No fixed stall: the GPU idles for the
	// re-issue of what follows (hostSync with Dur 0); without a host
	// thread cost (CUDA graphs) it exposes nothing.
	LayerHostSync bool
	// LossReadback is the time the compute stream idles, on the stage that
	// computes the loss, before each micro-batch's backward while the
	// training loop reads the loss back to the host (a blocking .item():
	// DeepSpeedEngine.backward from v0.9.3 to v0.13.2 runs
	// loss.mean().item() on every call; deepspeed/runtime/engine.py,
	// removed by deepspeedai/DeepSpeed#5135). 0 = nothing read per
	// micro-batch.
	LossReadback engine.Time
	// LossReadbackAfter moves that read after the backward of the model
	// chunk that computes the loss: the Hugging Face Trainer's
	// _inner_training_loop tests torch.isnan(tr_loss_step) or
	// torch.isinf(tr_loss_step) (logging_nan_inf_filter, default True)
	// once training_step (forward and backward) has returned, so the host
	// waits for the whole backward before it issues the next micro-batch.
	// false = before the backward (DeepSpeed's engine).
	LossReadbackAfter bool
	// GradBucketSync is the time the compute stream idles before each DP
	// gradient bucket's reduction (ZeRO 0-2) while the host reads the
	// bucket's gradient norm back: Megatron-Core's start_grad_sync, with
	// check_for_nan_in_grad, runs `assert not grad_data.norm(p=2).isnan()`
	// before every bucket's all-reduce or reduce-scatter
	// (megatron/core/distributed/param_and_grad_buffer.py @ core_r0.8.0,
	// lines 109-118), from the backward hook that finds the bucket
	// complete, so the host waits for the backward issued so far. 0 = no
	// read.
	GradBucketSync engine.Time
	// HostH2D and HostD2H are the GPU's pinned host copy bandwidths
	// (bytes/s, hardware.GPU.HostCopy) that offloading's copies run at;
	// zero when nothing is offloaded.
	HostH2D, HostD2H float64
	// Arena, when set, is the storage the programs are built in and the
	// symmetric executor of them plays in (Arena); nil allocates afresh.
	Arena *Arena
	// OffloadOptimizer keeps this rank's master weights and optimizer
	// states in host memory outside the optimizer step
	// (training.offload_optimizer): reloaded after the backward, before
	// the step, and offloaded again after it.
	OffloadOptimizer bool
	// LogOptimizerStates adds, after the optimizer step, the statistics
	// Megatron-DeepSpeed's --log-optimizer-states-to-tensorboard computes
	// on every rank every iteration (megatron/training.py training_log @
	// cc3a94c6 and 99d1eead, --tensorboard-log-interval default 1): over
	// the optimizer's flat partition (its param_groups' fp32 master
	// tensors), the L2 and L1 norms of exp_avg_sq, exp_avg_sq.sqrt(),
	// exp_avg and the weights, the max and min of exp_avg_sq, exp_avg and
	// the weights, and exp_avg_sq.sqrt().abs_().max(), each read back with
	// .item(): optStatsReads passes over a state-sized tensor and
	// optStatsWrites written (the two sqrt() temporaries and abs_), plus
	// optStatsParamReads over the master weights.
	LogOptimizerStates bool
	// OptimizerTensors > 0: the optimizer is a Python loop over that many
	// parameter tensors (training.optimizer_tensors), priced by
	// optimizerLoopOps; 0 is one fused pass (optimizerOp).
	OptimizerTensors int
	// OptimizerLoopTorch: the loop is torch.optim's single-tensor
	// Adam/AdamW (training.optimizer_loop: torch), not transformers.AdamW;
	// optimizerLoopOps adds its kernels.
	OptimizerLoopTorch bool
	// Interrupt, when set, is polled while the programs are built (every
	// 16,384 tasks and between stages); a non-nil error, such as a
	// cancelled context's, stops Build, which returns it.
	Interrupt func() error
	// StageCut, when On, stops the build at the first stage whose
	// computation is over its Limit (StageCut says how it is counted):
	// BuildAfter then returns a *ComputeOverError, and the later stages
	// are not built. For a step that is not to be played when it cannot
	// end by then (a search's cutoff, sim/simulation Options.StepCutoffS).
	StageCut StageCut
	// EmitEveryLayer turns layer copying (layercopy.go) and pass copying
	// (passcopy.go) off: every layer is emitted block by block. For tests
	// that hold the copies equal.
	EmitEveryLayer bool
	// EmitEveryPass turns pass copying off (passcopy.go): every pass is
	// emitted (its layers still copied unless EmitEveryLayer, which turns
	// both off). For tests that hold the copies equal.
	EmitEveryPass bool
	// Host is the rank's host thread; the zero value issues everything at
	// once (no host model).
	Host HostModel
}

// HostModel is the rank's host thread: one CPU thread issues the rank's
// tasks in program order, each costing host time (Task.Issue), and a task
// cannot start on the GPU before its issue ends. The thread runs ahead of
// the GPU as far as it likes, except where it waits for the GPU: after a
// host synchronisation (KindHostSync: it reads what the kernels before
// the sync computed) and at the step boundary (after the optimizer step:
// the frameworks read the loss, the gradient norm or the overflow flag
// back to the host). Small kernels, many-op layers and short micro-batches
// become host-bound. Costs come from the dispatch class of the framework
// (sim/hardware data/host.yaml).
type HostModel struct {
	On bool
	// KernelFwd is the host time per kernel of a forward, recomputed
	// forward or optimizer task; KernelBwd per kernel of a backward or
	// weight-gradient task.
	KernelFwd, KernelBwd engine.Time
	// Call is the host time of one collective, pipeline send or host copy.
	Call engine.Time
	// Queue is how many launches a stream holds issued but not finished
	// before a launch blocks the host (hardware.LaunchQueueDepth); 0: no
	// bound.
	Queue int
}

func (c *StepConfig) interrupted() error {
	if c.Interrupt == nil {
		return nil
	}
	return c.Interrupt()
}

// Pricer turns work into time. The builder asks for every compute block and,
// for the analytic executor, every collective.
type Pricer interface {
	// OpsTime is the time of ops run back to back on one GPU of pipeline
	// stage `stage` (the slowest of its GPUs when a heterogeneous cluster
	// places the stage's ranks on several types). ops is the caller's
	// scratch: an implementation must not keep it after the call.
	OpsTime(stage int, ops []workload.Op) engine.Time
	// CommTime is the closed-form time of op moving bytes on a kind-k group of
	// pipeline stage `stage` (the slowest such group when they differ).
	CommTime(k GroupKind, stage int, op collectives.Op, bytes units.Bytes) engine.Time
	// SendTime is the time to send bytes from a rank of stage `from` to the
	// corresponding rank of stage `to`; it must depend on its arguments
	// only (a build asks once per stage pair and size: builder.sendTime).
	SendTime(from, to int, bytes units.Bytes) engine.Time
}

// Build returns one program per pipeline stage.
func Build(cfg *StepConfig, pr Pricer) ([]*Program, error) {
	return BuildAfter(cfg, pr, nil)
}

// BuildAfter is Build after a failed shortened play whose programs from
// saved and Detach copied (nil: none): each program's launch-queue walk
// starts after the shortened program's common prefix when the two agree
// on it as the walk reads it (setQueueWaits, Fork.queuePrefix). The
// programs equal Build's.
func BuildAfter(cfg *StepConfig, pr Pricer, from *Fork) ([]*Program, error) {
	// The structure key of cfg as given (before the defaults below), to
	// re-price the arena's last build when it has the same (reprice.go).
	var key uint64
	var keyed bool
	if a := cfg.Arena; a != nil {
		key, keyed = cfg.StructureKey()
		hit := keyed && a.rpKeyed && a.rpKey == key && from == nil
		a.builds++        // (every build: the kept prefixes are the last one's, prefixkeep.go)
		a.rpKeyed = false // until this build ends well
		progs, err := buildAfter(cfg, pr, from, hit)
		a.keep.want = a.keep.want[:0] // asked of this build only (a re-priced one keeps none)
		if err == nil {
			a.rpKey, a.rpKeyed = key, keyed
		}
		return progs, err
	}
	return buildAfter(cfg, pr, from, false)
}

// buildAfter is BuildAfter's build; with reprice, the arena's last build
// has cfg's structure key and is re-priced when it can be (repriceBuild),
// else built afresh.
func buildAfter(cfg *StepConfig, pr Pricer, from *Fork, reprice bool) ([]*Program, error) {
	if cfg.Steps < 1 {
		cfg.Steps = 1
	}
	if cfg.Virtual < 1 {
		cfg.Virtual = 1
	}
	l := cfg.Layout
	if cfg.BucketParams <= 0 {
		cfg.BucketParams = max(40e6, 1e6*float64(l.GroupSize(GroupDP)))
	}
	cfg.Schedule = pipeline.Of(cfg.Schedule)
	shape := pipeline.Shape{Stages: l.PP, Microbatches: cfg.Microbatches, Virtual: cfg.Virtual}
	place := cfg.Schedule.Placement(shape)
	if len(cfg.Chunks) != place.Stages {
		return nil, fmt.Errorf("pipeline: %d stages of chunks for schedule %s on pp %d", len(cfg.Chunks), cfg.Schedule.Name(), l.PP)
	}
	if err := checkNarrow(cfg.Steps, place.Chunks); err != nil {
		return nil, err
	}
	for s, ch := range cfg.Chunks {
		if len(ch) != place.Chunks {
			return nil, fmt.Errorf("pipeline: stage %d has %d chunks, schedule %s places %d", s, len(ch), cfg.Schedule.Name(), place.Chunks)
		}
	}
	// One table of block costs per device class: stages of one class
	// price every block alike.
	var caches []*blockCache
	progs := make([]*Program, l.PP)
	var b *builder
	if cfg.Arena != nil {
		b = &cfg.Arena.builder // a fresh builder, in the arena's storage (Arena.builder)
		b.restart(cfg, pr, place, &cfg.Arena.names, cfg.Arena.passMarks)
	} else {
		b = &builder{cfg: cfg, pr: pr, place: place, names: new(nameCache)}
	}
	// A failed shortened play's kept prefixes (prefixkeep.go): taken out
	// of the last build's programs before this build reuses their storage;
	// this build, re-pricing or not, keeps its own where KeepPrefixes asked.
	var resume bool
	var want []int
	var keep *prefixKeep
	if a := cfg.Arena; a != nil {
		keep = &a.keep
		keep.resumed = 0
		resume = from != nil && a.keptPrefixes(cfg, pr, from, place, l.PP)
		want, keep.want = keep.want, nil
		for len(keep.stages) < l.PP {
			keep.stages = append(keep.stages, keptStage{})
		}
	}
	if reprice {
		progs, ok, err := cfg.Arena.repriceBuild(cfg, pr, place, shape, b, want)
		if err != nil {
			return nil, err
		}
		if ok {
			keep.want = want[:0]
			keep.build = cfg.Arena.builds
			keep.keepConfig(cfg, pr)
			return progs, nil
		}
		b.restart(cfg, pr, place, &cfg.Arena.names, cfg.Arena.passMarks) // afresh
	}
	var pq queuePrefix
	for s := 0; s < l.PP; s++ {
		caches, b.cache = cfg.Arena.stageBlockCache(caches, cfg, pr, s)
		var prog *Program
		switch {
		case cfg.Arena != nil:
			prog = cfg.Arena.program(s, from)
		case s > 0:
			// Stages hold similar numbers of tasks: start each at the
			// size of the first instead of growing it by appends.
			q := progs[0]
			prog = &Program{Stage: s, Tasks: make([]Task, 0, len(q.Tasks)+len(q.Tasks)/8), hot: make([]hotTask, 0, len(q.Tasks)+len(q.Tasks)/8),
				deps: make([]int32, 0, len(q.deps)+len(q.deps)/8), depOff: make([]int32, 0, len(q.depOff)+len(q.depOff)/8), keepHot: true}
		default:
			prog = &Program{Stage: s, keepHot: true}
		}
		b.reset(s, prog, cfg.Arena.order(cfg.Schedule, shape, s))
		if keep != nil {
			if resume {
				b.resumeFrom, b.resumeKS = from, &keep.stages[s]
			}
			b.keepTo = &keep.stages[s] // emptied once the resume read it, kept again at keepAt
			if s < len(want) && want[s] > 0 {
				b.keepAt = want[s]
			}
		}
		if err := b.build(); err != nil {
			return nil, err
		}
		if err := cfg.interrupted(); err != nil {
			return nil, err
		}
		if err := cfg.StageCut.over(b.prog, place); err != nil {
			return nil, err // (the arena's last build is not re-priced: BuildAfter)
		}
		b.prog.depOff = append(b.prog.depOff, int32(len(b.prog.deps)))
		if cfg.Arena != nil {
			cfg.Arena.sealProgram(b.prog)
		}
		progs[s] = b.prog
		// The stage's successor lists and launch-queue waits, right after
		// its build, while its task records, dependencies and hot records
		// are still in cache: after every stage's build (and linkP2P), a
		// large point's first stages had left the cache and both walks read
		// them back from memory. Neither reads what linkP2P sets (the
		// sends' and receives' peer and match, Task.aux), nor another
		// stage, so the programs are the same
		// (TestStageWalksBeforeLinkEqualAfter).
		b.prog.finish()
		var pre *queuePrefix
		if from.queuePrefix(s, len(progs), &pq) {
			pre = &pq
			pq.own = from.builtPrefix(b.prog, s)
		}
		b.prog.setQueueWaits(&cfg.Host, pre)
		if queuePrefixChecks.on.Load() || queueCopyChecks.on.Load() { // tests (SetQueuePrefixChecks, SetQueueCopyChecks)
			checkQueueWalks(b.prog, &cfg.Host, pre != nil)
		}
	}
	if cfg.Arena != nil {
		cfg.Arena.unguardPools()          // (no stage is built past here)
		cfg.Arena.passMarks = b.passMarks // pass copying's marks (passcopy.go), kept for the next build
	}
	var recvs *recvIndex
	if cfg.Arena != nil {
		recvs = &cfg.Arena.recvs
	}
	if err := linkP2P(progs, recvs); err != nil {
		return nil, err
	}
	if keep != nil {
		keep.want = want[:0] // (its storage, for the next request)
		keep.build = cfg.Arena.builds
		keep.keepConfig(cfg, pr)
	}
	return progs, nil
}

// checkNarrow refuses a build whose steps or chunks per stage would not
// fit Task.Step and Task.Chunk (int16). Scenarios stay far below: at most
// 10,000 steps (scenario's maxSteps); chunks per stage are virtual stages,
// at most the model's layers, and no bundled schedule places more than a
// few.
func checkNarrow(steps, chunks int) error {
	switch {
	case steps > math.MaxInt16:
		return fmt.Errorf("steps: %d is more than a build holds (at most %d)", steps, math.MaxInt16)
	case chunks > math.MaxInt16:
		return fmt.Errorf("virtual stages: %d model chunks per pipeline stage is more than a build holds (at most %d)", chunks, math.MaxInt16)
	}
	return nil
}

// p2pKey identifies one pipeline transfer: direction, step, micro-batch and
// the model chunk that receives it.
type p2pKey struct {
	grad                 bool
	step, micro, toChunk int32
	toStage              int32
}

// recvIndex finds a pipeline receive by its p2pKey: a table indexed by
// stage, step, micro-batch, chunk and direction (a receive's fields are
// small non-negative numbers), which replaced a map keyed by p2pKey
// (hashing a key per send and receive was ≈ 1.5% of a sweep point).
type recvIndex struct {
	steps, micros, chunks, stages int
	slot                          []int32 // 1 + the receive's task index, 0: none
	n                             int     // receives indexed (distinct keys)
}

// reset sizes the index for the receives of progs, emptied; false when a
// receive's fields are out of the table's range (none are).
func (x *recvIndex) reset(progs []*Program) bool {
	x.steps, x.micros, x.chunks, x.stages, x.n = 0, 0, 0, len(progs), 0
	for _, p := range progs {
		for _, i := range p.p2p {
			t := &p.Tasks[i]
			if t.Kind != KindRecv {
				continue
			}
			if t.Step < 0 || t.Micro < 0 || t.Chunk < 0 {
				return false
			}
			x.steps = max(x.steps, int(t.Step)+1)
			x.micros = max(x.micros, int(t.Micro)+1)
			x.chunks = max(x.chunks, int(t.Chunk)+1)
		}
	}
	n := x.stages * x.steps * x.micros * x.chunks * 2
	x.slot = resize(x.slot, n)
	clear(x.slot)
	return true
}

// at is key k's slot, -1 when k is outside the table (no receive has it).
func (x *recvIndex) at(k p2pKey) int {
	if k.toStage < 0 || int(k.toStage) >= x.stages || k.step < 0 || int(k.step) >= x.steps ||
		k.micro < 0 || int(k.micro) >= x.micros || k.toChunk < 0 || int(k.toChunk) >= x.chunks {
		return -1
	}
	i := ((int(k.toStage)*x.steps+int(k.step))*x.micros+int(k.micro))*x.chunks + int(k.toChunk)
	if k.grad {
		return 2*i + 1
	}
	return 2 * i
}

// linkP2P pairs every pipeline send with its receive; recvs, when not nil,
// is the storage to index the receives in.
func linkP2P(progs []*Program, recvs *recvIndex) error {
	if recvs == nil {
		recvs = new(recvIndex)
	}
	if !recvs.reset(progs) {
		return linkP2PMap(progs)
	}
	for _, p := range progs {
		for _, i := range p.p2p {
			t := &p.Tasks[i]
			if t.Kind == KindRecv {
				e := &recvs.slot[recvs.at(p2pKey{t.Stream == StreamPPRecvGrd, int32(t.Step), t.Micro, int32(t.Chunk), int32(p.Stage)})]
				if *e == 0 {
					recvs.n++
				}
				*e = int32(i) + 1
			}
		}
	}
	return matchSends(progs, recvs.n, func(k p2pKey) int32 {
		if at := recvs.at(k); at >= 0 {
			return recvs.slot[at] - 1
		}
		return -1
	})
}

// linkP2PMap is linkP2P through a map, for receives the table cannot
// index.
func linkP2PMap(progs []*Program) error {
	recvs := map[p2pKey]int32{}
	for _, p := range progs {
		for _, i := range p.p2p {
			t := &p.Tasks[i]
			if t.Kind == KindRecv {
				recvs[p2pKey{t.Stream == StreamPPRecvGrd, int32(t.Step), t.Micro, int32(t.Chunk), int32(p.Stage)}] = int32(i)
			}
		}
	}
	return matchSends(progs, len(recvs), func(k p2pKey) int32 {
		if j, ok := recvs[k]; ok {
			return j
		}
		return -1
	})
}

// matchSends pairs every pipeline send with the receive find returns for
// its key (-1: none), setting both tasks' Match and the receive's Peer;
// nRecvs receives were indexed, and each must get exactly one send.
func matchSends(progs []*Program, nRecvs int, find func(p2pKey) int32) error {
	matched := 0
	for _, p := range progs {
		for _, i := range p.p2p {
			t := &p.Tasks[i]
			if t.Kind != KindSend {
				continue
			}
			peer := t.Peer()
			j := find(p2pKey{t.Name == sendGradID, int32(t.Step), t.Micro, t.Match(), peer})
			if j < 0 {
				return fmt.Errorf("pipeline: send from stage %d (micro-batch %d) has no matching receive on stage %d", p.Stage, t.Micro, peer)
			}
			t.setP2P(peer, j)
			progs[peer].Tasks[j].setP2P(int32(p.Stage), i)
			matched++
		}
	}
	if matched != nRecvs {
		return fmt.Errorf("pipeline: %d receives but %d sends", nRecvs, matched)
	}
	return nil
}

// blockCost is the priced work of one block of one layer kind.
type blockCost struct {
	dur  engine.Time
	gemm engine.Time // of dur, the time of the GEMM ops
	// band is, of dur, the time of the GEMMs too small to fill the SMs
	// (fullGrid false) but with more tiles than SMs − bandCTAs (bandTiles):
	// from bandCTAs concurrent communication CTAs on they too run in two
	// waves (interference.go rateOf). bandCTAs is the largest such
	// threshold of the block's band GEMMs; 0 when band is 0.
	band         engine.Time
	bandCTAs     int32
	flops, bytes float64
	kernels      float64 // GPU kernels launched (one per priced op; fractional when a block is split)
}

// blockCache prices each (layer kind, pass, block) once: every dense layer is
// identical, and so is every MoE layer. Its tables are arrays indexed by
// kind, pass and block, not maps: the builder asks for a block's cost for
// every task it emits.
//
// An entry of the fixed tables (layers, extra, comm, sums) is this
// cache's only when its mark is the cache's (blockCache.mark): reusing
// the cache for another build (newBlockCache) moves the cache's mark on
// instead of clearing ≈ 52 KB of tables (issue 18, rp38).
type blockCache struct {
	cfg   *StepConfig
	pr    Pricer
	stage int // the stage whose GPUs price the blocks (any of its device class)
	// gen counts the cache's uses (newBlockCache); an entry is this use's
	// when its mark is ^gen (mark), never the zero of an entry not yet
	// written, even in a zero-valued cache.
	gen     uint32
	kinds   []int8                                      // layerKind per layer, -1 until computed
	layers  [numLayerKinds][numPasses][numBlocks]cached // (layerKind, pass/recompute, block)
	extra   [2][numPasses]cached                        // embedding/head per pass
	pieces  []pieceCost                                 // split's results, few enough to search
	comm    [256]commEntry                              // recent CommTime answers (commTime)
	sums    [1 << blockSumBits]blockSum                 // block's kept totals, by blockKey
	params  []paramsEntry                               // StepConfig.LayerParams per layer, once asked
	ops     [numLayerKinds][3][]workload.Op             // (layerKind, forward/backward/recompute): the layer's ops, once listed
	opsBuf  [numLayerKinds][3][]workload.Op             // the forward, backward and recompute lists' storage, kept from build to build (layerOps)
	extOps  []workload.Op                               // embHead's scratch, kept from build to build: the ops priced (Pricer.OpsTime keeps none)
	sel     []workload.Op                               // block, split, splitColumn's scratch: the ops priced (Pricer.OpsTime keeps none)
	gemmSel []workload.Op                               // price's scratch: a block's GEMM ops
}

// layerOps returns the ops of a layer of kind kind (its layerKind) for
// pass (passFwd, passBwd/passWgd: the backward, passRec: the
// recomputation), listing them once per kind: the block tables ask for
// one block at a time, and listing a layer's ops builds every one of them.
// The slice is shared: callers must not modify it.
func (c *blockCache) layerOps(layer, kind, pass int) []workload.Op {
	i := pass
	if pass == passWgd {
		i = passBwd
	}
	if ops := c.ops[kind][i]; ops != nil {
		return ops
	}
	var ops []workload.Op
	switch i {
	case passFwd, passBwd:
		// In the storage of the last build's list (opsBuf; the
		// recomputation's too): a new list a build was garbage, a fresh
		// page of it once the sweep's workers had reserved their memory.
		// Nothing holds the last build's list: newBlockCache dropped c.ops,
		// and OpsTime keeps no ops.
		p := workload.Forward
		if i == passBwd {
			p = workload.Backward
		}
		ops = c.cfg.Model.AppendLayerOps(c.opsBuf[kind][i][:0], layer, c.cfg.Shape, p)
		c.opsBuf[kind][i] = ops
	case passRec:
		ops = c.cfg.Model.AppendRecomputeOps(c.opsBuf[kind][i][:0], layer, c.cfg.Shape, c.cfg.Recompute)
		c.opsBuf[kind][i] = ops
	}
	if ops == nil {
		ops = []workload.Op{}
	}
	c.ops[kind][i] = ops
	return ops
}

// paramsEntry is one layer's StepConfig.LayerParams answer.
type paramsEntry struct {
	dense, expert float64
	ok            bool
}

// layerParams is c.cfg.LayerParams(l), remembered: the builder asks for a
// layer's parameters at every micro-batch's gather and gradient step, and
// the answer walks the model's layer description each time.
func (c *blockCache) layerParams(l int) (dense, expert float64) {
	if l < 0 || l >= len(c.params) {
		return c.cfg.LayerParams(l)
	}
	e := &c.params[l]
	if !e.ok {
		e.dense, e.expert = c.cfg.LayerParams(l)
		e.ok = true
	}
	return e.dense, e.expert
}

// commEntry is one remembered Pricer.CommTime answer.
type commEntry struct {
	kind  GroupKind
	op    collectives.Op
	mark  uint32 // the cache's mark when written (blockCache.mark)
	stage int
	bytes float64
	t     engine.Time
}

// commTime is c.pr.CommTime through a direct-mapped table: a step prices
// the same few collectives (a layer's TP reduction, a bucket's DP
// reduction) thousands of times, and a pricer's own cache is a map keyed
// by a float. The answer is the pricer's, so a collision costs only a
// second call.
func (c *blockCache) commTime(k GroupKind, stage int, op collectives.Op, bytes float64) engine.Time {
	h := math.Float64bits(bytes) ^ uint64(k)<<3 ^ uint64(op)<<7 ^ uint64(stage)<<11
	e := &c.comm[(h*0x9E3779B97F4A7C15)>>56]
	m := c.mark()
	if e.mark == m && e.kind == k && e.op == op && e.stage == stage && e.bytes == bytes {
		return e.t
	}
	t := c.pr.CommTime(k, stage, op, units.Bytes(bytes))
	*e = commEntry{kind: k, op: op, mark: m, stage: stage, bytes: bytes, t: t}
	return t
}

// cached is a table entry: the cost, the cache's when mark is the
// cache's (blockCache.mark).
type cached struct {
	blockCost
	mark uint32
}

// pieceCost is split's result for one (layer kind, pass, block set).
type pieceCost struct {
	kind, pass, mask int
	costs            [4]blockCost
}

const (
	numLayerKinds = 16 // layerKind's four bits
	numPasses     = 4  // passFwd, passBwd, passRec, passWgd
	numBlocks     = int(workload.BlockHead) + 1
)

// mark is the mark of the cache's current use: an entry of the fixed
// tables is the cache's when it holds it. ^gen: the zero-valued tables of
// a new or cleared cache are never its.
func (c *blockCache) mark() uint32 { return ^c.gen }

// layerKind tells the layers whose blocks cost differently apart: bit 0 an
// MoE MLP, bit 1 a sliding attention window (workload.Model.Window). Every
// layer of one kind is identical.
func (c *blockCache) layerKind(layer int) int {
	if layer >= 0 && layer < len(c.kinds) && c.kinds[layer] >= 0 {
		return int(c.kinds[layer])
	}
	k := 0
	if c.cfg.Model.MoE != nil && c.cfg.Model.IsMoELayer(layer) {
		k = 1
	}
	if c.cfg.Model.Window(layer) > 0 {
		k |= 2
	}
	if c.cfg.Model.IsMTPLayer(layer) { // its module's input ops come first
		k |= 4
	}
	if c.cfg.Shape.IsBF16Layer(c.cfg.Model, layer) { // BF16 GEMMs in an FP8 run
		k |= 8
	}
	if layer >= 0 && layer < len(c.kinds) {
		c.kinds[layer] = int8(k)
	}
	return k
}

// newBlockCache returns an empty cache for cfg's blocks priced by pr on
// stage's GPUs: c emptied and reused, or a new one when c is nil.
//
// The fixed tables are not cleared: the cache's mark moves on (gen), so
// that no entry of an earlier use is the cache's. Clearing them (a
// composite literal of the whole ≈ 52 KB cache, zeroed on the stack and
// copied in) was ≈ 0.3% of the 70B sweep's CPU samples, a build each.
func newBlockCache(cfg *StepConfig, pr Pricer, stage int, c *blockCache) *blockCache {
	n := cfg.Model.StackLayers()
	if c == nil {
		c = new(blockCache)
	}
	c.cfg, c.pr, c.stage = cfg, pr, stage
	c.kinds, c.params = resize(c.kinds, n), resize(c.params, n)
	c.pieces, c.sel, c.gemmSel, c.extOps = c.pieces[:0], c.sel[:0], c.gemmSel[:0], c.extOps[:0]
	c.gen++
	if c.mark() == 0 {
		// After 2^32 − 1 uses the mark would be an unwritten entry's:
		// the tables start again from zero, and so does gen.
		c.layers, c.extra, c.comm, c.sums = [numLayerKinds][numPasses][numBlocks]cached{},
			[2][numPasses]cached{}, [256]commEntry{}, [1 << blockSumBits]blockSum{}
		c.gen = 0
	}
	clear(c.ops[:]) // the lists, listed again on first use (layerOps; 1 KB)
	for i := range c.kinds {
		c.kinds[i] = -1
	}
	clear(c.params)
	return c
}

// split prices the ops of `blocks` of layer `layer` for pass (passFwd or
// passBwd) in three consecutive pieces: the head (the ops up to and
// including the first GEMM), the tail (the last GEMM and the ops after it)
// and the middle. A TP collective overlapped with computation runs
// alongside the head (an all-gather feeding the first GEMM) or the tail (a
// reduce-scatter of the last GEMM's output in the forward; in the backward
// the tail's GEMM is the weight gradient, independent of the reduce-scatter
// of the input gradient before it). With fewer than two GEMMs the whole
// block is the middle.
func (c *blockCache) split(layer, pass int, blocks ...workload.Block) (head, mid, tail blockCost) {
	kind, mask, hit := c.piece(layer, pass, blocks)
	if hit != nil {
		return hit.costs[0], hit.costs[1], hit.costs[2]
	}
	p := passFwd // the forward's ops for any pass but the backward
	if pass == passBwd {
		p = passBwd
	}
	ops := c.sel[:0]
	for _, op := range c.layerOps(layer, kind, p) {
		if mask&(1<<op.Block) != 0 {
			ops = append(ops, op)
		}
	}
	c.sel = ops
	first, last := -1, -1
	for i, op := range ops {
		if op.Class == workload.ClassGEMM {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	var out [3]blockCost
	if first < 0 || first == last {
		out[1] = c.price(ops)
	} else {
		out = [3]blockCost{c.price(ops[:first+1]), c.price(ops[first+1 : last]), c.price(ops[last:])}
	}
	c.pieces = append(c.pieces, pieceCost{kind: kind, pass: pass, mask: mask, costs: [4]blockCost{out[0], out[1], out[2]}})
	return out[0], out[1], out[2]
}

// piece returns the layer's kind and the blocks' mask, the keys of
// blockCache.pieces, and the entry already priced for them and pass (nil
// when none).
func (c *blockCache) piece(layer, pass int, blocks []workload.Block) (kind, mask int, hit *pieceCost) {
	kind = c.layerKind(layer)
	for _, bl := range blocks {
		mask |= 1 << bl
	}
	for i := range c.pieces {
		if p := &c.pieces[i]; p.kind == kind && p.pass == pass && p.mask == mask {
			return kind, mask, p
		}
	}
	return kind, mask, nil
}

// passColumn tags splitColumn's entries in blockCache.pieces.
const passColumn = -1

// splitColumn prices the backward ops of `blocks` of layer `layer` in four
// consecutive pieces around the backward of the part's column-parallel
// linear (its first GEMM in the forward, so the last dgrad/wgrad pair in
// backward order): pre (the ops before its input-gradient GEMM), dgrad,
// wgrad (the weight-gradient GEMM) and post (the ops after it: the norm's
// backward). ok is false when the ops hold no such pair; the block is then
// emitted whole.
func (c *blockCache) splitColumn(layer int, blocks ...workload.Block) (pre, dgrad, wgrad, post blockCost, ok bool) {
	kind, mask, hit := c.piece(layer, passColumn, blocks)
	if hit != nil {
		return hit.costs[0], hit.costs[1], hit.costs[2], hit.costs[3], hit.costs[1].dur > 0
	}
	ops := c.sel[:0]
	for _, op := range c.layerOps(layer, kind, passBwd) {
		if mask&(1<<op.Block) != 0 {
			ops = append(ops, op)
		}
	}
	c.sel = ops
	d := -1
	for i := len(ops) - 2; i >= 0; i-- {
		if ops[i].Class == workload.ClassGEMM && ops[i+1].Class == workload.ClassGEMM &&
			strings.HasSuffix(ops[i].Name, "_dgrad") && strings.HasSuffix(ops[i+1].Name, "_wgrad") {
			d = i
			break
		}
	}
	var out [4]blockCost
	if d >= 0 {
		out = [4]blockCost{c.price(ops[:d]), c.price(ops[d : d+1]), c.price(ops[d+1 : d+2]), c.price(ops[d+2:])}
	}
	c.pieces = append(c.pieces, pieceCost{kind: kind, pass: passColumn, mask: mask, costs: out})
	return out[0], out[1], out[2], out[3], out[1].dur > 0
}

const (
	passFwd = 0
	passBwd = 1
	passRec = 2
	passWgd = 3 // weight-gradient share of the backward (zero-bubble)
)

// block returns the cost of the ops of `blocks` in layer `layer` for pass.
//
// The builder asks for the same few block lists for every layer and
// micro-batch, so the total of each (layer kind, pass, blocks in order) is
// kept once summed (sums, direct-mapped by blockKey): the table entries it
// adds never change while the cache lives, so the kept total is the sum
// blockTotal would form again, in the same order.
func (c *blockCache) block(layer, pass int, blocks ...workload.Block) blockCost {
	kind := c.layerKind(layer)
	key, ok := blockKey(kind, pass, blocks)
	if !ok {
		return c.blockTotal(layer, kind, pass, blocks)
	}
	e := &c.sums[(key*0x9E3779B1)>>(32-blockSumBits)]
	if m := c.mark(); e.key != key || e.mark != m { // (0 is no key: blockKey sets the first block's nibble)
		e.key, e.mark, e.blockCost = key, m, c.blockTotal(layer, kind, pass, blocks)
	}
	return e.blockCost
}

// blockSumBits sizes blockCache.sums.
const blockSumBits = 6

// blockSum is a kept block total (blockCache.sums) and its blockKey.
type blockSum struct {
	key  uint32
	mark uint32 // the cache's mark when written (blockCache.mark)
	blockCost
}

// blockKey packs a block list's identity into 32 bits: the layer kind (4
// bits), the pass (2), then each block + 1 in 4 bits, in order (up to 6
// blocks); ok is false for a list it cannot pack (then block sums it
// without keeping it). A non-empty list's key is never 0.
func blockKey(kind, pass int, blocks []workload.Block) (key uint32, ok bool) {
	if len(blocks) == 0 || len(blocks) > 6 || kind < 0 || kind >= numLayerKinds || pass < 0 || pass >= numPasses {
		return 0, false
	}
	key = uint32(kind) | uint32(pass)<<4
	for i, bl := range blocks {
		if int(bl) >= numBlocks || int(bl)+1 >= 16 {
			return 0, false
		}
		key |= (uint32(bl) + 1) << (6 + 4*i)
	}
	return key, true
}

// blockTotal sums the table entries of `blocks` for a layer of kind kind
// (pricing those not yet priced): block's answer.
func (c *blockCache) blockTotal(layer, kind, pass int, blocks []workload.Block) blockCost {
	var total blockCost
	for _, bl := range blocks {
		e := &c.layers[kind][pass][bl]
		if m := c.mark(); e.mark != m {
			sel := c.sel[:0]
			for _, op := range c.layerOps(layer, kind, pass) {
				if op.Block == bl {
					sel = append(sel, op)
				}
			}
			c.sel = sel
			e.blockCost, e.mark = c.price(sel), m
		}
		total.dur += e.dur
		total.gemm += e.gemm
		total.band += e.band
		total.bandCTAs = max(total.bandCTAs, e.bandCTAs)
		total.flops += e.flops
		total.bytes += e.bytes
		total.kernels += e.kernels
	}
	return total
}

func (c *blockCache) price(ops []workload.Op) blockCost {
	bc := blockCost{dur: c.pr.OpsTime(c.stage, ops), kernels: float64(len(ops))}
	gemms := 0
	for _, op := range ops {
		bc.flops += op.FLOPs
		bc.bytes += op.BytesRead + op.BytesWritten
		if c.fullGrid(op) {
			gemms++
		}
	}
	switch gemms {
	case 0:
	case len(ops):
		bc.gemm = bc.dur
	default:
		// the GEMMs priced apart, in their own scratch (ops may be c.sel)
		sel := c.gemmSel[:0]
		for _, op := range ops {
			if c.fullGrid(op) {
				sel = append(sel, op)
			}
		}
		c.gemmSel = sel
		bc.gemm = min(c.pr.OpsTime(c.stage, sel), bc.dur)
	}
	if gemms < len(ops) {
		sel := c.gemmSel[:0]
		for _, op := range ops {
			if ctas := c.bandTiles(op); ctas > 0 {
				sel = append(sel, op)
				bc.bandCTAs = max(bc.bandCTAs, ctas)
			}
		}
		c.gemmSel = sel
		if len(sel) > 0 {
			bc.band = min(c.pr.OpsTime(c.stage, sel), bc.dur-bc.gemm)
		}
	}
	return bc
}

// bandTiles is, for a GEMM that does not fill the SMs (fullGrid false)
// but whose T tiles exceed SMs − SMs/2, the fewest concurrent
// communication CTAs b that leave it fewer free SMs than tiles,
// SMs − T + 1 (then its one-CTA-per-tile grid runs in ⌈T/(SMs − b)⌉ = 2
// waves: docs/validation.md round 19, helpers gemmmb19 and edge19); 0 for
// any other op. The executor caps b at SMs/2 (Executor.capCTAs), so a
// GEMM of at most SMs − SMs/2 tiles always runs in one wave.
func (c *blockCache) bandTiles(op workload.Op) int32 {
	sms := c.cfg.GEMMSMs
	if op.Class != workload.ClassGEMM || sms <= 0 {
		return 0
	}
	t := workload.GEMMTiles(op)
	if t >= sms || t <= sms-sms/2 {
		return 0
	}
	return int32(sms - t + 1)
}

// fullGrid says op is a GEMM whose output tiles fill the GPU's SMs
// (StepConfig.GEMMSMs), so that a persistent kernel runs one CTA on every
// SM: a smaller GEMM launches one CTA per tile and, with at most SMs −
// the communication CTAs of them, still runs in one wave (it is priced
// at the fluid rate, interference.go rate); with more, it is a band GEMM
// (bandTiles), in two waves from its threshold on (Executor.rateOf).
func (c *blockCache) fullGrid(op workload.Op) bool {
	return op.Class == workload.ClassGEMM && (c.cfg.GEMMSMs <= 0 || workload.GEMMTiles(op) >= c.cfg.GEMMSMs)
}

func (c *blockCache) embHead(head bool, pass int) blockCost {
	e := &c.extra[0][pass]
	if head {
		e = &c.extra[1][pass]
	}
	if e.mark == c.mark() {
		return e.blockCost
	}
	p := workload.Forward
	if pass == passBwd {
		p = workload.Backward
	}
	// Listed in the last list's storage (extOps), priced and dropped.
	if head {
		c.extOps = c.cfg.Model.AppendHeadOps(c.extOps[:0], c.cfg.Shape, p)
	} else {
		c.extOps = c.cfg.Model.AppendEmbeddingOps(c.extOps[:0], c.cfg.Shape, p)
	}
	e.blockCost, e.mark = c.price(c.extOps), c.mark()
	return e.blockCost
}
