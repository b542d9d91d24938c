package scenario

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestKnobBinding holds init's one walk (bindKnobs) to a plain derivation
// from each knob's path: its field index follows the yaml names of Path's
// parts from Scenario, parts is Path split at its dots, and the knob is
// direct, at the field's offset and of its kind, exactly when the field's
// kind is string, int, float64 or bool, no pointer lies on the way and
// every field on it is exported.
func TestKnobBinding(t *testing.T) {
	memos := map[*choicesMemo]bool{}
	for _, k := range Knobs {
		var index []int
		var offset uintptr
		direct := true
		ft := reflect.TypeFor[Scenario]()
		for n, part := range strings.Split(k.Path, ".") {
			if ft.Kind() == reflect.Pointer {
				ft, direct = ft.Elem(), false
			}
			i := -1
			for j := 0; j < ft.NumField() && i < 0; j++ {
				if name, _, _ := strings.Cut(ft.Field(j).Tag.Get("yaml"), ","); name == part {
					i = j
				}
			}
			if i < 0 {
				t.Fatalf("%s: no field %q at part %d", k.Path, part, n)
			}
			f := ft.Field(i)
			index, offset, ft = append(index, i), offset+f.Offset, f.Type
			direct = direct && f.IsExported()
		}
		switch ft.Kind() {
		case reflect.String, reflect.Int, reflect.Float64, reflect.Bool:
		default:
			direct = false
		}
		if !slices.Equal(k.index, index) {
			t.Errorf("%s: index %v, want %v", k.Path, k.index, index)
		}
		if !slices.Equal(k.parts, strings.Split(k.Path, ".")) {
			t.Errorf("%s: parts %q", k.Path, k.parts)
		}
		if k.direct != direct {
			t.Errorf("%s: direct %v, want %v", k.Path, k.direct, direct)
		}
		if direct && (k.offset != offset || k.fkind != ft.Kind()) {
			t.Errorf("%s: at offset %d kind %v, want %d %v", k.Path, k.offset, k.fkind, offset, ft.Kind())
		}
		if !direct && (k.offset != 0 || k.fkind != reflect.Invalid) {
			t.Errorf("%s: not direct but offset %d kind %v", k.Path, k.offset, k.fkind)
		}
		if k.choices == nil || memos[k.choices] {
			t.Errorf("%s: choices memo nil or shared", k.Path)
		}
		memos[k.choices] = true
		if knobByPath[k.Path] != k {
			t.Errorf("%s: knobByPath has %p, want %p", k.Path, knobByPath[k.Path], k)
		}
	}
	if len(knobByPath) != len(Knobs) {
		t.Errorf("knobByPath has %d entries, Knobs %d", len(knobByPath), len(Knobs))
	}
}
