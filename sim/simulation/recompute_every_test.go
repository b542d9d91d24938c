package simulation

import "testing"

// TestRecomputeEveryField checks training.recompute_every: 1 is the
// canonical default (run id unchanged), every 2nd layer lands between no
// and full recomputation in step time, hardware FLOPs and memory, and
// errors name the field.
func TestRecomputeEveryField(t *testing.T) {
	full := parseWith(t, nil, "training.recompute", "full")
	one := parseWith(t, nil, "training.recompute", "full", "training.recompute_every", "1")
	if one.Training.RecomputeEvery != 0 || one.RunID() != full.RunID() {
		t.Errorf("recompute_every 1: kept %d, run ids %s %s", one.Training.RecomputeEvery, one.RunID(), full.RunID())
	}
	none := runWith(t, nil)
	half := runWith(t, nil, "training.recompute", "full", "training.recompute_every", "2")
	all := runWith(t, nil, "training.recompute", "full")
	if !(none.StepTimeS < half.StepTimeS && half.StepTimeS < all.StepTimeS) {
		t.Errorf("step times none %g, every 2nd %g, full %g: want increasing", none.StepTimeS, half.StepTimeS, all.StepTimeS)
	}
	// Llama 3 8B has 32 layers, all on one rank: 16 recomputed, half of
	// full recomputation's extra FLOPs.
	if got, want := half.HardwareFLOPsPerStep-none.HardwareFLOPsPerStep, (all.HardwareFLOPsPerStep-none.HardwareFLOPsPerStep)/2; got != want {
		t.Errorf("extra hardware FLOPs every 2nd layer %g, want %g", got, want)
	}
	if !(half.PeakMemBytes < none.PeakMemBytes && half.PeakMemBytes > all.PeakMemBytes) {
		t.Errorf("peak memory none %g, every 2nd %g, full %g", none.PeakMemBytes, half.PeakMemBytes, all.PeakMemBytes)
	}
	checkParseErrors(t, nil, []parseErrorCase{
		{[]string{"training.recompute_every", "2"}, "training.recompute_every: 2 needs recompute: full (have none)"},
		{[]string{"training.recompute", "full", "training.recompute_every", "-1"}, "training.recompute_every: -1 must be >= 0"},
	})
}
