package topology

// AppendNetworkRoute appends to dst the network links (kind LinkNetwork:
// NIC→leaf, leaf→spine, spine→core and back) of AppendRoute(src, dstGPU,
// hash), in the same order, and returns the extended slice: the links a
// static-load count cares about, without computing the route's scale-up
// and PCIe hops or reading any link's kind (collectives.StaticShares
// routes every data-parallel group and pipeline pair of a run, ~900 k
// transfers at 131,072 GPUs; issue 18). It shares AppendRoute's rail
// choice (rails) and network hops (appendNetwork), so the ECMP index and
// the NIC and PXN choice are the same; TestNetworkRouteIsRouteFiltered
// holds the two together. Same contract:
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
	sr, dr, idx := l.rails(sl, dl, hash+mix(src, dstGPU))
	if sr != dr && l.net == netRail && (sl/l.gpusPerSwitch == dl/l.gpusPerSwitch || l.pxn) {
		sr = dr // the destination's rail from the start (AppendRoute: own switch or PXN)
	}
	return l.appendNetwork(dst, int32(sn*l.n+sr), int32(dn*l.n+dr), idx)
}
