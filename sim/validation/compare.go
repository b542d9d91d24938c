package validation

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/simulation"
	"github.com/simtrain/simtrain/sim/workload"
)

// Comparison is one scenario's prediction set against its published figure.
type Comparison struct {
	// Metric is the expect: key of the published figure: step_time_s,
	// tokens_per_s_per_gpu, mfu or tflops_per_gpu.
	Metric string
	// Measured is the published figure; Predicted is the simulated run's
	// figure in the same units and FLOPs convention.
	Measured, Predicted float64
	// MeasuredStepTimeS is the published figure converted to seconds per
	// optimizer step; PredictedStepTimeS is the simulated step time.
	MeasuredStepTimeS, PredictedStepTimeS float64
	// Error is the signed relative error of the step time:
	// (PredictedStepTimeS − MeasuredStepTimeS) / MeasuredStepTimeS.
	Error float64
	// SourceFLOPsPerStep is the FLOPs of one step by the source's
	// convention (zero for step_time_s and tokens_per_s_per_gpu).
	SourceFLOPsPerStep float64
	// Convention is expect.flops_convention plus "/causal" when the source
	// counted causal attention.
	Convention string
	// HasMemory says the source published a peak memory
	// (expect.peak_memory_gib); MeasuredMemBytes is it in bytes,
	// PredictedMemBytes the simulated caching-allocator reservation of the
	// largest rank at its peak (Result.PeakReservedBytes: the published
	// figures are PyTorch's reserved_bytes.all.peak), and
	// MemError (PredictedMemBytes − MeasuredMemBytes) / MeasuredMemBytes,
	// positive when simtrain predicts more memory. All zero without.
	HasMemory                           bool
	MeasuredMemBytes, PredictedMemBytes float64
	MemError                            float64
}

const (
	attentionFull   = "full"
	attentionCausal = "causal"
)

// gib is bytes per GiB, the unit of expect.peak_memory_gib.
const gib = 1 << 30

// checkExpect validates the parts of expect: that Parse does not check.
func checkExpect(s *scenario.Plan) error {
	e := s.Expect
	if e == nil {
		return errors.New("expect: the scenario has no expect: block")
	}
	switch e.AttentionFLOPs {
	case "", attentionFull, attentionCausal:
	default:
		return fmt.Errorf("expect.attention_flops: unknown value %q (valid: full, causal)", e.AttentionFLOPs)
	}
	if m, _ := e.Metric(); m == "" {
		return errors.New("expect: give one of step_time_s, tokens_per_s_per_gpu, mfu, tflops_per_gpu")
	}
	return nil
}

// SourceFLOPsPerStep is the FLOPs of one optimizer step by the convention
// of the scenario's expect: block (see the comment at the top of this file):
// megatron-sc21, model or hardware, with causal attention when
// expect.attention_flops says so.
func SourceFLOPsPerStep(s *scenario.Plan) (float64, error) {
	if err := checkExpect(s); err != nil {
		return 0, err
	}
	e := s.Expect
	m := s.Arch()
	seq := s.Training.SeqLen
	tokens := float64(s.Training.GlobalBatch) * float64(seq)
	causal := e.AttentionFLOPs == attentionCausal
	switch e.FLOPsConvention {
	case "megatron-sc21":
		if causal {
			return 0, errors.New("expect.attention_flops: causal does not apply to the megatron-sc21 formula")
		}
		if m.MoE != nil || m.Attention == "mla" {
			return 0, errors.New("expect.flops_convention: megatron-sc21 is defined for dense GPT models (no MoE, no MLA)")
		}
		// SC21 Appendix: F = 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)).
		B, sq := float64(s.Training.GlobalBatch), float64(seq)
		l, h, v := float64(m.Layers), float64(m.Hidden), float64(m.Vocab)
		return 96 * B * sq * l * h * h * (1 + sq/(6*h) + v/(16*l*h)), nil
	case "model", "":
		full, none := m.ModelFLOPsPerToken(seq), m.ModelFLOPsPerToken(0)
		return tokens * attention(none, full, causal), nil
	case "hardware":
		full, none := s.HardwareFLOPsPerToken(seq), s.HardwareFLOPsPerToken(0)
		return tokens * attention(none, full, causal), nil
	}
	return 0, fmt.Errorf("expect.flops_convention: unknown value %q (valid: model, hardware, megatron-sc21)", e.FLOPsConvention)
}

// attention returns the per-token FLOPs with the attention-matrix part
// (full − none, which is linear in the sequence length) halved for causal.
func attention(none, full float64, causal bool) float64 {
	if causal {
		return none + (full-none)/2
	}
	return full
}

// MeasuredStepTimeS converts the expect: figure to seconds per optimizer
// step: a step time as is; tokens/s per GPU as global_batch·seq_len /
// (figure · GPUs); TFLOP/s per GPU as SourceFLOPsPerStep / (figure·1e12 ·
// GPUs); MFU as SourceFLOPsPerStep / (figure · peak · GPUs) with the
// catalog's dense peak of the scenario's GPU at training.precision.
func MeasuredStepTimeS(s *scenario.Plan) (float64, error) {
	if err := checkExpect(s); err != nil {
		return 0, err
	}
	metric, v := s.Expect.Metric()
	gpus := float64(s.GPUs())
	tokens := float64(s.Training.GlobalBatch) * float64(s.Training.SeqLen)
	switch metric {
	case scenario.MetricStepTime:
		return v, nil
	case scenario.MetricTokens:
		return tokens / (v * gpus), nil
	}
	f, err := SourceFLOPsPerStep(s)
	if err != nil {
		return 0, err
	}
	if metric == scenario.MetricTFLOPs {
		return f / (v * 1e12 * gpus), nil
	}
	peak := float64(workload.DeviceOf(s.GPU()).Peak[s.Precision()])
	if !(peak > 0) {
		return 0, fmt.Errorf("expect.mfu: %s has no dense peak for %s", s.Cluster.GPU, s.Training.Precision)
	}
	return f / (v * peak * gpus), nil
}

// Compare sets a simulated result against its scenario's expect: figure.
// The scenario must carry an expect: block and the result a positive step
// time.
func Compare(res *simulation.Result) (Comparison, error) {
	if res == nil || res.Scenario == nil {
		return Comparison{}, errors.New("compare: no result")
	}
	s := res.Scenario
	measured, err := MeasuredStepTimeS(s)
	if err != nil {
		return Comparison{}, err
	}
	if !(res.StepTimeS > 0) || math.IsInf(res.StepTimeS, 0) {
		return Comparison{}, fmt.Errorf("compare: simulated step time %g s is not positive", res.StepTimeS)
	}
	metric, v := s.Expect.Metric()
	c := Comparison{
		Metric: metric, Measured: v,
		MeasuredStepTimeS: measured, PredictedStepTimeS: res.StepTimeS,
		Error:      (res.StepTimeS - measured) / measured,
		Convention: s.Expect.FLOPsConvention,
	}
	if s.Expect.AttentionFLOPs == attentionCausal {
		c.Convention += "/causal"
	}
	// Every figure is inversely proportional to the step time except the
	// step time itself.
	if metric == scenario.MetricStepTime {
		c.Predicted = res.StepTimeS
	} else {
		c.Predicted = v * measured / res.StepTimeS
	}
	if metric == scenario.MetricTFLOPs || metric == scenario.MetricMFU {
		c.SourceFLOPsPerStep, _ = SourceFLOPsPerStep(s)
	}
	if m := s.Expect.PeakMemoryGiB; m != nil && *m > 0 {
		c.HasMemory = true
		c.MeasuredMemBytes, c.PredictedMemBytes = *m*gib, res.PeakReservedBytes
		c.MemError = (c.PredictedMemBytes - c.MeasuredMemBytes) / c.MeasuredMemBytes
	}
	return c, nil
}

// ParallelStyle names the scenario's layout for grouping accuracy reports:
// the data-parallel flavour when dp > 1 (dp, zero1, zero2, fsdp), then each
// model-parallel dimension larger than one (tp, pp, cp, ep), joined by '+';
// "single" for one GPU.
func ParallelStyle(s *scenario.Plan) string {
	p := s.Parallel
	var parts []string
	if p.DP > 1 {
		parts = append(parts, [...]string{"dp", "zero1", "zero2", "fsdp"}[min(max(p.Zero, 0), 3)])
	}
	for _, d := range []struct {
		name string
		n    int
	}{{"tp", p.TP}, {"pp", p.PP}, {"cp", p.CP}, {"ep", p.EP}} {
		if d.n > 1 {
			parts = append(parts, d.name)
		}
	}
	if len(parts) == 0 {
		return "single"
	}
	return strings.Join(parts, "+")
}
