package simulation

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/workload"
)

// Every field of a scenario is bounded on its own (sim/scenario/resolve.go), but their
// product is what a run costs: 100,000 layers × 4,096 micro-batches passes
// every check and then builds a task graph past 7 GB (issue 19). Before
// anything is built, Run estimates the work in closed form from the
// resolved scenario and refuses it above the budget, naming the fields that
// drive it and the estimate.

// ErrBudget is wrapped by every error that refuses work above the work
// budget (see Budget).
var ErrBudget = errors.New("over the work budget")

// Budget bounds one simulation. A zero field takes its default.
type Budget struct {
	// MaxTasks bounds the rank-tasks the engine plays (Work.PlayedTasks):
	// the simulation's time, about 1 µs per rank-task on the project's
	// 2-core machines.
	MaxTasks int64
	// MaxMemoryBytes bounds the memory of the task graph and its playing
	// (Work.MemoryBytes).
	MaxMemoryBytes int64
}

// Default budget. The largest bundled run, Llama 3 405B on 16,384 GPUs at
// flow fidelity with every rank played, estimates about 1.5e8 rank-tasks
// and 2.8 GB; the defaults leave room above it and stop a run that would
// take longer than a few minutes or more memory than a laptop has.
const (
	DefaultMaxTasks       = 500_000_000
	DefaultMaxMemoryBytes = 8 << 30
)

func (b Budget) maxTasks() int64 {
	if b.MaxTasks > 0 {
		return b.MaxTasks
	}
	return DefaultMaxTasks
}

func (b Budget) maxMemory() int64 {
	if b.MaxMemoryBytes > 0 {
		return b.MaxMemoryBytes
	}
	return DefaultMaxMemoryBytes
}

// Work is a closed-form estimate of what simulating a scenario costs. It is
// an upper estimate: TestWorkEstimateBoundsBuiltTasks holds ProgramTasks
// between the built task count and WorkEstimateFactor times it on every
// bundled scenario.
type Work struct {
	// ProgramTasks are the tasks of the stage programs: one program per
	// pipeline stage, shared by every rank of the stage.
	ProgramTasks int64
	// PlayedTasks are the rank-tasks the engine plays: ProgramTasks once
	// when one rank per stage stands for all (analytic fidelity), times
	// the ranks per stage when every rank plays.
	PlayedTasks int64
	// MemoryBytes is the peak memory of building and playing the graph.
	MemoryBytes int64
	// Drivers names the scenario values the estimate is proportional to.
	Drivers string
}

// WorkEstimateFactor bounds how far Work.ProgramTasks may exceed the tasks
// actually built (tested on every bundled scenario).
const WorkEstimateFactor = 4

// Bytes per task, measured on the bundled scenarios (go test ./sim -run
// WorkEstimate -v prints them): a program task is the parallel.Task record
// (about 100 bytes with its name's header), its dependency and successor
// lists (CSR, 4 bytes per edge, about 3 edges each way) and its counters;
// a played rank-task holds its start and end times, its remaining
// dependency count and, in full mode, a collective's arrival count.
const (
	bytesPerProgramTask = 160
	bytesPerPlayedTask  = 32
	bytesPerRank        = 16 << 10 // executor, group and fabric state per rank
	bytesFixed          = 64 << 20 // catalog, topology, Go runtime
)

// EstimateWork estimates the work of simulating s with opt, from the
// resolved plan alone.
func EstimateWork(s *scenario.Plan, opt Options) Work {
	w, d := estimateWork(s, opt)
	w.Drivers = d.describe(s)
	return w
}

// EstimateProgramTasks is EstimateWork(s, opt).ProgramTasks without
// Drivers' strings, for callers that size storage by it (a sweep's load
// estimates each of its points: Drivers was most of EstimateWork's time).
func EstimateProgramTasks(s *scenario.Plan, opt Options) int64 {
	w, _ := estimateWork(s, opt)
	return w.ProgramTasks
}

// workDriven is what Work.Drivers names: the factors the estimate grows
// with.
type workDriven struct {
	layers, micro, steps, world, pp int64
	every                           bool
}

// describe is Work.Drivers of d's scenario s (workDrivers).
func (d workDriven) describe(s *scenario.Plan) string {
	return workDrivers(s, d.layers, d.micro, d.steps, d.world, d.pp, d.every)
}

// estimateWork is EstimateWork without Drivers, and what names them:
// Run checks every point's estimate, and formatting the four strings of
// Drivers, which only an error over the budget prints, was most of
// EstimateWork's time (0.23% of the 1,000-point 70B sweep's CPU samples,
// of EstimateWork's 0.40% under Run).
func estimateWork(s *scenario.Plan, opt Options) (Work, workDriven) {
	fid := s.Fidelity()
	p := s.Parallel
	m := s.Arch()
	// Float arithmetic: the product of the fields' limits overflows int64.
	steps := float64(max(s.Sim.Steps, 1))
	micro := float64(max(s.Microbatches(), 1))
	passes := 2.0 // forward, backward
	if s.Recompute() != workload.RecomputeNone {
		passes++
	}
	if splitsWeightGradients(s) {
		passes++ // weight-gradient pass
	}
	dense, moe := tasksPerLayerPass(s, false), tasksPerLayerPass(s, true)
	const perChunkMicro = 12 // receives, TP gathers of them, sends, embedding and head with their TP reductions
	const perStepStage = 32  // optimizer, barrier, bucket flushes
	var program, layers float64
	for _, chunks := range s.Chunks() {
		var perMicro, stageLayers float64
		for _, ch := range chunks {
			perMicro += perChunkMicro
			for l := ch.FirstLayer; l < ch.FirstLayer+ch.Layers; l++ {
				per := dense
				if m.MoE != nil && m.IsMoELayer(l) {
					per = moe
				}
				perMicro += passes * per
			}
			stageLayers += float64(ch.Layers)
		}
		layers += stageLayers
		// Gradient reductions and parameter gathers: at most a few per
		// layer and step (buckets of layers), not per micro-batch.
		program += steps * (micro*perMicro + 4*stageLayers + perStepStage)
	}
	world := float64(s.GPUs())
	pp := float64(max(p.PP, 1))
	every := fid == network.Flow || opt.AllRanks
	played := program
	if every {
		played = program * (world / pp)
	}
	mem := program*bytesPerProgramTask + played*bytesPerPlayedTask + world*bytesPerRank + bytesFixed
	return Work{ProgramTasks: clampInt64(program), PlayedTasks: clampInt64(played), MemoryBytes: clampInt64(mem)},
		workDriven{int64(layers), int64(micro), int64(steps), int64(world), int64(pp), every}
}

// clampInt64 converts a non-negative estimate, saturating at MaxInt64.
func clampInt64(x float64) int64 {
	if !(x < math.MaxInt64) {
		return math.MaxInt64
	}
	return int64(x)
}

// splitsWeightGradients reports whether the schedule emits separate
// weight-gradient passes (zero-bubble schedules, DualPipe): one stage's
// order on a small pipeline of the scenario's shape is probed for them,
// so a new schedule needs no entry here.
//
// The answer depends on the schedule and the probe's shape only, and a
// sweep's points are many layouts of few shapes, so it is remembered
// (splitsCache): probing, Check and the shared order's lookup
// (sync.Map, hashing an interface key) and the scan of its steps at every
// point were ≈ 0.15% of the 1,000-point 70B sweep's CPU samples.
func splitsWeightGradients(s *scenario.Plan) bool {
	p := s.Parallel
	sh := pipeline.Shape{Stages: p.PP, Microbatches: min(s.Microbatches(), 2*max(p.PP, 1)), Virtual: p.VirtualStages}
	return splitsFor(s.Schedule(), sh)
}

// splitsFor is probeSplits(sched, sh) through splitsCache (true for a nil
// schedule: unknown, the pass is counted, the estimate stays an upper one).
func splitsFor(sched pipeline.Schedule, sh pipeline.Shape) bool {
	if sched == nil {
		return true
	}
	name := sched.Name()
	slot := &splitsCache[uint(sh.Stages*31+sh.Microbatches*7+sh.Virtual)%uint(len(splitsCache))]
	if e := slot.Load(); e != nil && e.sh == sh && e.name == name {
		return e.splits
	}
	split := probeSplits(sched, sh)
	slot.Store(&splitsEntry{name: name, sh: sh, splits: split})
	return split
}

// probeSplits reports whether sched's order for stage 0 of sh holds a
// weight-gradient step (true when sched cannot run sh: the estimate stays
// an upper one).
func probeSplits(sched pipeline.Schedule, sh pipeline.Shape) bool {
	if sched.Check(sh) != nil {
		return true
	}
	for _, st := range sched.Order(sh, 0) {
		if st.Phase == pipeline.PhaseW {
			return true
		}
	}
	return false
}

// splitsEntry is one remembered splitsWeightGradients answer: the
// schedule (by its parallel.schedule name, which names one schedule) and
// the probe's shape.
type splitsEntry struct {
	name   string
	sh     pipeline.Shape
	splits bool
}

// splitsCache is a direct-mapped table of splitsWeightGradients' answers
// by shape, shared by the goroutines of a sweep: each slot is replaced
// whole (an atomic pointer), so a reader sees one entry or another,
// never a mix, and a missed or overwritten entry is only probed again.
var splitsCache [64]atomic.Pointer[splitsEntry]

// tasksPerLayerPass bounds the tasks of one layer's forward, backward or
// recomputation for one micro-batch, by the features that add tasks
// (parallel/builder.go).
func tasksPerLayerPass(s *scenario.Plan, moe bool) float64 {
	p := s.Parallel
	t := 4.0 // the layer's compute blocks and host stalls
	switch {
	case p.TP > 1 && *p.Overlap.TPComm && p.CP <= 1 && !moe:
		// TP collectives paired with their GEMMs: per half-layer a
		// gather, head, middle, tail and reduction
		t += 10
	case p.TP > 1:
		t += 4 // sequence gathers and reductions around attention and MLP
		if *p.Overlap.TPBwd && p.TPImpl != "dtensor" {
			// Megatron's asynchronous backward: per part the input
			// gather and the split into pre, dgrad, wgrad and post
			t += 6
		}
	}
	if p.TP > 1 && p.TPImpl == "dtensor" {
		t += 4 // DTensor's copies around the sequence collectives, or AsyncTP's
	}
	if p.CP > 1 {
		t += 8 // ring steps and the K/V collectives
	}
	if moe {
		t += 10 // router, host stall, dispatch, expert-TP gather and scatter, experts, combine
	}
	if p.Zero == 3 {
		t++ // FSDP parameter gather
	}
	if s.Offload() != 0 {
		t += 2 // device-to-host copy and reload
	}
	return t
}

// workDrivers describes the product the estimate grows with.
func workDrivers(s *scenario.Plan, layers, micro, steps, world, pp int64, allRanks bool) string {
	parts := []string{
		fmt.Sprintf("model.layers %d", layers),
		fmt.Sprintf("%d micro-batches per step (training.global_batch %d / (micro_batch %d × dp %d))",
			micro, s.Training.GlobalBatch, s.Training.MicroBatch, s.Parallel.DP),
		fmt.Sprintf("sim.steps %d", steps),
	}
	if allRanks {
		parts = append(parts, fmt.Sprintf("%d ranks per stage played (every rank: %d GPUs / pp %d)", world/pp, world, pp))
	}
	return strings.Join(parts, " × ")
}

// CheckBudget returns an error wrapping ErrBudget when s's estimated work
// exceeds b, naming the fields that drive it and the estimate.
func CheckBudget(s *scenario.Plan, opt Options, b Budget) error {
	return checkWork(EstimateWork(s, opt), b)
}

// checkWork is CheckBudget given the estimate.
func checkWork(w Work, b Budget) error {
	switch {
	case w.PlayedTasks > b.maxTasks():
		return fmt.Errorf("%w: about %.3g rank-tasks to simulate, more than --max-tasks %.3g; it grows with %s (lower one, or raise --max-tasks)",
			ErrBudget, float64(w.PlayedTasks), float64(b.maxTasks()), w.Drivers)
	case w.MemoryBytes > b.maxMemory():
		return fmt.Errorf("%w: about %s of memory to simulate, more than --max-memory %s; it grows with %s (lower one, or raise --max-memory)",
			ErrBudget, formatBytes(w.MemoryBytes), formatBytes(b.maxMemory()), w.Drivers)
	}
	return nil
}

// formatBytes prints n in binary units.
func formatBytes(n int64) string {
	switch {
	case n >= 1<<40:
		return fmt.Sprintf("%.3g TiB", float64(n)/(1<<40))
	case n >= 1<<30:
		return fmt.Sprintf("%.3g GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.3g MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}

// explainRunError adds to an engine time overflow what drives it.
func explainRunError(s *scenario.Plan, err error) error {
	if !errors.Is(err, engine.ErrTimeOverflow) {
		return err
	}
	m := s.Arch()
	return fmt.Errorf("%w: one step of this scenario would last longer than that (model.layers %d, model.hidden %d, training.seq_len %d, training.global_batch %d on %d× %s)",
		err, m.Layers, m.Hidden, s.Training.SeqLen, s.Training.GlobalBatch, s.GPUs(), s.GPUName())
}
