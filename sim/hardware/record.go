package hardware

import (
	"time"

	"github.com/simtrain/simtrain/sim/units"
)

// GPURecord is one GPU type as a record file holds it: datasheet figures
// and its compute, communication and host-copy profiles, every figure with
// its provenance. A record that names a reference GPU (Inherits) may leave
// out any figure; it takes the reference's, marked inherited — how a part
// nobody has measured yet is simulated from its datasheet figures with a
// measured GPU's efficiencies. Resolve turns a record into a GPU.
type GPURecord struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description,omitempty"`
	Arch        string `yaml:"arch"` // ampere, hopper, blackwell, ada, cdna3
	// Inherits names the catalog GPU whose figures fill in what this
	// record leaves out.
	Inherits string `yaml:"inherits,omitempty"`

	HBMBytes Figure[units.Bytes] `yaml:"hbm_bytes,omitempty"` // device memory (datasheet decimal GB)
	// HBMUsableBytes is the device memory the CUDA runtime reports
	// (cudaMemGetInfo's total, PyTorch's "total capacity"): what a
	// process may allocate, the fit limit. NVIDIA's "80 GB" parts carry
	// 80 GiB less the driver's reservation, so it differs from HBMBytes
	// both ways. Left out, HBMBytes stands for it; a record that gives
	// its own hbm_bytes does not inherit it.
	HBMUsableBytes Figure[units.Bytes]          `yaml:"hbm_usable_bytes,omitempty"`
	HBMBandwidth   Figure[units.BytesPerSecond] `yaml:"hbm_bandwidth,omitempty"` // device memory bandwidth
	Peak           PeakRecord                   `yaml:"peak_flops"`              // dense peaks by dtype
	SMs            Figure[int]                  `yaml:"sms,omitempty"`           // streaming multiprocessors / compute units

	ScaleUp          string                       `yaml:"scale_up"`                     // nvlink, xgmi, nvlink-bridge, none
	ScaleUpBandwidth Figure[units.BytesPerSecond] `yaml:"scale_up_bandwidth,omitempty"` // per GPU, per direction
	ScaleUpLinks     Figure[int]                  `yaml:"scale_up_links,omitempty"`
	ScaleUpLatency   Figure[time.Duration]        `yaml:"scale_up_latency,omitempty"` // per scale-up link (GPU↔switch)
	NVLS             Figure[bool]                 `yaml:"nvls,omitempty"`             // NVLink SHARP in the switch
	DomainGPUs       Figure[int]                  `yaml:"domain_gpus,omitempty"`      // GPUs in one scale-up domain
	// DefaultGPUsPerNode and DefaultIntraNode are the cluster builder's
	// defaults (nvswitch, pcie, nvlink-pairs, nvlink-mesh).
	DefaultGPUsPerNode Figure[int] `yaml:"default_gpus_per_node,omitempty"`
	DefaultIntraNode   string      `yaml:"default_intra_node"`
	// PCIe names the host link record of the GPU's PCIe connection
	// (pcie-gen4, pcie-gen5, pcie-gen6).
	PCIe       string          `yaml:"pcie"`
	TDPWatts   Figure[float64] `yaml:"tdp_watts,omitempty"`
	GPUHourUSD Figure[float64] `yaml:"gpu_hour_usd,omitempty"` // default on-demand price (sweep cost model)

	Compute  *ComputeRecord  `yaml:"compute,omitempty"`
	Comm     *CommRecord     `yaml:"comm,omitempty"`
	HostCopy *HostCopyRecord `yaml:"host_copy,omitempty"`
}

// PeakRecord is the dense (no sparsity) peak per datatype; a figure left
// out means no native support (FP4 serves fp4, mxfp4 and nvfp4).
type PeakRecord struct {
	FP32 Figure[units.FLOPPerSecond] `yaml:"fp32,omitempty"`
	TF32 Figure[units.FLOPPerSecond] `yaml:"tf32,omitempty"`
	FP16 Figure[units.FLOPPerSecond] `yaml:"fp16,omitempty"`
	BF16 Figure[units.FLOPPerSecond] `yaml:"bf16,omitempty"`
	FP8  Figure[units.FLOPPerSecond] `yaml:"fp8,omitempty"`
	FP4  Figure[units.FLOPPerSecond] `yaml:"fp4,omitempty"`
}

// ComputeRecord is the compute-time model's profile (ComputeProfile).
// Kernel benchmarks are given as measured and multiplied by the fitted
// share a training step sustains (times: [train_gemm]).
type ComputeRecord struct {
	MatmulEffBF16      Figure[float64]       `yaml:"matmul_eff_bf16,omitempty"`
	MatmulEffFP8       Figure[float64]       `yaml:"matmul_eff_fp8,omitempty"`
	MatmulEffTF32      Figure[float64]       `yaml:"matmul_eff_tf32,omitempty"`
	HBMEff             Figure[float64]       `yaml:"hbm_eff,omitempty"`
	KernelOverhead     Figure[time.Duration] `yaml:"kernel_overhead,omitempty"`
	BlockScaledGEMMRel Figure[float64]       `yaml:"block_scaled_gemm_rel,omitempty"`
	RowScaledGEMMRel   Figure[float64]       `yaml:"row_scaled_gemm_rel,omitempty"`
	MoEHostSync        Figure[time.Duration] `yaml:"moe_host_sync,omitempty"`
	HostSyncStall      Figure[time.Duration] `yaml:"host_sync_stall,omitempty"`
	// HostDispatchScale is how much slower than an x86 host this GPU's
	// host CPU issues work (data/host.yaml's costs are x86's); left out: 1.
	HostDispatchScale Figure[float64] `yaml:"host_dispatch_scale,omitempty"`
	Attention         AttentionRecord `yaml:"attention"`
}

// AttentionRecord lists the fused attention kernels that run on the GPU,
// and the one training.attention_kernel: auto selects.
type AttentionRecord struct {
	Auto    string         `yaml:"auto"`
	Kernels []KernelRecord `yaml:"kernels"`
}

// KernelRecord is one attention kernel's efficiencies (fractions of the
// BF16 peak, long sequences, head dimension 128).
type KernelRecord struct {
	Name string          `yaml:"name"`
	Fwd  Figure[float64] `yaml:"fwd,omitempty"`
	Bwd  Figure[float64] `yaml:"bwd,omitempty"`
}

// CommRecord is the collective library's profile on this GPU
// (CommProfile). Tuning and Host name NCCL's per-architecture and
// per-host-CPU tables (nccl.yaml); the rest is this GPU's.
type CommRecord struct {
	Library string `yaml:"library"` // nccl, rccl
	Tuning  string `yaml:"tuning"`  // NCCL's architecture row: ampere, hopper, blackwell
	Host    string `yaml:"host"`    // NCCL's host CPU rows: intel (also ARM), amd
	System  string `yaml:"system"`  // the reference system the figures come from

	Channels       Figure[int]     `yaml:"channels,omitempty"`
	NVLSChannels   Figure[int]     `yaml:"nvls_channels,omitempty"` // replaces the tuning row's
	RingEfficiency Figure[float64] `yaml:"ring_efficiency,omitempty"`
	P2PEfficiency  Figure[float64] `yaml:"p2p_efficiency,omitempty"`
	NVLSEfficiency Figure[float64] `yaml:"nvls_efficiency,omitempty"`
	LL128Fraction  Figure[float64] `yaml:"ll128_fraction,omitempty"` // replaces the tuning row's

	LaunchOverhead Figure[time.Duration] `yaml:"launch_overhead,omitempty"`
	RampTime       Figure[time.Duration] `yaml:"ramp_time,omitempty"`
	RampBytes      Figure[units.Bytes]   `yaml:"ramp_bytes,omitempty"`

	// CTAs of one in-flight kernel across domains and of a send/recv
	// (CommCTAs; inside a domain it is Channels).
	CTAsScaleOut Figure[int] `yaml:"ctas_scale_out,omitempty"`
	CTAsP2P      Figure[int] `yaml:"ctas_p2p,omitempty"`
}

// HostCopyRecord is the pinned host copy bandwidth per direction. Left out
// (without a reference GPU) it is derived from the PCIe host link.
type HostCopyRecord struct {
	H2D Figure[units.BytesPerSecond] `yaml:"h2d,omitempty"`
	D2H Figure[units.BytesPerSecond] `yaml:"d2h,omitempty"`
}

// NICRecord is one scale-out network adapter type.
type NICRecord struct {
	Name        string                `yaml:"name"`
	Description string                `yaml:"description,omitempty"`
	Kind        string                `yaml:"kind"`           // infiniband, roce, ethernet, omnipath
	Gbps        Figure[float64]       `yaml:"gbps,omitempty"` // line rate per port, Gb/s
	Latency     Figure[time.Duration] `yaml:"latency,omitempty"`
	// Efficiency is the share of the line rate collectives reach.
	Efficiency Figure[float64] `yaml:"efficiency,omitempty"`
}

// HostLinkRecord is one host link: a PCIe generation at x16.
type HostLinkRecord struct {
	Name        string                       `yaml:"name"`
	Description string                       `yaml:"description,omitempty"`
	Gen         int                          `yaml:"gen"`
	Bandwidth   Figure[units.BytesPerSecond] `yaml:"bandwidth,omitempty"` // per direction
	Latency     Figure[time.Duration]        `yaml:"latency,omitempty"`   // one switch hop
	// CopyFraction is the share of the line rate a pinned host copy
	// reaches, for GPUs without a host-copy measurement.
	CopyFraction Figure[float64] `yaml:"copy_fraction,omitempty"`
}

// IsZero lets a record that inherits its peaks leave the block out.
func (p PeakRecord) IsZero() bool {
	return p.FP32.IsZero() && p.TF32.IsZero() && p.FP16.IsZero() && p.BF16.IsZero() && p.FP8.IsZero() && p.FP4.IsZero()
}
