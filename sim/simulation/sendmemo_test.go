package simulation

import (
	"fmt"
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/topology"
	"github.com/simtrain/simtrain/sim/units"
	"github.com/simtrain/simtrain/sim/workload"
)

// stridedRanks lists the ranks a sendKey describes, ascending in level
// order (level 0 fastest): the inverse of stridedKey.
func stridedRanks(k sendKey) []int {
	out := []int{k.first}
	for _, lv := range k.levels {
		if lv.count == 0 {
			break
		}
		n := len(out)
		for i := 1; i < lv.count; i++ {
			for _, r := range out[:n] {
				out = append(out, r+i*lv.stride)
			}
		}
	}
	return out
}

// stridedKey keys exactly the strided rank sets (every stage of every
// rank order) and refuses the others: a key lists its ranks back
// (stridedRanks) and two different lists never share one, so a kept send
// share is never another boundary's.
func TestStridedKey(t *testing.T) {
	cases := []struct {
		name  string
		ranks []int
		ok    bool
	}{
		{"one rank", []int{5}, true},
		{"contiguous", []int{8, 9, 10, 11}, true},
		{"every second", []int{1, 3, 5, 7}, true},
		{"two blocks", []int{0, 1, 8, 9}, true},
		{"three levels", []int{0, 1, 4, 5, 16, 17, 20, 21}, true},
		{"four levels", []int{0, 1, 4, 5, 16, 17, 20, 21, 64, 65, 68, 69, 80, 81, 84, 85}, true},
		{"five levels", []int{0, 1, 4, 5, 16, 17, 20, 21, 64, 65, 68, 69, 80, 81, 84, 85,
			256, 257, 260, 261, 272, 273, 276, 277, 320, 321, 324, 325, 336, 337, 340, 341}, false},
		{"a gap", []int{0, 1, 2, 4}, false},
		{"uneven blocks", []int{0, 1, 8, 9, 10}, false},
		{"a block cut short", []int{0, 1, 2, 8, 9}, false},
	}
	keys := map[sendKey][]int{}
	for _, tc := range cases {
		k, ok := stridedKey(tc.ranks, 3)
		if ok != tc.ok {
			t.Errorf("%s %v: keyed %v, want %v", tc.name, tc.ranks, ok, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		if got := stridedRanks(k); !slices.Equal(got, tc.ranks) {
			t.Errorf("%s: key %+v lists %v, want %v", tc.name, k, got, tc.ranks)
		}
		if other, dup := keys[k]; dup {
			t.Errorf("%s %v and %v share key %+v", tc.name, tc.ranks, other, k)
		}
		keys[k] = tc.ranks
		if k2, _ := stridedKey(tc.ranks, 4); k2 == k {
			t.Errorf("%s: the step is not in the key", tc.name)
		}
	}
	// Every stage of every rank order of a layout with uneven sizes.
	for _, ord := range []string{"tp-cp-ep-dp-pp", "tp-pp-cp-ep-dp", "pp-tp-cp-ep-dp", "tp-cp-pp-ep-dp", "cp-tp-ep-dp-pp", "dp-ep-cp-pp-tp"} {
		order, err := parallel.ParseOrder(ord)
		if err != nil {
			t.Fatal(err)
		}
		l, err := parallel.NewLayout(2, 3, 1, 5, 4, order)
		if err != nil {
			t.Fatal(err)
		}
		for st := range l.PP {
			ranks := l.StageRanks(st)
			k, ok := stridedKey(ranks, 1)
			if !ok {
				t.Errorf("%s stage %d %v: not keyed", ord, st, ranks)
				continue
			}
			if got := stridedRanks(k); !slices.Equal(got, ranks) {
				t.Errorf("%s stage %d: key lists %v, want %v", ord, st, got, ranks)
			}
		}
	}
}

// The tree share an all-reduce finds late, after other ops were priced
// with the tree pattern unrouted, is the one routing every pattern at once
// finds (the groups the every-rank executor's pricer makes, which record
// what collectives.StaticShares gives): the same shares on the groups and
// the same prices, on every kind and stage of contended layouts. Until an
// all-reduce is priced nothing routes the tree pattern (its share stays 1),
// and at least one tree share is below 1 (else nothing is compared).
func TestTreeShareAskedLate(t *testing.T) {
	sizes := []units.Bytes{1 << 10, 4 << 20, 256 << 20}
	treeContended := 0
	for _, kv := range [][]string{nil, {"parallel.tp", "4", "parallel.dp", "32"}, {"parallel.tp", "2", "parallel.dp", "16", "parallel.pp", "4"}} {
		s := contended(t, "8", kv...)
		c, err := topology.Build(s.TopologySpec())
		if err != nil {
			t.Fatal(err)
		}
		l, err := s.NewLayout()
		if err != nil {
			t.Fatal(err)
		}
		dev := workload.DeviceOf(s.GPU())
		lazy := newPricer(s, c, l, dev)
		eager := newPricer(s, c, l, dev)
		eager.recordShares = true
		seen := map[[2]int]bool{}
		for k := parallel.GroupKind(0); k < parallel.NumGroupKinds; k++ {
			for st := range l.PP {
				name := fmt.Sprintf("%v kind %d stage %d", kv, k, st)
				key := [2]int{int(l.ListedAs(k)), st}
				for _, b := range sizes {
					lazy.CommTime(k, st, collectives.AllGather, b)
				}
				if !seen[key] { // a kind listed as an earlier one (ListedAs) shares its groups
					seen[key] = true
					if lazy.tree[key] {
						t.Errorf("%s: tree routed for an all-gather", name)
					}
					for _, g := range lazy.groups[key] {
						if g.Share().Tree != 1 {
							t.Errorf("%s: tree share %v before an all-reduce", name, g.Share().Tree)
						}
					}
				}
				for _, b := range sizes {
					if got, want := lazy.CommTime(k, st, collectives.AllReduce, b), eager.CommTime(k, st, collectives.AllReduce, b); got != want {
						t.Errorf("%s: all-reduce of %v: %v asked late, %v eager", name, b, got, want)
					}
				}
				if !lazy.tree[key] {
					t.Errorf("%s: tree not marked routed after an all-reduce", name)
				}
				if err := sameGroups(lazy.groups[key], eager.groups[key]); err != nil {
					t.Errorf("%s: %v", name, err)
				}
				// What the every-rank executor records: StaticShares'
				// lowest share per pattern, every pattern routed at once.
				all := lazy.groupRanks(k, st)
				sh, err := collectives.StaticShares(c, all, l.ListedAs(k) == parallel.GroupEP)
				if err != nil {
					t.Fatal(err)
				}
				low := noContention
				for _, x := range sh {
					low = collectives.Share{Ring: min(low.Ring, x.Ring), Tree: min(low.Tree, x.Tree), Direct: min(low.Direct, x.Direct)}
				}
				if low.Tree < 1 {
					treeContended++
				}
				for _, ranks := range all {
					got, ok := eager.shares[ranksKey(ranks)]
					if want := low != noContention; ok != want || (ok && got != low) {
						t.Errorf("%s: group %v recorded %+v (%v), want %+v", name, ranks, got, ok, low)
					}
				}
			}
		}
		if lazy.err != nil || eager.err != nil {
			t.Fatal(lazy.err, eager.err)
		}
	}
	if treeContended == 0 {
		t.Error("no tree share below 1: nothing asked late was compared")
	}
}
