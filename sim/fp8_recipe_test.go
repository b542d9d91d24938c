package sim

import (
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/workload"
)

// TestFP8RecipeField checks training.fp8_recipe: the default, the wiring
// into workload.Shape, and one-line errors that name the field and the
// valid choices.
func TestFP8RecipeField(t *testing.T) {
	s, err := Parse(edit(t, "training.precision", "fp8"))
	if err != nil {
		t.Fatal(err)
	}
	if s.r.fp8 != workload.FP8Tensorwise || s.shape().FP8Recipe != workload.FP8Tensorwise || s.Training.FP8Recipe != "" {
		t.Errorf("default: %v %v %q", s.r.fp8, s.shape().FP8Recipe, s.Training.FP8Recipe)
	}
	s, err = Parse(edit(t, "training.precision", "fp8", "training.fp8_recipe", "rowwise"))
	if err != nil || s.shape().FP8Recipe != workload.FP8Rowwise {
		t.Fatalf("rowwise: %v", err)
	}
	s, err = Parse(edit(t, "training.precision", "fp8", "training.fp8_recipe", "mxfp8", "cluster.gpu", "b200"))
	if err != nil || s.shape().FP8Recipe != workload.FP8MXFP8 {
		t.Fatalf("mxfp8 on b200: %v", err)
	}
	for _, c := range []struct {
		kv   []string
		want string
	}{
		{[]string{"training.fp8_recipe", "rowwise"}, "training.fp8_recipe: rowwise needs training.precision: fp8, got bf16"},
		{[]string{"training.precision", "fp8", "training.fp8_recipe", "perblock"},
			`training.fp8_recipe: unknown value "perblock" (valid: tensorwise, rowwise, delayed, blockwise, mxfp8, current)`},
		{[]string{"training.precision", "fp8", "training.fp8_recipe", "mxfp8"},
			"training.fp8_recipe: mxfp8 needs a Blackwell GPU, h100-sxm is hopper (valid: tensorwise, rowwise, delayed, blockwise, current)"},
	} {
		_, err := Parse(edit(t, c.kv...))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error %v, want %q", c.kv, err, c.want)
		}
	}
}
