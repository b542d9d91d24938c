package scenario

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/simtrain/simtrain/sim/goodput"
)

// canonicalJSONByMap is CanonicalJSON as it was written before sweeps
// hashed every point of a load: the scenario marshalled, its top level
// decoded into a map, "name" dropped and the map marshalled (sorted keys).
func canonicalJSONByMap(s *Scenario) []byte {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	delete(m, "name")
	out, _ := json.Marshal(m)
	return out
}

// TestCanonicalJSONUnchanged: the canonical form (and so every run id) is
// byte for byte what the map round trip gave, on every scenario of the
// repository (bundled, validation, holdout, test data) and on each with
// goodput and an HTML-escaped string set, and its top-level keys are
// Scenario's json fields but name.
func TestCanonicalJSONUnchanged(t *testing.T) {
	var files []string
	for _, root := range []string{"../../scenarios", "../../cmd/simtrain/testdata"} {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") {
				files = append(files, p)
			}
			return nil
		})
	}
	checked := 0
	for _, f := range files {
		s, err := Load(f)
		if err != nil {
			continue // a sweep, a GPU record or a deliberately bad file
		}
		checked++
		for i, sc := range []Scenario{s.Scenario, func() Scenario {
			c := s.Scenario
			c.Name, c.Description = "a<b>&c", "x"
			c.Training.Framework = "<&>"
			return c
		}()} {
			if got, want := sc.CanonicalJSON(), canonicalJSONByMap(&sc); !bytes.Equal(got, want) {
				t.Errorf("%s (%d): canonical form changed:\n%s\n%s", f, i, got, want)
			}
		}
	}
	if checked < 40 {
		t.Errorf("only %d scenarios loaded", checked)
	}
	var keys []string
	st := reflect.TypeOf(Scenario{})
	for i := 0; i < st.NumField(); i++ {
		tag, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
		if tag != "-" && tag != "name" {
			keys = append(keys, tag)
		}
	}
	slices.Sort(keys)
	if want := []string{"cluster", "goodput", "model", "parallel", "sim", "training"}; !slices.Equal(keys, want) {
		t.Errorf("Scenario's top-level json keys are %v; CanonicalJSON writes %v", keys, want)
	}
}

// canonicalJSONByMarshal is CanonicalJSON with every block written by
// json.Marshal (the form before the compiled encoder).
func canonicalJSONByMarshal(s *Scenario) []byte {
	out := []byte{'{'}
	for i, b := range []struct {
		key string
		v   any
	}{{"cluster", &s.Cluster}, {"goodput", s.Goodput}, {"model", &s.Model},
		{"parallel", &s.Parallel}, {"sim", &s.Sim}, {"training", &s.Training}} {
		if b.key == "goodput" && s.Goodput == nil {
			continue
		}
		if i > 0 {
			out = append(out, ',')
		}
		j, err := json.Marshal(b.v)
		if err != nil {
			panic(err)
		}
		out = append(append(append(out, '"'), b.key+`":`...), j...)
	}
	return append(out, '}')
}

// fillRandom sets every exported field reachable from v (pointers made or
// left nil, slices nil, empty or short) to values drawn from r, among
// them the strings and floats whose JSON has escapes or exponents.
func fillRandom(r *rand.Rand, v reflect.Value) {
	strs := []string{"", "h100-sxm", "ok_1.2-3", "selective", "~ {}[]:;'|/?*"}
	if r.IntN(40) == 0 { // one that json escapes
		strs = []string{"a<b", "a&b", "c>d", `q"uote`, `back\slash`, "é", "tab\t", "\x7f", "\xff", "\u2028"}
	}
	floats := []float64{0, math.Copysign(0, -1), 1, -2.5, 1e-6, 9.99e-7, 1e-7, 1e21, 9.99e20, 1e22, 123456789.125, 2.99, 0.1, 1e-300, 5e-324, -1e25, 1.0 / 3}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		x := []int64{0, 1, -1, 8, 1 << 40, -(1 << 62)}[r.IntN(6)]
		if v.OverflowInt(x) {
			x = -3
		}
		v.SetInt(x)
	case reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint([]uint64{0, 1, 7, 1 << 15}[r.IntN(4)])
	case reflect.Float32, reflect.Float64:
		v.SetFloat(floats[r.IntN(len(floats))])
	case reflect.String:
		v.SetString(strs[r.IntN(len(strs))])
	case reflect.Pointer:
		if r.IntN(3) == 0 {
			v.SetZero()
			return
		}
		p := reflect.New(v.Type().Elem())
		fillRandom(r, p.Elem())
		v.Set(p)
	case reflect.Slice:
		switch n := r.IntN(4); n {
		case 0:
			v.SetZero()
		default:
			s := reflect.MakeSlice(v.Type(), n-1, n-1)
			for i := range s.Len() {
				fillRandom(r, s.Index(i))
			}
			v.Set(s)
		}
	case reflect.Array:
		for i := range v.Len() {
			fillRandom(r, v.Index(i))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillRandom(r, v.Field(i))
			}
		}
	}
}

// TestCanonicalEncoderEqualsJSON: on 20,000 scenarios with random values
// in every field (escaped strings, exponent floats, nil and empty lists,
// nil pointers, goodput present or not), CanonicalJSON writes the bytes
// json.Marshal writes, and a NaN panics as it did.
func TestCanonicalEncoderEqualsJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 1))
	fast := map[string]int{}
	for i := range 20000 {
		var s Scenario
		fillRandom(r, reflect.ValueOf(&s).Elem())
		if got, want := s.CanonicalJSON(), canonicalJSONByMarshal(&s); !bytes.Equal(got, want) {
			t.Fatalf("scenario %d:\n got %s\nwant %s", i, got, want)
		}
		for _, v := range []any{&s.Cluster, &s.Model, &s.Parallel, &s.Sim, &s.Training, s.Goodput} {
			rv := reflect.ValueOf(v) // a pointer to the block
			if rv.IsNil() {
				continue
			}
			if _, ok := canonicalType(rv.Type().Elem()).appendJSON(nil, rv.UnsafePointer()); ok {
				fast[rv.Type().String()]++
			}
		}
	}
	// Both paths were taken for every block: the encoder wrote most.
	for typ, n := range fast {
		if n < 3000 || n == 20000 {
			t.Errorf("%s: the encoder wrote %d of 20,000", typ, n)
		}
	}
	if len(fast) != 6 {
		t.Errorf("blocks written by the encoder: %v", fast)
	}
	var s Scenario
	s.Cluster.PUE = math.NaN()
	func() {
		defer func() {
			if recover() == nil {
				t.Error("NaN: no panic (json.Marshal fails on it)")
			}
		}()
		s.CanonicalJSON()
	}()
}

// TestCanonicalEncoderCompiles: every block type of the canonical form
// has a compiled encoder (a field of a type it does not know would send
// the block back through json.Marshal: exact, but slower), and the
// encoder declines what it does not know.
func TestCanonicalEncoderCompiles(t *testing.T) {
	var s Scenario
	for _, v := range []any{&s.Cluster, s.Goodput, &s.Model, &s.Parallel, &s.Sim, &s.Training} {
		if canonicalType(reflect.TypeOf(v)) == nil {
			t.Errorf("%T: no compiled encoder", v)
		}
	}
	type embedded struct{ ModelConfig }
	for _, v := range []any{map[string]int{}, json.Number("1"), time.Time{}, []byte{}, embedded{},
		struct {
			A int `json:"a,string"`
		}{}, struct {
			A int `json:"B"`
			B int
		}{}, struct {
			A int `json:"a,omitzero"`
		}{}, float32(1), struct{ X any }{}} {
		if canonicalType(reflect.TypeOf(v)) != nil {
			t.Errorf("%T: compiled, want json.Marshal", v)
		}
	}
}

// TestRunIDIsNewSHA1: RunID, hashed in one buffer by sha1.Sum, is the
// UUIDv5 uuid.NewSHA1 gives for the canonical JSON, on random scenarios
// (JSON of every length around the hash's 64-byte blocks) and the empty one.
func TestRunIDIsNewSHA1(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 1))
	for i := range 2000 {
		var s Scenario
		if i > 0 {
			fillRandom(r, reflect.ValueOf(&s).Elem())
		}
		if got, want := s.RunID(), uuid.NewSHA1(runIDNamespace, s.CanonicalJSON()).String(); got != want {
			t.Fatalf("scenario %d: run id %s, want %s", i, got, want)
		}
	}
}

// TestRunIDSharedPrefix: RunID resuming the hash after a kept prefix (the
// namespace and the cluster, goodput and model blocks) gives uuid.NewSHA1's
// id, on runs of scenarios that share those blocks (the prefix reused)
// broken by scenarios that differ in them, in a byte early, in the middle or
// late, or in length (the
// prefix replaced), and alternating between two prefixes.
func TestRunIDSharedPrefix(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 1))
	var bases [7]Scenario
	for i := range bases {
		fillRandom(r, reflect.ValueOf(&bases[i]).Elem())
	}
	bases[1] = bases[0]
	bases[1].Cluster.Nodes++ // differs in one byte or so
	bases[2] = bases[0]
	bases[2].Goodput = nil
	bases[3] = bases[0]
	bases[3].Model.Preset += "x" // one byte longer
	bases[4] = bases[0]
	bases[4].Model.Vocab++ // late in the prefix
	bases[5] = bases[0]
	bases[5].Cluster.PUE += 1 // in the middle
	reused := 0
	for i := range 3000 {
		var b int
		switch {
		case i < 1000:
			b = i / 100 % len(bases) // runs of 100
		case i < 2000:
			b = i % 2 // alternating
		default:
			b = r.IntN(len(bases))
		}
		s := bases[b]
		fillRandom(r, reflect.ValueOf(&s.Parallel).Elem())
		fillRandom(r, reflect.ValueOf(&s.Sim).Elem())
		fillRandom(r, reflect.ValueOf(&s.Training).Elem())
		before := lastRunIDPrefix.Load()
		if got, want := s.RunID(), uuid.NewSHA1(runIDNamespace, s.CanonicalJSON()).String(); got != want {
			t.Fatalf("scenario %d (base %d): run id %s, want %s", i, b, got, want)
		}
		if lastRunIDPrefix.Load() == before {
			reused++
		}
	}
	if reused < 1000 {
		t.Errorf("the kept prefix was reused %d times of 3,000, want most of the runs", reused)
	}
}

// TestSameMeansSameBytes: jsonType.same is true for a value and its copy,
// and, on pairs that differ in one random field or none (floats 0 and -0,
// nil and empty lists, nil and non-nil pointers among them), true only
// when the compiled encoder writes the same bytes for both (or declines
// for both): RunID reuses a prefix's bytes on its word.
func TestSameMeansSameBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(26, 2))
	types := []reflect.Type{reflect.TypeFor[ClusterConfig](), reflect.TypeFor[ModelConfig](),
		reflect.TypeFor[ParallelConfig](), reflect.TypeFor[TrainingConfig](), reflect.TypeFor[goodput.Config]()}
	var same, differ int
	for i := range 6000 {
		typ := types[i%len(types)]
		jt := canonicalType(typ)
		if jt == nil {
			continue
		}
		a := reflect.New(typ)
		fillRandom(r, a.Elem())
		b := reflect.New(typ)
		deepCopy(b.Elem(), a.Elem())
		if !jt.same(a.UnsafePointer(), b.UnsafePointer()) {
			t.Fatalf("%v %d: a value and its copy not the same", typ, i)
		}
		if r.IntN(8) > 0 { // one field, at any depth, filled again
			f := b.Elem()
			for f.Kind() == reflect.Struct && f.NumField() > 0 {
				f = f.Field(r.IntN(f.NumField()))
				if f.Kind() == reflect.Pointer && !f.IsNil() && r.IntN(2) == 0 {
					f = f.Elem()
				}
			}
			if f.CanSet() {
				fillRandom(r, f)
			}
		}
		ja, oka := jt.appendJSON(nil, a.UnsafePointer())
		jb, okb := jt.appendJSON(nil, b.UnsafePointer())
		if jt.same(a.UnsafePointer(), b.UnsafePointer()) {
			same++
			if oka != okb || (oka && !bytes.Equal(ja, jb)) {
				t.Fatalf("%v %d: same, but written %q (%v) and %q (%v)", typ, i, ja, oka, jb, okb)
			}
		} else {
			differ++
		}
	}
	if same < 1000 || differ < 1000 {
		t.Errorf("%d pairs the same, %d not: want both in the thousands", same, differ)
	}
}
