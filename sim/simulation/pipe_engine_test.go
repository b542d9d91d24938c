package simulation

import (
	"strings"
	"testing"
)

// TestPipeEngineField checks parallel.pipe_engine: megatron-deepspeed's
// profile sets deepspeed, which stalls the compute stream at DeepSpeed's
// pipeline engine's host synchronisations when pp > 1 (counted in
// sim/parallel TestPipeEngineSyncs) and does nothing at pp 1; a bad value
// is a one-line error naming the field and the choices.
//
// baseScenario at tp 4 × pp 2 × dp 2 (16 H100), 64 sequences: 32
// micro-batches per rank. The first stage stalls 6 syncs per micro-batch,
// the last 5: the mean over ranks is 32 · 5.5 · HostSyncStall.
func TestPipeEngineField(t *testing.T) {
	pp := []string{"parallel.tp", "4", "parallel.pp", "2"}
	s := parseWith(t, pp, "training.framework", "megatron-deepspeed")
	if s.Parallel.PipeEngine != "deepspeed" {
		t.Fatalf("megatron-deepspeed profile: pipe_engine %q, want deepspeed", s.Parallel.PipeEngine)
	}
	if got := s.HostSyncCauses(); !strings.Contains(got, "DeepSpeed pipeline engine") {
		t.Errorf("host sync causes %q", got)
	}
	stall := s.GPU().Compute.HostSyncStall
	r := runWith(t, pp, "parallel.pipe_engine", "deepspeed")
	if want := 32 * 5.5 * stall; r.HostSyncS < want*(1-1e-6) || r.HostSyncS > want*(1+1e-6) {
		t.Errorf("host sync stalls %g s, want %g s", r.HostSyncS, want)
	}
	if base := runWith(t, pp); base.HostSyncS != 0 || !(r.StepTimeS > base.StepTimeS) {
		t.Errorf("megatron: stalls %g s, step %g s; deepspeed step %g s: want longer", base.HostSyncS, base.StepTimeS, r.StepTimeS)
	}
	if r := runWith(t, nil, "parallel.pipe_engine", "deepspeed"); r.HostSyncS != 0 {
		t.Errorf("pp 1: host sync stalls %g s, want none", r.HostSyncS)
	}
	if s := parseWith(t, pp, "parallel.pipe_engine", "megatron"); s.Parallel.PipeEngine != "" {
		t.Errorf("megatron not canonicalised: %q", s.Parallel.PipeEngine)
	}
	checkParseErrors(t, pp, []parseErrorCase{
		{[]string{"parallel.pipe_engine", "gpipe"}, `parallel.pipe_engine: unknown value "gpipe" (valid: megatron, deepspeed)`},
		{[]string{"parallel.pipe_engine", "deepspeed", "parallel.schedule", "interleaved", "parallel.virtual_stages", "2"},
			"parallel.pipe_engine: deepspeed runs DeepSpeed's TrainSchedule, schedule 1f1b with virtual_stages 1 (have schedule interleaved, virtual_stages 2; valid: megatron)"},
	})
	// the profile leaves Megatron's schedules to Megatron's engine
	if s := parseWith(t, pp, "training.framework", "megatron-deepspeed", "parallel.schedule", "interleaved", "parallel.virtual_stages", "2"); s.Parallel.PipeEngine != "" {
		t.Errorf("megatron-deepspeed with interleaved: pipe_engine %q, want megatron", s.Parallel.PipeEngine)
	}
}

// TestLossReadbackField: training.loss_readback stalls the loss stage once
// per micro-batch for the GPU's host_sync_stall. The base scenario runs 32
// micro-batches: at pp 1 the one stage reads 32 times; at pp 2 only the
// last stage does, and the reported stall is the mean over the two stages
// (16 reads). Off: none.
func TestLossReadbackField(t *testing.T) {
	pp := []string{"parallel.tp", "4", "parallel.pp", "2"}
	s := parseWith(t, nil, "training.loss_readback", "true")
	if got := s.HostSyncCauses(); !strings.Contains(got, "loss read back") {
		t.Errorf("host sync causes %q", got)
	}
	stall := s.GPU().Compute.HostSyncStall
	for _, c := range []struct {
		args  []string
		reads float64
	}{
		{nil, 32},
		{pp, 16},
	} {
		r := runWith(t, c.args, "training.loss_readback", "true")
		if want := c.reads * stall; r.HostSyncS < want*(1-1e-6) || r.HostSyncS > want*(1+1e-6) {
			t.Errorf("%v: host sync stalls %g s, want %g s", c.args, r.HostSyncS, want)
		}
		if base := runWith(t, c.args); base.HostSyncS != 0 || !(r.StepTimeS > base.StepTimeS) {
			t.Errorf("%v: off: stalls %g s, step %g s; on: step %g s, want longer", c.args, base.HostSyncS, base.StepTimeS, r.StepTimeS)
		}
	}
	if s := parseWith(t, nil, "training.loss_readback", "false"); s.Training.LossReadback != nil && *s.Training.LossReadback {
		t.Errorf("false not kept")
	}
	checkParseErrors(t, nil, []parseErrorCase{
		{[]string{"training.loss_readback", "sometimes"}, "training.loss_readback"},
	})
}

// TestLossReadbackAtField: training.loss_readback_at: after_backward moves
// the read after each micro-batch's backward: the same 32 reads at pp 1
// (one per micro-batch, host_sync_stall each), the hf-trainer profile sets
// both fields (an explicit loss_readback: false wins, and then the profile's
// placement is not applied), and bad values are one-line errors.
func TestLossReadbackAtField(t *testing.T) {
	after := []string{"training.loss_readback", "true", "training.loss_readback_at", "after_backward"}
	s := parseWith(t, nil, after...)
	if got := s.HostSyncCauses(); !strings.Contains(got, "after every micro-batch's backward") {
		t.Errorf("host sync causes %q", got)
	}
	stall := s.GPU().Compute.HostSyncStall
	r := runWith(t, nil, after...)
	if want := 32 * stall; r.HostSyncS < want*(1-1e-6) || r.HostSyncS > want*(1+1e-6) {
		t.Errorf("after_backward: host sync stalls %g s, want %g s", r.HostSyncS, want)
	}
	if base := runWith(t, nil); !(r.StepTimeS > base.StepTimeS) {
		t.Errorf("after_backward: step %g s, want longer than %g s without", r.StepTimeS, base.StepTimeS)
	}
	if s := parseWith(t, nil, "training.loss_readback", "true", "training.loss_readback_at", "before_backward"); s.Training.LossReadbackAt != "" {
		t.Errorf("before_backward not canonicalised to the default: %q", s.Training.LossReadbackAt)
	}
	hf := parseWith(t, nil, "training.framework", "hf-trainer")
	if hf.Training.LossReadback == nil || !*hf.Training.LossReadback || hf.Training.LossReadbackAt != "after_backward" {
		t.Errorf("hf-trainer: loss_readback %v at %q, want true at after_backward", hf.Training.LossReadback, hf.Training.LossReadbackAt)
	}
	if off := parseWith(t, nil, "training.framework", "hf-trainer", "training.loss_readback", "false"); (off.Training.LossReadback != nil && *off.Training.LossReadback) || off.Training.LossReadbackAt != "" {
		t.Errorf("hf-trainer with loss_readback: false: %v at %q, want off and unplaced", off.Training.LossReadback != nil, off.Training.LossReadbackAt)
	}
	checkParseErrors(t, nil, []parseErrorCase{
		{[]string{"training.loss_readback", "true", "training.loss_readback_at", "during"},
			`training.loss_readback_at: unknown value "during" (valid: before_backward, after_backward)`},
		{[]string{"training.loss_readback_at", "after_backward"},
			"training.loss_readback_at: after_backward needs training.loss_readback: true (the read it places)"},
	})
}
