package simulation_test

import (
	"context"
	"reflect"
	"sync"
	"testing"

	"github.com/simtrain/simtrain/sim/simulation"
	"github.com/simtrain/simtrain/sim/sweep"
)

// twinSweep is a small search at flow fidelity (every rank plays) over the
// recompute policies: with FlashAttention, selective recomputation adds
// nothing to the step, so each none point has a selective twin.
const twinSweep = `
name: twins
scenario:
  name: twins
  model:
    preset: llama3-8b
    layers: 8
  training:
    seq_len: 1024
    global_batch: 16
    micro_batch: 1
  cluster:
    gpu: h100-sxm
    nodes: 2
  parallel:
    tp: 2
  sim:
    fidelity: flow
sweep:
  training.recompute: [none, selective, full]
  parallel.tp: [2, 4]
  parallel.pp: [1, 2]
  parallel.zero: [1, 3]
`

// twinRun runs point i of sw as a sweep worker does (figures only, its
// run id and memory given), with reuse (nil: none) and cutoff.
func twinRun(t *testing.T, sw *sweep.Sweep, i int, reuse *simulation.Reuse, cutoff float64) *simulation.Result {
	t.Helper()
	p := sw.Point(i)
	mem, _ := p.Scenario.MemoryPerStage()
	r, err := simulation.Run(context.Background(), p.Scenario, simulation.Options{FiguresOnly: true, RunID: p.RunID, Memory: mem, Reuse: reuse, StepCutoffS: cutoff})
	if err != nil {
		t.Fatalf("point %d: %v", i, err)
	}
	return r
}

// Workers sharing a PriceShare take a twin's figures from the play and
// work out their own from their scenario: every point's figures, HFU and
// memory among them, equal a run without a Reuse, the twins are taken
// (each none point's selective twin: a worker waits for a twin another
// is playing), and a point that differs in more than recomputation is
// played.
func TestTwinPlaysSameFigures(t *testing.T) {
	if testing.Short() {
		t.Skip("plays a flow-fidelity sweep twice")
	}
	sw, err := sweep.Parse([]byte(twinSweep), ".", sweep.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var points []int
	want := map[int]simulation.Result{}
	for i := range sw.Len() {
		p := sw.Point(i)
		if p.Err != nil {
			continue
		}
		if _, fits := p.Scenario.MemoryPerStage(); !fits {
			continue
		}
		points = append(points, i)
		want[i] = simulation.TwinFigures(twinRun(t, sw, i, nil, 0))
	}
	// The twins: points equal but for recompute none and selective.
	pairs := 0
	for _, i := range points {
		for _, j := range points {
			a, b := sw.Point(i).Scenario, sw.Point(j).Scenario
			if a.Training.Recompute == "none" && b.Training.Recompute == "selective" &&
				a.Parallel.TP == b.Parallel.TP && a.Parallel.PP == b.Parallel.PP && a.Parallel.Zero == b.Parallel.Zero {
				pairs++
				if want[i].StepTimeS != want[j].StepTimeS {
					t.Errorf("points %d and %d: step %v and %v: not twins", i, j, want[i].StepTimeS, want[j].StepTimeS)
				}
				if want[i].HardwareFLOPsPerStep == want[j].HardwareFLOPsPerStep {
					t.Errorf("points %d and %d: the same hardware FLOPs: the test cannot see them taken from the twin", i, j)
				}
			}
		}
	}
	if pairs < 4 {
		t.Fatalf("%d twin pairs among %d points", pairs, len(points))
	}
	share := new(simulation.PriceShare)
	reuses := [2]*simulation.Reuse{new(simulation.Reuse), new(simulation.Reuse)}
	for _, r := range reuses {
		r.SharePrices(share)
	}
	// Both workers walk the points in order, each taking every other one:
	// a none point and its selective twin (three points on) mostly play
	// at once on the two.
	var wg sync.WaitGroup
	var mu sync.Mutex
	taken := 0
	for g, reuse := range reuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k, i := range points {
				if k%2 != g {
					continue
				}
				r := twinRun(t, sw, i, reuse, 0)
				if got := simulation.TwinFigures(r); !reflect.DeepEqual(got, want[i]) {
					t.Errorf("point %d (%s): %+v, alone %+v", i, sw.Point(i).Scenario.Training.Recompute, got, want[i])
				}
				if r.TwinPlay {
					if rc := sw.Point(i).Scenario.Training.Recompute; rc == "full" {
						t.Errorf("point %d: full recomputation took a twin's play", i)
					}
					mu.Lock()
					taken++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if taken != pairs {
		t.Errorf("%d plays taken from a twin, want %d (one of each pair)", taken, pairs)
	}
	// Once more on one worker: every pair's second is taken.
	again := new(simulation.Reuse)
	again.SharePrices(new(simulation.PriceShare))
	taken = 0
	for _, i := range points {
		r := twinRun(t, sw, i, again, 0)
		if got := simulation.TwinFigures(r); !reflect.DeepEqual(got, want[i]) {
			t.Errorf("one worker, point %d: %+v, alone %+v", i, got, want[i])
		}
		if r.TwinPlay {
			taken++
		}
	}
	if taken != pairs {
		t.Errorf("one worker: %d plays taken from a twin, want %d", taken, pairs)
	}
}

// A twin's figures are taken under a cutoff only where its play ended by
// it; under a lower cutoff the point plays, and is ruled out as without a
// twin. A twin given up against the same cutoff is taken: the point is
// ruled out with its bound; against another cutoff it is played.
func TestTwinPlaysUnderCutoff(t *testing.T) {
	sw, err := sweep.Parse([]byte(twinSweep), ".", sweep.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var none, selective = -1, -1
	for i := range sw.Len() {
		s := sw.Point(i).Scenario
		if s == nil || s.Parallel.TP != 2 || s.Parallel.PP != 2 || s.Parallel.Zero != 1 {
			continue
		}
		switch s.Training.Recompute {
		case "none":
			none = i
		case "selective":
			selective = i
		}
	}
	if none < 0 || selective < 0 {
		t.Fatal("no twins in the sweep")
	}
	alone := twinRun(t, sw, selective, nil, 0)
	// A cutoff the play is given up at (not the build: no play to share).
	below := 0.0
	for f := 0.995; f > 0.5; f -= 0.005 {
		if r := twinRun(t, sw, selective, nil, alone.StepTimeS*f); r.RuledOut && simulation.CutInPlay(r) {
			below = alone.StepTimeS * f
			break
		}
	}
	if below == 0 {
		t.Fatal("no cutoff gives the play up in its play")
	}
	for _, c := range []struct {
		name          string
		cutoff, first float64 // the point's, its twin's before it
		taken         bool
	}{
		{"above the step", alone.StepTimeS * 1.01, 0, true},
		{"below it", below, 0, false},
		{"below it, the twin given up at the same", below, below, true},
		{"below it, the twin given up at another", below, below * 0.999, false},
	} {
		reuse := new(simulation.Reuse)
		reuse.SharePrices(new(simulation.PriceShare))
		twinRun(t, sw, none, reuse, c.first)
		got := twinRun(t, sw, selective, reuse, c.cutoff)
		want := twinRun(t, sw, selective, nil, c.cutoff)
		if got.TwinPlay != c.taken {
			t.Errorf("cutoff %s: taken %v, want %v", c.name, got.TwinPlay, c.taken)
		}
		if got.RuledOut != want.RuledOut || !reflect.DeepEqual(simulation.TwinFigures(got), simulation.TwinFigures(want)) {
			t.Errorf("cutoff %s: %+v, alone %+v", c.name, simulation.TwinFigures(got), simulation.TwinFigures(want))
		}
	}
}
