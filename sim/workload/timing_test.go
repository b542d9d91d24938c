package workload

import (
	"math"
	"testing"
)

// h100 is an H100 SXM as the catalog describes it (hardware-facts §4a, §4b,
// §4c, §5): 989 TFLOP/s BF16, 1979 FP8, 67 FP32, 3.35 TB/s × 0.887 STREAM,
// 132 SMs, MAMF 0.803 / 0.709, FA3 0.685 / 0.584.
func h100() Device {
	var d Device
	d.Name = "h100-sxm"
	d.Peak[FP32], d.Peak[TF32], d.Peak[FP16], d.Peak[BF16], d.Peak[FP8] = 67e12, 494.5e12, 989e12, 989e12, 1979e12
	d.HBMBandwidth, d.HBMBytes, d.SMs = 3.35e12, 80e9, 132
	d.MatmulEffBF16, d.MatmulEffFP8, d.HBMEff = 0.803, 0.709, 0.887
	d.AttnEff, d.AttnBwdEff, d.KernelOverhead = 0.685, 0.584, 2.2e-6
	return d
}

func TestOpTime(t *testing.T) {
	d := h100()
	big := gemmOp(8192, 8192, 8192, 1, 2, 2)
	skinny := gemmOp(1024, 1024, 256, 1, 2, 2)
	attn := Op{Class: ClassAttention, FLOPs: 2 * 16 * 8192 * 4096.5 * 256, BytesRead: 1e8, M: 8192, N: 4097, K: 128, Batch: 16}
	attnBwd := attn
	attnBwd.Pass, attnBwd.FLOPs = Backward, 2.5*attn.FLOPs
	for _, c := range []struct {
		name string
		op   Op
		dt   Dtype
		want float64
	}{
		// 64·64 = 4096 tiles of 128² in ⌈4096/132⌉ = 32 waves: 4096/4224;
		// K factor 8192/(8192+392): 1.0995e12 FLOPs at 989e12·0.803·0.96970·0.95433
		// = 734.9 TFLOP/s → 1.4961 ms + 2.2 µs.
		{"bf16 8192³", big, BF16, 2*8192*8192*8192/(989e12*0.803*(4096.0/4224)*(8192.0/8584)) + 2.2e-6},
		// FP8: the FP8 peak and efficiency, same shape factor, plus the
		// kernel that quantizes both bf16 inputs first: 2·8192² values ×
		// 5 bytes (amax read 2, cast read 2, write 1) = 671.1 MB at
		// 2.971 TB/s = 225.9 µs + 2.2 µs.
		{"fp8 8192³", big, FP8, 2*8192*8192*8192/(1979e12*0.709*(4096.0/4224)*(8192.0/8584)) + 2.2e-6 +
			2*8192*8192*5/(3.35e12*0.887) + 2.2e-6},
		// 64 tiles on 132 SMs (one partial wave: 64/132), K 256/648:
		// 5.37e8 FLOPs at 989e12·0.803·0.4848·0.3951 = 152 TFLOP/s → 3.53 µs + 2.2 µs.
		{"bf16 1024×1024×256", skinny, BF16, 2*1024*1024*256/(989e12*0.803*(64.0/132)*(256.0/648)) + 2.2e-6},
		// A memory op: 1 GB at 3.35e12·0.887 = 2.971 TB/s → 336.5 µs + 2.2 µs.
		{"memory 1 GB", Op{Class: ClassMemory, FLOPs: 1e9, BytesRead: 5e8, BytesWritten: 5e8}, BF16, 1e9/(3.35e12*0.887) + 2.2e-6},
		// Flash attention: 16·⌈8192/128⌉ = 1024 blocks in 8 waves (1024/1056),
		// keys 4097/(4097+306): 0.685·0.96970·0.93050 of 989e12.
		{"flash fwd", attn, BF16, attn.FLOPs/(989e12*0.685*(1024.0/1056)*(4097.0/4403)) + 2.2e-6},
		{"flash bwd", attnBwd, BF16, attnBwd.FLOPs/(989e12*0.584*(1024.0/1056)*(4097.0/4403)) + 2.2e-6},
		// Attention stays bf16 in fp8 training.
		{"flash fwd at fp8", attn, FP8, attn.FLOPs/(989e12*0.685*(1024.0/1056)*(4097.0/4403)) + 2.2e-6},
	} {
		if got := d.OpTime(c.op, c.dt); !near(got, c.want, 1e-12) {
			t.Errorf("%s: OpTime %.6g s, want %.6g s", c.name, got, c.want)
		}
	}
	// A skinny GEMM whose operands dominate is memory-bound:
	// 802816×192×768 bf16 moves 2·(802816·768 + 768·192 + 802816·192) =
	// 1.5416 GB (519 µs at 2.971 TB/s) for 2.368e11 FLOPs (455 µs at
	// 989e12·0.803·(12544/12672)·(768/1160)); a large square GEMM is
	// compute-bound.
	sk := gemmOp(802816, 192, 768, 1, 2, 2)
	if d.Bound(sk, BF16) != "memory" || d.Bound(big, BF16) != "compute" || d.Bound(Op{Class: ClassMemory, BytesRead: 1e9}, BF16) != "memory" {
		t.Error("Bound")
	}
	if want := sk.Bytes()/(3.35e12*0.887) + 2.2e-6; d.OpTime(sk, FP8) < want {
		t.Error("a GEMM is never faster than its HBM traffic")
	}
	// A100 has no FP8: an fp8 GEMM is priced at BF16.
	a := d
	a.Peak[FP8], a.MatmulEffFP8 = 0, 0
	if a.OpTime(big, FP8) != a.OpTime(big, BF16) {
		t.Error("missing fp8 support should fall back to bf16")
	}
	// Unknown device values never give Inf/NaN or a panic.
	var zero Device
	if v := zero.OpTime(big, BF16); v != 0 || math.IsNaN(v) {
		t.Errorf("zero device OpTime = %v", v)
	}
	if v := d.OpTime(big, Dtype(99)); math.IsNaN(v) || math.IsInf(v, 0) {
		t.Errorf("undefined dtype OpTime = %v", v)
	}
}

// TestTF32GEMM: a TF32 GEMM runs at the TF32 peak with MatmulEffTF32 when
// the GPU has that measurement, and at the BF16 efficiency without it.
func TestTF32GEMM(t *testing.T) {
	var d Device
	d.Peak[FP32], d.Peak[TF32], d.Peak[BF16] = 19.5e12, 156e12, 312e12
	d.HBMBandwidth, d.HBMEff, d.SMs, d.KernelOverhead = 2.039e12, 0.834, 108, 2.2e-6
	d.MatmulEffBF16 = 0.8
	// 8192³ on 108 SMs: 64·64 = 4096 tiles in ⌈4096/108⌉ = 38 waves
	// (4096/4104), K 8192/(8192+392); 1.0995e12 FLOPs.
	big := gemmOp(8192, 8192, 8192, 1, 4, 4)
	shape := (4096.0 / 4104) * (8192.0 / 8584)
	flops := 2.0 * 8192 * 8192 * 8192
	for _, c := range []struct {
		name string
		eff  float64 // MatmulEffTF32
		want float64
	}{
		// no TF32 figure: 156e12 · 0.8 · 0.95268 = 118.9 TFLOP/s → 9.247 ms + 2.2 µs
		{"bf16 efficiency", 0, flops/(156e12*0.8*shape) + 2.2e-6},
		// 0.78 (the BF16 efficiency × 0.975): 115.9 TFLOP/s → 9.484 ms + 2.2 µs
		{"tf32 efficiency", 0.78, flops/(156e12*0.78*shape) + 2.2e-6},
	} {
		d.MatmulEffTF32 = c.eff
		if got := d.OpTime(big, TF32); !near(got, c.want, 1e-12) {
			t.Errorf("%s: OpTime %.6g s, want %.6g s", c.name, got, c.want)
		}
		if got := d.OpTime(big, BF16); !near(got, flops/(312e12*0.8*shape)+2.2e-6, 1e-12) {
			t.Errorf("%s: the BF16 GEMM moved: %.6g s", c.name, got)
		}
	}
}

func TestGEMMEfficiencyShape(t *testing.T) {
	d := h100()
	// Large square problems approach the MAMF fraction; small ones fall off.
	large := d.GEMMEfficiency(32768, 32768, 32768, 1, BF16)
	small := d.GEMMEfficiency(1024, 1024, 1024, 1, BF16)
	if large < 0.77 || large > 0.803 || small > 0.3 {
		t.Errorf("efficiency large %.3f small %.3f", large, small)
	}
	// Batching independent GEMMs fills the waves like one larger GEMM.
	if d.GEMMEfficiency(1024, 1024, 1024, 8, BF16) <= small {
		t.Error("batched GEMMs should fill more SMs")
	}
}

func TestOpTimeAllocationFree(t *testing.T) {
	d := h100()
	op := gemmOp(4096, 4096, 4096, 1, 2, 2)
	if n := testing.AllocsPerRun(100, func() { _ = d.OpTime(op, BF16) }); n != 0 {
		t.Errorf("OpTime allocates %v times", n)
	}
}

func BenchmarkOpTime(b *testing.B) {
	d := h100()
	m, _ := Preset("llama3-70b")
	ops := m.LayerOps(0, Shape{MicroBatch: 1, Seq: 8192, Dtype: BF16, TP: 8, SP: true, FlashAttention: true}, Forward)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		_ = d.OpTime(ops[i%len(ops)], BF16)
	}
}

func BenchmarkLayerOps(b *testing.B) {
	m, _ := Preset("deepseek-v3")
	s := Shape{MicroBatch: 1, Seq: 4096, Dtype: FP8, TP: 2, EP: 64, SP: true, FlashAttention: true}
	for b.Loop() {
		_ = m.LayerOps(10, s, Backward)
	}
}

// TestAttentionKernelEfficiency checks that a scenario's attention kernel
// (Shape.AttnEff/AttnBwdEff) reaches the attention ops of both passes and
// replaces the Device's asymptote, and that zero keeps the Device's.
func TestAttentionKernelEfficiency(t *testing.T) {
	d := h100() // FA3 asymptotes 0.685 / 0.584
	m, _ := Preset("llama3-8b")
	base := Shape{MicroBatch: 1, Seq: 8192, Dtype: BF16, FlashAttention: true}
	find := func(ops []Op) Op {
		for _, o := range ops {
			if o.Class == ClassAttention {
				return o
			}
		}
		t.Fatal("no attention op")
		return Op{}
	}
	// FlashAttention-2 on H100: 0.35 forward, 0.298 backward.
	fa2 := base
	fa2.AttnEff, fa2.AttnBwdEff = 0.35, 0.298
	for _, c := range []struct {
		pass     Pass
		dev, fa2 float64 // asymptotes: the Device's, the kernel's
	}{{Forward, 0.685, 0.35}, {Backward, 0.584, 0.298}} {
		def := find(m.LayerOps(0, base, c.pass))
		k := find(m.LayerOps(0, fa2, c.pass))
		if def.AttnEff != 0 || k.AttnEff != c.fa2 {
			t.Errorf("pass %d: Op.AttnEff %g / %g, want 0 / %g", c.pass, def.AttnEff, k.AttnEff, c.fa2)
		}
		// Same op shape, so the efficiencies scale by the asymptotes:
		// e.g. forward 0.35/0.685 of the Device's.
		got := d.AttentionEfficiency(k) / d.AttentionEfficiency(def)
		if !near(got, c.fa2/c.dev, 1e-12) {
			t.Errorf("pass %d: kernel/device efficiency %g, want %g", c.pass, got, c.fa2/c.dev)
		}
		// Only the attention op changes.
		a, b := m.LayerOps(0, base, c.pass), m.LayerOps(0, fa2, c.pass)
		for i := range a {
			if a[i].Class != ClassAttention && d.OpTime(a[i], BF16) != d.OpTime(b[i], BF16) {
				t.Errorf("pass %d: %s changed with the attention kernel", c.pass, a[i].Name)
			}
		}
	}
	// Full recompute replays the forward kernel at the forward efficiency.
	if r := find(m.RecomputeOps(0, fa2, RecomputeFull)); r.AttnEff != 0.35 {
		t.Errorf("recomputed attention AttnEff %g, want 0.35", r.AttnEff)
	}
}
