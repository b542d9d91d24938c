package topology

// Summary describes a built cluster: what was asked for (with defaults
// filled in), what was built, and the figures that characterise it. JSON
// keys are snake_case with units.
type Summary struct {
	GPU              string  `json:"gpu"`
	NIC              string  `json:"nic"`
	IntraNode        string  `json:"intra_node"`
	Network          string  `json:"network"`
	Nodes            int     `json:"nodes"`
	GPUsPerNode      int     `json:"gpus_per_node"`
	GPUs             int     `json:"gpus"`
	NICsPerNode      int     `json:"nics_per_node"`
	NICGbps          float64 `json:"nic_gbps"`
	Oversubscription float64 `json:"oversubscription"`
	PodGPUs          int     `json:"pod_gpus"` // 0 = whole cluster
	Domains          int     `json:"domains"`  // scale-up (NVLink) domains
	DomainGPUs       int     `json:"domain_gpus"`
	Pods             int     `json:"pods"`          // spine-leaf groups of the network
	NetworkTiers     int     `json:"network_tiers"` // switch tiers: 1 leaf, 2 leaf-spine, 3 leaf-spine-core

	Devices []DeviceCount `json:"devices"`
	Links   []LinkCount   `json:"links"`

	// ScaleUpBytesPerSPerGPU is one GPU's NVLink/XGMI line rate (0 without).
	ScaleUpBytesPerSPerGPU float64 `json:"scale_up_bytes_per_s_per_gpu"`
	// ScaleOutBytesPerSPerGPU is NICBandwidthPerGPU.
	ScaleOutBytesPerSPerGPU float64 `json:"scale_out_bytes_per_s_per_gpu"`
	// BisectionBytesPerS is the minimum-cut capacity, one direction, between
	// the first and the second half of the GPU ranks over every link of the
	// graph (NVLink, PCIe and network alike): the maximum flow from one half
	// to the other. Ranks are node-major and the network is laid out in rank
	// order, so this halving cuts along the tiers (whole SUs, pods, leaf
	// groups), the narrow place of these tree-shaped networks. With an odd
	// node count the middle node is split and its NVLink crosses the cut.
	BisectionBytesPerS float64 `json:"bisection_bytes_per_s"`
	// NetworkBisectionBytesPerS is the same cut when GPUs may only reach
	// each other through their NICs (scale-up and host PCIe links removed):
	// the bisection of the scale-out network as seen by the GPUs.
	NetworkBisectionBytesPerS float64 `json:"network_bisection_bytes_per_s"`
	// DiameterHops is the largest number of links on a shortest path
	// between two GPUs.
	DiameterHops int `json:"diameter_hops"`
}

// DeviceCount is the number of devices of one kind.
type DeviceCount struct {
	Kind  string `json:"kind"`
	Count int    `json:"count"`
}

// LinkCount describes the cables of one tier ("gpu-nvswitch", "nic-leaf",
// "leaf-spine", ...): how many full-duplex links are modelled, how many
// physical cables they stand for, and their summed line rate in one
// direction.
type LinkCount struct {
	Tier             string  `json:"tier"`
	Kind             string  `json:"kind"`
	Links            int     `json:"links"`
	Cables           int     `json:"cables"`
	BytesPerSPerLink float64 `json:"bytes_per_s_per_link"` // of the tier's first link (all are equal)
	TotalBytesPerS   float64 `json:"total_bytes_per_s"`
}

// Summary computes the cluster's summary. It runs two max-flow computations
// and 2×GPUsPerNode breadth-first searches on the frozen graph (tens of
// milliseconds at 16,384 GPUs); Build does not call it.
func (c *Cluster) Summary() Summary {
	s := c.Spec
	l := &c.l
	sum := Summary{
		GPU: s.GPU, NIC: s.NIC, IntraNode: s.IntraNode, Network: s.Network,
		Nodes: l.nodes, GPUsPerNode: l.g, GPUs: l.gpus, NICsPerNode: l.n,
		NICGbps: s.NICGbps, Oversubscription: s.Oversubscription, PodGPUs: s.PodGPUs,
		Domains: l.domains, DomainGPUs: l.domainNodes * l.g,
		Pods: l.pods, NetworkTiers: l.tiers,
		ScaleOutBytesPerSPerGPU: float64(c.NICBandwidthPerGPU()),
	}
	if l.intra != intraPCIe {
		sum.ScaleUpBytesPerSPerGPU = float64(c.GPU.ScaleUpBandwidth)
	}
	for _, k := range []DeviceKind{KindGPU, KindNVSwitch, KindPCIeSwitch, KindHost, KindNIC, KindLeaf, KindSpine, KindCore} {
		n := 0
		for i := range c.Devices() {
			if c.Devices()[i].Kind == k {
				n++
			}
		}
		if n > 0 {
			sum.Devices = append(sum.Devices, DeviceCount{Kind: k.String(), Count: n})
		}
	}
	var prevFrom, prevTo DeviceKind
	for k := 0; k < len(c.Links()); k += 2 {
		ln := &c.Links()[k]
		fk, tk := c.Devices()[ln.From].Kind, c.Devices()[ln.To].Kind
		last := len(sum.Links) - 1
		// Cables are laid out tier by tier, so a tier is a run of cables.
		if last < 0 || fk != prevFrom || tk != prevTo {
			sum.Links = append(sum.Links, LinkCount{Tier: fk.String() + "-" + tk.String(), Kind: ln.Kind.String(), BytesPerSPerLink: float64(ln.Bandwidth)})
			prevFrom, prevTo = fk, tk
			last++
		}
		lc := &sum.Links[last]
		lc.Links++
		lc.Cables += int(ln.Cables)
		lc.TotalBytesPerS += float64(ln.Bandwidth)
	}
	half := l.gpus / 2
	sum.BisectionBytesPerS = c.maxFlow(half, func(int) bool { return true })
	sum.NetworkBisectionBytesPerS = c.maxFlow(half, func(e int) bool {
		ln := &c.Links()[e]
		if ln.Kind == LinkNVLink || ln.Kind == LinkXGMI {
			return false
		}
		return c.Devices()[ln.From].Kind != KindHost && c.Devices()[ln.To].Kind != KindHost
	})
	sum.DiameterHops = c.diameter()
	return sum
}
