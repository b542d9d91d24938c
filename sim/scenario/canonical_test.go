package scenario

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
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
