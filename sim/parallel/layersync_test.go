package parallel

import (
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/workload"
)

// TestLayerHostSyncHand plays Megatron-DeepSpeed's per-layer host wait
// (StepConfig.LayerHostSync) on one rank whose layer blocks take 1 ms on
// the GPU (unitPricer) and whose host issues a forward kernel in 10 µs,
// a backward kernel in 4 µs: the host runs ahead of the GPU everywhere
// else, so without the wait no block waits for its issue. With it, in
// every layer forward (and, under full recomputation, every recomputed
// forward) the host issues nothing after the attention until the
// attention has ended; the MLP then starts only when its own issue is
// done:
//
//	start(mlp) = end(attn) + issue(mlp)
//
// and, the host regaining its lead during the 1 ms MLP, the step grows by
// exactly the MLP issues behind the waits: 2 layers × issue(mlp_fwd), plus
// 2 × issue(mlp_recompute) with recomputation. With no host cost per kernel
// (CUDA graphs) the wait costs nothing.
func TestLayerHostSyncHand(t *testing.T) {
	host := HostModel{On: true, KernelFwd: 10 * engine.Microsecond, KernelBwd: 4 * engine.Microsecond, Call: 10 * engine.Microsecond}
	for _, c := range []struct {
		name      string
		host      HostModel
		recompute workload.Recompute
		syncs     int
	}{
		{"forward", host, workload.RecomputeNone, 2},
		{"full recompute", host, workload.RecomputeFull, 4},
		{"graphs", HostModel{On: true}, workload.RecomputeFull, 4},
	} {
		cfg := hostConfig(t, 2, c.host)
		cfg.Recompute = c.recompute
		off, _ := runHost(t, cfg, unitPricer{unit: engine.Millisecond})
		cfg = hostConfig(t, 2, c.host)
		cfg.Recompute = c.recompute
		cfg.LayerHostSync = true
		on, x := runHost(t, cfg, unitPricer{unit: engine.Millisecond})
		_, _, prog, start, end := x.Instance(0)
		var exposed engine.Time
		syncs := 0
		for i, task := range prog.Tasks {
			if task.Kind != KindHostSync {
				continue
			}
			syncs++
			if task.Name.String() != "layer_host_sync" || task.Dur != 0 {
				t.Fatalf("%s: host sync %q of %v, want layer_host_sync of 0", c.name, task.Name.String(), task.Dur)
			}
			next := i + 1
			attn := prog.HostAfter(next)
			if attn < 0 || prog.Tasks[attn].Layer != task.Layer ||
				(prog.Tasks[attn].Name.String() != "attn_fwd" && prog.Tasks[attn].Name.String() != "attn_recompute") {
				t.Fatalf("%s: the task after layer %d's sync waits for %d, want its attention", c.name, task.Layer, attn)
			}
			mlp := prog.Tasks[next]
			if mlp.Name.String() != "mlp_fwd" && mlp.Name.String() != "mlp_recompute" {
				t.Fatalf("%s: task after the sync is %s, want the MLP", c.name, mlp.Name.String())
			}
			issue := prog.Issue(next)
			if want := end[attn] + issue; start[next] != want {
				t.Errorf("%s: layer %d %s starts at %v, want the attention's end %v + its issue %v", c.name, task.Layer, mlp.Name.String(), start[next], end[attn], issue)
			}
			if c.host.KernelFwd > 0 && issue <= 0 {
				t.Fatalf("%s: %s has no issue time", c.name, mlp.Name.String())
			}
			exposed += issue
		}
		if syncs != c.syncs {
			t.Errorf("%s: %d layer host syncs, want %d", c.name, syncs, c.syncs)
		}
		if on != off+exposed {
			t.Errorf("%s: step %v with the waits, want %v + %v (the MLP issues behind them)", c.name, on, off, exposed)
		}
	}
}

// TestLayerHostSyncPlacement: with TP and sequence parallelism the wait
// sits after the attention's reduce-scatter (the tensors are made after
// the post-attention LayerNorm, which needs it) and before the MLP's
// all-gather; off, or without a host thread, there is none.
func TestLayerHostSyncPlacement(t *testing.T) {
	for _, c := range []struct {
		on, hosted bool
		want       int
	}{{true, true, 4}, {false, true, 0}, {true, false, 0}} {
		l, err := NewLayout(2, 1, 1, 1, 1, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
		if err != nil {
			t.Fatal(err)
		}
		chunks, err := Partition(2, 1, 1, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		cfg := &StepConfig{Layout: l, Model: testModel(t, 2),
			Shape:    workload.Shape{MicroBatch: 1, Seq: 128, Dtype: workload.BF16, TP: 2, CP: 1, EP: 1, SP: true, FlashAttention: true},
			Schedule: pipeline.OneFOneB, Virtual: 1, Microbatches: 1, Chunks: chunks, Optimizer: "adamw",
			ParamDtype: workload.BF16, GradDtype: workload.BF16, MasterDtype: workload.FP32,
			Recompute: workload.RecomputeFull, Steps: 1,
			LayerParams:   func(int) (float64, float64) { return 1e6, 0 },
			LayerHostSync: c.on,
		}
		if c.hosted {
			cfg.Host = HostModel{On: true, KernelFwd: engine.Microsecond, KernelBwd: engine.Microsecond, Call: engine.Microsecond}
		}
		progs, err := Build(cfg, unitPricer{unit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		p := progs[0]
		n := 0
		for i, task := range p.Tasks {
			if task.Kind != KindHostSync {
				continue
			}
			n++
			reduce := p.Tasks[p.HostAfter(i+1)].Name.String()
			next := p.Tasks[i+1].Name.String()
			if !(reduce == "tp_attn" && next == "tp_mlp_gather") && !(reduce == "tp_attn_recompute" && next == "tp_mlp_recompute_gather") {
				t.Errorf("on %v: sync waits for %s and precedes %s, want the attention's reduce-scatter and the MLP's all-gather", c.on, reduce, next)
			}
		}
		if n != c.want {
			t.Errorf("on %v hosted %v: %d layer host syncs, want %d", c.on, c.hosted, n, c.want)
		}
	}
}
