package topology

// AppendNetworkRoute appends to dst the network links (kind LinkNetwork:
// NIC→leaf, leaf→spine, spine→core and back) of AppendRoute(src, dstGPU,
// hash), in the same order, and returns the extended slice: the links a
// static-load count cares about, without computing the route's scale-up
// and PCIe hops or reading any link's kind (collectives.StaticShares
// routes every data-parallel group and pipeline pair of a run, ~900 k
// transfers at 131,072 GPUs; issue 18). It follows AppendRoute's
// arithmetic step for step (same ECMP index, same NIC and PXN choice);
// TestNetworkRouteIsRouteFiltered holds the two together. Same contract:
// ranks of c, no allocation when dst has room (at most 6 links).
func (c *Cluster) AppendNetworkRoute(dst []int32, src, dstGPU int, hash uint64) []int32 {
	if src == dstGPU {
		return dst
	}
	l := &c.l
	g := l.g
	sn, dn := src/g, dstGPU/g
	if sn == dn || (l.intra == intraNVSwitch && sn/l.domainNodes == dn/l.domainNodes) {
		return dst // inside a node or a scale-up domain: no network hop
	}
	sl, dl := src-sn*g, dstGPU-dn*g
	idx := hash + mix(src, dstGPU)
	var sr, dr int // NIC local indices (rails)
	if k := l.nicPerGPU; k > 1 {
		off := int(idx % uint64(k))
		idx /= uint64(k)
		sr, dr = sl*k+off, dl*k+off
	} else {
		sr, dr = sl/l.gpuPerNIC, dl/l.gpuPerNIC
	}
	if sr != dr && l.net == netRail && (sl/l.gpusPerSwitch == dl/l.gpusPerSwitch || l.pxn) {
		sr = dr // the destination's rail from the start (AppendRoute: own switch or PXN)
	}
	sNIC, dNIC := int32(sn*l.n+sr), int32(dn*l.n+dr)
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
