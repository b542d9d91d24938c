package topology

import "testing"

// ShiftNodes maps every route between two GPUs of one node, link by link,
// onto the route between the same local GPUs of every other node (every
// hash), and refuses network links and shifts off the cluster.
func TestShiftNodesMapsIntraNodeRoutes(t *testing.T) {
	specs := append(specsSmall[:len(specsSmall):len(specsSmall)],
		Spec{GPU: "h100-pcie", Nodes: 3, IntraNode: "nvlink-pairs"})
	for _, s := range specs {
		c, err := Build(s)
		if err != nil {
			t.Fatal(err)
		}
		g := c.GPUsPerNode()
		var a, b []int32
		for src := range g {
			for dst := range g {
				for hash := range uint64(3) {
					a = c.AppendRoute(a[:0], src, dst, hash)
					for node := range c.Nodes() {
						b = c.AppendRoute(b[:0], node*g+src, node*g+dst, hash)
						if len(a) != len(b) {
							t.Fatalf("%+v: route %d→%d has %d links on node 0, %d on node %d", s, src, dst, len(a), len(b), node)
						}
						for i, l := range a {
							m, ok := c.ShiftNodes(l, node)
							if !ok || m != b[i] {
								t.Fatalf("%+v: route %d→%d link %d: ShiftNodes(%d, %d) = %d, %v; want %d", s, src, dst, i, l, node, m, ok, b[i])
							}
							if back, ok := c.ShiftNodes(m, -node); !ok || back != l {
								t.Fatalf("%+v: ShiftNodes(%d, %d) = %d, %v; want %d back", s, m, -node, back, ok, l)
							}
						}
					}
				}
			}
		}
		for i, lk := range c.Links() {
			_, ok := c.ShiftNodes(int32(i), 0)
			if net := lk.Kind == LinkNetwork; ok == net {
				t.Fatalf("%+v: link %d (%v): ShiftNodes ok = %v", s, i, lk.Kind, ok)
			}
			if _, ok := c.ShiftNodes(int32(i), c.Nodes()); ok {
				t.Fatalf("%+v: link %d shifted off the cluster", s, i)
			}
		}
	}
}
