package simulation

import (
	"context"

	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/topology"
	"github.com/simtrain/simtrain/sim/workload"
)

// PlayCounted plays s's step whole as Run does (play, the representative
// ranks at analytic fidelity), with each task's engine events counted
// (parallel.Executor.CountEvents, through play's wholeSteady branch, which
// counts them and then plays cfg to its end as Run plays it), and returns
// the executor and the engine events executed: for the per-layer
// repetition report (layerrepeat_ext_test.go), which reads the events.
// With microbatches > 0 it plays a step of that many micro-batches instead
// (the shortened step a replicated run played: the engine's order, and so
// every time, is the same whether RunSteady pauses or not).
func PlayCounted(s *scenario.Plan, microbatches int) (*parallel.Executor, uint64, error) {
	cl, err := topology.Build(s.TopologySpec())
	if err != nil {
		return nil, 0, err
	}
	layout, err := s.NewLayout()
	if err != nil {
		return nil, 0, err
	}
	cfg := s.StepConfig(layout)
	if microbatches > 0 {
		cfg.Microbatches = microbatches
	}
	pr := newPricerWith(s, cl, layout, workload.DeviceOf(s.GPU()), nil)
	cfg.DeviceClass = pr.deviceClasses()
	res := &Result{Scenario: s, Cluster: cl, Layout: layout}
	x, _, eng, _, err := play(context.Background(), s, Options{wholeSteady: true}, cfg, pr, cl, layout, res, &parallel.Steady{}, nil, nil, nil)
	if err != nil {
		return nil, 0, err
	}
	return x, eng.Executed(), nil
}
