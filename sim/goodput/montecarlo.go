package goodput

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Interruption is one simulated interruption of one Monte Carlo trial (one
// row of goodput.arrow). Times are integer nanoseconds of wall time from
// the start of the run.
type Interruption struct {
	Trial, Seq int
	AtNs       int64
	Planned    bool
	// Cause is the failed component class (Classes), "maintenance" for a
	// planned stop.
	Cause string
	// DuringRestart says the failure struck while the job was restarting.
	DuringRestart bool
	// LostWorkNs is the training time rolled back by this interruption.
	LostWorkNs int64
	// RestartNs is the restart it starts (detection, any wait for a
	// spare, relaunch, communicator bring-up, load; for a planned stop the
	// remaining write and the restart); a later failure may cut it short.
	RestartNs   int64
	SpareWaitNs int64
}

// Trial is one simulated run.
type Trial struct {
	TimeS                float64
	Interruptions        int
	PlannedInterruptions int
	LostWorkS            float64
}

// Distribution summarises the trials of a Monte Carlo run.
type Distribution struct {
	Trials                             int
	Seed                               uint64
	MeanDays, StdDays                  float64
	P10Days, P50Days, P90Days          float64
	MeanInterruptions, MeanPlanned     float64
	P10Interruptions, P90Interruptions float64
	MeanEffectiveTrainingFraction      float64
}

// Simulate plays `trials` runs of training `tokens` tokens under the
// plan's model — the same one Expect solves in closed form
// (docs/goodput.md, "Model") — with failures, restarts, spare waits and
// planned stops drawn from trial t's own PCG stream seeded (seed, t), so
// the result depends only on the inputs. emit, if not nil, receives every
// interruption in order. Time is integer nanoseconds.
func (p *Plan) Simulate(tokens float64, trials int, seed uint64, emit func(Interruption)) Distribution {
	_, trainS := p.TrainSeconds(tokens)
	s := newSimState(p, trainS)
	out := make([]Trial, trials)
	for t := range trials {
		rng := rand.New(rand.NewPCG(seed, uint64(t)))
		out[t] = s.run(rng, t, emit)
	}
	return summarise(out, trainS, seed)
}

// simState holds a plan's durations in nanoseconds and its class
// distribution, shared by every trial.
type simState struct {
	p                 *Plan
	work, tau         int64
	blocking, bg      int64
	restart, planned  int64
	lambda, mu        float64 // per nanosecond
	cum               []float64
	nodeOut           []bool
	pNoSpare, waitNs  float64
	classNames        []string
	hasFail, hasPlans bool
}

func ns(s float64) int64 { return int64(math.Round(s * 1e9)) }

func newSimState(p *Plan, trainS float64) *simState {
	s := &simState{p: p, work: ns(trainS), blocking: ns(p.BlockingS), bg: ns(p.BackgroundS),
		restart: ns(p.RestartS), planned: ns(p.PlannedRestartS),
		lambda: p.FailuresPerHour / 3600e9, mu: p.PlannedPerHour / 3600e9,
		pNoSpare: p.PNoSpare, waitNs: p.SpareWaitS * 1e9}
	s.tau = s.work
	if !math.IsInf(p.IntervalS, 1) {
		s.tau = min(s.work, ns(p.IntervalS))
	}
	acc := 0.0
	for i, cl := range Classes {
		if p.ClassPerHour[i] == 0 {
			continue
		}
		acc += p.ClassPerHour[i] / max(p.FailuresPerHour, 1e-300)
		s.cum = append(s.cum, acc)
		s.nodeOut = append(s.nodeOut, cl.NodeOut)
		s.classNames = append(s.classNames, cl.Name)
	}
	s.hasFail, s.hasPlans = s.lambda > 0, s.mu > 0
	return s
}

// maxInterruptions stops a trial whose failures outpace its restarts
// (Expect's fraction is then about 0; callers check it first).
const maxInterruptions = 10_000_000

// never is a time no run reaches (146 years), so t + never cannot overflow.
const never = int64(1) << 62

// expNs draws an exponential waiting time with the given rate per ns.
func expNs(rng *rand.Rand, rate float64) int64 {
	if rate <= 0 {
		return never
	}
	v := rng.ExpFloat64() / rate
	if v >= float64(never) {
		return never
	}
	return int64(math.Ceil(v))
}

// class draws the class of a failure.
func (s *simState) class(rng *rand.Rand) int {
	u := rng.Float64() * s.cum[len(s.cum)-1]
	for i, c := range s.cum {
		if u < c {
			return i
		}
	}
	return len(s.cum) - 1
}

func (s *simState) run(rng *rand.Rand, trial int, emit func(Interruption)) Trial {
	var tr Trial
	var t, done, prev int64 // wall clock, committed work, the segment whose write is in flight
	inFlight := false       // state B: prev's asynchronous write has not finished
	nextFail := t + expNs(rng, s.lambda)
	nextReq := t + expNs(rng, s.mu)
	seq := 0
	record := func(iv Interruption) {
		iv.Trial, iv.Seq = trial, seq
		seq++
		if iv.Planned {
			tr.PlannedInterruptions++
		} else {
			tr.Interruptions++
		}
		tr.LostWorkS += float64(iv.LostWorkNs) / 1e9
		if emit != nil {
			emit(iv)
		}
	}
	// restartPhase plays restarts from a failure at t (class c, already
	// recorded by the caller through first) until one completes.
	restartPhase := func(first Interruption) {
		iv := first
		for {
			c := s.class(rng)
			r := s.restart
			var wait int64
			if s.nodeOut[c] && s.pNoSpare > 0 && rng.Float64() < s.pNoSpare {
				wait = int64(math.Ceil(rng.ExpFloat64() * s.waitNs))
				r += wait
			}
			iv.Cause, iv.RestartNs, iv.SpareWaitNs = s.classNames[c], r, wait
			record(iv)
			nextFail = t + expNs(rng, s.lambda)
			if nextFail >= t+r {
				t += r
				break
			}
			t = nextFail
			iv = Interruption{AtNs: t, DuringRestart: true}
			if seq > maxInterruptions {
				break
			}
		}
		inFlight = false
		nextReq = t + expNs(rng, s.mu)
	}
	for done < s.work {
		if seq > maxInterruptions {
			// failures outpace restarts: the run does not finish
			tr.TimeS = math.Inf(1)
			return tr
		}
		seg := min(s.tau, s.work-done)
		a := seg + s.blocking
		start := t
		if nextFail < start+a { // the attempt fails
			x := nextFail - start
			t = nextFail
			lost := min(x, seg)
			if inFlight && x < s.bg {
				lost += prev
				done -= prev
			}
			restartPhase(Interruption{AtNs: t, LostWorkNs: lost})
			continue
		}
		t = start + a
		done += seg
		inFlight, prev = s.bg > 0, seg
		if done >= s.work || nextReq >= t {
			continue
		}
		// a planned stop requested during the segment: let the write
		// finish, then restart without detection
		iv := Interruption{AtNs: t, Planned: true, Cause: "maintenance", RestartNs: s.bg + s.planned}
		record(iv)
		if nextFail < t+s.bg { // the write fails: the segment is lost
			t = nextFail
			done -= seg
			restartPhase(Interruption{AtNs: t, LostWorkNs: seg, DuringRestart: true})
			continue
		}
		t += s.bg
		if nextFail < t+s.planned {
			t = nextFail
			restartPhase(Interruption{AtNs: t, DuringRestart: true})
			continue
		}
		t += s.planned
		inFlight = false
		nextReq = t + expNs(rng, s.mu)
	}
	tr.TimeS = float64(t) / 1e9
	return tr
}

func summarise(trials []Trial, trainS float64, seed uint64) Distribution {
	d := Distribution{Trials: len(trials), Seed: seed}
	if len(trials) == 0 {
		return d
	}
	days := make([]float64, len(trials))
	ints := make([]float64, len(trials))
	var sum, sumI, sumP, sumF float64
	for i, t := range trials {
		days[i] = t.TimeS / 86400
		ints[i] = float64(t.Interruptions)
		sum += days[i]
		sumI += ints[i]
		sumP += float64(t.PlannedInterruptions)
		if t.TimeS > 0 {
			sumF += trainS / t.TimeS
		}
	}
	n := float64(len(trials))
	d.MeanDays, d.MeanInterruptions, d.MeanPlanned = sum/n, sumI/n, sumP/n
	d.MeanEffectiveTrainingFraction = sumF / n
	var ss float64
	for _, v := range days {
		ss += (v - d.MeanDays) * (v - d.MeanDays)
	}
	if len(trials) > 1 {
		d.StdDays = math.Sqrt(ss / (n - 1))
	}
	slices.Sort(days)
	slices.Sort(ints)
	d.P10Days, d.P50Days, d.P90Days = Quantile(days, 0.1), Quantile(days, 0.5), Quantile(days, 0.9)
	d.P10Interruptions, d.P90Interruptions = Quantile(ints, 0.1), Quantile(ints, 0.9)
	return d
}

// Quantile is the q-quantile of sorted values, linear between order
// statistics (Hyndman & Fan type 7, numpy's default).
func Quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	h := q * float64(len(sorted)-1)
	lo := int(math.Floor(h))
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}
