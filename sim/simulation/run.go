package simulation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/topology"
	"github.com/simtrain/simtrain/sim/units"
	"github.com/simtrain/simtrain/sim/workload"
)

// ExposedKinds are the group kinds whose exposed communication is reported,
// in the order of Result.ExposedCommS.
var ExposedKinds = []string{"tp", "cp", "ep", "dp", "pp"}

// Result is what one simulated scenario produced, as plain Go data.
type Result struct {
	Scenario *scenario.Plan
	RunID    string

	StepTimeS float64 // mean simulated time per optimizer step
	// StepP50S and StepP99S are the median and 99th percentile of the
	// steps' times (nearest rank), Steps the steps one by one: with
	// sim.variability they include the slowest rank's delay per step
	// (playSteps), without it every step is the simulated one.
	StepP50S, StepP99S   float64
	Steps                []StepRecord
	TokensPerS           float64
	TokensPerSPerGPU     float64
	ModelFLOPsPerStep    float64
	HardwareFLOPsPerStep float64
	MFU, HFU             float64
	TFLOPsPerGPU         float64 // model FLOPs per second per GPU, in TFLOP/s
	BubbleFraction       float64 // mean over ranks of idle time (no compute, no communication) / step time
	ComputeS             float64 // busiest rank's compute time per step
	// HostSyncS is the mean over ranks of the time per step the compute
	// stream idles in host synchronisations (parallel.KindHostSync: the
	// dropless MoE dispatch's, StepConfig.MoEHostSync).
	HostSyncS float64
	// HostBoundS is the mean over ranks of the time per step the compute
	// stream waits for the host thread to issue its next kernels
	// (parallel.HostModel): every other input of the task was ready.
	HostBoundS float64
	// HostIssueS is the mean over ranks of the host thread's busy time per
	// step, issuing kernels and library calls.
	HostIssueS float64
	// ExposedCommS is, per kind in ExposedKinds, the mean over ranks of the
	// time per step that kind's communication is in flight while the compute
	// stream is idle.
	ExposedCommS [5]float64

	Memory          []StageMemory // one per pipeline stage (every rank of a stage holds the same)
	PeakMemBytes    float64       // largest rank
	MinPeakMemBytes float64       // smallest rank
	// PeakReservedBytes is the largest rank's caching-allocator reservation
	// at the peak (workload.Memory.AllocatorReserved): what PyTorch's
	// memory_stats "reserved_bytes.all.peak" reports, without the CUDA
	// context and NCCL buffers that PeakMemBytes counts.
	PeakReservedBytes float64
	MemCapacityBytes  float64
	// MemMarginBytes is MemCapacityBytes − PeakMemBytes: the headroom of
	// the largest rank, negative when it does not fit.
	MemMarginBytes float64
	Fits           bool

	CostUSDPerStep   float64
	EnergyKWhPerStep float64

	// Events is the engine events the play executed, with those the
	// replicated units would have (parallel.Executor.ExtraEvents): a
	// measure of the simulator's work, like SimWallS. At flow fidelity a
	// collective played sole (soleGroups) is one event where its
	// transfers were several.
	Events   uint64
	SimWallS float64
	// Replicated is how many micro-batches per pipeline were not played
	// but derived by steady-state replication (Options.FiguresOnly); 0
	// when the step was played whole.
	Replicated int
	// ReplicatedUnit is the micro-batches of the unit replicated: 1 (or pp
	// for an interleaved schedule), 2 where units of two repeated
	// (parallel.PlanSteadyPairs); 0 when the step was played whole.
	ReplicatedUnit int
	// SteadyPlays is how many shortened plays steady-state replication
	// tried (0–2; the second with the micro-batches
	// parallel.Executor.Settle estimated or, without an estimate, in units
	// of two micro-batches); with Replicated > 0 the last one was used,
	// else the step was then played whole.
	SteadyPlays int
	// PlayedTasks is how many tasks the step's plays completed on the
	// played ranks, a shortened play thrown away (SteadyPlays) included:
	// the played work, counted whatever the machine's load.
	PlayedTasks int
	// FailedTasks is how many of PlayedTasks were played in shortened plays
	// that did not replicate and were thrown away.
	FailedTasks int
	// SteadyRefusal is why the last shortened play that failed did not
	// replicate (parallel.Executor.Refusal; "" when none failed).
	SteadyRefusal string
	// ResumedTasks is how many tasks the full play took, ended, from the
	// last failed shortened play instead of playing them again
	// (parallel.Fork): counted in PlayedTasks once, not in FailedTasks.
	ResumedTasks int
	// RuledOut says the step was not played to its end: its computation
	// alone, or its play so far, showed that it ends after
	// Options.StepCutoffS. Only the scenario, the memory figures and
	// StepBoundS are then set.
	RuledOut bool
	// StepBoundS is, for a RuledOut result, a lower bound on its step
	// time: the bound of the first stage its build found over the cutoff
	// (parallel.StageCut), or for a play given up the latest of the
	// cutoff and each rank's clock plus its compute left
	// (parallel.Executor.CutEnd), per step.
	StepBoundS float64
	// cutInPlay says a RuledOut result was given up in its play, not in
	// its build (for tests).
	cutInPlay bool
	// TwinPlay says the figures from the play are a twin's: another point
	// of the sweep, equal but for its recomputation, built the same
	// programs and played them (twins.go); this one played nothing
	// (PlayedTasks 0) and worked out the rest from its own scenario. With
	// RuledOut: the twin's play was given up against the same cutoff, and
	// StepBoundS is its bound.
	TwinPlay bool

	Cluster *topology.Cluster
	Layout  *parallel.Layout
	exec    *parallel.Executor
	progs   []*parallel.Program
	fabric  *network.Fabric
	// ranks is the pricer's Layout.Groups by (kind, stage) (pricer.ranks),
	// which links.arrow's traffic reads instead of listing them again.
	ranks map[[2]int][][]int
	// stRanks is the pricer's Layout.StageRanks by stage (pricer.stRanks).
	stRanks [][]int
}

// StageMemory is the memory of every rank of one pipeline stage.
type StageMemory = scenario.StageMemory

// Options adjust a run without editing the scenario.
type Options struct {
	// AllRanks plays every rank even at analytic fidelity, where by default
	// one representative rank per pipeline stage stands for all of them
	// (identical without contention). Slower; the results are the same,
	// which tests check.
	AllRanks bool
	// Progress, when set, is called now and then during the simulation with
	// the tasks completed and the total (all ranks played).
	Progress func(done, total int)
	// Budget bounds the work; Run refuses a scenario whose estimate
	// (EstimateWork) exceeds it before building anything.
	Budget Budget
	// FiguresOnly says the caller reads the Result's figures only, not its
	// tasks (Tasks, Links, Check): a step of many micro-batches may then be
	// played shortened, its steady-state micro-batches replicated
	// (parallel.PlanSteady), with the same figures, to the bit, as the full
	// play. Tasks, Links and Check see the shortened play, and at flow
	// fidelity Links lacks the collectives played sole (their transfers
	// are not summed on the links: collectives.Runner.SkipSoleLinks).
	FiguresOnly bool
	// KeepRanks, when set, names the ranks whose task times an every-rank
	// play (AllRanks, or flow fidelity) keeps for Result.Tasks and
	// Result.Check, given the result before the play (scenario, cluster and
	// layout set); every other rank plays and counts in the figures, but
	// its times are not kept (on a 16,384-GPU run they are most of the
	// memory). Nil keeps every rank's. The representative-rank play keeps
	// its few ranks' times whatever this says.
	KeepRanks func(r *Result) []int
	// Reuse, when set, is what the previous Run given the same Reuse left
	// to reuse: that run's Result loses its tasks and times. For a
	// goroutine running many scenarios one after another (a sweep worker).
	Reuse *Reuse
	// RunID, when set, is the scenario's run id (scenario.Scenario.RunID)
	// as the caller already computed it: a sweep hashes every point's
	// canonical form when it loads, and hashing it again is ≈ 2% of a
	// simulated point. Empty: Run computes it.
	RunID string
	// Memory, when set, is the scenario's s.MemoryPerStage() as the caller
	// already computed it (a sweep checks every point's fit before it
	// simulates it); it must fit. Nil: Run computes it.
	Memory []scenario.StageMemory
	// Result, when set, is the storage Run fills and returns instead of a
	// new Result: Run overwrites all of it, keeping only its Steps' storage
	// for the new steps. A sweep worker passes the Result of a point whose
	// row was written (sweep.Sweep.RunLent): ≈ 0.3 KB a simulated point
	// that was fresh memory otherwise (docs/design.md "Speed", emit52).
	Result *Result
	// StepCutoffS, when positive, is the step time in seconds above which
	// the caller has no use for the point's figures (a search for the best
	// layouts, once it holds enough better ones): Run then builds the
	// step, and where the computation of one stage's rank alone
	// (parallel.ComputeBound, a lower bound on the step time) exceeds it,
	// returns without playing it, RuledOut set; a whole play stops once
	// the compute some rank has left cannot end by the cutoff
	// (parallel.Executor.RunBefore), RuledOut set too. A point under the
	// cutoff is played as without it, to the same figures. Not applied
	// under sim.variability, whose draws may take a step below its
	// played time (a rank drawn faster than its median).
	StepCutoffS float64
	// EmitEveryLayer builds the programs with every layer emitted, none
	// copied (parallel.StepConfig.EmitEveryLayer): for tests that hold the
	// copies equal.
	EmitEveryLayer bool
	// checkEvery, for tests, verifies the fabric's invariants (no link above
	// its bandwidth, every active flow progressing) after every event.
	checkEvery func(error)
	// wholeSteady, for tests, plays a shortened step to its end before
	// Replicate checks it (parallel.Executor.Run, as before RunSteady).
	wholeSteady bool
	// noResume, for tests, plays the full step from the start after a
	// failed shortened play (as before parallel.Fork).
	noResume bool
	// alwaysShorten, for tests, tries a shortened play whenever
	// parallel.PlanSteady accepts the step, also where worthShortening
	// says a play whole costs less.
	alwaysShorten bool
	// onBuild, for tests, sees each StepConfig play builds, before it
	// builds it (TestFirstBuildKey).
	onBuild func(*parallel.StepConfig)
	// noSole, for tests, plays every collective's transfers on the fabric
	// at flow fidelity, none as a sole timer (soleGroups); checkAlone
	// makes the fabric check the sole ones (network.Fabric.CheckAlone)
	// and onSole sees, after each every-rank play, how many collectives
	// played sole, and the clashes and overlaps the checks found.
	noSole     bool
	checkAlone bool
	onSole     func(starts int64, clashes, overlaps int)
}

// Run simulates the scenario's steps.
func Run(ctx context.Context, s *scenario.Plan, opt Options) (*Result, error) {
	wall := time.Now()
	work, driven := estimateWork(s, opt)
	if checkWork(work, opt.Budget) != nil {
		// over the budget: the error names what drives the estimate
		work.Drivers = driven.describe(s)
		return nil, checkWork(work, opt.Budget)
	}
	cl, err := opt.Reuse.cluster(s.TopologySpec())
	if err != nil {
		return nil, err
	}
	layout, err := s.NewLayout()
	if err != nil {
		return nil, err
	}
	dev := workload.DeviceOf(s.GPU())
	cfg := opt.Reuse.stepConfig()
	s.FillStepConfig(cfg, layout)
	cfg.Interrupt = ctx.Err
	cfg.EmitEveryLayer = opt.EmitEveryLayer
	if opt.Reuse != nil {
		cfg.Arena = &opt.Reuse.arena
		// Room for the full step's programs at once (the estimate is an
		// upper one, 1.4–3.0× the tasks built on the 70B sweep): a worker
		// meeting a larger point replaces its storage before the build
		// instead of doubling it during it, copying what it held.
		opt.Reuse.Reserve(work.ProgramTasks)
	}
	var tables *priceTables // fresh ones
	if s.Fidelity() == network.Analytic && !opt.AllRanks {
		// Only the representative-rank executor: the every-rank one reads
		// pr.shares, which must hold this run's groups only.
		tables = opt.Reuse.tables(cl, layout)
	}
	pr := opt.Reuse.pricer(s, cl, layout, dev, tables)
	pr.recordShares = opt.AllRanks
	pr.sendMemo = opt.Reuse.sendMemo(cl)
	cfg.DeviceClass = pr.deviceClasses()
	runID := opt.RunID
	if runID == "" {
		runID = s.RunID()
	}
	res := opt.Result
	if res == nil {
		res = new(Result)
	}
	*res = Result{Scenario: s, RunID: runID, Cluster: cl, Layout: layout, Steps: res.Steps[:0]}
	var x *parallel.Executor
	var progs []*parallel.Program
	var eng *engine.Engine
	var extraEvents uint64
	var fork *parallel.Fork // the last failed shortened play's state, to resume the next play from
	if !shortens(s, opt) {
		// played whole below
	} else {
		// Steady-state replication (parallel.PlanSteady): play fewer
		// micro-batches; when the last ones played repeat exactly, the
		// rest follow arithmetically. A pipeline that has not settled
		// by then is tried once more, with as many micro-batches more
		// as parallel.Executor.Settle estimates it needs to settle
		// (steadyRetry more without an estimate), or played whole when
		// that would gain too little.
		margin := steadyMargin
		forks := opt.Reuse.forks()
		var planned *parallel.Steady // the next try's plan, when made already
		// units: the next try's unit in micro-batches (> 1: units of
		// several, parallel.PlanSteadyUnits), with extra micro-batches
		// played for their longer check
		units, extra := 1, 0
		for try := 0; ; try++ {
			// The first try's count decides before its plan, which
			// compares every stage's orders (a step turned away by
			// worthShortening is played whole either way).
			if try == 0 && !opt.alwaysShorten {
				if played, ok := parallel.SteadyPlayed(cfg, margin); ok && !worthShortening(played, cfg.Microbatches) {
					break // too little to gain for what a failed play costs: play whole
				}
			}
			var steady parallel.Steady
			if planned != nil {
				steady, planned = *planned, nil
			} else {
				var ok bool
				if steady, ok = planTry(cfg, margin, units, extra); !ok {
					break
				}
			}
			// No Settle after the second try (a longer one doubles the
			// margin instead), so RunSteady may stop at the first
			// stage's units.
			steady.Last = try >= steadyTries-1
			short := opt.Reuse.shortConfig(try)
			*short = *cfg
			short.Microbatches = steady.Played
			// A second play resumes from the first one's state, saves
			// its own in the other Fork.
			next := &forks[try%2]
			next.Clear()
			if fork != nil {
				fork.Detach() // the longer step is built over the failed play's programs
			}
			var failed bool
			x, progs, eng, failed, err = play(ctx, s, opt, short, pr, cl, layout, res, &steady, next, fork, nil)
			if err == errRuledOut {
				return ruledOut(s, opt, res, cl, layout, tables, wall), nil
			}
			if err != nil {
				return nil, err
			}
			res.SteadyPlays++
			fork = nil
			if !failed && x.Replicate(steady) {
				extraEvents = x.ExtraEvents()
				res.Replicated = cfg.Microbatches - steady.Played
				res.ReplicatedUnit = steady.Unit()
				break
			}
			if saved, _, _ := next.Saved(); saved {
				fork = next
			}
			res.FailedTasks += x.Completed() - x.Resumed()
			res.SteadyRefusal = x.Refusal()
			if x.Lasting() {
				x = nil
				break // no longer play would replicate either: play whole
			}
			if steady.Last {
				// A long step (many micro-batches per pipeline) is
				// worth more tries: each doubles the margin, in units
				// of the cycle the failed play shows, else of two
				// (longerPlay says why).
				units = x.Cycle(steady, maxCycle)
				if units == 0 {
					units = 2
				}
				extra = (x.Reach() + 2) * (units - 1)
				x = nil
				margin *= 2
				if try+1 < steadyTries+longerTries {
					if plan, ok := longerPlay(cfg, margin, units, extra); ok {
						planned = &plan
						continue
					}
				}
				break // too many tries, or too long a play for a gain: play whole
			}
			more, known := x.Settle(steady, cfg.Microbatches)
			reach := x.Reach()
			x = nil
			if !known {
				// No estimate: the change of period does not shrink
				// from unit to unit. The pipeline may alternate
				// between two periods (PlanSteadyPairs says why),
				// which units of two micro-batches repeat where units
				// of one never do, and a pipeline that settles later
				// repeats in pairs too: the next play checks units of
				// two, with steadyRetry more and the reach + 2 more
				// their longer window needs. Measured on the 70B
				// layout sweep (issue 18, round 56; the next play's
				// margin grown by 0, 4, 8, 12 beyond steadyRetry): 42,
				// 46, 45, 45 points replicated against 44 with units
				// of one, 2.41, 2.32, 2.34, 2.36 M tasks played over
				// its 60 points with shortened plays against 2.42 M.
				margin += steadyRetry
				units, extra = 2, reach+2
				continue
			}
			margin += more
			// The estimate is a guess (Settle): a second play that fails
			// costs its time on top of the full play's, so it is tried
			// only for a clear gain, at most 3/4 of the step.
			plan, ok := parallel.PlanSteady(cfg, margin)
			if !ok || 4*plan.Played > 3*cfg.Microbatches {
				break // settling too late for a gain: play whole
			}
			planned = &plan // the next try's (the same cfg and margin)
		}
	}
	var twin *twinClaim // (every-rank plays alone, which are never shortened)
	if x == nil {
		if fork != nil {
			fork.Detach() // the full step is built over the failed play's programs
		}
		twin = opt.Reuse.twins(s, opt, cl)
		defer twin.abandon() // (nothing once filled)
		x, progs, eng, _, err = play(ctx, s, opt, cfg, pr, cl, layout, res, nil, nil, fork, twin)
		if err == errRuledOut {
			if res.cutInPlay {
				twin.fillCut(res.StepBoundS) // (nothing for a twin's)
			}
			return ruledOut(s, opt, res, cl, layout, tables, wall), nil
		}
		if err == errTwinPlayed {
			twin.take(res)
			deriveFigures(s, res, dev, opt.Memory)
			res.SimWallS = time.Since(wall).Seconds()
			return res, nil
		}
		if err != nil {
			return nil, err
		}
	}
	opt.Reuse.publish(cl, layout, tables) // priced without error: other workers may take them
	res.exec = x
	res.progs = progs
	res.ranks, res.stRanks = pr.ranks, pr.stRanks // read-only from here: the pricer is done
	opt.Reuse.handedRanks(res)
	res.Events = eng.Executed() + extraEvents
	if err := summarise(ctx, s, res, dev, opt.Memory); err != nil {
		return nil, err
	}
	twin.fill(res, eng.Now())
	res.SimWallS = time.Since(wall).Seconds()
	return res, nil
}

// cutoffDeadline is the simulated time, for steps steps, that a play ended
// after has a step time above cutoff seconds: cutoff·steps rounded up to a
// whole nanosecond (Forever when beyond them), so that a step ending after
// it ends a nanosecond or more after cutoff·steps, far beyond the
// products' rounding.
func cutoffDeadline(cutoff float64, steps int) engine.Time {
	ns := math.Ceil(cutoff * float64(steps) * 1e9)
	if !(ns < float64(engine.Forever)) {
		return engine.Forever
	}
	return engine.Time(ns)
}

// computeLimit is the most computation, in simulated time over steps
// steps, whose step time is not above cutoff seconds: a bound b rules a
// step out (b.Seconds()/steps > cutoff) exactly when b is over it. Found
// from the nearest nanosecond by the comparison itself, so that the
// products' rounding cannot move a point across it; Forever when no time
// is over the cutoff.
func computeLimit(cutoff float64, steps int) engine.Time {
	over := func(t engine.Time) bool { return t.Seconds()/float64(steps) > cutoff }
	ns := math.Floor(cutoff * float64(steps) * 1e9)
	if !(ns < float64(engine.Forever)) || !over(engine.Forever) {
		return engine.Forever
	}
	t := engine.Time(max(ns, 0))
	for t > 0 && over(t) {
		t--
	}
	for !over(t + 1) {
		t++
	}
	return t
}

// errRuledOut is play's report that the step it built ends after the
// cutoff (Options.StepCutoffS), its bound in the Result's StepBoundS.
var errRuledOut = errors.New("simulation: the step ends after the cutoff")

// ruledOut is Run's Result for a step ruled out (play's errRuledOut): res
// holds the scenario, the memory figures and the bound, no figure of a
// play. The build priced its groups without error, so the layout's price
// tables are published as after a play.
func ruledOut(s *scenario.Plan, opt Options, res *Result, cl *topology.Cluster, layout *parallel.Layout, tables *priceTables, wall time.Time) *Result {
	opt.Reuse.publish(cl, layout, tables)
	*res = Result{Scenario: s, RunID: res.RunID, Cluster: cl, Layout: layout, Steps: res.Steps[:0], RuledOut: true, StepBoundS: res.StepBoundS, cutInPlay: res.cutInPlay, TwinPlay: res.TwinPlay}
	memory(s, res, opt.Memory)
	res.SimWallS = time.Since(wall).Seconds()
	return res
}

// play builds cfg's programs and plays them: on the representative ranks at
// analytic fidelity (unless opt.AllRanks), else on every rank. With steady
// set (a shortened play, parallel.PlanSteady) it counts each task's events
// (parallel.Executor.CountEvents) and plays with
// parallel.Executor.RunSteady: failed says the play stopped early, known
// not to replicate (only Settle may read it).
func play(ctx context.Context, s *scenario.Plan, opt Options, cfg *parallel.StepConfig, pr *pricer,
	cl *topology.Cluster, layout *parallel.Layout, res *Result, steady *parallel.Steady, fork, from *parallel.Fork, twin *twinClaim) (x *parallel.Executor, progs []*parallel.Program, eng *engine.Engine, failed bool, err error) {
	if opt.onBuild != nil {
		opt.onBuild(cfg)
	}
	if steady != nil {
		// Should this play fail, the next build resumes each stage at its
		// common prefix instead of building it again (parallel.Arena.KeepPrefixes).
		cfg.Arena.KeepPrefixes(steady)
	}
	cutoff := opt.StepCutoffS > 0 && s.VariabilityModel().Distribution == "none"
	if cutoff {
		// Ruled out, before any play and before the rest of its stages
		// are built, at the first stage whose computation alone
		// (parallel.ComputeBound's sum for the stage) or whose pipeline
		// bound (the stages before it around it) is over the cutoff,
		// each the full step's for a shortened build. Every build of the
		// step is checked:
		// the whole step built after failed shortened plays has a
		// pipeline bound their shortened builds had not. With one rank
		// per stage at analytic fidelity every task that is not compute
		// takes exactly its priced time, which the pipeline bound then
		// counts (parallel.StageCut.CommExact); at flow fidelity it counts
		// each collective at the least the runner takes over it
		// (commFloors).
		exact := s.Fidelity() == network.Analytic && !opt.AllRanks
		cfg.StageCut = parallel.StageCut{On: true, Limit: computeLimit(opt.StepCutoffS, s.Sim.Steps), Steady: steady, CommExact: exact}
		if s.Fidelity() == network.Flow {
			cfg.StageCut.Floors = pr.commFloors()
		}
	}
	progs, err = parallel.BuildAfter(cfg, pr, from) // the launch-queue walk starts after from's prefixes where they agree; its builder after their builds'
	cfg.StageCut = parallel.StageCut{}
	over := (*parallel.ComputeOverError)(nil)
	if errors.As(err, &over) {
		err = nil // (ruled out below, unless its pricing failed)
	}
	if err == nil {
		err = pr.err
	}
	if err != nil {
		opt.Reuse.dropTables(layout) // they may hold what the failed pricing left half done
		if opt.Reuse != nil {
			opt.Reuse.arena.ForgetBuild() // nor are its programs to be re-priced
		}
		return nil, nil, nil, false, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, false, err
	}
	if over != nil {
		res.StepBoundS = over.Compute.Seconds() / float64(s.Sim.Steps)
		return nil, nil, nil, false, errRuledOut
	}
	if twin != nil {
		var deadline engine.Time
		if cutoff {
			deadline = cutoffDeadline(opt.StepCutoffS, s.Sim.Steps)
		}
		if twin.lookup(ctx, twinKey(s, progs), deadline) {
			if e := twin.hit; e.cut {
				res.StepBoundS, res.cutInPlay, res.TwinPlay = e.bound, true, true
				return nil, nil, nil, false, errRuledOut
			}
			return nil, nil, nil, false, errTwinPlayed
		}
	}

	eng = opt.Reuse.newEngine()
	var soleRunner *collectives.Runner // (flow fidelity: its sole collectives' link figures, FlushSole)
	switch {
	case s.Fidelity() == network.Analytic && !opt.AllRanks:
		x = parallel.NewSymmetric(eng, layout, progs)
	default:
		var fab *network.Fabric
		if s.Fidelity() == network.Flow {
			fab = network.New(eng, cl.Bandwidths(), cl.Latencies(), network.Flow)
			res.fabric = fab
			if opt.checkEvery != nil {
				eng.SetAfterEvent(func(engine.Time) {
					if err := fab.CheckInvariants(); err != nil {
						opt.checkEvery(err)
					}
				})
			}
		}
		runner := collectives.NewRunner(eng, fab, s.Fidelity(), cl)
		x, err = parallel.NewFull(eng, layout, progs, runner, groupMaker{cl, pr.shares})
		if err != nil {
			return nil, nil, nil, false, err
		}
		if fab != nil && !opt.noSole {
			soleRunner = runner
			x.SetSoleGroups(soleGroups(cl, layout, progs))
			if opt.FiguresOnly {
				runner.SkipSoleLinks() // (Links is not read)
			}
			if opt.checkAlone {
				fab.CheckAlone()
			}
			if opt.onSole != nil {
				defer func() {
					opt.onSole(runner.SoleStarts(), fab.AloneClashes(), x.SoleOverlaps())
				}()
			}
		}
		if opt.KeepRanks != nil {
			if err := x.KeepTimes(opt.KeepRanks(res)); err != nil {
				return nil, nil, nil, false, err
			}
		}
		switch {
		case s.EPBackend() != parallel.EPNCCL && s.Fidelity() != network.Flow:
			// DeepEP/HybridEP dispatch is priced from the backend's
			// measured bandwidth, not NCCL's all-to-all: every rank plays
			// the same priced duration as the representative-rank run.
			x.TimeByTask(parallel.GroupEP)
		case s.EPBackend() != parallel.EPNCCL:
			// Under flow fidelity its bytes contend on the fabric, but
			// the library is never faster than its measured bandwidth.
			x.FloorByTask(parallel.GroupEP)
		}
	}
	iv := parallel.InterferenceOf(cl.GPU)
	iv.EP = pr.epSMs()
	if pr.spans == nil {
		pr.spans = parallel.SpansOfListed(layout, cl, pr.groupRanks)
	}
	if err := x.SetInterferenceSpans(iv, pr.spans); err != nil {
		return nil, nil, nil, false, err
	}
	x.Progress = opt.Progress
	x.Interrupt = ctx.Err
	// A play after a failed shortened one continues from that play's
	// state (parallel.Fork) when it can: its tasks ended there are not
	// played again.
	resume := func() bool { return from != nil && !opt.noResume && x.Resume(from) == nil }
	switch {
	case steady != nil && !opt.wholeSteady:
		x.CountEvents()
		if resume() {
			failed, err = x.RunSteadyResumed(*steady, fork)
		} else {
			failed, err = x.RunSteady(*steady, fork)
		}
	case steady != nil:
		x.CountEvents()
		err = x.Run()
	case cutoff:
		// The whole step, given up once it cannot end by the cutoff
		// (its step is then longer).
		deadline := cutoffDeadline(opt.StepCutoffS, s.Sim.Steps)
		if s.Fidelity() == network.Flow {
			x.SetCommFloors(pr.commFloors()) // (the build's: counted as in its pipeline bound)
		}
		var ended bool
		if ended, err = x.RunBefore(deadline, resume()); err == nil && !ended {
			res.StepBoundS = max(deadline, x.CutEnd()).Seconds() / float64(s.Sim.Steps)
			res.cutInPlay = true
			return nil, nil, nil, false, errRuledOut
		}
	case resume():
		err = x.RunResumed()
	default:
		err = x.Run()
	}
	if soleRunner != nil {
		soleRunner.FlushSole()
	}
	if err != nil {
		return nil, nil, nil, false, explainRunError(s, err)
	}
	if r := x.Resumed(); r > 0 {
		// Taken over: what the failed play played itself of them.
		_, _, own := from.Saved()
		res.FailedTasks -= own
		res.ResumedTasks += r
	}
	res.PlayedTasks += x.Completed() - x.Resumed()
	return x, progs, eng, failed, nil
}

// steadyMargin is the micro-batches beyond the pipeline's depth that a
// replicated step plays first (parallel.PlanSteady); steadyRetry the
// micro-batches more the second play adds when parallel.Executor.Settle has
// no estimate of when the units settle. Measured on the 70B layout sweep
// (issue 18, steady21; every point played at margins 0 to 32): below 3 the
// check's units do not fit the step; at 3 none replicates (the first units
// after the warm-up still move); 72 of the 82 points that replicate at some
// margin do by 7 (9 at 4, 8 of them with pp 1; 31 at 5, 23 at 6, 9 at 7),
// the other 10 at 8 to 28 (the persistent-GEMM waves' oscillation). A
// failed play costs the tail after its saved state (parallel.Fork, ≈ 4–6 k
// tasks at pp 16) and one unit more costs pp stages' unit: first margins of
// 5, 6, 7 and 8 play 5.45 M, 5.28 M, 5.37 M and 5.41 M tasks over the sweep
// (TestSweepPlayedReport), and 2.33 M, 2.34 M, 2.35 M and 2.37 M over the
// bundled, validation and holdout scenarios: 6.
const (
	steadyMargin = 6
	steadyRetry  = 8
	steadyTries  = 2 // shortened plays before longerPlay's: the first, and one Settle asks for
	// longerTries: shortened plays after those, each with twice the
	// margin of the one before (longerPlay), where each plays at most
	// 1/longStepShare of the step.
	longerTries   = 8
	longStepShare = 4
	// maxCycle: the longest cycle of periods (micro-batches) the longer
	// plays look for (parallel.Executor.Cycle).
	maxCycle = 8
)

// longerPlay plans a shortened play after the first two have failed
// (steadyTries): with margin, in units of units micro-batches (extra more
// played for their longer check) where units > 1, accepted only while it
// plays at most 1/longStepShare of the step's micro-batches.
//
// Why (issue 18, round 63): a step of thousands of micro-batches a pipeline
// (short sequences under a large batch) may settle later than Settle's
// estimate, or into a cycle of periods that repeats every few
// micro-batches, and was then played whole: seconds and gigabytes where a
// replicated play takes milliseconds. Llama 3 8B at 128 tokens on 64 GPUs,
// tp 8 pp 8 with sp, 32,768 micro-batches: played whole in 5.4 s and 3 GB,
// replicated on the third play in 7–40 ms, to the same figures. The
// periods of that plan's layouts cycle every 1, 2, 3 or 8 micro-batches
// (tp 2 pp 8: 3,715,748 and 3,679,577 ns in turn), which units of that
// many repeat exactly; the cycle is read off the failed play
// (parallel.Executor.Cycle), units of two where none shows. On the plan's
// 720-point sweep (plan --model llama3-8b --gpus 64 --seq 128
// --print-sweep) with three longer plays: of 593 points simulated, 456
// replicated on the first play, 67 on the second, 55 on the third (units
// of 2 and 8) and 8 on the fifth (units of 4 and 6; the fourth play's
// failure showed the cycle), 38–1,310 micro-batches played of
// 2,048–32,768; 7 played whole. The margins double, and each play resumes
// from the last one's saved state (parallel.Fork) and may stop at the
// first stage's units (Steady.Last), so what bounds a step that never
// settles is the share, not the count: with eight longer plays that sweep
// took 3.71 s of CPU and 835 MB against 6.09 s and 1.75 GB with three (3
// alternating runs), while a sweep whose long steps drift and never settle
// (plan --model gpt-oss-120b --gpu b200 --gpus 128 --seq 256, its pp 8
// document: stage 0 and stage 1 a few hundred ns a micro-batch apart,
// 8,192 micro-batches) took 83.6 against 82.5 s (2 runs, −1.2 ± 6.5 s).
// Before this round the 8B sweep took 92 s of CPU and 13.4 GB.
func longerPlay(cfg *parallel.StepConfig, margin, units, more int) (parallel.Steady, bool) {
	plan, ok := planTry(cfg, margin, units, more)
	if !ok {
		plan, ok = parallel.PlanSteady(cfg, margin) // (no longer units for its schedule)
	}
	return plan, ok && longStepShare*plan.Played <= cfg.Microbatches
}

// planTry plans a shortened play with margin: in units of units
// micro-batches with more played where units > 1 (parallel.PlanSteadyUnits),
// else of one.
func planTry(cfg *parallel.StepConfig, margin, units, more int) (parallel.Steady, bool) {
	if units > 1 {
		return parallel.PlanSteadyUnits(cfg, margin+more, units)
	}
	return parallel.PlanSteady(cfg, margin)
}

// worthShortening reports whether a first shortened play of played
// micro-batches (parallel.Steady.Played) is worth trying for a step of m,
// or the step should be played whole at once (issue 18, steady22). It
// changes only which plays run, never a figure: a replicated play is
// exact and a failed one is followed by the full play.
//
// The cost model, per point, relative to W, the CPU of playing the step
// whole, with x = played/m: a first play that replicates costs
// (1 + α)·x·W (its build and play, and what the full play does not do:
// counting events, the checks, the copies' figures; the per-point costs
// that do not shrink with the step fall in α too); one that fails costs
// W + φ·x·W (its build, NewSymmetric, its play's tail after the saved
// state, saving and resuming it, Settle, and a second shortened play where
// Settle asks for one, which may itself replicate: φ is their mean). With
// p the share of first plays that replicate, trying pays when
// p·(1 − (1 + α)·x) > (1 − p)·φ·x, i.e. x < p / (p·(1 + α) + (1 − p)·φ).
// Measured (sim/sweep TestPointCosts: the least thread CPU of 5 plays each
// way, shortened as a sweep worker and whole, load ≈ 7 on two cores, on
// main at cc6c4fb) on the 70B layout sweep's even-numbered points of the
// 92 that PlanSteady accepts, 46 points, fitting p as a share of plays
// and α, φ as ratios of sums: p = 0.370, α = 0.405, φ = 0.074, so
// x < 0.653 (the odd-numbered 46 alone: p = 0.696, α = 0.241, φ = 0.704,
// x < 0.646). Held out on the odd-numbered points: 285.4 ms of CPU trying
// every one, 281.8 ms with the rule (−1.3%; playing every one whole
// 365.5, the best choice per point 252.6); the even ones 261.5 → 242.9.
// (At 0c24dfa, before Stats and hostRepeats got cheaper, α was 0.593,
// φ 0.178 and x < 0.527: pp 2 with 16 micro-batches was turned away too.)
// Refitted the same way at d48d930 (fail24's cheaper failed plays, the
// cheaper builds of size24, slim24, mem24; four repeats, load 3–8):
// p 0.370, α 0.507–0.554, φ 0.084–0.204, x < 0.539–0.603 (odd alone
// x < 0.567–0.589). The sweep has 8 values of x, none in 0.563–0.687,
// and a bound below 0.5625 turns away pp 2 with 16 micro-batches, whose
// 8 points replicate every time at 0.88–0.92 W (7 of 7 passes): held
// out on the odd points that refit costs 0.0–0.6 ms more (one repeat:
// 197.8 → 198.4 ms, trying every one 203.3, all whole 243.7). Kept: 0.653
// lies in the interval of bounds least on the held-out half in every
// repeat; p fitted per pp chooses as this bound does.
// What it turns away: steps with fewer than about 1.5 times the
// micro-batches of the first play (pp 16 with 32, pp 4 with 16), where a
// replicated play gains little over the whole one and a failed one costs
// ≈ 1.3 W.
func worthShortening(played, m int) bool {
	// per mille
	const p, alpha, phi = 370, 405, 74
	return p*(1000*m-(1000+alpha)*played) > (1000-p)*phi*played
}

// maxReservedTasks bounds the tasks a Run reserves room for in its Reuse's
// arena (parallel.Arena.Reserve) and forks (parallel.Fork.Reserve):
// ≈ 1.05 M tasks at ≈ 200 bytes a task in the arena (the task record's
// 64, its hot record's 32, the dependency, successor and launch-queue
// lists', the executor's state and event counts) and ≈ 110 in the forks
// (a prefix task's state, hot record, dependencies, launch-queue waits),
// ≈ 330 MB of address space, written only as builds and saves reach it;
// 3.5× the 70B sweep's largest estimate. A larger point's build grows its
// storage as without a reservation.
const maxReservedTasks = 1 << 20

// Reserve makes room in r for the programs of up to tasks tasks in all
// (an upper bound, such as EstimateWork's ProgramTasks; at most
// maxReservedTasks): a caller that knows its largest point before the
// first reserves for it once, and its storage then never grows
// (parallel.Arena.Reserve), nor the forks' that shortened plays save in
// (parallel.Fork.Reserve; it drops what they hold: call it between Runs).
// Run reserves for its own point.
func (r *Reuse) Reserve(tasks int64) {
	if r != nil {
		n := int(min(tasks, maxReservedTasks))
		r.arena.Reserve(n)
		r.forks()[0].Reserve(n) // forkState[1] shares its copies
	}
}

// Reuse is what a goroutine running many scenarios one after another keeps
// from one Run to the next (Options.Reuse): the storage the task graphs are
// built and played in (parallel.Arena), and the last cluster built, used
// again while the scenarios ask for the same one (a sweep's points mostly
// do; a Cluster is never modified after it is built). The zero value is
// ready to use; one goroutine at a time.
type Reuse struct {
	arena parallel.Arena
	spec  topology.Spec // of built, with its own copy of the GPU record
	built *topology.Cluster
	// priced holds the collective groups, contention shares and prices
	// found for each layout on built (analytic fidelity, representative
	// rank): they depend on the cluster and the rank layout only, and a
	// sweep's points share a layout dozens of times over (micro-batch,
	// recompute, ZeRO and sp vary under one tp × pp).
	priced map[parallel.Layout]*priceTables
	// share, when set (SharePrices), is where this Reuse takes the cluster
	// and a layout's tables another Reuse already made, and offers its own.
	share *PriceShare
	twin  twinClaim      // the last run's claim on share's twin plays (twins)
	eng   *engine.Engine // the last run's, reset for the next (its queue storage kept)
	// forkState holds the shortened plays' saved states (parallel.Fork),
	// for the next play to resume from: a second shortened play saves
	// its own beside the first's.
	forkState   [2]parallel.Fork
	forksShared bool // forkState[1] keeps its copies in forkState[0]'s

	cfg parallel.StepConfig // the run's step configuration (stepConfig)
	// the shortened plays' step configurations (shortConfig)
	shortCfg [2]parallel.StepConfig

	// sends keeps pipeline-boundary send shares on built across layouts
	// (sendMemo), emptied when the cluster changes.
	sends sendMemo

	// pr is the last run's pricer, reset for the next with its maps and
	// scratch kept (Reuse.pricer); ranksTo is the last Result given its
	// rank lists (pricer.ranks, stRanks), which the next run takes back.
	pr      pricer
	ranksTo *Result
}

// pricer returns a pricer for a run as newPricerWith makes it: the
// Reuse's, reset, keeping its maps' tables and its scratch (a nil Reuse:
// a new one). The last run's Result loses the rank lists the pricer
// handed it (handedRanks; it then lists them anew, as without them): they
// are emptied for this run. Why: a pricer and its two maps were ≈ 0.6 KB
// of fresh memory a simulated point (the sweep's collector seldom runs,
// so each is a first-touched page in the end; issue 18, alloc43).
func (r *Reuse) pricer(s *scenario.Plan, c *topology.Cluster, l *parallel.Layout, dev workload.Device, t *priceTables) *pricer {
	if r == nil {
		return newPricerWith(s, c, l, dev, t)
	}
	if r.ranksTo != nil {
		r.ranksTo.ranks, r.ranksTo.stRanks = nil, nil
		r.ranksTo = nil
	}
	old := &r.pr
	epCosts, ranks, stRanks := old.epCosts, old.ranks, old.stRanks
	clear(epCosts)
	clear(ranks)
	clear(stRanks[:cap(stRanks)])
	if epCosts == nil {
		epCosts, ranks = map[costKey]engine.Time{}, map[[2]int][][]int{}
	}
	if cap(stRanks) >= l.PP {
		stRanks = stRanks[:l.PP]
	} else {
		stRanks = nil // made by stageRanks when asked
	}
	if t == nil {
		t = newPriceTables()
	}
	*old = pricer{s: s, c: c, l: l, dev: dev, dtype: s.Precision(), priceTables: t,
		epCosts: epCosts, ranks: ranks, stRanks: stRanks, sig: old.sig, sendPairs: old.sendPairs,
		devs: old.devs[:0], groupStores: old.groupStores, groupTurn: 1 - old.groupTurn}
	old.groupStores[old.groupTurn].Reset() // the lists of the run before the last
	if s.Heterogeneous() {
		for _, g := range s.GPUGroups() {
			old.devs = append(old.devs, workload.DeviceOf(*g.GPU))
		}
	}
	if len(old.devs) == 0 {
		old.devs = nil // OpsTime: nil means one device
	}
	return old
}

// handedRanks notes that res holds the rank lists of the Reuse's pricer
// (Run), for the next run to take back (Reuse.pricer).
func (r *Reuse) handedRanks(res *Result) {
	if r != nil {
		r.ranksTo = res
	}
}

// sendMemo returns the Reuse's send-share memo for cluster c (emptied
// when it held another cluster's), or nil for a nil Reuse or a cluster
// that is not the one the Reuse last built.
func (r *Reuse) sendMemo(c *topology.Cluster) *sendMemo {
	if r == nil || c != r.built {
		return nil
	}
	r.sends.share = r.share
	return r.sends.forCluster(c)
}

// stepConfig returns the storage for a run's step configuration: the
// Reuse's, which no one reads after the run (a nil Reuse: a new one).
func (r *Reuse) stepConfig() *parallel.StepConfig {
	if r == nil {
		return new(parallel.StepConfig)
	}
	return &r.cfg
}

// shortConfig returns the storage for the step configuration of a run's
// shortened play try: the Reuse's, one for even tries and one for odd
// ones, as forks are, so that a try never writes over the configuration
// of the try before it; the builder and its block caches take the pointer
// again at each build, the kept prefixes copy the configuration, and the
// executor keeps none, so no one reads it after the run (a nil Reuse: a
// new one). A configuration copied per try on the heap (744 bytes) was
// fresh garbage at every shortened play (docs/design.md, heapf51).
func (r *Reuse) shortConfig(try int) *parallel.StepConfig {
	if r == nil {
		return new(parallel.StepConfig)
	}
	return &r.shortCfg[try%2]
}

// forks returns the storage for shortened plays' saved states: the
// Reuse's (a nil Reuse: new ones).
func (r *Reuse) forks() *[2]parallel.Fork {
	if r == nil {
		f := new([2]parallel.Fork)
		f[1].ShareCopies(&f[0]) // detached one after the other (parallel.Fork.ShareCopies)
		return f
	}
	if !r.forksShared {
		r.forkState[1].ShareCopies(&r.forkState[0])
		r.forksShared = true
	}
	return &r.forkState
}

// newEngine returns an empty engine: the last run's, reset (a nil Reuse: a
// new one).
func (r *Reuse) newEngine() *engine.Engine {
	if r == nil {
		return engine.New()
	}
	if r.eng == nil {
		r.eng = engine.New()
	} else {
		r.eng.Reset()
	}
	return r.eng
}

// maxPricedLayouts bounds Reuse.priced and PriceShare.priced: a sweep
// worker meets its points' layouts in runs, so a few dozen hold every
// layout still in use (the 70B layout sweep has 24 on one cluster). A
// layout's tables hold one group per distinct shape of each (kind, stage)
// (at most the cluster's ranks per kind), each pipeline pair's send group
// and the prices asked (≈ 86 a layout on that sweep): on 1,024 GPUs well
// under 100 KB a layout, so 64 of them stay a few MB.
const maxPricedLayouts = 64

// tables returns the price tables kept for layout l on cluster c: this
// Reuse's own, else a copy of what another Reuse offered on the same
// cluster (SharePrices), else empty ones (a nil Reuse: always fresh ones).
// The key is the whole Layout (sizes, expert folding, rank order and the
// strides they give) on the cluster by identity: the tables read nothing
// else (analytic fidelity, representative rank; TestKeptPriceTablesEqualFresh).
func (r *Reuse) tables(c *topology.Cluster, l *parallel.Layout) *priceTables {
	if r == nil || c != r.built {
		return newPriceTables()
	}
	if t, ok := r.priced[*l]; ok {
		return t
	}
	if r.priced == nil || len(r.priced) >= maxPricedLayouts {
		r.priced = map[parallel.Layout]*priceTables{}
	}
	t := r.share.take(c, l)
	if t == nil {
		t = newPriceTables()
	}
	r.priced[*l] = t
	return t
}

// publish offers a copy of t, the tables of layout l on cluster c that a
// Run priced without error, to the Reuse's share, once (nil t, Reuse or
// share: nothing).
func (r *Reuse) publish(c *topology.Cluster, l *parallel.Layout, t *priceTables) {
	if r == nil || r.share == nil || t == nil || t.offered || c != r.built || r.share.users.Load() < 2 {
		return // nobody to take them (one worker: no copies made)
	}
	t.offered = true
	r.share.put(c, l, t.clone())
}

// SharePrices makes r take its clusters and layouts' price tables from s
// when another Reuse given s already made them, and offer its own there:
// a sweep's workers then price each layout once between them, not once
// each (≈ 5 M instructions a layout on 1,024 GPUs; what each takes is a
// copy of the same figures, so results do not change). One s for many
// Reuses, each on its own goroutine.
func (r *Reuse) SharePrices(s *PriceShare) {
	if r.share != s {
		r.share = s
		s.users.Add(1)
	}
}

// PriceShare is what the Reuses of one sweep share (Reuse.SharePrices):
// the last cluster built, read-only, and for layouts on it a copy of the
// first price tables a Run completed (each Reuse keeps filling its own
// copy). Safe for concurrent use; the zero value is ready.
type PriceShare struct {
	mu     sync.Mutex
	spec   topology.Spec // of built, its own copy as Reuse.spec
	built  *topology.Cluster
	priced map[parallel.Layout]*priceTables // read-only once put
	users  atomic.Int32                     // Reuses given the share (SharePrices)
	sends  map[sendKey]float64              // boundary send shares on built (sendMemo)
	twins  twinPlays                        // every-rank plays' figures by key (twins.go)
}

// cluster returns the share's cluster when spec asks for it, else builds
// spec's and makes it the share's (dropping the tables of the last one).
func (s *PriceShare) cluster(spec topology.Spec) (*topology.Cluster, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.built != nil && sameSpec(s.spec, spec) {
		return s.built, nil
	}
	c, err := topology.Build(spec)
	if err != nil {
		return nil, err
	}
	s.spec, s.built, s.priced, s.sends = ownSpec(spec), c, nil, nil
	return c, nil
}

// take returns a copy of the tables put for layout l on cluster c, nil
// when there are none (nil share: none).
func (s *PriceShare) take(c *topology.Cluster, l *parallel.Layout) *priceTables {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	t, ok := s.priced[*l]
	ok = ok && c == s.built
	s.mu.Unlock()
	if !ok {
		return nil
	}
	t = t.clone() // t is never written again: copied outside the lock
	t.offered = true
	return t
}

// put keeps t, read-only from now, as layout l's tables on cluster c,
// unless the share has moved to another cluster or holds l's already.
func (s *PriceShare) put(c *topology.Cluster, l *parallel.Layout, t *priceTables) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c != s.built {
		return
	}
	if _, ok := s.priced[*l]; ok {
		return
	}
	if s.priced == nil || len(s.priced) >= maxPricedLayouts {
		s.priced = map[parallel.Layout]*priceTables{}
	}
	s.priced[*l] = t
}

// dropTables forgets the price tables of layout l.
func (r *Reuse) dropTables(l *parallel.Layout) {
	if r != nil {
		delete(r.priced, *l)
	}
}

// cluster builds the cluster of spec, or returns the last one built when
// spec asks for the same, or the share's (SharePrices) when it is spec's
// (a nil Reuse always builds).
func (r *Reuse) cluster(spec topology.Spec) (*topology.Cluster, error) {
	if r == nil {
		return topology.Build(spec)
	}
	if r.built != nil && r.same(spec) {
		return r.built, nil
	}
	var c *topology.Cluster
	var err error
	if r.share != nil {
		c, err = r.share.cluster(spec) // built once for all the share's Reuses
	} else {
		c, err = topology.Build(spec)
	}
	if err != nil {
		return nil, err
	}
	r.spec, r.built, r.priced = ownSpec(spec), c, nil
	return c, nil
}

// ownSpec is spec with its own copies of the GPU record and node groups:
// the scenario may change its record; this copy does not.
func ownSpec(spec topology.Spec) topology.Spec {
	if spec.Hardware != nil {
		gpu := *spec.Hardware
		spec.Hardware = &gpu
	}
	spec.Groups = slices.Clone(spec.Groups)
	return spec
}

// same reports whether spec asks for the cluster last built (sameSpec).
func (r *Reuse) same(spec topology.Spec) bool { return sameSpec(r.spec, spec) }

// sameSpec reports whether b asks for the cluster a does: equal fields,
// and an equal GPU record by value. Records and specs whose bytes are
// equal are equal (sameBits); the others are compared field by field.
func sameSpec(a, b topology.Spec) bool {
	if (a.Hardware == nil) != (b.Hardware == nil) {
		return false
	}
	if a.Hardware != nil && !sameBits(a.Hardware, b.Hardware) && !reflect.DeepEqual(*a.Hardware, *b.Hardware) {
		return false
	}
	a.Hardware, b.Hardware = nil, nil
	return sameBits(&a, &b) || reflect.DeepEqual(a, b) // Groups hold GPU records by value
}

// sameBits reports whether *a and *b hold the same bytes: then every field
// is equal (a string or slice header with the same pointer and length has
// the same contents; a float the same bits). Unequal bytes say nothing
// (equal strings at two addresses, padding): callers compare by value
// then. Why: a sweep's points share one catalog GPU record and mostly one
// cluster spec, and reflect.DeepEqual over the 3 KB record and the spec was
// ≈ 0.7% of the 1,000-point 70B sweep's CPU, with ≈ 7 MB of allocations
// (its visited map), for every point.
func sameBits[T any](a, b *T) bool {
	n := int(unsafe.Sizeof(*a))
	return bytes.Equal(unsafe.Slice((*byte)(unsafe.Pointer(a)), n), unsafe.Slice((*byte)(unsafe.Pointer(b)), n))
}

// KeepFiguresOnly drops the played tasks and times a Result holds (Tasks,
// Links and Check need them and must not be called afterwards), keeping the
// figures: for a Result whose storage a Reuse will overwrite.
func (r *Result) KeepFiguresOnly() { r.exec, r.progs, r.ranks, r.stRanks = nil, nil, nil, nil }

// groupMaker builds the every-rank executor's groups, each with the
// contention share the pricer found for it (analytic fidelity).
type groupMaker struct {
	c      *topology.Cluster
	shares map[uint64]collectives.Share
}

func (g groupMaker) NewGroup(ranks []int) (*collectives.Group, error) {
	grp, err := collectives.NewGroup(g.c, ranks)
	if err != nil {
		return nil, err
	}
	if sh, ok := g.shares[ranksKey(ranks)]; ok {
		grp.SetShare(sh) // a new group: no copy (Group.WithShare) needed
	}
	return grp, nil
}

// pricer prices compute with the workload model on the scenario's GPU and
// collectives with their closed-form costs on the actual groups.
type pricer struct {
	s     *scenario.Plan
	c     *topology.Cluster
	l     *parallel.Layout
	dev   workload.Device
	devs  []workload.Device // per node group (scenario.Plan.GPUGroups), when there are several
	dtype workload.Dtype
	*priceTables
	epCosts map[costKey]engine.Time // DeepEP/HybridEP dispatches: they depend on the scenario
	err     error
	// recordShares fills priceTables.shares, which only the every-rank
	// executor reads (groupMaker); the representative-rank run skips a map
	// entry per contended group and pipeline pair (131,072 at 128k GPUs).
	recordShares bool
	// sig is signature's scratch, reused from group to group.
	sig sigScratch
	// ranks memoises Layout.Groups by (kind, stage) for this run: the
	// pricer and links.arrow's traffic (Result.traffic) list the same
	// stages' groups, 8,192 of them a stage at 131,072 GPUs (issue 18).
	// Per run, not in the reusable priceTables: a sweep worker would keep
	// every layout's rank lists and never read them.
	ranks map[[2]int][][]int
	// groupStores are the storage ranks' lists are cut from
	// (parallel.Layout.GroupsInto), kept by a Reuse's pricer from run to
	// run, each run the other one's (groupTurn), reset: the lists a run
	// listed stay as they were through the next run, whatever a caller
	// still holds of the last Result's (it has given the map back,
	// Reuse.pricer), and are overwritten the run after. Fresh arrays a
	// listing were ≈ 0.6 MB of new memory over the 1,000-point 70B
	// sweep (walk43).
	groupStores [2]parallel.GroupStore
	groupTurn   int
	// sendPairs is sendContention's scratch: a boundary's forward and
	// backward pairs.
	sendPairs [2][][2]int
	// sendMemo, when set (Run with a Reuse), keeps boundary send shares
	// across the layouts played on p.c (sendContention).
	sendMemo *sendMemo
	// stRanks memoises Layout.StageRanks by stage for this run, shared
	// with links.arrow's traffic like ranks (nil: not listed yet).
	stRanks [][]int
	// floors are this run's floors on the collectives of a play at flow
	// fidelity (commFloors), nil until asked.
	floors *commFloors
}

// priceTables are what a pricer finds for one cluster and rank layout: the
// groups, contention shares and collective prices depend on nothing else
// (at analytic fidelity), so a Reuse keeps them across sweep points.
type priceTables struct {
	groups    map[[2]int][]*collectives.Group // (kind, stage) → one group per distinct shape
	costs     priceMemo[costKey, engine.Time]
	sends     map[[2]int]*collectives.Group
	sendCosts priceMemo[sendCostKey, engine.Time] // SendTime's answers
	shares    map[uint64]collectives.Share        // contended groups by ranksKey (contention)
	sendShare map[[2]int]float64                  // sendContention by stage pair
	// tree holds the (kind, stage) keys of groups whose Share.Tree is the
	// routed tree pattern's (stageGroupsFor); the others' is 1.
	tree  map[[2]int]bool
	spans [][parallel.NumGroupKinds]bool // parallel.SpansOf the layout on the cluster
	// offered says a PriceShare holds a copy of these tables (put from
	// them, or they were taken from it): Reuse.publish skips them.
	offered bool
}

// clone returns a copy of t that its owner may fill without touching t:
// new maps, but for the prices, which the copy reads from t's as a base
// (priceMemo.copy: t's own prices become t's base too, so clone writes t
// unless t holds none of its own); the groups, their lists and the spans
// are shared, since no pricer writes them once made (stageGroups and
// SendTime add entries, stageGroupsFor replaces a list by a new one, Run
// sets spans once).
func (t *priceTables) clone() *priceTables {
	return &priceTables{groups: maps.Clone(t.groups), costs: t.costs.copy(), sends: maps.Clone(t.sends), sendCosts: t.sendCosts.copy(),
		shares: maps.Clone(t.shares), sendShare: maps.Clone(t.sendShare), tree: maps.Clone(t.tree), spans: t.spans}
}

func newPriceTables() *priceTables {
	return &priceTables{groups: map[[2]int][]*collectives.Group{},
		sends: map[[2]int]*collectives.Group{}, shares: map[uint64]collectives.Share{}, sendShare: map[[2]int]float64{},
		tree: map[[2]int]bool{}}
}

type costKey struct {
	kind, stage int
	op          collectives.Op
	bytes       float64
}

func newPricer(s *scenario.Plan, c *topology.Cluster, l *parallel.Layout, dev workload.Device) *pricer {
	return newPricerWith(s, c, l, dev, nil)
}

// newPricerWith is newPricer keeping its prices in t (nil: new tables), so
// that a Run given kept tables (Reuse.tables) makes no empty ones to drop
// (issue 18, garb24).
func newPricerWith(s *scenario.Plan, c *topology.Cluster, l *parallel.Layout, dev workload.Device, t *priceTables) *pricer {
	if t == nil {
		t = newPriceTables()
	}
	p := &pricer{s: s, c: c, l: l, dev: dev, dtype: s.Precision(), priceTables: t,
		epCosts: map[costKey]engine.Time{}, ranks: map[[2]int][][]int{}}
	if s.Heterogeneous() {
		for _, g := range s.GPUGroups() {
			p.devs = append(p.devs, workload.DeviceOf(*g.GPU))
		}
	}
	return p
}

// OpsTime prices ops on the GPU of the stage: on a heterogeneous cluster
// the slowest of the GPU types its ranks sit on, since synchronous data
// parallelism (the gradient reduction every step ends in) makes every
// replica of a stage wait for the slowest.
func (p *pricer) OpsTime(stage int, ops []workload.Op) engine.Time {
	if p.devs == nil {
		return engine.Seconds(opsTime(p.dev, p.dtype, ops))
	}
	worst := 0.0
	for i, dev := range p.devs {
		if p.s.StageGroups()[stage]&(1<<i) != 0 {
			worst = max(worst, opsTime(dev, p.dtype, ops))
		}
	}
	return engine.Seconds(worst)
}

func opsTime(dev workload.Device, dtype workload.Dtype, ops []workload.Op) float64 {
	t := 0.0
	for _, op := range ops {
		t += dev.OpTime(op, dtype)
	}
	return t
}

// deviceClasses numbers the stages' sets of GPU types (StepConfig
// .DeviceClass) in order of first appearance; nil on a homogeneous cluster.
func (p *pricer) deviceClasses() []int { return deviceClassesOf(p.s) }

// deviceClassesOf is parallel.StepConfig.DeviceClass for s, as Run sets it
// (pricer.deviceClasses; FirstBuildKey hashes it without a pricer): nil
// unless s is heterogeneous (the pricer then has a device per GPU group).
func deviceClassesOf(s *scenario.Plan) []int {
	if !s.Heterogeneous() || len(s.GPUGroups()) == 0 {
		return nil
	}
	masks := s.StageGroups()
	if masks == nil {
		return nil
	}
	out := make([]int, len(masks))
	for st, m := range masks {
		out[st] = slices.Index(masks, m) // the first stage with this set
	}
	return out
}

func (p *pricer) CommTime(k parallel.GroupKind, stage int, op collectives.Op, size units.Bytes) engine.Time {
	bytes := float64(size)
	key := costKey{int(k), stage, op, bytes}
	if k == parallel.GroupEP && op == collectives.AllToAll && p.s.EPBackend() != parallel.EPNCCL {
		t, ok := p.epCosts[key]
		if !ok {
			t = p.epDispatchTime(stage, bytes)
			p.epCosts[key] = t
		}
		return t
	}
	if t, ok := p.costs.get(key); ok {
		return t
	}
	var worst engine.Time
	for _, g := range p.stageGroupsFor(k, stage, op) {
		c, err := g.Cost(op, collectives.Auto, size)
		if err != nil {
			p.fail(err)
			continue
		}
		worst = max(worst, c.Time)
	}
	p.costs.set(key, worst)
	return worst
}

// epDispatchTime prices a DeepEP/HybridEP dispatch or combine of bytes per
// rank on the EP groups of a pipeline stage (parallel.EPDispatch); the
// slowest group sets the time.
func (p *pricer) epDispatchTime(stage int, bytes float64) engine.Time {
	var worst engine.Time
	for _, d := range p.epDispatches(stage) {
		t, err := d.Time(bytes)
		if err != nil {
			p.fail(err)
			continue
		}
		worst = max(worst, t)
	}
	return worst
}

// epDispatches describes each distinct EP group shape of a stage (by the
// scale-up domains it spans) for parallel.EPDispatch.
func (p *pricer) epDispatches(stage int) []parallel.EPDispatch {
	m := p.s.Arch()
	var out []parallel.EPDispatch
	for _, ranks := range p.groupRanks(parallel.GroupEP, stage) {
		doms := p.domainsOf(ranks)
		if slices.ContainsFunc(out, func(d parallel.EPDispatch) bool { return d.Domains == doms }) {
			continue
		}
		out = append(out, parallel.EPDispatch{Backend: p.s.EPBackend(), SMs: p.epSMsFor(doms > 1),
			Experts: m.MoE.Experts, TopK: m.MoE.TopK, Ranks: len(ranks), Domains: doms,
			ScaleUpBW: float64(p.c.GPU.ScaleUpBandwidth), NICBW: float64(p.c.NICBandwidthPerGPU())})
	}
	return out
}

func (p *pricer) domainsOf(ranks []int) int {
	var seen []int
	for _, r := range ranks {
		if d := p.c.DomainOf(r); !slices.Contains(seen, d) {
			seen = append(seen, d)
		}
	}
	return len(seen)
}

// epSMsFor is parallel.ep_sms, or the backend's default for a group inside
// one scale-up domain (multi false) or across domains.
func (p *pricer) epSMsFor(multi bool) int {
	if n := p.s.Parallel.EPSMs; n > 0 {
		return n
	}
	return p.s.EPBackend().DefaultSMs(multi)
}

// epSMs is the SMs an EP dispatch or combine holds in the compute-slowdown
// model (parallel.Interference.EP): 0 for NCCL, else the backend's count,
// at the cross-domain default when any EP group spans domains.
func (p *pricer) epSMs() int {
	if p.s.EPBackend() == parallel.EPNCCL || p.l.GroupSize(parallel.GroupEP) < 2 {
		return 0
	}
	multi := false
	for st := 0; st < p.l.PP && !multi; st++ {
		for _, ranks := range p.groupRanks(parallel.GroupEP, st) {
			if p.domainsOf(ranks) > 1 {
				multi = true
				break
			}
		}
	}
	return p.epSMsFor(multi)
}

// groupRanks is p.l.Groups(k, stage), listed once per run (p.ranks) for
// k and the kinds listed as k (Layout.ListedAs: the spans ask for every
// kind, and a dense layout's expert kinds are its TP and DP groups). The
// lists are shared: no caller may modify them.
func (p *pricer) groupRanks(k parallel.GroupKind, stage int) [][]int {
	key := [2]int{int(p.l.ListedAs(k)), stage}
	if g, ok := p.ranks[key]; ok {
		return g
	}
	g := p.l.GroupsInto(k, stage, &p.groupStores[p.groupTurn])
	p.ranks[key] = g
	return g
}

// stageRanks is p.l.StageRanks(stage), listed once per run (p.stRanks);
// shared like groupRanks' lists.
func (p *pricer) stageRanks(stage int) []int {
	if p.stRanks == nil {
		p.stRanks = make([][]int, p.l.PP)
	}
	if p.stRanks[stage] == nil {
		p.stRanks[stage] = p.l.StageRanks(stage)
	}
	return p.stRanks[stage]
}

func (p *pricer) fail(err error) {
	if p.err == nil {
		p.err = err
	}
}

// stageGroups returns one collectives.Group per distinct shape among the
// kind-k groups of a pipeline stage; the slowest sets the (symmetric) time.
func (p *pricer) stageGroups(k parallel.GroupKind, stage int) []*collectives.Group {
	// Kinds listed alike (Layout.ListedAs) have the same groups, so the
	// same shapes and share: found once (neither is GroupEP, the one
	// kind whose share routes the all-to-all pattern).
	k = p.l.ListedAs(k)
	key := [2]int{int(k), stage}
	if gs, ok := p.groups[key]; ok {
		return gs
	}
	var out []*collectives.Group
	var sigs [][]int
	all := p.groupRanks(k, stage)
	// The tree pattern is routed when an op that reads its share is priced
	// (stageGroupsFor), except for the every-rank executor, whose recorded
	// shares (contention) hold every pattern's.
	pats := collectives.RingPattern
	if k == parallel.GroupEP {
		pats |= collectives.AllToAllPattern
	}
	if p.recordShares {
		pats |= collectives.TreePattern
		p.tree[key] = true
	}
	share := p.contention(all, pats)
	for _, ranks := range all {
		sig := p.signature(ranks) // the pricer's scratch: cloned when kept
		if slices.ContainsFunc(sigs, func(x []int) bool { return slices.Equal(x, sig) }) {
			continue
		}
		sigs = append(sigs, slices.Clone(sig))
		g, err := collectives.NewGroup(p.c, ranks)
		if err != nil {
			p.fail(err)
			continue
		}
		g.SetShare(share) // a new group: no copy (Group.WithShare) needed
		out = append(out, g)
	}
	p.groups[key] = out
	return out
}

// stageGroupsFor is stageGroups for pricing op: when op reads the tree
// share (collectives.ReadsTreeShare: an all-reduce), the groups' Share
// .Tree is the tree pattern's contention, routed the first time such an
// op is priced for the kind and stage (p.tree) and the groups replaced by
// copies carrying it. Until then their tree share is 1, which no other op
// reads. The groups are the same as if every pattern had been routed at
// once: each pattern's share is found on its own
// (collectives.StaticSharesFor; TestTreeShareAskedLate). Why: the tree
// pattern is most of the routing, and most groups never all-reduce
// (issue 18).
func (p *pricer) stageGroupsFor(k parallel.GroupKind, stage int, op collectives.Op) []*collectives.Group {
	gs := p.stageGroups(k, stage)
	if !collectives.ReadsTreeShare(op) {
		return gs
	}
	k = p.l.ListedAs(k)
	key := [2]int{int(k), stage}
	if p.tree[key] {
		return gs
	}
	p.tree[key] = true
	tree := p.contention(p.groupRanks(k, stage), collectives.TreePattern).Tree
	if !(tree > 0 && tree < 1) {
		return gs // what WithShare would make of it: no contention, as the groups have
	}
	// New copies in a new list: the old ones may be shared with other
	// tables (priceTables.clone).
	out := make([]*collectives.Group, len(gs))
	for i, g := range gs {
		sh := g.Share()
		sh.Tree = tree
		out[i] = g.WithShare(sh)
	}
	p.groups[key] = out
	return out
}

// noContention is the share of a group alone on the fabric.
var noContention = collectives.Share{Ring: 1, Tree: 1, Direct: 1}

// contention is, at analytic fidelity, the share of the scale-out network
// that the groups of one kind and pipeline stage keep when all of them run
// the same collective at once (collectives.StaticShares: oversubscribed
// tiers and ECMP collisions), the lowest over the groups per pattern: the
// step waits for the slowest group, and giving every group that share
// keeps the representative-rank and every-rank executors identical. It
// records the share for the every-rank executor (groupMaker). Only the
// patterns in pats are routed (collectives.StaticSharesFor: the others'
// shares are 1): all-to-all for EP groups only (the only ones that issue
// one), and for the every-rank executor's records ring and tree, as
// collectives.StaticShares routes them. At flow fidelity the fabric shares
// the links itself: no share.
func (p *pricer) contention(groups [][]int, pats collectives.Patterns) collectives.Share {
	if p.s.Fidelity() != network.Analytic {
		return noContention
	}
	low, err := collectives.LowestStaticShareFor(p.c, groups, pats)
	if err != nil {
		p.fail(err)
		return noContention
	}
	if low != noContention && p.recordShares {
		for _, ranks := range groups {
			p.shares[ranksKey(ranks)] = low
		}
	}
	return low
}

// sendContention is contention for the pipeline sends between stages a
// and b: every rank of one stage sending to its peer in the other at once,
// in one direction (a forward activation or a backward gradient; in a
// pipelined step the two directions of a boundary do not coincide). Unlike
// a ring, whose every edge waits for its slowest, a send waits only for
// itself: its share is the mean over the stage's pairs of each pair's
// static-load share (collectives.SendShares), the lower of the two
// directions. Checked against flow fidelity (docs/validation.md, "Fabric
// contention at analytic fidelity"): the lowest pair's share instead
// doubles or triples the exposed pipeline time that flow fidelity shows.
func (p *pricer) sendContention(a, b int) (low float64) {
	if p.s.Fidelity() != network.Analytic {
		return 1
	}
	key := [2]int{min(a, b), max(a, b)}
	if f, ok := p.sendShare[key]; ok {
		return f
	}
	defer func() { p.sendShare[key] = low }()
	ranks := p.stageRanks(a)
	// A rank's peer in stage b is the rank with its coordinates but PP = b:
	// RankOf is linear in the coordinates (a sum of coordinate × stride)
	// and every rank here has PP = a, so the peer is the rank plus the
	// difference of the two stages' offsets (no CoordOf, four divisions,
	// per rank: 8,192 ranks a boundary at 131,072 GPUs; issue 18).
	step := p.l.RankOf(parallel.Coord{PP: b}) - p.l.RankOf(parallel.Coord{PP: a})
	// Another layout on this cluster may have routed these very pairs
	// (sendMemo: the key fixes them exactly).
	mk, keyed := sendKey{}, false
	if p.sendMemo != nil && len(ranks) > 0 {
		mk, keyed = stridedKey(ranks, step)
	}
	found := false
	if keyed {
		low, found = p.sendMemo.get(mk)
	}
	if !found {
		// The pairs live in the pricer's scratch (a stage's size each,
		// every boundary; issue 18).
		var err error
		low, p.sendPairs, err = boundarySendShare(p.c, ranks, step, p.sendPairs)
		if err != nil {
			p.fail(err)
			return 1
		}
		if keyed {
			p.sendMemo.put(mk, low)
		}
	}
	if low < 1 && p.recordShares {
		for _, r := range ranks {
			pair := [2]int{r, r + step}
			p.shares[ranksKey(pair[:])] = collectives.Share{Ring: 1, Tree: 1, Direct: low}
		}
	}
	return low
}

// ranksKey identifies a rank set whatever its order (FNV-1a of the sorted
// ranks).
func ranksKey(ranks []int) uint64 {
	rs := slices.Clone(ranks)
	slices.Sort(rs)
	h := uint64(14695981039346656037)
	for _, r := range rs {
		h = (h ^ uint64(r)) * 1099511628211
	}
	return h
}

// signature summarises how a group sits on the cluster: its size, how many
// scale-up domains and nodes it spans, the ranks per domain (sorted) and
// whether its members share one local GPU index (rail-aligned), and on a
// heterogeneous cluster the node group whose communication profile the
// group runs with (collectives.NewGroup: its first rank's).
//
// Counted on sorted copies rather than in maps: a data-parallel group of
// 1,024 ranks built three 1,024-entry maps, ~0.15 s of CPU over the 128
// such groups of a 131,072-GPU run (issue 18). The copies and the result
// live in the pricer's scratch (p.sig), valid until the next call: a
// 131,072-GPU run signs 16,384 tensor groups and 128 data-parallel ones,
// five allocations each before (13 MB).
func (p *pricer) signature(ranks []int) []int {
	gpn := max(p.c.GPUsPerNode(), 1)
	sc := &p.sig
	doms, nodes := resize(sc.doms, len(ranks)), resize(sc.nodes, len(ranks))
	locals := resize(sc.locals, gpn)
	clear(locals)
	defer func() { sc.doms, sc.nodes, sc.locals = doms, nodes, locals }()
	nLocals := 0
	for i, r := range ranks {
		doms[i], nodes[i] = p.c.DomainOf(r), p.c.NodeOf(r)
		l := r % gpn
		if l < 0 { // not a rank of the cluster: NewGroup refuses the group
			l += gpn
		}
		if !locals[l] {
			locals[l] = true
			nLocals++
		}
	}
	slices.Sort(doms)
	slices.Sort(nodes)
	counts := sc.counts[:0] // ranks per domain
	for i := 0; i < len(doms); {
		j := i + 1
		for j < len(doms) && doms[j] == doms[i] {
			j++
		}
		counts = append(counts, j-i)
		i = j
	}
	nNodes := 0
	for i := range nodes {
		if i == 0 || nodes[i] != nodes[i-1] {
			nNodes++
		}
	}
	slices.Sort(counts)
	sc.counts = counts
	sig := append(append(sc.sig[:0], len(ranks), len(counts), nNodes, nLocals), counts...)
	if len(p.c.Groups) > 1 {
		sig = append(sig, -1-p.c.GroupOf(ranks[0])) // negative: apart from the counts
	}
	sc.sig = sig
	return sig
}

// sigScratch is signature's reused storage.
type sigScratch struct {
	doms, nodes, counts, sig []int
	locals                   []bool
}

// resize returns s with length n, reusing its storage when it can; the
// values are not cleared.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

func (p *pricer) SendTime(from, to int, bytes units.Bytes) engine.Time {
	// A layout's points ask the same sends, by micro-batch size and
	// sequence parallelism (the builder remembers a build's own only):
	// priced once per layout, as CommTime's collectives (issue 18).
	ck := sendCostKey{from, to, bytes}
	if t, ok := p.sendCosts.get(ck); ok {
		return t
	}
	key := [2]int{from, to}
	g, ok := p.sends[key]
	if !ok {
		a := p.l.RankOf(parallel.Coord{PP: from})
		b := p.l.RankOf(parallel.Coord{PP: to})
		var err error
		g, err = collectives.NewGroup(p.c, []int{a, b})
		if err != nil {
			p.fail(err)
			return 0
		}
		g.SetShare(collectives.Share{Ring: 1, Tree: 1, Direct: p.sendContention(from, to)}) // a new group: no copy (Group.WithShare) needed
		p.sends[key] = g
	}
	c, err := g.Cost(collectives.Send, collectives.Auto, bytes)
	if err != nil {
		p.fail(err)
		return 0
	}
	p.sendCosts.set(ck, c.Time)
	return c.Time
}

// sendCostKey is a SendTime: the stages and the bytes.
type sendCostKey struct {
	from, to int
	bytes    units.Bytes
}

// summarise fills the result's figures from the executed programs; mem is
// s.MemoryPerStage() when the caller has it (Options.Memory), else nil.
func summarise(ctx context.Context, s *scenario.Plan, res *Result, dev workload.Device, mem []scenario.StageMemory) error {
	x := res.exec
	steps := float64(s.Sim.Steps)
	var end engine.Time
	n := x.Instances()
	var busyMax, bubble, host, hostBound, hostIssue engine.Time
	var exposed [5]engine.Time
	// Up to 64 stages on the stack: a made list of more than 32 bytes is
	// heap memory, fresh a simulated point of a sweep (emit52).
	var onStack [64]engine.Time
	stageCompute := onStack[:0]
	if s.Parallel.PP <= len(onStack) {
		stageCompute = onStack[:s.Parallel.PP]
	} else {
		stageCompute = make([]engine.Time, s.Parallel.PP)
	}
	for i := 0; i < n; i++ {
		if i&63 == 63 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		a := x.Stats(i)
		_, stage, _ := x.Place(i)
		stageCompute[stage] = max(stageCompute[stage], a.Compute/engine.Time(s.Sim.Steps))
		hostBound += a.HostBound
		hostIssue += a.HostIssue
		end = max(end, a.End)
		busyMax = max(busyMax, a.Compute)
		for k := range exposed {
			exposed[k] += a.Exposed[k]
		}
		bubble += a.Idle
		host += a.Host
	}
	// Sums stay in integer nanoseconds, so averaging over one representative
	// per stage or over every rank gives bit-identical figures.
	total := end.Seconds() + playSteps(s, res, stageCompute, end)
	res.StepTimeS = total / steps
	res.ComputeS = busyMax.Seconds() / steps
	res.HostSyncS = float64(host) / float64(n) / 1e9 / steps
	res.HostBoundS = float64(hostBound) / float64(n) / 1e9 / steps
	res.HostIssueS = float64(hostIssue) / float64(n) / 1e9 / steps
	for k := range exposed {
		res.ExposedCommS[k] = float64(exposed[k]) / float64(n) / 1e9 / steps
	}
	if total > 0 {
		res.BubbleFraction = float64(bubble) / float64(n) / float64(end)
	}
	deriveFigures(s, res, dev, mem)
	return nil
}

// deriveFigures sets the figures of res that follow from its scenario and
// the play's figures (step time): FLOPs, throughput, MFU and HFU, memory,
// cost and energy. Each is set afresh, whatever res held.
func deriveFigures(s *scenario.Plan, res *Result, dev workload.Device, mem []scenario.StageMemory) {
	m := s.Arch()
	tokens := float64(s.Training.GlobalBatch) * float64(s.Training.SeqLen)
	gpus := float64(s.GPUs())
	res.ModelFLOPsPerStep = m.ModelFLOPsPerToken(s.Training.SeqLen) * tokens
	res.HardwareFLOPsPerStep = s.HardwareFLOPsPerToken(s.Training.SeqLen) * tokens
	if res.StepTimeS > 0 {
		res.TokensPerS = tokens / res.StepTimeS
		res.TokensPerSPerGPU = res.TokensPerS / gpus
		peak := float64(dev.Peak[s.Precision()]) * gpus * res.StepTimeS
		if s.Heterogeneous() {
			// Peak of a mixed cluster: the sum of every GPU's own peak.
			peak = 0
			for _, g := range s.GPUGroups() {
				peak += float64(workload.DeviceOf(*g.GPU).Peak[s.Precision()]) * float64(g.GPUs) * res.StepTimeS
			}
		}
		if peak > 0 {
			res.MFU = res.ModelFLOPsPerStep / peak
			res.HFU = res.HardwareFLOPsPerStep / peak
		}
		res.TFLOPsPerGPU = res.ModelFLOPsPerStep / res.StepTimeS / gpus / 1e12
	}
	memory(s, res, mem)
	hours := res.StepTimeS / 3600
	res.CostUSDPerStep = s.GPUHourUSD() * gpus * hours
	res.EnergyKWhPerStep = s.GPU().TDPWatts * s.Cluster.PUE * gpus * hours / 1000
	if s.Heterogeneous() {
		// GPUHourUSD is the groups' GPU-weighted mean price, so
		// the cost above is the sum of each group's; energy sums each
		// group's TDP the same way.
		res.EnergyKWhPerStep = 0
		for _, g := range s.GPUGroups() {
			res.EnergyKWhPerStep += g.GPU.TDPWatts * s.Cluster.PUE * float64(g.GPUs) * hours / 1000
		}
	}
}

func memory(s *scenario.Plan, res *Result, known []scenario.StageMemory) {
	if known != nil {
		res.Memory, res.Fits = known, true
	} else {
		res.Memory, res.Fits = s.MemoryPerStage()
	}
	res.MemCapacityBytes = s.MemCapacityBytes()
	res.PeakMemBytes, res.MinPeakMemBytes, res.PeakReservedBytes = 0, math.Inf(1), 0
	for _, m := range res.Memory {
		res.PeakMemBytes = max(res.PeakMemBytes, m.Total)
		res.MinPeakMemBytes = min(res.MinPeakMemBytes, m.Total)
		res.PeakReservedBytes = max(res.PeakReservedBytes, m.AllocatorReserved())
	}
	res.MemMarginBytes = res.MemCapacityBytes - res.PeakMemBytes
	if s.Heterogeneous() {
		// Each stage against its own GPUs' capacity.
		res.MemMarginBytes = math.Inf(1)
		for _, m := range res.Memory {
			res.MemMarginBytes = min(res.MemMarginBytes, s.StageCapacityBytes(m.Stage)-m.Total)
		}
	}
}

// TaskRecord is one executed task of one rank, for timelines and traces.
type TaskRecord struct {
	Step                     int
	Rank, Node               int
	Stream, Kind, Name       string
	Group                    string
	Layer, Microbatch, Chunk int
	StartNs, EndNs           int64
	FLOPs, Bytes             float64
}

// TimelineRanks is the default set of ranks in the timeline: one
// data-parallel replica (every TP/CP/PP rank with data-parallel coordinate 0)
// and every rank of the first node, so that a one-node run shows all its
// GPUs (issue 21) while a large cluster's files stay one replica in size.
func (r *Result) TimelineRanks() []int {
	gpn := r.Scenario.Cluster.GPUsPerNode
	var out []int
	for rank := 0; rank < r.Layout.World(); rank++ {
		if c := r.Layout.CoordOf(rank); c.DP == 0 || rank < gpn {
			out = append(out, rank)
		}
	}
	return out
}

// Tasks calls fn for every executed task of the given ranks, rank by rank in
// the order given, tasks in issue order. A symmetric (analytic) run reports
// for each rank the times of its stage's representative; an every-rank run
// only the ranks whose times it kept (Options.KeepRanks).
func (r *Result) Tasks(ranks []int, fn func(TaskRecord)) {
	x := r.exec
	byRank := map[int]int{}
	byStage := map[int]int{}
	for i := 0; i < x.Instances(); i++ {
		rank, stage, _ := x.Place(i)
		byRank[rank] = i
		byStage[stage] = i
	}
	// The records of one instance, made once for the ranks it stands for
	// (in a symmetric run every rank of a stage, one after the other in
	// the default ranks): only Rank and Node differ from rank to rank.
	// Making them again for each rank (the times copied, every name
	// looked up) was ≈ 13% of a pp 16 × tp 16 run's CPU (perf; issue 18,
	// docs/design.md round 57).
	var recs []TaskRecord
	var times instanceTimes
	made := -1 // the instance recs holds
	for _, rank := range ranks {
		var i int
		var ok bool
		if x.Symmetric() {
			i, ok = byStage[r.Layout.CoordOf(rank).PP]
		} else {
			i, ok = byRank[rank]
		}
		if !ok || !x.HasTimes(i) {
			continue // not kept (Options.KeepRanks)
		}
		if i != made {
			recs = r.instanceRecords(i, recs[:0], &times)
			made = i
		}
		node := r.Cluster.NodeOf(rank)
		for _, rec := range recs {
			rec.Rank, rec.Node = rank, node
			fn(rec)
		}
	}
}

// instanceTimes is Tasks' storage for an instance's times, kept from one
// instance to the next.
type instanceTimes struct{ start, end, issued []engine.Time }

// instanceRecords appends to recs the records of instance i's executed
// tasks in issue order, Rank and Node left 0 (Tasks sets them), and
// returns it; its times go through buf. The host track: one row per run
// of back-to-back issues of one layer's pass (same step, layer,
// micro-batch and chunk), named after its first task, so that the track
// adds a row per layer pass rather than per task.
func (r *Result) instanceRecords(i int, recs []TaskRecord, buf *instanceTimes) []TaskRecord {
	x := r.exec
	_, _, prog := x.Place(i)
	buf.start, buf.end, buf.issued = x.Times(i, buf.start[:0], buf.end[:0], buf.issued[:0])
	start, end, issued := buf.start, buf.end, buf.issued
	if !prog.Hosted {
		issued = nil
	}
	var span TaskRecord
	for t := range prog.Tasks {
		task := &prog.Tasks[t]
		if issue := prog.Issue(t); issued != nil && issued[t] >= 0 && issue > 0 {
			begin, end := int64(issued[t]-issue), int64(issued[t])
			if span.EndNs == begin && span.Step == int(task.Step) && span.Layer == int(task.Layer) &&
				span.Microbatch == int(task.Micro) && span.Chunk == int(task.Chunk) && span.Stream != "" {
				span.EndNs = end
			} else {
				if span.Stream != "" {
					recs = append(recs, span)
				}
				span = TaskRecord{Step: int(task.Step), Stream: parallel.StreamHost.String(),
					Kind: parallel.KindHostIssue.String(), Name: task.Name.String(), Layer: int(task.Layer),
					Microbatch: int(task.Micro), Chunk: int(task.Chunk), StartNs: begin, EndNs: end}
			}
		}
		group := ""
		if task.Kind.IsComm() {
			group = task.Group.String()
		}
		recs = append(recs, TaskRecord{Step: int(task.Step), Stream: task.Stream.String(),
			Kind: task.Kind.String(), Name: task.Name.String(), Group: group, Layer: int(task.Layer),
			Microbatch: int(task.Micro), Chunk: int(task.Chunk), StartNs: int64(start[t]), EndNs: int64(end[t]),
			FLOPs: task.FLOPs(), Bytes: task.Bytes})
	}
	if span.Stream != "" {
		recs = append(recs, span)
	}
	return recs
}

// Check verifies the invariants every simulated run must satisfy: tasks on
// one stream never overlap, every task starts after its dependencies end and
// ends no earlier than it starts, sends and receives pair up with equal
// bytes and times, and the step is no shorter than the compute critical path.
// With a host thread, it issues the tasks one at a time in program order,
// after the GPU tasks it waits for, and no task starts before its issue;
// compute runs on the compute stream, no task shorter than its priced Dur
// (what parallel.ComputeBound rests on). It checks the ranks whose times
// the run kept (Options.KeepRanks), and a send against its receive where
// both were; on a RuledOut result, which has no play to check, it says
// so.
func (r *Result) Check() error {
	if r.RuledOut {
		return errors.New("simulation: the step was ruled out by its cutoff, not played (Options.StepCutoffS)")
	}
	x := r.exec
	var start, end, issued, ps, pe []engine.Time
	for i := 0; i < x.Instances(); i++ {
		if !x.HasTimes(i) {
			continue
		}
		rank, _, prog := x.Place(i)
		start, end, issued = x.Times(i, start[:0], end[:0], issued[:0])
		if !prog.Hosted {
			issued = nil
		}
		var lastEnd [parallel.NumStreams]engine.Time
		for t := range prog.Tasks {
			task := &prog.Tasks[t]
			if start[t] < 0 || end[t] < start[t] {
				return fmt.Errorf("rank %d task %d (%s): bad times %d..%d", rank, t, task.Name, start[t], end[t])
			}
			if issued != nil && task.Kind != parallel.KindRecv {
				begin := issued[t] - prog.Issue(t)
				switch w := prog.HostAfter(t); {
				case issued[t] < 0 || start[t] < issued[t]:
					return fmt.Errorf("rank %d task %d (%s) starts at %d before its issue ends at %d", rank, t, task.Name, start[t], issued[t])
				case begin < lastEnd[parallel.StreamHost]:
					return fmt.Errorf("rank %d host: issue of %s starts at %d before the previous issue ends at %d", rank, task.Name, begin, lastEnd[parallel.StreamHost])
				case w >= 0 && begin < end[w]:
					return fmt.Errorf("rank %d host: issue of %s starts at %d before %s, which the host waits for, ends at %d", rank, task.Name, begin, prog.Tasks[w].Name, end[w])
				}
				lastEnd[parallel.StreamHost] = issued[t]
			}
			for _, d := range prog.Deps(t) {
				if end[d] > start[t] {
					return fmt.Errorf("rank %d task %d (%s) starts at %d before dependency %s ends at %d", rank, t, task.Name, start[t], prog.Tasks[d].Name, end[d])
				}
			}
			if task.Kind.IsCompute() && (task.Stream != parallel.StreamCompute || end[t]-start[t] < max(task.Dur, 0)) {
				// What parallel.ComputeBound rests on: a rank's compute
				// runs one task at a time, none faster than priced.
				return fmt.Errorf("rank %d task %d (%s): compute on stream %s for %d ns, priced %d", rank, t, task.Name, task.Stream, end[t]-start[t], task.Dur)
			}
			if task.Kind != parallel.KindRecv {
				if start[t] < lastEnd[task.Stream] {
					return fmt.Errorf("rank %d stream %s: %s starts at %d before the previous task ends at %d", rank, task.Stream, task.Name, start[t], lastEnd[task.Stream])
				}
				lastEnd[task.Stream] = end[t]
			}
			if task.Kind == parallel.KindSend {
				j := r.peerInstance(i, int(task.Peer()))
				if !x.HasTimes(j) {
					continue
				}
				_, _, pp := x.Place(j)
				ps, pe, _ = x.Times(j, ps[:0], pe[:0], nil)
				rv := &pp.Tasks[task.Match()]
				if rv.Kind != parallel.KindRecv || rv.Bytes != task.Bytes || ps[task.Match()] != start[t] || pe[task.Match()] != end[t] {
					return fmt.Errorf("rank %d send %s micro-batch %d does not match its receive", rank, task.Name, task.Micro)
				}
			}
		}
	}
	return nil
}

func (r *Result) peerInstance(i, stage int) int {
	x := r.exec
	if x.Symmetric() {
		return stage
	}
	rank, _, _ := x.Place(i)
	c := r.Layout.CoordOf(rank)
	c.PP = stage
	return r.Layout.RankOf(c)
}
