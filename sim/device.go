package sim

import (
	"github.com/simtrain/simtrain/sim/topology"
	"github.com/simtrain/simtrain/sim/workload"
)

// DeviceFor maps a catalog GPU to the description the compute-time model
// prices ops against: dense peaks per dtype (the FP4 peak serves fp4, mxfp4
// and nvfp4), HBM bandwidth and capacity, SM count and the efficiencies of
// its ComputeProfile, each sourced in the catalog. It copies values only.
func DeviceFor(g topology.GPU) workload.Device {
	var d workload.Device
	d.Name = g.Name
	d.Peak[workload.FP32] = g.Peak.FP32
	d.Peak[workload.TF32] = g.Peak.TF32
	d.Peak[workload.FP16] = g.Peak.FP16
	d.Peak[workload.BF16] = g.Peak.BF16
	d.Peak[workload.FP8] = g.Peak.FP8
	d.Peak[workload.FP4] = g.Peak.FP4
	d.Peak[workload.MXFP4] = g.Peak.FP4
	d.Peak[workload.NVFP4] = g.Peak.FP4
	d.HBMBandwidth = g.HBMBandwidth
	d.HBMBytes = g.HBMBytes
	d.SMs = g.SMs
	c := g.Compute
	d.MatmulEffBF16 = c.MatmulEffBF16
	d.MatmulEffFP8 = c.MatmulEffFP8
	d.HBMEff = c.HBMEff
	d.AttnEff = c.AttnEff
	d.AttnBwdEff = c.AttnBwdEff
	d.KernelOverhead = c.KernelOverhead
	d.BlockScaledGEMMRel = c.BlockScaledGEMMRel
	d.RowScaledGEMMRel = c.RowScaledGEMMRel
	return d
}
