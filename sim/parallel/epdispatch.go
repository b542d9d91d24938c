package parallel

import (
	"fmt"
	"strings"

	"github.com/simtrain/simtrain/sim/engine"
)

// Expert-parallel dispatch backends.
//
// Megatron-Core's "flex" token dispatcher hands the MoE dispatch and combine
// to DeepEP or HybridEP instead of an NCCL all-to-all
// (megatron/core/transformer/moe/token_dispatcher.py, _DeepepManager and
// _HybridEPManager, NVIDIA/Megatron-LM dev at d48bd6b). Both differ from the
// all-to-all in three ways that the model prices:
//
// Bytes. The all-to-all sends one copy of a token per selected expert
// (tokens × top-k rows). DeepEP and HybridEP send a token once per
// destination rank that holds any of its experts, and the receiving rank
// expands it to its local experts (DeepEP README, "normal kernels with
// NVLink and RDMA forwarding"; HybridEP's dispatch output has one row per
// (token, rank) pair, DeepEP hybrid-ep branch tests/test_hybrid_ep.py:
// nvl_recv_bytes = dispatched_hidden.numel() × 2). With E experts spread
// evenly over R ranks (E/R each) and k distinct experts chosen uniformly
// (balanced routing), a rank receives the token unless all k experts lie
// among the E − E/R experts it does not hold, so by linearity of
// expectation (derivation, not a measurement)
//
//	D(E, R, k) = R · (1 − C(E − E/R, k) / C(E, k))
//
// distinct destination ranks per token. For top-8 of 128 experts D is 5.34,
// 6.60, 7.36 and 7.78 at R = 8, 16, 32 and 64 (TestExpectedDistinct). A
// rank's dispatch then moves tokens × D × hidden × 2 bytes: bf16 even in FP8
// recipes, because Megatron's HybridEP path asserts "HybridEP dispatcher
// does not support fp8 dispatch now" and forces fp8_dispatch = False
// (megatron/core/transformer/moe/fused_a2a.py, init_hybrid_ep_buffer and
// HybridEPDispatch.forward), and the DeepEP path passes the layer's bf16
// hidden states unquantised (Transformer Engine quantises inside the
// expert GroupedLinear). Combine moves the same bytes back.
//
// Time. Each backend's measured algorithm bandwidth replaces NCCL's
// all-to-all model. Both benchmarks count bytes the same way:
//   - inside one scale-up domain, bytes received = tokens × D(E, R, k) ×
//     hidden × 2 over the R ranks of the domain (local rank included);
//   - across domains, RDMA bytes = tokens × D(E, N, k) × hidden × 2 over the
//     N domains, the token's own domain included ("we do not set the local
//     node map to zeros", hybrid-ep tests/utils.py
//     count_rdma_send_from_routing_map; DeepEP tests/legacy/test_internode.py
//     num_rdma_token_sent counts the same).
//
// So a dispatch or combine of B = tokens × D(E, R, k) × hidden × 2 bytes takes
//
//	one domain:   t = B / (η_NVL(R, SMs) · W_up)
//	N domains:    t = max( B/D(E,R,k) · D(E,N,k) / (η_RDMA(N, SMs) · W_nic),
//	                       B / (η_NVL(R/N, SMs) · W_up) )
//
// with W_up the GPU's scale-up bandwidth per direction and W_nic its NIC
// line rate: the RDMA leg to the token's destination domains, or the
// NVLink leg that delivers the received rows inside the domain, whichever
// is slower (the RDMA leg in every measured multi-node case). The efficiencies
// η are the measured algorithm bandwidths divided by the benchmark
// platform's line rate (tables below), interpolated linearly in ranks (or
// domains) and in SMs and clamped at the measured ends; applying them to
// other GPUs and NICs (H100 NVLink, 800G NICs) is an estimate.
//
// SMs. The kernels hold their SMs for their whole duration: HybridEP
// defaults to 24 blocks inside one domain and 8 across domains (DeepEP
// hybrid-ep branch csrc/hybrid_ep/config.cuh:
// num_sms_dispatch_api.value_or((num_of_nodes == 1) ? 24 : 8)); Megatron
// sets DeepEP to 20 ("None -> 20 (DeepEP's historical mcore default)",
// token_dispatcher.py _DeepepManager). These are the EP collective's CTAs in
// the compute-slowdown model (Interference.EP).
//
// Not modelled: a fixed per-call latency (the measured bandwidths are at
// 4096 tokens × 7168 hidden, 58 MB per rank; smaller messages would run
// below them), HybridEP's preprocessing (metadata scan) kernel. Routing
// imbalance scales the bytes by the most-loaded rank's share
// (workload.MoE.Imbalance; the recipes force balanced routing).

// EPBackend is the library that runs the MoE dispatch and combine.
type EPBackend uint8

const (
	// EPNCCL is an NCCL all-to-all of tokens × top-k rows (the default).
	EPNCCL EPBackend = iota
	// EPDeepEP is DeepEP's normal (high-throughput) kernels.
	EPDeepEP
	// EPHybridEP is NVIDIA's HybridEP (DeepEP hybrid-ep branch).
	EPHybridEP
)

// EPBackendNames are the scenario names of the backends, indexed by EPBackend.
var EPBackendNames = []string{"nccl", "deepep", "hybridep"}

func (b EPBackend) String() string { return EPBackendNames[b] }

// ParseEPBackend reads a backend name; the error names parallel.ep_backend
// and the valid choices.
func ParseEPBackend(s string) (EPBackend, error) {
	for i, n := range EPBackendNames {
		if s == n {
			return EPBackend(i), nil
		}
	}
	return 0, fmt.Errorf("parallel.ep_backend: unknown value %q (valid: %s)", s, strings.Join(EPBackendNames, ", "))
}

// DefaultSMs is the SMs the backend's dispatch and combine kernels hold when
// the scenario does not set parallel.ep_sms; multiDomain says whether the EP
// group spans scale-up domains. 0 for NCCL (its channels are the topology's
// CommCTAs).
func (b EPBackend) DefaultSMs(multiDomain bool) int {
	switch b {
	case EPDeepEP:
		return 20 // Megatron-LM _DeepepManager: "None -> 20"
	case EPHybridEP:
		if multiDomain {
			return 8 // hybrid-ep config.cuh: (num_of_nodes == 1) ? 24 : 8
		}
		return 24
	}
	return 0
}

// ExpectedDistinct is D(E, R, k) = R·(1 − C(E − E/R, k)/C(E, k)): the
// expected number of the R groups (ranks or domains), each holding E/R of
// the E experts, that a token routed to k distinct uniformly chosen experts
// reaches. It returns k when the inputs do not describe an even split
// (R < 1, E not a multiple of R, k outside 1..E), which is the all-to-all's
// one copy per expert.
func ExpectedDistinct(experts, groups, topK int) float64 {
	if groups < 1 || experts < 1 || topK < 1 || topK > experts || experts%groups != 0 {
		return float64(topK)
	}
	if groups == 1 {
		return 1
	}
	other := experts - experts/groups
	// C(other, k)/C(E, k) = Π_{i<k} (other − i)/(E − i); 0 once other < k.
	miss := 1.0
	for i := 0; i < topK; i++ {
		if other-i <= 0 {
			miss = 0
			break
		}
		miss *= float64(other-i) / float64(experts-i)
	}
	return float64(groups) * (1 - miss)
}

// epBW is one measured algorithm bandwidth: at `n` ranks (NVLink tables) or
// domains (RDMA tables) and `sms` SMs, the mean of the BF16 dispatch and the
// combine, in bytes/s, divided by the benchmark's line rate.
type epBW struct {
	n, sms int
	eff    float64
}

const (
	gb200NVLink = 900e9 // GB200 NVLink 5, per GPU per direction (topology catalog, gb200 ScaleUpBandwidth)
	ndr400      = 50e9  // one ConnectX-7 400 Gb/s NIC per H100/H800 (hardware-facts §3, ib-ndr-400)
)

// The tables. Each entry is (dispatch BF16 + combine)/2 in GB/s over the
// line rate, from the sources named.
var (
	// HybridEP inside one NVLink domain: GB200, Torch API, 4096 tokens,
	// hidden 7168, top-8, 8 local experts (DeepEP hybrid-ep branch at
	// 94a9f8f, docs/README_Hybrid-EP.md, "GB200 Platform").
	hybridNVL = []epBW{
		{8, 16, (550.10 + 538.44) / 2 * 1e9 / gb200NVLink}, {8, 32, (545.71 + 568.94) / 2 * 1e9 / gb200NVLink},
		{16, 16, (472.84 + 474.48) / 2 * 1e9 / gb200NVLink}, {16, 32, (523.48 + 521.55) / 2 * 1e9 / gb200NVLink},
		{24, 16, (441.89 + 444.40) / 2 * 1e9 / gb200NVLink}, {24, 32, (507.32 + 483.76) / 2 * 1e9 / gb200NVLink},
		{32, 16, (485.50 + 423.19) / 2 * 1e9 / gb200NVLink}, {32, 32, (484.22 + 464.54) / 2 * 1e9 / gb200NVLink},
		{36, 16, (469.96 + 418.27) / 2 * 1e9 / gb200NVLink}, {36, 32, (479.02 + 447.89) / 2 * 1e9 / gb200NVLink},
	}
	// HybridEP across nodes: H100, one 400G IB NIC per GPU, 8 GPUs per node,
	// Torch API, same shape; 16/32/64 ranks = 2/4/8 domains (same README,
	// "H100 Platform").
	hybridRDMA = []epBW{
		{2, 4, (37.08 + 42.47) / 2 * 1e9 / ndr400}, {2, 8, (57.74 + 56.96) / 2 * 1e9 / ndr400}, {2, 16, (54.47 + 53.35) / 2 * 1e9 / ndr400},
		{4, 4, (44.88 + 43.60) / 2 * 1e9 / ndr400}, {4, 8, (46.54 + 50.68) / 2 * 1e9 / ndr400}, {4, 16, (47.36 + 52.53) / 2 * 1e9 / ndr400},
		{8, 4, (40.63 + 41.00) / 2 * 1e9 / ndr400}, {8, 8, (41.46 + 47.68) / 2 * 1e9 / ndr400}, {8, 16, (41.24 + 46.57) / 2 * 1e9 / ndr400},
	}
	// DeepEP inside one NVLink domain: GB200, Torch API (same README,
	// "DeepEP Performance Results"). DeepEP's own H800 figure, 153/158 GB/s
	// at EP 8 against 200 GB/s NVLink (docs/legacy.md), is a higher
	// fraction (0.78 against 0.52 here at 24 SMs); the GB200 table is used
	// because it covers ranks and SMs.
	deepNVL = []epBW{
		{8, 16, (362.01 + 310.21) / 2 * 1e9 / gb200NVLink}, {8, 24, (512.72 + 425.95) / 2 * 1e9 / gb200NVLink}, {8, 32, (615.78 + 519.57) / 2 * 1e9 / gb200NVLink},
		{16, 16, (328.80 + 278.34) / 2 * 1e9 / gb200NVLink}, {16, 24, (442.47 + 378.32) / 2 * 1e9 / gb200NVLink}, {16, 32, (520.76 + 442.51) / 2 * 1e9 / gb200NVLink},
		{24, 16, (324.64 + 126.53) / 2 * 1e9 / gb200NVLink}, {24, 24, (450.22 + 163.62) / 2 * 1e9 / gb200NVLink}, {24, 32, (502.84 + 207.10) / 2 * 1e9 / gb200NVLink},
	}
	// DeepEP normal kernels across nodes: H800, one CX7 400G NIC per GPU,
	// EP 16/32/64 = 2/4/8 nodes, dispatch 43/58/51 and combine 43/57/50
	// GB/s RDMA (DeepEP docs/legacy.md, "Normal kernels with NVLink and RDMA
	// forwarding"; FP8 dispatch, bytes counted at their FP8 size; the SM
	// count is not stated, so one column at the default 20).
	deepRDMA = []epBW{
		{2, 20, (43.0 + 43.0) / 2 * 1e9 / ndr400},
		{4, 20, (58.0 + 57.0) / 2 * 1e9 / ndr400},
		{8, 20, (51.0 + 50.0) / 2 * 1e9 / ndr400},
	}
)

// lookupEff interpolates a table linearly in n and in sms, clamped to the
// measured range on both axes. Tables list n ascending, and sms ascending
// inside each n.
func lookupEff(tab []epBW, n, sms int) float64 {
	// distinct n values
	var ns []int
	for _, e := range tab {
		if len(ns) == 0 || ns[len(ns)-1] != e.n {
			ns = append(ns, e.n)
		}
	}
	atN := func(n int) float64 { // interpolate in sms at a measured n
		var row []epBW
		for _, e := range tab {
			if e.n == n {
				row = append(row, e)
			}
		}
		return interp(len(row), func(i int) (float64, float64) { return float64(row[i].sms), row[i].eff }, float64(sms))
	}
	return interp(len(ns), func(i int) (float64, float64) { return float64(ns[i]), atN(ns[i]) }, float64(n))
}

// interp is piecewise-linear interpolation through m points (x ascending),
// constant beyond the ends.
func interp(m int, pt func(i int) (x, y float64), x float64) float64 {
	x0, y0 := pt(0)
	if m == 1 || x <= x0 {
		return y0
	}
	for i := 1; i < m; i++ {
		x1, y1 := pt(i)
		if x <= x1 {
			return y0 + (y1-y0)*(x-x0)/(x1-x0)
		}
		x0, y0 = x1, y1
	}
	return y0
}

// EPDispatch prices one DeepEP or HybridEP dispatch or combine on one EP
// group (see the comment at the top of this file for the model).
type EPDispatch struct {
	Backend EPBackend
	SMs     int // SMs the kernels hold (parallel.ep_sms or DefaultSMs)
	Experts int // routed experts of the model
	TopK    int
	Ranks   int // EP group size
	Domains int // scale-up domains the group spans (≥ 1)
	// ScaleUpBW and NICBW are one GPU's scale-up bandwidth and NIC line
	// rate, bytes/s per direction.
	ScaleUpBW, NICBW float64
}

// Efficiencies returns η_NVL at the ranks per domain and, for a group over
// several domains, η_RDMA at the domain count (0 inside one domain).
func (d EPDispatch) Efficiencies() (nvl, rdma float64) {
	perDomain := d.Ranks / max(d.Domains, 1)
	switch d.Backend {
	case EPDeepEP:
		nvl = lookupEff(deepNVL, perDomain, d.SMs)
		if d.Domains > 1 {
			rdma = lookupEff(deepRDMA, d.Domains, d.SMs)
		}
	case EPHybridEP:
		nvl = lookupEff(hybridNVL, perDomain, d.SMs)
		if d.Domains > 1 {
			rdma = lookupEff(hybridRDMA, d.Domains, d.SMs)
		}
	}
	return nvl, rdma
}

// Time is the duration of a dispatch or combine moving bytes per rank,
// where bytes = tokens × ExpectedDistinct(Experts, Ranks, TopK) × hidden ×
// width (EPBytes). It returns an error for the NCCL backend or a group
// without bandwidth.
func (d EPDispatch) Time(bytes float64) (engine.Time, error) {
	if d.Backend == EPNCCL {
		return 0, fmt.Errorf("parallel.ep_backend: nccl is priced as an all-to-all, not by EPDispatch")
	}
	nvl, rdma := d.Efficiencies()
	if !(d.ScaleUpBW > 0) || !(nvl > 0) {
		return 0, fmt.Errorf("parallel.ep_backend: %s needs a scale-up fabric with bandwidth", d.Backend)
	}
	t := bytes / (nvl * d.ScaleUpBW)
	if d.Domains > 1 {
		if !(d.NICBW > 0) {
			return 0, fmt.Errorf("parallel.ep_backend: %s across %d domains needs a NIC bandwidth", d.Backend, d.Domains)
		}
		perToken := bytes / ExpectedDistinct(d.Experts, d.Ranks, d.TopK)
		t = max(t, perToken*ExpectedDistinct(d.Experts, d.Domains, d.TopK)/(rdma*d.NICBW))
	}
	return engine.Seconds(t), nil
}
