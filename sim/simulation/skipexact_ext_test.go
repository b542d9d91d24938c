package simulation_test

import (
	"cmp"
	"context"
	"hash/fnv"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/simulation"
	"github.com/simtrain/simtrain/sim/sweep"
)

// skipPrint is what a play must give alike with and without the
// per-layer skip (parallel.SetLayerSkip): every task's start, end and
// issue on every played instance (hashed), the engine events, and the
// result's figures.
type skipPrint struct {
	times   uint64
	tasks   int
	figures simulation.Result
}

func skipPrintOf(t *testing.T, r *simulation.Result) skipPrint {
	t.Helper()
	x := simulation.ExecOf(r)
	if x == nil {
		t.Fatal("no executor kept")
	}
	h := fnv.New64a()
	var buf [8]byte
	put := func(v engine.Time) {
		for k := range buf {
			buf[k] = byte(uint64(v) >> (8 * k))
		}
		h.Write(buf[:])
	}
	n := 0
	var start, end, issued []engine.Time
	for i := 0; i < x.Instances(); i++ {
		start, end, issued = x.Times(i, start[:0], end[:0], issued[:0])
		for k := range start {
			put(start[k])
			put(end[k])
			if issued != nil {
				put(issued[k])
			}
		}
		n += len(start)
	}
	f := *r
	f.KeepFiguresOnly()
	f.SimWallS = 0
	f.Cluster, f.Layout = nil, nil
	return skipPrint{h.Sum64(), n, f}
}

// TestLayerSkipExact plays every bundled, validation and holdout scenario
// and every simulated point of the bundled 70B layout sweep with and
// without the per-layer skip, and requires every task's times, the events
// and the figures to be the same; and the skip to have derived tasks.
func TestLayerSkipExact(t *testing.T) {
	if testing.Short() {
		t.Skip("plays the 70B sweep twice")
	}
	was := parallel.SetLayerSkip(false)
	defer parallel.SetLayerSkip(was)
	var files []string
	for _, pat := range []string{"../../scenarios/*.yaml", "../../scenarios/validation/*.yaml", "../../scenarios/holdout/*.yaml"} {
		m, _ := filepath.Glob(pat)
		files = append(files, m...)
	}
	skipped := 0
	compare := func(name string, run func() *simulation.Result) {
		parallel.SetLayerSkip(false)
		off := run()
		if off == nil {
			return
		}
		a := skipPrintOf(t, off)
		parallel.SetLayerSkip(true)
		on := run()
		b := skipPrintOf(t, on)
		_, n := simulation.ExecOf(on).SkippedTasks()
		skipped += n
		if a.times != b.times || a.tasks != b.tasks {
			t.Errorf("%s: task times differ with the skip (%d tasks derived)", name, n)
		}
		if !reflect.DeepEqual(a.figures, b.figures) {
			t.Errorf("%s: figures differ with the skip (%d tasks derived): events %d against %d, step %v against %v",
				name, n, a.figures.Events, b.figures.Events, a.figures.StepTimeS, b.figures.StepTimeS)
		}
	}
	for _, f := range files {
		s, err := scenario.Load(f)
		if err != nil || s.GPUs() > 4096 && os.Getenv("SIMTRAIN_ALL_SCENARIOS") == "" {
			continue
		}
		compare(filepath.Base(f), func() *simulation.Result {
			r, err := simulation.Run(context.Background(), s, simulation.Options{})
			if err != nil {
				return nil
			}
			return r
		})
	}
	t.Logf("scenarios: %d tasks derived", skipped)
	sw, err := sweep.Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", sweep.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reuseOff, reuseOn := new(simulation.Reuse), new(simulation.Reuse)
	reuse := reuseOff
	points := 0
	eachSweepPoint(sw, nil, func(i int, p *sweep.Point, opt simulation.Options) {
		points++
		reuse = reuseOff
		compare(p.RunID, func() *simulation.Result {
			opt.Reuse = reuse
			r, err := simulation.Run(context.Background(), p.Scenario, opt)
			if err != nil {
				t.Fatalf("point %d: %v", i, err)
			}
			reuse = reuseOn
			return r
		})
	})
	t.Logf("scenarios and %d sweep points: %d tasks derived", points, skipped)
	if skipped == 0 {
		t.Error("the skip derived no task")
	}
}

// TestLayerSkipFaults: a skip made wrong on purpose (the period off by a
// nanosecond, the pending events left unmoved) changes what the bundled
// scenarios that skip play, so that TestLayerSkipExact can fail.
func TestLayerSkipFaults(t *testing.T) {
	was := parallel.SetLayerSkip(true)
	defer parallel.SetLayerSkip(was)
	defer parallel.SetLayerSkipFault(0)
	files, _ := filepath.Glob("../../scenarios/*.yaml")
	tried := 0
	for _, f := range files {
		s, err := scenario.Load(f)
		if err != nil || s.GPUs() > 4096 {
			continue
		}
		parallel.SetLayerSkipFault(0)
		parallel.SetLayerSkip(false)
		r, err := simulation.Run(context.Background(), s, simulation.Options{})
		if err != nil {
			continue
		}
		want := skipPrintOf(t, r)
		parallel.SetLayerSkip(true)
		r, err = simulation.Run(context.Background(), s, simulation.Options{})
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		if _, n := simulation.ExecOf(r).SkippedTasks(); n == 0 {
			continue
		}
		for _, fault := range []int{parallel.SkipFaultPeriod, parallel.SkipFaultEvents} {
			parallel.SetLayerSkipFault(fault)
			r, err := simulation.Run(context.Background(), s, simulation.Options{})
			if err != nil {
				continue // (a stall: seen)
			}
			if got := skipPrintOf(t, r); got.times == want.times && reflect.DeepEqual(got.figures, want.figures) {
				t.Errorf("%s: fault %d: the play is the same", filepath.Base(f), fault)
			}
		}
		if tried++; tried == 3 {
			break
		}
	}
	if tried == 0 {
		t.Fatal("no bundled scenario skips a layer")
	}
}

// TestSkipRunsKept plays the simulated points of the bundled 70B layout
// sweep with the per-layer skip in one reused arena (fresh builds of each
// structure, re-pricings within one) and requires the layer runs each
// program kept (parallel.SetSkipRunChecks) to be those found afresh at
// every Run, and some to have been kept across a re-pricing.
func TestSkipRunsKept(t *testing.T) {
	was := parallel.SetLayerSkip(true)
	defer parallel.SetLayerSkip(was)
	parallel.SetSkipRunChecks(true)
	defer parallel.SetSkipRunChecks(false)
	sw, err := sweep.Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", sweep.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The pp-1 points in the sweep's order: by structure key (its first
	// build's), so that a point re-prices the last build where it can.
	type point struct {
		i   int
		key uint64
	}
	var pts []point
	var scratch simulation.KeyScratch
	for i := 0; i < sw.Len(); i++ {
		if !sw.Valid(i) || sw.Point(i).Scenario.Parallel.PP != 1 {
			continue
		}
		key, _ := simulation.FirstBuildKey(sw.Point(i).Scenario, simulation.Options{FiguresOnly: true}, &scratch)
		pts = append(pts, point{i, key})
	}
	slices.SortStableFunc(pts, func(a, b point) int { return cmp.Compare(a.key, b.key) })
	reuse := new(simulation.Reuse)
	for _, pt := range pts {
		p := sw.Point(pt.i)
		mem, fits := p.Scenario.MemoryPerStage()
		if !fits {
			continue
		}
		if _, err := simulation.Run(context.Background(), p.Scenario, simulation.Options{Reuse: reuse, FiguresOnly: true, RunID: p.RunID, Memory: mem}); err != nil {
			t.Fatalf("point %d: %v", pt.i, err)
		}
	}
	bad, reused := parallel.SetSkipRunChecks(false)
	if bad != 0 {
		t.Errorf("%d kept layer runs differ from those found afresh", bad)
	}
	if reused == 0 {
		t.Error("no layer runs kept across a re-pricing")
	}
	t.Logf("layer runs kept across %d re-pricings", reused)
}
