package simulation

import (
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/workload"
)

// TestCrossEntropyField checks training.cross_entropy: the default, the
// fused_loss alias, the wiring into workload.Shape, one-line errors, and
// that Megatron-LM's unfused vocabulary-parallel loss costs more step time
// than PyTorch's unfused one, which costs more than a fused kernel.
func TestCrossEntropyField(t *testing.T) {
	for _, c := range []struct {
		kv   []string
		want workload.CrossEntropy
	}{
		{nil, workload.CrossEntropyFused},
		{[]string{"training.fused_loss", "false"}, workload.CrossEntropyUnfused},
		{[]string{"training.cross_entropy", "unfused"}, workload.CrossEntropyUnfused},
		{[]string{"training.cross_entropy", "vocab-parallel", "training.fused_loss", "false"}, workload.CrossEntropyVocabParallel},
		{[]string{"training.cross_entropy", "unfused-native"}, workload.CrossEntropyUnfusedNative},
	} {
		s, err := parse(c.kv...)
		if err != nil {
			t.Fatalf("%v: %v", c.kv, err)
		}
		if got := s.Shape().CrossEntropy; got != c.want || s.Training.CrossEntropy != c.want.String() {
			t.Errorf("%v: %v (%q), want %v", c.kv, got, s.Training.CrossEntropy, c.want)
		}
	}
	for _, c := range []struct {
		kv   []string
		want string
	}{
		{[]string{"training.cross_entropy", "megatron"}, `training.cross_entropy: unknown value "megatron" (valid: fused, unfused, vocab-parallel, unfused-native)`},
		{[]string{"training.cross_entropy", "fused", "training.fused_loss", "false"}, "training.cross_entropy: fused contradicts training.fused_loss: false"},
		{[]string{"training.cross_entropy", "vocab-parallel", "training.fused_loss", "true"}, "training.cross_entropy: vocab-parallel contradicts training.fused_loss: true"},
	} {
		_, err := parse(c.kv...)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: error %v, want %q", c.kv, err, c.want)
		}
	}
	var step [3]float64
	for i, ce := range []string{"fused", "unfused", "vocab-parallel"} {
		step[i] = runWith(t, nil, "training.cross_entropy", ce).StepTimeS
	}
	if !(step[0] < step[1] && step[1] < step[2]) {
		t.Errorf("step time fused %g, unfused %g, vocab-parallel %g: want increasing", step[0], step[1], step[2])
	}
	// the loss on 16-bit logits without the upcast: no casts, half the bytes
	if n := runWith(t, nil, "training.cross_entropy", "unfused-native").StepTimeS; !(step[0] < n && n < step[1]) {
		t.Errorf("step time unfused-native %g, want between fused %g and unfused %g", n, step[0], step[1])
	}
}
