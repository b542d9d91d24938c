package parallel

import (
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/workload"
)

// TestOptimizerLoopOps: transformers.AdamW's per-tensor loop, hand-computed.
// fp16 weights, gradients and states (a .half() model, S = G = M = 2) over
// n = 1,000 parameters in T = 2 tensors: 8 kernels per tensor (zero_grad's
// fill and Adam's 7), reading 8S + 3G + M = 24 and writing 6S + M + G = 16
// bytes per parameter. fp32 master and states under bf16 weights (S = M =
// 4, G = P = 2) add a copy per tensor: reads 8·4 + 3·2 + 4 + 4 = 46, writes
// 6·4 + 4 + 2 + 2 = 32.
//
// torch.optim's single-tensor AdamW (OptimizerLoopTorch): 9 kernels per
// tensor (zero_grad, decay, lerp, mul, addcmul, sqrt, div, add, addcdiv).
// fp16 throughout (S = G = M = 2): reads 0 + M + (S+G) + S + (S+2G) + 3S +
// (M+2S) = 2 + 4 + 2 + 6 + 6 + 6 = 26, writes G + M + 6S + M = 18 bytes per
// parameter. fp32 master and states under bf16 (S = M = 4, G = P = 2) with
// the copy: reads 4 + 6 + 4 + 8 + 12 + 12 + 4 = 50, writes 2 + 4 + 24 + 4
// + 2 = 36.
func TestOptimizerLoopOps(t *testing.T) {
	for _, c := range []struct {
		name              string
		torch             bool
		param, grad, mast workload.Dtype
		state             workload.Dtype
		ops               int
		read, write       float64
	}{
		{"fp16 model", false, workload.FP16, workload.FP16, workload.FP16, workload.FP16, 16, 24000, 16000},
		{"fp32 master under bf16", false, workload.BF16, workload.BF16, workload.FP32, workload.FP32, 18, 46000, 32000},
		{"torch, fp16 model", true, workload.FP16, workload.FP16, workload.FP16, workload.FP16, 18, 26000, 18000},
		{"torch, fp32 master under bf16", true, workload.BF16, workload.BF16, workload.FP32, workload.FP32, 20, 50000, 36000},
	} {
		cfg := &StepConfig{OptimizerTensors: 2, Optimizer: "adamw", ParamDtype: c.param, GradDtype: c.grad,
			MasterDtype: c.mast, StateDtype: c.state, OptimizerLoopTorch: c.torch}
		ops := optimizerLoopOps(cfg, 1000)
		var r, w float64
		for _, o := range ops {
			r += o.BytesRead
			w += o.BytesWritten
			if o.Class != workload.ClassMemory {
				t.Errorf("%s: op %s is not memory-bound", c.name, o.Name)
			}
		}
		if len(ops) != c.ops || r != c.read || w != c.write {
			t.Errorf("%s: %d ops reading %v writing %v bytes, want %d, %v, %v", c.name, len(ops), r, w, c.ops, c.read, c.write)
		}
	}
}

// TestOptimizerLoopTask: with training.optimizer_tensors the step's
// optimizer task carries the loop's bytes and its host issue is one eager
// kernel cost per launch: 3 tensors x 9 kernels (hostConfig's bf16 weights
// under fp32 master copies add the copy) x 10 µs = 270 µs, against 10 µs
// for the fused pass; without the knob nothing changes.
func TestOptimizerLoopTask(t *testing.T) {
	host := HostModel{On: true, KernelFwd: 10 * engine.Microsecond, KernelBwd: 4 * engine.Microsecond}
	find := func(cfg *StepConfig) (Task, engine.Time) {
		t.Helper()
		_, prog := stepEnd(t, cfg, unitPricer{unit: engine.Microsecond})
		for i, task := range prog.Tasks {
			if task.Name.String() == "optimizer_step" {
				return task, prog.Issue(i)
			}
		}
		t.Fatal("no optimizer_step")
		return Task{}, 0
	}
	fused, fusedIssue := find(hostConfig(t, 2, host))
	cfg := hostConfig(t, 2, host)
	cfg.OptimizerTensors = 3
	loop, loopIssue := find(cfg)
	if fusedIssue != 10*engine.Microsecond || loopIssue != 270*engine.Microsecond {
		t.Errorf("optimizer issue fused %v, loop %v; want 10µs and 270µs", fusedIssue, loopIssue)
	}
	// bf16 weights and gradients, fp32 master and states (hostConfig):
	// fused 2+4+8 read, 4+8+2 written = 28 bytes per parameter; the loop
	// 46 + 32 = 78.
	if r := loop.Bytes / fused.Bytes; r < 78.0/28-1e-9 || r > 78.0/28+1e-9 {
		t.Errorf("loop/fused bytes %v, want 78/28", r)
	}
}
