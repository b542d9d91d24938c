// Package collectives turns one collective operation on a group of GPU ranks
// into time: a closed-form cost per algorithm and protocol (analytic
// fidelity) or transfers on the fabric (flow fidelity).
//
// # Sizes and bandwidths
//
// Sizes follow nccl-tests (hardware-facts §1): S is the buffer for
// all_reduce, broadcast and reduce, the full output for all_gather, the full
// input for reduce_scatter, the full send buffer for all_to_all, and the
// bytes each rank sends for send_recv and send. algbw = S/t and
// busbw = algbw·f with f = 2(n-1)/n for all_reduce, (n-1)/n for all_gather,
// reduce_scatter and all_to_all, 1 otherwise.
//
// # Group shape
//
// NewGroup analyses a group once. It counts the scale-up domains D the ranks
// span (an NVSwitch node, an NVL72 rack, a PCIe node) and the fewest and most
// ranks in one domain (ppn), and it derives achievable per-GPU bandwidths from
// the topology and the hardware profiles (hardware.CommProfile,
// hardware.NICCommProfile), each link at its kind's measured fraction:
//
//	B_intra  ring rate inside a domain: the ring over the largest domain's ranks
//	         is routed on the topology and B_intra = min over loaded links of
//	         bandwidth·eff/flows (NVLink: RingEfficiency, e.g. 370/450 on H100;
//	         PCIe: PCIeEfficiency)
//	B_p2p    the same for one point-to-point pair (P2PEfficiency)
//	B_a2a    the rate per transfer when every pair of the domain sends at
//	         once (all pairs routed, the most loaded link decides)
//	B_nvls   NVLink SHARP per-port rate, port bandwidth·NVLSEfficiency, only
//	         on NVSwitch nodes of GPUs with NVLS
//	B_net    scale-out rate per GPU: NIC bandwidth per GPU·NIC efficiency
//	         (e.g. 47/50 for NDR), capped by the GPU's own PCIe path to its NIC
//
// Inside each domain the group's ranks are taken in rank order, so equal
// positions in two domains sit on the same rail when the domains hold the
// same local indices.
//
// # Cost model
//
// The structure is NCCL's tuning model (hardware-facts §3c-§3f, [NCCL-TUNE]
// tuning.cc and enqueue.cc): for every allowed algorithm a and protocol p
//
//	t(a,p) = L0 + lat(a,p) + S·k / (bw(a,p)·c(S,p)) + ramp(p, S·f)
//
// and Auto takes the minimum, ties going to tree, then ring, then NVLS, and
// LL before LL128 before Simple, as NCCL does. L0 is the launch overhead and
// ramp the Simple pipeline ramp (below); lat is NCCL's base latency plus its
// per-step hop latencies; c(S,p) is the channel fraction.
//
// Ring (all_reduce, all_gather, reduce_scatter, broadcast, reduce). k is the
// busbw factor f (1 for broadcast/reduce). The Simple rate is
//
//	bw = B_intra                                     (D = 1)
//	bw = min(B_intra·ppn/(ppn-1), ppn·B_net)         (D > 1, ppn = fewest ranks per domain)
//
// because the group runs ppn rings, each leaving every domain once through a
// different GPU and its own NIC; this gives 8 x 24 = 192 GB/s busbw on DGX
// A100 with HDR-200 and 8 x 47 = 376 GB/s on H100 with NDR-400
// (hardware-facts §2d). On PCIe-only domains the NIC path shares the GPU's
// PCIe link with the ring, so B_intra is not raised. LL runs at min(LLMaxBW, LLFraction·bw), LL128 at
// min(bw₁₂₈, channels·PerChannelRingLL128BW) and only where every
// intra-domain hop is NVLink, with bw₁₂₈ the Simple rate's two sides each at
// its own LL128 efficiency: LL128Fraction·B_intra(·ppn/(ppn-1)) on the
// scale-up side (A100: 0.6, refitted on a one-node sweep) and
// LL128NetFraction·ppn·B_net (NCCL's 0.92) on the NIC side. Latency: base + (steps - inter)·hop_intra +
// inter·hop_net with steps = 2(n-1), n-1 or n, inter = 2(D-1) or D-1 network
// steps, hop_intra raised to the network overhead (x3 for Simple) across
// domains and hop_net taken from the tree row at one rank per domain;
// multi-domain Simple all_reduce latency x1.4 (NCCL's "plateau").
// Broadcast/reduce pay one hop (pipelined chain).
//
// Tree (all_reduce, NCCL's double binary tree of trees.cc across domains:
// a binary tree and its mirror, or its shift by one for an odd count). Physical
// time at Simple rates: chains inside domains move the buffer both ways (2S
// per GPU over B_intra); across domains every tree edge carries S/2 each way,
// so the busiest domain moves deg·S/2 through its ppn NICs (deg = most tree
// edges at one domain over both trees: 2 for two domains, 3 for three, 4 from
// four on); on PCIe-only domains chain and tree traffic share the GPU's PCIe
// link. NCCL's refinements turn
// that into busBw = min(0.92·2S/t_phys, channels·PerChannelTreeBW), LL
// busBw/3.8 capped by LLMaxBW, LL128 x7/9 (one domain) or x120/128, algBw =
// busBw/2 times treeCorrectionFactor[p][log2(S/64)]. Latency: base +
// 2((n/D - 1)·hop_intra + log2(D)·hop_net).
//
// NVLS (all_reduce, all_gather, reduce_scatter inside one NVSwitch domain;
// Simple only). Each port moves (n+1)/n·S per direction for all_reduce
// (in-switch reduce-scatter reads the buffer once, the multicast all-gather
// writes 1/n) and (n-1)/n·S for all_gather/reduce_scatter:
// t = L0 + 25 µs + vol/B_nvls + ramp. With B_nvls = 450·0.686 GB/s this is
// NCCL's 480 GB/s busbw on 8 H100 (nccl-tests#212).
//
// NVLS across domains is NCCL's NVLSTree (asking for nvls on such a group
// gets it): NVLS inside each domain pipelined with the double binary tree
// across domains on every rail, t_phys = max((ppn+1)/ppn·S/B_nvls,
// deg·S/2/(ppn·B_net)), capped at NVLSChannels·PerChannelNVLSTreeBW busbw;
// latency 25 µs + 2·log2(D)·20.9 µs. On two nodes its busbw exceeds the NIC
// limit, as NCCL's maintainers note (nccl-tests#196).
//
// Hierarchical (all_reduce, all_gather, reduce_scatter; same ppn in every
// domain): separate ring collectives in sequence, each with its own launch
// and protocol choice: all_reduce = reduce-scatter inside domains,
// all-reduce of S/ppn across domains on each rail, all-gather inside
// domains; all_gather = across then inside; reduce_scatter = inside then
// across. Auto never picks it (NCCL has no such algorithm).
//
// Direct (all_to_all, send_recv, send; LL or Simple). all_to_all:
// t_phys = max(S/n / B_a2a, (n-ppn)/n·S/B_net) (on PCIe-only domains also
// (n-1)/n·S over the GPU's PCIe link, which both kinds share), latency one hop plus,
// across domains, one network overhead per remote peer (the proxy posts each
// send). send_recv and send: S/B over the slowest pair (B_net when a pair
// crosses domains, else B_p2p). LL halves the rate.
//
// RCCL. GPUs whose comm.library is rccl take RCCL's own base, XGMI and PCIe
// latencies (ROCm/rccl tuning.cc baseLat and tuning_model_5, the model of
// the 8-GPU fully connected XGMI platforms; the network row stays NCCL's).
// On one domain of exactly 8 ranks, Auto all_reduce also considers RCCL's
// MSCCL all-pairs algorithm (tools/msccl-algorithms allreduce-allpairs-8n-*,
// loaded on those platforms): every rank reduce-scatters its chunks straight
// to the seven others and all-gathers them back, 2 steps instead of the
// ring's 2(n-1): latency base + 2 hops, the ring's bus bytes at the ring
// rate, LL (half rate) to 524,287 B and Simple to 11,534,336 B, MSCCL's
// fixed channels, on sizes whose element count (4-byte elements) is a
// multiple of the XML's nchunksperloop (256 to 64 KiB, then 512), as
// MSCCL requires. It is reported as Direct; flow fidelity plays 2S/n bytes
// from every rank to every other.
//
// Channels. Below channels·threads·threshold bytes NCCL uses fewer channels
// and then halves the threads of the last one, keeping about threshold bytes
// per thread (enqueue.cc topoGetAlgoInfo; thresholds 8/8/64 bytes for
// LL/LL128/Simple, ring LL x n; 512/640/512 threads). Bandwidth is taken
// proportional to channels x threads, counted continuously so that a larger
// message is never faster:
//
//	c(S,p) = min(1, max(minThreads/(channels·maxThreads), S/(channels·maxThreads·threshold)))
//
// with minThreads 64 (LL128: 320), where NCCL stops halving. This is what
// bends the measured sweeps below ~1 MiB (hardware-facts §2c).
//
// Fitted terms. Two effects are not in NCCL's model but are in every
// nccl-tests sweep: a fixed launch cost L0 (host enqueue and kernel launch
// without CUDA graphs) and a Simple-protocol ramp,
//
//	ramp(S·f) = RampTime·min(1, S·f/RampBytes),
//
// the cost of filling the chunk pipeline before it streams. L0, RampTime,
// RampBytes (and, for A100, LL128Fraction) were fitted per GPU to the
// published all_reduce sweeps (hardware-facts §2c: [AZ-H100] 8xH100 with
// NVLS, [AZ-A100] 8xA100) by grid search minimising the worst busbw error from
// 1 MiB to 8 GiB; both sweeps give L0 = 12 µs. The resulting model is within
// 7.3% (H100) and 6.8% (A100) of every row from 1 MiB to 8 GiB and within 2x
// from 64 KiB. The MI300X (RCCL) has its own, from AMD's 8-GPU rccl-tests
// sweep: ring efficiency 318.98/448, no launch cost on top of RCCL's base
// latency (AMD's 12 µs is the measured no-graph floor, 13.1 µs from 1 to
// 32 KiB, launch included; NCCL's 12 µs added to it made small messages
// 1.9x slow) and a Simple ramp of 20 µs over 20 MB: within 10% of every
// size from 64 KiB to 16 GiB and of the times from 128 B to 32 KiB
// (TestSweepMI300X, TestSmallMI300X). GPUs without a published sweep take the values of
// the nearest measured one (hardware.CommProfile.Sources says which).
//
// # Contention at analytic fidelity
//
// StaticShares prices what flow fidelity would show when the groups of one
// kind and pipeline stage run the same collective at once, without playing
// flows: their cross-domain transfers are routed exactly as the runner
// routes them (below), each network link's achievable rate (line rate × NIC
// efficiency) is split evenly among the transfers on it, and a transfer
// keeps share = (rate on its most loaded link) / (its rate alone: the
// group's B_net split among the group's own transfers at that GPU). A
// group's Share (per pattern: ring, tree, direct) is its transfers' lowest;
// Group.WithShare prices its chosen algorithm and protocol (picked, as
// NCCL's tuner does, on the uncontended fabric) with B_net × share. On
// uncontended patterns every share is 1 and nothing changes; where the
// fabric is max-min fair with equal transfers (one collective per group,
// all started together) the static load is exactly what flow settles on
// (tested to agree within 0.1% on an 8:1 oversubscribed fat-tree).
// SendShares does the same for pipeline sends.
//
// # Flow fidelity
//
// Runner expands the chosen algorithm into transfers on network.Fabric over
// topology routes (AppendRoute), all of a phase's transfers starting
// together:
//
//	ring           ppn rings (one inside a domain) as in the cost model,
//	               each edge carrying S·f/rings; edges that several rings
//	               share inside a domain are one transfer of their sum;
//	               broadcast and reduce drop each ring's closing edge (a
//	               pipelined chain)
//	tree           both directions of every chain edge (S) plus both
//	               directions of every tree edge on every rail (S/2/ppn)
//	nvls           per rank one transfer on its NVSwitch uplink and one on
//	               its downlink with the NVLS volumes
//	nvls (D > 1)   the NVLS transfers of every domain plus the tree's
//	hierarchical   2 or 3 phases of rings: per domain, then per rail
//	direct         all_to_all: S/n to every rank of the same domain and one
//	               transfer of ppn_e·S/n to the rank on the same rail of
//	               every other domain e (as NCCL's PXN aggregates); send_recv
//	               and send: one transfer per pair
//
// Every transfer's volume is inflated by line/achievable rate of its
// bottleneck link (the link-kind fractions above) and by the protocol and
// channel factor of the cost model (xfer/ideal), so that on an uncontended
// fabric a phase's transfers take exactly the closed form's transmission
// time. When the last one arrives the phase's fixed time (L0, latency, ramp)
// elapses, less the route latency the fabric already charged that transfer
// (NCCL's latency constants include the wire); then the next phase starts or
// Done fires. On uncontended patterns flow and analytic agree within 0.1%
// (tested); under contention the fabric's max-min sharing slows the
// transfers that share links. A collective starts O(n) transfers, except
// all_to_all: n·(ppn-1) inside domains plus n·(D-1) across.
//
// A caller that starts one collective on one group many times (the
// every-rank executor) works out its Plan once (Runner.Plan: the algorithm
// and protocol, and whether it is a timer or transfers) and starts it with
// StartPlan: the first start records every phase's transfers (routes,
// sizes, latencies), the others replay the same fabric calls in the same
// order without routing or pricing them again.
package collectives
