package simulation

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/scenario"
)

// StepRecord is one simulated optimizer step (steps.arrow).
type StepRecord struct {
	Step int
	// BaseS is the step's time as the discrete-event simulation played it,
	// every rank at its profile's speed.
	BaseS float64
	// TimeS is the step's time with the variability model's slowdowns:
	// BaseS plus the slowest rank's extra compute (BaseS without
	// variability).
	TimeS float64
	// SlowestRank is the rank whose slowdown set the step's time (-1
	// without variability); Slowdown its compute-time factor (1 without).
	SlowestRank int
	Slowdown    float64
}

// stepEnds returns when each simulated step ends: the last end of a task of
// that step on any played rank (a host copy nobody waits for excepted, as
// in analyseInstance).
func stepEnds(x *parallel.Executor, steps int) []engine.Time {
	ends := make([]engine.Time, steps)
	if played := x.StepEnds(); played != nil {
		// An every-rank play measured them as it ran (it may not have
		// kept every rank's times).
		copy(ends, played)
		return prefixMax(ends)
	}
	var start, end, issued []engine.Time
	for i := 0; i < x.Instances(); i++ {
		_, _, prog := x.Place(i)
		start, end, issued = x.Times(i, start[:0], end[:0], issued[:0])
		for t := range prog.Tasks {
			task := &prog.Tasks[t]
			if task.Kind == parallel.KindHostCopy {
				continue
			}
			if k := int(task.Step); k >= 0 && k < steps {
				ends[k] = max(ends[k], end[t])
			}
		}
	}
	return prefixMax(ends)
}

// prefixMax makes each step end no earlier than the one before.
func prefixMax(ends []engine.Time) []engine.Time {
	for k := 1; k < len(ends); k++ {
		ends[k] = max(ends[k], ends[k-1])
	}
	return ends
}

// playSteps fills res.Steps, res.StepP50S and res.StepP99S from the
// executed programs and the scenario's variability model, and returns the
// extra time the slowdowns add over all steps (0 without variability).
//
// The model (docs/design.md, "Step-time variability"): rank r computes
// step k at f_{r,k} = g_r · j_{r,k} · s_{r,k} times its profile's time,
// with g_r the GPU's persistent speed (drawn once, coefficient of
// variation gpu_cv), j_{r,k} the step's jitter (step_cv) and s_{r,k} =
// slow_factor with probability slow_prob (a straggler), else 1. Every step
// ends in collectives that synchronise the whole world (the data-parallel
// gradient reduction across replicas, the pipeline's flush across stages,
// tensor- and context-parallel collectives within a stage), so no rank
// starts step k+1 before the slowest rank finishes step k: the step takes
// its simulated time plus the largest extra compute over the ranks,
//
//	T_k = B_k + max_r C_{stage(r)} · (f_{r,k} − 1),
//
// with B_k the simulated step and C_s the compute time per step of stage
// s's busiest rank. Communication is not slowed. Draws are per rank, so a
// 16,384-GPU run costs 16,384 draws per step, not a 16,384-rank simulation.
func playSteps(s *scenario.Plan, res *Result, stageCompute []engine.Time, end engine.Time) float64 {
	steps := s.Sim.Steps
	var ends []engine.Time
	if steps == 1 {
		ends = []engine.Time{end} // a sweep point's usual case: no pass over the tasks
	} else {
		ends = stepEnds(res.exec, steps)
	}
	res.Steps = slices.Grow(res.Steps[:0], steps)[:steps] // Run's Result keeps its storage (Options.Result); every record is written next
	var prev engine.Time
	for k := range res.Steps {
		b := (ends[k] - prev).Seconds()
		prev = ends[k]
		res.Steps[k] = StepRecord{Step: k, BaseS: b, TimeS: b, SlowestRank: -1, Slowdown: 1}
	}
	v := s.VariabilityModel()
	var extra float64
	if v.Distribution != "none" {
		extra = drawSlowdowns(v, uint64(s.Sim.Seed), res.Layout, stageCompute, res.Steps)
	}
	times := make([]float64, steps)
	for k, st := range res.Steps {
		times[k] = st.TimeS
	}
	slices.Sort(times)
	res.StepP50S, res.StepP99S = nearestRank(times, 0.50), nearestRank(times, 0.99)
	return extra
}

// nearestRank is the p-quantile of sorted by the nearest-rank rule: the
// smallest value with at least p of the values at or below it.
func nearestRank(sorted []float64, p float64) float64 {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// drawSlowdowns draws every rank's factor per step (rank order, then step
// by step, from one PCG stream seeded by seed: the same seed gives the same
// bytes), adds each step's slowest extra compute to its TimeS and returns
// the sum of the extras.
func drawSlowdowns(v scenario.Variability, seed uint64, l *parallel.Layout, stageCompute []engine.Time, steps []StepRecord) float64 {
	rng := rand.New(rand.NewPCG(seed, 0x5354_5241_4747_4c45))
	gpuDraw, stepDraw := sampler(v.Distribution, v.GPUCV), sampler(v.Distribution, v.StepCV)
	world := l.World()
	compute := make([]float64, world) // C_{stage(r)}, seconds
	gpu := make([]float64, world)     // g_r
	for r := range world {
		compute[r] = stageCompute[l.CoordOf(r).PP].Seconds()
		gpu[r] = gpuDraw(rng)
	}
	var total float64
	for k := range steps {
		worst, worstRank, worstF := math.Inf(-1), 0, 1.0
		for r := range world {
			f := gpu[r] * stepDraw(rng)
			if v.SlowProb > 0 && rng.Float64() < v.SlowProb {
				f *= v.SlowFactor
			}
			if e := compute[r] * (f - 1); e > worst {
				worst, worstRank, worstF = e, r, f
			}
		}
		steps[k].TimeS = steps[k].BaseS + worst
		steps[k].SlowestRank, steps[k].Slowdown = worstRank, worstF
		total += worst
	}
	return total
}

// sampler returns the factor draw of a distribution with median 1 and
// coefficient of variation cv (cv 0: always 1, no draw).
func sampler(dist string, cv float64) func(rng *rand.Rand) float64 {
	switch {
	case cv == 0:
		return func(*rand.Rand) float64 { return 1 }
	case dist == "normal":
		// a factor at or below 0 would make time run backwards; at
		// cv ≤ 0.5 the floor takes the draws below −1.98 σ
		return func(rng *rand.Rand) float64 { return max(1+cv*rng.NormFloat64(), 0.01) }
	}
	sigma := math.Sqrt(math.Log1p(cv * cv))
	return func(rng *rand.Rand) float64 { return math.Exp(sigma * rng.NormFloat64()) }
}
