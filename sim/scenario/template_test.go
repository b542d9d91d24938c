package scenario

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/hardware"
	"go.yaml.in/yaml/v3"
)

// references collects the addresses of what v's pointers and slices
// (non-empty) point to.
func references(v reflect.Value, out map[uintptr]bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			out[v.Pointer()] = true
			references(v.Elem(), out)
		}
	case reflect.Slice:
		if v.Len() > 0 {
			out[v.Pointer()] = true
		}
		for i := range v.Len() {
			references(v.Index(i), out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			references(v.Field(i), out)
		}
	}
}

// TestDeepCopySharesNothing: on random scenarios (every field set, nil or
// not), deepCopy gives an equal scenario that shares no pointer or slice
// with its source, and deepFields skips only fields without one.
func TestDeepCopySharesNothing(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 2))
	for i := range 2000 {
		var src, dst Scenario
		fillRandom(r, reflect.ValueOf(&src).Elem())
		deepCopy(reflect.ValueOf(&dst).Elem(), reflect.ValueOf(&src).Elem())
		if !reflect.DeepEqual(src, dst) {
			t.Fatalf("scenario %d: copy differs", i)
		}
		a, b := map[uintptr]bool{}, map[uintptr]bool{}
		references(reflect.ValueOf(&src).Elem(), a)
		references(reflect.ValueOf(&dst).Elem(), b)
		for p := range b {
			if a[p] {
				t.Fatalf("scenario %d: the copy shares %#x with its source", i, p)
			}
		}
	}
	// By hand: ModelConfig's pointers, none of NetworkConfig's scalars.
	if got := deepFields(reflect.TypeFor[NetworkConfig]()); len(got) != 0 {
		t.Errorf("NetworkConfig: deep fields %v, want none", got)
	}
	m := reflect.TypeFor[ModelConfig]()
	var want []int
	for _, n := range []string{"TiedEmbeddings", "Dropout", "MoE"} {
		f, _ := m.FieldByName(n)
		want = append(want, f.Index[0])
	}
	if got := deepFields(m); !reflect.DeepEqual(got, want) {
		t.Errorf("ModelConfig: deep fields %v, want %v", got, want)
	}
}

// TestTemplateSetsShared: points whose values set different combinations
// of knobs, in turn (more, fewer, another order, a block the base leaves
// out, none), each get the plan, error and field set ParsePartial gives
// for the base document with the same values set; consecutive points
// with the same knobs share their field set, and a point with other
// knobs does not take the previous one's. PlanInto into storage that
// held the previous points' plans gives the same plan and error.
func TestTemplateSetsShared(t *testing.T) {
	tmpl, doc := baseTemplate(t)
	type kv struct{ path, value string }
	combos := [][]kv{
		{{"parallel.tp", "2"}, {"parallel.pp", "2"}},
		{{"parallel.tp", "4"}, {"parallel.pp", "1"}},
		{{"parallel.tp", "4"}},
		{{"parallel.pp", "2"}, {"parallel.tp", "2"}},
		{{"model.moe.experts", "8"}, {"model.moe.top_k", "2"}},
		{},
		{{"parallel.overlap.tp_comm", "true"}, {"training.flash_attention", "false"}},
		{{"parallel.overlap.tp_comm", "false"}, {"training.flash_attention", "true"}},
		{{"parallel.tp", "3"}, {"parallel.pp", "2"}}, // invalid
		{{"parallel.tp", "2"}, {"parallel.pp", "2"}},
	}
	var prev *Plan
	var prevKnobs string
	var reused Plan // PlanInto's storage, every combination in turn
	for i, c := range combos {
		edited := CloneNode(doc)
		var vals []Value
		var knobs []string
		for _, f := range c {
			k := knobByPath[f.path]
			var vdoc yaml.Node
			if err := yaml.Unmarshal([]byte(f.value), &vdoc); err != nil {
				t.Fatal(err)
			}
			node := vdoc.Content[0]
			if err := k.Set(edited, CloneNode(node)); err != nil {
				t.Fatal(err)
			}
			v, ok := tmpl.Value(k, node)
			if !ok {
				t.Fatalf("combination %d: %s is not settable by the template", i, f.path)
			}
			vals = append(vals, v)
			knobs = append(knobs, f.path)
		}
		want, wantErr := ParsePartial(edited, "", "")
		got, gotErr := tmpl.Plan(want.Name, vals) // the base's name, as a sweep names its base
		if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
			t.Errorf("combination %d: template error %v, YAML %v", i, gotErr, wantErr)
		}
		if !reflect.DeepEqual(got.set, want.set) {
			t.Errorf("combination %d %v: field set %v, want %v", i, knobs, got.set, want.set)
		}
		if !reflect.DeepEqual(tableAgrees(t, got), want) {
			t.Errorf("combination %d %v: the template's plan differs from the YAML's:\n%+v\n%+v", i, knobs, *got, *want)
		}
		if got.RunID() != want.RunID() {
			t.Errorf("combination %d: run id %s, want %s", i, got.RunID(), want.RunID())
		}
		// PlanInto over the previous combinations' plan (MoE blocks,
		// lists, an invalid point's partial fill) gives the same plan:
		// nothing of what the storage held survives.
		intoErr := tmpl.PlanInto(&reused, want.Name, vals)
		if (intoErr == nil) != (wantErr == nil) || (intoErr != nil && intoErr.Error() != wantErr.Error()) {
			t.Errorf("combination %d: PlanInto error %v, YAML %v", i, intoErr, wantErr)
		}
		if !reflect.DeepEqual(tableAgrees(t, &reused), want) {
			t.Errorf("combination %d %v: PlanInto's plan differs from the YAML's:\n%+v\n%+v", i, knobs, reused, *want)
		}
		if prev != nil {
			shared := reflect.ValueOf(got.set).Pointer() == reflect.ValueOf(prev.set).Pointer()
			if same := strings.Join(knobs, " ") == prevKnobs; shared != same {
				t.Errorf("combination %d: set shared with the previous point's %v, same knobs %v", i, shared, same)
			}
		}
		prev, prevKnobs = got, strings.Join(knobs, " ")
	}
}

// tableAgrees checks that the table of given knobs of the set a template
// last made (givenTable) is the field set's answer for every registry
// knob, when p (a plan it just resolved) holds that set, and returns p.
func tableAgrees(t *testing.T, p *Plan) *Plan {
	t.Helper()
	g := givenTable.Load()
	if g == nil || reflect.ValueOf(g.set).Pointer() != reflect.ValueOf(p.set).Pointer() {
		t.Errorf("the template's last set is not the plan's")
		return p
	}
	if len(g.knobGiven) != len(Knobs) {
		t.Fatalf("the table of given knobs has %d entries, want one per knob (%d)", len(g.knobGiven), len(Knobs))
	}
	for _, k := range Knobs {
		if p.knobGiven(k) != p.set[k.Path] {
			t.Errorf("%s: given %v, the set says %v", k.Path, p.knobGiven(k), p.set[k.Path])
		}
	}
	return p
}

// TestPlanIntoOverwritesAll: PlanInto over a plan whose every field holds
// something (another point's resolved plan, warnings, a field set, a
// directory, calibration and framework entries) gives the plan Plan
// gives: PlanInto clears only the fields outside the Scenario, so a field
// it forgets keeps the junk and fails here. Every top-level field of Plan
// must be filled, so a field added later is covered too.
func TestPlanIntoOverwritesAll(t *testing.T) {
	tmpl, _ := baseTemplate(t)
	value := func(path, v string) Value {
		var vdoc yaml.Node
		if err := yaml.Unmarshal([]byte(v), &vdoc); err != nil {
			t.Fatal(err)
		}
		val, ok := tmpl.Value(knobByPath[path], vdoc.Content[0])
		if !ok {
			t.Fatalf("%s is not settable by the template", path)
		}
		return val
	}
	for _, c := range []struct {
		name       string
		junk, want []Value
	}{
		{"moe over dense", []Value{value("parallel.tp", "2")}, []Value{value("model.moe.experts", "8"), value("model.moe.top_k", "2")}},
		{"dense over moe", []Value{value("model.moe.experts", "8"), value("model.moe.top_k", "2")}, []Value{value("parallel.pp", "2")}},
		{"valid over invalid", []Value{value("parallel.tp", "3"), value("parallel.pp", "2")}, nil},
	} {
		s, _ := tmpl.Plan("junk", c.junk)
		s.Warnings = []string{"junk"}
		s.set = fieldSet{"junk": true}
		s.dir = "junk"
		s.cal = hardware.Calibration{{Name: "junk", Value: "1"}}
		s.framework = []hardware.FrameworkDefault{{}}
		v := reflect.ValueOf(s).Elem()
		for i := range v.NumField() {
			if v.Field(i).IsZero() {
				t.Fatalf("%s: the junk plan leaves %s zero", c.name, v.Type().Field(i).Name)
			}
		}
		want, wantErr := tmpl.Plan("", c.want)
		gotErr := tmpl.PlanInto(s, "", c.want)
		if (gotErr == nil) != (wantErr == nil) {
			t.Errorf("%s: PlanInto error %v, Plan %v", c.name, gotErr, wantErr)
		}
		if !reflect.DeepEqual(s, want) {
			t.Errorf("%s: PlanInto over a filled plan differs from Plan's:\n%+v\n%+v", c.name, *s, *want)
		}
	}
}

// baseTemplate is the template of the tests' base scenario (baseScenario)
// and the document it was made from.
func baseTemplate(t *testing.T) (*Template, *yaml.Node) {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(baseScenario), &doc); err != nil {
		t.Fatal(err)
	}
	tmpl := NewTemplate(&doc, "")
	if tmpl == nil {
		t.Fatal("no template for the test base")
	}
	return tmpl, &doc
}

// TestKnobGivenEqualsSet: knobGiven reads the table of the template's
// last set where the plan holds that very map and the knob is the
// registry's (the table is read even where, made up here, it disagrees
// with the set), and the field set otherwise: no table, another map with
// the same paths, or a knob outside the registry with a registry knob's
// id.
func TestKnobGivenEqualsSet(t *testing.T) {
	defer givenTable.Store(givenTable.Load())
	tp, mb := knobByPath["parallel.tp"], knobByPath["training.micro_batch"]
	outside := *tp // same id, not the registry's knob
	set := fieldSet{"parallel.tp": true}
	table := &pointFields{set: set, knobGiven: make([]bool, len(Knobs))}
	table.knobGiven[mb.id] = true // disagrees with set on purpose
	for _, c := range []struct {
		name  string
		table *pointFields
		set   fieldSet
		k     *Knob
		want  bool
	}{
		{"no table, given", nil, set, tp, true},
		{"no table, not given", nil, set, mb, false},
		{"table, given by the set only", table, set, tp, false},
		{"table, given by the table only", table, set, mb, true},
		{"another map", table, fieldSet{"parallel.tp": true}, mb, false},
		{"knob outside the registry", table, set, &outside, true},
	} {
		givenTable.Store(c.table)
		s := &Plan{set: c.set}
		if got := s.knobGiven(c.k); got != c.want {
			t.Errorf("%s: knobGiven(%s) = %v, want %v", c.name, c.k.Path, got, c.want)
		}
	}
}

// TestModelFieldEachGiven: each model field resolveModel applies over the
// preset when given (each tested by its own knob's entry in the field
// set) takes effect alone, by the YAML and by the template: a test that
// read another field's entry would leave the preset's value.
func TestModelFieldEachGiven(t *testing.T) {
	tmpl, _ := baseTemplate(t)
	for _, c := range []struct {
		path, value string
		got         func(m ModelConfig) any
		want        any
	}{
		{"model.activation", "gelu", func(m ModelConfig) any { return m.Activation }, "gelu"},
		{"model.norm", "layernorm", func(m ModelConfig) any { return m.Norm }, "layernorm"},
		{"model.attention_window", "1024", func(m ModelConfig) any { return m.AttentionWindow }, 1024},
		{"model.mtp_layers", "1", func(m ModelConfig) any { return m.MTPLayers }, 1},
		{"model.layers", "16", func(m ModelConfig) any { return m.Layers }, 16},
		{"model.hidden", "2048", func(m ModelConfig) any { return m.Hidden }, 2048},
		{"model.heads", "16", func(m ModelConfig) any { return m.Heads }, 16},
		{"model.kv_heads", "4", func(m ModelConfig) any { return m.KVHeads }, 4},
		{"model.ffn", "8192", func(m ModelConfig) any { return m.FFN }, 8192},
		{"model.vocab", "32000", func(m ModelConfig) any { return m.Vocab }, 32000},
	} {
		s, err := parse(c.path, c.value)
		if err != nil {
			t.Errorf("%s: %v", c.path, err)
			continue
		}
		if got := c.got(s.Model); got != c.want {
			t.Errorf("%s %s by the YAML: %v", c.path, c.value, got)
		}
		var vdoc yaml.Node
		if err := yaml.Unmarshal([]byte(c.value), &vdoc); err != nil {
			t.Fatal(err)
		}
		v, ok := tmpl.Value(knobByPath[c.path], vdoc.Content[0])
		if !ok {
			t.Fatalf("%s is not settable by the template", c.path)
		}
		p, err := tmpl.Plan("t", []Value{v})
		if err != nil {
			t.Errorf("%s by the template: %v", c.path, err)
			continue
		}
		if got := c.got(p.Model); got != c.want {
			t.Errorf("%s %s by the template: %v", c.path, c.value, got)
		}
	}
}
