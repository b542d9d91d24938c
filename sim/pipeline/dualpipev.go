package pipeline

import (
	"errors"
	"fmt"
)

// DualPipeV is DualPipe cut in half (Sea AI Lab's "cut-in-half" DualPipe,
// adopted by deepseek-ai/DualPipe as DualPipeV): one copy of the model in
// 2p chunks on the VShape placement, every micro-batch running down the
// stages on chunk slot 0 and back up on slot 1, with DualPipe's step
// structure on a chain of p ranks. Against DualPipe on the same 2p model
// chunks it needs half the devices and keeps one copy of the parameters;
// its bubble is DualPipe's (chain of p ranks: (p − 1)(F&B + B − 3W) in
// chunk times) and a stage holds 2p + 1 chunk-micro-batches of activations
// (deepseek-ai/DualPipe README, "Pipeline Bubbles and Memory Usage
// Comparison"), InFlight (2p+1)/2 of its two chunks. m ≥ 2p.
var DualPipeV Schedule = dualPipeV{}

func init() { register(60, DualPipeV) }

type dualPipeV struct{}

func (dualPipeV) Name() string { return "dualpipe-v" }

func (s dualPipeV) Check(sh Shape) error {
	if err := onlyInterleavedVirtual(s, sh); err != nil {
		return err
	}
	if sh.Stages < 2 {
		return errors.New("parallel.pp: dualpipe-v needs pp >= 2")
	}
	if sh.Microbatches > 0 && sh.Microbatches < 2*sh.Stages {
		return fmt.Errorf("training.global_batch: dualpipe-v needs at least 2*pp = %d micro-batches per pipeline (have %d = global_batch/(dp*micro_batch))", 2*sh.Stages, sh.Microbatches)
	}
	return nil
}

func (dualPipeV) Placement(sh Shape) Placement { return VShape(sh.Stages) }

func (dualPipeV) Order(sh Shape, stage int) []Step {
	return dualOrder(sh.Stages, stage, sh.Microbatches, func(phase, i int) (mb, chunk int) { return i, phase })
}

func (dualPipeV) InFlight(sh Shape, _ int) float64 {
	if sh.Stages <= 1 {
		return 1
	}
	return float64(2*sh.Stages+1) / 2
}
