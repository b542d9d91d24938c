package simulation

import (
	"strings"
	"testing"
)

// TestAttentionUnpadField checks training.attention_unpad: it reaches the
// workload shape, costs step time, and needs a fused attention kernel.
func TestAttentionUnpadField(t *testing.T) {
	s := parseWith(t, nil, "training.attention_unpad", "true")
	if !s.Shape().AttentionUnpad {
		t.Error("attention_unpad: true did not reach workload.Shape")
	}
	if a, b := runWith(t, nil).StepTimeS, runWith(t, nil, "training.attention_unpad", "true").StepTimeS; !(b > a) {
		t.Errorf("step with unpadding %g s, without %g s: want longer", b, a)
	}
	_, err := parse("training.attention_unpad", "true", "training.attention_kernel", "unfused")
	if want := "training.attention_unpad: true needs a fused attention kernel"; err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("error %v, want %q", err, want)
	}
}

// TestUnpadHostSync: the unpadded attention path stalls the compute stream
// six host synchronisations of the profile's HostSyncStall per layer
// forward, and once more per layer under full recomputation. Llama 3 8B
// (32 layers) on baseScenario's TP 8 × DP 2 has 64/2 = 32 micro-batches of
// one sequence per rank: 32 · 32 · 6 stalls per step, twice that with
// full recomputation.
func TestUnpadHostSync(t *testing.T) {
	stall := parseWith(t, nil).GPU().Compute.HostSyncStall
	if stall <= 0 {
		t.Fatalf("HostSyncStall %g", stall)
	}
	for _, c := range []struct {
		recompute string
		passes    float64
	}{{"none", 1}, {"full", 2}} {
		r := runWith(t, nil, "training.attention_unpad", "true", "training.recompute", c.recompute)
		want := 32 * 32 * 6 * stall * c.passes
		if d := r.HostSyncS - want; d > 1e-6*want || d < -1e-6*want {
			t.Errorf("recompute %s: host sync stalls %g s, want %g s", c.recompute, r.HostSyncS, want)
		}
		s := parseWith(t, nil, "training.attention_unpad", "true", "training.recompute", c.recompute)
		if got := s.HostSyncCauses(); !strings.Contains(got, "unpadded attention") {
			t.Errorf("host sync causes %q", got)
		}
	}
	if r := runWith(t, nil); r.HostSyncS != 0 {
		t.Errorf("no unpadding: host sync stalls %g s", r.HostSyncS)
	}
}
