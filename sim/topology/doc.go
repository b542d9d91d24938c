// Package topology is simtrain's cluster model: the cluster as a graph of
// devices joined by full-duplex links, builders for the usual cluster
// shapes, and deterministic closed-form routing between GPUs. The GPUs and
// NICs it builds with are sim/hardware's records.
//
// # Hardware
//
// Build takes a catalog GPU by name (or a resolved record, Spec.Hardware)
// and a catalog NIC, and uses their datasheet figures: the scale-up link
// (kind, per-direction bandwidth and latency, link count), the PCIe host
// link (x16 bandwidth and switch latency), the NIC line rate and per-hop
// latency, and the GPU's scale-up domain and default node size. All
// bandwidths are line rates: what a collective actually achieves (protocol
// overhead, NIC efficiency) lives in the GPU's and NIC's communication
// profiles (sim/hardware), which sim/collectives applies.
//
// # Graph
//
// A cluster is a set of devices (GPUs, NVSwitches, PCIe switches, host root
// complexes, NICs, leaf/spine/core switches) with dense ids, and a set of
// cables. Cable k is the two directed links 2k (pointing away from the GPUs)
// and 2k+1 (back); each direction has its own line rate B (bytes/s) and
// latency, so a transfer in one direction never competes with one in the
// other. GPU ranks are node-major, r = node·G + local, and GPU device id =
// rank. Links carry no queueing model: sim/network shares their bandwidth.
//
// Inside a node (intra_node):
//
//   - nvswitch: one logical NVSwitch per scale-up domain and one link per GPU
//     at the GPU's scale-up bandwidth (H100: 450 GB/s, 18 NVLink4 links). The
//     four physical NVSwitch chips of an HGX H100 board (six on A100, HF §5b)
//     are aggregated into one non-blocking switch: every GPU reaches every
//     other at its full NVLink rate, which is what the chips provide
//     together. For NVL72 racks (gb200, gb300: DomainGPUs 72, 4 GPUs per
//     compute tray) the domain spans 18 nodes and the 18 NVSwitch chips of
//     its 9 switch trays are one logical switch. A cluster that does not fill
//     its racks is spread evenly over as many racks as it needs (128 GB300 =
//     2 racks of 64 GPUs), as one would deploy a partial NVL72 job. AMD MI300X/MI325X have no
//     switch: their 8 GPUs are a fully connected XGMI mesh, 7 links × 64 GB/s
//     per direction (HF §5). We model that mesh, too, as one logical switch
//     with 448 GB/s per GPU, because RCCL runs several rings over different
//     orderings so that a ring collective uses all seven links at once; a
//     literal mesh would give a single-ring expansion only one 64 GB/s link.
//     The cost: a lone point-to-point transfer between two MI300X is
//     overstated (real: one 64 GB/s link).
//   - pcie: GPUs behind PCIe switches, two GPUs per switch (one switch per
//     NIC when a node has fewer NICs than switches), the switches under the
//     node's host root. Links at the GPU's PCIe generation x16 rate (Gen4 /
//     5 / 6: 31.5 / 63 / 121 GB/s, HF §5b).
//   - nvlink-pairs: as pcie, plus an NVLink bridge between GPUs 2i and 2i+1
//     (H100 PCIe).
//   - nvlink-mesh: as pcie, plus a direct NVLink (XGMI) cable between every
//     pair of a node's GPUs, each carrying 1/(b-1) of the GPU's scale-up
//     bandwidth, b the board's GPUs (4 for NVLink, 8 for XGMI; a node of
//     gpus_per_node 2 is 2 GPUs of such a board). NVIDIA's 4-GPU HGX H100/H200 baseboards have no NVSwitch
//     (NVIDIA lists NVSwitch on the HGX A100/H100/H200/B200 8-GPU baseboards
//     only: AI Enterprise docs, "NVIDIA NVSwitch", platform support) and
//     split each GPU's 18 NVLink4 links (900 GB/s bidirectional, NVIDIA
//     H100/H200 datasheets) over its three peers: 6 links, 150 GB/s per
//     direction per pair (nvidia-smi topo reports NV6 between them). A
//     2-GPU group then gets one pair's cable; collectives/group.go spreads
//     a larger group's rings over all its pairs, as NCCL does (below).
//
// Every node also has the PCIe tree, whatever its scale-up fabric: NICs hang
// off the PCIe switch of the GPU(s) they serve, so a GPU reaches its NIC in
// two PCIe hops (GPU → switch → NIC), as on DGX boards where each PCIe switch
// carries two GPUs and their two NICs.
//
// Latencies (HF §5c): NVLink/XGMI hops 25 ns (SimAI's nv_latency default;
// an unsourced estimate for XGMI); a PCIe link is one switch traversal,
// 105 ns on Gen4 and 115 ns on Gen5 (Broadcom PEX88000 / PEX89144
// figures; Gen6 taken equal to Gen5); every network link (NIC–leaf and
// switch–switch) has the NIC record's per-hop latency: 600 ns for HDR
// ([STAS-NET]), 500 ns for NDR, XDR and Ethernet (SimAI's default link
// latency; no published NDR/XDR figure), 110 ns for Omni-Path (estimate).
//
// # Network
//
// NICsPerNode NICs per node (default one per GPU), each at the NIC line rate
// (Spec.NICGbps overrides the catalog), each attached to one leaf. Every
// switch is modelled with the radix of NVIDIA Quantum-2 and Spectrum-4, 64
// ports (HF §5b), a leaf using 32 down and 32 up: non-blocking.
//
//   - rail-optimized (default; DGX SuperPOD, HF §6a): scalable units of 32
//     nodes; in each SU one leaf per rail (rail = NIC local index), so leaf
//     (su, rail) serves NIC `rail` of the SU's 32 nodes. Up to 64 leaves
//     (8 SUs of 8 rails) the fabric has two tiers with spines = leaves/2,
//     each leaf spreading its 32 uplinks evenly (2 SUs: 16 leaves, 8 spines,
//     4 cables per leaf–spine pair; 8 SUs: 64 leaves, 32 spines, 1 cable).
//     Beyond, three tiers: spine-leaf groups ("pods") of 32 consecutive
//     leaves (4 SUs of 8 rails) with 32 spines each, every leaf cabled once
//     to every spine of its group; spine j of every group belongs to plane j,
//     whose P'/2 cores (P' = number of groups rounded up to a power of two)
//     each get 64/P' of the spine's 32 uplinks. At 64 SUs (16,384 GPUs) that
//     is 512 leaves, 512 spines, 256 cores and 16,384 cables per tier, as in
//     the B200 SuperPOD table (HF §6a). Leaf counts that are not a power of
//     two get the spine or core layer of the next power of two, and a partial
//     SU is cabled like a full one on the switch side; both stay
//     non-blocking.
//   - fat-tree: ToR leaves each serving 32/NICsPerNode whole nodes (all NICs
//     of a node on the same leaf), with spines and cores sized as above.
//   - clos (the Meta Llama 3 cluster, HF §6b): one ToR per rack of 2 nodes
//     (16 NICs down, 16 up), pods of PodGPUs GPUs (0: the whole cluster) with
//     full bisection: 16 logical spines per pod ("CTSW"), each ToR cabled
//     once to each; spine j of every pod joins one logical core ("ATSW")
//     of plane j with bandwidth (pod's ToRs × line rate) / Oversubscription.
//     The Llama 3 cluster is 24,576 H100, PodGPUs 3072, Oversubscription 7.
//   - single-switch: every NIC on one switch.
//
// Oversubscription and PodGPUs apply to every builder but single-switch:
// with PodGPUs set, the network is built from pods of that many GPUs (each a
// two-tier block whose 32 (clos: 16) spine planes are logical switches) and
// the tier above the pods carries 1/Oversubscription of a pod's bandwidth;
// with PodGPUs 0, Oversubscription divides the leaf uplinks. Where parallel
// cables join the same two switches they are one link of summed bandwidth
// with Link.Cables saying how many (per-NIC links are never merged), and
// oversubscribed tiers keep their exact ratio with Cables rounded up.
//
// # Routing
//
// AppendRoute writes the route from one GPU rank to another as link ids in
// closed form, from the layout alone; there is no search in the hot path and
// no allocation when the caller's slice has room:
//
//   - same domain on NVSwitch: GPU → switch → GPU (2 links);
//   - same node otherwise: NVLink bridge (1), or through the PCIe switch
//     (2) or the host (4);
//   - between domains: GPU → PCIe switch → NIC → leaf (→ spine (→ core →
//     spine) →) leaf → NIC → PCIe switch → GPU, on the GPUs' own NICs (rail
//     = local index when each GPU has one NIC), so traffic between GPUs with
//     the same local index stays on its rail. On rail-optimized networks a
//     GPU sending to a different rail moves to the destination's rail inside
//     its own node: directly when that rail's NIC hangs off its PCIe switch
//     (DGX: GPUs 2i and 2i+1 share a switch and NICs 2i, 2i+1), else, on
//     NVSwitch nodes, by an NVLink hop to the GPU of its node with the
//     destination's local index (NCCL's PXN). Within one SU the PXN path is
//     as short as any (8 links); across SUs it is two links longer than
//     crossing rails at the spines, which is what NCCL does and what keeps
//     the spines rail-aligned. Without NVSwitch, rails are crossed at the
//     spines.
//
// Equal-cost choices (which of a GPU's NICs, which spine, which core) are
// taken by ECMP on idx = hash + mix(src, dst): NIC offset idx mod k, spine
// slot (idx/k) mod spines, core (idx/k/spines) mod cores. The same (src,
// dst, hash) always gives the same route, hashes h, h+1, … of one pair visit
// every equal-cost path in turn, and the per-pair mix spreads flows that all
// use hash 0. Tests check every route is a connected chain and, on small
// clusters of every builder, that its length equals the breadth-first
// shortest distance (for PXN: shortest on each of its two segments).
//
// A deterministic BFS over a frozen CSR adjacency (neighbours sorted by id)
// serves the diameter and the tests. gonum/graph is used on demand only, to
// validate the graph (Validate: connected, no duplicate cables) and to
// export it (Graph, DOT); gonum's own path search is never used to route,
// since it breaks equal-cost ties in map order (go-notes.md §1b).
//
// # Summary
//
// Summary reports device and cable counts by kind and tier, the bisection
// bandwidth and the diameter. Bisection is the minimum cut, one direction,
// between the first and the second half of the ranks, computed exactly as a
// maximum flow (Dinic) on the graph. For multi-node clusters the halves are
// whole nodes, so it is the network's capacity across the middle tier: with
// N_h NICs on each side it is N_h·B_nic for a non-blocking fabric, and for
// P pods with oversubscription O it is (P/2)·(pod GPUs)·B_nic/O (Llama 3:
// 4 × 3072 × 50 GB/s / 7 = 87.8 TB/s). For one node or one NVL72 rack the cut
// also crosses the scale-up switch, (G/2)·B_scaleup, and whatever the NICs
// and PCIe add; NetworkBisection gives the NIC-only figure.
package topology
