package goodput

import "math"

// Estimate is the closed-form expectation for one training run.
type Estimate struct {
	Steps  int64
	TrainS float64 // failure-free training time (steps × step time)
	// EffectiveTrainingFraction is useful training time over wall time in
	// the long run: what remains after checkpoint stalls, lost work,
	// detection, restarts and planned stops.
	EffectiveTrainingFraction float64
	TimeToTrainS              float64
	// Interruptions and PlannedInterruptions are the expected unplanned
	// (failures) and planned stops over the run.
	Interruptions        float64
	PlannedInterruptions float64
	// LostWorkS is the training time redone after failures over the run;
	// CheckpointStallS the time steps waited for checkpoints.
	LostWorkS        float64
	CheckpointStallS float64
	// RestartPhaseS is the expected time from a failure to training again,
	// counting failures during the restart (each restarts it).
	RestartPhaseS float64
	CostUSD       float64
	GPUs          int // the job's GPUs and the spare nodes' GPUs, as billed
}

// Days is TimeToTrainS in days.
func (e Estimate) Days() float64 { return e.TimeToTrainS / 86400 }

// ExpectedLossS is the expected time a segment of length a has run when a
// failure (rate λ per second, exponential) strikes it, given that one does:
// E[X | X < a] = 1/λ − a·e^(−λa)/(1 − e^(−λa)), which tends to a/2 as
// λa → 0. It is the work lost per failure under checkpoint-restart.
func ExpectedLossS(lambda, a float64) float64 {
	if lambda <= 0 || a <= 0 {
		return a / 2
	}
	la := lambda * a
	if la < 1e-8 {
		return a / 2 * (1 - la/6)
	}
	return 1/lambda - a*math.Exp(-la)/(-math.Expm1(-la))
}

// within is E[min(X, L)] for X ~ Exp(λ): the expected time spent in an
// interval of length L that a failure may cut short.
func within(lambda, L float64) float64 {
	if lambda == 0 {
		return L
	}
	return -math.Expm1(-lambda*L) / lambda
}

// cut is P(X < L), the chance a failure cuts an interval of length L.
func cut(lambda, L float64) float64 { return -math.Expm1(-lambda * L) }

// restartLaplace is L(u) = E[e^(−uR)] over the restart durations R of the
// failure classes: each class c (probability π_c) takes its fixed restart,
// and a node-out failure that finds no spare (PNoSpare) also waits an
// exponential time with mean SpareWaitS (rate ν): e^(−u·b)(1 − p + p·ν/(ν+u)).
func (p *Plan) restartLaplace(u float64) float64 {
	if p.FailuresPerHour == 0 {
		return math.Exp(-u * p.RestartS)
	}
	nu := 1 / p.SpareWaitS
	sum := 0.0
	for i, cl := range Classes {
		pi := p.ClassPerHour[i] / p.FailuresPerHour
		if pi == 0 {
			continue
		}
		v := math.Exp(-u * p.RestartS)
		if cl.NodeOut && p.PNoSpare > 0 {
			v *= 1 - p.PNoSpare + p.PNoSpare*nu/(nu+u)
		}
		sum += pi * v
	}
	return sum
}

// RestartPhase is the expected time from a failure until training runs
// again when failures keep striking during restarts (each one starts a new
// restart of its own class): E[T_r] = (1/L(λ) − 1)/λ, the renewal argument
// of Daly 2006 with random restart durations.
func (p *Plan) RestartPhase() float64 {
	lambda := p.FailuresPerHour / 3600
	if lambda == 0 {
		return 0
	}
	return (1/p.restartLaplace(lambda) - 1) / lambda
}

// cycle is the per-segment renewal-reward of the model: its expected wall
// time, expected committed progress, and the expected planned stops and
// lost training time in it, for segments of tau seconds of training.
type cycle struct {
	time, progress, planned, lost, stall float64
}

// segment returns the cycle of the model (docs/goodput.md, "Model"): a
// segment of tau training seconds and a blocking checkpoint δ must run for
// a = tau + δ without a failure (rate λ, over wall time) to commit; a
// failure costs the time it ran and a restart phase. An asynchronous write
// runs BackgroundS (w) into the next segment; a failure within it also
// loses the previous segment (the chain's state B, entered after every
// committed segment without a planned stop: π_B = P·(1 − q)). After a
// committed segment a planned stop is taken if one was requested during it
// (rate μ, q = 1 − e^(−μa)); it waits for an asynchronous write, then
// restarts without detection. Requests while the job is down are served
// then.
func (p *Plan) segment(tau float64) cycle {
	lambda := p.FailuresPerHour / 3600
	mu := p.PlannedPerHour / 3600
	a := tau + p.BlockingS
	w := p.BackgroundS
	tr := p.RestartPhase()
	ok := math.Exp(-lambda * a)
	q := cut(mu, a)
	// planned block: the asynchronous write (a failure in it loses the
	// segment), then the planned restart (a failure in it starts a restart
	// phase instead)
	rp := p.PlannedRestartS
	blockTime := within(lambda, w) + cut(lambda, w)*tr +
		math.Exp(-lambda*w)*(within(lambda, rp)+cut(lambda, rp)*tr)
	blockLoss := tau * cut(lambda, w)
	// state B: the previous segment's write still in flight
	piB := 0.0
	if w > 0 {
		piB = ok * (1 - q)
	}
	var c cycle
	c.time = within(lambda, a) + cut(lambda, a)*tr + ok*q*blockTime
	c.progress = ok*tau - ok*q*blockLoss - piB*tau*cut(lambda, w)
	c.planned = ok * q
	// training lost in a failed attempt: E[min(X, τ); X < a]
	lostHere := 0.0
	if lambda > 0 {
		lostHere = -math.Expm1(-lambda*tau)/lambda - tau*ok
	}
	c.lost = lostHere + ok*q*blockLoss + piB*tau*cut(lambda, w)
	// checkpoint stalls: the blocking part of every attempt that reached it
	c.stall = math.Exp(-lambda*tau) * within(lambda, p.BlockingS)
	return c
}

// EffectiveTrainingFraction is the long-run effective training fraction of
// the plan's checkpoint interval (1 when nothing fails: the run then
// checkpoints only at its end, where it also takes planned stops).
func (p *Plan) EffectiveTrainingFraction() float64 {
	if math.IsInf(p.IntervalS, 1) {
		return 1
	}
	c := p.segment(p.IntervalS)
	return c.progress / c.time
}

// Expect is the closed-form expectation of training `tokens` tokens: the
// long-run renewal-reward rate of the segment cycle (exact to within one
// cycle for a run of many segments), the failure counts over the run's
// wall time (a Poisson process: λ·T) and the cost.
func (p *Plan) Expect(tokens float64) Estimate {
	var e Estimate
	e.Steps, e.TrainS = p.TrainSeconds(tokens)
	tau := p.IntervalS
	if math.IsInf(tau, 1) || tau > e.TrainS {
		tau = e.TrainS
	}
	e.RestartPhaseS = p.RestartPhase()
	if e.TrainS == 0 {
		e.EffectiveTrainingFraction = 1
		return e
	}
	c := p.segment(tau)
	e.EffectiveTrainingFraction = c.progress / c.time
	e.TimeToTrainS = e.TrainS / e.EffectiveTrainingFraction
	cycles := e.TimeToTrainS / c.time
	e.Interruptions = p.FailuresPerHour / 3600 * e.TimeToTrainS
	e.PlannedInterruptions = c.planned * cycles
	e.LostWorkS = c.lost * cycles
	e.CheckpointStallS = c.stall * cycles
	e.GPUs = p.Job.GPUs + p.SpareNodes*p.Job.GPUs/p.Job.Nodes
	e.CostUSD = e.TimeToTrainS / 3600 * float64(e.GPUs) * p.Job.GPUHourUSD
	return e
}

// InterruptionsIn is the expected unplanned and planned interruptions in a
// window of wall time (seconds) of the run described by est: failures are
// Poisson over wall time; planned stops come at the run's long-run rate.
func (p *Plan) InterruptionsIn(est Estimate, windowS float64) (unplanned, planned float64) {
	windowS = min(windowS, est.TimeToTrainS)
	unplanned = p.FailuresPerHour / 3600 * windowS
	if est.TimeToTrainS > 0 {
		planned = est.PlannedInterruptions * windowS / est.TimeToTrainS
	}
	return unplanned, planned
}
