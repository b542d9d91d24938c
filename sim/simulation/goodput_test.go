package simulation

import (
	"context"
	"testing"

	"github.com/simtrain/simtrain/sim/goodput"
	"github.com/simtrain/simtrain/sim/scenario"
)

// Issue 20's bar: for the Llama 3 405B scenario over 54 days the expected
// unexpected interruptions are within ±25% of the 419 Meta reports and the
// effective training fraction lies in 88–95% (arXiv:2407.21783 §3.3.4,
// Table 5: 419 unexpected interruptions, more than 90% effective training
// time). The scenario's default rates (meta-rsc) are independent of Llama
// 3; llama3-table5 is fitted on Table 5, so its 419 is in sample (a
// consistency check, not a prediction).
func TestGoodputLlama3405B(t *testing.T) {
	s, res := loadAndRun(t, "../../scenarios/llama3-405b-16k-h100-goodput.yaml")
	for _, tc := range []struct {
		set          string
		lo, hi, want float64 // interruptions in 54 days
	}{
		{"meta-rsc", 419 * 0.75, 419 * 1.25, 488.82},
		{"llama3-table5", 419 - 1e-6, 419 + 1e-6, 419},
	} {
		c := *s.Goodput
		c.FailureRates = tc.set
		s.Goodput = &c
		p, err := GoodputPlan(res)
		if err != nil {
			t.Fatal(err)
		}
		e := p.Expect(15.6e12)
		n, _ := p.InterruptionsIn(e, 54*86400)
		if n < tc.lo || n > tc.hi {
			t.Errorf("%s: %.1f unexpected interruptions in 54 days, want %.0f–%.0f (419 ± 25%%)", tc.set, n, tc.lo, tc.hi)
		}
		t.Logf("%s: %.1f interruptions in 54 days (Meta: 419), effective training fraction %.4f, interval %.0f s, write %.2f s, restart %.0f s",
			tc.set, n, e.EffectiveTrainingFraction, p.IntervalS, p.WriteS, p.RestartS)
		if f := e.EffectiveTrainingFraction; f < 0.88 || f > 0.95 {
			t.Errorf("%s: effective training fraction %.4f, want 0.88–0.95 (Meta: more than 90%%)", tc.set, f)
		}
	}
}

// The job a goodput plan sees: the model state once (14 bytes per
// parameter for bf16 AdamW with fp32 master weights and states: 2 + 4 + 8)
// and the largest per-GPU state under ZeRO-1.
func TestGoodputJobLlama3405B(t *testing.T) {
	s, res := loadAndRun(t, "../../scenarios/llama3-405b-16k-h100.yaml")
	j := GoodputJob(res)
	params := s.Arch().Params().Total
	if want := params * 14; j.CheckpointBytes != want {
		t.Errorf("checkpoint bytes %.4g, want %.4g (14 B × %.4g params)", j.CheckpointBytes, want, params)
	}
	// ZeRO-1 shards the 12 B of master weights and states over DP 128; the
	// bf16 weights of a 1/128 model-parallel shard stay whole.
	if lo, hi := params/128*2, params/128*(2+12.0/128)*1.2; j.HeldBytesPerGPU < lo || j.HeldBytesPerGPU > hi {
		t.Errorf("held bytes per GPU %.4g, want %.4g–%.4g", j.HeldBytesPerGPU, lo, hi)
	}
	if j.GPUs != 16384 || j.Nodes != 2048 || j.NICsPerNode != 8 || j.D2HBytesPerS != 52e9 {
		t.Errorf("job %+v", j)
	}
	// a scenario without a goodput block keeps its run id: the block is
	// left out of the canonical form
	if s.Goodput != nil {
		t.Fatal("no goodput block expected")
	}
	with := *s
	with.Goodput = goodput.Defaults()
	if with.RunID() == s.RunID() {
		t.Error("a goodput block should change the run id")
	}
}

// loadAndRun simulates a scenario file and checks the run's invariants.
func loadAndRun(t *testing.T, path string) (*scenario.Plan, *Result) {
	t.Helper()
	s, err := scenario.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Check(); err != nil {
		t.Fatal(err)
	}
	return s, res
}
