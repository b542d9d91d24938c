package topology

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/hugepages"
	"github.com/simtrain/simtrain/sim/units"
)

// Sizing constants of the switched network (package doc, "Network").
const (
	// switchRadix is the port count of every network switch: NVIDIA
	// Quantum-2 QM9700 has 64 × 400G NDR ports, Spectrum-4 SN5600 64 × 800GbE
	// (HF §5b). A leaf uses half its ports down and half up (non-blocking).
	switchRadix = 64
	leafUp      = switchRadix / 2
	// suNodes is the DGX SuperPOD scalable unit: 32 nodes (HF §6a, H100 RA
	// RA-11333-001 and B200 RA).
	suNodes = 32
	// podLeaves is the leaf count of one spine-leaf group of a three-tier
	// radix-64 fat tree: a spine has 32 ports down, so it reaches 32 leaves.
	podLeaves = switchRadix / 2
	// maxPods is how many spine-leaf groups radix-64 cores can join: a core
	// has 64 ports down and every group needs at least one of them.
	maxPods = switchRadix
	// closRackNodes is the Meta Llama 3 cluster's rack: 2 Grand Teton nodes
	// (16 GPUs) under one ToR (HF §6b, [KLOCK-META]).
	closRackNodes = 2
)

// Sanity bounds on a Spec, far above any real system, so that a typo cannot
// ask for gigabytes of graph.
const (
	maxGPUs        = 131072
	maxGPUsPerNode = 256
	maxNICsPerNode = 32
	maxNICGbps     = 100000
	maxOversub     = 1000
)

// Valid choices, in the order error messages list them.
var (
	intraNodeNames = []string{"nvswitch", "pcie", "nvlink-pairs", "nvlink-mesh"}
	networkNames   = []string{"rail-optimized", "fat-tree", "clos", "single-switch"}
)

// IntraNodeNames and NetworkNames list the values of Spec.IntraNode and
// Spec.Network (fresh slices).
func IntraNodeNames() []string { return append([]string(nil), intraNodeNames...) }
func NetworkNames() []string   { return append([]string(nil), networkNames...) }

type intraKind uint8

const (
	intraNVSwitch intraKind = iota
	intraPCIe
	intraPairs
	intraMesh
)

// meshBoardGPUs is the size of the directly linked board an nvlink-mesh
// node's GPUs sit on: NVIDIA ships SXM GPUs linked without NVSwitch only on
// 4-GPU HGX baseboards (A100/H100/H200; its 8-GPU baseboards carry
// NVSwitches: NVIDIA AI Enterprise docs, "NVIDIA NVSwitch", platform
// support), AMD an 8-GPU Infinity Fabric mesh (MI300X/MI325X platform, HF
// §5). A GPU's links are split evenly over its board peers, so a pair's
// cable carries scale_up_bandwidth/(board-1) even when a job holds fewer of
// the board's GPUs (gpus_per_node 2 on a 4-GPU board).
func meshBoardGPUs(gpu hardware.GPU) int {
	if gpu.ScaleUp == "xgmi" {
		return 8
	}
	return 4
}

type netKind uint8

const (
	netRail netKind = iota
	netFatTree
	netClos
	netSingle
)

// layout is everything the closed-form router and the summaries need: the
// shape of the cluster, where each device and cable kind starts in the
// dense id spaces, and a few small tables.
type layout struct {
	nodes, g, n, gpus int // nodes, GPUs per node, NICs per node, GPUs
	intra             intraKind
	net               netKind
	scaleUpKind       LinkKind

	gpusPerSwitch int // GPUs under one PCIe switch
	psw           int // PCIe switches per node
	nicPerGPU     int // NICs owned by each GPU (n >= g), else 1
	gpuPerNIC     int // GPUs sharing one NIC (n < g), else 1
	nicSwitch     []int32

	domainNodes, domains int
	pxn                  bool

	// Switched network. Leaves are grouped into pods of leavesPerPod
	// consecutive leaves; each pod has `spines` spines (slot j of every
	// leaf of the pod goes to the pod's spine j); spine slot j of every
	// pod belongs to plane j, whose `cores` cores it reaches with one
	// link each.
	leaves, leavesPerPod, pods, spines, cores int
	leafNodes                                 int     // nodes spanned by one leaf group (SU, ToR group)
	nicLeaf                                   []int32 // global NIC index → leaf
	tiers                                     int     // switch tiers: 1 (leaf only), 2, 3

	// First device id of each kind.
	dPSW, dHost, dNIC, dNVS, dLeaf, dSpine, dCore int32
	// First cable index of each kind (cable k = links 2k, 2k+1).
	cUp, cGPUPCIe, cPCIeHost, cPCIeNIC, cNICLeaf, cLeafSpine, cSpineCore int32
	// Devices, cables and NVSwitch (or XGMI) devices (construct).
	nDev, nCab, nvsDevices int
	// The least bandwidth of the links of each kind, where the cluster
	// has any (MinBandwidth).
	minBW   [len(linkKindNames)]units.BytesPerSecond
	hasKind [len(linkKindNames)]bool
}

// Build validates s, fills defaults and builds the cluster. Errors are
// *SpecError values naming the field. Build is deterministic: the same Spec
// gives the same devices, links and routes.
func Build(s Spec) (*Cluster, error) {
	c := &Cluster{}
	if err := c.resolve(s); err != nil {
		return nil, err
	}
	c.construct()
	return c, nil
}

func specErr(field, format string, args ...any) error {
	return &SpecError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// resolve validates s, fills c.Spec, c.GPU, c.NIC and the shape in c.l.
func (c *Cluster) resolve(s Spec) error {
	var gpu hardware.GPU
	if s.Hardware != nil {
		gpu = *s.Hardware
		s.GPU = gpu.Name
	} else {
		g, err := hardware.LookupGPU(s.GPU)
		if err != nil {
			return &SpecError{Field: "cluster.gpu", Msg: err.Error()}
		}
		gpu = g
	}
	if s.Nodes <= 0 {
		return specErr("cluster.nodes", "must be > 0, got %d", s.Nodes)
	}
	if s.GPUsPerNode < 0 || s.GPUsPerNode > maxGPUsPerNode {
		return specErr("cluster.gpus_per_node", "must be between 1 and %d (0 = the GPU's default %d), got %d", maxGPUsPerNode, gpu.DefaultGPUsPerNode, s.GPUsPerNode)
	}
	if s.GPUsPerNode == 0 {
		s.GPUsPerNode = gpu.DefaultGPUsPerNode
	}
	if s.IntraNode == "" {
		s.IntraNode = gpu.DefaultIntraNode
	}
	l := &c.l
	switch s.IntraNode {
	case "nvswitch":
		if gpu.ScaleUp != "nvlink" && gpu.ScaleUp != "xgmi" {
			return specErr("cluster.intra_node", "nvswitch needs a GPU with NVLink or XGMI; %s has %s (valid for %s: %s)", gpu.Name, gpu.ScaleUp, gpu.Name, validIntra(gpu))
		}
		l.intra = intraNVSwitch
	case "pcie":
		l.intra = intraPCIe
	case "nvlink-pairs":
		if gpu.ScaleUp != "nvlink-bridge" {
			return specErr("cluster.intra_node", "nvlink-pairs needs a GPU with NVLink bridges; %s has %s (valid for %s: %s)", gpu.Name, gpu.ScaleUp, gpu.Name, validIntra(gpu))
		}
		if s.GPUsPerNode%2 != 0 {
			return specErr("cluster.gpus_per_node", "nvlink-pairs needs an even GPU count, got %d", s.GPUsPerNode)
		}
		l.intra = intraPairs
	case "nvlink-mesh":
		if gpu.ScaleUp != "nvlink" && gpu.ScaleUp != "xgmi" {
			return specErr("cluster.intra_node", "nvlink-mesh needs a GPU with NVLink or XGMI; %s has %s (valid for %s: %s)", gpu.Name, gpu.ScaleUp, gpu.Name, validIntra(gpu))
		}
		if b := meshBoardGPUs(gpu); s.GPUsPerNode < 2 || s.GPUsPerNode > b {
			return specErr("cluster.gpus_per_node", "nvlink-mesh links the GPUs of a %d-GPU %s board directly: 2 to %d GPUs, got %d", b, gpu.Name, b, s.GPUsPerNode)
		}
		l.intra = intraMesh
	default:
		return specErr("cluster.intra_node", "unknown value %q (valid: %s)", s.IntraNode, strings.Join(intraNodeNames, ", "))
	}
	if gpu.ScaleUp == "xgmi" {
		l.scaleUpKind = LinkXGMI
	}
	g := s.GPUsPerNode
	rackScale := gpu.DomainGPUs > gpu.DefaultGPUsPerNode
	l.domainNodes = 1
	if l.intra == intraNVSwitch && rackScale {
		if gpu.DomainGPUs%g != 0 {
			return specErr("cluster.gpus_per_node", "%d does not divide the %d-GPU NVLink domain of %s", g, gpu.DomainGPUs, gpu.Name)
		}
		l.domainNodes = gpu.DomainGPUs / g
	}
	if int64(s.Nodes)*int64(g) > maxGPUs {
		return specErr("cluster.nodes", "%d nodes × %d GPUs is more than the %d GPUs simtrain builds", s.Nodes, g, maxGPUs)
	}

	if s.Network == "" {
		s.Network = "rail-optimized"
	}
	switch s.Network {
	case "rail-optimized":
		l.net = netRail
	case "fat-tree":
		l.net = netFatTree
	case "clos":
		l.net = netClos
	case "single-switch":
		l.net = netSingle
	default:
		return specErr("cluster.network.kind", "unknown value %q (valid: %s)", s.Network, strings.Join(networkNames, ", "))
	}
	if s.NIC == "" {
		s.NIC = "ib-ndr-400"
	}
	nic, err := hardware.LookupNIC(s.NIC)
	if err != nil {
		return &SpecError{Field: "cluster.network.nic", Msg: err.Error()}
	}
	if math.IsNaN(s.NICGbps) || s.NICGbps < 0 || s.NICGbps > maxNICGbps {
		return specErr("cluster.network.nic_gbps", "must be between 0 and %d Gb/s (0 = the catalog's %g), got %g", maxNICGbps, nic.Gbps, s.NICGbps)
	}
	if s.NICGbps == 0 {
		s.NICGbps = nic.Gbps
	}
	nic.Gbps = s.NICGbps
	nic.Bandwidth = units.BytesPerSecond(s.NICGbps * 1e9 / 8)
	if s.NICsPerNode < 0 || s.NICsPerNode > maxNICsPerNode {
		return specErr("cluster.network.nics_per_node", "must be between 1 and %d (0 = gpus_per_node), got %d", maxNICsPerNode, s.NICsPerNode)
	}
	if s.NICsPerNode == 0 {
		// One NIC per GPU, or for very wide nodes the largest divisor of
		// the GPU count that fits the bound.
		s.NICsPerNode = g
		for s.NICsPerNode > maxNICsPerNode || g%s.NICsPerNode != 0 {
			s.NICsPerNode--
		}
	}
	n := s.NICsPerNode
	if g%n != 0 && n%g != 0 {
		return specErr("cluster.network.nics_per_node", "%d must divide or be a multiple of gpus_per_node %d", n, g)
	}
	if math.IsNaN(s.Oversubscription) || s.Oversubscription < 0 || (s.Oversubscription > 0 && s.Oversubscription < 1) || s.Oversubscription > maxOversub {
		return specErr("cluster.network.oversubscription", "must be >= 1 (7 means 1:7; 0 = 1), got %g", s.Oversubscription)
	}
	if s.Oversubscription == 0 {
		s.Oversubscription = 1
	}
	if s.PodGPUs < 0 {
		return specErr("cluster.network.pod_gpus", "must be >= 0 (0 = whole cluster), got %d", s.PodGPUs)
	}

	l.nodes, l.g, l.n, l.gpus = s.Nodes, g, n, s.Nodes*g
	l.domains = (l.nodes + l.domainNodes - 1) / l.domainNodes
	// A rack-scale cluster that does not fill its racks is spread evenly
	// over the fewest racks that hold it (128 GB300s: two NVL72 racks of
	// 16 trays = 64 GPUs, not 72 + 56), as rack-scale jobs are placed in
	// equal blocks of trays (the Megatron-LM MoE recipes run EP 64 inside
	// each rack of a 128-GPU GB300 job). The racks keep their size; only
	// the trays in use are built.
	if l.domains > 1 {
		l.domainNodes = (l.nodes + l.domains - 1) / l.domains
	}
	l.nicPerGPU, l.gpuPerNIC = 1, 1
	if n >= g {
		l.nicPerGPU = n / g
	} else {
		l.gpuPerNIC = g / n
	}
	// PCIe: two GPUs per switch as on DGX/HGX boards, or one switch per NIC
	// when NICs are fewer than that, so every GPU shares a switch with its
	// own NIC(s).
	l.gpusPerSwitch = 2
	if l.gpuPerNIC > 2 {
		l.gpusPerSwitch = l.gpuPerNIC
	}
	l.psw = (g + l.gpusPerSwitch - 1) / l.gpusPerSwitch
	l.nicSwitch = make([]int32, n)
	for m := range n {
		owner := m * g / n // first GPU served by NIC m (n < g) or its owner (n >= g)
		if n >= g {
			owner = m / l.nicPerGPU
		}
		l.nicSwitch[m] = int32(owner / l.gpusPerSwitch)
	}
	// PXN needs an NVLink path to the peer on the destination's rail: through
	// the NVSwitch, or on a mesh the direct pair link.
	l.pxn = l.net == netRail && (l.intra == intraNVSwitch || l.intra == intraMesh) && gpu.ScaleUp == "nvlink"

	if err := l.shapeNetwork(&s); err != nil {
		return err
	}
	if err := c.resolveGroups(&s, gpu); err != nil {
		return err
	}
	c.Spec, c.GPU, c.NIC = s, gpu, nic
	return nil
}

// resolveGroups checks Spec.Groups against the cluster's shape and fills
// c.Groups. Every node of a heterogeneous cluster sits on the same scale-up
// fabric and the same NICs, so the groups must agree on what builds it:
// scale-up kind, bandwidth and domain size.
func (c *Cluster) resolveGroups(s *Spec, gpu hardware.GPU) error {
	if len(s.Groups) == 0 {
		c.Groups = []NodeGroup{{GPU: gpu, Nodes: s.Nodes}}
		return nil
	}
	n := 0
	for i, g := range s.Groups {
		if g.Nodes < 1 {
			return specErr("cluster.node_groups", "group %d (%s): nodes must be >= 1, got %d", i, g.GPU.Name, g.Nodes)
		}
		if !SameNodeFabric(gpu, g.GPU) {
			return specErr("cluster.node_groups", "group %d: %s's scale-up (%s, %d-GPU domain) differs from %s's (%s, %d-GPU domain); the groups share one node fabric",
				i, g.GPU.Name, g.GPU.ScaleUp, g.GPU.DomainGPUs, gpu.Name, gpu.ScaleUp, gpu.DomainGPUs)
		}
		n += g.Nodes
	}
	if n != s.Nodes {
		return specErr("cluster.node_groups", "the groups hold %d nodes, the cluster %d", n, s.Nodes)
	}
	c.Groups = slices.Clone(s.Groups)
	return nil
}

// SameNodeFabric reports whether nodes of GPU b can sit in a cluster built
// for GPU a's nodes: the same scale-up kind, bandwidth, domain and node
// size, NVLink SHARP and PCIe links (H100 SXM and H200 share the HGX
// board's NVLink4 switch system and PCIe Gen5).
func SameNodeFabric(a, b hardware.GPU) bool {
	return a.ScaleUp == b.ScaleUp && a.ScaleUpBandwidth == b.ScaleUpBandwidth && a.ScaleUpLinks == b.ScaleUpLinks &&
		a.DomainGPUs == b.DomainGPUs && a.DefaultGPUsPerNode == b.DefaultGPUsPerNode && a.DefaultIntraNode == b.DefaultIntraNode &&
		a.NVLS == b.NVLS && a.PCIeBandwidth == b.PCIeBandwidth && a.PCIeLatency == b.PCIeLatency
}

// GPUOf is the GPU of rank r: its node group's (c.GPU on a homogeneous
// cluster).
func (c *Cluster) GPUOf(r int) *hardware.GPU {
	if len(c.Groups) < 2 {
		return &c.GPU
	}
	return &c.Groups[c.GroupOf(r)].GPU
}

// GroupOf is the index in Groups of the node group holding GPU rank r.
func (c *Cluster) GroupOf(r int) int {
	if len(c.Groups) == 1 {
		return 0 // the loop's answer without its division (a call per pipeline send pair for links.arrow)
	}
	node := r / c.l.g
	for i, g := range c.Groups {
		if node < g.Nodes {
			return i
		}
		node -= g.Nodes
	}
	return len(c.Groups) - 1
}

func validIntra(g hardware.GPU) string {
	switch g.ScaleUp {
	case "nvlink", "xgmi":
		return "nvswitch, pcie, nvlink-mesh"
	case "nvlink-bridge":
		return "nvlink-pairs, pcie"
	}
	return "pcie"
}

// meshPairs is the number of GPU pairs of a g-GPU nvlink-mesh node, one
// cable each.
func meshPairs(g int) int { return g * (g - 1) / 2 }

// meshPair is the index among a node's mesh cables of the cable between its
// local GPUs i < j (pairs enumerated (0,1), (0,2), …, (0,g-1), (1,2), …).
func meshPair(g, i, j int) int { return i*(2*g-i-1)/2 + j - i - 1 }

func nextPow2(x int) int {
	if x <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(x-1))
}

// shapeNetwork decides leaves, pods, spines and cores (package doc).
func (l *layout) shapeNetwork(s *Spec) error {
	// Leaf assignment.
	switch l.net {
	case netRail:
		l.leafNodes = suNodes
		l.leaves = (l.nodes + suNodes - 1) / suNodes * l.n
	case netFatTree:
		l.leafNodes = max(1, leafUp/l.n)
		l.leaves = (l.nodes + l.leafNodes - 1) / l.leafNodes
	case netClos:
		l.leafNodes = closRackNodes
		l.leaves = (l.nodes + closRackNodes - 1) / closRackNodes
	case netSingle:
		l.leafNodes = l.nodes
		l.leaves = 1
	}
	l.nicLeaf = make([]int32, l.nodes*l.n)
	for node := range l.nodes {
		for m := range l.n {
			var leaf int
			switch l.net {
			case netRail:
				leaf = node/suNodes*l.n + m
			case netSingle:
				leaf = 0
			default:
				leaf = node / l.leafNodes
			}
			l.nicLeaf[node*l.n+m] = int32(leaf)
		}
	}

	over := s.Oversubscription
	if l.net == netSingle {
		if s.PodGPUs != 0 && s.PodGPUs != l.gpus {
			return specErr("cluster.network.pod_gpus", "single-switch has no pods (use 0), got %d", s.PodGPUs)
		}
		if over != 1 {
			return specErr("cluster.network.oversubscription", "single-switch has no tier above its leaf (use 1), got %g", over)
		}
		l.leavesPerPod, l.pods, l.tiers = 1, 1, 1
		return nil
	}
	upPorts := leafUp // uplinks per leaf
	if l.net == netClos {
		upPorts = closRackNodes * l.n // a ToR is 1:1 (Meta: full bisection inside a pod)
	}

	if s.PodGPUs > 0 {
		if s.PodGPUs > l.gpus {
			return specErr("cluster.network.pod_gpus", "%d exceeds the cluster's %d GPUs", s.PodGPUs, l.gpus)
		}
		if s.PodGPUs%l.g != 0 {
			return specErr("cluster.network.pod_gpus", "%d must be a multiple of gpus_per_node %d", s.PodGPUs, l.g)
		}
		podNodes := s.PodGPUs / l.g
		if podNodes != l.nodes && podNodes%l.leafNodes != 0 {
			return specErr("cluster.network.pod_gpus", "%d must be a multiple of %d GPUs (the %d nodes under one %s leaf)", s.PodGPUs, l.leafNodes*l.g, l.leafNodes, s.Network)
		}
		if podNodes == l.nodes && over != 1 {
			return specErr("cluster.network.oversubscription", "%g has no tier to apply to: pod_gpus %d is the whole cluster", over, s.PodGPUs)
		}
		// A cluster need not be a whole number of pods: the Llama 3 405B
		// run used 16,384 GPUs of 3,072-GPU pods, so the last pod is
		// partial (fewer leaves, and proportionally less uplink).
		l.pods = (l.nodes + podNodes - 1) / podNodes
		l.leavesPerPod = podNodes / l.leafNodes
		if l.net == netRail {
			l.leavesPerPod *= l.n
		}
		if podNodes == l.nodes {
			l.leavesPerPod = l.leaves
		}
		l.spines = upPorts
		if l.pods > 1 {
			l.cores = 1
		}
	} else {
		switch {
		case l.leaves == 1:
			l.leavesPerPod, l.pods = 1, 1
		case l.net == netClos:
			l.leavesPerPod, l.pods, l.spines = l.leaves, 1, upPorts
		case l.leaves <= switchRadix:
			// Two tiers sized like the SuperPOD tables (HF §6a): spines =
			// leaves/2 for a power-of-two leaf count, each leaf spreading
			// its 32 uplinks evenly over them.
			l.leavesPerPod, l.pods = l.leaves, 1
			l.spines = nextPow2(l.leaves) / 2
		default:
			l.leavesPerPod = podLeaves
			l.pods = (l.leaves + podLeaves - 1) / podLeaves
			if nextPow2(l.pods) > maxPods {
				return specErr("cluster.nodes", "%d nodes need %d leaves, more than a three-tier fabric of %d-port switches joins (%d); set cluster.network.pod_gpus to build it from pods",
					l.nodes, l.leaves, switchRadix, maxPods*podLeaves)
			}
			l.spines = podLeaves
			l.cores = nextPow2(l.pods) / 2
		}
	}
	if over != 1 && l.spines == 0 {
		return specErr("cluster.network.oversubscription", "%g has no tier to apply to: the network is a single leaf", over)
	}
	l.tiers = 1
	if l.spines > 0 {
		l.tiers = 2
	}
	if l.cores > 0 {
		l.tiers = 3
	}
	return nil
}

// construct lays out devices and cables (the adjacency is built on first use).
func (c *Cluster) construct() {
	l := &c.l
	nScaleUp := 0
	nvsDevices := 0
	switch l.intra {
	case intraNVSwitch:
		nScaleUp = l.gpus
		nvsDevices = l.domains
	case intraPairs:
		nScaleUp = l.nodes * l.g / 2
	case intraMesh:
		nScaleUp = l.nodes * meshPairs(l.g)
	}
	nics := l.nodes * l.n
	spines := l.pods * l.spines
	cores := l.spines * l.cores

	// Device ids: GPUs first, so that device id == rank.
	l.dPSW = int32(l.gpus)
	l.dHost = l.dPSW + int32(l.nodes*l.psw)
	l.dNIC = l.dHost + int32(l.nodes)
	l.dNVS = l.dNIC + int32(nics)
	l.dLeaf = l.dNVS + int32(nvsDevices)
	l.dSpine = l.dLeaf + int32(l.leaves)
	l.dCore = l.dSpine + int32(spines)
	nDev := int(l.dCore) + cores

	// Cable indices.
	l.cUp = 0
	l.cGPUPCIe = int32(nScaleUp)
	l.cPCIeHost = l.cGPUPCIe + int32(l.gpus)
	l.cPCIeNIC = l.cPCIeHost + int32(l.nodes*l.psw)
	l.cNICLeaf = l.cPCIeNIC + int32(nics)
	l.cLeafSpine = l.cNICLeaf + int32(nics)
	l.cSpineCore = l.cLeafSpine + int32(l.leaves*l.spines)
	nCab := int(l.cSpineCore) + spines*l.cores
	l.nDev, l.nCab, l.nvsDevices = nDev, nCab, nvsDevices

	// The dense bandwidths are what every run reads (routing, the
	// pricer's contention, the runner's inflation); the link records, the
	// latencies and the devices with their names are made on first use
	// (Links, Latencies, Devices): a run that writes no links.arrow and
	// plays no fabric never reads them, ≈ 60 MB of fresh memory at 131,072
	// GPUs (issue 18).
	c.bw = hugepages.Advise(make([]units.BytesPerSecond, 2*nCab))
	c.GPUDevice = make([]int32, l.gpus)
	for r := range l.gpus {
		c.GPUDevice[r] = int32(r)
	}
	c.wire(wireBandwidths)
}

// buildDevices makes c.devices and their names (Devices), in the order
// construct numbered them.
func (c *Cluster) buildDevices() {
	l := &c.l
	nDev, nvsDevices, spines, cores := l.nDev, l.nvsDevices, l.pods*l.spines, l.spines*l.cores
	c.devices = hugepages.Advise(make([]Device, 0, nDev))
	// Names are written into one buffer and cut from one string at the
	// end: a handful of allocations for all of them instead of two per
	// device (a 131,072-GPU cluster has ~360,000 devices).
	names := make([]byte, 0, 14*nDev) // "n16383/gpu7" is 11 bytes
	nameEnd := make([]int32, 0, nDev)
	dev := func(k DeviceKind, node, local int) {
		c.devices = append(c.devices, Device{Kind: k, Node: int32(node), Local: int32(local)})
		nameEnd = append(nameEnd, int32(len(names)))
	}
	nodeName := func(node int) {
		names = append(names, 'n')
		names = strconv.AppendInt(names, int64(node), 10)
		names = append(names, '/')
	}
	for r := range l.gpus {
		nodeName(r / l.g)
		names = strconv.AppendInt(append(names, "gpu"...), int64(r%l.g), 10)
		dev(KindGPU, r/l.g, r%l.g)
	}
	for node := range l.nodes {
		for s := range l.psw {
			nodeName(node)
			names = strconv.AppendInt(append(names, "pcie"...), int64(s), 10)
			dev(KindPCIeSwitch, node, s)
		}
	}
	for node := range l.nodes {
		nodeName(node)
		names = append(names, "host"...)
		dev(KindHost, node, 0)
	}
	for node := range l.nodes {
		for m := range l.n {
			nodeName(node)
			names = strconv.AppendInt(append(names, "nic"...), int64(m), 10)
			dev(KindNIC, node, m)
		}
	}
	nvsName := "nvswitch"
	if l.scaleUpKind == LinkXGMI {
		nvsName = "xgmi"
	}
	for d := range nvsDevices {
		names = strconv.AppendInt(append(names, "domain"...), int64(d), 10)
		names = append(append(names, '/'), nvsName...)
		dev(KindNVSwitch, -1, d)
	}
	for i := range l.leaves {
		names = strconv.AppendInt(append(names, "leaf"...), int64(i), 10)
		dev(KindLeaf, -1, i)
	}
	for i := range spines {
		names = strconv.AppendInt(append(names, "spine"...), int64(i), 10)
		dev(KindSpine, -1, i)
	}
	for i := range cores {
		names = strconv.AppendInt(append(names, "core"...), int64(i), 10)
		dev(KindCore, -1, i)
	}
	all, from := string(names), int32(0)
	for i, end := range nameEnd {
		c.devices[i].Name = all[from:end]
		from = end
	}
}

// What a pass over the cables (wire) writes.
const (
	wireBandwidths = iota // c.bw
	wireLatencies         // c.lat
	wireRecords           // c.links
)

// wire walks the cluster's cables in link-id order and writes, for each,
// one of its arrays (what): every array is cut from the same walk, so a
// link's bandwidth, latency and record agree whichever is made first.
func (c *Cluster) wire(what int) {
	l := &c.l
	gpu := c.GPU
	nics := l.nodes * l.n
	spines := l.pods * l.spines
	pcieBW, pcieLat := float64(gpu.PCIeBandwidth), engine.Time(gpu.PCIeLatency)
	scaleUpBW, scaleUpLat := float64(gpu.ScaleUpBandwidth), engine.Time(gpu.ScaleUpLatency)
	rate := float64(c.NIC.Bandwidth)
	netLat := engine.Time(c.NIC.Latency)
	next := 0 // link id of the next cable's first direction
	cable := func(from, to int32, k LinkKind, bw float64, lat engine.Time, cables int32) {
		b := units.BytesPerSecond(bw)
		switch what {
		case wireBandwidths:
			c.bw[next], c.bw[next+1] = b, b
			if !c.l.hasKind[k] || b < c.l.minBW[k] {
				c.l.minBW[k], c.l.hasKind[k] = b, true
			}
		case wireLatencies:
			c.lat[next], c.lat[next+1] = lat, lat
		default:
			ls := c.links[next : next+2 : next+2]
			ls[0] = Link{From: from, To: to, Kind: k, Bandwidth: b, Cables: cables}
			ls[1] = Link{From: to, To: from, Kind: k, Bandwidth: b, Cables: cables}
		}
		next += 2
	}
	// Scale-up.
	switch l.intra {
	case intraNVSwitch:
		for r := range l.gpus {
			cable(int32(r), l.dNVS+int32(r/l.g/l.domainNodes), l.scaleUpKind, scaleUpBW, scaleUpLat, 1)
		}
	case intraPairs:
		for r := 0; r < l.gpus; r += 2 {
			cable(int32(r), int32(r+1), LinkNVLink, scaleUpBW, scaleUpLat, 1)
		}
	case intraMesh:
		// Every GPU's links are split evenly over its board peers: on a
		// 4-GPU HGX H100/H200 board each pair shares 6 of the GPU's 18
		// NVLink4 links, 150 GB/s per direction (doc.go, nvlink-mesh).
		// Cable order: node-major, then pairs (i, j), i < j, in meshPair
		// order.
		pairBW := scaleUpBW / float64(meshBoardGPUs(gpu)-1)
		for node := range l.nodes {
			base := node * l.g
			for i := range l.g {
				for j := i + 1; j < l.g; j++ {
					cable(int32(base+i), int32(base+j), l.scaleUpKind, pairBW, scaleUpLat, 1)
				}
			}
		}
	}
	// GPU ↔ PCIe switch.
	for r := range l.gpus {
		node, local := r/l.g, r%l.g
		cable(int32(r), l.dPSW+int32(node*l.psw+local/l.gpusPerSwitch), LinkPCIe, pcieBW, pcieLat, 1)
	}
	// PCIe switch ↔ host.
	for node := range l.nodes {
		for s := range l.psw {
			cable(l.dPSW+int32(node*l.psw+s), l.dHost+int32(node), LinkPCIe, pcieBW, pcieLat, 1)
		}
	}
	// PCIe switch ↔ NIC.
	for node := range l.nodes {
		for m := range l.n {
			cable(l.dPSW+int32(node*l.psw)+l.nicSwitch[m], l.dNIC+int32(node*l.n+m), LinkPCIe, pcieBW, pcieLat, 1)
		}
	}
	// NIC ↔ leaf.
	for i := range nics {
		cable(l.dNIC+int32(i), l.dLeaf+l.nicLeaf[i], LinkNetwork, rate, netLat, 1)
	}
	// Leaf ↔ spine.
	if l.spines > 0 {
		cables := leafUp / l.spines // default two-tier sizing
		if c.Spec.PodGPUs > 0 || l.net == netClos || l.pods > 1 {
			cables = 1
		}
		bw := float64(cables) * rate
		if c.Spec.PodGPUs == 0 { // oversubscription above the leaf
			bw /= c.Spec.Oversubscription
		}
		cc := cableCount(bw, rate)
		for leaf := range l.leaves {
			pod := leaf / l.leavesPerPod
			for j := range l.spines {
				cable(l.dLeaf+int32(leaf), l.dSpine+int32(pod*l.spines+j), LinkNetwork, bw, netLat, cc)
			}
		}
	}
	// Spine ↔ core.
	if l.cores > 0 {
		var bw float64
		if c.Spec.PodGPUs > 0 {
			// One logical core per plane; above the pod the spine carries
			// 1/oversubscription of what it receives from the pod's leaves.
			bw = float64(l.leavesPerPod) * rate / c.Spec.Oversubscription
		} else {
			// Radix-64 three-tier: each spine's 32 uplinks spread evenly
			// over its plane's cores.
			bw = float64(leafUp/l.cores) * rate
		}
		for sp := range spines {
			plane := sp % l.spines
			spBW := bw
			if c.Spec.PodGPUs > 0 {
				// A partial last pod has fewer leaves below its spines.
				pod := sp / l.spines
				inPod := min(l.leavesPerPod, l.leaves-pod*l.leavesPerPod)
				spBW = bw * float64(inPod) / float64(l.leavesPerPod)
			}
			cc := cableCount(spBW, rate)
			for m := range l.cores {
				cable(l.dSpine+int32(sp), l.dCore+int32(plane*l.cores+m), LinkNetwork, spBW, netLat, cc)
			}
		}
	}
}

// cableCount is the number of physical cables of line rate `rate` that a
// link of bandwidth bw stands for (rounded up; oversubscribed tiers are
// modelled at their exact ratio).
func cableCount(bw, rate float64) int32 {
	return int32(max(1, math.Ceil(bw/rate-1e-9)))
}

// NumGPUs is the number of GPU ranks.
func (c *Cluster) NumGPUs() int { return c.l.gpus }

// Nodes is the number of nodes (servers, or compute trays for NVL72).
func (c *Cluster) Nodes() int { return c.l.nodes }

// GPUsPerNode is the number of GPUs in every node.
func (c *Cluster) GPUsPerNode() int { return c.l.g }

// NICsPerNode is the number of scale-out NICs in every node.
func (c *Cluster) NICsPerNode() int { return c.l.n }

// NodeOf is the node (server) index of GPU rank r.
func (c *Cluster) NodeOf(r int) int { return r / c.l.g }

// DomainOf is the scale-up (NVLink) domain of GPU rank r: GPUs in one domain
// talk over NVLink/NVSwitch (or PCIe, for PCIe-only nodes); between domains
// traffic goes through NICs. For HGX nodes a domain is a node; for NVL72 it
// is a rack of up to 72 GPUs (18 trays of 4): a cluster that does not fill
// whole racks is spread over the fewest racks that hold it, the first racks
// taking ceil(trays/racks) trays each (36 trays: 18 + 18; 32: 16 + 16; 25:
// 13 + 12).
func (c *Cluster) DomainOf(r int) int { return r / c.l.g / c.l.domainNodes }

// Domains is the number of scale-up domains.
func (c *Cluster) Domains() int { return c.l.domains }

// NVLS reports whether the cluster's GPUs sit on an NVSwitch with NVLink
// SHARP (in-switch reduction): the GPU supports it and intra_node is nvswitch.
func (c *Cluster) NVLS() bool { return c.GPU.NVLS && c.l.intra == intraNVSwitch }

// MeshNode reports whether the GPUs of a node are linked pairwise by direct
// NVLink/XGMI cables (intra_node nvlink-mesh), each carrying 1/(g-1) of a
// GPU's scale-up bandwidth.
func (c *Cluster) MeshNode() bool { return c.l.intra == intraMesh }

// NICBandwidthPerGPU is the scale-out line rate available to one GPU, bytes/s
// per direction (nics_per_node * nic bandwidth / gpus_per_node).
func (c *Cluster) NICBandwidthPerGPU() units.BytesPerSecond {
	return units.BytesPerSecond(float64(c.l.n) * float64(c.NIC.Bandwidth) / float64(c.l.g))
}

// Bandwidths returns the per-directed-link line rates (bytes/s) indexed by
// link id, for sim/network. The slice is shared: callers must not modify it.
func (c *Cluster) Bandwidths() []units.BytesPerSecond { return c.bw }

// Latencies returns the per-directed-link latencies indexed by link id, for
// sim/network. The slice is shared: callers must not modify it. It is made
// on the first call (a run that plays no fabric never reads it).
func (c *Cluster) Latencies() []engine.Time {
	c.latOnce.Do(func() {
		c.lat = hugepages.Advise(make([]engine.Time, len(c.bw)))
		c.wire(wireLatencies)
	})
	return c.lat
}

// Links returns the cluster's directed links indexed by link id (see
// Link). The slice is shared: callers must not modify it. It is made on
// the first call: routing, pricing and playing read Bandwidths and
// LinkKindOf instead, so a run that writes no links.arrow never makes the
// 24-byte records (35 MB at 131,072 GPUs; issue 18).
func (c *Cluster) Links() []Link {
	c.linksOnce.Do(func() {
		c.links = hugepages.Advise(make([]Link, len(c.bw)))
		c.wire(wireRecords)
	})
	return c.links
}

// MinBandwidth is the least bandwidth (Bandwidths) of the cluster's links
// of kind k; ok is false where the cluster has none. Callers bound what a
// route's links of a kind can carry without walking the route.
func (c *Cluster) MinBandwidth(k LinkKind) (bw units.BytesPerSecond, ok bool) {
	if int(k) >= len(c.l.minBW) || !c.l.hasKind[k] {
		return 0, false
	}
	return c.l.minBW[k], true
}

// NumLinks is len(Links()) without making the records.
func (c *Cluster) NumLinks() int { return len(c.bw) }

// Devices returns the cluster's devices indexed by device id: GPUs first
// (device id == rank), then PCIe switches, hosts, NICs, NVSwitches (or
// XGMI), leaves, spines and cores. The slice is shared: callers must not
// modify it. It is made, with every device's name, on the first call (only
// links.arrow, the topology summary and the graph read it; 360,000
// devices at 131,072 GPUs).
func (c *Cluster) Devices() []Device {
	c.devOnce.Do(c.buildDevices)
	return c.devices
}

// LinkKindOf is Links[id].Kind found from the id alone: cables are laid out
// kind by kind (scale-up, then the GPUs', hosts' and NICs' PCIe, then the
// network's), so a loop over a route that reads bandwidths from the dense
// Bandwidths array need not read each link's 24-byte record as well (at
// 131,072 GPUs the records are 36 MB; issue 18). id must be a link of c.
func (c *Cluster) LinkKindOf(id int32) LinkKind {
	l := &c.l
	switch cab := id >> 1; {
	case cab < l.cGPUPCIe:
		if l.intra == intraPairs {
			return LinkNVLink // a bridge, whatever the GPU's scale-up kind
		}
		return l.scaleUpKind
	case cab < l.cNICLeaf:
		return LinkPCIe
	}
	return LinkNetwork
}
