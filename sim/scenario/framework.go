package scenario

import (
	"fmt"
	"reflect"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/simtrain/simtrain/sim/hardware"
)

// frameworkRelated lists, for a field a framework profile may set, the
// fields that say the same thing another way: a profile default is skipped
// when its field or one of these is given, so that a profile never
// contradicts what the scenario states (fused_loss is an alias of
// cross_entropy, attention_kernel implies flash_attention, fused_norm: false
// needs compile: false, loss_readback_at places loss_readback's read).
var frameworkRelated = map[string][]string{
	"training.cross_entropy":   {"training.fused_loss"},
	"training.flash_attention": {"training.attention_kernel"},
	"training.fused_norm":      {"training.compile"},
	// the read's place means nothing without the read: a document that
	// states loss_readback (false, or true for DeepSpeed's place) keeps
	// its own placement
	"training.loss_readback_at": {"training.loss_readback"},
}

// applyFramework fills the fields the document leaves unset from the
// training.framework profile (sim/hardware data/frameworks.yaml), as if the
// document had written them, and records which it filled. auto (or no
// framework) applies nothing. A version-dated default applies only where
// training.framework_date (unset: the current release) lies in its range.
func (s *Plan) applyFramework(root *yaml.Node) error {
	if d := s.Training.FrameworkDate; d != "" {
		if _, err := time.Parse(hardware.DateLayout, d); err != nil {
			return fmt.Errorf("training.framework_date: %q is not a date (valid: YYYY-MM-DD, the date of the framework code the run used; unset: the current release)", d)
		}
	}
	name := s.Training.Framework
	if name == "" || name == "auto" {
		return nil
	}
	prof, err := hardware.LookupFramework(name)
	if err != nil {
		return fmt.Errorf("training.framework: %w", err)
	}
	var fill []hardware.FrameworkDefault
	for _, d := range prof.Defaults {
		if s.set[d.Path] || anySet(s.set, frameworkRelated[d.Path]) || !s.holds(d.When) || !d.InDate(s.Training.FrameworkDate) {
			continue
		}
		fill = append(fill, d)
	}
	if len(fill) == 0 {
		return nil
	}
	root = CloneNode(root)
	for _, d := range fill {
		v := d.Value
		clearLines(&v)
		if err := SetFieldPath(root, d.Path, &v); err != nil {
			return fmt.Errorf("training.framework: %s: %w", name, err)
		}
	}
	set := fieldSet{}
	if err := checkNode(root, reflect.TypeOf(Scenario{}), "", set); err != nil {
		return fmt.Errorf("training.framework: %s: %w", name, err)
	}
	var sc Scenario
	if err := root.Decode(&sc); err != nil {
		return fmt.Errorf("training.framework: %s: %w", name, cleanYAMLError(err))
	}
	s.Scenario, s.set, s.framework = sc, set, fill
	return nil
}

// holds reports whether every field of when has one of the values given
// there (as fmt.Sprint writes the decoded field; an unset integer reads 0).
func (s *Plan) holds(when map[string][]string) bool {
	for path, want := range when {
		k, err := Lookup(path)
		if err != nil {
			return false
		}
		v, ok := k.Field(&s.Scenario)
		if !ok {
			return false
		}
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return false
			}
			v = v.Elem()
		}
		if !slices.Contains(want, fmt.Sprint(v.Interface())) {
			return false
		}
	}
	return true
}

func anySet(set fieldSet, paths []string) bool {
	for _, p := range paths {
		if set[p] {
			return true
		}
	}
	return false
}

// FrameworkDefaults returns the training.framework profile's defaults that
// filled fields the scenario left unset (none with auto), each with its
// source: what `simtrain run` reports as the profile values used.
func (s *Plan) FrameworkDefaults() []hardware.FrameworkDefault { return s.framework }
