package parallel

import (
	"fmt"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/workload"
)

// TestArenaBuilderRestartEqualsFresh builds a sequence of configurations
// in one arena, each changing what the arena builder's kept lists hold
// (builder.restart): the step-start parameter gathers (paramAG) on and
// off, recomputation every k-th layer (recomputed, plansByKey), layer
// copying on and off (classes), the optimizer's barrier and scratch
// (barrier, optOps, depBuf), more and fewer layers and stages. Every
// program must equal a build without an arena: a list kept from the build
// before must never be read.
func TestArenaBuilderRestartEqualsFresh(t *testing.T) {
	type tweak struct {
		tp, dp, pp, m int
		zero          int
		paramGather   bool
		recompute     workload.Recompute
		every         int
		everyLayer    bool
		offloadOpt    bool
		steps         int
	}
	cases := []tweak{
		{tp: 2, dp: 2, pp: 4, m: 8, zero: 1, paramGather: true, steps: 2},
		{tp: 2, dp: 2, pp: 2, m: 4, zero: 0, recompute: workload.RecomputeFull, every: 2},
		{tp: 1, dp: 4, pp: 2, m: 4, zero: 2, paramGather: false, offloadOpt: true, steps: 2},
		{tp: 2, dp: 2, pp: 4, m: 8, zero: 1, paramGather: true, recompute: workload.RecomputeFull, every: 3, everyLayer: true},
		{tp: 2, dp: 2, pp: 4, m: 8, zero: 1, paramGather: false, recompute: workload.RecomputeFull},
		{tp: 4, dp: 1, pp: 1, m: 2, zero: 0},
		{tp: 2, dp: 2, pp: 8, m: 16, zero: 1, paramGather: true, recompute: workload.RecomputeSelective, steps: 3},
		{tp: 2, dp: 2, pp: 4, m: 8, zero: 1, paramGather: true, steps: 2},
	}
	pr := commPricer{unit: engine.Millisecond, comm: 300 * engine.Microsecond}
	arena := new(Arena)
	for round := 0; round < 2; round++ { // twice: the second round starts from a dirty builder
		for i, c := range cases {
			name := fmt.Sprintf("round %d case %d %+v", round, i, c)
			_, cfg := stepConfig(t, c.tp, c.dp, c.pp, c.m, pipeline.OneFOneB)
			cfg.Zero, cfg.Overlap.ParamGather = c.zero, c.paramGather
			cfg.Recompute, cfg.RecomputeEvery, cfg.EmitEveryLayer = c.recompute, c.every, c.everyLayer
			if c.offloadOpt {
				cfg.OffloadOptimizer, cfg.HostH2D, cfg.HostD2H = true, 20e9, 20e9
			}
			cfg.Steps = max(c.steps, 1)
			buildInArenaAndFresh(t, name, cfg, pr, arena)
		}
	}
}
