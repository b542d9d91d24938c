package parallel

import (
	"math"
	"testing"

	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/units"
	"github.com/simtrain/simtrain/sim/workload"
)

// unitPricer makes every transformer block take one unit of time, the
// embedding and output layer nothing, and communication free: the pure
// pipeline-schedule setting of the textbook bubble formulas.
type unitPricer struct{ unit engine.Time }

func (u unitPricer) OpsTime(_ int, ops []workload.Op) engine.Time {
	for _, op := range ops {
		if op.Block != workload.BlockEmbedding && op.Block != workload.BlockHead && op.Name != "optimizer" {
			return u.unit
		}
	}
	return 0
}

func (unitPricer) CommTime(GroupKind, int, collectives.Op, units.Bytes) engine.Time { return 0 }
func (unitPricer) SendTime(int, int, units.Bytes) engine.Time                       { return 0 }

func testModel(t *testing.T, layers int) workload.Model {
	t.Helper()
	m := workload.Model{Name: "test", Layers: layers, Hidden: 1024, Heads: 16, Vocab: 32000}
	m.Fill()
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	return m
}

func runPipeline(t *testing.T, sched pipeline.Schedule, p, v, m, layers int) (busy, idle engine.Time) {
	t.Helper()
	l, err := NewLayout(1, 1, 1, 1, p, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := Partition(layers, p, v, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &StepConfig{Layout: l, Model: testModel(t, layers),
		Shape:    workload.Shape{MicroBatch: 1, Seq: 128, Dtype: workload.BF16, TP: 1, CP: 1, EP: 1, FlashAttention: true},
		Schedule: sched, Virtual: v, Microbatches: m, Chunks: chunks, Optimizer: "adamw",
		ParamDtype: workload.BF16, GradDtype: workload.BF16, MasterDtype: workload.FP32,
		Overlap: Overlap{GradReduce: true, ParamGather: true, P2P: true}, Steps: 1,
		LayerParams: func(int) (float64, float64) { return 1e6, 0 },
	}
	progs, err := Build(cfg, unitPricer{unit: engine.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New()
	x := NewSymmetric(eng, l, progs)
	if err := x.Run(); err != nil {
		t.Fatal(err)
	}
	var end engine.Time
	for i := 0; i < x.Instances(); i++ {
		_, _, _, _, e := x.Instance(i)
		for _, v := range e {
			end = max(end, v)
		}
	}
	// Every stage does the same work; measure stage 0.
	_, _, prog, start, stop := x.Instance(0)
	for i, task := range prog.Tasks {
		if !task.Kind.IsComm() && task.Kind != KindRecv {
			busy += stop[i] - start[i]
		}
	}
	return busy, end - busy
}

// TestOneFOneBBubble checks the 1F1B bubble (p−1)/(m+p−1) of the step with
// equal forward and backward times and free communication (Narayanan et al.
// 2021, §2.2), and that the interleaved schedule divides the bubble-to-work
// ratio (p−1)/m by v.
func TestOneFOneBBubble(t *testing.T) {
	for _, c := range []struct{ p, m int }{{4, 8}, {4, 16}, {8, 8}, {2, 5}} {
		busy, idle := runPipeline(t, pipeline.OneFOneB, c.p, 1, c.m, 4*c.p)
		got := float64(idle) / float64(busy+idle)
		want := float64(c.p-1) / float64(c.m+c.p-1)
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("1F1B p%d m%d: bubble %.6f, want %.6f", c.p, c.m, got, want)
		}
		gb, gi := runPipeline(t, pipeline.GPipe, c.p, 1, c.m, 4*c.p)
		if float64(gi)/float64(gb+gi) != got {
			t.Errorf("pipeline.GPipe p%d m%d: bubble %.6f, want 1F1B's %.6f", c.p, c.m, float64(gi)/float64(gb+gi), got)
		}
	}
	for _, c := range []struct{ p, v, m int }{{4, 2, 8}, {4, 4, 8}, {2, 3, 4}} {
		busy, idle := runPipeline(t, pipeline.Interleaved, c.p, c.v, c.m, 4*c.p*c.v)
		got := float64(idle) / float64(busy)
		want := float64(c.p-1) / float64(c.m*c.v)
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("interleaved p%d v%d m%d: bubble/work %.6f, want (p-1)/(v·m) = %.6f", c.p, c.v, c.m, got, want)
		}
	}
}

// TestZeroBubbleBubble: with W split out and run after each B, the backward
// critical path costs T_B per hop, so the bubble is (p−1)(T_F+T_B): here
// T_F = 4 units per layer, T_B = T_W = 2, i.e. 3/4 of 1F1B's (p−1)(T_F+T_B+T_W).
func TestZeroBubbleBubble(t *testing.T) {
	for _, c := range []struct{ p, m int }{{4, 8}, {4, 16}, {8, 16}} {
		_, i1 := runPipeline(t, pipeline.OneFOneB, c.p, 1, c.m, 4*c.p)
		_, iz := runPipeline(t, pipeline.ZeroBubble, c.p, 1, c.m, 4*c.p)
		if got := float64(iz) / float64(i1); math.Abs(got-0.75) > 1e-9 {
			t.Errorf("p%d m%d: zero-bubble idle %v = %.4f × 1F1B's %v, want 0.75", c.p, c.m, iz, got, i1)
		}
	}
}
