package scenario

import (
	"bufio"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestChoicesAreValid keeps the registry's value lists in step with what
// resolution accepts: every listed value passes the field's own check.
func TestChoicesAreValid(t *testing.T) {
	for _, k := range Knobs {
		if k.Choices == nil {
			continue
		}
		for _, c := range k.Choices() {
			_, err := parse(k.Path, c, "parallel.tp", "1")
			if err != nil && strings.Contains(err.Error(), "unknown") {
				t.Errorf("%s: %s: %v", k.Path, c, err)
			}
		}
	}
	for _, f := range AutoFields() {
		if !strings.Contains(f, "(") && f != "any true/false field" {
			t.Errorf("AutoFields entry %q has no description", f)
		}
	}
}

// TestConstDefaultsFill: every constant default of the registry is what a
// scenario that leaves the field out resolves to.
func TestConstDefaultsFill(t *testing.T) {
	s, err := parse()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range Knobs {
		if k.Const == nil || s.Given(k.Path) || strings.HasPrefix(k.Path, "expect.") {
			continue
		}
		v, ok := k.Field(&s.Scenario)
		if !ok {
			t.Fatalf("%s: no field", k.Path)
		}
		if v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		if got, want := v.Interface(), reflect.ValueOf(k.Const).Convert(v.Type()).Interface(); got != want {
			t.Errorf("%s: resolves to %v, the registry's default is %v", k.Path, got, want)
		}
	}
}

// TestOverrides: an override sets a field as the file would, wins over the
// file, and a bad one is a one-line error that names the field.
func TestOverrides(t *testing.T) {
	s, err := parse("parallel.tp", "4", "sim.fidelity", "flow")
	if err != nil {
		t.Fatal(err)
	}
	if s.Parallel.TP != 4 || s.Parallel.DP != 4 || s.Sim.Fidelity != "flow" || !s.Given("parallel.tp") || s.Given("parallel.dp") {
		t.Errorf("overrides not applied: %+v %+v", s.Parallel, s.Sim)
	}
	byFile, err := Parse([]byte(baseScenario+"sim:\n  fidelity: flow\n"), Overrides("parallel.tp", "4")...)
	if err != nil || byFile.RunID() != s.RunID() {
		t.Errorf("override and file spellings differ: %v", err)
	}
	for _, c := range []struct{ path, value, want string }{
		{"parallel.tp", "eight", `parallel.tp: expected an integer, got "eight" (set outside the file)`},
		{"parallel.tpp", "8", `parallel.tpp: unknown field; did you mean "tp"?`},
		{"parallel", "8", "parallel: is a group of fields"},
		{"training.precision", "int8", `training.precision: unknown value "int8"`},
		{"parallel.tp", "[", "parallel.tp: \"[\" is not a YAML value"},
	} {
		_, err := parse(c.path, c.value)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s=%s: error %v, want one line containing %q", c.path, c.value, err, c.want)
		}
	}
}

// TestDocsTablesMatchRegistry: the field tables of docs/scenario-format.md
// list exactly the registry's fields (the expect block is prose), each
// with the registry's default.
func TestDocsTablesMatchRegistry(t *testing.T) {
	f, err := os.Open("../../docs/scenario-format.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	documented := map[string]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if h, ok := strings.CutPrefix(line, "## "); ok {
			section = h
			if strings.Contains(h, ",") { // "name, description"
				section = ""
			}
			continue
		}
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, " | ")
		var names []string
		for _, n := range strings.Split(strings.TrimPrefix(cells[0], "| "), ", ") {
			n, _, _ = strings.Cut(strings.Trim(n, "`"), ".<") // a map's entries: the map
			names = append(names, join(section, n))
		}
		defaults := []string{cells[1]}
		if d := strings.Split(cells[1], ", "); len(names) > 1 && len(d) == len(names) {
			defaults = d
		}
		for i, n := range names {
			documented[n] = defaults[min(i, len(defaults)-1)]
		}
	}
	for _, k := range Knobs {
		if strings.HasPrefix(k.Path, "expect.") {
			continue
		}
		d, ok := documented[k.Path]
		switch {
		case !ok:
			t.Errorf("%s: not in docs/scenario-format.md", k.Path)
		case d != k.DefaultText():
			t.Errorf("%s: docs say the default is %q, the registry %q", k.Path, d, k.DefaultText())
		}
		delete(documented, k.Path)
	}
	for n := range documented {
		t.Errorf("docs/scenario-format.md documents %s, which is not in the registry", n)
	}
}

// TestFillDirectEqualsReflect: on the plans of every bundled scenario,
// with each direct knob's field zeroed, drawn at random (-0.0 among the
// floats) or left as resolved, and given or not, fill's typed path
// (fillDirect) leaves the scenario as the reflective one (fillReflect)
// does; and the knobs fill's typed path takes are most of them.
func TestFillDirectEqualsReflect(t *testing.T) {
	files, err := filepath.Glob("../../scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	r := rand.New(rand.NewPCG(43, 8))
	direct, cases, filled := 0, 0, 0
	for _, k := range Knobs {
		if k.direct {
			direct++
		}
	}
	if direct < len(Knobs)/2 {
		t.Errorf("%d of %d knobs direct, want most", direct, len(Knobs))
	}
	for _, f := range files {
		base, err := Load(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, k := range Knobs {
			if !k.direct || (k.Derive == nil && k.Const == nil) {
				continue
			}
			for variant := range 6 {
				a := *base
				a.set = maps.Clone(base.set)
				v, _ := k.Field(&a.Scenario)
				switch variant % 3 {
				case 0:
					v.SetZero()
				case 1:
					fillRandom(r, v)
				}
				if variant < 3 {
					a.set[k.Path] = true
				} else {
					delete(a.set, k.Path)
				}
				b := a
				before := a.Scenario
				a.fill(k)
				b.fillReflect(k)
				cases++
				if !reflect.DeepEqual(a.Scenario, b.Scenario) {
					got, _ := k.Field(&a.Scenario)
					want, _ := k.Field(&b.Scenario)
					t.Fatalf("%s %s variant %d: typed fill %v, reflective %v", filepath.Base(f), k.Path, variant, got, want)
				}
				if !reflect.DeepEqual(a.Scenario, before) {
					filled++
				}
			}
		}
	}
	if filled == 0 || filled == cases {
		t.Errorf("%d of %d cases filled: the test does not reach both outcomes", filled, cases)
	}
}
