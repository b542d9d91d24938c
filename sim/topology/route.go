package topology

// Closed-form routing. Every cable k is the directed links 2k (away from the
// GPUs: GPU→switch, switch→NIC, NIC→leaf, leaf→spine, spine→core, and the
// even→odd GPU of an NVLink-bridged pair) and 2k+1 (back). A route is written
// as a sequence of "up" and "down" uses of cables whose indices are
// arithmetic in the layout, so no search and no allocation happens here.

func up(cable int32) int32   { return 2 * cable }
func down(cable int32) int32 { return 2*cable + 1 }

// meshLink is the directed link from local GPU sl to local GPU dl of node
// node on an nvlink-mesh cluster (one cable per pair, built low to high).
func (l *layout) meshLink(node, sl, dl int) int32 {
	i, j := min(sl, dl), max(sl, dl)
	cab := l.cUp + int32(node*meshPairs(l.g)+meshPair(l.g, i, j))
	if sl < dl {
		return up(cab)
	}
	return down(cab)
}

// mix spreads a (src, dst) pair over 64 bits (the splitmix64 finaliser). It
// gives every pair its own ECMP offset, so that flows which all pass hash 0
// still spread over the spines the way real five-tuple hashing does, while
// consecutive hashes of one pair still visit every equal-cost path in turn.
func mix(src, dst int) uint64 {
	x := uint64(uint32(src))<<32 | uint64(uint32(dst))
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// AppendRoute appends to dst the directed link ids from GPU rank src to GPU
// rank dstGPU and returns the extended slice. Deterministic: equal-cost paths
// are chosen by hash (ECMP), never by map order; the same (src, dstGPU,
// hash) always gives the same route. src == dstGPU gives an empty route. It
// does not allocate when dst has capacity for the route (at most 12 links).
// src and dstGPU must be ranks of c (0 <= r < NumGPUs); anything else is a
// programming error and panics.
//
// Routes (package doc, "Routing"):
//   - same scale-up domain on NVSwitch: GPU → NVSwitch → GPU;
//   - same node otherwise: over the NVLink bridge for a bridged pair, else
//     GPU → PCIe switch (→ host → PCIe switch) → GPU;
//   - different domains: GPU → PCIe switch → NIC → leaf (→ spine (→ core →
//     spine) →) leaf → NIC → PCIe switch → GPU, on the GPUs' own NICs. On a
//     rail-optimized network, traffic to a different rail uses the
//     destination's rail from the start: through the source GPU's PCIe
//     switch when that rail's NIC hangs off it, else (NVSwitch or NVLink-mesh nodes) after
//     an NVLink hop to the GPU of its own node on the destination's rail
//     (NCCL's PXN); without NVSwitch the rails are crossed at a spine.
//
// ECMP: with idx = hash + mix(src, dst), a GPU that owns several NICs uses
// offset idx mod k, then the spine slot is (idx/k) mod spines and the core
// (idx/k/spines) mod cores: hashes h, h+1, … of one pair visit every
// equal-cost path in turn.
func (c *Cluster) AppendRoute(dst []int32, src, dstGPU int, hash uint64) []int32 {
	if src == dstGPU {
		return dst
	}
	l := &c.l
	g := l.g
	sn, dn := src/g, dstGPU/g
	if l.intra == intraNVSwitch && sn/l.domainNodes == dn/l.domainNodes {
		return append(dst, up(l.cUp+int32(src)), down(l.cUp+int32(dstGPU)))
	}
	sl, dl := src-sn*g, dstGPU-dn*g
	if sn == dn {
		if l.intra == intraMesh {
			return append(dst, l.meshLink(sn, sl, dl))
		}
		if l.intra == intraPairs && sl>>1 == dl>>1 {
			cab := l.cUp + int32(src>>1)
			if sl&1 == 0 {
				return append(dst, up(cab))
			}
			return append(dst, down(cab))
		}
		return c.appendPCIe(dst, src, dstGPU, sn, sl, dl)
	}

	sr, dr, idx := l.rails(sl, dl, hash+mix(src, dstGPU))
	if sr != dr && l.net == netRail {
		if sl/l.gpusPerSwitch == dl/l.gpusPerSwitch {
			// The destination's rail NIC hangs off the source GPU's own
			// PCIe switch: use it, no detour.
			sr = dr
		} else if l.pxn {
			proxy := sn*g + dl
			if l.intra == intraMesh {
				dst = append(dst, l.meshLink(sn, sl, dl))
			} else {
				dst = append(dst, up(l.cUp+int32(src)), down(l.cUp+int32(proxy)))
			}
			src, sr = proxy, dr
		}
	}
	sNIC, dNIC := int32(sn*l.n+sr), int32(dn*l.n+dr)
	// GPU → PCIe switch → NIC (the NIC sits on its GPU's switch).
	dst = append(dst, up(l.cGPUPCIe+int32(src)), up(l.cPCIeNIC+sNIC))
	dst = l.appendNetwork(dst, sNIC, dNIC, idx)
	return append(dst, down(l.cPCIeNIC+dNIC), down(l.cGPUPCIe+int32(dstGPU)))
}

// rails picks the source and destination NICs' local indices (rails) of
// a transfer between local GPUs sl and dl with ECMP index idx, and returns
// what is left of idx for the spine and core choices: with several NICs per
// GPU the index first picks the NIC offset.
func (l *layout) rails(sl, dl int, idx uint64) (sr, dr int, rest uint64) {
	if k := l.nicPerGPU; k > 1 {
		off := int(idx % uint64(k))
		return sl*k + off, dl*k + off, idx / uint64(k)
	}
	return sl / l.gpuPerNIC, dl / l.gpuPerNIC, idx
}

// appendNetwork appends the network links between NICs sNIC and dNIC:
// NIC → leaf, then, when the leaves differ, leaf → spine (and spine → core
// → spine across pods) chosen by the ECMP index idx, and leaf → NIC.
func (l *layout) appendNetwork(dst []int32, sNIC, dNIC int32, idx uint64) []int32 {
	dst = append(dst, up(l.cNICLeaf+sNIC))
	la, lb := l.nicLeaf[sNIC], l.nicLeaf[dNIC]
	if la != lb {
		s := uint64(l.spines)
		j := int32(idx % s)
		idx /= s
		dst = append(dst, up(l.cLeafSpine+la*int32(l.spines)+j))
		pa, pb := la/int32(l.leavesPerPod), lb/int32(l.leavesPerPod)
		if pa != pb {
			m := int32(idx % uint64(l.cores))
			sa, sb := pa*int32(l.spines)+j, pb*int32(l.spines)+j
			dst = append(dst, up(l.cSpineCore+sa*int32(l.cores)+m), down(l.cSpineCore+sb*int32(l.cores)+m))
		}
		dst = append(dst, down(l.cLeafSpine+lb*int32(l.spines)+j))
	}
	return append(dst, down(l.cNICLeaf+dNIC))
}

// appendPCIe routes between two GPUs of one node over PCIe: through their
// shared switch, or up to the host and down again.
func (c *Cluster) appendPCIe(dst []int32, src, dstGPU, node, sl, dl int) []int32 {
	l := &c.l
	ss, ds := sl/l.gpusPerSwitch, dl/l.gpusPerSwitch
	dst = append(dst, up(l.cGPUPCIe+int32(src)))
	if ss != ds {
		base := l.cPCIeHost + int32(node*l.psw)
		dst = append(dst, up(base+int32(ss)), down(base+int32(ds)))
	}
	return append(dst, down(l.cGPUPCIe+int32(dstGPU)))
}

// RouteHops returns the number of links on the route from src to dst (the
// same for every hash).
func (c *Cluster) RouteHops(src, dst int) int {
	var buf [16]int32
	return len(c.AppendRoute(buf[:0], src, dst, 0))
}

// ShiftNodes returns the link that plays link's part on the node nodes
// further on (nodes may be negative): the same cable of the same local GPU,
// PCIe switch or NIC, in the same direction. Only links inside a node have
// one (a GPU's scale-up cable, GPU↔PCIe switch, PCIe switch↔host, PCIe
// switch↔NIC): ok is false for network links and when the shifted node is
// outside the cluster. Every node is wired alike (build.go), so a transfer
// between two GPUs of one node and the same transfer shifted by whole
// nodes cross corresponding links; callers copy one node's traffic onto
// another through it (Result.Links, links.arrow).
func (c *Cluster) ShiftNodes(link int32, nodes int) (int32, bool) {
	l := &c.l
	cable, dir := link/2, link%2
	var base int32  // first cable of cable's range
	var perNode int // cables per node in that range
	switch {
	case cable < l.cUp:
		return 0, false
	case cable < l.cGPUPCIe:
		base = l.cUp
		switch l.intra {
		case intraNVSwitch:
			perNode = l.g
		case intraPairs:
			perNode = l.g / 2
		case intraMesh:
			perNode = meshPairs(l.g)
		default:
			return 0, false
		}
	case cable < l.cPCIeHost:
		base, perNode = l.cGPUPCIe, l.g
	case cable < l.cPCIeNIC:
		base, perNode = l.cPCIeHost, l.psw
	case cable < l.cNICLeaf:
		base, perNode = l.cPCIeNIC, l.n
	default:
		return 0, false
	}
	node := int(cable-base)/perNode + nodes
	if node < 0 || node >= l.nodes {
		return 0, false
	}
	return 2*(cable+int32(nodes*perNode)) + dir, true
}
