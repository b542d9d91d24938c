package simulation_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/simulation"
	"github.com/simtrain/simtrain/sim/sweep"
)

// keyedBuild is one build's structure key and its programs' structure
// hashes (structureHashes: core, queue waits, copies' marks, issue times,
// self waits' rest). Two things are prices, not structure, though the
// builder derives lists from them: the bands (Program.bands: which
// compute tasks have band GEMMs depends on the GEMMs' tiles, so on the
// micro-batch and tp: llama3-8b-gpu-types points 103 and 111), and the
// price pattern (which tasks share a price: two pricing calls may agree
// by chance in one configuration and not in another, kempnerforge-06 and
// -07 of the validation runs). A re-pricing build must class tasks by the
// call that priced them and list the bands again from its classes.
type keyedBuild struct {
	key   uint64
	tasks int
	hs    [][]uint64 // per program: core, queue, copies, issue, queue rest
}

func keyedHashes(key uint64, ps []*parallel.Program) keyedBuild {
	kb := keyedBuild{key: key}
	for _, p := range ps {
		h := structureHashes(p)
		kb.hs = append(kb.hs, []uint64{h.core, h.queue, h.copies, h.issue, h.rest})
		kb.tasks += len(p.Tasks)
	}
	return kb
}

// sameStructure reports whether a and b hash alike, programs and fields.
func sameStructure(a, b keyedBuild) bool {
	return slices.EqualFunc(a.hs, b.hs, slices.Equal[[]uint64])
}

// TestStructureKeyImpliesStructure checks parallel.StepConfig.StructureKey
// on every simulated point of both bundled sweeps (the last build of each,
// run as the sweep runs it: one Reuse, FiguresOnly, in index order) and on
// the bundled, validation and holdout scenarios whose keys repeat (each
// built afresh): builds of equal keys have equal task graphs — every Task
// field but Dur, GEMMShare, Bytes and FLOPs, dependencies, successors,
// issue times, queue waits and self waits and the copies' marks
// (keyedBuild) — and the key still joins
// the groups that make reuse worth it (at least 100 of the 70B sweep's
// points share a key with an earlier one; 200 do, as many as repeat an
// earlier point's structure). It logs the hits a one-entry
// cache per sweep worker would see in sweep.Run's order (two workers,
// contiguous halves, the endgame aside) and with each half ordered by key.
func TestStructureKeyImpliesStructure(t *testing.T) {
	if testing.Short() {
		t.Skip("runs both bundled sweeps")
	}
	for _, f := range []string{"llama3-70b-1024-h100-layouts.yaml", "llama3-8b-gpu-types.yaml"} {
		sw, err := sweep.Load(filepath.Join("../../scenarios/sweeps", f), sweep.Options{})
		if err != nil {
			t.Fatal(err)
		}
		first := map[uint64]keyedBuild{}
		var order []int
		byPoint := map[int]keyedBuild{}
		repeats, repTasks, tasks := 0, 0, 0
		eachSimulatedPoint(t, sw, func(i int, p *sweep.Point, r *simulation.Result) {
			m := p.Scenario.StepConfig(r.Layout).Microbatches
			cfg, err := simulation.StepConfigOf(p.Scenario, m-r.Replicated)
			if err != nil {
				t.Fatal(err)
			}
			key, ok := cfg.StructureKey()
			if !ok {
				t.Fatalf("%s point %d: no structure key", f, i)
			}
			kb := keyedHashes(key, simulation.ProgramsOf(r))
			tasks += kb.tasks
			if a, seen := first[key]; seen {
				repeats++
				repTasks += kb.tasks
				if !sameStructure(a, kb) {
					t.Errorf("%s point %d: key %016x as an earlier point's, structure differs:\n%x\n%x", f, i, key, a.hs, kb.hs)
				}
			} else {
				first[key] = kb
			}
			order = append(order, i)
			byPoint[i] = kb
		})
		t.Logf("%s: %d simulated points (%d tasks), %d keys; %d points repeat an earlier key (%d tasks)", f, len(order), tasks, len(first), repeats, repTasks)
		if f == "llama3-70b-1024-h100-layouts.yaml" && repeats < 100 {
			t.Errorf("%s: only %d points repeat an earlier point's key", f, repeats)
		}
		// One-entry cache per worker: today's order, and each worker's
		// half ordered by key (its first point's index, then the index).
		for w := 0; w < 2; w++ {
			var share []int
			for _, i := range order {
				if sw.Len()*w/2 <= i && i < sw.Len()*(w+1)/2 {
					share = append(share, i)
				}
			}
			hits := func(pts []int) (n, tk int) {
				for k := 1; k < len(pts); k++ {
					if byPoint[pts[k]].key == byPoint[pts[k-1]].key {
						n++
						tk += byPoint[pts[k]].tasks
					}
				}
				return n, tk
			}
			lead := map[uint64]int{}
			for _, i := range share {
				if _, ok := lead[byPoint[i].key]; !ok {
					lead[byPoint[i].key] = i
				}
			}
			grouped := slices.Clone(share)
			slices.SortStableFunc(grouped, func(a, b int) int { return lead[byPoint[a].key] - lead[byPoint[b].key] })
			n0, t0 := hits(share)
			n1, t1 := hits(grouped)
			t.Logf("%s worker %d: %d points; one-entry hits in order %d (%d tasks), ordered by key %d (%d tasks)", f, w, len(share), n0, t0, n1, t1)
		}
	}

	// The bundled, validation and holdout scenarios: keys first, then
	// the groups of two or more built afresh, each in an arena of its
	// own (so that the copies' marks are listed).
	var files []string
	for _, pat := range []string{"../../scenarios/*.yaml", "../../scenarios/validation/*.yaml", "../../scenarios/holdout/*.yaml"} {
		m, _ := filepath.Glob(pat)
		files = append(files, m...)
	}
	type scen struct {
		name string
		s    *scenario.Plan
		cfg  *parallel.StepConfig
	}
	groups := map[uint64][]scen{}
	var keys []uint64
	for _, f := range files {
		s, err := scenario.Load(f)
		if err != nil {
			continue
		}
		if s.GPUs() > 4096 && os.Getenv("SIMTRAIN_ALL_SCENARIOS") == "" {
			continue // the 16k-GPU runs take seconds each
		}
		cfg, err := simulation.StepConfigOf(s, 0)
		if err != nil {
			continue
		}
		key, ok := cfg.StructureKey()
		if !ok {
			t.Errorf("%s: no structure key", filepath.Base(f))
			continue
		}
		if _, ok := groups[key]; !ok {
			keys = append(keys, key)
		}
		groups[key] = append(groups[key], scen{filepath.Base(f), s, cfg})
	}
	compared := 0
	for _, key := range keys {
		g := groups[key]
		if len(g) < 2 {
			continue
		}
		var a keyedBuild
		for k, sc := range g {
			sc.cfg.Arena = new(parallel.Arena)
			ps, err := simulation.BuildFresh(sc.s, sc.cfg)
			if err != nil {
				t.Fatalf("%s: %v", sc.name, err)
			}
			kb := keyedHashes(key, ps)
			if k == 0 {
				a = kb
				continue
			}
			compared++
			if !sameStructure(a, kb) {
				t.Errorf("%s: key %016x as %s's, structure differs:\n%x\n%x", sc.name, key, g[0].name, a.hs, kb.hs)
			}
		}
	}
	t.Logf("%d scenarios keyed, %d keys; %d compared with an earlier scenario of their key", len(files), len(keys), compared)
}
