package simulation

import (
	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/units"
)

// commFloors is the pipeline bound's floors on the collectives of a play
// of every rank at flow fidelity (parallel.CommFloors): for a collective
// of a kind on a stage, the least over every group of that kind in the
// stage of what the runner takes over it at the least
// (collectives.Group.PlayFloor), each group made as the every-rank
// executor makes it (groupMaker). A collective the executor times itself
// (Executor.TimeByTask) is never played at flow fidelity, and one it
// floors (FloorByTask) takes at least the runner's time.
//
// Why: plan at flow fidelity rules out a layout before playing it once its
// pipeline bound is over the best found so far, and that bound counted the
// collectives as instant, so most layouts were played until their compute
// alone showed them out: on the plan of Llama 3 70B on 512 H100, 280 plays
// given up after 40% of their step, the median, 115 s of its 134 s of CPU
// (issue 18, round 68).
type commFloors struct {
	p      *pricer
	groups map[[2]int][]*collectives.Group // by kind (as listed) and stage
	floors map[costKey]engine.Time
}

// commFloors returns p's floors for this run, made at the first call.
func (p *pricer) commFloors() *commFloors {
	if p.floors == nil {
		p.floors = &commFloors{p: p, groups: map[[2]int][]*collectives.Group{}, floors: map[costKey]engine.Time{}}
	}
	return p.floors
}

// CommFloor is parallel.CommFloors' bound; 0 where some group's floor
// fails (its price failed too: the build reports that).
func (f *commFloors) CommFloor(k parallel.GroupKind, stage int, op collectives.Op, bytes units.Bytes) engine.Time {
	key := costKey{int(k), stage, op, float64(bytes)}
	if t, ok := f.floors[key]; ok {
		return t
	}
	var least engine.Time
	for i, g := range f.stageGroups(k, stage) {
		t, err := g.PlayFloor(network.Flow, op, collectives.Auto, bytes)
		if err != nil {
			least = 0
			break
		}
		if i == 0 || t < least {
			least = t
		}
	}
	f.floors[key] = least
	return least
}

// stageGroups is every kind-k group of stage, made as groupMaker makes
// them; a group that cannot be made is left out (the play fails on it).
func (f *commFloors) stageGroups(k parallel.GroupKind, stage int) []*collectives.Group {
	p := f.p
	key := [2]int{int(p.l.ListedAs(k)), stage}
	if gs, ok := f.groups[key]; ok {
		return gs
	}
	mk := groupMaker{p.c, p.shares}
	var gs []*collectives.Group
	for _, ranks := range p.groupRanks(k, stage) {
		if g, err := mk.NewGroup(ranks); err == nil {
			gs = append(gs, g)
		}
	}
	f.groups[key] = gs
	return gs
}
