package scenario

import (
	"maps"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	"go.yaml.in/yaml/v3"
)

// Template is a base scenario decoded once, so that a sweep's points are
// made by setting typed fields on a copy of it instead of editing the YAML
// document and decoding it again per point (decoding was ≈ 5% of a sweep
// point's CPU, and the sweep decoded every point twice: to validate and hash
// it when loading, and to simulate it). Template.Plan gives the plan, the
// error and the partial plan of an invalid point that ParsePartial gives for
// the edited document (TestTemplateEqualsYAML holds them equal on every
// point of every bundled sweep).
type Template struct {
	base *Plan      // decoded and checked, defaults not filled
	root *yaml.Node // the base's root mapping: which paths a typed set may take
	// sets keeps the field set of the last combination of swept knobs a
	// point had (pointSet).
	sets atomic.Pointer[pointFields]
}

// pointFields is the field set of a point whose values set exactly knobs,
// in that order: the base's fields and the knobs' paths with the blocks
// on their way.
type pointFields struct {
	knobs []*Knob
	set   fieldSet
	// knobGiven[k.id] is set[k.Path] for every registry knob k (the set
	// is not written once made): Plan.knobGiven reads it.
	knobGiven []bool
}

// NewTemplate decodes a checked scenario document (a document node or its
// root mapping) living in dir. It returns nil when points must go through
// the YAML path: the document does not decode, or it names a framework
// profile (training.framework), whose defaults fill only the fields a
// document leaves unset, so the point's own fields decide them.
func NewTemplate(doc *yaml.Node, dir string) *Template {
	root := doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil
		}
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil
	}
	s, err := decode(root, dir, nil)
	if err != nil || (s.Training.Framework != "" && s.Training.Framework != "auto") || len(s.framework) > 0 {
		return nil
	}
	return &Template{base: s, root: root}
}

// Value is a sweep value decoded once for its knob's field (Template.Value).
type Value struct {
	knob *Knob
	v    reflect.Value // of the field's type
}

// Value decodes node as knob k's value for Template.Plan. ok is false when
// the typed path cannot set it as the YAML path would: a null (the field
// left unset), training.framework (its profile's defaults), a value that
// does not decode, or a path the base blocks with something that is not a
// mapping (the YAML path's error then names it).
func (t *Template) Value(k *Knob, node *yaml.Node) (Value, bool) {
	if t == nil || node == nil || node.Kind == yaml.AliasNode || node.Tag == "!!null" ||
		k.Path == "training.framework" || len(k.index) == 0 || !t.settable(k.parts) {
		return Value{}, false
	}
	p := reflect.New(k.typ())
	if err := node.Decode(p.Interface()); err != nil {
		return Value{}, false
	}
	return Value{knob: k, v: p.Elem()}, true
}

// settable reports whether every block on the way to the field is a
// mapping of the base document or absent (Knob.Set creates it).
func (t *Template) settable(parts []string) bool {
	n := t.root
	for _, p := range parts[:len(parts)-1] {
		var next *yaml.Node
		for j := 0; j+1 < len(n.Content); j += 2 {
			if n.Content[j].Value == p {
				next = n.Content[j+1]
				break
			}
		}
		if next == nil {
			return true
		}
		if next.Kind != yaml.MappingNode {
			return false
		}
		n = next
	}
	return true
}

// Plan resolves a copy of the base with vals set, named name: what
// ParsePartial gives for the base document with the same values set by
// Knob.Set, error included (an invalid point's plan is filled as far as
// resolution got).
func (t *Template) Plan(name string, vals []Value) (*Plan, error) {
	s := new(Plan)
	return s, t.PlanInto(s, name, vals)
}

// PlanInto is Plan resolving into *s, which it overwrites whole (what s
// held before is not read), so that a caller resolving many points can
// hand it plans from one allocation: a sweep's loader resolves its points
// 256 at a time into one slice of Plans instead of 256 allocations of
// 1,536 bytes each (one mallocgc per plan, and a span of five plans to
// set up for every fifth, ≈ 0.4% of the 1,000-point 70B sweep's CPU).
//
// Only the fields outside the Scenario are cleared here: deepCopy's
// struct copy writes the whole Scenario (1,208 of the plan's 1,504 bytes)
// right after, so clearing the plan whole first wrote those bytes twice
// (TestPlanIntoOverwritesAll fills every field first).
func (t *Template) PlanInto(s *Plan, name string, vals []Value) error {
	s.Warnings, s.set, s.r, s.dir, s.cal, s.framework = nil, t.pointSet(vals), resolved{}, t.base.dir, nil, nil
	deepCopy(reflect.ValueOf(&s.Scenario).Elem(), reflect.ValueOf(&t.base.Scenario).Elem())
	s.Name = name
	for _, v := range vals {
		if v.knob == nil {
			continue
		}
		f := reflect.ValueOf(&s.Scenario).Elem()
		for _, i := range v.knob.index {
			if f.Kind() == reflect.Pointer {
				if f.IsNil() { // a block the base leaves out: Knob.Set creates it
					f.Set(reflect.New(f.Type().Elem()))
				}
				f = f.Elem()
			}
			f = f.Field(i)
		}
		deepCopy(f, v.v)
	}
	if err := s.resolve(s.set); err != nil {
		s.fillDisplayDefaults()
		return err
	}
	return nil
}

// pointSet is the field set of a point with values vals: the base's set
// with each value's path and the blocks on its way. A plan only reads its
// set once resolved (Given, the resolvers; nothing writes to a plan), so
// points that set the same knobs share one map, built when the
// combination of knobs first differs from the last one's: a sweep's
// points mostly set the same fields (cloning the base's set and adding
// the paths was ≈ 8% of a sweep's load; TestTemplateSetsShared).
func (t *Template) pointSet(vals []Value) fieldSet {
	if e := t.sets.Load(); e != nil && sameKnobs(e.knobs, vals) {
		if givenTable.Load() != e {
			givenTable.Store(e)
		}
		return e.set
	}
	// maps.Clone copies the base's table as it is (no insertions); the
	// point's paths are mostly the base's already.
	set := maps.Clone(t.base.set)
	if set == nil {
		set = fieldSet{}
	}
	var knobs []*Knob
	for _, v := range vals {
		if v.knob == nil {
			continue
		}
		knobs = append(knobs, v.knob)
		path := v.knob.Path
		for i := strings.IndexByte(path, '.'); i >= 0; i = next(path, i) {
			set[path[:i]] = true
		}
		set[path] = true
	}
	given := make([]bool, len(Knobs))
	for i, k := range Knobs {
		given[i] = set[k.Path]
	}
	e := &pointFields{knobs: knobs, set: set, knobGiven: given}
	t.sets.Store(e)
	givenTable.Store(e)
	return set
}

// givenTable is the field set a template last handed a point, with its
// table of given knobs (Plan.knobGiven).
var givenTable atomic.Pointer[pointFields]

// sameKnobs reports whether the values in vals that set a knob set
// exactly knobs, in order.
func sameKnobs(knobs []*Knob, vals []Value) bool {
	n := 0
	for _, v := range vals {
		if v.knob == nil {
			continue
		}
		if n == len(knobs) || knobs[n] != v.knob {
			return false
		}
		n++
	}
	return n == len(knobs)
}

// next is the index of the dot after the one at i in path, -1 when none.
func next(path string, i int) int {
	j := strings.IndexByte(path[i+1:], '.')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

// deepCopy sets dst to a copy of src sharing no pointer, slice or map with
// it (resolution fills defaults into a plan's blocks and lists).
func deepCopy(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			dst.SetZero()
			return
		}
		p := reflect.New(src.Type().Elem())
		deepCopy(p.Elem(), src.Elem())
		dst.Set(p)
	case reflect.Struct:
		dst.Set(src) // scalars; then a copy of what the fields point to
		for _, i := range deepFields(src.Type()) {
			f := src.Field(i)
			switch f.Kind() {
			case reflect.Pointer, reflect.Slice, reflect.Map:
				if f.IsNil() {
					continue // the struct's copy set dst's to nil
				}
			}
			deepCopy(dst.Field(i), f)
		}
	case reflect.Slice:
		if src.IsNil() {
			dst.SetZero()
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := 0; i < src.Len(); i++ {
			deepCopy(s.Index(i), src.Index(i))
		}
		dst.Set(s)
	case reflect.Map:
		if src.IsNil() {
			dst.SetZero()
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		it := src.MapRange()
		for it.Next() {
			v := reflect.New(src.Type().Elem()).Elem()
			deepCopy(v, it.Value())
			m.SetMapIndex(it.Key(), v)
		}
		dst.Set(m)
	default:
		dst.Set(src)
	}
}

// deepFieldsOf caches deepFields per struct type.
var deepFieldsOf sync.Map // reflect.Type → []int

// deepFields lists the fields of struct type t that deepCopy visits after
// copying the struct: those holding a pointer, slice or map, directly or
// in a nested struct. The others (scalars, arrays, interfaces, structs of
// scalars) the struct's copy has copied already, so visiting them, as
// deepCopy did for every field, changed nothing (Template.Plan spent
// ≈ 15,000 instructions a sweep point in deepCopy, most of them there).
func deepFields(t reflect.Type) []int {
	if f, ok := deepFieldsOf.Load(t); ok {
		return f.([]int)
	}
	var out []int
	for i := range t.NumField() {
		if holdsReference(t.Field(i).Type) {
			out = append(out, i)
		}
	}
	deepFieldsOf.Store(t, out)
	return out
}

// holdsReference: a value of type t shares memory with its copy (a
// pointer, slice or map, or a struct with one) in a way deepCopy undoes.
func holdsReference(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
		return true
	case reflect.Struct:
		return len(deepFields(t)) > 0
	}
	return false
}
