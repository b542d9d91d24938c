package simulation

import (
	"math"
	"testing"

	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/workload"
)

// teLayerGEMMs are the twelve GEMMs (forward, dgrad, wgrad of QKV, attention
// output, MLP up, MLP down) of the layer Transformer Engine's GEMM profiling
// guide times (docs/examples/gemm_profiling/gemm_profiling.rst,
// NVIDIA/TransformerEngine#2863): hidden 4096, FFN 16384, 15,872 tokens.
func teLayerGEMMs(dt workload.Dtype) []workload.Op {
	const m, h, f = 15872, 4096, 16384
	fwd := [][3]int{{m, 3 * h, h}, {m, h, h}, {m, f, h}, {m, h, f}}
	in := float64(dt.Bytes())
	var ops []workload.Op
	for _, g := range fwd {
		for _, s := range [][3]int{g, {g[0], g[2], g[1]}, {g[2], g[1], g[0]}} {
			M, N, K := float64(s[0]), float64(s[1]), float64(s[2])
			ops = append(ops, workload.Op{Class: workload.ClassGEMM, Quant: workload.QuantScaled,
				FLOPs: 2 * M * N * K, BytesRead: (M*K + K*N) * in, BytesWritten: M * N * 2,
				M: s[0], N: s[1], K: s[2], Batch: 1})
		}
	}
	return ops
}

// checkTELayer prices the guide's layer on d in BF16 and FP8, takes out the
// training fraction every profile includes (0.90, topology's trainGEMM), and
// requires each kernel time within tol of TE's measurement (pre-quantised
// inputs).
func checkTELayer(t *testing.T, d workload.Device, bf16, fp8, tol float64) {
	t.Helper()
	const trainGEMM = 0.90
	for _, c := range []struct {
		dt       workload.Dtype
		measured float64
	}{{workload.BF16, bf16}, {workload.FP8, fp8}} {
		var sum float64
		for _, op := range teLayerGEMMs(c.dt) {
			sum += d.OpTime(op, c.dt)
		}
		if kernel := sum * trainGEMM; math.Abs(kernel/c.measured-1) > tol {
			t.Errorf("%s %v: the layer's GEMMs priced at %.3f ms before the training fraction, TE measured %.3f ms",
				d.Name, c.dt, kernel*1e3, c.measured*1e3)
		}
	}
}

// profileDevice is the catalog GPU as the compute-time model sees it.
func profileDevice(t *testing.T, gpu string) workload.Device {
	t.Helper()
	g, err := hardware.LookupGPU(gpu)
	if err != nil {
		t.Fatal(err)
	}
	return workload.DeviceOf(g)
}

// TestBlackwellGEMMsAtTrainingShapes: the B300 profile prices the guide's
// layer at its measured B300 kernel times, 13.102 ms in BF16 and 6.812 ms in
// FP8, within 1% — so the Blackwell shape factors are what that measurement
// says.
func TestBlackwellGEMMsAtTrainingShapes(t *testing.T) {
	checkTELayer(t, profileDevice(t, "b300"), 13.102e-3, 6.812e-3, 0.01)
}

// TestHopperGEMMsAtTrainingShapes is the counterpart that keeps Hopper on its
// MAMF: the H200 profile's fractions at the H200 NVL's dense peaks (NVIDIA
// H200 NVL datasheet: 1,671 and 3,341 TFLOP/s with sparsity, halved) price
// the guide's layer within 5% of its H200 NVL kernel times, 31.968 ms in
// BF16 and 16.785 ms in FP8.
func TestHopperGEMMsAtTrainingShapes(t *testing.T) {
	d := profileDevice(t, "h200")
	d.Peak[workload.BF16], d.Peak[workload.FP8] = 1671e12/2, 3341e12/2
	checkTELayer(t, d, 31.968e-3, 16.785e-3, 0.05)
}
