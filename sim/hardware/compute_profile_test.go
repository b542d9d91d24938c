package hardware

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestAttentionKernels checks the attention kernel table of every catalog
// GPU: auto is the profile's own kernel, unfused has no efficiency, every
// fused kernel lies in (0, 1) with a slower backward, and a kernel that does
// not run on the GPU is an error listing the ones that do.
func TestAttentionKernels(t *testing.T) {
	for _, name := range GPUNames() {
		g, err := LookupGPU(name)
		if err != nil {
			t.Fatal(err)
		}
		c := g.Compute
		f, b, err := c.Attention("auto")
		if err != nil || f != c.AttnEff || b != c.AttnBwdEff {
			t.Errorf("%s: auto = %g/%g (%v), want the profile's %g/%g", name, f, b, err, c.AttnEff, c.AttnBwdEff)
		}
		if f, b, err := c.Attention("unfused"); err != nil || f != 0 || b != 0 {
			t.Errorf("%s: unfused = %g/%g (%v), want 0/0", name, f, b, err)
		}
		own := false
		for _, k := range c.AttnKernels {
			own = own || k.Name == c.AttnKernel
			if !(k.Fwd > 0 && k.Fwd < 1 && k.Bwd > 0 && k.Bwd <= k.Fwd) {
				t.Errorf("%s: kernel %s efficiencies %g/%g", name, k.Name, k.Fwd, k.Bwd)
			}
			if !slices.Contains(AttentionKernelNames(), k.Name) {
				t.Errorf("%s: kernel %q not in AttentionKernelNames", name, k.Name)
			}
		}
		if !own {
			t.Errorf("%s: auto kernel %q not in the table", name, c.AttnKernel)
		}
		if _, _, err := c.Attention("bogus"); err == nil || !strings.Contains(err.Error(), "auto, flash2") {
			t.Errorf("%s: unknown kernel error %v", name, err)
		}
		hopper := g.Arch == "hopper"
		if _, _, err := c.Attention(KernelFlash3); (err == nil) != hopper {
			t.Errorf("%s (%s): flash3 error %v; FlashAttention-3 runs on Hopper only", name, g.Arch, err)
		} else if err != nil && !strings.Contains(err.Error(), "does not run on this GPU") {
			t.Errorf("%s: flash3 error %q", name, err)
		}
	}
}

// TestAttentionKernelRatios holds the sourced ratios between kernels on one
// GPU (they do not depend on the training fraction):
//   - H100: FA3 0.685 / FA2 0.35 = 1.957 forward (arXiv:2407.08608);
//     cuDNN / FA2 = 11.8879/7.4875 = 1.588 (Transformer Engine benchmark);
//   - every GPU: Triton = FA2 / 1.4 forward, / 2 backward (arXiv:2307.08691
//     §4.1);
//   - A100: cuDNN = FA2 (estimate), and FA2 is auto.
func TestAttentionKernelRatios(t *testing.T) {
	kern := func(gpu, k string) (float64, float64) {
		g, _ := LookupGPU(gpu)
		f, b, err := g.Compute.Attention(k)
		if err != nil {
			t.Fatalf("%s %s: %v", gpu, k, err)
		}
		return f, b
	}
	for _, c := range []struct {
		gpu, num, den string
		fwd, bwd      float64
	}{
		{"h100-sxm", KernelFlash3, KernelFlash2, 0.685 / 0.35, 0.685 / 0.35},
		{"h100-sxm", KernelCuDNN, KernelFlash2, 11.8879 / 7.4875, 11.8879 / 7.4875},
		{"h200", KernelCuDNN, KernelFlash2, 11.8879 / 7.4875, 11.8879 / 7.4875},
		{"h100-sxm", KernelTriton, KernelFlash2, 1 / 1.4, 1 / 2.0},
		{"a100-80gb", KernelTriton, KernelFlash2, 1 / 1.4, 1 / 2.0},
		{"b200", KernelTriton, KernelFlash2, 1 / 1.4, 1 / 2.0},
		{"a100-40gb", KernelCuDNN, KernelFlash2, 1, 1},
		{"a100-80gb", "auto", KernelFlash2, 1, 1},
	} {
		nf, nb := kern(c.gpu, c.num)
		df, db := kern(c.gpu, c.den)
		if !near(nf/df, c.fwd) || !near(nb/db, c.bwd) {
			t.Errorf("%s %s/%s = %.4f/%.4f, want %.4f/%.4f", c.gpu, c.num, c.den, nf/df, nb/db, c.fwd, c.bwd)
		}
	}
	// FA2 on GB200 runs 373.9/327.9 of H100's FA2 TFLOP/s (Azure, §4c):
	// as fractions of 2500 and 989 TFLOP/s.
	gf, _ := kern("gb200", KernelFlash2)
	hf, _ := kern("h100-sxm", KernelFlash2)
	if !near(gf*2500/(hf*989), 373.9/327.9) {
		t.Errorf("gb200 FA2 TFLOP/s / H100's = %.4f, want %.4f", gf*2500/(hf*989), 373.9/327.9)
	}
}

// TestMI300XMeasuredFigures holds the MI300X record to its sources, computed
// by hand (round 16, helper mi300x16):
//   - HBM: BabelStream Triad 4.09 of 5.3 TB/s (Azure ND MI300X v5) = 0.77170;
//   - FlashAttention-2: the Azure guide's benchmark_flash_attention.py runs
//     328.6 TFLOP/s on MI300X and 327.9 on H100, so MI300X's FA2 TFLOP/s
//     (fraction × 1307.4) is 328.6/327.9 = 1.00213 of H100's (× 989), forward
//     and backward (the backward at FA3's ratio on both);
//   - RCCL: all_reduce busbw 318.98 GB/s on 8 GPUs of the 448 GB/s XGMI
//     aggregate = 0.71201 ring efficiency (AMD rocm-blogs mi300x-rccl-xgmi);
//     the MI325X inherits the platform's comm. Round 19 (helper mi300x19):
//     no launch cost on top of RCCL's base latency, a Simple ramp of 20 µs
//     over 20 MB, both fitted on the same AMD sweep (sim/collectives
//     TestSmallMI300X, TestSweepMI300X).
func TestMI300XMeasuredFigures(t *testing.T) {
	near5 := func(a, b float64) bool { return math.Abs(a/b-1) < 2e-5 } // hand figures to 5 digits
	mi, _ := LookupGPU("mi300x")
	h, _ := LookupGPU("h100-sxm")
	if !near5(mi.Compute.HBMEff, 0.77170) {
		t.Errorf("mi300x hbm_eff %.5f, want 4.09/5.3 = 0.77170", mi.Compute.HBMEff)
	}
	// FP8 GEMMs: the random-data hipBLASLt best (Azure, 1159.54 of 2614.9
	// TFLOP/s = 0.44344), the basis of every other GPU's figure, not AMD's
	// trig_float MAF (1273); × train_gemm.
	g, _ := LookupGPUCalibrated("mi300x", Calibration{{"train_gemm", "1"}})
	if !near5(g.Compute.MatmulEffFP8, 0.44344) {
		t.Errorf("mi300x matmul_eff_fp8 %.5f, want 1159.54/2614.9 = 0.44344", g.Compute.MatmulEffFP8)
	}
	mf, mb, _ := mi.Compute.Attention(KernelFlash2)
	hf, _, _ := h.Compute.Attention(KernelFlash2)
	if !near5(mf*1307.4/(hf*989), 1.00213) {
		t.Errorf("mi300x FA2 forward TFLOP/s / H100's = %.5f, want 328.6/327.9 = 1.00213", mf*1307.4/(hf*989))
	}
	// The backward is the forward × the backward/forward ratio measured on
	// MI300X (ROCm/flash-attention#142, batch 2: 202.12/355.51 = 0.56854;
	// 197.2 TFLOP/s before train_attn), not FlashAttention-3's H100 ratio (0.85255); the
	// MI325X (same compute units) takes the same ratio, the triton entry half.
	if !near5(mb*1307.4/(hf*989), 0.56975) {
		t.Errorf("mi300x FA2 backward TFLOP/s / H100's forward = %.5f, want 1.00213 × 0.56854 = 0.56975", mb*1307.4/(hf*989))
	}
	for _, name := range []string{"mi300x", "mi325x"} {
		g, _ := LookupGPU(name)
		f, b, _ := g.Compute.Attention(KernelFlash2)
		tf, tb, _ := g.Compute.Attention(KernelTriton)
		if !near5(b/f, 0.56854) || !near5(tb/b, 0.5) || !near5(tf/f, 1/1.4) {
			t.Errorf("%s FA2 bwd/fwd %.5f (want 202.12/355.51 = 0.56854), triton bwd/FA2 %.5f (want 0.5), fwd %.5f (want 1/1.4)",
				name, b/f, tb/b, tf/f)
		}
	}
	// RCCL GPUs take RCCL's base and XGMI/PCIe latencies (tuning.cc baseLat
	// and tuning_model_5) and NCCL's network row; NCCL GPUs keep NCCL's.
	us := func(d time.Duration) float64 { return d.Seconds() * 1e6 }
	for _, c := range []struct {
		gpu                                  string
		baseLL, baseSimple, hopLL, hopSimple float64
		pcieSimple, treeHopSimple, netSimple float64
	}{
		{"mi300x", 12, 17, 0.8, 2.1, 5.7, 2.3, 14},
		{"mi325x", 12, 17, 0.8, 2.1, 5.7, 2.3, 14},
		{"h100-sxm", 6.6, 8.4, 0.6, 3.4, 5.7, 4, 14},
	} {
		g, _ := LookupGPU(c.gpu)
		p := g.Comm
		got := []float64{us(p.BaseLatency.Ring.LL), us(p.BaseLatency.Ring.Simple), us(p.NVLinkLatency.Ring.LL),
			us(p.NVLinkLatency.Ring.Simple), us(p.PCIeLatency.Ring.Simple), us(p.NVLinkLatency.Tree.Simple), us(p.NetLatency.Ring.Simple)}
		want := []float64{c.baseLL, c.baseSimple, c.hopLL, c.hopSimple, c.pcieSimple, c.treeHopSimple, c.netSimple}
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-9 {
				t.Errorf("%s latencies (base LL, base Simple, hop LL, hop Simple, PCIe Simple, tree hop Simple, net Simple) = %v µs, want %v", c.gpu, got, want)
				break
			}
		}
	}
	for _, name := range []string{"mi300x", "mi325x"} {
		g, _ := LookupGPU(name)
		if !near5(g.Comm.RingEfficiency, 0.71201) || g.Comm.LaunchOverhead != 0 ||
			g.Comm.RampTime != 20*time.Microsecond || g.Comm.RampBytes != 20e6 {
			t.Errorf("%s ring efficiency %.5f, launch %v, ramp %v over %g B; want 318.98/448 = 0.71201, no launch, 20µs over 20 MB",
				name, g.Comm.RingEfficiency, g.Comm.LaunchOverhead, g.Comm.RampTime, g.Comm.RampBytes)
		}
	}
}
