package topology

// ScaleUpLinksOf calls use for every scale-up link that a route between
// two of ranks can cross (AppendRoute, either way, with any ECMP hash):
// on an NVSwitch domain a GPU's port up to the switches and its port
// down from them. Inside a domain every route is GPU → NVSwitch → GPU;
// between domains a route crosses scale-up ports only for NCCL's PXN
// detour, where a transfer to another rail first goes over NVLink to the
// GPU of its own node on the destination's rail. use may see a link more
// than once. ok is false, and use is never called, where the scale-up
// network is not NVSwitch (NVLink mesh or bridged pairs, PCIe): there a
// route inside a node may cross links of GPUs other than its two ends, or
// share the PCIe links of the network's traffic.
//
// Why: a collective whose transfers cross only scale-up ports that no
// other group's transfer can cross runs alone on its links at flow
// fidelity, and can be played as one timer of exactly the time the fabric
// would give it (collectives.Runner.MakeSole; issue 18). The enumeration
// mirrors AppendRoute's branches; TestScaleUpLinksCoverRoutes checks it
// against every route of every pair.
func (c *Cluster) ScaleUpLinksOf(ranks []int, use func(link int32)) (ok bool) {
	l := &c.l
	if l.intra != intraNVSwitch {
		return false
	}
	g := l.g
	// Inside a domain: a member with another member in its domain sends
	// to it and receives from it.
	perDomain := make(map[int]int, 4)
	for _, r := range ranks {
		perDomain[c.DomainOf(r)]++
	}
	for _, r := range ranks {
		if perDomain[c.DomainOf(r)] > 1 {
			use(up(l.cUp + int32(r)))
			use(down(l.cUp + int32(r)))
		}
	}
	if !l.pxn || l.net != netRail || len(perDomain) < 2 {
		return true
	}
	// Between domains: the PXN detour from a member a to a member of
	// another domain with local index dl crosses a's port up and the port
	// down of the GPU of a's node with local index dl, whenever the two
	// rails differ (rails's choice of NIC: the offset of a GPU with several
	// NICs is the same at both ends, so the rails differ exactly when
	// rails(sl, dl, 0) says so) and the destination's rail NIC is not on
	// a's own PCIe switch.
	type key struct{ domain, local int }
	locals := make([]int, g)                  // members by local index
	inDomain := make(map[key]int, len(ranks)) // members by domain and local index
	for _, r := range ranks {
		locals[r%g]++
		inDomain[key{c.DomainOf(r), r % g}]++
	}
	for _, a := range ranks {
		sl, node, da := a%g, a/g, c.DomainOf(a)
		for dl := 0; dl < g; dl++ {
			if locals[dl]-inDomain[key{da, dl}] == 0 {
				continue // no member with local index dl in another domain
			}
			sr, dr, _ := l.rails(sl, dl, 0)
			if sr == dr || sl/l.gpusPerSwitch == dl/l.gpusPerSwitch {
				continue
			}
			use(up(l.cUp + int32(a)))
			use(down(l.cUp + int32(node*g+dl)))
		}
	}
	return true
}
