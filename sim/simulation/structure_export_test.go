package simulation

import (
	"math"
	"time"

	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/workload"
)

// ProgramsOf returns the programs r's last build made (the play whose
// figures r holds: a replicated run's shortened step, else the whole
// step), for the build-structure report (structure_report_test.go). An
// arena's programs (Options.Reuse) are valid only until the next Run
// with that Reuse.
func ProgramsOf(r *Result) []*parallel.Program { return r.progs }

// BuildSeconds builds s's step of microbatches micro-batches (0: the
// scenario's) reps times as Run builds it (an arena, the pricing tables
// r keeps for the layout, one pricer) and returns the least wall time of
// one build after the first: for the build-structure report's share of
// the build time the repeating points take (a ratio of sums over many
// points, not a figure to quote alone).
func BuildSeconds(s *scenario.Plan, microbatches int, r *Reuse, reps int) (float64, error) {
	cl, err := r.cluster(s.TopologySpec())
	if err != nil {
		return 0, err
	}
	layout, err := s.NewLayout()
	if err != nil {
		return 0, err
	}
	cfg := s.StepConfig(layout)
	if microbatches > 0 {
		cfg.Microbatches = microbatches
	}
	cfg.Arena = &r.arena
	pr := newPricerWith(s, cl, layout, workload.DeviceOf(s.GPU()), r.tables(cl, layout))
	cfg.DeviceClass = pr.deviceClasses()
	best := math.Inf(1)
	for i := 0; i <= reps; i++ {
		c := *cfg
		t0 := time.Now()
		if _, err := parallel.Build(&c, pr); err != nil {
			return 0, err
		}
		if d := time.Since(t0).Seconds(); i > 0 {
			best = min(best, d)
		}
	}
	return best, nil
}

// StepConfigOf returns the configuration Run builds s's step of
// microbatches micro-batches with (0: the scenario's), its device classes
// from the pricer as Run sets them: for the structure-key tests
// (parallel.StepConfig.StructureKey). It builds nothing.
func StepConfigOf(s *scenario.Plan, microbatches int) (*parallel.StepConfig, error) {
	cl, err := (*Reuse)(nil).cluster(s.TopologySpec())
	if err != nil {
		return nil, err
	}
	layout, err := s.NewLayout()
	if err != nil {
		return nil, err
	}
	cfg := s.StepConfig(layout)
	if microbatches > 0 {
		cfg.Microbatches = microbatches
	}
	pr := newPricer(s, cl, layout, workload.DeviceOf(s.GPU()))
	cfg.DeviceClass = pr.deviceClasses()
	return cfg, nil
}

// BuildFresh builds cfg's programs with a fresh pricer for s, no arena:
// what a build that shares nothing makes.
func BuildFresh(s *scenario.Plan, cfg *parallel.StepConfig) ([]*parallel.Program, error) {
	cl, err := (*Reuse)(nil).cluster(s.TopologySpec())
	if err != nil {
		return nil, err
	}
	pr := newPricer(s, cl, cfg.Layout, workload.DeviceOf(s.GPU()))
	progs, err := parallel.Build(cfg, pr)
	if err == nil {
		err = pr.err
	}
	return progs, err
}
