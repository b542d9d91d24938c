package simulation_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/simulation"
	"github.com/simtrain/simtrain/sim/sweep"
)

// TestFirstBuildKey holds simulation.FirstBuildKey equal to the structure
// key of the first StepConfig Run builds, on every simulated point of both
// bundled sweeps run as a sweep worker runs them (one Reuse, FiguresOnly:
// shortened where the rule says so, whole elsewhere), with and without
// alwaysShorten, and on the bundled scenarios run whole (no FiguresOnly)
// and with FiguresOnly. It fails if the two disagree on a single point,
// and if no point's first build is shortened or none is whole.
func TestFirstBuildKey(t *testing.T) {
	if testing.Short() {
		t.Skip("runs both bundled sweeps twice")
	}
	scratch := new(simulation.KeyScratch)
	var shortened, whole int
	check := func(name string, s *scenario.Plan, opt simulation.Options, always bool) {
		t.Helper()
		var first *parallel.StepConfig
		opt = simulation.WithOnBuild(opt, always, func(c *parallel.StepConfig) {
			if first == nil {
				cp := *c
				first = &cp
			}
		})
		if _, err := simulation.Run(context.Background(), s, opt); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if first == nil {
			t.Fatalf("%s: no build", name)
		}
		want, wantOK := first.StructureKey()
		got, ok := simulation.FirstBuildKey(s, opt, scratch)
		if got != want || ok != wantOK {
			t.Errorf("%s (always %v, figures only %v): FirstBuildKey %x %v, first build's key %x %v", name, always, opt.FiguresOnly, got, ok, want, wantOK)
		}
		if full := s.StepConfig(first.Layout).Microbatches; first.Microbatches < full {
			shortened++
		} else {
			whole++
		}
	}
	for _, f := range []string{"llama3-70b-1024-h100-layouts.yaml", "llama3-8b-gpu-types.yaml"} {
		sw, err := sweep.Load(filepath.Join("../../scenarios/sweeps", f), sweep.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, always := range []bool{false, true} {
			eachSweepPoint(sw, new(simulation.Reuse), func(_ int, p *sweep.Point, opt simulation.Options) {
				check(f+" point "+p.RunID, p.Scenario, opt, always)
			})
		}
	}
	files, _ := filepath.Glob("../../scenarios/*.yaml")
	for _, file := range files {
		s, err := scenario.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		if _, fits := s.MemoryPerStage(); !fits {
			continue
		}
		check(file, s, simulation.Options{}, false)
		check(file, s, simulation.Options{FiguresOnly: true}, false)
	}
	t.Logf("first builds: %d shortened, %d whole", shortened, whole)
	if shortened == 0 || whole == 0 {
		t.Errorf("first builds: %d shortened, %d whole; want both", shortened, whole)
	}
}
