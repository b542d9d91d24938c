package topology

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// scaleUpKind reports whether a link is a GPU's scale-up port (NVLink or
// xGMI through the domain's switches).
func scaleUpKind(k LinkKind) bool { return k == LinkNVLink || k == LinkXGMI }

// TestScaleUpLinksCoverRoutes: every scale-up link that a route between two
// ranks of a group crosses, either way and with any hash, is one that
// ScaleUpLinksOf names for the group, on every small cluster; inside one
// domain it names those links and no other. Groups: random subsets, a
// node, a domain, one GPU of each node (a rail), and a column of mixed
// local indices (PXN's detours).
func TestScaleUpLinksCoverRoutes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 70))
	for _, s := range specsSmall {
		c := mustBuild(t, s)
		n, g := c.NumGPUs(), c.GPUsPerNode()
		groups := [][]int{}
		for range 12 {
			m := 2 + rng.IntN(min(n, 16)-1)
			if m > n {
				continue
			}
			groups = append(groups, rng.Perm(n)[:m])
		}
		node, rail, mixed := []int{}, []int{}, []int{}
		for r := 0; r < min(n, g); r++ {
			node = append(node, r)
		}
		for k := 0; k*g < n; k++ {
			rail = append(rail, k*g)
			mixed = append(mixed, k*g+k%g)
		}
		var domain []int
		for r := 0; r < n && c.DomainOf(r) == 0; r++ {
			domain = append(domain, r)
		}
		groups = append(groups, node, rail, mixed, domain)
		for _, ranks := range groups {
			if len(ranks) < 2 {
				continue
			}
			named := map[int32]bool{}
			ok := c.ScaleUpLinksOf(ranks, func(l int32) { named[l] = true })
			crossed := map[int32]bool{}
			for _, a := range ranks {
				for _, b := range ranks {
					if a == b {
						continue
					}
					for h := uint64(0); h < 8; h++ {
						for _, l := range c.AppendRoute(nil, a, b, h) {
							if scaleUpKind(c.LinkKindOf(l)) {
								crossed[l] = true
							}
						}
					}
				}
			}
			if !ok {
				if len(named) != 0 {
					t.Fatalf("%+v: not NVSwitch, yet %d links named", s, len(named))
				}
				if c.l.intra == intraNVSwitch {
					t.Fatalf("%+v: an NVSwitch cluster refused", s)
				}
				continue
			}
			for l := range crossed {
				if !named[l] {
					t.Fatalf("%+v group %v: route crosses scale-up link %d (%v), not named", s, ranks, l, c.Links()[l/2*2])
				}
			}
			oneDomain := !slices.ContainsFunc(ranks, func(r int) bool { return c.DomainOf(r) != c.DomainOf(ranks[0]) })
			if oneDomain && len(named) != len(crossed) {
				t.Fatalf("%+v group %v: %d links named inside one domain, routes cross %d", s, ranks, len(named), len(crossed))
			}
		}
	}
}
