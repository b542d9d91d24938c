package collectives

import (
	"math"

	"github.com/simtrain/simtrain/sim/hardware"
)

// kind is an algorithm as the cost model sees it: the public Algo NVLS is
// kNVLS inside one domain and kNVLSTree across domains.
type kind uint8

const (
	kRing kind = iota
	kTree
	kNVLS
	kNVLSTree
	kHier
	kDirect
	kAllPairs // RCCL's MSCCL all-pairs all_reduce (reported as Direct)
)

func (k kind) algo() Algo {
	switch k {
	case kTree:
		return Tree
	case kNVLS, kNVLSTree:
		return NVLS
	case kHier:
		return Hierarchical
	case kDirect, kAllPairs:
		return Direct
	}
	return Ring
}

// NCCL software constants of the tuning model (not hardware parameters),
// hardware-facts §3a-§3f [NCCL-TUNE] tuning.cc, enqueue.cc, device.h, comm.h.
const (
	treeAllReduceFactor = 0.92      // Tree AllReduce: busBw*0.92
	treeLLDivisor       = 3.8       // Tree+LL: busBw/3.8
	treeLL128OneNode    = 7.0 / 9.0 // Tree+LL128 on one node
	treeLL128MultiNode  = 120.0 / 128.0
	ringPlateau         = 1.4 // Ring/Simple multi-node AllReduce latency factor (Ampere+)
	plateauBytes        = 64  // ... when bytes/(channels*ranks) >= 64
	maxNVLSArity        = 32  // NCCL_MAX_NVLS_ARITY: NVLS all_gather/reduce_scatter up to 32 local ranks
)

// Threads per channel (NCCL_LL_MAX_NTHREADS, NCCL_LL128_MAX_NTHREADS,
// NCCL_SIMPLE_MAX_NTHREADS) and bytes-per-thread thresholds below which NCCL
// uses fewer channels and threads (NCCL_*_THREAD_THRESHOLD; ring LL's is
// multiplied by the number of ranks), device.h, comm.h, tuning.cc.
var (
	maxThreads      = [3]int{512, 640, 512}
	minThreads      = [3]float64{64, 320, 64} // halving stops below a multiple of 128
	threadThreshold = [3]float64{8, 8, 64}
)

// treeCorrection is NCCL's treeCorrectionFactor[proto][log2(bytes/64)]
// (tuning.cc), applied to Tree AllReduce bandwidth for 64 B .. 256 MiB.
var treeCorrection = [3][23]float64{
	{1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
	{1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
	{.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
}

// shape is everything the closed form needs to know about a group. NewGroup
// extracts it once; the cost functions read it without allocating.
type shape struct {
	n       int // ranks
	domains int // scale-up domains spanned (NCCL's nNodes)
	ppnMin  int // fewest ranks in one domain
	ppnMax  int // most ranks in one domain

	intraBW float64 // achievable ring (Simple) bandwidth per GPU inside a domain, bytes/s
	p2pBW   float64 // achievable point-to-point bandwidth inside a domain
	a2aBW   float64 // achievable rate per transfer when all pairs of a domain send at once
	nvlsBW  float64 // achievable NVLS per-port bandwidth; 0 without NVLS
	netBW   float64 // achievable scale-out bandwidth per GPU (NIC line rate x efficiency)
	pcieBW  float64 // PCIe domains only: achievable rate of a GPU's own PCIe link, shared by its intra- and inter-domain traffic

	treeDeg int // most tree edges at one domain over both trees of the double binary tree

	pcie      bool // intra-domain paths cross PCIe: PCIe hop latencies, no LL128
	sendCross bool // ranks[0] and ranks[1] are in different domains
	ringCross bool // some neighbour pair i, i+1 (cyclic, given order) crosses domains

	p *hardware.CommProfile
}

// est is one candidate's prediction. Times are seconds.
type est struct {
	t     float64 // total
	fixed float64 // launch + latency + ramp: everything but transmission
	xfer  float64 // transmission in the closed form (protocol and channel effects included)
	ideal float64 // transmission at achievable Simple rates with every channel
	kind  kind
	proto Proto
}

func sec[T ~int64](t T) float64 { return float64(t) * 1e-9 }

func protoLat(l hardware.ProtoLatency, p Proto) float64 {
	switch p {
	case LL:
		return sec(l.LL)
	case LL128:
		return sec(l.LL128)
	}
	return sec(l.Simple)
}

func algoLat(t *hardware.AlgoLatency, k kind, p Proto) float64 {
	switch k {
	case kTree:
		return protoLat(t.Tree, p)
	case kNVLS:
		return protoLat(t.NVLS, p)
	case kNVLSTree:
		return protoLat(t.NVLSTree, p)
	}
	return protoLat(t.Ring, p)
}

// intraLat is the per-step latency of one hop inside a domain.
func (s *shape) intraLat(k kind, p Proto) float64 {
	if s.pcie {
		return algoLat(&s.p.PCIeLatency, k, p)
	}
	return algoLat(&s.p.NVLinkLatency, k, p)
}

// busFactor is nccl-tests' busbw/algbw factor (hardware-facts §1).
func busFactor(op Op, n int) float64 {
	fn := float64(n)
	switch op {
	case AllReduce:
		return 2 * (fn - 1) / fn
	case AllGather, ReduceScatter, AllToAll:
		return (fn - 1) / fn
	}
	return 1
}

// ramp is the Simple-protocol pipeline ramp for a collective moving
// busBytes bus bytes (see hardware.CommProfile.RampTime).
func (s *shape) ramp(busBytes float64) float64 {
	if s.p.RampBytes <= 0 {
		return 0
	}
	return sec(s.p.RampTime) * math.Min(1, busBytes/s.p.RampBytes)
}

// chanFrac is the fraction of full ring/tree bandwidth NCCL reaches on a
// message of bytes. Below channels x threads x threshold bytes NCCL drops
// channels one by one, then halves the threads of the last channel while
// they stay a multiple of 128 (enqueue.cc topoGetAlgoInfo), so that each
// thread keeps about threshold bytes. Bandwidth is taken proportional to
// channels x threads, counted continuously (NCCL's integer steps would make
// a slightly larger message faster, a sawtooth a simulator should not
// have): frac = bytes / (channels x maxThreads x threshold), at most 1 and at
// least one channel of the fewest threads NCCL keeps (64, LL128 320).
func chanFrac(bytes float64, channels int, p Proto, ring bool, n int) float64 {
	nc := float64(max(channels, 1))
	nt := float64(maxThreads[p])
	thr := threadThreshold[p]
	if ring && p == LL {
		thr *= float64(n)
	}
	lo := minThreads[p] / (nt * nc)
	return min(1, max(lo, bytes/(nc*nt*thr)))
}

func log2i(x int) float64 {
	r := 0
	for x > 1 {
		x >>= 1
		r++
	}
	return float64(r)
}

// finish completes an estimate from its parts.
func (s *shape) finish(e est, latency, ideal, xfer, busBytes float64) est {
	e.fixed = sec(s.p.LaunchOverhead) + latency
	if e.proto == Simple {
		e.fixed += s.ramp(busBytes)
	}
	e.ideal, e.xfer = ideal, xfer
	e.t = e.fixed + xfer
	return e
}

// ringBW is the achievable Simple ring bus bandwidth. Inside one domain it
// is the intra-domain ring rate. Across domains the group runs ppnMin rings
// that each leave every domain once, through a different GPU and its own
// rail: a GPU sends (ppn-1)/ppn of its ring traffic over the scale-up fabric
// and the rest through its NIC, so the rate is min(intra*ppn/(ppn-1),
// ppn*net) with ppn = ppnMin (hardware-facts §2d: 8 x 24 = 192 GB/s on DGX
// A100 with HDR; 8 x 47 = 376 GB/s on H100 with NDR). On PCIe-only domains
// the path to the NIC shares the GPU's PCIe link with the ring, so the intra
// rate is not raised.
func (s *shape) ringBW() float64 {
	if s.domains <= 1 {
		return s.intraBW
	}
	ppn := float64(s.ppnMin)
	inter := ppn * s.netBW
	switch {
	case s.ppnMin < 2:
		return inter
	case s.pcie:
		return math.Min(s.intraBW, inter)
	}
	return math.Min(s.intraBW*ppn/(ppn-1), inter)
}

// ll128RingBW is the ring LL128 bus bandwidth before the per-channel cap:
// ringBW with each side at its own LL128 efficiency. The scale-up side takes
// LL128Fraction (on A100 refitted to 0.6 on an 8-GPU NVLink sweep, where
// NCCL's 0.92 overpredicts 8-32 MiB by up to 27%); the NIC side takes
// NCCL's own ring LL128 factor, LL128NetFraction (0.92): the one-node fit
// saw no network, and the NIC moves LL128's 120-of-128-byte lines at its
// line rate (NCCL prices tree LL128 across nodes the same way, 120/128).
func (s *shape) ll128RingBW() float64 {
	if s.domains <= 1 {
		return s.p.LL128Fraction * s.intraBW
	}
	ppn := float64(s.ppnMin)
	inter := s.p.LL128NetFraction * ppn * s.netBW
	if s.ppnMin < 2 {
		return inter
	}
	return math.Min(s.p.LL128Fraction*s.intraBW*ppn/(ppn-1), inter) // no LL128 on PCIe domains (ring)
}

// ring prices ring op (AllReduce, AllGather, ReduceScatter, Broadcast,
// Reduce) with protocol p; ok is false where the protocol is unavailable.
func (s *shape) ring(op Op, p Proto, bytes float64) (est, bool) {
	n, d := s.n, s.domains
	var nsteps, nInter int
	switch op {
	case AllReduce:
		nsteps = 2 * (n - 1)
		if d > 1 {
			nInter = 2 * (d - 1)
		}
	case AllGather, ReduceScatter:
		nsteps = n - 1
		nInter = d - 1
	default: // Broadcast, Reduce
		nsteps = n
	}
	full := s.ringBW()
	var bw float64
	switch p {
	case LL:
		bw = math.Min(s.p.LLMaxBW.At(d), s.p.LLFraction*full)
	case LL128:
		if s.pcie || s.p.LL128Fraction <= 0 {
			return est{}, false
		}
		bw = math.Min(s.ll128RingBW(), float64(s.p.Channels)*s.p.PerChannelRingLL128BW)
	default:
		bw = full
	}
	if !(bw > 0) {
		return est{}, false
	}
	lat := algoLat(&s.p.BaseLatency, kRing, p)
	if op == Broadcast || op == Reduce {
		if d > 1 {
			lat += algoLat(&s.p.NetLatency, kRing, p)
		} else {
			lat += s.intraLat(kRing, p)
		}
	} else {
		intra := s.intraLat(kRing, p)
		if d > 1 {
			ovh := sec(s.p.NetOverhead)
			if p == Simple {
				ovh *= 3
			}
			intra = math.Max(intra, ovh)
		}
		inter := algoLat(&s.p.NetLatency, kRing, p)
		if s.ppnMin == 1 {
			inter = algoLat(&s.p.NetLatency, kTree, p) // NCCL: latencies fully exposed at one rank per node
		}
		lat += float64(nsteps-nInter)*intra + float64(nInter)*inter
		if op == AllReduce && p == Simple && d > 1 &&
			bytes/float64(max(s.p.Channels, 1)*n) >= plateauBytes {
			lat *= ringPlateau
		}
	}
	k := busFactor(op, n)
	ideal := bytes * k / full
	xfer := bytes * k / (bw * chanFrac(bytes, s.p.Channels, p, true, n))
	return s.finish(est{kind: kRing, proto: p}, lat, ideal, xfer, bytes*k), true
}

// btreeParent returns the parent of rank r in NCCL's binary tree over n
// ranks (trees.cc ncclGetBtree; -1 for the root, rank 0): the tree that
// alternates leaves and inner nodes, built on the lowest set bit of r. The
// parent of r with lowest set bit b is (r^b)|(b<<1), or r^b when that is out
// of range.
func btreeParent(n, r int) int {
	if r == 0 {
		return -1
	}
	bit := 1
	for bit < n && bit&r == 0 {
		bit <<= 1
	}
	up := (r ^ bit) | (bit << 1)
	if up >= n {
		up = r ^ bit
	}
	return up
}

// dtreeParent returns the parent of r in tree t (0 or 1) of NCCL's double
// binary tree over n ranks (ncclGetDtree): tree 0 is the binary tree, tree 1
// its mirror (r -> n-1-r) when n is even or its shift by one rank when n is
// odd, so that most inner nodes of one tree are leaves of the other.
func dtreeParent(n, r, t int) int {
	switch {
	case t == 0:
		return btreeParent(n, r)
	case n%2 == 1:
		p := btreeParent(n, (r-1+n)%n)
		if p < 0 {
			return -1
		}
		return (p + 1) % n
	}
	p := btreeParent(n, n-1-r)
	if p < 0 {
		return -1
	}
	return n - 1 - p
}

// treeDegree returns the most edges one of d ranks has in the double binary
// tree, both trees together: 2 for two ranks, 4 from four ranks on (an inner
// node of one tree, with a parent and two children, is a leaf of the other).
func treeDegree(d int) int {
	deg := make([]int, d)
	for t := 0; t < 2; t++ {
		for r := 0; r < d; r++ {
			if p := dtreeParent(d, r, t); p >= 0 {
				deg[r]++
				deg[p]++
			}
		}
	}
	most := 0
	for _, k := range deg {
		most = max(most, k)
	}
	return most
}

// treeIdeal returns the physical transmission time of a double-binary-tree
// all-reduce at achievable Simple rates: chains inside domains move the
// buffer up and down (2S per GPU); across domains every tree edge carries
// half the buffer each way, so the busiest domain moves treeDeg*S/2 per
// direction through its ppnMin NICs (S for two domains, 2S for large trees).
func (s *shape) treeIdeal(bytes float64) float64 {
	var intra, inter float64
	if s.ppnMax > 1 {
		intra = 2 * bytes / s.intraBW
	}
	if s.domains > 1 {
		perGPU := float64(s.treeDeg) * bytes / 2 / float64(s.ppnMin)
		inter = perGPU / s.netBW
		if s.pcie && s.ppnMax > 1 {
			// Chain and tree traffic share the GPU's PCIe link.
			intra = math.Max(intra, (2*bytes+perGPU)/s.pcieBW)
		}
	}
	return math.Max(intra, inter)
}

// tree prices a double-binary-tree all-reduce with protocol p, following
// NCCL's model: busBw from the tree's physical rate, x0.92, capped per
// channel; LL /3.8; LL128 x7/9 (one node) or x120/128; algBw = busBw/2,
// corrected by treeCorrectionFactor.
func (s *shape) tree(p Proto, bytes float64) (est, bool) {
	d := s.domains
	ideal := s.treeIdeal(bytes)
	if !(ideal > 0) {
		return est{}, false
	}
	nc := float64(max(s.p.Channels, 1))
	busBW := math.Min(treeAllReduceFactor*2*bytes/ideal, nc*s.p.PerChannelTreeBW.At(d))
	switch p {
	case LL:
		busBW = math.Min(busBW/treeLLDivisor, s.p.LLMaxBW.At(d))
	case LL128:
		if s.pcie || s.p.LL128Fraction <= 0 {
			return est{}, false
		}
		f := treeLL128MultiNode
		if d == 1 {
			f = treeLL128OneNode
		}
		busBW = math.Min(busBW*f, nc*s.p.PerChannelTreeLL128BW.At(d))
	}
	algBW := busBW / 2
	if b := int64(bytes) >> 6; b >= 1 {
		if l := int(log2i(int(min(b, 1<<40)))); l < len(treeCorrection[p]) {
			algBW *= treeCorrection[p][l]
		}
	}
	if !(algBW > 0) {
		return est{}, false
	}
	ppn := s.n / max(d, 1)
	lat := algoLat(&s.p.BaseLatency, kTree, p) +
		2*(float64(ppn-1)*s.intraLat(kTree, p)+log2i(d)*algoLat(&s.p.NetLatency, kTree, p))
	xfer := bytes / (algBW * chanFrac(bytes, s.p.Channels, p, false, s.n))
	return s.finish(est{kind: kTree, proto: p}, lat, ideal, xfer, bytes*busFactor(AllReduce, s.n)), true
}

// nvlsVolume is the bytes each GPU port moves per direction (the larger
// direction) in a single-domain NVLS op on n ranks: all-reduce (n+1)/n of
// the buffer (reduce-scatter reads it once, the multicast all-gather writes
// 1/n); all-gather and reduce-scatter (n-1)/n.
func nvlsVolume(op Op, n int, bytes float64) float64 {
	fn := float64(n)
	if op == AllReduce {
		return bytes * (fn + 1) / fn
	}
	return bytes * (fn - 1) / fn
}

// nvls prices NVLink SHARP inside one domain (Simple only; latency is NCCL's
// NVLS hop latency with no base).
func (s *shape) nvls(op Op, bytes float64) (est, bool) {
	if s.nvlsBW <= 0 || s.domains != 1 || s.n < 2 || (op != AllReduce && s.n > maxNVLSArity) {
		return est{}, false
	}
	ideal := nvlsVolume(op, s.n, bytes) / s.nvlsBW
	lat := algoLat(&s.p.NVLinkLatency, kNVLS, Simple)
	return s.finish(est{kind: kNVLS, proto: Simple}, lat, ideal, ideal, bytes*busFactor(op, s.n)), true
}

// nvlsTreeIdeal is the physical time of NVLS inside domains pipelined with a
// tree across them (each GPU carries 1/ppn of the buffer on its rail).
func (s *shape) nvlsTreeIdeal(bytes float64) float64 {
	intra := nvlsVolume(AllReduce, s.ppnMax, bytes) / s.nvlsBW
	inter := float64(s.treeDeg) * bytes / 2 / (float64(s.ppnMin) * s.netBW)
	return math.Max(intra, inter)
}

// nvlsTree prices NCCL's NVLSTree all-reduce across domains.
func (s *shape) nvlsTree(bytes float64) (est, bool) {
	if s.nvlsBW <= 0 || s.domains < 2 || s.ppnMin < 2 {
		return est{}, false
	}
	ideal := s.nvlsTreeIdeal(bytes)
	xfer := ideal
	// NCCL caps NVLSTree busBw at NVLSChannels x perChMaxNVLSTreeBw.
	if c := float64(s.p.NVLSChannels) * s.p.PerChannelNVLSTreeBW.At(s.domains); c > 0 {
		xfer = math.Max(xfer, bytes*busFactor(AllReduce, s.n)/c)
	}
	lat := algoLat(&s.p.NVLinkLatency, kNVLSTree, Simple) +
		2*log2i(s.domains)*algoLat(&s.p.NetLatency, kNVLSTree, Simple)
	return s.finish(est{kind: kNVLSTree, proto: Simple}, lat, ideal, xfer, bytes*busFactor(AllReduce, s.n)), true
}

// direct prices point-to-point patterns: all_to_all (every pair at once),
// send_recv (each rank to the next) and send (ranks[0] to ranks[1]).
// Protocols: LL (LLFraction of the rate) and Simple.
func (s *shape) direct(op Op, p Proto, bytes float64) (est, bool) {
	if p == LL128 {
		return est{}, false
	}
	n := s.n
	var ideal float64
	cross := false
	switch op {
	case AllToAll:
		fn := float64(n)
		intra := bytes / fn / s.a2aBW
		var inter float64
		if s.domains > 1 {
			inter = bytes * float64(n-s.ppnMin) / fn / s.netBW
			cross = true
			if s.pcie {
				// Both kinds of traffic leave through the GPU's PCIe link.
				intra = math.Max(intra, bytes*float64(n-1)/fn/s.pcieBW)
			}
		}
		ideal = math.Max(intra, inter)
	case SendRecv:
		cross = s.ringCross
	case Send:
		cross = s.sendCross
	}
	if op != AllToAll {
		bw := s.p2pBW
		if cross {
			bw = math.Min(bw, s.netBW)
		}
		ideal = bytes / bw
	}
	if !(ideal >= 0) || math.IsInf(ideal, 0) {
		return est{}, false
	}
	xfer := ideal
	if p == LL {
		xfer = ideal / s.p.LLFraction
	}
	lat := algoLat(&s.p.BaseLatency, kRing, p)
	if cross {
		lat += algoLat(&s.p.NetLatency, kRing, p)
		if op == AllToAll {
			ovh := sec(s.p.NetOverhead)
			if p == Simple {
				ovh *= 3
			}
			lat += float64(n-s.ppnMin) * ovh // the proxy posts one network send per remote peer
		}
	} else {
		lat += s.intraLat(kRing, p)
	}
	return s.finish(est{kind: kDirect, proto: p}, lat, ideal, xfer, bytes*busFactor(op, n)), true
}

// RCCL's MSCCL all-pairs all_reduce for 8 ranks (ROCm/rccl
// tools/msccl-algorithms @ 0cbce2a7, RCCL 2.21.5; installed with RCCL and
// loaded on the 8-GPU fully connected XGMI platforms, rome_models.cc
// rome_model_79 "mscclEnabled=1"): every rank reduce-scatters its 1/8
// chunks straight to the seven others, then all-gathers them the same way,
// so the collective takes 2 steps where a ring takes 2(n-1) = 14.
const (
	allPairsRanks = 8        // ngpus="8" in every allreduce-allpairs-8n-*.xml
	allPairsLLMax = 524287   // allreduce-allpairs-8n-ll-32tb (0-65,536 B) and -ll-64tb (65,537-524,287 B): LL
	allPairsMax   = 11534336 // allreduce-allpairs-8n-simple(-op): Simple from 524,288 B; in- and out-of-place both reach 11,534,336 B

	// MSCCL runs an XML only when the element count is a multiple of its
	// nchunksperloop (msccl_lifecycle.cc: count*sizeMultiplier %
	// nChunksPerLoop == 0, sizeMultiplier 1 for all_reduce): 256 for the
	// -ll-32tb files (to 65,536 B), 512 for the others. The model sees bytes,
	// not elements, and takes 4-byte elements (float, what rccl-tests
	// measures): a size that is a multiple of chunks·4 bytes is accepted for
	// every element of 4 bytes or fewer (fp32, bf16, fp8). Anything else
	// falls back to RCCL's tuning model, as AMD's sweep shows at 128-512 B
	// (ring LL, 22.9 µs) against 13.1 µs from 1 KiB (TestSmallMI300X).
	allPairsSmallChunks = 256
	allPairsChunks      = 512
	allPairsElem        = 4
)

// allPairsFits reports whether MSCCL's all-pairs XML for bytes accepts the
// element count (see allPairsChunks).
func allPairsFits(bytes float64) bool {
	b := int64(bytes)
	if b <= 0 || float64(b) != bytes {
		return false
	}
	chunks := int64(allPairsChunks)
	if b <= 65536 {
		chunks = allPairsSmallChunks
	}
	return b%(chunks*allPairsElem) == 0
}

// allPairs prices RCCL's MSCCL all-pairs all_reduce: 2 steps of RCCL's base
// and per-hop latency, the ring's bus bytes at the ring rate (every rank
// drives all its links at once, as a ring of a full mesh does), LL at
// LLFraction of it (RCCL's AMD path applies no llMaxBw cap, tuning.cc) and
// MSCCL's fixed channel count (no channel drop). It applies to all_reduce
// on one domain of exactly 8 ranks with comm.library rccl, up to 11 MiB,
// on sizes MSCCL's element-count rule accepts (allPairsFits).
// The in-place files' second Simple window (14,680,065-16,777,216 B) and
// the out-of-place file's reach to 16 MiB are left out: AMD's out-of-place
// rccl-tests sweep at 16 MiB runs nearer the ring's time (148.8 µs
// measured; ring 158.4 µs, all-pairs 133.3 µs modelled; TestSweepMI300X).
func (s *shape) allPairs(bytes float64) (est, bool) {
	if s.p.Library != "rccl" || s.domains != 1 || s.n != allPairsRanks || s.pcie || bytes > allPairsMax || !allPairsFits(bytes) {
		return est{}, false
	}
	p := Simple
	if bytes <= allPairsLLMax {
		p = LL
	}
	full := s.ringBW()
	bw := full
	if p == LL {
		bw = s.p.LLFraction * full
	}
	if !(bw > 0) {
		return est{}, false
	}
	k := busFactor(AllReduce, s.n)
	lat := algoLat(&s.p.BaseLatency, kRing, p) + 2*s.intraLat(kRing, p)
	return s.finish(est{kind: kAllPairs, proto: p}, lat, bytes*k/full, bytes*k/bw, bytes*k), true
}

// bestRing is the fastest ring protocol for op.
func (s *shape) bestRing(op Op, bytes float64) (est, bool) {
	var best est
	found := false
	for p := LL; p <= Simple; p++ {
		if e, ok := s.ring(op, p, bytes); ok && (!found || e.t < best.t) {
			best, found = e, true
		}
	}
	return best, found
}

// subShapes returns the shapes of a hierarchical collective's phases: the
// ring inside one domain (ppn ranks) and the ring across domains on one rail
// (one rank per domain).
func (s *shape) subShapes() (intra, inter shape) {
	intra = *s
	intra.n, intra.domains, intra.ppnMin = s.ppnMax, 1, s.ppnMax
	inter = *s
	inter.n, inter.ppnMin, inter.ppnMax = s.domains, 1, 1
	return intra, inter
}

// hierPhase is one phase of a hierarchical collective.
type hierPhase struct {
	inter bool // across domains (per rail) rather than inside each domain
	op    Op
	bytes float64 // nccl-tests size of the phase's collective
}

// hierPlan lists the phases: all_reduce = reduce-scatter inside domains,
// all-reduce of 1/ppn across domains on each rail, all-gather inside
// domains; all_gather = across, then inside; reduce_scatter = inside, then
// across.
func (s *shape) hierPlan(op Op, bytes float64) (ph [3]hierPhase, n int) {
	part := bytes / float64(s.ppnMax)
	switch op {
	case AllReduce:
		return [3]hierPhase{{false, ReduceScatter, bytes}, {true, AllReduce, part}, {false, AllGather, bytes}}, 3
	case AllGather:
		return [3]hierPhase{{true, AllGather, part}, {false, AllGather, bytes}}, 2
	case ReduceScatter:
		return [3]hierPhase{{false, ReduceScatter, bytes}, {true, ReduceScatter, part}}, 2
	}
	return ph, 0
}

// hierPhaseEst prices one phase with its best ring protocol.
func (s *shape) hierPhaseEst(ph hierPhase) (est, bool) {
	intra, inter := s.subShapes()
	sub := &intra
	if ph.inter {
		sub = &inter
	}
	if sub.n < 2 {
		return est{kind: kRing, proto: Simple}, true // nothing to do on one rank
	}
	return sub.bestRing(ph.op, ph.bytes)
}

// hier prices the hierarchical algorithm as the sum of its phases (each a
// separate ring collective with its own launch). It needs the same number
// of ranks in every domain; on one domain it is a ring.
func (s *shape) hier(op Op, bytes float64) (est, bool) {
	if s.domains < 2 {
		return s.bestRing(op, bytes)
	}
	if s.ppnMin != s.ppnMax {
		return est{}, false
	}
	phases, np := s.hierPlan(op, bytes)
	if np == 0 {
		return est{}, false
	}
	total := est{kind: kHier, proto: Simple}
	longest := -1.0
	for _, ph := range phases[:np] {
		e, ok := s.hierPhaseEst(ph)
		if !ok {
			return est{}, false
		}
		total.t += e.t
		total.fixed += e.fixed
		total.xfer += e.xfer
		total.ideal += e.ideal
		if e.t > longest {
			longest, total.proto = e.t, e.proto
		}
	}
	return total, true
}

// eval prices one (algorithm, protocol) candidate.
func (s *shape) eval(op Op, k kind, p Proto, bytes float64) (est, bool) {
	switch k {
	case kRing:
		return s.ring(op, p, bytes)
	case kTree:
		if p > Simple {
			return est{}, false
		}
		return s.tree(p, bytes)
	case kNVLS:
		if p != Simple {
			return est{}, false
		}
		return s.nvls(op, bytes)
	case kNVLSTree:
		if p != Simple {
			return est{}, false
		}
		return s.nvlsTree(bytes)
	case kDirect:
		return s.direct(op, p, bytes)
	case kAllPairs:
		if op != AllReduce {
			return est{}, false
		}
		return s.allPairs(bytes) // its protocol is set by the size
	}
	return est{}, false
}
