package scenario

import (
	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/parallel"
)

// HostDispatchClass is the dispatch class of the scenario's host thread
// (sim/hardware data/host.yaml): training.host_dispatch, or with auto,
// derived from the implementation fields: whole-iteration CUDA graphs
// replay the step without the host; every other run issues its kernels
// from eager Python, fused or not (fusion lowers the kernel count, which
// the op list already has).
func (s *Plan) HostDispatchClass() string {
	if c := s.Training.HostDispatch; c != "" && c != "auto" {
		return c
	}
	if s.Training.CUDAGraphs == "full" {
		return hardware.DispatchGraphs
	}
	return hardware.DispatchEager
}

// HostModel is the rank's host thread (parallel.HostModel): the dispatch
// class's costs scaled for the GPU's host CPU.
func (s *Plan) HostModel() parallel.HostModel {
	d, err := hardware.LookupHostDispatch(s.HostDispatchClass())
	if err != nil {
		return parallel.HostModel{} // the catalog checks both classes exist
	}
	k := s.r.gpu.Compute.HostDispatchScale
	at := func(sec float64) engine.Time { return engine.Seconds(sec * k) }
	h := parallel.HostModel{On: true, KernelFwd: at(d.KernelFwd), KernelBwd: at(d.KernelBwd), Call: at(d.Call)}
	if hardware.LaunchQueueBound && d.Class != hardware.DispatchGraphs {
		h.Queue = hardware.LaunchQueueDepth // a stream's pending launches; a graph is one
	}
	return h
}
