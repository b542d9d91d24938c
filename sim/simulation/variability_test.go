package simulation

import (
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/scenario"
)

// TestStepsWithoutVariabilityAreIdentical: without sim.variability every
// played step takes the same time, the summary's mean, p50 and p99.
func TestStepsWithoutVariabilityAreIdentical(t *testing.T) {
	for _, kv := range [][]string{
		{"sim.steps", "5"},
		{"sim.steps", "4", "parallel.tp", "4", "parallel.pp", "2", "parallel.dp", "2"},
		{"sim.steps", "3", "sim.fidelity", "flow"},
	} {
		r := runWith(t, nil, kv...)
		if len(r.Steps) != r.Scenario.Sim.Steps {
			t.Fatalf("%v: %d step records, want %d", kv, len(r.Steps), r.Scenario.Sim.Steps)
		}
		for _, st := range r.Steps {
			if st.TimeS != r.Steps[0].TimeS || st.TimeS != st.BaseS || st.SlowestRank != -1 {
				t.Errorf("%v: step %d: %+v, step 0 %+v", kv, st.Step, st, r.Steps[0])
			}
		}
		if d := r.StepP99S - r.StepTimeS; r.StepP50S != r.StepP99S || d > 1e-12*r.StepTimeS || d < -1e-12*r.StepTimeS {
			t.Errorf("%v: p50 %v p99 %v mean %v", kv, r.StepP50S, r.StepP99S, r.StepTimeS)
		}
	}
}

// variable is a variability block with per-step jitter and stragglers.
var variable = []string{"sim.steps", "40", "sim.variability.distribution", "lognormal",
	"sim.variability.step_cv", "0.02", "sim.variability.slow_prob", "0.0001"}

// TestVariabilitySlowestRank: with variability on, p99 ≥ p50 ≥ the
// simulated step, and the same layout replicated over 16,384 GPUs has a
// larger p99 than on 8 — the step waits for the slowest of more ranks.
func TestVariabilitySlowestRank(t *testing.T) {
	small := runWith(t, variable, "cluster.nodes", "1")
	large := runWith(t, variable, "cluster.nodes", "2048", "training.global_batch", "131072")
	for _, r := range []*Result{small, large} {
		base := r.Steps[0].BaseS
		if !(r.StepP99S >= r.StepP50S && r.StepP50S > base && r.StepP99S > r.StepP50S) {
			t.Errorf("%d GPUs: p50 %v p99 %v base %v", r.Scenario.GPUs(), r.StepP50S, r.StepP99S, base)
		}
		var sum float64
		for _, st := range r.Steps {
			if st.SlowestRank < 0 || st.SlowestRank >= r.Layout.World() || st.Slowdown <= 0 {
				t.Fatalf("%d GPUs: step %+v", r.Scenario.GPUs(), st)
			}
			sum += st.TimeS
		}
		if mean := sum / float64(len(r.Steps)); mean < 0.999999*r.StepTimeS || mean > 1.000001*r.StepTimeS {
			t.Errorf("%d GPUs: mean of steps %v, summary %v", r.Scenario.GPUs(), mean, r.StepTimeS)
		}
	}
	if small.Scenario.GPUs() != 8 || large.Scenario.GPUs() != 16384 {
		t.Fatalf("GPUs %d and %d", small.Scenario.GPUs(), large.Scenario.GPUs())
	}
	extra := func(r *Result) float64 { return r.StepP99S - r.Steps[0].BaseS }
	if !(large.StepP99S > small.StepP99S && extra(large) > extra(small)) {
		t.Errorf("p99 16,384 GPUs %v (+%v over the simulated step), 8 GPUs %v (+%v)", large.StepP99S, extra(large), small.StepP99S, extra(small))
	}
}

// TestVariabilityDeterministic: the same seed gives the same steps, another
// seed other steps.
func TestVariabilityDeterministic(t *testing.T) {
	a := runWith(t, variable, "sim.seed", "7")
	b := runWith(t, variable, "sim.seed", "7")
	c := runWith(t, variable, "sim.seed", "8")
	if !slices.Equal(a.Steps, b.Steps) || a.StepTimeS != b.StepTimeS || a.StepP99S != b.StepP99S {
		t.Error("seed 7 twice: different steps")
	}
	if slices.Equal(a.Steps, c.Steps) {
		t.Error("seeds 7 and 8: the same steps")
	}
}

// TestDrawSlowdownsHandComputed: without spread and with every rank a
// straggler, each step adds (slow_factor − 1) × the slowest stage's compute
// and names a rank of that stage.
func TestDrawSlowdownsHandComputed(t *testing.T) {
	order, err := parallel.ParseOrder("tp-cp-ep-dp-pp")
	if err != nil {
		t.Fatal(err)
	}
	l, err := parallel.NewLayout(2, 1, 1, 2, 2, order)
	if err != nil {
		t.Fatal(err)
	}
	v := scenario.Variability{Distribution: "lognormal", SlowProb: 1, SlowFactor: 1.5}
	steps := []StepRecord{{BaseS: 2}, {BaseS: 3}}
	stage := []engine.Time{800_000_000, 1_000_000_000} // 0.8 s and 1 s
	total := drawSlowdowns(v, 1, l, stage, steps)
	if total != 1 || steps[0].TimeS != 2.5 || steps[1].TimeS != 3.5 || steps[0].Slowdown != 1.5 {
		t.Errorf("extra %v, steps %+v", total, steps)
	}
	for _, st := range steps {
		if l.CoordOf(st.SlowestRank).PP != 1 {
			t.Errorf("slowest rank %d is on stage %d, want 1", st.SlowestRank, l.CoordOf(st.SlowestRank).PP)
		}
	}
	// a persistent spread alone gives every step the same slowest rank
	v = scenario.Variability{Distribution: "normal", GPUCV: 0.05, SlowFactor: 1.5}
	steps = []StepRecord{{BaseS: 2}, {BaseS: 2}, {BaseS: 2}}
	drawSlowdowns(v, 3, l, stage, steps)
	if steps[0] != steps[1] || steps[1] != steps[2] || steps[0].TimeS <= 2 {
		t.Errorf("persistent spread: %+v", steps)
	}
}

func TestVariabilityParseErrors(t *testing.T) {
	checkParseErrors(t, nil, []parseErrorCase{
		{[]string{"sim.variability.distribution", "weibull"}, "sim.variability.distribution: unknown value"},
		{[]string{"sim.variability.gpu_cv", "-0.1"}, "sim.variability.gpu_cv"},
		{[]string{"sim.variability.step_cv", "0.9"}, "sim.variability.step_cv"},
		{[]string{"sim.variability.slow_prob", "2"}, "sim.variability.slow_prob"},
		{[]string{"sim.variability.slow_factor", "0.5"}, "sim.variability.slow_factor"},
		{[]string{"sim.seed", "3"}, "sim.seed"},
	})
}

// BenchmarkDrawSlowdowns16k: 100 steps of draws over 16,384 ranks.
func BenchmarkDrawSlowdowns16k(b *testing.B) {
	order, _ := parallel.ParseOrder("tp-cp-ep-dp-pp")
	l, err := parallel.NewLayout(8, 1, 1, 128, 16, order)
	if err != nil {
		b.Fatal(err)
	}
	stage := make([]engine.Time, 16)
	for i := range stage {
		stage[i] = engine.Time(1e9)
	}
	v := scenario.Variability{Distribution: "lognormal", GPUCV: 0.011, StepCV: 0.02, SlowProb: 1e-4, SlowFactor: 1.5}
	steps := make([]StepRecord, 100)
	b.ResetTimer()
	for range b.N {
		drawSlowdowns(v, 1, l, stage, steps)
	}
}
