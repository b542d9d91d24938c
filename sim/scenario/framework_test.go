package scenario

import (
	"strconv"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/hardware"
)

// A profile fills what the scenario leaves unset, never what it states, and
// auto applies nothing.
func TestFrameworkProfileFillsUnsetFields(t *testing.T) {
	none, err := parse()
	if err != nil {
		t.Fatal(err)
	}
	tt, err := parse("training.framework", "torchtitan")
	if err != nil {
		t.Fatal(err)
	}
	if *tt.Training.Compile || *tt.Training.FusedNorm || tt.Training.CrossEntropy != "unfused" || tt.Parallel.TPImpl != "dtensor" || !tt.Training.AttentionRepeatKV {
		t.Errorf("torchtitan profile not applied: %+v %+v", tt.Training, tt.Parallel)
	}
	if !*none.Training.Compile || none.Training.CrossEntropy != "fused" || none.Parallel.TPImpl != "megatron" || len(none.FrameworkDefaults()) != 0 {
		t.Errorf("no framework changed the defaults: %+v", none.Training)
	}
	auto, err := parse("training.framework", "auto")
	if err != nil {
		t.Fatal(err)
	}
	if a, b := Encode(&auto.Scenario), Encode(&none.Scenario); string(a) != string(b) {
		t.Errorf("auto is not the canonical default:\n%s\nvs\n%s", a, b)
	}
	// Explicit fields win, and their aliases count as explicit.
	ex, err := parse("training.framework", "torchtitan", "training.compile", "true", "training.fused_loss", "true", "parallel.tp_impl", "megatron")
	if err != nil {
		t.Fatal(err)
	}
	if !*ex.Training.Compile || ex.Training.CrossEntropy != "fused" || ex.Parallel.TPImpl != "megatron" {
		t.Errorf("explicit fields overridden: %+v %+v", ex.Training, ex.Parallel)
	}
	if !*ex.Training.FusedNorm {
		t.Errorf("fused_norm follows the explicit compile: true, not the profile")
	}
	var filled []string
	for _, d := range ex.FrameworkDefaults() {
		filled = append(filled, d.Path)
	}
	if got := strings.Join(filled, " "); got != "training.attention_repeat_kv parallel.grad_bucket" {
		t.Errorf("filled %q, want only training.attention_repeat_kv and (zero 0: DDP) parallel.grad_bucket", got)
	}
}

// Every profile resolves on the base scenario, and each default it fills
// reads back as its value in the resolved plan's canonical form.
func TestEveryFrameworkProfileResolves(t *testing.T) {
	for _, name := range hardware.FrameworkNames() {
		s, err := parse("training.framework", name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(s.FrameworkDefaults()) == 0 {
			t.Errorf("%s: no default applied", name)
		}
		enc := string(Encode(&s.Scenario))
		for _, d := range s.FrameworkDefaults() {
			if _, err := Lookup(d.Path); err != nil {
				t.Errorf("%s: %s is not a scenario field", name, d.Path)
			}
			leaf := d.Path[strings.LastIndexByte(d.Path, '.')+1:]
			if !strings.Contains(enc, leaf+": "+d.Value.Value) && !strings.Contains(enc, leaf+": "+canonicalNumber(d.Value.Value)) {
				t.Errorf("%s: %s: %s not in the canonical form", name, d.Path, d.Value.Value)
			}
		}
	}
}

// canonicalNumber is a numeric default as Encode writes it (5e7 as 5e+07).
func canonicalNumber(v string) string {
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return v
}

func TestUnknownFrameworkNamesTheChoices(t *testing.T) {
	_, err := parse("training.framework", "jax")
	if err == nil || !strings.Contains(err.Error(), "training.framework") || !strings.Contains(err.Error(), "torchtitan") {
		t.Fatalf("got %v", err)
	}
}

// A conditional default applies only where its condition holds: DeepSpeed's
// stage-3 prefetch bucket with ZeRO-3, not with ZeRO-1.
func TestFrameworkDefaultWhen(t *testing.T) {
	z3, err := parse("training.framework", "deepspeed", "parallel.zero", "3")
	if err != nil {
		t.Fatal(err)
	}
	if z3.Parallel.Zero3PrefetchBucket != 5e7 {
		t.Errorf("zero 3: bucket %g, want 5e7", z3.Parallel.Zero3PrefetchBucket)
	}
	z1, err := parse("training.framework", "deepspeed", "parallel.zero", "1")
	if err != nil {
		t.Fatal(err)
	}
	if z1.Parallel.Zero3PrefetchBucket != 0 {
		t.Errorf("zero 1: bucket %g, want 0", z1.Parallel.Zero3PrefetchBucket)
	}
	// DeepSpeed reduces ZeRO 0-2 gradients in 5e8-element buckets; ZeRO-3
	// keeps its per-layer reduce-scatters (grad_bucket needs zero 0-2).
	if z1.Parallel.GradBucket != 5e8 || z1.GradBucket() != 5e8 {
		t.Errorf("zero 1: grad_bucket %g (plan %g), want 5e8", z1.Parallel.GradBucket, z1.GradBucket())
	}
	if z3.Parallel.GradBucket != 0 || z3.GradBucket() != 0 {
		t.Errorf("zero 3: grad_bucket %g (plan %g), want 0", z3.Parallel.GradBucket, z3.GradBucket())
	}
	// DeepSpeed overlaps the gradient reduction only at stage 3.
	if g := z1.Parallel.Overlap.GradReduce; g == nil || *g {
		t.Errorf("zero 1: overlap.grad_reduce %v, want false", g)
	}
	if g := z3.Parallel.Overlap.GradReduce; g == nil || !*g {
		t.Errorf("zero 3: overlap.grad_reduce %v, want the default true", g)
	}
	// ZeRO-3's library: DeepSpeed's and Megatron-FSDP's keep a 16-bit copy
	// beside the fp32 one; without ZeRO-3 the default (fsdp) stays.
	if z3.Parallel.Zero3Impl != "deepspeed" || z1.Parallel.Zero3Impl != "fsdp" {
		t.Errorf("zero3_impl: zero 3 %q, zero 1 %q; want deepspeed, fsdp", z3.Parallel.Zero3Impl, z1.Parallel.Zero3Impl)
	}
	mg, err := parse("training.framework", "megatron-lm", "parallel.zero", "3")
	if err != nil {
		t.Fatal(err)
	}
	if mg.Parallel.Zero3Impl != "megatron" {
		t.Errorf("megatron-lm zero 3: zero3_impl %q, want megatron", mg.Parallel.Zero3Impl)
	}
}

// Megatron-DeepSpeed's full recomputation is a reentrant checkpoint
// (DeepSpeed's CheckpointFunction reruns the layer to its output): the
// profile sets recompute_reentrant only with recompute: full, where the
// field is valid, and a stated false wins.
func TestFrameworkRecomputeReentrant(t *testing.T) {
	cases := []struct {
		name string
		kv   []string
		want bool
	}{
		{"full", []string{"training.recompute", "full"}, true},
		{"selective", []string{"training.recompute", "selective"}, false},
		{"none", []string{"training.recompute", "none"}, false},
		{"full, stated false", []string{"training.recompute", "full", "training.recompute_reentrant", "false"}, false},
	}
	for _, c := range cases {
		s, err := parse(append([]string{"training.framework", "megatron-deepspeed"}, c.kv...)...)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if s.Training.RecomputeReentrant != c.want {
			t.Errorf("%s: recompute_reentrant %v, want %v", c.name, s.Training.RecomputeReentrant, c.want)
		}
	}
	// The deepspeed profile (Hugging Face models under DeepSpeed's engine)
	// does not set it: their checkpoint is the model's own choice.
	ds, err := parse("training.framework", "deepspeed", "training.recompute", "full")
	if err != nil {
		t.Fatal(err)
	}
	if ds.Training.RecomputeReentrant {
		t.Errorf("deepspeed profile: recompute_reentrant set")
	}
}
