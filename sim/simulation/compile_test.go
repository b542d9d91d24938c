package simulation

import (
	"strings"
	"testing"
)

// TestCompileFields: training.compile defaults to true and training.fused_norm
// to the value of compile; both reach workload.Shape (Eager = !compile,
// EagerNorm = !fused_norm); fused_norm: false under compile is refused, and
// every error names its field.
func TestCompileFields(t *testing.T) {
	cases := []struct {
		kv               []string
		eager, eagerNorm bool
		err              string
	}{
		{nil, false, false, ""},
		{[]string{"training.compile", "true"}, false, false, ""},
		{[]string{"training.compile", "false"}, true, true, ""},
		{[]string{"training.compile", "false", "training.fused_norm", "true"}, true, false, ""},
		{[]string{"training.compile", "false", "training.fused_norm", "false"}, true, true, ""},
		{[]string{"training.fused_norm", "true"}, false, false, ""},
		{[]string{"training.fused_norm", "false"}, false, false, "training.fused_norm: false needs training.compile: false"},
		{[]string{"training.compile", "yes please"}, false, false, "training.compile:"},
		{[]string{"training.fused_norm", "3"}, false, false, "training.fused_norm:"},
	}
	for _, c := range cases {
		s, err := parse(c.kv...)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%v: error %v, want one line containing %q", c.kv, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", c.kv, err)
			continue
		}
		sh := s.Shape()
		if sh.Eager != c.eager || sh.EagerNorm != c.eagerNorm {
			t.Errorf("%v: Shape.Eager %t, EagerNorm %t; want %t, %t", c.kv, sh.Eager, sh.EagerNorm, c.eager, c.eagerNorm)
		}
	}
}

// TestEagerIsSlower: on Llama 3 8B the eager step is longer than the one
// with a fused norm, which is longer than the compiled one.
func TestEagerIsSlower(t *testing.T) {
	step := func(kv ...string) float64 {
		s, err := parse(kv...)
		if err != nil {
			t.Fatal(err)
		}
		return mustRun(t, s, Options{}).StepTimeS
	}
	compiled := step()
	fused := step("training.compile", "false", "training.fused_norm", "true")
	eager := step("training.compile", "false")
	if !(compiled < fused && fused < eager) {
		t.Errorf("step compiled %g s, eager with fused norm %g s, eager %g s: want increasing", compiled, fused, eager)
	}
}
