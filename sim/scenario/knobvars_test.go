package scenario

import (
	"strings"
	"testing"
)

// TestKnobVars holds the knobs resolution looks up once (knobvars.go) to
// the registry entries of their paths, in the order the loops fill them.
func TestKnobVars(t *testing.T) {
	for _, c := range []struct {
		k    *Knob
		path string
	}{
		{knobTrainingMicroBatch, "training.micro_batch"},
		{knobClusterNetworkNicGbps, "cluster.network.nic_gbps"},
		{knobParallelTp, "parallel.tp"},
		{knobParallelVirtualStages, "parallel.virtual_stages"},
		{knobSimVariabilityDistribution, "sim.variability.distribution"},
		{knobExpectFlopsConvention, "expect.flops_convention"},
	} {
		if c.k != knobByPath[c.path] {
			t.Errorf("%s: the variable holds %s", c.path, c.k.Path)
		}
	}
	for _, c := range []struct {
		ks   []*Knob
		want string
	}{
		{knobsOverlap, "parallel.overlap.grad_reduce parallel.overlap.param_gather parallel.overlap.tp_comm parallel.overlap.tp_bwd parallel.overlap.p2p parallel.overlap.ep"},
		{knobsOverlapDisplay, "parallel.overlap.grad_reduce parallel.overlap.param_gather parallel.overlap.tp_comm parallel.overlap.tp_bwd parallel.overlap.p2p"},
		{knobsVariability, "sim.variability.distribution sim.variability.gpu_cv sim.variability.step_cv sim.variability.slow_prob sim.variability.slow_factor"},
	} {
		var got []string
		for _, k := range c.ks {
			if k != knobByPath[k.Path] {
				t.Errorf("%s: not the registry's entry", k.Path)
			}
			got = append(got, k.Path)
		}
		if g := strings.Join(got, " "); g != c.want {
			t.Errorf("got %s, want %s", g, c.want)
		}
	}
	err := checkChoice(knobSimLinks, "bogus")
	want := `sim.links: unknown value "bogus" (valid: ` + strings.Join(knobSimLinks.Choices(), ", ") + ")"
	if err == nil || err.Error() != want {
		t.Errorf("checkChoice: %v, want %s", err, want)
	}
	defer func() {
		if recover() == nil {
			t.Error("mustKnob of a path the registry lacks did not panic")
		}
	}()
	mustKnob("parallel.nope")
}
