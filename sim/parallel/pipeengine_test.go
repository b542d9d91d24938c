package parallel

import (
	"math"
	"testing"

	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/workload"
)

// TestPipeEngineSyncs counts DeepSpeed's pipeline engine host
// synchronisations (StepConfig.PipeEngineSync) by hand from the source
// (builder.go, dsLoadSyncs). Per micro-batch on PP 2:
//
//   - stage 0 (first): LoadMicroBatch 3, to_meta before SendActivation 1,
//     BackwardPass's two from_meta 2 = 6 with TP, 3 without;
//   - stage 1 (last): LoadMicroBatch 3, ForwardPass's from_meta 1, to_meta
//     before SendGrad 1 = 5 with TP, 3 without;
//
// and with TP stage 0 all-gathers its saved output again before each
// backward (pp_regather_out, the whole activation over the TP group).
// 4 micro-batches at a 1 ms stall: stage 0 24 ms, stage 1 20 ms with
// TP 4; 12 ms each at TP 1. Off (PipeEngineSync 0): none.
func TestPipeEngineSyncs(t *testing.T) {
	const ms = engine.Time(1e6)
	const act = 2 * 512 * 1024 * 2 // 2·512 tokens × h 1024 × 2 bytes
	for _, c := range []struct {
		tp, sp      int
		stall       engine.Time
		want        [2]engine.Time
		wantRegathr int
	}{
		{tp: 4, stall: ms, want: [2]engine.Time{24 * ms, 20 * ms}, wantRegathr: 4},
		{tp: 1, stall: ms, want: [2]engine.Time{12 * ms, 12 * ms}},
		{tp: 4, stall: 0},
	} {
		l, err := NewLayout(c.tp, 1, 1, 1, 2, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
		if err != nil {
			t.Fatal(err)
		}
		chunks, err := Partition(4, 2, 1, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		cfg := &StepConfig{Layout: l, Model: testModel(t, 4),
			Shape:    workload.Shape{MicroBatch: 2, Seq: 512, Dtype: workload.BF16, TP: c.tp, CP: 1, EP: 1, FlashAttention: true},
			Schedule: pipeline.OneFOneB, Virtual: 1, Microbatches: 4, Chunks: chunks, Optimizer: "adamw",
			ParamDtype: workload.BF16, GradDtype: workload.BF16, MasterDtype: workload.FP32,
			Overlap: Overlap{GradReduce: true, ParamGather: true}, Steps: 1,
			LayerParams:    func(int) (float64, float64) { return 1e6, 0 },
			PipeEngineSync: c.stall,
		}
		progs, err := Build(cfg, unitPricer{unit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for s, p := range progs {
			var stall engine.Time
			regather := 0
			for _, task := range p.Tasks {
				switch {
				case task.Kind == KindHostSync:
					if task.Name.String() != "pipe_engine_sync" {
						t.Errorf("tp %d stage %d: host sync %q", c.tp, s, task.Name.String())
					}
					stall += task.Dur
				case task.Name.String() == "pp_regather_out":
					regather++
					if task.Op != collectives.AllGather || task.Group != GroupTP || task.Bytes != act {
						t.Errorf("tp %d: regather %+v", c.tp, task)
					}
				}
			}
			if stall != c.want[s] {
				t.Errorf("tp %d stall %d: stage %d stalls %d ns, want %d", c.tp, c.stall, s, stall, c.want[s])
			}
			wantR := 0
			if s == 0 {
				wantR = c.wantRegathr
			}
			if regather != wantR {
				t.Errorf("tp %d stall %d: stage %d regathers %d, want %d", c.tp, c.stall, s, regather, wantR)
			}
		}
	}
}

// TestLogOptimizerStates: Megatron-DeepSpeed's optimizer-state statistics
// read 15 state-sized tensors and 4 weight-sized ones and write 4
// state-sized ones after the step (builder.go, optStatsReads). 4 layers of
// 1M parameters on pp 2: each stage holds 2 layers and the 32000 × 1024
// embedding (first) or output layer (last), 34.768M parameters, ZeRO-1
// over dp 2: 17.384M fp32 parameters per rank, so 17.384M · (15·4 + 4·4 +
// 4·4) bytes per rank, after the optimizer step; without the flag no such
// task.
func TestLogOptimizerStates(t *testing.T) {
	for _, on := range []bool{false, true} {
		l, err := NewLayout(1, 1, 1, 2, 2, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
		if err != nil {
			t.Fatal(err)
		}
		chunks, err := Partition(4, 2, 1, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		cfg := &StepConfig{Layout: l, Model: testModel(t, 4),
			Shape:    workload.Shape{MicroBatch: 2, Seq: 512, Dtype: workload.BF16, TP: 1, CP: 1, EP: 1, FlashAttention: true},
			Schedule: pipeline.OneFOneB, Virtual: 1, Microbatches: 4, Chunks: chunks, Optimizer: "adamw", Zero: 1,
			ParamDtype: workload.BF16, GradDtype: workload.BF16, MasterDtype: workload.FP32, StateDtype: workload.FP32,
			Overlap: Overlap{GradReduce: true, ParamGather: true}, Steps: 1,
			LayerParams:        func(int) (float64, float64) { return 1e6, 0 },
			LogOptimizerStates: on,
		}
		progs, err := Build(cfg, unitPricer{unit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for s, p := range progs {
			n, opt := 0, -1
			for i, task := range p.Tasks {
				switch task.Name.String() {
				case "optimizer_step":
					opt = i
				case "optimizer_state_stats":
					n++
					if opt < 0 {
						t.Errorf("stage %d: statistics before the optimizer step", s)
					}
					if want := 17.384e6 * (15*4 + 4*4 + 4*4); math.Abs(task.Bytes-want) > 1e-9*want {
						t.Errorf("stage %d: statistics move %g bytes, want %g", s, task.Bytes, want)
					}
				}
			}
			if want := map[bool]int{false: 0, true: 1}[on]; n != want {
				t.Errorf("on=%v stage %d: %d statistics tasks, want %d", on, s, n, want)
			}
		}
	}
}

// TestLossReadback: DeepSpeed's engine reads the loss back before every
// micro-batch's backward (StepConfig.LossReadback) on the stage that
// computes it. Counted by hand: 4 micro-batches at a 1 ms stall, on pp 2
// the last stage waits 4 times (4 ms), the first stage never; on pp 1 the
// single stage 4 times; GPipe's last stage too (one read per backward).
// Each wait depends on the compute task issued just before it, follows
// that micro-batch's head_fwd and precedes its head_bwd, and ends exactly
// the stall after the task it drains (the unit pricer gives every task a
// positive duration, so a wait of the wrong length or place shifts it).
// Off (0): none.
func TestLossReadback(t *testing.T) {
	const ms = engine.Time(1e6)
	for _, c := range []struct {
		pp    int
		sched pipeline.Schedule
		stall engine.Time
		want  []int // waits per stage
	}{
		{pp: 2, sched: pipeline.OneFOneB, stall: ms, want: []int{0, 4}},
		{pp: 1, sched: pipeline.OneFOneB, stall: ms, want: []int{4}},
		{pp: 2, sched: pipeline.GPipe, stall: ms, want: []int{0, 4}},
		{pp: 2, sched: pipeline.OneFOneB, stall: 0, want: []int{0, 0}},
	} {
		cfg := lossReadbackStep(t, c.pp, c.sched, c.stall, false)
		progs, err := Build(cfg, unitPricer{unit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for s, p := range progs {
			n := 0
			lastFwd := map[int32]int{} // micro-batch → index of its head_fwd
			for i, task := range p.Tasks {
				switch {
				case task.Name.String() == "head_fwd":
					lastFwd[task.Micro] = i
				case task.Kind == KindHostSync && task.Name.String() == "loss_readback":
					n++
					if task.Dur != c.stall {
						t.Errorf("pp %d %v stage %d: wait %d ns, want %d", c.pp, c.sched.Name(), s, task.Dur, c.stall)
					}
					f, ok := lastFwd[task.Micro]
					if !ok {
						t.Errorf("pp %d %v stage %d: read of micro-batch %d before its head_fwd", c.pp, c.sched.Name(), s, task.Micro)
					}
					if j := i + 1; j >= len(p.Tasks) || p.Tasks[j].Name.String() != "head_bwd" || p.Tasks[j].Micro != task.Micro {
						t.Errorf("pp %d %v stage %d: read of micro-batch %d not followed by its head_bwd", c.pp, c.sched.Name(), s, task.Micro)
					}
					if d := p.Deps(i); len(d) != 1 || p.Tasks[d[0]].Stream != StreamCompute || int(d[0]) < f {
						t.Errorf("pp %d %v stage %d: read of micro-batch %d depends on %v, want the last compute task", c.pp, c.sched.Name(), s, task.Micro, d)
					}
					// The host thread blocks until the drained task ends:
					// the next task it issues (head_bwd) waits for it.
					if d := p.Deps(i); len(d) == 1 && p.HostAfter(i+1) != int(d[0]) {
						t.Errorf("pp %d %v stage %d: head_bwd of micro-batch %d issued after task %d's end, want %d", c.pp, c.sched.Name(), s, task.Micro, p.HostAfter(i+1), d[0])
					}
				}
			}
			if n != c.want[s] {
				t.Errorf("pp %d %v stall %d: stage %d reads %d times, want %d", c.pp, c.sched.Name(), c.stall, s, n, c.want[s])
			}
		}
	}
}

// TestLossReadbackAfter: the Hugging Face Trainer reads the loss after
// each micro-batch's forward and backward (StepConfig.LossReadbackAfter).
// Counted by hand: 4 micro-batches at a 1 ms stall; on pp 1 the single
// stage waits 4 times, each right after that micro-batch's embedding_bwd
// (the last backward task of the chunk that computes the loss); on pp 2
// the last stage 4 times, each after all of that micro-batch's backward on
// the stage, the first stage never. No read precedes a head_bwd (the
// before-backward place is off), every wait drains the last compute task
// and the host issues the next task only after that task's end.
func TestLossReadbackAfter(t *testing.T) {
	const ms = engine.Time(1e6)
	for _, c := range []struct {
		pp      int
		sched   pipeline.Schedule
		want    []int  // waits per stage
		prevBwd string // the compute task a wait follows directly on the loss stage ("" = any backward)
	}{
		{pp: 1, sched: pipeline.OneFOneB, want: []int{4}, prevBwd: "embedding_bwd"},
		{pp: 2, sched: pipeline.OneFOneB, want: []int{0, 4}},
		{pp: 2, sched: pipeline.GPipe, want: []int{0, 4}},
	} {
		cfg := lossReadbackStep(t, c.pp, c.sched, ms, true)
		progs, err := Build(cfg, unitPricer{unit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for s, p := range progs {
			n := 0
			for i, task := range p.Tasks {
				if task.Kind != KindHostSync || task.Name.String() != "loss_readback" {
					continue
				}
				n++
				if task.Dur != ms {
					t.Errorf("pp %d %v stage %d: wait %d ns, want %d", c.pp, c.sched.Name(), s, task.Dur, ms)
				}
				if j := i + 1; j < len(p.Tasks) && p.Tasks[j].Name.String() == "head_bwd" && p.Tasks[j].Micro == task.Micro {
					t.Errorf("pp %d %v stage %d: the read of micro-batch %d precedes its head_bwd (the before-backward place)", c.pp, c.sched.Name(), s, task.Micro)
				}
				before, after := 0, 0
				for j, o := range p.Tasks {
					if o.Kind == KindBackward && o.Micro == task.Micro {
						if j < i {
							before++
						} else {
							after++
						}
					}
				}
				if before == 0 || after != 0 {
					t.Errorf("pp %d %v stage %d: read of micro-batch %d has %d of its backward tasks before and %d after, want all before", c.pp, c.sched.Name(), s, task.Micro, before, after)
				}
				d := p.Deps(i)
				if len(d) != 1 || p.Tasks[d[0]].Stream != StreamCompute {
					t.Errorf("pp %d %v stage %d: read of micro-batch %d depends on %v, want the last compute task", c.pp, c.sched.Name(), s, task.Micro, d)
					continue
				}
				if c.prevBwd != "" && (p.Tasks[d[0]].Name.String() != c.prevBwd || p.Tasks[d[0]].Micro != task.Micro) {
					t.Errorf("pp %d %v stage %d: read of micro-batch %d drains %s of micro-batch %d, want its %s", c.pp, c.sched.Name(), s, task.Micro, p.Tasks[d[0]].Name.String(), p.Tasks[d[0]].Micro, c.prevBwd)
				}
				// The next task the host issues (receives are not issued)
				// waits for the drained task's end.
				j := i + 1
				for j < len(p.Tasks) && p.Tasks[j].Kind == KindRecv {
					j++
				}
				if j < len(p.Tasks) && p.HostAfter(j) != int(d[0]) {
					t.Errorf("pp %d %v stage %d: %s after the read of micro-batch %d issued after task %d's end, want %d", c.pp, c.sched.Name(), s, p.Tasks[j].Name.String(), task.Micro, p.HostAfter(j), d[0])
				}
			}
			if n != c.want[s] {
				t.Errorf("pp %d %v: stage %d reads %d times, want %d", c.pp, c.sched.Name(), s, n, c.want[s])
			}
		}
	}
}

// lossReadbackStep is the 4-layer, 4-micro-batch step with the host model
// on that the loss-readback tests build, at pp stages under sched, with
// stall per read, after the backward when after.
func lossReadbackStep(t *testing.T, pp int, sched pipeline.Schedule, stall engine.Time, after bool) *StepConfig {
	t.Helper()
	l, err := NewLayout(1, 1, 1, 1, pp, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := Partition(4, pp, 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return &StepConfig{Layout: l, Model: testModel(t, 4),
		Shape:    workload.Shape{MicroBatch: 2, Seq: 512, Dtype: workload.BF16, TP: 1, CP: 1, EP: 1, FlashAttention: true},
		Schedule: sched, Virtual: 1, Microbatches: 4, Chunks: chunks, Optimizer: "adamw",
		ParamDtype: workload.BF16, GradDtype: workload.BF16, MasterDtype: workload.FP32,
		Overlap: Overlap{GradReduce: true, ParamGather: true}, Steps: 1,
		LayerParams:  func(int) (float64, float64) { return 1e6, 0 },
		LossReadback: stall, LossReadbackAfter: after,
		Host: HostModel{On: true, KernelFwd: 10e3, KernelBwd: 4e3, Call: 10e3},
	}
}
