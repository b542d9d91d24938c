package hardware

import (
	"fmt"
	"strings"
	"time"

	"github.com/simtrain/simtrain/sim/units"
)

// GPU is one GPU type resolved for the simulator: plain values in their
// units, taken from its record (Record) with every fitted factor applied
// and every inherited figure filled in. Sources has one line per figure:
// "field: kind: reference".
type GPU struct {
	Name        string
	Description string
	Arch        string // ampere, hopper, blackwell, ada, cdna3
	// Inherits is the reference GPU whose figures this one took where its
	// record left them out ("" for a fully measured GPU).
	Inherits string

	HBMBytes units.Bytes // datasheet device memory
	// HBMUsableBytes is what a process can allocate (cudaMemGetInfo's
	// total): the limit the memory model's fit checks against.
	HBMUsableBytes units.Bytes
	HBMBandwidth   units.BytesPerSecond
	Peak           PeakFLOPS
	SMs            int
	// PersistentGEMM says the GPU's GEMM library runs persistent GEMM
	// kernels, one CTA per SM working through the output tiles (Hopper:
	// resolve.go persistentGEMM), so communication kernels holding SMs
	// push part of the grid into a second wave (sim/parallel
	// interference.go).
	PersistentGEMM bool

	ScaleUp            string               // nvlink, xgmi, nvlink-bridge, none
	ScaleUpBandwidth   units.BytesPerSecond // per GPU, per direction (H100: 450e9)
	ScaleUpLinks       int
	ScaleUpLatency     time.Duration // per scale-up link
	NVLS               bool          // NVSwitch in-network reduction (NVLink SHARP)
	DomainGPUs         int           // GPUs in the default scale-up domain: 8 for HGX, 72 for NVL72
	DefaultGPUsPerNode int
	DefaultIntraNode   string // nvswitch, pcie, nvlink-pairs, nvlink-mesh
	PCIeGen            int
	PCIeBandwidth      units.BytesPerSecond // x16 per direction
	PCIeLatency        time.Duration        // one PCIe switch hop
	TDPWatts           float64
	GPUHourUSD         float64

	Compute  ComputeProfile
	Comm     CommProfile
	HostCopy HostCopy
	Sources  []string
	// Record is the record the GPU was resolved from, as written.
	Record GPURecord
}

// PeakFLOPS is dense (no sparsity) peak throughput per datatype. Zero
// means the GPU has no native support for that datatype.
type PeakFLOPS struct {
	FP32, TF32, FP16, BF16, FP8, FP4 units.FLOPPerSecond
}

// HostCopy is how fast one GPU copies to and from pinned host memory with
// its copy engines (cudaMemcpyAsync; what activation and optimizer-state
// offloading move), per direction.
type HostCopy struct {
	H2D, D2H units.BytesPerSecond
	Source   string
}

// NIC is one scale-out network adapter type, resolved.
type NIC struct {
	Name      string
	Kind      string               // infiniband, roce, ethernet, omnipath
	Gbps      float64              // line rate per port, Gb/s
	Bandwidth units.BytesPerSecond // line rate per direction (Gbps·1e9/8)
	Latency   time.Duration        // per network link (NIC-switch or switch-switch hop)
	Comm      NICCommProfile
	Sources   []string
	Record    NICRecord
}

// HostLink is one PCIe generation, resolved.
type HostLink struct {
	Name         string
	Gen          int
	Bandwidth    units.BytesPerSecond
	Latency      time.Duration
	CopyFraction float64
	Sources      []string
	Record       HostLinkRecord
}

// ComputeProfile holds the achievable-efficiency parameters of one GPU type
// that the compute-time model (sim/workload) uses. Each value carries its
// source in Sources.
//
// The GEMM and attention efficiencies are what a training step sustains:
// the published kernel benchmark of the GPU (MAMF for GEMMs, the benchmark
// of each fused attention kernel) times the training fractions train_gemm
// and train_attn, which were fitted once for all GPUs (calibration.yaml). HBM
// efficiency and the per-kernel overhead are the published and fitted
// microbenchmark values as they are.
type ComputeProfile struct {
	MatmulEffBF16 float64 // dense GEMM throughput sustained in training / BF16 peak (MAMF §4a × trainGEMM)
	MatmulEffFP8  float64 // same for FP8; 0 when the GPU has no FP8
	// MatmulEffTF32 is the same for TF32 GEMMs (fp32 tensors on tensor
	// cores) against the TF32 peak; 0 = no measurement, priced at
	// MatmulEffBF16.
	MatmulEffTF32  float64
	HBMEff         float64 // STREAM triad / spec bandwidth (§4b)
	AttnEff        float64 // fused causal attention forward in training, long sequences / BF16 peak: the AttnKernel entry
	AttnBwdEff     float64 // fused attention backward in training / BF16 peak: the AttnKernel entry
	KernelOverhead float64 // seconds of fixed cost per kernel (launch + tail), §4e
	// BlockScaledGEMMRel is a block-scaled FP8 GEMM's throughput (MXFP8,
	// and the blockwise recipe, which Transformer Engine runs as MXFP8 on
	// Blackwell) relative to a per-tensor FP8 GEMM; 0 = no measurement,
	// priced the same.
	BlockScaledGEMMRel float64
	// RowScaledGEMMRel is the same for a row-scaled FP8 GEMM (torchao's
	// rowwise recipe runs its forward GEMMs on PyTorch's CUTLASS rowwise
	// kernel); 0 = priced as per-tensor.
	RowScaledGEMMRel float64
	// MoEHostSync is the seconds the GPU idles per dropless MoE layer
	// forward and micro-batch while the host waits for the token counts
	// and re-issues the layer (parallel.StepConfig.MoEHostSync); fitted.
	MoEHostSync float64
	// HostSyncStall is the seconds the GPU idles per blocking host
	// synchronisation inside eager PyTorch model code (a device-to-host
	// read the host waits for, such as torch.nonzero or .item(), after
	// which the host runs Python until it issues the next kernel);
	// fitted (hostSyncStall).
	HostSyncStall float64
	// HostDispatchScale multiplies the host dispatch costs (HostDispatch,
	// measured on x86 hosts) for this GPU's host CPU: 1 for x86, about
	// 2.75 for Grace (TransformerEngine#2053).
	HostDispatchScale float64
	// AttnKernel names the fused attention kernel AttnEff and AttnBwdEff
	// describe: the one a current software stack runs on this GPU, which
	// training.attention_kernel: auto selects.
	AttnKernel string
	// AttnKernels lists every fused attention kernel that runs on this GPU
	// with its training efficiencies, in AttentionKernelNames order; one of
	// them is AttnKernel.
	AttnKernels []AttnKernel
	Sources     []string
}

// AttnKernel is one fused attention kernel's asymptotic efficiency on a GPU
// (long sequences, head dimension 128; fractions of the BF16 peak). The
// workload model multiplies it by its wave and key-length factors.
type AttnKernel struct {
	Name     string
	Fwd, Bwd float64
}

// The attention kernels training.attention_kernel can name, besides auto
// (the GPU's AttnKernel) and unfused (score GEMM, softmax and context GEMM
// as separate kernels, priced by the op model, not by a profile entry):
//
//	flash2  FlashAttention-2 (Dao 2023, arXiv:2307.08691): flash-attn 2.x,
//	        PyTorch SDPA's flash backend; Ampere-style MMA on every GPU.
//	flash3  FlashAttention-3 (Shah et al. 2024, arXiv:2407.08608):
//	        warp-specialised wgmma/TMA kernels, Hopper only.
//	cudnn   cuDNN's fused flash attention (Transformer Engine's
//	        FusedAttention, PyTorch SDPA's cuDNN backend).
//	triton  the 2022-23 Triton FlashAttention kernel (flash-attn's
//	        flash_attn_triton.py, which llm-foundry's MPT runs as
//	        attn_impl: triton on triton-pre-mlir).
const (
	KernelFlash2 = "flash2"
	KernelFlash3 = "flash3"
	KernelCuDNN  = "cudnn"
	KernelTriton = "triton"
)

// AttentionKernelNames lists the values of training.attention_kernel (a
// fresh slice): auto, the fused kernels, unfused.
func AttentionKernelNames() []string {
	return []string{"auto", KernelFlash2, KernelFlash3, KernelCuDNN, KernelTriton, "unfused"}
}

// Attention returns the training efficiencies (forward, backward) of the
// named attention kernel on this GPU: "auto" is AttnKernel's; "unfused"
// gives 0, 0 (no fused kernel). A name outside AttentionKernelNames, or a
// fused kernel that does not run on this GPU, is an error listing the
// kernels that do.
func (p ComputeProfile) Attention(kernel string) (fwd, bwd float64, err error) {
	switch kernel {
	case "auto":
		return p.AttnEff, p.AttnBwdEff, nil
	case "unfused":
		return 0, 0, nil
	}
	for _, k := range p.AttnKernels {
		if k.Name == kernel {
			return k.Fwd, k.Bwd, nil
		}
	}
	valid := []string{"auto"}
	for _, k := range p.AttnKernels {
		valid = append(valid, k.Name)
	}
	valid = append(valid, "unfused")
	for _, n := range AttentionKernelNames() {
		if n == kernel {
			return 0, 0, fmt.Errorf("%s does not run on this GPU (valid: %s)", kernel, strings.Join(valid, ", "))
		}
	}
	return 0, 0, fmt.Errorf("unknown attention kernel %q (valid: %s)", kernel, strings.Join(valid, ", "))
}

// attnHeadDims are the head dimensions each fused attention kernel is
// compiled for, ascending: a head dimension between two entries runs the
// next larger kernel, whose matrix products span the whole tile (the extra
// columns are masked loads of zeros, still multiplied). Sources, all in
// Dao-AILab/flash-attention:
//   - triton: flash_attn/flash_attn_triton.py @ v1.0.4, BLOCK_HEADDIM =
//     max(triton.next_power_of_2(d), 16), d <= 128 asserted. FlashAttention
//     1.x's CUDA kernels (csrc/flash_attn/fmha_api.cpp @ v1.0.4,
//     run_fmha_fwd: d <= 32, <= 64, <= 128) use the same tiles above 16,
//     which is why the FlashAttention-1 runs written as triton keep them.
//   - flash2: csrc/flash_attn/src/static_switch.h @ v2.0.4,
//     FWD_HEADDIM_SWITCH: 32, 64, 96, 128, 160, 192, 224, 256.
//   - flash3: hopper/flash_api.cpp @ 0251105a, round_up_headdim: 64, 96,
//     128, 192, 256.
//
// cuDNN's fused attention has no published tile list: no rounding.
var attnHeadDims = map[string][]int{
	KernelTriton: {16, 32, 64, 128},
	KernelFlash2: {32, 64, 96, 128, 160, 192, 224, 256},
	KernelFlash3: {64, 96, 128, 192, 256},
}

// AttentionHeadDims returns the head dimensions the named fused attention
// kernel ("auto": AttnKernel) is compiled for, ascending, or nil when any
// head dimension runs at its own width (cuDNN, unfused). The slice is
// shared: callers must not modify it.
func (p ComputeProfile) AttentionHeadDims(kernel string) []int {
	if kernel == "auto" {
		kernel = p.AttnKernel
	}
	return attnHeadDims[kernel]
}

// ProtoLatency holds one latency per NCCL protocol.
type ProtoLatency struct {
	LL, LL128, Simple time.Duration
}

// AlgoLatency holds a ProtoLatency per algorithm family of NCCL's tuning
// model (hardware-facts §3c).
type AlgoLatency struct {
	Ring, Tree, NVLS, NVLSTree ProtoLatency
}

// PerNodes holds one value for groups that span 1, 2 and 3 or more scale-up
// domains: NCCL's N1/N2/N4 columns (hardware-facts §3c).
type PerNodes [3]float64

// At returns the value for a group spanning domains scale-up domains.
func (p PerNodes) At(domains int) float64 {
	switch {
	case domains <= 1:
		return p[0]
	case domains == 2:
		return p[1]
	}
	return p[2]
}

// CommProfile holds the collective-communication parameters of one GPU type:
// achievable fractions of its links, NCCL's protocol and latency constants for
// its architecture, and the few values fitted to measured nccl-tests sweeps.
// Bandwidths are bytes/s per direction; fractions are of the line rates in the
// GPU and NIC catalog entries. sim/collectives reads these and nothing else
// about communication efficiency, so no efficiency is buried in its code.
type CommProfile struct {
	// Library is the collective library the figures describe: "nccl" or
	// "rccl" (RCCL derives from NCCL and is modelled with NCCL's constants).
	Library string

	// RingEfficiency is the ring/Simple bus bandwidth a collective reaches on
	// the scale-up fabric (NVLink, XGMI) as a fraction of ScaleUpBandwidth.
	// It folds NCCL's protocol overhead (~20% on Hopper, nccl-tests#212).
	RingEfficiency float64
	// P2PEfficiency is the point-to-point copy rate on the scale-up fabric as
	// a fraction of ScaleUpBandwidth (send/recv, all-to-all).
	P2PEfficiency float64
	// NVLSEfficiency is the rate each GPU port sustains during an NVLink SHARP
	// (in-switch) collective as a fraction of ScaleUpBandwidth; an NVLS
	// all-reduce moves (n+1)/n of the buffer over each port in each
	// direction. Zero when the GPU has no NVLS.
	NVLSEfficiency float64
	// PCIeEfficiency is the achievable fraction of a PCIe link.
	PCIeEfficiency float64

	// LLFraction is the LL protocol's bus bandwidth relative to Simple
	// (4 data bytes per 8-byte store).
	LLFraction float64
	// LLMaxBW caps ring LL bus bandwidth (NCCL llMaxBws: 1 node by GPU
	// architecture, 2 and >=3 nodes by host CPU vendor).
	LLMaxBW PerNodes
	// LL128Fraction is the LL128 protocol's bus bandwidth relative to
	// Simple; zero disables LL128. A record may refit it on a one-node
	// (scale-up) sweep (A100: 0.6), so it prices the scale-up side of a ring.
	LL128Fraction float64
	// LL128NetFraction is LL128's bus bandwidth relative to Simple on the
	// NIC side of a ring across domains: NCCL's ring LL128 factor (busBw
	// x0.92, tuning.cc; each 128-byte line carries 120 bytes of data), never
	// refitted, since no record's fit saw a network. Tree LL128 across
	// domains already uses NCCL's own factor (120/128).
	LL128NetFraction float64
	// PerChannelRingLL128BW caps ring LL128 bus bandwidth per channel.
	PerChannelRingLL128BW float64
	// PerChannelTreeBW, PerChannelTreeLL128BW and PerChannelNVLSTreeBW cap
	// tree, tree/LL128 and NVLS-tree bus bandwidth per channel.
	PerChannelTreeBW      PerNodes
	PerChannelTreeLL128BW PerNodes
	PerChannelNVLSTreeBW  PerNodes
	// Channels is the number of collective channels NCCL opens for ring and
	// tree; small messages use fewer (see sim/collectives doc).
	Channels int
	// NVLSChannels is the number of NVLS channels.
	NVLSChannels int

	// BaseLatency is NCCL's per-collective base latency per algorithm and
	// protocol; NVLinkLatency, PCIeLatency and NetLatency are its per-step
	// latencies over each kind of hop (hardware-facts §3c, hwLat).
	BaseLatency   AlgoLatency
	NVLinkLatency AlgoLatency
	PCIeLatency   AlgoLatency
	NetLatency    AlgoLatency
	// NetOverhead is the proxy's cost to post one network step (NCCL: 1 µs
	// on Intel/ARM hosts, 2 µs on AMD; tripled for Simple).
	NetOverhead time.Duration

	// LaunchOverhead is the fixed host and launch cost of one collective as
	// nccl-tests measures it (no CUDA graphs), on top of the base latency.
	// Fitted, see Sources; zero where the library's base latency already
	// carries it (RCCL on MI300X).
	LaunchOverhead time.Duration
	// RampTime and RampBytes describe the Simple-protocol pipeline ramp: a
	// collective moving B bus bytes pays RampTime*min(1, B/RampBytes) on top
	// of latency and transmission, the cost of filling NCCL's chunk pipeline
	// before it streams. Fitted, see Sources.
	RampTime  time.Duration
	RampBytes float64

	// Interference is the share of the GPU's SMs an in-flight
	// communication kernel takes from compute kernels running beside it
	// (sim/parallel's executor applies it; all zero turns it off).
	Interference CommCTAs

	Sources []string
}

// CommCTAs counts the thread blocks (CTAs) one in-flight communication
// kernel of the collective library holds, by where the traffic goes. NCCL
// launches one CTA per channel and "NCCL CTAs won't share an SM with compute
// kernels" (NCCL maintainer, nccl#689), so while the kernel runs it takes
// that many of the GPU's SMs away from the compute stream: the share is
// CTAs / GPU.SMs.
type CommCTAs struct {
	// ScaleUp is a collective inside one scale-up domain (NVLink, XGMI,
	// PCIe): NCCL's ring/tree channel count (Channels).
	ScaleUp int
	// ScaleOut is a collective whose group spans scale-up domains, over the
	// NICs.
	ScaleOut int
	// P2P is one pipeline send or receive (NCCL p2p channels per peer).
	P2P int
}

// NICCommProfile holds the achievable fractions of one NIC type (e.g. NDR
// 400: 46-48 GB/s of 50 GB/s per NCCL maintainers).
type NICCommProfile struct {
	Efficiency float64 // achievable / line rate
	Sources    []string
}
