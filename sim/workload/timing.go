package workload

import (
	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/units"
)

// Device is the GPU description the compute-time model prices ops against;
// DeviceOf fills it from a GPU's hardware record. A zero efficiency
// or bandwidth means "unknown": that term then does not limit the op.
type Device struct {
	Name           string
	Peak           [8]units.FLOPPerSecond // dense, indexed by Dtype; 0 = no native support
	HBMBandwidth   units.BytesPerSecond
	HBMBytes       units.Bytes // what a process can allocate (hardware.GPU.HBMUsableBytes)
	SMs            int
	MatmulEffBF16  float64 // large-shape dense GEMM throughput / BF16 peak (MAMF, hardware-facts §4a)
	MatmulEffFP8   float64 // same for FP8 (also used for FP4 formats)
	MatmulEffTF32  float64 // same for TF32 against the TF32 peak; 0 = MatmulEffBF16
	HBMEff         float64 // STREAM triad / spec bandwidth (§4b)
	AttnEff        float64 // fused causal attention forward, long sequences / BF16 peak (§4c)
	AttnBwdEff     float64 // fused attention backward / BF16 peak
	KernelOverhead float64 // seconds added to every kernel
	// BlockScaledGEMMRel and RowScaledGEMMRel are the throughputs of a
	// block-scaled and a row-scaled FP8 GEMM (Op.Scaling) relative to a
	// per-tensor-scaled one of the same shape on this GPU; 0 means the same.
	BlockScaledGEMMRel, RowScaledGEMMRel float64
}

// Fitted shape parameters of the GEMM and attention efficiency model (see
// doc.go). They are properties of how tiled GEMM and flash-attention kernels
// work, shared by all GPUs; TestGEMMShapeFit and TestAttentionShapeFit hold
// the residuals, and `go test -run Fit -refit` repeats the fits.
const (
	// gemmTile is the output tile (gemmTile × gemmTile) one SM computes
	// at a time. Chosen by the fit from {64,128,256}² on the hardware-facts
	// §4a shape table (A100 FP16, H100/H200/GB200 FP8 columns, 35 rows).
	gemmTile = 128
	// gemmK0 is the reduction length whose pipeline fill and epilogue cost
	// as much as the main loop: efficiency × K/(K + gemmK0). Fitted to the
	// same 35 rows jointly with the kernel overhead (grid 8, log-error
	// least squares): 392.
	gemmK0 = 392
	// attnTile is the query rows per flash-attention thread block
	// (FlashAttention-2/3 use 128 for head dim 128).
	attnTile = 128
	// attnL0 is the key length at which a flash-attention kernel reaches
	// half its asymptotic throughput: efficiency × L/(L + attnL0), L the
	// mean keys per query. Fitted (grid 1, log-error least squares) to the
	// FlashAttention-3 paper's H100 SXM5 head-dim-128 figures (Shah et al.
	// 2024, arXiv:2407.08608 Fig. 5-6: forward causal, forward non-causal
	// and backward, sequence 512-16k): 306, RMS error 4.2%.
	attnL0 = 306
)

// FittedKernelOverhead is the per-kernel fixed time (launch gap, prologue,
// tail) fitted jointly with gemmK0 to the small shapes of the §4a table:
// 2.2 µs. It agrees with hardware-facts §4e (cuLaunchKernel 3.0 µs on GB200,
// meta-pytorch/tritonbench#1017; CUDA-graph vs direct launch 25.8 vs 28.3 µs
// on B200). The topology catalog uses it for every GPU.
const FittedKernelOverhead = 2.2e-6

// GEMMEfficiency is the fraction of the peak a GEMM of m×n×k (batch
// independent problems) reaches on d at dtype dt: the best-shape fraction
// (MatmulEffBF16 or MatmulEffFP8) times the wave quantisation of its output
// tiles over the SMs times the reduction-length saturation K/(K + gemmK0).
func (d Device) GEMMEfficiency(m, n, k, batch int, dt Dtype) float64 {
	_, eff := d.gemmPeak(dt)
	return eff * gemmShape(m, n, k, batch, d.SMs)
}

// gemmShape is the shape factor in (0, 1].
func gemmShape(m, n, k, batch, sms int) float64 {
	return gemmShapeWith(m, n, k, batch, sms, gemmTile, gemmK0)
}

// gemmShapeWith is gemmShape with explicit model parameters (for the fit).
func gemmShapeWith(m, n, k, batch, sms, tile int, k0 float64) float64 {
	if m <= 0 || n <= 0 || k <= 0 {
		return 1
	}
	tiles := cdiv(m, tile) * cdiv(n, tile) * max(batch, 1)
	return waveEfficiency(tiles, sms) * float64(k) / (float64(k) + k0)
}

// GEMMTiles is the output tiles of a GEMM op, gemmTile × gemmTile each
// (the tile GEMMEfficiency's wave quantisation uses), over its Batch
// GEMMs; 0 for other ops.
func GEMMTiles(op Op) int {
	if op.Class != ClassGEMM {
		return 0
	}
	return cdiv(op.M, gemmTile) * cdiv(op.N, gemmTile) * max(op.Batch, 1)
}

// waveEfficiency is the busy fraction of sms processors running tiles equal
// work items in ceil(tiles/sms) waves.
func waveEfficiency(tiles, sms int) float64 {
	if sms <= 0 || tiles <= 0 {
		return 1
	}
	waves := cdiv(tiles, sms)
	return float64(tiles) / float64(waves*sms)
}

// gemmPeak returns the tensor-core peak and best-shape efficiency for dt.
// FP4 formats use the FP4 peak and the FP8 efficiency (no published FP4
// MAMF). TF32 uses MatmulEffTF32 where the GPU has a TF32 measurement,
// else the BF16 efficiency. A dtype the GPU lacks (Peak 0, e.g. fp8 on
// A100) runs at BF16.
func (d Device) gemmPeak(dt Dtype) (peak, eff float64) {
	if dt.Valid() {
		peak = float64(d.Peak[dt])
	}
	switch dt {
	case FP8, FP4, MXFP4, NVFP4:
		eff = d.MatmulEffFP8
		if eff == 0 {
			eff = d.MatmulEffBF16
		}
	case TF32:
		eff = d.MatmulEffTF32
		if eff == 0 {
			eff = d.MatmulEffBF16
		}
	default:
		eff = d.MatmulEffBF16
	}
	if peak == 0 {
		peak, eff = float64(d.Peak[BF16]), d.MatmulEffBF16
	}
	return peak, eff
}

// attnPeak is the peak fused attention runs at: BF16 (FP16 when BF16 is
// missing). Attention stays in 16-bit even in FP8 training, as Transformer
// Engine's default recipe does.
func (d Device) attnPeak() float64 {
	if d.Peak[BF16] > 0 {
		return float64(d.Peak[BF16])
	}
	return float64(d.Peak[FP16])
}

// AttentionEfficiency is the fraction of the BF16 peak a fused attention
// kernel reaches: the kernel's asymptote — op.AttnEff when the op names
// one (the scenario's training.attention_kernel), else AttnEff (forward)
// or AttnBwdEff (backward) — × the wave quantisation of
// batch·ceil(queries/128) thread blocks over the SMs × the key-length
// saturation L/(L + attnL0).
func (d Device) AttentionEfficiency(op Op) float64 {
	eff := d.AttnEff
	if op.Pass == Backward {
		eff = d.AttnBwdEff
	}
	if op.AttnEff > 0 {
		eff = op.AttnEff
	}
	return eff * attnShape(op.M, op.N, op.Batch, d.SMs)
}

func attnShape(queries, keys, batch, sms int) float64 {
	return attnShapeWith(queries, keys, batch, sms, attnL0)
}

// attnShapeWith is attnShape with an explicit half-saturation length.
func attnShapeWith(queries, keys, batch, sms int, l0 float64) float64 {
	if queries <= 0 || keys <= 0 {
		return 1
	}
	f := waveEfficiency(max(batch, 1)*cdiv(queries, attnTile), sms)
	return f * float64(keys) / (float64(keys) + l0)
}

// OpTime is the op's time in seconds on d at compute dtype dt:
//
//	max(FLOPs / (peak × eff), bytes / (HBMBandwidth × HBMEff)) + KernelOverhead
//	  + t_quantize   (GEMMs in an 8- or 4-bit format only, see quantizeTime;
//	                  not for GEMMs whose FP8 recipe ops quantise, Op.Quant)
//
// with peak and eff by class: GEMMs use the dtype's tensor-core peak and
// GEMMEfficiency (× RowScaledGEMMRel or BlockScaledGEMMRel for a row- or
// block-scaled FP8 GEMM, Op.Scaling); attention the BF16 peak and
// AttentionEfficiency; memory-bound kernels the FP32 (vector) peak at full efficiency, so their
// bytes decide. OpTime does not allocate.
func (d Device) OpTime(op Op, dt Dtype) float64 {
	if op.Quant == QuantCast && (!dt.Valid() || d.Peak[dt] == 0) {
		return 0 // no FP8 on this GPU: the GEMMs run at BF16, nothing is cast
	}
	var rate float64
	switch op.Class {
	case ClassGEMM:
		peak, eff := d.gemmPeak(dt)
		rate = peak * eff * gemmShape(op.M, op.N, op.K, op.Batch, d.SMs)
		if dt == FP8 {
			rate *= d.scalingRel(op.Scaling)
		}
	case ClassAttention:
		rate = d.attnPeak() * d.AttentionEfficiency(op)
	default:
		rate = float64(d.Peak[FP32])
	}
	var tc, tm float64
	if rate > 0 {
		tc = op.FLOPs / rate
	}
	if bw := float64(d.HBMBandwidth) * d.HBMEff; bw > 0 {
		tm = (op.BytesRead + op.BytesWritten) / bw
	}
	return max(tc, tm) + d.KernelOverhead + d.quantizeTime(op, dt)
}

// scalingRel is the rate of an FP8 GEMM with scaling sc relative to a
// per-tensor-scaled one (1 where the device has no figure).
func (d Device) scalingRel(sc Scaling) float64 {
	r := 0.0
	switch sc {
	case ScalingRow:
		r = d.RowScaledGEMMRel
	case ScalingBlock:
		r = d.BlockScaledGEMMRel
	}
	if r > 0 {
		return r
	}
	return 1
}

// quantizeBytesPerValue is the HBM traffic of quantizing one GEMM operand
// value from bf16 to an 8-bit (or 4-bit) format with a per-tensor scale: an
// amax pass that reads it (2 bytes), then a cast that reads it again (2) and
// writes the narrow copy (1). Transformer Engine and torchao's float8
// training keep activations, weights and gradients in bf16 and quantize
// each GEMM's two inputs right before it (Micikevicius et al. 2022,
// arXiv:2209.05433 §4; TE's cast/cast_transpose kernels), so every
// forward, dgrad and wgrad GEMM pays this for both operands.
const quantizeBytesPerValue = 5

// quantizeTime is the time of the separate kernel that quantizes the inputs
// of a GEMM run in an 8- or 4-bit format (zero for other ops and dtypes, and
// when the GPU lacks the format and the GEMM runs at BF16).
func (d Device) quantizeTime(op Op, dt Dtype) float64 {
	if op.Class != ClassGEMM || op.Quant != QuantNone || !dt.Valid() || d.Peak[dt] == 0 {
		return 0 // QuantScaled: the recipe's own ops quantise (fp8.go)
	}
	switch dt {
	case FP8, FP4, MXFP4, NVFP4:
	default:
		return 0
	}
	bw := float64(d.HBMBandwidth) * d.HBMEff
	if !(bw > 0) || op.M <= 0 || op.N <= 0 || op.K <= 0 {
		return 0
	}
	values := (float64(op.M)*float64(op.K) + float64(op.K)*float64(op.N)) * float64(max(op.Batch, 1))
	return values*quantizeBytesPerValue/bw + d.KernelOverhead
}

// Bound says which roofline term limits op on d: "compute" or "memory".
func (d Device) Bound(op Op, dt Dtype) string {
	t := d.OpTime(op, dt) - d.KernelOverhead
	if bw := float64(d.HBMBandwidth) * d.HBMEff; bw > 0 && (op.BytesRead+op.BytesWritten)/bw >= t {
		return "memory"
	}
	return "compute"
}

// DeviceOf is the description the compute-time model prices ops against
// for a GPU: its dense peaks per dtype (the FP4 peak serves fp4, mxfp4 and
// nvfp4), HBM bandwidth and capacity, SM count and the efficiencies of its
// compute profile, each sourced in its hardware record.
func DeviceOf(g hardware.GPU) Device {
	var d Device
	d.Name = g.Name
	d.Peak[FP32] = g.Peak.FP32
	d.Peak[TF32] = g.Peak.TF32
	d.Peak[FP16] = g.Peak.FP16
	d.Peak[BF16] = g.Peak.BF16
	d.Peak[FP8] = g.Peak.FP8
	d.Peak[FP4] = g.Peak.FP4
	d.Peak[MXFP4] = g.Peak.FP4
	d.Peak[NVFP4] = g.Peak.FP4
	d.HBMBandwidth = g.HBMBandwidth
	d.HBMBytes = g.HBMUsableBytes
	d.SMs = g.SMs
	c := g.Compute
	d.MatmulEffBF16 = c.MatmulEffBF16
	d.MatmulEffFP8 = c.MatmulEffFP8
	d.MatmulEffTF32 = c.MatmulEffTF32
	d.HBMEff = c.HBMEff
	d.AttnEff = c.AttnEff
	d.AttnBwdEff = c.AttnBwdEff
	d.KernelOverhead = c.KernelOverhead
	d.BlockScaledGEMMRel = c.BlockScaledGEMMRel
	d.RowScaledGEMMRel = c.RowScaledGEMMRel
	return d
}
