package simulation

import (
	"github.com/simtrain/simtrain/sim/goodput"
)

// GoodputJob describes a simulated run to the goodput model: the job's
// size, step time and price, the model state a checkpoint holds (every
// parameter once: weights, master weights and optimizer states in their
// dtypes) and the largest state one GPU holds under the layout's ZeRO/FSDP
// sharding, with the GPU's device-to-host copy bandwidth for an
// asynchronous snapshot.
func GoodputJob(r *Result) goodput.Job {
	s := r.Scenario
	j := goodput.Job{
		GPUs: s.GPUs(), Nodes: s.Nodes(), NICsPerNode: s.Cluster.Network.NICsPerNode,
		StepTimeS:     r.StepTimeS,
		TokensPerStep: float64(s.Training.GlobalBatch) * float64(s.Training.SeqLen),
		GPUHourUSD:    s.GPUHourUSD(),
		D2HBytesPerS:  float64(s.GPU().HostCopy.D2H),
	}
	if sb, err := s.StateBytes(); err == nil {
		j.CheckpointBytes = s.Arch().Params().Total * (sb.Weights + sb.Master + sb.Optimizer)
	}
	for _, m := range r.Memory {
		j.HeldBytesPerGPU = max(j.HeldBytesPerGPU, m.Weights+m.Optimizer)
	}
	return j
}

// GoodputPlan is the goodput model of a simulated run under its scenario's
// goodput block, or the defaults when the scenario has none.
func GoodputPlan(r *Result) (*goodput.Plan, error) {
	c := r.Scenario.Goodput
	if c == nil {
		c = goodput.Defaults()
	}
	return goodput.NewPlan(c, GoodputJob(r))
}
