package simulation_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/simulation"
	"github.com/simtrain/simtrain/sim/sweep"
)

// TestRepricedEqualsFresh runs every simulated point of both bundled
// sweeps as a sweep worker does (one Reuse, FiguresOnly), the points
// ordered by structure key (each key's points after its first, as
// sweep.Run's shares would deal them), with parallel.SetRepriceChecks on:
// every build that re-priced the arena's last build (its key the same)
// is compared with the same configuration built afresh, every Program
// field, and the run fails at the first difference. At least 100 builds
// of the 70B sweep re-price. The points' figures equal those of a run in
// index order without re-pricing hits (each point's first build then
// follows a point of another key).
func TestRepricedEqualsFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("runs both bundled sweeps twice")
	}
	parallel.SetRepriceChecks(true)
	defer parallel.SetRepriceChecks(false)
	for _, f := range []string{"llama3-70b-1024-h100-layouts.yaml", "llama3-8b-gpu-types.yaml"} {
		sw, err := sweep.Load(filepath.Join("../../scenarios/sweeps", f), sweep.Options{})
		if err != nil {
			t.Fatal(err)
		}
		// Index order: the figures to compare with, and each point's
		// key (its last build's).
		keys := map[int]uint64{}
		want := map[int]simulation.Result{}
		var order []int
		before := parallel.RepricedBuilds()
		eachSimulatedPoint(t, sw, func(i int, p *sweep.Point, r *simulation.Result) {
			m := p.Scenario.StepConfig(r.Layout).Microbatches
			cfg, err := simulation.StepConfigOf(p.Scenario, m-r.Replicated)
			if err != nil {
				t.Fatal(err)
			}
			keys[i], _ = cfg.StructureKey()
			r.KeepFiguresOnly()
			want[i] = *r
			order = append(order, i)
		})
		inOrder := parallel.RepricedBuilds() - before
		lead := map[uint64]int{}
		for _, i := range order {
			if _, ok := lead[keys[i]]; !ok {
				lead[keys[i]] = i
			}
		}
		slices.SortStableFunc(order, func(a, b int) int { return lead[keys[a]] - lead[keys[b]] })
		before = parallel.RepricedBuilds()
		reuse := new(simulation.Reuse)
		for _, i := range order {
			p := sw.Point(i)
			mem, _ := p.Scenario.MemoryPerStage()
			r, err := simulation.Run(context.Background(), p.Scenario, simulation.Options{Reuse: reuse, FiguresOnly: true, RunID: p.RunID, Memory: mem})
			if err != nil {
				t.Fatalf("%s point %d: %v", f, i, err)
			}
			if err := parallel.SetRepriceChecks(true); err != nil {
				t.Fatalf("%s point %d: %v", f, i, err)
			}
			w := want[i]
			if r.StepTimeS != w.StepTimeS || r.Events != w.Events || r.PlayedTasks != w.PlayedTasks || r.Replicated != w.Replicated {
				t.Errorf("%s point %d: step %v events %d played %d replicated %d, in index order %v %d %d %d", f, i,
					r.StepTimeS, r.Events, r.PlayedTasks, r.Replicated, w.StepTimeS, w.Events, w.PlayedTasks, w.Replicated)
			}
		}
		hits := parallel.RepricedBuilds() - before
		t.Logf("%s: %d points; re-priced builds: %d in index order, %d ordered by key", f, len(order), inOrder, hits)
		if f == "llama3-70b-1024-h100-layouts.yaml" && hits < 100 {
			t.Errorf("%s: only %d re-priced builds ordered by key", f, hits)
		}
	}

	// The bundled, validation and holdout scenarios whose keys repeat,
	// each key's run one after another in one Reuse, whole and with
	// FiguresOnly, their figures against a run of their own.
	var files []string
	for _, pat := range []string{"../../scenarios/*.yaml", "../../scenarios/validation/*.yaml", "../../scenarios/holdout/*.yaml"} {
		m, _ := filepath.Glob(pat)
		files = append(files, m...)
	}
	groups := map[uint64][]*scenario.Plan{}
	var keyOrder []uint64
	for _, f := range files {
		s, err := scenario.Load(f)
		if err != nil || s.GPUs() > 4096 && os.Getenv("SIMTRAIN_ALL_SCENARIOS") == "" {
			continue
		}
		cfg, err := simulation.StepConfigOf(s, 0)
		if err != nil {
			continue
		}
		key, ok := cfg.StructureKey()
		if !ok {
			continue
		}
		if _, seen := groups[key]; !seen {
			keyOrder = append(keyOrder, key)
		}
		groups[key] = append(groups[key], s)
	}
	before := parallel.RepricedBuilds()
	runs := 0
	for _, key := range keyOrder {
		g := groups[key]
		if len(g) < 2 {
			continue
		}
		for _, figures := range []bool{false, true} {
			reuse := new(simulation.Reuse)
			for _, s := range g {
				r, err := simulation.Run(context.Background(), s, simulation.Options{Reuse: reuse, FiguresOnly: figures})
				if err != nil {
					continue // (a scenario that does not fit fails alike either way)
				}
				if err := parallel.SetRepriceChecks(true); err != nil {
					t.Fatalf("%s: %v", s.Name, err)
				}
				own, err := simulation.Run(context.Background(), s, simulation.Options{FiguresOnly: figures})
				if err != nil {
					t.Fatalf("%s: %v", s.Name, err)
				}
				runs++
				if r.StepTimeS != own.StepTimeS || r.Events != own.Events || r.PlayedTasks != own.PlayedTasks {
					t.Errorf("%s: step %v events %d played %d after its key's others, alone %v %d %d", s.Name,
						r.StepTimeS, r.Events, r.PlayedTasks, own.StepTimeS, own.Events, own.PlayedTasks)
				}
			}
		}
	}
	t.Logf("scenarios: %d runs in groups of one key, %d re-priced builds", runs, parallel.RepricedBuilds()-before)
}

// A pass that offloads activations is copied in a re-pricing build too
// (parallel's copyOffloads): the bundled DeepSeek-V3 on GB200 and its
// published run r023 share a structure key and offload the experts' fc1
// inputs, so the second, run after the first in one Reuse, re-prices the
// first's build with its passes copied, with the re-pricing checks on
// (every re-priced build compared with a fresh one), and its figures are
// its own run's alone. A copy that left the offloads' entries unmade
// would send the re-pricing build back to a fresh one (no re-priced build
// here) or, unchecked, wrong.
func TestRepricedWithOffloads(t *testing.T) {
	parallel.SetRepriceChecks(true)
	defer parallel.SetRepriceChecks(false)
	reuse := new(simulation.Reuse)
	for k, f := range []string{"../../scenarios/deepseek-v3-256-gb200.yaml", "../../scenarios/validation/r023-deepseek-v3-gb200-256gpu.yaml"} {
		s, err := scenario.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		if s.Offload() == 0 {
			t.Fatalf("%s offloads nothing", f)
		}
		repriced, copied := parallel.RepricedBuilds(), parallel.CopiedPassTasks()
		r, err := simulation.Run(context.Background(), s, simulation.Options{Reuse: reuse, FiguresOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := parallel.SetRepriceChecks(true); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		repriced, copied = parallel.RepricedBuilds()-repriced, parallel.CopiedPassTasks()-copied
		if k == 1 && (repriced == 0 || copied == 0) {
			t.Errorf("%s after its key's other: %d re-priced builds, %d tasks in copied passes", f, repriced, copied)
		}
		own, err := simulation.Run(context.Background(), s, simulation.Options{FiguresOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if r.StepTimeS != own.StepTimeS || r.Events != own.Events || r.PlayedTasks != own.PlayedTasks {
			t.Errorf("%s: step %v events %d played %d in one Reuse, alone %v %d %d", f, r.StepTimeS, r.Events, r.PlayedTasks, own.StepTimeS, own.Events, own.PlayedTasks)
		}
	}
}
