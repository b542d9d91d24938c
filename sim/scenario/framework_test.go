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

// Megatron-LM's two NaN checks are version-dated defaults: the per
// micro-batch loss read from 2023-08-30 (e39f9f6972), the per-bucket grad
// norm read from 2023-12-05 (d66807759c). Before, between, at and after the
// dates, unset (the current release), ZeRO-3 (no buckets) and explicit
// fields (which win).
func TestFrameworkDateMegatronNaNChecks(t *testing.T) {
	for _, c := range []struct {
		name       string
		kv         []string
		loss, grad bool
	}{
		{"current release", nil, true, true},
		{"SC21 code (2021)", []string{"training.framework_date", "2021-04-01"}, false, false},
		{"day before the loss check", []string{"training.framework_date", "2023-08-29"}, false, false},
		{"the loss check's day", []string{"training.framework_date", "2023-08-30"}, true, false},
		{"day before the bucket check", []string{"training.framework_date", "2023-12-04"}, true, false},
		{"core_r0.8.0", []string{"training.framework_date", "2024-08-12"}, true, true},
		{"zero 3 has no buckets", []string{"parallel.zero", "3"}, true, false},
		{"explicit false wins", []string{"training.loss_readback", "false", "training.grad_nan_check", "false"}, false, false},
		{"explicit true wins over the date", []string{"training.framework_date", "2021-04-01", "training.grad_nan_check", "true"}, false, true},
	} {
		s, err := parse(append([]string{"training.framework", "megatron-lm"}, c.kv...)...)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if isTrue(s.Training.LossReadback) != c.loss || isTrue(s.Training.GradNaNCheck) != c.grad {
			t.Errorf("%s: loss_readback %v grad_nan_check %v, want %v %v", c.name, isTrue(s.Training.LossReadback), isTrue(s.Training.GradNaNCheck), c.loss, c.grad)
		}
	}
	// Without a profile the date selects nothing.
	s, err := parse("training.framework_date", "2024-08-12")
	if err != nil || isTrue(s.Training.LossReadback) || isTrue(s.Training.GradNaNCheck) {
		t.Errorf("auto with a date: %v, loss %v grad %v", err, s.Training.LossReadback != nil, s.Training.GradNaNCheck != nil)
	}
}

// A date that does not parse is one line naming the field and the form.
func TestFrameworkDateInvalid(t *testing.T) {
	for _, v := range []string{"2024", "2024-13-01", "r0.8.0", "2024/08/12"} {
		_, err := parse("training.framework", "megatron-lm", "training.framework_date", v)
		if err == nil || !strings.Contains(err.Error(), "training.framework_date") || !strings.Contains(err.Error(), "YYYY-MM-DD") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: got %v", v, err)
		}
	}
}

// InDate: since inclusive, until exclusive, no date = current release.
func TestFrameworkDefaultInDate(t *testing.T) {
	for _, c := range []struct {
		since, until, date string
		want               bool
	}{
		{"", "", "", true},
		{"2023-08-30", "", "", true},
		{"", "2024-12-08", "", false},
		{"2023-08-30", "2024-12-08", "2023-08-30", true},
		{"2023-08-30", "2024-12-08", "2024-12-07", true},
		{"2023-08-30", "2024-12-08", "2024-12-08", false},
		{"2023-08-30", "", "2023-08-29", false},
	} {
		d := hardware.FrameworkDefault{Since: c.since, Until: c.until}
		if got := d.InDate(c.date); got != c.want {
			t.Errorf("[%q, %q) at %q: %v, want %v", c.since, c.until, c.date, got, c.want)
		}
	}
}
