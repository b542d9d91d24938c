package topology

import "github.com/simtrain/simtrain/sim/engine"

// This file holds the communication profiles used by sim/collectives. It is
// owned by the collectives work. Every number carries its source; the keys in
// brackets are those of /work/shared/validation/hardware-facts.md §8
// ([NCCL-TUNE] is NVIDIA/nccl src/graph/tuning.cc, topo.h, device.h,
// enqueue.cc at HEAD 5067397, NCCL 2.30). "Derived" means computed from a
// cited figure; "fitted" says to what and how; "assumed" marks a value with no
// published measurement, copied from the nearest measured part.

// ProtoLatency holds one latency per NCCL protocol.
type ProtoLatency struct {
	LL, LL128, Simple engine.Time
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
	// Simple; zero disables LL128.
	LL128Fraction float64
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
	NetOverhead engine.Time

	// LaunchOverhead is the fixed host and launch cost of one collective as
	// nccl-tests measures it (no CUDA graphs). Fitted, see Sources.
	LaunchOverhead engine.Time
	// RampTime and RampBytes describe the Simple-protocol pipeline ramp: a
	// collective moving B bus bytes pays RampTime*min(1, B/RampBytes) on top
	// of latency and transmission, the cost of filling NCCL's chunk pipeline
	// before it streams. Fitted, see Sources.
	RampTime  engine.Time
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

// The CTAs of a communication kernel crossing nodes, and of a send/recv
// (hardware-facts §3b; NCCL maintainers):
//
//   - ctasScaleOut16: "NCCL uses the minimal number of SMs to achieve the
//     performance of the platform. If you have a PCI system with a single
//     NIC, which can achieve up to 12-24 GB/s it should just launch 2 SMs.
//     If you are on DGX with 8 NICs and a top speed of 190 GB/s, then it
//     would use 16 SMs" (sjeaugey, nccl#689; 190 GB/s = 8 HDR NICs, DGX
//     A100). Hopper and Blackwell nodes pair twice the NIC bandwidth (8 NDR
//     400) with twice NCCL's per-channel inter-node search speed (SM90 inter
//     candidates up to 48 GB/s against Ampere's 24, hardware-facts §3c), so
//     the same 16 is assumed there (estimate).
//   - ctasScaleOutPCIe2: the same comment's "PCI system with a single NIC
//     ... 2 SMs".
//   - ctasP2P2: NCCL_NCHANNELS_PER_NET_PEER "is typically 2" (NCCL
//     developer, nccl#1424), and an NCCL init log shows "2 p2p channels per
//     peer" (nccl#1189, H20). Pipeline sends between stages cross nodes in
//     the validation layouts; the same 2 is assumed for an NVLink peer
//     (estimate).
const (
	ctasScaleOut16    = 16
	ctasScaleOutPCIe2 = 2
	ctasP2P2          = 2
)

// withInterference sets p.Interference: ScaleUp is p.Channels (the ring
// channels NCCL opens inside a node, each one CTA on one SM).
func withInterference(p *CommProfile, scaleOut int, note string) {
	p.Interference = CommCTAs{ScaleUp: p.Channels, ScaleOut: scaleOut, P2P: ctasP2P2}
	out := "16 (NCCL maintainer, nccl#689: 'DGX with 8 NICs ... would use 16 SMs'; assumed for 400G-NIC Hopper/Blackwell nodes, whose per-channel inter-node speed is also doubled)"
	if scaleOut == ctasScaleOutPCIe2 {
		out = "2 (nccl#689: 'a PCI system with a single NIC ... should just launch 2 SMs')"
	}
	src := "Interference: CTAs (one per channel, each holding one SM; nccl#689 'NCCL CTAs won't share an SM with compute kernels') of an in-flight kernel: scale-up = Channels; scale-out " + out + "; P2P 2 (NCCL_NCHANNELS_PER_NET_PEER 'typically 2', nccl#1424; '2 p2p channels per peer', nccl#1189 log)"
	if note != "" {
		src += "; " + note
	}
	p.Sources = append(p.Sources, src)
}

// NICCommProfile holds the achievable fractions of one NIC type (e.g. NDR
// 400: 46-48 GB/s of 50 GB/s per NCCL maintainers).
type NICCommProfile struct {
	Efficiency float64 // achievable / line rate
	Sources    []string
}

const (
	us = engine.Microsecond
	gb = 1e9
)

// usf converts microseconds with a fractional part to engine.Time exactly for
// the one-decimal values of NCCL's tables.
func usf(x float64) engine.Time { return engine.Time(x*1000 + 0.5) }

// ncclLatencies fills NCCL's latency tables, identical for every
// architecture (hardware-facts §3c, [NCCL-TUNE] tuning.cc
// ncclTunerConstantsDefaults).
func ncclLatencies(p *CommProfile) {
	p.BaseLatency = AlgoLatency{
		Ring: ProtoLatency{usf(6.6), usf(14.0), usf(8.4)},
		Tree: ProtoLatency{usf(6.8), usf(14.0), usf(8.4)},
		// NVLS and NVLSTree have no base latency.
	}
	p.NVLinkLatency = AlgoLatency{
		Ring:     ProtoLatency{usf(0.6), usf(1.9), usf(3.4)},
		Tree:     ProtoLatency{usf(0.6), usf(1.25), usf(4.0)},
		NVLS:     ProtoLatency{Simple: 25 * us},
		NVLSTree: ProtoLatency{Simple: 25 * us},
	}
	p.PCIeLatency = AlgoLatency{
		Ring: ProtoLatency{usf(1.0), usf(2.5), usf(5.7)},
		Tree: ProtoLatency{usf(1.0), usf(1.9), usf(4.0)},
	}
	p.NetLatency = AlgoLatency{
		Ring:     ProtoLatency{usf(2.7), usf(4.0), usf(14.0)},
		Tree:     ProtoLatency{usf(5.0), usf(8.5), usf(14.0)},
		NVLS:     ProtoLatency{Simple: 18 * us},
		NVLSTree: ProtoLatency{Simple: usf(20.9)},
	}
	p.Sources = append(p.Sources,
		"BaseLatency, NVLinkLatency, PCIeLatency, NetLatency: NCCL tuning constants, hardware-facts §3c [NCCL-TUNE] tuning.cc",
		"LLFraction 0.5: LL carries 4 data bytes per 8-byte store, hardware-facts §3a (nccl#281)",
		"PCIeEfficiency 0.8: SimAI calbusbw.h PCIe Gen5 51.2 = 64 x 0.8, hardware-facts §2d [SIMAI]",
	)
	p.LLFraction = 0.5
	p.PCIeEfficiency = 0.8
}

// host CPU vendors of the reference systems; NCCL picks llMaxBw's multi-node
// row and the network overhead by the host CPU (hardware-facts §3c).
const (
	hostIntel = iota // also ARM (Grace): NCCL uses the Intel row and 1 µs
	hostAMD
)

func ncclHost(p *CommProfile, host int, system string) {
	if host == hostAMD {
		p.NetOverhead = 2 * us
		p.LLMaxBW[1], p.LLMaxBW[2] = 22.5*gb, 19.0*gb
		p.Sources = append(p.Sources, "NetOverhead 2 µs, LLMaxBW 2/>=3 nodes 22.5/19.0 GB/s: NCCL AMD-host values, hardware-facts §3c; host of the reference system: "+system)
		return
	}
	p.NetOverhead = 1 * us
	p.LLMaxBW[1], p.LLMaxBW[2] = 39.0*gb, 20.4*gb
	p.Sources = append(p.Sources, "NetOverhead 1 µs, LLMaxBW 2/>=3 nodes 39.0/20.4 GB/s: NCCL Intel/ARM-host values, hardware-facts §3c; host of the reference system: "+system)
}

// ncclAmpere returns NCCL's Ampere-row constants (also used for Ada, whose
// compute capability 8.9 falls in NCCL's Ampere index, and for CDNA3 under
// RCCL, whose own MI300 tuning tables are not in hardware-facts).
func ncclAmpere() CommProfile {
	p := CommProfile{
		Library:               "nccl",
		LL128Fraction:         0.92,
		PerChannelRingLL128BW: 20 * gb,
		PerChannelTreeBW:      PerNodes{24 * gb, 23.6 * gb, 17.8 * gb},
		PerChannelTreeLL128BW: PerNodes{20 * gb, 20 * gb, 20 * gb},
		PerChannelNVLSTreeBW:  PerNodes{24 * gb, 23.6 * gb, 17.8 * gb},
	}
	p.LLMaxBW[0] = 87.7 * gb
	ncclLatencies(&p)
	p.Sources = append(p.Sources,
		"LLMaxBW 1 node 87.7 GB/s, PerChannelRingLL128BW 20, PerChannelTreeBW 24/23.6/17.8, PerChannelTreeLL128BW 20: NCCL Ampere row, hardware-facts §3c [NCCL-TUNE]",
		"LL128Fraction 0.92: NCCL ring LL128 model busBw*0.92, hardware-facts §3d [NCCL-TUNE]")
	return p
}

// ncclHopper returns NCCL's Hopper-row constants.
func ncclHopper() CommProfile {
	p := CommProfile{
		Library:               "nccl",
		LL128Fraction:         0.92,
		PerChannelRingLL128BW: 36.7 * gb,
		PerChannelTreeBW:      PerNodes{38.7 * gb, 41.4 * gb, 36 * gb},
		PerChannelTreeLL128BW: PerNodes{36.7 * gb, 36.7 * gb, 29 * gb},
		PerChannelNVLSTreeBW:  PerNodes{0, 57.7 * gb, 45.5 * gb},
		NVLSChannels:          16,
	}
	p.LLMaxBW[0] = 141 * gb
	ncclLatencies(&p)
	p.Sources = append(p.Sources,
		"LLMaxBW 1 node 141 GB/s, PerChannelRingLL128BW 36.7, PerChannelTreeBW 38.7/41.4/36, PerChannelTreeLL128BW 36.7/36.7/29, PerChannelNVLSTreeBW -/57.7/45.5: NCCL Hopper row, hardware-facts §3c [NCCL-TUNE]",
		"NVLSChannels 16: NCCL NVLS channels on SM90, hardware-facts §3b",
		"LL128Fraction 0.92: NCCL ring LL128 model busBw*0.92, hardware-facts §3d [NCCL-TUNE]")
	return p
}

// ncclBlackwell returns NCCL's Blackwell-row constants.
func ncclBlackwell(nvlsChannels int, why string) CommProfile {
	p := CommProfile{
		Library:               "nccl",
		LL128Fraction:         0.92,
		PerChannelRingLL128BW: 40 * gb,
		PerChannelTreeBW:      PerNodes{70 * gb, 42.8 * gb, 24 * gb},
		PerChannelTreeLL128BW: PerNodes{55.6 * gb, 31.67 * gb, 20 * gb},
		PerChannelNVLSTreeBW:  PerNodes{0, 96 * gb, 80 * gb},
		NVLSChannels:          nvlsChannels,
	}
	p.LLMaxBW[0] = 2 * 141 * gb
	ncclLatencies(&p)
	p.Sources = append(p.Sources,
		"LLMaxBW 1 node 282 GB/s, PerChannelRingLL128BW 40, PerChannelTreeBW 70/42.8/24, PerChannelTreeLL128BW 55.6/31.67/20, PerChannelNVLSTreeBW -/96/80: NCCL Blackwell row, hardware-facts §3c [NCCL-TUNE]",
		"NVLSChannels: NCCL NVLS channels, 32 on SM100 and 24 on SM100 NVL (hardware-facts §3b); "+why,
		"LL128Fraction 0.92: NCCL ring LL128 model busBw*0.92, hardware-facts §3d [NCCL-TUNE]")
	return p
}

// Fitted values. The small-size and ramp parameters were fitted to the two
// published all_reduce size sweeps (hardware-facts §2c: [AZ-H100] 8xH100
// with NVLS, [AZ-A100] 8xA100) by grid search over the model in
// sim/collectives (LaunchOverhead in 1 µs steps, RampTime in 10 µs steps,
// RampBytes over 50-1000 GB/s x RampTime, LL128Fraction 0.4-0.8 in 0.1 steps
// and NCCL's 0.92), minimising the worst busbw error from 1 MiB to 8 GiB
// while staying within 2x from 64 KiB. Both sweeps give the same
// LaunchOverhead.
const (
	fitLaunch = 12 * us
	// H100 sweep: worst error 7.3% (2 MiB).
	fitHopperRampTime  = 30 * us
	fitHopperRampBytes = 30e6
	// A100 sweep: worst error 6.8% (128 MiB).
	fitAmpereRampTime      = 180 * us
	fitAmpereRampBytes     = 72e6
	fitAmpereLL128Fraction = 0.6
)

func fitHopper(p *CommProfile, gpu string) {
	p.LaunchOverhead = fitLaunch
	p.RampTime, p.RampBytes = fitHopperRampTime, fitHopperRampBytes
	src := "fitted to the 8xH100 all_reduce sweep, hardware-facts §2c [AZ-H100] (grid search, worst busbw error 1 MiB-8 GiB 7.3%)"
	if gpu != "h100-sxm" {
		src += "; no published sweep for " + gpu + ", assumed equal to h100-sxm"
	}
	p.Sources = append(p.Sources,
		"LaunchOverhead 12 µs: "+src+"; the A100 sweep gives the same value",
		"RampTime 30 µs, RampBytes 30 MB: "+src)
}

func fitAmpere(p *CommProfile, gpu string) {
	p.LaunchOverhead = fitLaunch
	p.RampTime, p.RampBytes = fitAmpereRampTime, fitAmpereRampBytes
	src := "fitted to the 8xA100 all_reduce sweep, hardware-facts §2c [AZ-A100] (grid search, worst busbw error 1 MiB-8 GiB 6.8%)"
	if gpu != "a100-80gb" {
		src += "; no published sweep for " + gpu + ", assumed equal to a100-80gb"
	}
	p.Sources = append(p.Sources,
		"LaunchOverhead 12 µs: "+src+"; the H100 sweep gives the same value",
		"RampTime 180 µs, RampBytes 72 MB: "+src)
	if p.LL128Fraction > 0 {
		p.LL128Fraction = fitAmpereLL128Fraction
		p.Sources = append(p.Sources,
			"LL128Fraction 0.6 (replaces NCCL's 0.92, which overpredicts the 8-32 MiB rows by up to 27%): "+src)
	}
}

// commProfile returns the profile for a catalog GPU name (the zero profile
// for an unknown name).
func commProfile(gpu string) CommProfile {
	var p CommProfile
	switch gpu {
	case "h100-sxm", "h100-96gb-500w":
		p = ncclHopper()
		p.Channels = 24
		p.RingEfficiency = 370.0 / 450
		p.NVLSEfficiency = nvlsEff(480, 8, 450)
		p.P2PEfficiency = 374.0 / 450
		ncclHost(&p, hostIntel, "DGX H100, Intel Xeon Platinum 8480C")
		fitHopper(&p, gpu)
		p.Sources = append(p.Sources,
			"Channels 24: 24 coll channels on 8xH100, hardware-facts §3b (nccl#1259)",
			"RingEfficiency 370/450: maintainer, effective NVLink bandwidth with protocol overhead, hardware-facts §1 (nccl-tests#212), §2a (nccl#1455: ring 365-370)",
			"NVLSEfficiency: derived from NVLS all_reduce busbw 480 GB/s on 8 GPUs (nccl-tests#212, [AZ-H100] 478.87): algbw 480*8/14 = 274.3 GB/s over (9/8) bytes per port per byte, / 450",
			"P2PEfficiency 374/450: p2pBandwidthLatencyTest unidirectional 371-377 GB/s, hardware-facts §2e (nccl#1264)")
		if gpu == "h100-96gb-500w" {
			p.Sources = append(p.Sources, "h100-96gb-500w: same NVLink4/NVSwitch board as H100 SXM (torchtitan benchmarks/llama3_h100_202412_torchtitan.md: 8 H100 per host fully connected with NVLink); every value assumed equal to h100-sxm")
		}
	case "h200":
		p = ncclHopper()
		p.Channels = 24
		p.RingEfficiency = 367.2 / 450
		p.NVLSEfficiency = nvlsEff(480.0, 8, 450)
		p.P2PEfficiency = 374.0 / 450
		ncclHost(&p, hostIntel, "Azure ND H200 v5 / HGX H200, Intel Xeon (Sapphire Rapids)")
		fitHopper(&p, gpu)
		p.Sources = append(p.Sources,
			"Channels 24: assumed equal to h100-sxm (same NVLink4 switch system; nccl#1259)",
			"RingEfficiency 367.2/450: 8xH200 all_reduce Ring (NVLS off) 367.2 GB/s at 16 GiB, hardware-facts §2a [STAS-NET]",
			"NVLSEfficiency: derived from 8xH200 NVLS all_reduce busbw 480.0 GB/s [STAS-NET] (479.98 [AZ-H200]) as for h100-sxm",
			"P2PEfficiency: assumed equal to h100-sxm (same NVLink4; nccl#1264)")
	case "h800":
		p = ncclHopper()
		p.Channels = 16
		p.RingEfficiency = 160.0 / 200
		p.NVLSEfficiency = nvlsEff(215, 8, 200)
		p.P2PEfficiency = 160.0 / 200
		ncclHost(&p, hostIntel, "HGX H800 (assumed Intel Xeon host as HGX H100)")
		fitHopper(&p, gpu)
		p.Sources = append(p.Sources,
			"Channels 16: 16 coll channels on 8xH800, hardware-facts §3b (nccl#892)",
			"RingEfficiency, P2PEfficiency 160/200: H800 NVLink measured 160 GB/s unidirectional of 200, hardware-facts §2a (DeepSeek-V3#28, DeepEP#16)",
			"NVLSEfficiency: derived from 8xH800 NVLS all_reduce busbw 215 GB/s (nccl#1374) as for h100-sxm, over 200 GB/s")
	case "b200":
		p = ncclBlackwell(32, "B200 (SM100, HGX)")
		p.Channels = 24
		p.RingEfficiency = 682.2 / 900
		p.NVLSEfficiency = nvlsEff(838.0, 8, 900)
		p.P2PEfficiency = 770.0 / 900
		ncclHost(&p, hostIntel, "DGX B200, Intel Xeon Platinum 8570")
		fitHopper(&p, gpu)
		p.Sources = append(p.Sources,
			"Channels 24: no published NCCL log for B200; assumed equal to h100-sxm (affects only the channel count of small messages)",
			"RingEfficiency 682.2/900: 8xB200 all_reduce Ring 682.2 GB/s at 8 GiB, hardware-facts §2a [STAS-NET]",
			"NVLSEfficiency: derived from 8xB200 NVLS all_reduce busbw 838.0 GB/s [STAS-NET] as for h100-sxm, over 900 GB/s",
			"P2PEfficiency 770/900: GB200 nvbandwidth p2p ~770 GB/s (Azure AI-benchmarking-guide#7), hardware-facts §2e; assumed equal for B200 (same NVLink5)")
	case "b300":
		p = ncclBlackwell(32, "B300 (SM100 class, HGX)")
		p.Channels = 24
		p.RingEfficiency = 695.0 / 900
		p.NVLSEfficiency = nvlsEff(845, 8, 900)
		p.P2PEfficiency = 770.0 / 900
		ncclHost(&p, hostIntel, "DGX B300, Intel Xeon 6776P")
		fitHopper(&p, gpu)
		p.Sources = append(p.Sources,
			"Channels 24: no published NCCL log for B300; assumed equal to h100-sxm",
			"RingEfficiency 695/900: 8xB300 all_reduce busbw with NVLS off 695 GB/s, hardware-facts §2a (nccl#2140)",
			"NVLSEfficiency: derived from 8xB300 NVLS all_reduce busbw 845 GB/s (nccl#2140) as for h100-sxm, over 900 GB/s",
			"P2PEfficiency 770/900: GB200 nvbandwidth p2p (Azure AI-benchmarking-guide#7); assumed equal (same NVLink5)")
	case "gb200", "gb300":
		p = ncclBlackwell(24, "GB200/GB300 NVL72 (SM100 NVL)")
		p.Channels = 24
		p.RingEfficiency = 679.61 / 900
		p.NVLSEfficiency = nvlsEff(850, 72, 900)
		p.P2PEfficiency = 770.0 / 900
		ncclHost(&p, hostIntel, "Grace (ARM) host: NCCL uses the Intel row and 1 µs for ARM")
		fitHopper(&p, gpu)
		p.Sources = append(p.Sources,
			"Channels 24: no published NCCL log; assumed equal to h100-sxm",
			"RingEfficiency 679.61/900: 4xGB200 all_reduce Ring 679.61 GB/s at 8 GB, hardware-facts §2a [AZ-GB200]"+also(gpu, "gb300", "gb200"),
			"NVLSEfficiency: derived from NVL72 all_reduce with SHARP 850 GB/s busbw on 72 GPUs (GTC25 S72583 via [STAS-NET], §6d): algbw 850/(2*71/72) = 431 GB/s over (73/72) bytes per port per byte, / 900"+also(gpu, "gb300", "gb200"),
			"P2PEfficiency 770/900: GB200 nvbandwidth p2p ~770 GB/s (Azure AI-benchmarking-guide#7), hardware-facts §2e"+also(gpu, "gb300", "gb200"))
	case "a100-80gb", "a100-40gb":
		p = ncclAmpere()
		p.Channels = 24
		p.RingEfficiency = 231.58 / 300
		p.P2PEfficiency = 237.5 / 300
		ncclHost(&p, hostAMD, "DGX A100 / Azure ND A100 v4, AMD EPYC (Rome)")
		fitAmpere(&p, gpu)
		p.Sources = append(p.Sources,
			"Channels 24: 24 channels on HGX A100 (nccl-tests#100 log, Channel xx/24)",
			"RingEfficiency 231.58/300: 8xA100 all_reduce 231.58 GB/s at 8 GB, hardware-facts §2a [AZ-A100] (nccl-tests#175: 232.54)"+also(gpu, "a100-40gb", "a100-80gb"),
			"P2PEfficiency 237.5/300: derived, half the midpoint of the 430-520 GB/s bidirectional p2pBandwidthLatencyTest range on 8xA100, hardware-facts §2e (nccl-tests#149)"+also(gpu, "a100-40gb", "a100-80gb"))
	case "h100-pcie":
		p = ncclHopper()
		p.NVLSChannels = 0
		p.Channels = 4
		p.RingEfficiency = 116.0 / 300
		p.P2PEfficiency = 116.0 / 300
		ncclHost(&p, hostIntel, "PCIe server (assumed Intel Xeon host)")
		fitHopper(&p, gpu)
		p.Sources = append(p.Sources,
			"Channels 4: unsourced estimate for a PCIe/NVLink-bridge node (affects only the channel count of small messages)",
			"RingEfficiency, P2PEfficiency 116/300: 2xH100 PCIe with NVLink bridge all_reduce 116 GB/s at 4 GB, hardware-facts §2a (nccl#1161), over a bridge line rate of 300 GB/s per direction (H100 PCIe NVLink bridge 600 GB/s bidirectional, NVIDIA H100 PCIe product brief)")
	case "l40s":
		p = ncclAmpere()
		p.Channels = 4
		p.LL128Fraction = 0 // NCCL enables LL128 only on NVLink paths (§3f)
		ncclHost(&p, hostIntel, "PCIe server (assumed Intel Xeon host)")
		fitAmpere(&p, gpu)
		p.Sources = append(p.Sources,
			"Channels 4: unsourced estimate for a PCIe-only node (affects only the channel count of small messages)",
			"LL128Fraction 0: NCCL enables LL128 only where the intra-node path is NVLink, hardware-facts §3f; L40S has no NVLink",
			"NCCL constants: Ampere row (L40S is compute capability 8.9, NCCL's Ampere index)")
	case "mi300x", "mi325x":
		p = ncclAmpere()
		p.Library = "rccl"
		p.Channels = 24
		p.RingEfficiency = 48.0 / 64
		p.P2PEfficiency = 48.0 / 64
		p.LL128Fraction = 0
		ncclHost(&p, hostAMD, "AMD Instinct platform, AMD EPYC host")
		fitAmpere(&p, gpu)
		p.Sources = append(p.Sources,
			"RingEfficiency, P2PEfficiency 48/64: XGMI per-direction per-link rate after protocol overhead 48 GB/s of 64 (AMD, ROCm/rccl#1210), hardware-facts §2e",
			"Channels 24: unsourced estimate (no RCCL log in hardware-facts)",
			"LL128Fraction 0: LL128 not modelled for RCCL (no measurement in hardware-facts)",
			"NCCL constants: Ampere row, assumed for RCCL (no RCCL tuning tables in hardware-facts)")
	}
	switch gpu {
	case "h100-pcie", "l40s":
		withInterference(&p, ctasScaleOutPCIe2, "scale-up: Channels 4 is itself an estimate for a PCIe node")
	case "mi300x", "mi325x":
		withInterference(&p, ctasScaleOut16, "RCCL assumed to launch like NCCL (estimate: no RCCL channel log in hardware-facts)")
	default:
		if p.Library != "" {
			withInterference(&p, ctasScaleOut16, "")
		}
	}
	return p
}

// nvlsEff derives NVLSEfficiency from a measured NVLS all_reduce busbw on n
// GPUs with line rate line (GB/s): algbw = busbw*n/(2(n-1)) and each port
// carries (n+1)/n bytes per byte of buffer in each direction.
func nvlsEff(busbw float64, n int, line float64) float64 {
	fn := float64(n)
	algbw := busbw * fn / (2 * (fn - 1))
	return algbw * (fn + 1) / fn / line
}

func also(gpu, alias, measured string) string {
	if gpu == alias {
		return "; no measurement for " + alias + ", assumed equal to " + measured
	}
	return ""
}

// nicCommProfile returns the profile for a catalog NIC name (the zero profile
// for an unknown name).
func nicCommProfile(nic string) NICCommProfile {
	switch nic {
	case "ib-hdr-200":
		return NICCommProfile{Efficiency: 24.0 / 25, Sources: []string{
			"Efficiency 24/25: maintainer, ~24 GB/s per HDR NIC on perfect setups, hardware-facts §2d (nccl-tests#252, nccl-tests#160); 8 x 24 = 192 GB/s matches DGX A100 multi-node all_reduce (nccl#812)"}}
	case "ib-ndr-400":
		return NICCommProfile{Efficiency: 47.0 / 50, Sources: []string{
			"Efficiency 47/50: maintainer, 46-48 GB/s per NDR 400 NIC, hardware-facts §2d (nccl-tests#290)"}}
	case "ib-xdr-800":
		return NICCommProfile{Efficiency: 47.0 / 50, Sources: []string{
			"Efficiency 0.94: no published NCCL measurement for XDR; assumed equal to NDR (nccl-tests#290)"}}
	case "roce-200":
		return NICCommProfile{Efficiency: 23.5 / 25, Sources: []string{
			"Efficiency 23.5/25: SimAI calbusbw.h CX6 constant, hardware-facts §2d [SIMAI]"}}
	case "roce-400":
		return NICCommProfile{Efficiency: 48.5 / 50, Sources: []string{
			"Efficiency 48.5/50: SimAI calbusbw.h CX7/BF3 constant, hardware-facts §2d [SIMAI]"}}
	case "roce-800":
		return NICCommProfile{Efficiency: 48.5 / 50, Sources: []string{
			"Efficiency 0.97: no published measurement for 800G RoCE; assumed equal to roce-400 (SimAI CX7 constant, hardware-facts §2d)"}}
	case "eth-100":
		return NICCommProfile{Efficiency: 12.0 / 12.5, Sources: []string{
			"Efficiency 12/12.5: NCCL's own model of a 100G NIC, NET_BW 12 GB/s in topo.h, hardware-facts §3c [NCCL-TUNE]"}}
	case "opa-100":
		return NICCommProfile{Efficiency: 0.9, Sources: []string{
			"Efficiency 0.9: unsourced estimate (no NCCL measurement over Omni-Path in hardware-facts)"}}
	}
	return NICCommProfile{}
}
