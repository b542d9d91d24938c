package parallel

import (
	"reflect"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
)

// countedPlay builds cfg's step with every task 1 ms (unitPricer) and
// plays it symmetrically with events counted, failing t on an error.
func countedPlay(t *testing.T, cfg *StepConfig) (*Executor, []*Program) {
	t.Helper()
	progs, err := Build(cfg, unitPricer{unit: engine.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	x := NewSymmetric(engine.New(), cfg.Layout, progs)
	x.CountEvents()
	if err := x.Run(); err != nil {
		t.Fatal(err)
	}
	return x, progs
}

// layerPlay builds a one-stage step of 6 layers and m micro-batches, DP 1,
// every layer task 1 ms (unitPricer), plays it counting events and returns
// the program and its times.
func layerPlay(t *testing.T, m int) (*Program, []engine.Time, []engine.Time, []int32) {
	t.Helper()
	cfg := copyConfig(t, 1, 1, m, 6)
	cfg.Layout = mustLayout(t, 1, 1)
	x, _ := countedPlay(t, cfg)
	_, _, p, start, end := x.Instance(0)
	if got, want := x.LayerRepeats(), MeasureLayers(p, start, end, nil, x.inst[0].events); !sameReport(got, want) {
		t.Fatalf("LayerRepeats %+v, MeasureLayers %+v", got, want)
	}
	return p, start, end, x.inst[0].events
}

// sameReport compares two reports, an empty map equal to none.
func sameReport(a, b LayerReport) bool {
	if len(a.Breaks) == 0 && len(b.Breaks) == 0 {
		a.Breaks, b.Breaks = nil, nil
	}
	if len(a.SkipBeside) == 0 && len(b.SkipBeside) == 0 {
		a.SkipBeside, b.SkipBeside = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

// TestMeasureLayersRepeat: on one stage with nothing beside the compute
// chain every layer of a pass is the one before it one layer (2 ms) later.
// A forward is embedding_fwd, 6 × (attn_fwd, mlp_fwd), head_fwd, a backward
// head_bwd, 6 × (mlp_bwd, attn_bwd), embedding_bwd: 4 passes (F0 B0 F1
// B1) of 6 layers of 2 tasks, 5 exact pairs each, one run of 6 layers;
// attn_fwd waits for the layer before's mlp_fwd (reach 1), so reach+2 = 3
// layers are kept and 3 (6 tasks) skipped per pass, 4 (8 tasks) when only
// two are kept; nothing else runs beside them (all skipped alone).
func TestMeasureLayersRepeat(t *testing.T) {
	p, start, end, events := layerPlay(t, 2)
	r := MeasureLayers(p, start, end, nil, events)
	want := LayerReport{Tasks: len(p.Tasks), Passes: 4, LayerTasks: 48, Pairs: 20, Same: 20, Exact: 20,
		Runs: 4, RunLayers: 24, Skip: 24, SkipMin: 32, SkipAlone: 24, Reach: [4]int{0, 4, 0, 0}}
	if !sameReport(r, want) {
		t.Fatalf("got %+v, want %+v", r, want)
	}
}

// TestMeasureLayersBreaks: one task of pass F0's layer 3 changed breaks
// the pairs (2, 3) and (3, 4) of that pass, leaving runs of layers 0–2 and
// 4–5 (3 and 2 layers: nothing skipped keeping 3, one layer of 2 tasks
// keeping 2) and the other passes whole; both breaks lie between the
// pass's first pair and its last (pairs 2 and 3 of 0–4).
func TestMeasureLayersBreaks(t *testing.T) {
	p, start, end, events := layerPlay(t, 2)
	e0 := p.entries[0]
	mlp3 := e0 + 1 + 3*2 + 1 // embedding_fwd, 3 layers of 2, attn_fwd
	if p.Tasks[mlp3].Name.String() != "mlp_fwd" || p.Tasks[mlp3].Layer != 3 {
		t.Fatalf("task %d is %s of layer %d, want mlp_fwd of layer 3", mlp3, p.Tasks[mlp3].Name, p.Tasks[mlp3].Layer)
	}
	opt := int32(len(p.Tasks) - 1)
	if p.Tasks[opt].Kind != KindOptimizer || opt < p.entries[len(p.entries)-1] {
		t.Fatalf("the last task is %s, want the optimizer after the passes", p.Tasks[opt].Kind)
	}
	p.Tasks[opt].Stream = StreamDP
	broken := LayerReport{Tasks: len(p.Tasks), Passes: 4, LayerTasks: 48, Pairs: 20, Same: 20, Exact: 18,
		Runs: 5, RunLayers: 23, Skip: 18, SkipMin: 26, SkipAlone: 18, Reach: [4]int{0, 5, 0, 0}, BreakAt: [4]int{0, 0, 0, 2}}
	for _, c := range []struct {
		name   string
		edit   func(start, end []engine.Time, events []int32)
		breaks string
	}{
		{"ends 1 ns later", func(_, end []engine.Time, _ []int32) { end[mlp3]++ }, "compute slower beside none"},
		{"ends 1 ns later, the rest of the pass 1 ns later", func(start, end []engine.Time, _ []int32) {
			end[mlp3]++
			for i := mlp3 + 1; i < p.entries[1]; i++ {
				start[i]++
				end[i]++
			}
		}, "compute slower beside none"},
		{"one engine event more", func(_, _ []engine.Time, events []int32) { events[mlp3]++ }, "compute events"},
		{"ends 1 ns later beside a DP task", func(start, end []engine.Time, _ []int32) {
			end[mlp3]++
			// the optimizer (no pass's task) moved onto the DP stream
			// and beside mlp_fwd 3: it overlaps mlp_fwd 3 but neither
			// mlp_fwd 2 nor 4
			start[opt], end[opt] = start[mlp3], end[mlp3]
		}, "compute slower beside dp"},
	} {
		s, e, ev := append([]engine.Time(nil), start...), append([]engine.Time(nil), end...), append([]int32(nil), events...)
		c.edit(s, e, ev)
		want := broken
		want.Breaks = map[string][4]int{c.breaks: {0, 0, 0, 2}}
		if r := MeasureLayers(p, s, e, nil, ev); !sameReport(r, want) {
			t.Errorf("%s: got %+v, want %+v", c.name, r, want)
		}
	}
	// Started off the period: by the end of the dependency that set it,
	// inside the pair's layers or before them.
	attn4 := mlp3 + 1
	d := start[attn4] - start[attn4-2]
	if got := layerBreak(p, attn4+1, mlp3, mlp3-1, d+1, start, end, nil, events); got != "compute after compute" {
		t.Errorf("mlp_fwd 4 off the period: %q", got)
	}
	if got := layerBreak(p, attn4, attn4-2, attn4, d+1, start, end, nil, events); got != "compute after compute outside" {
		t.Errorf("attn_fwd 4 off the period: %q", got)
	}
	// A task whose segments differ (mlp_fwd 3 longer) is not a pair at all.
	p.Tasks[mlp3].Dur++
	want := broken
	want.Same, want.BreakAt = 18, [4]int{}
	if r := MeasureLayers(p, start, end, nil, events); !sameReport(r, want) {
		t.Errorf("changed task: got %+v, want %+v", r, want)
	}
}

// TestMeasureLayersReach: the reach of a run and the inputs from outside
// the pass, on the step of TestMeasureLayersRepeat.
//
// ZeRO-3: a forward layer is its parameter gather, attn_fwd, mlp_fwd (3
// tasks), a backward layer the gather, mlp_bwd, attn_bwd and the gradient
// scatter (4). A layer's gather waits for the compute two layers back
// (the buffer it reuses): reach 2, so 4 layers are kept. In each forward
// the gather of layer 1 is not yet held back by that compute (layer −1's
// does not exist): it starts at the end of layer 0's gather, off the
// period, so the pair (0, 1) breaks there: runs of 5, 5, 6 and 6 layers,
// 3 + 3 + 8 + 8 tasks skipped. The head's gather, issued during each
// forward's last layer (the one skipped), is in flight beside it: 16 of the
// 22 are skipped alone. ZeRO-1 with the parameters gathered at step start: each
// forward layer's attn_fwd waits for its own gather, issued before the
// passes (external to both forwards); the last backward reduces a bucket
// per layer (3 tasks a layer there), so 6 + 6 + 6 + 9 tasks are skipped.
func TestMeasureLayersReach(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*StepConfig)
		want LayerReport
	}{
		{"ZeRO-3", func(c *StepConfig) { c.Zero, c.Overlap.ParamGather = 3, true }, LayerReport{Passes: 4, LayerTasks: 84,
			Pairs: 20, Same: 20, Exact: 18, Runs: 4, RunLayers: 22, Skip: 22, SkipMin: 50, SkipAlone: 16, SkipBeside: map[string]int{"dp": 6}, Reach: [4]int{0, 0, 4, 0},
			Breaks: map[string][4]int{"dp after dp": {2, 0, 0, 0}}, BreakAt: [4]int{2, 0, 0, 0}}},
		{"ZeRO-1, gathered at step start", func(c *StepConfig) { c.Zero, c.Overlap.ParamGather = 1, true }, LayerReport{Passes: 4,
			LayerTasks: 54, Pairs: 20, Same: 20, Exact: 20, Runs: 4, RunLayers: 24, Skip: 27, SkipMin: 36, SkipAlone: 27,
			Reach: [4]int{0, 4, 0, 0}, External: 2}},
	} {
		cfg := copyConfig(t, 1, 1, 2, 6)
		c.edit(cfg)
		x, progs := countedPlay(t, cfg)
		c.want.Tasks = len(progs[0].Tasks)
		if got := x.LayerRepeats(); !sameReport(got, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}
