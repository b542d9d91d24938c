package sim

import (
	"strings"
	"testing"
)

// TestAttentionUnpadField checks training.attention_unpad: it reaches the
// workload shape, costs step time, and needs a fused attention kernel.
func TestAttentionUnpadField(t *testing.T) {
	s := parseWith(t, nil, "training.attention_unpad", "true")
	if !s.shape().AttentionUnpad {
		t.Error("attention_unpad: true did not reach workload.Shape")
	}
	if a, b := runWith(t, nil).StepTimeS, runWith(t, nil, "training.attention_unpad", "true").StepTimeS; !(b > a) {
		t.Errorf("step with unpadding %g s, without %g s: want longer", b, a)
	}
	_, err := Parse(edit(t, "training.attention_unpad", "true", "training.attention_kernel", "unfused"))
	if want := "training.attention_unpad: true needs a fused attention kernel"; err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("error %v, want %q", err, want)
	}
}
