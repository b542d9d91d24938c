package scenario

import (
	"slices"
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

// TestValidMemo: every registry knob with Choices gives the same list on
// every call (what Valid's memo relies on), and Valid with the memo
// accepts exactly what the list, or Accepts, accepts; a Knob outside the
// registry (no memo) still validates.
func TestValidMemo(t *testing.T) {
	for _, k := range Knobs {
		if k.Choices == nil {
			continue
		}
		list := k.Choices()
		if again := k.Choices(); !slices.Equal(list, again) {
			t.Errorf("%s: Choices gave %v, then %v", k.Path, list, again)
		}
		for _, v := range list {
			if !k.Valid(v) {
				t.Errorf("%s: %q not valid", k.Path, v)
			}
		}
		if !slices.Equal(k.choiceList(), list) {
			t.Errorf("%s: memo %v, Choices %v", k.Path, k.choiceList(), list)
		}
		if bogus := "no-such-value"; k.Valid(bogus) != (k.Accepts != nil && k.Accepts(bogus)) {
			t.Errorf("%s: Valid(%q) = %v", k.Path, bogus, k.Valid(bogus))
		}
	}
	k := &Knob{Path: "x", Choices: fixed("a", "b")}
	if !k.Valid("b") || k.Valid("c") {
		t.Error("a Knob outside the registry: Valid wrong")
	}
}

// TestIndexKnobs holds knobByPath, which the knob variables now look
// their knobs up in while Go initialises them (start53), to the scan of
// Knobs that mustKnob did before: every path finds the registry's own
// entry, and indexKnobs refuses a path listed twice.
func TestIndexKnobs(t *testing.T) {
	scan := func(knobs []*Knob, path string) *Knob { // mustKnob's former lookup
		for _, k := range knobs {
			if k.Path == path {
				return k
			}
		}
		return nil
	}
	a, b, a2 := &Knob{Path: "x.a"}, &Knob{Path: "x.b"}, &Knob{Path: "x.a"}
	cases := []struct {
		name      string
		knobs     []*Knob
		wantPanic bool
	}{
		{"registry", Knobs, false},
		{"two", []*Knob{a, b}, false},
		{"none", nil, false},
		{"listed twice", []*Knob{a, b, a2}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if p := recover(); (p != nil) != c.wantPanic {
					t.Errorf("panic %v, want a panic: %v", p, c.wantPanic)
				}
			}()
			m := indexKnobs(c.knobs)
			if len(m) != len(c.knobs) {
				t.Errorf("%d entries for %d knobs", len(m), len(c.knobs))
			}
			for _, k := range c.knobs {
				if m[k.Path] != scan(c.knobs, k.Path) {
					t.Errorf("%s: %p, the scan finds %p", k.Path, m[k.Path], scan(c.knobs, k.Path))
				}
			}
		})
	}
	for _, k := range Knobs {
		if mustKnob(k.Path) != scan(Knobs, k.Path) {
			t.Errorf("mustKnob(%s) is not the scan's entry", k.Path)
		}
	}
}
