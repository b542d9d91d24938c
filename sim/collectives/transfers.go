package collectives

// Transfers bounds the fabric transfers Runner.Start plays for op on g at
// flow fidelity, over all of the collective's phases, from the closed forms
// of the algorithms' flows (runner.go): a ring or chain visits each rank
// once per direction, a tree each parent-child pair, NVLS each switch port,
// and a direct all-to-all sends from every rank to every other rank of its
// scale-up domain and once to each other domain (PXN aggregation). The CLI
// uses it to refuse a flow-fidelity collective above its work budget before
// starting any flow. Errors are those of Cost.
func (g *Group) Transfers(op Op, a Algo, bytes float64) (int64, error) {
	e, err := g.estimate(op, a, bytes)
	if err != nil {
		return 0, err
	}
	n, nd := int64(g.sh.n), int64(g.sh.domains)
	if n < 2 || bytes == 0 {
		return 0, nil
	}
	switch e.kind {
	case kDirect:
		switch op {
		case AllToAll:
			return n * (int64(g.sh.ppnMax) - 1 + nd - 1), nil
		case SendRecv:
			return n, nil
		}
		return 1, nil
	case kAllPairs:
		return n * (n - 1), nil // every rank to every other, once per phase pair
	case kRing, kNVLS:
		return 2 * n, nil // ring edges and domain crossings; NVLS up and down ports
	case kTree, kNVLSTree:
		return 6 * n, nil // chains (or NVLS ports) both ways, and two trees both ways
	}
	return 6 * n, nil // hierarchical: up to three phases of rings
}
