package parallel

import (
	"reflect"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/workload"
)

// TestPassCopy builds hand-made steps with pass copying, without it
// (StepConfig.EmitEveryPass) and with nothing copied (EmitEveryLayer): the
// programs must be equal, and the copies are where the passes repeat.
//
// By hand, one stage, DP 1, 4 layers (fewer than copyMinLayers: no layer
// copies), 4 micro-batches: 1F1B on one stage is F0 B0 F1 B1 F2 B2 F3 B3.
// A forward is embedding_fwd, 4 × (attn_fwd, mlp_fwd), head_fwd: 10 tasks;
// a backward head_bwd, 4 × (mlp_bwd, attn_bwd), embedding_bwd: 10. F0 is
// the step's first compute (it clears firstComp, state copying does not
// carry), so F1 is emitted; F1's start state names B0's last compute where
// F0's named none, so F1 is not F0 relabelled either. B1 starts as B0 did,
// one period (F1 + B0 = 20 tasks) later: copied; F2 from F1, B2 from B1,
// F3 from F2. B3 reduces the gradients: emitted. 4 passes × 10 tasks = 40.
// With DP 2 and one-parameter buckets the backward still reduces only on
// the last micro-batch (ZeRO 0-2), so the same 40 are copied. 8 micro-batches
// copy 6 forwards and 6 backwards: 120. With offloaded activations (the
// builder's map of them is keyed by micro-batch; copyOffloads makes a
// copy's entries) a forward is 13 tasks (three offloads: the chunk's last
// layer keeps its inputs) and a backward 13 (three reloads); F2 and F3
// are copied as before, but B1 is emitted: its start state names B0's last
// reload where B0's named none. B2 is copied: 39. Under DualPipeV only the
// stage without the turn's local hand-offs copies.
func TestPassCopy(t *testing.T) {
	noDP := func(c *StepConfig) { c.Layout = mustLayout(t, 1, 1) }
	cases := []struct {
		name   string
		pp, v  int
		micro  int
		layers int
		edit   func(*StepConfig)
		copied int64 // -1: some, not counted by hand
	}{
		{"one stage, DP 1, 4 micro-batches", 1, 1, 4, 4, noDP, 40},
		{"one stage, DP 2, 4 micro-batches", 1, 1, 4, 4, nil, 40},
		{"one stage, DP 1, 8 micro-batches", 1, 1, 8, 4, noDP, 120},
		{"one stage, 1 micro-batch", 1, 1, 1, 4, noDP, 0},
		{"1F1B pp 2, 8 micro-batches", 2, 1, 8, 16, nil, -1},
		{"GPipe pp 2", 2, 1, 8, 16, func(c *StepConfig) { c.Schedule = pipeline.GPipe }, -1},
		{"interleaved pp 2 v 2", 2, 2, 8, 32, func(c *StepConfig) { c.Schedule = pipeline.Interleaved }, -1},
		{"zero bubble", 2, 1, 8, 16, func(c *StepConfig) { c.Schedule = pipeline.ZeroBubble }, -1},
		{"DualPipe", 4, 2, 8, 32, func(c *StepConfig) { c.Schedule = pipeline.DualPipe }, -1},
		{"DualPipeV", 2, 2, 8, 16, func(c *StepConfig) { c.Schedule = pipeline.DualPipeV }, -1},
		{"host model", 2, 1, 8, 16, func(c *StepConfig) { c.Host = HostModel{On: true, Call: 10 * engine.Microsecond} }, -1},
		{"ZeRO-3, gather overlap, prefetch", 2, 1, 8, 16, func(c *StepConfig) {
			c.Zero, c.Overlap.ParamGather, c.Zero3BackwardPrefetch = 3, true, true
		}, -1},
		{"ZeRO-3, FSDP2 copies, sync on the last micro-batch", 2, 1, 8, 16, func(c *StepConfig) {
			c.Zero, c.FSDPVersion, c.GradDtype, c.Zero3GradSyncLast = 3, 2, workload.FP32, true
		}, -1},
		{"ZeRO-1 parameter gather at step start", 2, 1, 8, 16, func(c *StepConfig) { c.Zero, c.Overlap.ParamGather = 1, true }, -1},
		{"full recompute every second layer", 2, 1, 8, 16, func(c *StepConfig) {
			c.Recompute, c.RecomputeEvery = workload.RecomputeFull, 2
		}, -1},
		{"blocking sends", 2, 1, 8, 16, func(c *StepConfig) { c.Overlap.P2P = false }, -1},
		{"two steps", 2, 1, 8, 16, func(c *StepConfig) { c.Steps = 2 }, -1},
		{"offloaded activations", 1, 1, 4, 4, func(c *StepConfig) {
			c.Shape.Offload = workload.OffloadAttnNorm
			c.HostD2H, c.HostH2D = 1e12, 1e12
		}, 39},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			build := func(everyPass, everyLayer bool) ([]*Program, int64) {
				cfg := copyConfig(t, c.pp, c.v, c.micro, c.layers)
				if c.edit != nil {
					c.edit(cfg)
				}
				cfg.EmitEveryPass, cfg.EmitEveryLayer = everyPass, everyLayer
				c0 := CopiedPassTasks()
				progs, err := Build(cfg, unitPricer{unit: engine.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				return progs, CopiedPassTasks() - c0
			}
			got, copied := build(false, false)
			noPass, n1 := build(true, false)
			none, n2 := build(false, true)
			if n1 != 0 || n2 != 0 {
				t.Fatalf("EmitEveryPass copied %d tasks in passes, EmitEveryLayer %d", n1, n2)
			}
			if !reflect.DeepEqual(got, noPass) || !reflect.DeepEqual(got, none) {
				t.Fatal("programs built with pass copying differ from those emitted pass by pass")
			}
			if c.copied >= 0 && copied != c.copied || c.copied < 0 && copied == 0 {
				t.Errorf("copied %d tasks in passes, want %d (-1: some)", copied, c.copied)
			}
		})
	}
}
