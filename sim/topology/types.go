package topology

import (
	"sync"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/units"
)

// DeviceKind says what a vertex of the cluster graph is.
type DeviceKind uint8

const (
	KindGPU DeviceKind = iota
	KindNVSwitch
	KindPCIeSwitch
	KindNIC
	KindLeaf  // tier-1 switch (ToR / rail leaf)
	KindSpine // tier-2 switch
	KindCore  // tier-3 switch
	KindHost  // a node's CPU root complex, above its PCIe switches
)

var deviceKindNames = [...]string{"gpu", "nvswitch", "pcie-switch", "nic", "leaf", "spine", "core", "host"}

// String returns the lower-case name used in summaries ("gpu", "leaf", ...).
func (k DeviceKind) String() string {
	if int(k) < len(deviceKindNames) {
		return deviceKindNames[k]
	}
	return "unknown"
}

// LinkKind says what technology a link is.
type LinkKind uint8

const (
	LinkNVLink LinkKind = iota
	LinkXGMI
	LinkPCIe
	LinkNetwork // NIC-switch and switch-switch cables
)

var linkKindNames = [...]string{"nvlink", "xgmi", "pcie", "network"}

// String returns "nvlink", "xgmi", "pcie" or "network".
func (k LinkKind) String() string {
	if int(k) < len(linkKindNames) {
		return linkKindNames[k]
	}
	return "unknown"
}

// Device is one vertex.
type Device struct {
	Kind  DeviceKind
	Node  int32 // node (server) index, -1 for devices outside a node
	Local int32 // index within its node or tier
	Name  string
}

// Link is one direction of a full-duplex cable (Cluster.Links). Links[2k] and
// Links[2k+1] are the two directions of the same cable; Links[2k] points away
// from the GPUs
// (GPU→switch, NIC→leaf, leaf→spine, ...), Links[2k+1] back towards them.
//
// A link's latency (propagation + switching for the hop) is
// Cluster.Latencies()[id], the array sim/network reads; the record holds
// only what routing and the outputs read: 24 bytes a link (a 131,072-GPU
// cluster has 1.5 M).
type Link struct {
	From, To  int32                // device ids
	Bandwidth units.BytesPerSecond // line rate, this direction
	// Cables is how many physical cables this link stands for: parallel
	// cables between the same two switches are merged into one link of
	// summed bandwidth (see the package doc). 1 for every GPU, PCIe and
	// NIC link.
	Cables int32
	Kind   LinkKind // last, beside Cables, in the padding of an 8-byte word
}

// Spec describes a cluster to build (mirrors the scenario's cluster block).
type Spec struct {
	GPU string // a catalog GPU (hardware.GPUNames)
	// Hardware, when set, is the GPU itself (a record read from a file,
	// hardware.ParseGPU), used in place of the catalog's GPU.
	Hardware         *hardware.GPU
	Nodes            int
	GPUsPerNode      int     // 0: the GPU's default
	IntraNode        string  // "" = GPU default; nvswitch | pcie | nvlink-pairs | nvlink-mesh
	Network          string  // "" = rail-optimized; rail-optimized | fat-tree | clos | single-switch
	NIC              string  // "" = ib-ndr-400
	NICGbps          float64 // 0: catalog line rate
	NICsPerNode      int     // 0: GPUsPerNode
	Oversubscription float64 // above the pod; 0 or 1 = none; 7 means 1:7
	PodGPUs          int     // GPUs per full-bisection pod; 0 = whole cluster
	// Groups, when set, makes the cluster heterogeneous: consecutive node
	// ranges of different GPUs, in order (the first group holds nodes 0 …
	// Nodes₀−1). Nodes must equal the groups' sum and GPU/Hardware name the
	// first group's GPU, whose scale-up fabric every node shares (the groups
	// must agree on it). Empty: every node holds GPU.
	Groups []NodeGroup
}

// NodeGroup is one node range of a heterogeneous cluster (Spec.Groups).
type NodeGroup struct {
	GPU   hardware.GPU
	Nodes int
}

// SpecError is a validation error of a Spec. Field is the scenario path of
// the offending field ("cluster.gpus_per_node", "cluster.network.nic", ...)
// so that callers can map it to their own names (the CLI maps it to a flag).
type SpecError struct {
	Field string
	Msg   string
}

func (e *SpecError) Error() string { return e.Field + ": " + e.Msg }

// Cluster is a built, frozen cluster. Device and link ids are dense indices.
// A Cluster is never modified after Build, so it is safe to share between
// goroutines (sweeps run many simulations on one cluster); the tables made
// on first use (Links, Latencies, Devices, the adjacency) are made once,
// under a sync.Once, from what Build fixed.
type Cluster struct {
	Spec      Spec // with defaults filled in
	GPU       hardware.GPU
	NIC       hardware.NIC // with Spec.NICGbps applied
	GPUDevice []int32      // device id of GPU rank r (ranks are node-major: r = node*GPUsPerNode + local)
	// Groups are the cluster's node groups in node order: Spec.Groups, or
	// one group of every node holding GPU.
	Groups []NodeGroup

	l layout // shape, id bases and routing tables (build.go)

	bw []units.BytesPerSecond // Links()[i].Bandwidth, for sim/network

	// Made on first use, once (Links, Latencies, Devices).
	linksOnce, latOnce, devOnce sync.Once
	links                       []Link
	lat                         []engine.Time // link latencies (Latencies)
	devices                     []Device

	// Frozen CSR adjacency over directed links: the out-links of device v
	// are adjLink[adjStart[v]:adjStart[v+1]], sorted by neighbour id, then
	// link id. Built on first use (adjacency): only the topology summary
	// searches the graph, and a 131,072-GPU cluster's takes ~18 MB.
	adjOnce                  sync.Once
	adjStart, adjTo, adjLink []int32
}
