package simulation

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/topology"
	"github.com/simtrain/simtrain/sim/units"
	"github.com/simtrain/simtrain/sim/workload"
)

// KeptPriceCounts is what CheckKeptPrices compared: the entries of the
// kept tables, by table.
type KeptPriceCounts struct {
	Groups, Costs, Sends, SendShares, Spans int
	Trees                                   int // groups compared with their tree share routed
	SendCosts                               int // SendTime's answers
}

// Add adds o's counts to c's.
func (c *KeptPriceCounts) Add(o KeptPriceCounts) {
	c.Groups += o.Groups
	c.Costs += o.Costs
	c.Sends += o.Sends
	c.SendShares += o.SendShares
	c.Spans += o.Spans
	c.Trees += o.Trees
	c.SendCosts += o.SendCosts
}

// CheckKeptPrices compares the price tables r keeps for s's layout (as a
// Run of s with r just left them: filled by every earlier point of that
// layout, under whatever other layouts r kept between) with what a fresh
// pricer, on a cluster built anew, finds for every one of their entries:
// each (kind, stage)'s groups (ranks, share, shape; the tree share routed
// where an all-reduce had it routed), each collective and send price,
// each pipeline pair's send group and contention share, and the
// interference spans. A mismatch is a wrong key (Reuse.tables): a point
// took another layout's or cluster's tables. Nil with zero counts when s is
// not priced from kept tables (not analytic fidelity).
func CheckKeptPrices(s *scenario.Plan, r *Reuse) (KeptPriceCounts, error) {
	var n KeptPriceCounts
	if s.Fidelity() != network.Analytic {
		return n, nil
	}
	cl, layout, fcl, err := keptAndFresh(s, r)
	if err != nil {
		return n, err
	}
	kept := r.tables(cl, layout) // what the Run just took and filled
	fresh := newPricer(s, fcl, layout, workload.DeviceOf(s.GPU()))
	for key, gs := range kept.groups {
		n.Groups++
		want := fresh.stageGroups(parallel.GroupKind(key[0]), key[1])
		if kept.tree[key] {
			// An all-reduce was priced on them: their tree share routed.
			n.Trees++
			want = fresh.stageGroupsFor(parallel.GroupKind(key[0]), key[1], collectives.AllReduce)
		}
		if err := sameGroups(gs, want); err != nil {
			return n, fmt.Errorf("groups of kind %d stage %d: %v", key[0], key[1], err)
		}
	}
	for key, t := range kept.costs.all() {
		n.Costs++
		if want := fresh.CommTime(parallel.GroupKind(key.kind), key.stage, key.op, units.Bytes(key.bytes)); t != want {
			return n, fmt.Errorf("price of %+v: kept %v, fresh %v", key, t, want)
		}
	}
	for key, g := range kept.sends {
		n.Sends++
		for _, b := range []units.Bytes{1, 1 << 20, 1 << 30} {
			fresh.SendTime(key[0], key[1], b)
			if err := sameGroups([]*collectives.Group{g}, []*collectives.Group{fresh.sends[key]}); err != nil {
				return n, fmt.Errorf("send group %v: %v", key, err)
			}
			c, err1 := g.Cost(collectives.Send, collectives.Auto, b)
			w, err2 := fresh.sends[key].Cost(collectives.Send, collectives.Auto, b)
			if err1 != nil || err2 != nil || c != w {
				return n, fmt.Errorf("send %v of %v bytes: kept %+v (%v), fresh %+v (%v)", key, b, c, err1, w, err2)
			}
		}
	}
	for key, t := range kept.sendCosts.all() {
		n.SendCosts++
		if want := fresh.SendTime(key.from, key.to, key.bytes); t != want {
			return n, fmt.Errorf("send %+v: kept %v, fresh %v", key, t, want)
		}
	}
	for key, f := range kept.sendShare {
		n.SendShares++
		if want := fresh.sendContention(key[0], key[1]); f != want {
			return n, fmt.Errorf("send share %v: kept %v, fresh %v", key, f, want)
		}
	}
	if kept.spans != nil {
		n.Spans++
		// Listed afresh by Layout.Groups, kind by kind (not through the
		// pricer's lists, which share a kind's with the kind it is
		// listed as).
		if want := parallel.SpansOf(layout, fcl); !reflect.DeepEqual(kept.spans, want) {
			return n, fmt.Errorf("spans: kept %v, fresh %v", kept.spans, want)
		}
	}
	return n, fresh.err
}

// sameGroups compares two pricers' group lists by what prices read: the
// ranks, the contention share and the closed form's shape.
func sameGroups(a, b []*collectives.Group) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d groups, fresh %d", len(a), len(b))
	}
	for i := range a {
		x, y := a[i], b[i]
		if !slices.Equal(x.Ranks(), y.Ranks()) {
			return fmt.Errorf("group %d: ranks %v, fresh %v", i, x.Ranks(), y.Ranks())
		}
		if x.Share() != y.Share() {
			return fmt.Errorf("group %d: share %+v, fresh %+v", i, x.Share(), y.Share())
		}
		r1, p1, n1, s1 := x.Bandwidths()
		r2, p2, n2, s2 := y.Bandwidths()
		if r1 != r2 || p1 != p2 || n1 != n2 || s1 != s2 || x.Domains() != y.Domains() || x.RailAligned() != y.RailAligned() {
			return fmt.Errorf("group %d: shape differs", i)
		}
		f1, m1 := x.RanksPerDomain()
		f2, m2 := y.RanksPerDomain()
		if f1 != f2 || m1 != m2 {
			return fmt.Errorf("group %d: ranks per domain differ", i)
		}
	}
	return nil
}

// keptAndFresh is what the Check functions compare on: the cluster r last
// built for s, s's layout, and the same cluster built anew.
func keptAndFresh(s *scenario.Plan, r *Reuse) (kept *topology.Cluster, layout *parallel.Layout, fresh *topology.Cluster, err error) {
	if kept, err = r.cluster(s.TopologySpec()); err != nil {
		return nil, nil, nil, err
	}
	if layout, err = s.NewLayout(); err != nil {
		return nil, nil, nil, err
	}
	if fresh, err = topology.Build(s.TopologySpec()); err != nil {
		return nil, nil, nil, err
	}
	return kept, layout, fresh, nil
}
