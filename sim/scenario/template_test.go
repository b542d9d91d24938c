package scenario

import (
	"math/rand/v2"
	"reflect"
	"testing"
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
