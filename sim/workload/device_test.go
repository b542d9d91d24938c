package workload

import (
	"math"
	"testing"

	"github.com/simtrain/simtrain/sim/hardware"
)

func relNear(got, want, rel float64) bool { return math.Abs(got-want) <= rel*math.Abs(want) }

// TestDeviceOf: the catalog's compute profile reaches the workload device
// for every GPU, with the overhead fitted in sim/
func TestDeviceOf(t *testing.T) {
	for _, name := range hardware.GPUNames() {
		g, err := hardware.LookupGPU(name)
		if err != nil {
			t.Fatal(err)
		}
		d := DeviceOf(g)
		if d.Name != name || d.Peak[BF16] != g.Peak.BF16 || d.Peak[NVFP4] != g.Peak.FP4 ||
			d.HBMBandwidth != g.HBMBandwidth || d.HBMBytes != g.HBMUsableBytes || d.SMs != g.SMs {
			t.Errorf("%s: device %+v", name, d)
		}
		if d.KernelOverhead != FittedKernelOverhead {
			t.Errorf("%s: kernel overhead %v, fitted %v", name, d.KernelOverhead, FittedKernelOverhead)
		}
		// Attention efficiencies are training values: a FlashAttention
		// benchmark × the fitted training fraction 0.5 (down to 0.095 for
		// MI300X's estimated backward), see the records in sim/hardware.
		for _, e := range []float64{d.MatmulEffBF16, d.HBMEff, d.AttnEff, d.AttnBwdEff} {
			if !(e > 0.05 && e < 0.95) {
				t.Errorf("%s: efficiency %v out of range: %+v", name, e, g.Compute)
			}
		}
		if (g.Peak.FP8 > 0) != (d.MatmulEffFP8 > 0) {
			t.Errorf("%s: FP8 peak %v but FP8 efficiency %v", name, g.Peak.FP8, d.MatmulEffFP8)
		}
		if len(g.Compute.Sources) < 4 {
			t.Errorf("%s: compute profile without sources", name)
		}
	}
	// H100 SXM: the §4a/§4b/§4c figures times the training fractions
	// (GEMM 0.9, attention 0.9): MAMF 0.803·0.9 = 0.7227, FP8 0.709·0.9 =
	// 0.6381, STREAM 0.887, and the auto kernel, cuDNN = FlashAttention-2 ×
	// 1.59: 0.35·1.59·0.9 = 0.5009 forward, 0.35·(0.584/0.685)·1.59·0.9 =
	// 0.4270 backward.
	g, _ := hardware.LookupGPU("h100-sxm")
	d := DeviceOf(g)
	if !relNear(d.MatmulEffBF16, 0.803*0.9, 0.001) || !relNear(d.MatmulEffFP8, 0.709*0.9, 0.001) || !relNear(d.HBMEff, 0.887, 0.001) ||
		!relNear(d.AttnEff, 0.35*1.59*0.9, 0.002) || !relNear(d.AttnBwdEff, 0.35*0.584/0.685*1.59*0.9, 0.002) || d.HBMBytes != 79.11*(1<<30) {
		t.Errorf("h100-sxm device %+v", d)
	}
}
