package parallel

import (
	"fmt"
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
)

// PlanSteadyPairs plays pp + margin + 2 micro-batches (one more where the
// rest would not be whole units of two), copies units of two, and cuts
// every stage where no unit receives from a neighbour's suffix: each
// forward of a stage's last unit is sent by the stage before from its
// played part, each backward by the stage after. At pp 2 the cuts are
// counted by hand: with n played, stage 1 (no warm-up: F0 B0 F1 B1 …)
// cuts at 2n − 4 for its last backward and 2n − 8 for the tail unit;
// stage 0 (F0, then F(k+1) B(k), then B(n−1)) at 2n − 5 after its tail,
// where its unit's B(n−4) would come from stage 1's suffix, so it moves a
// unit back, to 2n − 9.
func TestPlanSteadyPairs(t *testing.T) {
	for _, tc := range []struct{ pp, m, played int }{
		{2, 40, 12}, {2, 41, 13}, {4, 40, 14}, {4, 39, 15}, {8, 64, 18},
	} {
		cfg := stagesConfig(t, tc.pp, tc.m, HostModel{})
		st, ok := PlanSteadyPairs(cfg, 8)
		if !ok {
			t.Fatalf("pp %d m %d: refused", tc.pp, tc.m)
		}
		if st.Unit() != 2 || st.Played != tc.played || st.Played+2*st.Extra != tc.m {
			t.Errorf("pp %d m %d: unit %d, played %d (want %d), %d copies", tc.pp, tc.m, st.Unit(), st.Played, tc.played, st.Extra)
		}
		checkUnitCuts(t, fmt.Sprintf("pp %d", tc.pp), cfg, st)
		if tc.pp == 2 {
			n := st.Played
			if g0, g1 := st.stages[0].end, st.stages[1].end; g0 != 2*n-9 || g1 != 2*n-8 {
				t.Errorf("pp 2, %d played: cuts %d and %d, want %d and %d", n, g0, g1, 2*n-9, 2*n-8)
			}
		}
	}
	// Schedules whose unit is not one micro-batch, or too few
	// micro-batches: none.
	if _, ok := PlanSteadyPairs(interleavedSteadyConfig(t, 64), 8); ok {
		t.Error("an interleaved step planned in pairs")
	}
	if _, ok := PlanSteadyPairs(stagesConfig(t, 4, 15, HostModel{}), 8); ok {
		t.Error("15 micro-batches at pp 4 planned in pairs with a margin of 8")
	}
}

// A pipeline replicated in units of two has the whole play's figures: the
// steady two-stage pipeline of steadyConfig (which repeats in units of
// one, so in units of two as well), with a host thread ahead of its GPU.
func TestSteadyPairsReplicate(t *testing.T) {
	const m = 41
	cfg := steadyConfig(t, m, HostModel{On: true, KernelFwd: 20 * engine.Microsecond, KernelBwd: 20 * engine.Microsecond, Call: 5 * engine.Microsecond})
	pr := unitPricer{unit: engine.Millisecond}
	// The margin PlanSteady's check takes there (8), and the reach + 2 =
	// 4 micro-batches more that a check of units of two reaches back
	// (simulation's retry adds them too).
	plan, ok := PlanSteadyPairs(cfg, 12)
	if !ok {
		t.Fatal("refused")
	}
	full, fe := playWhole(t, cfg, pr, false)
	c := *cfg
	c.Microbatches = plan.Played
	short, se := playWhole(t, &c, pr, true)
	if !short.Replicate(plan) {
		t.Fatalf("not replicated: %s", short.Refusal())
	}
	for i := range full.inst {
		if g, w := short.Stats(i), full.Stats(i); g != w {
			t.Errorf("stage %d: replicated in pairs %+v, full %+v", i, g, w)
		}
	}
	if g := se + short.ExtraEvents(); g != fe {
		t.Errorf("events: replicated %d + %d = %d, full %d", se, short.ExtraEvents(), g, fe)
	}
}

// PlanSteadyUnits plays pp + margin + g micro-batches, more until the rest
// is whole units of g (hand-computed), each stage's unit is g forwards and
// g backwards, and no stage's last unit receives from a peer's suffix; g
// below 2 is refused, and so is a play too short for its cuts (pp 8, units
// of 8, margin 8). (issue 18, round 63)
func TestPlanSteadyUnits(t *testing.T) {
	for _, tc := range []struct{ pp, m, margin, g, played int }{
		{4, 100, 8, 3, 16},  // 4 + 8 + 3 = 15, and (100 − 15) mod 3 = 1 more
		{4, 100, 8, 6, 22},  // 18, and 82 mod 6 = 4 more
		{8, 256, 32, 8, 48}, // 48, and 208 mod 8 = 0
		{2, 64, 8, 4, 16},   // 14, and 50 mod 4 = 2 more
	} {
		cfg := stagesConfig(t, tc.pp, tc.m, HostModel{})
		st, ok := PlanSteadyUnits(cfg, tc.margin, tc.g)
		if !ok {
			t.Fatalf("pp %d m %d g %d: refused", tc.pp, tc.m, tc.g)
		}
		if st.Unit() != tc.g || st.Played != tc.played || st.Played+tc.g*st.Extra != tc.m {
			t.Errorf("pp %d m %d g %d: unit %d, played %d (want %d), %d copies", tc.pp, tc.m, tc.g, st.Unit(), st.Played, tc.played, st.Extra)
		}
		checkUnitCuts(t, fmt.Sprintf("pp %d g %d", tc.pp, tc.g), cfg, st)
	}
	if _, ok := PlanSteadyUnits(stagesConfig(t, 4, 100, HostModel{}), 8, 1); ok {
		t.Error("units of one micro-batch planned by PlanSteadyUnits")
	}
	if _, ok := PlanSteadyUnits(stagesConfig(t, 8, 256, HostModel{}), 8, 8); ok {
		t.Error("pp 8 in units of 8 with a margin of 8 planned")
	}
}

// cycles finds a cycle of k units in start times whose unit-to-unit
// changes repeat every k units (hand-made: periods 10, 12, 11, 10, 12,
// 11, … for two tasks a unit): 3 and 6 hold, 1, 2, 4 and 5 do not; one
// task a unit late by 1 ns in the last unit breaks every k.
func TestCycles(t *testing.T) {
	periods := []engine.Time{10, 12, 11}
	const units, u = 16, 2
	state := make([]taskState, units*u)
	var at engine.Time = 100
	for j := range units {
		if j > 0 {
			at += periods[j%3]
		}
		for k := range u {
			state[j*u+k] = taskState{start: at + engine.Time(k) + 1, end: at + 5}
		}
	}
	for k, want := range map[int]bool{1: false, 2: false, 3: true, 4: false, 5: false, 6: true} {
		if got := cycles(state, u, k); got != want {
			t.Errorf("cycles(k %d) = %v, want %v", k, got, want)
		}
	}
	state[len(state)-1].start++
	for k := 1; k <= 6; k++ {
		if cycles(state, u, k) {
			t.Errorf("a late task: cycles(k %d) holds", k)
		}
	}
}

// checkUnitCuts fails t unless every stage's unit in st is st.Unit()
// forwards and as many backwards (two entries a micro-batch) and no entry
// of a stage's last unit receives what its peer (the stage before for a
// forward, after for a backward) sends from its suffix.
func checkUnitCuts(t *testing.T, name string, cfg *StepConfig, st Steady) {
	t.Helper()
	pp := len(st.stages)
	shape := pipeline.Shape{Stages: pp, Microbatches: st.Played, Virtual: 1}
	order := func(s int) []pipeline.Step { return cfg.Arena.order(cfg.Schedule, shape, s) }
	for s, c := range st.stages {
		if c.unit != 2*st.Unit() {
			t.Errorf("%s stage %d: unit of %d entries, want %d", name, s, c.unit, 2*st.Unit())
		}
		for _, e := range order(s)[c.end-c.unit : c.end] {
			peer := s + 1
			if e.Phase == pipeline.PhaseF {
				peer = s - 1
			}
			if peer < 0 || peer >= pp {
				continue
			}
			if i := slices.Index(order(peer), e); i < 0 || i >= st.stages[peer].end {
				t.Errorf("%s stage %d: %+v sent at entry %d of stage %d, cut at %d", name, s, e, i, peer, st.stages[peer].end)
			}
		}
	}
}
