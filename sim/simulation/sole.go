package simulation

import (
	"math/bits"
	"slices"

	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/topology"
)

// soleGroups is which groups of an every-rank flow-fidelity play of progs
// on cl may play their collectives as one timer each, alone on their links
// (parallel.Executor.SetSoleGroups, collectives.Runner.MakeSole); nil where
// none may. A group may when:
//   - its ranks lie in one NVSwitch domain, so its transfers cross only
//     their GPUs' scale-up ports (topology.Cluster.ScaleUpLinksOf);
//   - no other group of a kind the programs communicate on (the pipeline's
//     sends counted as one group per pipeline) has a route that can cross
//     any of those ports: inside a domain a route crosses only its two
//     ends' ports, and between domains only PXN's detour does, which
//     ScaleUpLinksOf names too;
//   - the programs put every collective of its kind on one stream, so the
//     group's collectives run one after another: each holds its stream on
//     every member until it ends for all of them.
//
// Then nothing else touches the group's links while one of its
// collectives plays, and the fabric would give each of its transfers the
// rate of a flow alone on its links. What it keeps out: the expert
// all-to-alls, pipeline sends and data-parallel collectives of ranks of
// one node beside its tensor-parallel group, and multi-stream kinds.
//
// Why: a tensor-parallel group of a whole NVSwitch node (tp 8 on HGX
// H100, the layout of most large runs) plays thousands of collectives a
// step, each two or three events and a share of a re-solve per transfer,
// and nothing shares its NVLink ports (issue 18).
func soleGroups(cl *topology.Cluster, layout *parallel.Layout, progs []*parallel.Program) func(parallel.GroupKind, []int) bool {
	var used [parallel.NumGroupKinds]bool
	var streams [parallel.NumGroupKinds]uint64
	for _, p := range progs {
		if p == nil {
			continue
		}
		for i := range p.Tasks {
			t := &p.Tasks[i]
			if !t.Kind.IsComm() || t.Group >= parallel.NumGroupKinds {
				continue
			}
			used[t.Group] = true
			streams[t.Group] |= 1 << (t.Stream & 63)
			if t.Kind == parallel.KindSend || t.Kind == parallel.KindRecv {
				used[parallel.GroupPP] = true // (a send's peer is in its pipeline)
			}
		}
	}
	n := cl.NumGPUs()
	owner := make([]int32, cl.NumLinks()) // -1: no group's route crosses it; -2: several groups'
	for i := range owner {
		owner[i] = -1
	}
	var lead [parallel.NumGroupKinds][]int32 // group id by kind and least rank, -1: none
	var next int32
	seen := make([]bool, n)
	for k := range parallel.NumGroupKinds {
		if !used[k] {
			continue
		}
		lead[k] = make([]int32, n)
		for i := range lead[k] {
			lead[k][i] = -1
		}
		clear(seen)
		for r := range n {
			if seen[r] {
				continue
			}
			ranks := layout.Group(k, r)
			for _, m := range ranks {
				seen[m] = true
			}
			if len(ranks) < 2 {
				continue
			}
			id := next
			next++
			lead[k][slices.Min(ranks)] = id
			ok := cl.ScaleUpLinksOf(ranks, func(l int32) {
				switch owner[l] {
				case -1:
					owner[l] = id
				case id, -2:
				default:
					owner[l] = -2
				}
			})
			if !ok {
				return nil // not an NVSwitch cluster
			}
		}
	}
	var eligible [parallel.NumGroupKinds]bool
	for k := range parallel.NumGroupKinds {
		eligible[k] = used[k] && k != parallel.GroupPP && bits.OnesCount64(streams[k]) == 1
	}
	return func(k parallel.GroupKind, ranks []int) bool {
		if k >= parallel.NumGroupKinds || !eligible[k] || len(ranks) < 2 {
			return false
		}
		d := cl.DomainOf(ranks[0])
		for _, r := range ranks {
			if cl.DomainOf(r) != d {
				return false
			}
		}
		id := lead[k][slices.Min(ranks)]
		if id < 0 {
			return false
		}
		alone := true
		cl.ScaleUpLinksOf(ranks, func(l int32) { alone = alone && owner[l] == id })
		return alone
	}
}
