package topology

import (
	"fmt"
	"slices"
	"strings"

	"github.com/simtrain/simtrain/sim/engine"
)

// Source keys used below are those of shared/validation/hardware-facts.md §8:
// [STAS-ACC] stas00/ml-engineering compute/accelerator/README.md,
// [STAS-NET] stas00/ml-engineering network/README.md, [STAS-PERF]
// training/performance/README.md, [SIMAI] aliyun/SimAI defaults. "HF §5"
// means hardware-facts.md section 5 (its table cites [STAS-ACC], [STAS-NET],
// NVIDIA/AMD datasheets). Web pages are cited by address. A value without a
// public source says "unsourced estimate".

// PCIe x16 line rate per direction (bytes/s) and switch hop latency by
// generation. Line rates: HF §5b ([STAS-NET]: 31 / 63 / 121 GB/s; Gen4 and
// Gen5 written exactly as 16 and 32 GT/s × 16 lanes × 128/130 / 8).
// Latency: Broadcom PEX88000 (Gen4) cut-through 105 ns x16 to x16
// (linleygroup.com newsletter 6069, 2019); PEX89144 (Gen5) 115 ns
// (probsee.com/p/PEX89144); Gen6: unsourced estimate, taken equal to Gen5.
var pcieGen = map[int]struct {
	bw  float64
	lat engine.Time
}{
	4: {31.5e9, 105},
	5: {63e9, 115},
	6: {121e9, 115},
}

// nvlinkLatency is the per-link latency of NVLink (GPU↔NVSwitch, NVLink
// bridge) and, as an unsourced estimate, of XGMI: SimAI's default nv_latency
// of 25 ns (HF §5c, [SIMAI]).
const nvlinkLatency engine.Time = 25

func pcieBW(gen int) float64 { return pcieGen[gen].bw }

var gpuCatalog = map[string]GPU{
	"a100-40gb": {
		Name: "a100-40gb", Arch: "ampere",
		HBMBytes: 40e9, HBMBandwidth: 1.555e12,
		Peak:    PeakFLOPS{FP32: 19.5e12, TF32: 156e12, FP16: 312e12, BF16: 312e12},
		SMs:     108,
		ScaleUp: "nvlink", ScaleUpBandwidth: 300e9, ScaleUpLinks: 12,
		DomainGPUs: 8, DefaultGPUsPerNode: 8, DefaultIntraNode: "nvswitch",
		PCIeGen: 4, TDPWatts: 400, GPUHourUSD: 1.10,
		Sources: []string{
			"HBMBytes, HBMBandwidth, Peak, TDPWatts: HF §5 (A100 40GB SXM; [STAS-ACC], [KLOCK-A100])",
			"SMs: 108 (notes.haroldbenoit.com/ML/Engineering/GPUs/Hardware, A100)",
			"ScaleUp: NVLink3, 12 links, 300 GB/s per direction (HF §5b, [STAS-NET])",
			"DomainGPUs, DefaultGPUsPerNode: HGX/DGX A100 = 8 GPUs on 6 NVSwitches (HF §5b, mila-docs PR#176)",
			"PCIe: Gen4 x16 (HF §5)",
			"GPUHourUSD: unsourced estimate (A100 80GB specialty clouds $1.10-1.50, mercatus-ai.com/blog/cloud-gpu-pricing; 40GB priced at the low end)",
		},
	},
	"a100-80gb": {
		Name: "a100-80gb", Arch: "ampere",
		HBMBytes: 80e9, HBMBandwidth: 2.039e12,
		Peak:    PeakFLOPS{FP32: 19.5e12, TF32: 156e12, FP16: 312e12, BF16: 312e12},
		SMs:     108,
		ScaleUp: "nvlink", ScaleUpBandwidth: 300e9, ScaleUpLinks: 12,
		DomainGPUs: 8, DefaultGPUsPerNode: 8, DefaultIntraNode: "nvswitch",
		PCIeGen: 4, TDPWatts: 400, GPUHourUSD: 1.30,
		Sources: []string{
			"HBMBytes, HBMBandwidth, Peak, TDPWatts: HF §5 (A100 80GB SXM; [STAS-ACC], [KLOCK-A100])",
			"SMs: 108 (notes.haroldbenoit.com/ML/Engineering/GPUs/Hardware: A100-80GB 108 SMs)",
			"ScaleUp: NVLink3, 12 links, 300 GB/s per direction (HF §5b, [STAS-NET])",
			"DomainGPUs, DefaultGPUsPerNode: HGX/DGX A100 = 8 GPUs on 6 NVSwitches (HF §5b, mila-docs PR#176)",
			"PCIe: Gen4 x16 (HF §5)",
			"GPUHourUSD: midpoint of specialty-cloud on-demand $1.10-1.50 (mercatus-ai.com/blog/cloud-gpu-pricing, May 2026)",
		},
	},
	"h100-sxm": {
		Name: "h100-sxm", Arch: "hopper",
		HBMBytes: 80e9, HBMBandwidth: 3.35e12,
		Peak:    PeakFLOPS{FP32: 67e12, TF32: 494.5e12, FP16: 989e12, BF16: 989e12, FP8: 1979e12},
		SMs:     132,
		ScaleUp: "nvlink", ScaleUpBandwidth: 450e9, ScaleUpLinks: 18, NVLS: true,
		DomainGPUs: 8, DefaultGPUsPerNode: 8, DefaultIntraNode: "nvswitch",
		PCIeGen: 5, TDPWatts: 700, GPUHourUSD: 2.99,
		Sources: []string{
			"HBMBytes, HBMBandwidth, Peak, TDPWatts: HF §5 (H100 SXM; [STAS-ACC], hawkvelt H100 notes for 700 W)",
			"SMs: 132 (HF §4a, [STAS-PERF] wave quantization note)",
			"ScaleUp: NVLink4, 18 links, 450 GB/s per direction (HF §5b, [STAS-NET]; maintainer nccl-tests#212 '450GB/s is the line rate')",
			"NVLS: third-generation NVSwitch has NVLink SHARP (HF §5b, NVIDIA NVSwitch tech blog)",
			"DomainGPUs, DefaultGPUsPerNode: HGX H100 = 8 GPUs on 4 NVSwitches (HF §5b, astra-sim HGX-H100 page)",
			"PCIe: Gen5 x16, 128 GB/s bidirectional (HF §5)",
			"GPUHourUSD: Lambda on-demand H100 SXM $2.99 (cliffcenter.com/research/amd-inference-economics, 2026-05-18)",
		},
	},
	"h100-96gb-500w": {
		Name: "h100-96gb-500w", Arch: "hopper",
		HBMBytes: 96e9, HBMBandwidth: 2.4e12,
		Peak:    PeakFLOPS{FP32: 67e12, TF32: 494.5e12, FP16: 989e12, BF16: 989e12, FP8: 1979e12},
		SMs:     132,
		ScaleUp: "nvlink", ScaleUpBandwidth: 450e9, ScaleUpLinks: 18, NVLS: true,
		DomainGPUs: 8, DefaultGPUsPerNode: 8, DefaultIntraNode: "nvswitch",
		PCIeGen: 5, TDPWatts: 500, GPUHourUSD: 2.99,
		Sources: []string{
			"HBMBytes 96 GB HBM2e, HBMBandwidth 2.4 TB/s, TDPWatts 500 (the default power limit it ran at): pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md and asyncTP_llama3_h100_2025-06_torchtitan.md, Hardware (Meta Grand Teton hosts)",
			"Peak: H100 SXM's dense peaks at its clocks (same GH100 die, 132 SMs; HF §5). The document adds that under its 500 W limit 'the actual peak TFLOPs number is between SXM and NVL' (989 and 835.5 dense BF16 TFLOP/s): what the limit costs GEMMs is in the compute profile (gemmPowerCap500W)",
			"SMs, NVLink, NVLS, node: H100 SXM's (GH100 with 132 SMs; 8 H100 per host fully connected with NVLink, same document)",
			"PCIe: Gen5 (GH100, as H100 SXM)",
			"GPUHourUSD: unsourced estimate (the H100 SXM price)",
		},
	},
	"h100-pcie": {
		Name: "h100-pcie", Arch: "hopper",
		HBMBytes: 80e9, HBMBandwidth: 2.0e12,
		Peak:    PeakFLOPS{FP32: 51e12, TF32: 378e12, FP16: 756e12, BF16: 756e12, FP8: 1513e12},
		SMs:     114,
		ScaleUp: "nvlink-bridge", ScaleUpBandwidth: 300e9, ScaleUpLinks: 12,
		DomainGPUs: 8, DefaultGPUsPerNode: 8, DefaultIntraNode: "nvlink-pairs",
		PCIeGen: 5, TDPWatts: 350, GPUHourUSD: 2.49,
		Sources: []string{
			"HBMBytes, HBMBandwidth, Peak, TDPWatts: HF §5 (H100 PCIe; NVIDIA H100 PCIe product brief PB-11133-001: 350 W, >2,000 GB/s)",
			"SMs: 114 (NVIDIA H100 whitepaper figure, not in the stored copies; a public kernel source comment states 'an H100 PCIe has 114 SMs, an H100 SXM 132')",
			"ScaleUp: NVLink bridge between GPU pairs, 600 GB/s bidirectional = 300 GB/s per direction (NVIDIA H100 PCIe datasheet figure; not in the stored copies: treat as unverified); 12 links derived as 600/50 GB/s per NVLink4 link",
			"DomainGPUs: the node (PCIe + bridged pairs); DefaultGPUsPerNode 8: unsourced estimate (common 8-GPU PCIe servers)",
			"PCIe: Gen5 x16 (HF §5, product brief)",
			"GPUHourUSD: unsourced estimate",
		},
	},
	"h800": {
		Name: "h800", Arch: "hopper",
		HBMBytes: 80e9, HBMBandwidth: 3.35e12,
		Peak:    PeakFLOPS{FP32: 67e12, TF32: 494.5e12, FP16: 989e12, BF16: 989e12, FP8: 1979e12},
		SMs:     132,
		ScaleUp: "nvlink", ScaleUpBandwidth: 200e9, ScaleUpLinks: 8, NVLS: true,
		DomainGPUs: 8, DefaultGPUsPerNode: 8, DefaultIntraNode: "nvswitch",
		PCIeGen: 5, TDPWatts: 700, GPUHourUSD: 2.99,
		Sources: []string{
			"HBMBytes: 80 GB (HF §5)",
			"HBMBandwidth, Peak, SMs, TDPWatts: unverified, taken equal to H100 SXM (HF §5: 'H100-class'; one unnamed code table gives 990/1980/495 TFLOPS)",
			"ScaleUp: NVLink 8 links, 200 GB/s per direction, 400 bidirectional (HF §5, DeepEP#16 / DeepSeek-V3#28; measured 160 GB/s)",
			"NVLS: NVLS all_reduce measured on 8×H800 (nccl#1374, HF §2a)",
			"DomainGPUs, DefaultGPUsPerNode: HGX-style 8-GPU board (HF §2a 8×H800 systems)",
			"PCIe: Gen5, unverified (same board as H100 SXM)",
			"GPUHourUSD: unsourced estimate (not rented by western clouds; set to the H100 SXM price)",
		},
	},
	"h200": {
		Name: "h200", Arch: "hopper",
		HBMBytes: 141e9, HBMBandwidth: 4.8e12,
		Peak:    PeakFLOPS{FP32: 67e12, TF32: 494.5e12, FP16: 989e12, BF16: 989e12, FP8: 1979e12},
		SMs:     132,
		ScaleUp: "nvlink", ScaleUpBandwidth: 450e9, ScaleUpLinks: 18, NVLS: true,
		DomainGPUs: 8, DefaultGPUsPerNode: 8, DefaultIntraNode: "nvswitch",
		PCIeGen: 5, TDPWatts: 700, GPUHourUSD: 4.00,
		Sources: []string{
			"HBMBytes, HBMBandwidth, Peak, TDPWatts: HF §5 (H200 SXM)",
			"SMs: 132, same GH100 die as H100 (itkb.uw.cz/2026/06/nvidia-h200-vs-b300-precisions-cores.html)",
			"ScaleUp: NVLink4 450 GB/s per direction, 18 links (HF §5, §5b)",
			"NVLS: NVLS all_reduce 479.98 GB/s busbw on 8×H200 (HF §2a, [AZ-H200])",
			"DomainGPUs, DefaultGPUsPerNode: HGX H200 8 GPUs (HF §2a)",
			"PCIe: Gen5 (HF §5)",
			"GPUHourUSD: midpoint of specialty-cloud on-demand $3.50-4.50 (mercatus-ai.com/blog/cloud-gpu-pricing, May 2026)",
		},
	},
	"b200": {
		Name: "b200", Arch: "blackwell",
		HBMBytes: 180e9, HBMBandwidth: 8.0e12,
		Peak:    PeakFLOPS{FP32: 80e12, TF32: 1125e12, FP16: 2250e12, BF16: 2250e12, FP8: 4500e12, FP4: 9000e12},
		SMs:     148,
		ScaleUp: "nvlink", ScaleUpBandwidth: 900e9, ScaleUpLinks: 18, NVLS: true,
		DomainGPUs: 8, DefaultGPUsPerNode: 8, DefaultIntraNode: "nvswitch",
		PCIeGen: 5, TDPWatts: 1000, GPUHourUSD: 5.25,
		Sources: []string{
			"HBMBytes, HBMBandwidth, Peak (FP32..FP8), TDPWatts: HF §5 (B200 HGX/DGX: 180 GB usable of 192 physical)",
			"Peak.FP4: 9 PFLOPS dense (verda.com/blog/gb300-nvl72-architecture per-GPU table)",
			"SMs: 148 = 2 dies × 74 enabled (chipsandcheese B200 article via vuink.com)",
			"ScaleUp: NVLink5, 18 links, 900 GB/s per direction (HF §5b)",
			"NVLS: NVLS all_reduce 838 GB/s on 8×B200 (HF §2a, [STAS-NET])",
			"DomainGPUs, DefaultGPUsPerNode: HGX/DGX B200 8 GPUs (HF §2a, §6a)",
			"PCIe: Gen5 (B300 is the Gen6 upgrade: glennklockwood.com/garden/processors/B300)",
			"GPUHourUSD: midpoint of specialised-cloud on-demand $4.50-6.00 (lyceum.technology/magazine/nvidia-b200-gpu-cloud-pricing-2026)",
		},
	},
	"b300": {
		Name: "b300", Arch: "blackwell",
		HBMBytes: 288e9, HBMBandwidth: 8.0e12,
		Peak:    PeakFLOPS{FP32: 80e12, TF32: 1125e12, FP16: 2250e12, BF16: 2250e12, FP8: 4500e12, FP4: 14000e12},
		SMs:     160,
		ScaleUp: "nvlink", ScaleUpBandwidth: 900e9, ScaleUpLinks: 18, NVLS: true,
		DomainGPUs: 8, DefaultGPUsPerNode: 8, DefaultIntraNode: "nvswitch",
		PCIeGen: 6, TDPWatts: 1100, GPUHourUSD: 6.50,
		Sources: []string{
			"HBMBytes, HBMBandwidth, Peak (FP32..FP8), TDPWatts: HF §5 (B300: 288 GB, 8 TB/s, 1100 W per verda.com)",
			"Peak.FP4: 14 PFLOPS dense (verda.com/blog/gb300-nvl72-architecture; glennklockwood.com B300 page says ~13 PF)",
			"SMs: 160 (itkb.uw.cz H200-vs-B300 table; awesomeagents.ai GB300 page); HF §4a quotes 148/152 from [STAS-PERF] — conflicting",
			"ScaleUp: NVLink5 900 GB/s per direction, 18 links (HF §5, §5b)",
			"NVLS: NVLS off→on busbw 695→845 GB/s on 8×B300 (HF §2a, nccl#2140)",
			"DomainGPUs, DefaultGPUsPerNode: HGX B300 8 GPUs (HF §5b DGX B300)",
			"PCIe: Gen6 (glennklockwood.com/garden/processors/B300)",
			"GPUHourUSD: unsourced estimate",
		},
	},
	"gb200": {
		Name: "gb200", Arch: "blackwell",
		HBMBytes: 186e9, HBMBandwidth: 8.0e12,
		Peak:    PeakFLOPS{FP32: 80e12, TF32: 1250e12, FP16: 2500e12, BF16: 2500e12, FP8: 5000e12, FP4: 10000e12},
		SMs:     148,
		ScaleUp: "nvlink", ScaleUpBandwidth: 900e9, ScaleUpLinks: 18, NVLS: true,
		DomainGPUs: 72, DefaultGPUsPerNode: 4, DefaultIntraNode: "nvswitch",
		PCIeGen: 5, TDPWatts: 1200, GPUHourUSD: 6.00,
		Sources: []string{
			"HBMBytes, HBMBandwidth, Peak (FP32..FP8), TDPWatts: HF §5 (GB200 per GPU: 186 GB per MLPerf/Azure; 2.5 PF BF16 = NVL72 rack 180 PF / 72)",
			"Peak.FP4: derived as 2 × FP8 dense (the B200 ratio, 9 = 2 × 4.5 PF)",
			"SMs: 148, derived: same Blackwell GPU as B200 (not separately published)",
			"ScaleUp: NVLink5 900 GB/s per direction, 18 links (HF §5, §6d)",
			"NVLS: NVL72 all_reduce 680 → 850 GB/s with SHARP (HF §2a, GTC25 S72583 via [STAS-NET])",
			"DomainGPUs 72, DefaultGPUsPerNode 4: NVL72 = 18 compute trays × 4 GPUs (HF §6d, §5b)",
			"PCIe: Gen5 to the tray's ConnectX-7 (HF §5b: 4× CX7 400G per tray)",
			"GPUHourUSD: unsourced estimate",
		},
	},
	"gb300": {
		Name: "gb300", Arch: "blackwell",
		HBMBytes: 288e9, HBMBandwidth: 8.0e12,
		Peak:    PeakFLOPS{FP32: 80e12, TF32: 1250e12, FP16: 2500e12, BF16: 2500e12, FP8: 5000e12, FP4: 15000e12},
		SMs:     160,
		ScaleUp: "nvlink", ScaleUpBandwidth: 900e9, ScaleUpLinks: 18, NVLS: true,
		DomainGPUs: 72, DefaultGPUsPerNode: 4, DefaultIntraNode: "nvswitch",
		PCIeGen: 6, TDPWatts: 1400, GPUHourUSD: 7.50,
		Sources: []string{
			"HBMBytes: 288 GB HBM3e per GPU, 20.7 TB per NVL72 rack (awesomeagents.ai/hardware/nvidia-gb300-nvl72; glennklockwood.com B300 page; verda.com reports 279 GB visible)",
			"HBMBandwidth 8 TB/s, Peak FP4 15 / FP8 5 / BF16 2.5 / TF32 1.25 / FP32 0.08 PFLOPS dense, TDP 1.4 kW (verda.com/blog/gb300-nvl72-architecture per-GPU table)",
			"SMs: 160 (awesomeagents.ai GB300 page: 160 SMs per B300)",
			"ScaleUp: NVLink5 900 GB/s per direction (verda.com; HF §6d), 18 links (HF §5b)",
			"NVLS: NVLink switch trays with SHARP, as GB200 (HF §6d)",
			"DomainGPUs 72, DefaultGPUsPerNode 4: 18 compute trays × 4 GPUs, 9 NVLink switch trays (oxmaint.com GB300 NVL72 specs)",
			"PCIe: Gen6 ConnectX-8 (glennklockwood.com: '72 ConnectX-8 NICs', B300 'Upgrade to PCIe Gen6')",
			"GPUHourUSD: unsourced estimate",
		},
	},
	"l40s": {
		Name: "l40s", Arch: "ada",
		HBMBytes: 48e9, HBMBandwidth: 0.864e12,
		Peak:       PeakFLOPS{FP32: 91.6e12, TF32: 183e12, FP16: 362e12, BF16: 362e12, FP8: 733e12},
		SMs:        142,
		ScaleUp:    "none",
		DomainGPUs: 8, DefaultGPUsPerNode: 8, DefaultIntraNode: "pcie",
		PCIeGen: 4, TDPWatts: 350, GPUHourUSD: 0.90,
		Sources: []string{
			"HBMBytes (GDDR6), HBMBandwidth, Peak, TDPWatts: HF §5 (L40S datasheet reseller copies)",
			"SMs: 142, derived: 18,176 CUDA cores / 128 per SM (hmc-tech.com/gpu/nvidia-b200-vs-nvidia-l40s)",
			"ScaleUp: none, PCIe Gen4 x16 64 GB/s bidirectional (HF §5)",
			"DomainGPUs: the node (PCIe only); DefaultGPUsPerNode 8: unsourced estimate",
			"GPUHourUSD: unsourced estimate",
		},
	},
	"mi300x": {
		Name: "mi300x", Arch: "cdna3",
		HBMBytes: 192e9, HBMBandwidth: 5.3e12,
		Peak:    PeakFLOPS{FP32: 163.4e12, TF32: 653.7e12, FP16: 1307.4e12, BF16: 1307.4e12, FP8: 2614.9e12},
		SMs:     304,
		ScaleUp: "xgmi", ScaleUpBandwidth: 448e9, ScaleUpLinks: 7,
		DomainGPUs: 8, DefaultGPUsPerNode: 8, DefaultIntraNode: "nvswitch",
		PCIeGen: 5, TDPWatts: 750, GPUHourUSD: 1.99,
		Sources: []string{
			"HBMBytes, HBMBandwidth, Peak, TDPWatts: HF §5 (MI300X); exact FLOPs as MI325X (awesomeagents.ai/hardware/amd-mi325x: 'same compute units')",
			"SMs: 304 compute units (awesomeagents.ai MI325X page: '304 compute units as MI300X')",
			"ScaleUp: XGMI fully connected 8-GPU mesh, 7 links × 64 GB/s = 448 GB/s per direction (HF §5, [STAS-NET]); modelled as one logical switch (package doc)",
			"DomainGPUs, DefaultGPUsPerNode: 8-GPU UBB platform (unanswered.io MI325X platform: eight OAM modules, fully meshed Infinity Fabric)",
			"PCIe: Gen5 x16 (HF §5)",
			"GPUHourUSD: median MI300X on-demand $1.99 (cliffcenter.com/research/amd-inference-economics, 2026-05-18)",
		},
	},
	"mi325x": {
		Name: "mi325x", Arch: "cdna3",
		HBMBytes: 256e9, HBMBandwidth: 6.0e12,
		Peak:    PeakFLOPS{FP32: 163.4e12, TF32: 653.7e12, FP16: 1307.4e12, BF16: 1307.4e12, FP8: 2614.9e12},
		SMs:     304,
		ScaleUp: "xgmi", ScaleUpBandwidth: 448e9, ScaleUpLinks: 7,
		DomainGPUs: 8, DefaultGPUsPerNode: 8, DefaultIntraNode: "nvswitch",
		PCIeGen: 5, TDPWatts: 1000, GPUHourUSD: 2.125,
		Sources: []string{
			"HBMBytes 256 GB, HBMBandwidth 6 TB/s, Peak (FP8 2614.9, BF16 1307.4, TF32 653.7, FP32 163.4 TFLOPS dense), TDP 1000 W: awesomeagents.ai/hardware/amd-mi325x; HF §5",
			"SMs: 304 compute units (unanswered.io/guide/amd-instinct-mi325x)",
			"ScaleUp: XGMI 448 GB/s per direction, 7 links, fully connected 8 GPUs (HF §5; wiaix.com MI325X page: seven Infinity Fabric links)",
			"DomainGPUs, DefaultGPUsPerNode: 8-GPU MI325X platform (unanswered.io)",
			"PCIe: Gen5 x16 (wiaix.com MI325X page)",
			"GPUHourUSD: midpoint of cloud rental $2.00-2.25 (awesomeagents.ai/hardware/amd-mi325x)",
		},
	},
}

var nicCatalog = map[string]NIC{
	"ib-hdr-200": {
		Name: "ib-hdr-200", Kind: "infiniband", Gbps: 200, Latency: 600,
		Sources: []string{
			"Gbps: InfiniBand HDR 4x port 200 Gb/s (HF §5b, [STAS-NET] IBTA table)",
			"Latency: IB HDR 0.6 µs ([STAS-NET] table, HF §5c), applied per network link",
		},
	},
	"ib-ndr-400": {
		Name: "ib-ndr-400", Kind: "infiniband", Gbps: 400, Latency: 500,
		Sources: []string{
			"Gbps: InfiniBand NDR 4x port 400 Gb/s, ConnectX-7 (HF §5b, [STAS-NET])",
			"Latency: 500 ns per link, SimAI default link latency (HF §5c, [SIMAI]); no published NDR figure",
		},
	},
	"ib-xdr-800": {
		Name: "ib-xdr-800", Kind: "infiniband", Gbps: 800, Latency: 500,
		Sources: []string{
			"Gbps: InfiniBand XDR 800 Gb/s, ConnectX-8 / Quantum-X800 (HF §5b, [STAS-NET])",
			"Latency: 500 ns per link, SimAI default link latency (HF §5c, [SIMAI]); no published XDR figure",
		},
	},
	"roce-200": {
		Name: "roce-200", Kind: "roce", Gbps: 200, Latency: 500,
		Sources: []string{
			"Gbps: 200 GbE port (Alibaba HPN NIC ports 2×200G, HF §6c; IEEE 802.3bs)",
			"Latency: 500 ns per link, SimAI default (HF §5c, [SIMAI])",
		},
	},
	"roce-400": {
		Name: "roce-400", Kind: "roce", Gbps: 400, Latency: 500,
		Sources: []string{
			"Gbps: 400 GbE port (Meta Llama 3 RoCE cluster, 8 × 400G per node, HF §6b; Spectrum SN5400 64×400GbE, HF §5b)",
			"Latency: 500 ns per link, SimAI default (HF §5c, [SIMAI])",
		},
	},
	"roce-800": {
		Name: "roce-800", Kind: "roce", Gbps: 800, Latency: 500,
		Sources: []string{
			"Gbps: 800 GbE port (Spectrum-4 SN5600 64×800GbE, HF §5b)",
			"Latency: 500 ns per link, SimAI default (HF §5c, [SIMAI])",
		},
	},
	"eth-100": {
		Name: "eth-100", Kind: "ethernet", Gbps: 100, Latency: 500,
		Sources: []string{
			"Gbps: 100 GbE (IEEE 802.3ba)",
			"Latency: 500 ns per link, SimAI default (HF §5c, [SIMAI]); host TCP stack cost is not a link property and is not modelled here",
		},
	},
	"opa-100": {
		Name: "opa-100", Kind: "omnipath", Gbps: 100, Latency: 110,
		Sources: []string{
			"Gbps: Omni-Path 100 Gb/s (BLOOM cluster, 4 OmniPath links per node, huggingface.co bigscience/bloomz README)",
			"Latency: unsourced estimate of 110 ns per hop (Cornelis docs give < 100 ns switching for the successor CN5000, docs.cornelis.com)",
		},
	},
}

func init() {
	for k, n := range nicCatalog {
		n.Bandwidth = n.Gbps * 1e9 / 8
		nicCatalog[k] = n
	}
	for k, g := range gpuCatalog {
		g.PCIeBandwidth = pcieBW(g.PCIeGen)
		gpuCatalog[k] = g
	}
}

var gpuNames, nicNames = sortedKeys(gpuCatalog), sortedKeys(nicCatalog)

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// LookupGPU returns the catalog entry with its compute and communication
// profiles filled in. The error names the unknown value and lists valid names.
// The returned value is a copy; changing it does not change the catalog.
func LookupGPU(name string) (GPU, error) {
	g, ok := gpuCatalog[name]
	if !ok {
		return GPU{}, fmt.Errorf("unknown GPU %q (valid: %s)", name, strings.Join(gpuNames, ", "))
	}
	g.Sources = slices.Clone(g.Sources)
	g.Compute = computeProfile(name)
	g.Comm = commProfile(name)
	return g, nil
}

// LookupNIC returns the catalog entry with its communication profile filled
// in; the error names the unknown value and lists valid names.
func LookupNIC(name string) (NIC, error) {
	n, ok := nicCatalog[name]
	if !ok {
		return NIC{}, fmt.Errorf("unknown NIC %q (valid: %s)", name, strings.Join(nicNames, ", "))
	}
	n.Sources = slices.Clone(n.Sources)
	n.Comm = nicCommProfile(name)
	return n, nil
}

// GPUNames lists the GPU catalog keys in sorted order (a fresh slice).
func GPUNames() []string { return slices.Clone(gpuNames) }

// NICNames lists the NIC catalog keys in sorted order (a fresh slice).
func NICNames() []string { return slices.Clone(nicNames) }
