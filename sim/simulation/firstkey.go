package simulation

import (
	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/scenario"
)

// KeyScratch is the storage FirstBuildKey works in: a caller keying many
// plans keeps one per goroutine (not safe for concurrent use). The zero
// value is ready to use.
type KeyScratch struct {
	cfg parallel.StepConfig
	// played memoises firstPlayed by what it reads of the step: a
	// sweep's points share a few pipeline shapes, and PlanSteady without
	// an arena builds every stage's schedule orders anew (three shapes).
	played map[steadyShape]int
}

// steadyShape is what parallel.PlanSteady reads of a StepConfig (with its
// margin, here always steadyMargin): the schedule (by name, as the
// arena's order cache keys it), the stages, micro-batches, virtual
// stages, and whether there is more than one step.
type steadyShape struct {
	sched                string
	pp, m, virtual       int
	manySteps, hasLayout bool
}

// FirstBuildKey returns the structure key (parallel.StepConfig.StructureKey)
// of the first step Run(ctx, s, opt) builds: the shortened step's (its
// first steady-state play's micro-batches, parallel.PlanSteady) where Run
// tries a shortened play first, else the full step's (with the stages'
// device classes Run sets on a heterogeneous cluster, which the
// scenario's own StepConfig lacks). ok is false when s has no layout or
// the step no key. It builds no programs, only the layout, the StepConfig
// and the schedule orders PlanSteady compares (memoised in scratch per
// pipeline shape), so loading can key every point. A sweep orders
// its points by it, so that a worker's point whose first build has the
// key of the worker's last build re-prices that build: a shortened play
// that replicates leaves its own build last, so points of one shortened
// key follow each other (a failed one leaves its full step's build, so the
// next point builds afresh, as it would in any order).
// TestFirstBuildKey holds it equal to the key of the first build Run makes.
func FirstBuildKey(s *scenario.Plan, opt Options, scratch *KeyScratch) (key uint64, ok bool) {
	l, err := s.NewLayout()
	if err != nil {
		return 0, false
	}
	if scratch == nil {
		scratch = new(KeyScratch)
	}
	cfg := &scratch.cfg
	s.FillStepConfig(cfg, l)
	cfg.EmitEveryLayer = opt.EmitEveryLayer
	cfg.DeviceClass = deviceClassesOf(s)
	if shortens(s, opt) {
		if played, ok := scratch.firstPlayed(cfg, opt.alwaysShorten); ok {
			cfg.Microbatches = played
		}
	}
	return cfg.StructureKey()
}

// shortens reports whether Run tries steady-state replication for s under
// opt at all (parallel.PlanSteady still decides per step): only for the
// figures (a sweep worker), at analytic fidelity, on the representative
// ranks.
func shortens(s *scenario.Plan, opt Options) bool {
	return opt.FiguresOnly && s.Fidelity() == network.Analytic && !opt.AllRanks
}

// firstPlayed returns the micro-batches of the first shortened play Run
// tries for cfg (its first PlanSteady, with steadyMargin, that
// worthShortening or alwaysShorten accepts); ok false: Run plays the step
// whole at once.
func (k *KeyScratch) firstPlayed(cfg *parallel.StepConfig, alwaysShorten bool) (played int, ok bool) {
	sh := steadyShape{m: cfg.Microbatches, virtual: cfg.Virtual, manySteps: cfg.Steps > 1, hasLayout: cfg.Layout != nil}
	if cfg.Layout != nil {
		sh.pp = cfg.Layout.PP
	}
	if cfg.Schedule != nil {
		sh.sched = cfg.Schedule.Name()
	}
	played, seen := k.played[sh]
	if !seen {
		steady, planned := parallel.PlanSteady(cfg, steadyMargin) // no arena: orders made anew
		played = 0
		if planned {
			played = steady.Played
		}
		if k.played == nil {
			k.played = map[steadyShape]int{}
		}
		k.played[sh] = played
	}
	if played == 0 || (!alwaysShorten && !worthShortening(played, cfg.Microbatches)) {
		return 0, false
	}
	return played, true
}
