package parallel

import (
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
)

// recountStreams is Program.streamTasks counted from the tasks.
func recountStreams(p *Program) (c [streamSlots]int32) {
	for i := range p.Tasks {
		c[p.Tasks[i].Stream&(streamSlots-1)]++
	}
	return c
}

// The builder's per-stream task counts (Program.streamTasks, which
// setQueueWaits sizes its lists from) equal a count of the tasks, with
// layers and passes copied (copyLayers and copyPass add the copied
// tasks' counts) and with everything emitted. By hand: one stage, DP 1,
// 4 layers, 4 micro-batches (TestPassCopy's first case) is 4 forwards
// and 4 backwards of 10 compute tasks each and the optimizer step: 81
// tasks, all on the compute stream, 40 of them copied in passes.
func TestStreamTasksCounted(t *testing.T) {
	noDP := func(c *StepConfig) { c.Layout = mustLayout(t, 1, 1) }
	cases := []struct {
		name          string
		pp, v, micro  int
		layers        int
		edit          func(*StepConfig)
		compute, rest int32 // stage 0's compute tasks and the others; -1: not counted by hand
	}{
		{"one stage, DP 1, 4 micro-batches", 1, 1, 4, 4, noDP, 81, 0},
		{"1F1B pp 2, 8 micro-batches", 2, 1, 8, 16, nil, -1, -1},
		{"interleaved pp 2 v 2", 2, 2, 8, 32, func(c *StepConfig) { c.Schedule = pipeline.Interleaved }, -1, -1},
		{"DualPipeV", 2, 2, 8, 16, func(c *StepConfig) { c.Schedule = pipeline.DualPipeV }, -1, -1},
		{"host model with a launch queue", 2, 1, 8, 16, func(c *StepConfig) {
			c.Host = HostModel{On: true, KernelFwd: engine.Microsecond, KernelBwd: engine.Microsecond, Call: 10 * engine.Microsecond, Queue: 64}
		}, -1, -1},
		{"ZeRO-3, gather overlap, prefetch", 2, 1, 8, 16, func(c *StepConfig) {
			c.Zero, c.Overlap.ParamGather, c.Zero3BackwardPrefetch = 3, true, true
		}, -1, -1},
		{"two steps, 40 layers (layer copies)", 1, 1, 4, 40, func(c *StepConfig) { c.Steps = 2 }, -1, -1},
	}
	for _, c := range cases {
		for _, every := range []bool{false, true} {
			cfg := copyConfig(t, c.pp, c.v, c.micro, c.layers)
			if c.edit != nil {
				c.edit(cfg)
			}
			cfg.EmitEveryLayer = every
			progs, err := Build(cfg, unitPricer{unit: engine.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range progs {
				if want := recountStreams(p); p.streamTasks != want {
					t.Errorf("%s (emit every layer %v): stage %d counts %v, tasks %v", c.name, every, p.Stage, p.streamTasks, want)
				}
			}
			if c.compute >= 0 {
				p := progs[0]
				rest := int32(len(p.Tasks)) - p.streamTasks[StreamCompute]
				if p.streamTasks[StreamCompute] != c.compute || rest != c.rest {
					t.Errorf("%s: %d compute tasks and %d others, want %d and %d", c.name, p.streamTasks[StreamCompute], rest, c.compute, c.rest)
				}
			}
		}
	}
}

// setQueueWaits counts the streams itself when the counts do not add up to
// the tasks (a program not made by the builder), and its waits are those
// with the builder's counts.
func TestQueueWaitsRecount(t *testing.T) {
	cfg := copyConfig(t, 2, 1, 8, 16)
	cfg.Host = HostModel{On: true, KernelFwd: engine.Microsecond, KernelBwd: engine.Microsecond, Call: 10 * engine.Microsecond, Queue: 16}
	progs, err := Build(cfg, unitPricer{unit: engine.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range progs {
		want := make([]int32, len(p.Tasks))
		for i := range p.Tasks {
			want[i] = int32(p.QueueAfter(i) + 1)
		}
		if !p.queued {
			t.Fatalf("stage %d: no task waits for a full queue", p.Stage)
		}
		p.streamTasks = [streamSlots]int32{}
		p.setQueueWaits(&cfg.Host, nil)
		if p.streamTasks != recountStreams(p) {
			t.Errorf("stage %d: counts %v after the recount", p.Stage, p.streamTasks)
		}
		for i := range p.Tasks {
			if int32(p.QueueAfter(i)+1) != want[i] {
				t.Fatalf("stage %d task %d: waits for %d after the recount, %d before", p.Stage, i, int32(p.QueueAfter(i)+1), want[i])
			}
		}
	}
}
