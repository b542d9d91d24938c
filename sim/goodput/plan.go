package goodput

import (
	"fmt"
	"math"
)

// Job is what the step simulation says about a training job, as plain
// values (simulation.GoodputJob fills it from a simulated step).
type Job struct {
	GPUs, Nodes, NICsPerNode int
	StepTimeS                float64
	TokensPerStep            float64
	GPUHourUSD               float64
	// CheckpointBytes is the model state a checkpoint holds, each byte
	// once: weights, master weights and optimizer states (not gradients).
	CheckpointBytes float64
	// HeldBytesPerGPU is the largest model state one GPU holds under the
	// layout's ZeRO/FSDP sharding (its weights and its optimizer shard):
	// what an asynchronous save stages to host memory on that GPU.
	HeldBytesPerGPU float64
	// D2HBytesPerS is one GPU's pinned device-to-host copy bandwidth.
	D2HBytesPerS float64
}

// Plan is the goodput model of one job: failure rates scaled to its
// component counts, checkpoint costs and interval, restart costs and the
// spare pool. Every duration is in seconds.
type Plan struct {
	Config *Config
	Job    Job
	Set    *RateSet

	// PerUnitHour is each class's rate per unit-hour after the scenario's
	// overrides; ClassPerHour the job's failures per hour of each class
	// (rate × units); FailuresPerHour their sum, λ.
	PerUnitHour     [6]float64
	ClassPerHour    [6]float64
	FailuresPerHour float64
	PlannedPerHour  float64

	// Checkpoint costs. BlockingS is what the step waits for at each
	// checkpoint: the write (sync) or the snapshot to host memory (async);
	// BackgroundS is the asynchronous write behind training (0 for sync),
	// during which the checkpoint is not yet durable.
	CheckpointBytes float64
	WriteS, LoadS   float64
	SnapshotS       float64
	BlockingS       float64
	BackgroundS     float64
	// IntervalS is the training time between checkpoints (IntervalSteps
	// whole steps); +Inf when nothing fails and the rule picks none.
	IntervalS     float64
	IntervalSteps int
	// IntervalRule is daly, young or fixed.
	IntervalRule string

	// Restart costs: RestartS is an unplanned restart (detection, relaunch,
	// communicator bring-up, checkpoint load); PlannedRestartS a planned one
	// (no detection).
	DetectS, RelaunchS, CommInitS float64
	RestartS, PlannedRestartS     float64

	// SpareNodes is the hot-spare pool (SpareAuto: sized here);
	// NodesInRepair the mean number of the job's nodes under repair;
	// PNoSpare the chance a node-out failure finds no spare; SpareWaitS the
	// mean wait for a repaired node then.
	SpareNodes    int
	SpareAuto     bool
	NodesInRepair float64
	PNoSpare      float64
	SpareWaitS    float64
}

// NewPlan builds the model of job under c (resolved; nil = defaults).
func NewPlan(c *Config, job Job) (*Plan, error) {
	if c == nil {
		c = Defaults()
	}
	switch {
	case !(job.StepTimeS > 0) || math.IsInf(job.StepTimeS, 0):
		return nil, errNoSteps
	case job.GPUs < 1 || job.Nodes < 1 || job.NICsPerNode < 1:
		return nil, fmt.Errorf("goodput: job needs GPUs, nodes and NICs (got %d, %d, %d)", job.GPUs, job.Nodes, job.NICsPerNode)
	case !(job.TokensPerStep > 0):
		return nil, fmt.Errorf("goodput: tokens per step must be > 0, got %v", job.TokensPerStep)
	case job.CheckpointBytes < 0 || job.HeldBytesPerGPU < 0:
		return nil, fmt.Errorf("goodput: negative checkpoint size")
	}
	set := RateSetByName(c.FailureRates)
	if set == nil {
		return nil, fmt.Errorf("goodput.failure_rates: unknown set %q", c.FailureRates)
	}
	p := &Plan{Config: c, Job: job, Set: set, PerUnitHour: set.PerHour}
	for i, cl := range Classes {
		if v := c.FailuresPerHour.Rate(cl.Name); v != nil {
			p.PerUnitHour[i] = *v
		}
	}
	units := map[Unit]float64{PerGPU: float64(job.GPUs), PerNIC: float64(job.Nodes * job.NICsPerNode), PerNode: float64(job.Nodes)}
	for i, cl := range Classes {
		p.ClassPerHour[i] = p.PerUnitHour[i] * units[cl.Unit]
		p.FailuresPerHour += p.ClassPerHour[i]
	}
	p.PlannedPerHour = *c.PlannedPerDay / 24
	p.checkpointCosts()
	p.restartCosts()
	p.spares()
	p.interval()
	return p, nil
}

// checkpointCosts sizes the write, load and snapshot. A sharded checkpoint
// spreads the bytes evenly over the nodes, so it takes the longer of the
// storage system's aggregate time and one node's share at the node's
// bandwidth; a full checkpoint goes through one node.
func (p *Plan) checkpointCosts() {
	ck := &p.Config.Checkpoint
	total := p.Job.CheckpointBytes
	node := *ck.NodeGBs * 1e9
	aggW, aggR := *ck.StorageWriteGBs*1e9, *ck.StorageReadGBs*1e9
	p.CheckpointBytes = total
	switch ck.Format {
	case "full":
		p.WriteS = total / min(node, aggW)
		p.LoadS = total / min(node, aggR)
	default:
		share := total / float64(p.Job.Nodes)
		p.WriteS = max(total/aggW, share/node)
		p.LoadS = max(total/aggR, share/node)
	}
	if p.Job.D2HBytesPerS > 0 {
		p.SnapshotS = p.Job.HeldBytesPerGPU / p.Job.D2HBytesPerS
	}
	if ck.Mode == "async" {
		p.BlockingS, p.BackgroundS = p.SnapshotS, p.WriteS
	} else {
		p.BlockingS = p.WriteS
	}
}

func (p *Plan) restartCosts() {
	c := p.Config
	p.DetectS, p.RelaunchS = *c.DetectS, *c.RelaunchS
	p.CommInitS = *c.CommInitMsPerGPU / 1e3 * float64(p.Job.GPUs)
	p.PlannedRestartS = p.RelaunchS + p.CommInitS + p.LoadS
	p.RestartS = p.DetectS + p.PlannedRestartS
}

// spares sizes the spare pool and the chance it is empty. The job's nodes
// under repair form an M/M/∞ queue (node-out failures arrive at rate Λ,
// each repair takes NodeRepairH on average), so their number is Poisson
// with mean m = Λ·repair; a failure finds every spare in use when at least
// SpareNodes nodes are under repair (PASTA). Then it waits for the first of
// them to come back: repair/(SpareNodes+1) on average for exponential
// repairs.
func (p *Plan) spares() {
	repairS := *p.Config.NodeRepairH * 3600
	out := 0.0
	for i, cl := range Classes {
		if cl.NodeOut {
			out += p.ClassPerHour[i]
		}
	}
	p.NodesInRepair = out * *p.Config.NodeRepairH
	if p.Config.SpareNodes != nil {
		p.SpareNodes = *p.Config.SpareNodes
	} else {
		p.SpareAuto = true
		for out > 0 && PoissonTail(p.NodesInRepair, p.SpareNodes) > 1-SparePercentile {
			p.SpareNodes++
		}
	}
	p.PNoSpare = PoissonTail(p.NodesInRepair, p.SpareNodes)
	if out == 0 {
		p.PNoSpare = 0
	}
	p.SpareWaitS = repairS / float64(p.SpareNodes+1)
}

// PoissonTail is P(N >= k) for N ~ Poisson(m).
func PoissonTail(m float64, k int) float64 {
	if k <= 0 {
		return 1
	}
	if m <= 0 {
		return 0
	}
	// P(N <= k-1) summed term by term from P(N = 0) = e^-m.
	term, cdf := math.Exp(-m), 0.0
	for i := 0; i < k; i++ {
		if i > 0 {
			term *= m / float64(i)
		}
		cdf += term
	}
	return max(0, 1-cdf)
}

// YoungInterval is Young's first-order optimum checkpoint interval
// (Young 1974, CACM 17(9)): τ = √(2δM) for a checkpoint costing δ and a
// mean time between failures M.
func YoungInterval(deltaS, mtbfS float64) float64 { return math.Sqrt(2 * deltaS * mtbfS) }

// DalyInterval is Daly's higher-order optimum for exponential failures
// (Daly 2006, Future Generation Computer Systems 22(3)): τ = √(2δM)·[1 + ⅓√(δ/2M) + ⅑(δ/2M)] − δ
// for δ < 2M, and τ = M beyond.
func DalyInterval(deltaS, mtbfS float64) float64 {
	if deltaS >= 2*mtbfS {
		return mtbfS
	}
	x := deltaS / (2 * mtbfS)
	return math.Sqrt(2*deltaS*mtbfS)*(1+math.Sqrt(x)/3+x/9) - deltaS
}

// interval picks the training time between checkpoints, in whole steps:
// the rule's optimum for the blocking cost and the failure MTBF, or the
// given seconds; an asynchronous write must finish before the next
// snapshot starts, so the interval is at least the write.
func (p *Plan) interval() {
	rule, given, _ := p.Config.Checkpoint.interval()
	step := p.Job.StepTimeS
	var tau float64
	switch {
	case rule == "":
		p.IntervalRule, tau = "fixed", given
	case p.FailuresPerHour == 0:
		p.IntervalRule, p.IntervalS = rule, math.Inf(1)
		return
	default:
		p.IntervalRule = rule
		mtbf := 3600 / p.FailuresPerHour
		if rule == "young" {
			tau = YoungInterval(p.BlockingS, mtbf)
		} else {
			tau = DalyInterval(p.BlockingS, mtbf)
		}
	}
	steps := max(1, int(math.Round(min(tau, maxIntervalS)/step)))
	if p.BackgroundS > 0 {
		steps = max(steps, int(math.Ceil(p.BackgroundS/step)))
	}
	p.IntervalSteps = steps
	p.IntervalS = float64(steps) * step
}

// TrainSeconds is the training time (whole steps) to see tokens.
func (p *Plan) TrainSeconds(tokens float64) (steps int64, seconds float64) {
	steps = int64(math.Ceil(tokens / p.Job.TokensPerStep))
	return steps, float64(steps) * p.Job.StepTimeS
}

// HardwareShare is the fraction of failures that take a node out.
func (p *Plan) HardwareShare() float64 {
	if p.FailuresPerHour == 0 {
		return 0
	}
	out := 0.0
	for i, cl := range Classes {
		if cl.NodeOut {
			out += p.ClassPerHour[i]
		}
	}
	return out / p.FailuresPerHour
}
