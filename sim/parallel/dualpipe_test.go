package parallel

import (
	"testing"

	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/units"
	"github.com/simtrain/simtrain/sim/workload"
)

// passPricer prices every forward block one unit and every backward block
// two (a backward is two GEMMs per forward GEMM), the embedding and output
// layer nothing, and the expert-parallel all-to-all a2a; the rest of the
// communication is free.
type passPricer struct{ unit, a2a engine.Time }

func (u passPricer) OpsTime(_ int, ops []workload.Op) engine.Time {
	for _, op := range ops {
		if op.Block != workload.BlockEmbedding && op.Block != workload.BlockHead && op.Name != "optimizer" {
			if op.Pass == workload.Backward {
				return 2 * u.unit
			}
			return u.unit
		}
	}
	return 0
}

func (u passPricer) CommTime(k GroupKind, _ int, op collectives.Op, _ units.Bytes) engine.Time {
	if k == GroupEP && op == collectives.AllToAll {
		return u.a2a
	}
	return 0
}
func (passPricer) SendTime(int, int, units.Bytes) engine.Time { return 0 }

// playSchedule builds and plays one step of sched on p stages with m
// micro-batches of a model of `layers` layers (MoE layers with 2-way
// expert parallelism when moe), and returns the step's end and each
// stage's compute time.
func playSchedule(t *testing.T, sched pipeline.Schedule, p, m, layers int, moe bool, pr Pricer) (end engine.Time, busy []engine.Time) {
	t.Helper()
	mdl := workload.Model{Name: "test", Layers: layers, Hidden: 1024, Heads: 16, Vocab: 32000}
	ep, dp := 1, 1
	if moe {
		mdl.MoE = &workload.MoE{Experts: 8, TopK: 2}
		ep, dp = 2, 2
	}
	mdl.Fill()
	if err := mdl.Validate(); err != nil {
		t.Fatal(err)
	}
	l, err := NewLayout(1, 1, ep, dp, p, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
	if err != nil {
		t.Fatal(err)
	}
	sh := pipeline.Shape{Stages: p, Microbatches: m, Virtual: 1}
	if err := sched.Check(sh); err != nil {
		t.Fatal(err)
	}
	chunks, err := Place(sched.Placement(sh), layers, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &StepConfig{Layout: l, Model: mdl,
		Shape:    workload.Shape{MicroBatch: 1, Seq: 128, Dtype: workload.BF16, TP: 1, CP: 1, EP: ep, FlashAttention: true},
		Schedule: sched, Virtual: 1, Microbatches: m, Chunks: chunks, Optimizer: "adamw",
		ParamDtype: workload.BF16, GradDtype: workload.BF16, MasterDtype: workload.FP32,
		Overlap: Overlap{GradReduce: true, ParamGather: true, P2P: true}, Steps: 1,
		LayerParams: func(int) (float64, float64) { return 1e6, 0 },
	}
	progs, err := Build(cfg, pr)
	if err != nil {
		t.Fatal(err)
	}
	x := NewSymmetric(engine.New(), l, progs)
	if err := x.Run(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < x.Instances(); i++ {
		_, _, prog, start, stop := x.Instance(i)
		var b engine.Time
		for k, task := range prog.Tasks {
			end = max(end, stop[k])
			if task.Kind.IsCompute() {
				b += stop[k] - start[k]
			}
		}
		busy = append(busy, b)
	}
	return end, busy
}

// TestDualPipeBubble holds DualPipe and DualPipeV to the bubble of
// DeepSeek-V3's Table 2 (arXiv:2412.19437 §3.2.1; DualPipeV: the
// deepseek-ai/DualPipe README's comparison on the same number of model
// chunks):
//
//	DualPipe   (PP/2 − 1)(F&B + B − 3W),   PP = stages
//	DualPipeV  (PP/2 − 1)(F&B + B − 3W),   PP = 2 × stages (model chunks)
//
// against 1F1B's (PP − 1)(F + B), in the setting of the paper's Fig. 5: a
// backward twice a forward (B = 2F) and its weight half (W = F), free
// communication, so the overlapped pair costs F&B = F + B. Here a layer's
// forward is 4 units (attention's 3 blocks and the MLP), its backward 8 and
// its weight pass 4. Every stage idles the same.
func TestDualPipeBubble(t *testing.T) {
	pr := passPricer{unit: engine.Millisecond}
	for _, c := range []struct {
		sched pipeline.Schedule
		p, m  int
	}{
		{pipeline.DualPipe, 2, 4}, {pipeline.DualPipe, 4, 8}, {pipeline.DualPipe, 4, 16}, {pipeline.DualPipe, 8, 16}, {pipeline.DualPipe, 8, 20},
		{pipeline.DualPipeV, 2, 4}, {pipeline.DualPipeV, 4, 8}, {pipeline.DualPipeV, 4, 10}, {pipeline.DualPipeV, 8, 32},
		{pipeline.OneFOneB, 4, 8}, {pipeline.OneFOneB, 8, 16},
	} {
		layers := 4 * c.p
		chunks := c.p // model chunks of one copy: DualPipe's p, 1F1B's p
		pp := c.p     // Table 2's PP
		if c.sched == pipeline.DualPipeV {
			chunks, pp = 2*c.p, 2*c.p
		}
		perChunk := engine.Time(layers/chunks) * engine.Millisecond
		F, B, W := 4*perChunk, 8*perChunk, 4*perChunk
		want := engine.Time(pp/2-1) * (F + B + B - 3*W)
		if c.sched == pipeline.OneFOneB {
			want = engine.Time(pp-1) * (F + B)
		}
		end, busy := playSchedule(t, c.sched, c.p, c.m, layers, false, pr)
		for s, b := range busy {
			if got := end - b; got != want {
				t.Errorf("%s p%d m%d stage %d: bubble %v, Table 2 gives %v (F %v, B %v, W %v)", c.sched.Name(), c.p, c.m, s, got, want, F, B, W)
			}
		}
	}
}

// moePricer prices an MoE layer as DeepSeek-V3's chunks are built: an
// attention of 3 units (its three blocks), experts of 3 units, a router and
// a combine that cost nothing beside them, every backward block twice its
// forward, and each expert-parallel all-to-all a2a.
type moePricer struct{ unit, a2a engine.Time }

func (u moePricer) OpsTime(_ int, ops []workload.Op) engine.Time {
	if len(ops) == 0 {
		return 0
	}
	var t engine.Time
	switch ops[0].Block {
	case workload.BlockAttnPre, workload.BlockAttnCore, workload.BlockAttnPost:
		t = u.unit
	case workload.BlockExperts, workload.BlockMLP:
		t = 3 * u.unit
	default:
		return 0
	}
	if ops[0].Pass == workload.Backward {
		t *= 2
	}
	return t
}

func (u moePricer) CommTime(k GroupKind, s int, op collectives.Op, b units.Bytes) engine.Time {
	return passPricer{a2a: u.a2a}.CommTime(k, s, op, b)
}
func (moePricer) SendTime(int, int, units.Bytes) engine.Time { return 0 }

// TestDualPipeHidesAllToAll checks DeepSeek-V3's claim for DualPipe's
// overlapped chunks (§3.2.1, Fig. 4): with cross-node expert parallelism at
// a computation-to-communication ratio of about 1:1, "both all-to-all and
// PP communication can be fully hidden during execution". Each MoE layer's
// forward computes 6 units (attention 3, experts 3) against its dispatch
// and combine all-to-alls of 3 units each, 1:1; its backward computes 12
// against the same 6. 1F1B exposes every all-to-all (the experts wait for
// their dispatch, the combine for the experts' return); DualPipe hides
// them in its steady state, leaving only those of the warm-up and
// cool-down chunks, which run alone.
func TestDualPipeHidesAllToAll(t *testing.T) {
	const p, m, layers = 4, 64, 8
	unit := engine.Millisecond
	added := func(s pipeline.Schedule) (engine.Time, engine.Time) {
		base, _ := playSchedule(t, s, p, m, layers, true, moePricer{unit: unit})
		with, _ := playSchedule(t, s, p, m, layers, true, moePricer{unit: unit, a2a: 3 * unit})
		return with - base, base
	}
	// every stage runs m micro-batches through layers/p layers, each with
	// 2 all-to-alls forward and 2 backward
	total := engine.Time(m*layers/p*4) * 3 * unit
	oneF, _ := added(pipeline.OneFOneB)
	dual, base := added(pipeline.DualPipe)
	if oneF < total {
		t.Errorf("1F1B: the all-to-alls add %v to the step, less than their %v", oneF, total)
	}
	// DualPipe on 4 stages runs 3·2 = 6 of each stage's m = 64 forwards
	// and 6 of its backwards outside overlapped pairs (parts 1-3 and 6-8 of
	// the reference schedule): 12 chunk passes of 2 layers × 2 all-to-alls.
	alone := engine.Time(12*2*2) * 3 * unit
	if dual > alone {
		t.Errorf("dualpipe: the all-to-alls add %v to a %v step; only the %v of the chunks outside overlapped pairs may show", dual, base, alone)
	}
	t.Logf("all-to-all time per stage %v: 1F1B step +%v, DualPipe step +%v (%.1f%% exposed)", total, oneF, dual, 100*float64(dual)/float64(total))
}

// TestDualPipeVTurn: on the V-shaped placement the last stage hands its
// first chunk's output to its second chunk without a pipeline transfer.
func TestDualPipeVTurn(t *testing.T) {
	_, busy := playSchedule(t, pipeline.DualPipeV, 4, 8, 16, false, passPricer{unit: engine.Millisecond})
	if len(busy) != 4 {
		t.Fatalf("%d stages played", len(busy))
	}
	l, _ := NewLayout(1, 1, 1, 1, 4, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
	sh := pipeline.Shape{Stages: 4, Microbatches: 8, Virtual: 1}
	chunks, _ := Place(pipeline.DualPipeV.Placement(sh), 16, 0, 0)
	cfg := &StepConfig{Layout: l, Model: testModel(t, 16),
		Shape:    workload.Shape{MicroBatch: 1, Seq: 128, Dtype: workload.BF16, TP: 1, CP: 1, EP: 1, FlashAttention: true},
		Schedule: pipeline.DualPipeV, Virtual: 1, Microbatches: 8, Chunks: chunks, Optimizer: "adamw",
		ParamDtype: workload.BF16, GradDtype: workload.BF16, MasterDtype: workload.FP32, Steps: 1,
		LayerParams: func(int) (float64, float64) { return 1e6, 0 },
	}
	progs, err := Build(cfg, passPricer{unit: engine.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for s, p := range progs {
		sends := 0
		for _, task := range p.Tasks {
			if task.Kind == KindSend {
				sends++
				if int(task.Peer()) == s {
					t.Errorf("stage %d sends to itself", s)
				}
			}
		}
		// a middle stage passes each micro-batch's activation and
		// gradient on from both of its chunks; stage 0 holds the ends of
		// the model and the last stage the turn, which pass nothing
		want := 4 * 8
		if s == 0 || s == 3 {
			want = 2 * 8
		}
		if sends != want {
			t.Errorf("stage %d: %d sends, want %d", s, sends, want)
		}
	}
}
