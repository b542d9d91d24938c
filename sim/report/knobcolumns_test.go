package report

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/output"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/sweep"
)

// The generator runs with the tag knobgen, which leaves knobcolumns_gen.go
// out of the package (knobcolumns_stub.go stands in), so that it still
// runs when the generated file no longer compiles (a field renamed or
// dropped, a Value's type changed).
//
//go:generate go test -tags knobgen -run ^TestKnobColumnsGenerated$ -update

var update = flag.Bool("update", false, "rewrite knobcolumns_gen.go from the knob registry")

// genFile is the generated file setKnobColumns lives in.
const genFile = "knobcolumns_gen.go"

// summaryFields maps summary.arrow's column names to output.SummaryRow's
// field indices.
var summaryFields = func() map[string]int {
	t := reflect.TypeOf(output.SummaryRow{})
	m := map[string]int{}
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("arrow"), ",")
		if name != "" {
			m[name] = i
		}
	}
	return m
}()

// knobValue is knob k's column value in plan s as the registry defines it,
// read by reflection: Knob.Value, else the field's own value (a null
// optional as false, a missing block as zero).
func knobValue(k *scenario.Knob, s *scenario.Plan) (reflect.Value, bool) {
	if k.Value != nil {
		return reflect.ValueOf(k.Value).Call([]reflect.Value{reflect.ValueOf(s)})[0], true
	}
	v, ok := k.Field(&s.Scenario)
	if !ok {
		return reflect.Value{}, false
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return reflect.Value{}, false
		}
		v = v.Elem()
	}
	return v, true
}

// knobColumnsConverted is the reference the generated code is held to:
// every knob column set by reflection's Convert into row (what summary
// did before setKnobColumns, from a zero row), a missing value leaving the
// column as it was.
func knobColumnsConverted(s *scenario.Plan, row output.SummaryRow) output.SummaryRow {
	rv := reflect.ValueOf(&row).Elem()
	for _, k := range scenario.Knobs {
		if k.Column == "" {
			continue
		}
		if v, ok := knobValue(k, s); ok {
			f := rv.Field(summaryFields[k.Column])
			f.Set(v.Convert(f.Type()))
		}
	}
	return row
}

// goField is the Go spelling of a knob's field below Scenario: the
// selector path and, for each selector, whether its type is a pointer.
type goField struct {
	names []string
	ptr   []bool
	typ   reflect.Type // the leaf's type, a pointer removed
}

// fieldOf resolves a dotted knob path through Scenario's yaml tags.
func fieldOf(path string) (goField, error) {
	var g goField
	t := reflect.TypeOf(scenario.Scenario{})
	for _, part := range strings.Split(path, ".") {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		found := false
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name == part {
				g.names = append(g.names, f.Name)
				g.ptr = append(g.ptr, f.Type.Kind() == reflect.Pointer)
				t, found = f.Type, true
				break
			}
		}
		if !found {
			return g, fmt.Errorf("%s: no field %q", path, part)
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	g.typ = t
	return g, nil
}

// generateKnobColumns writes knobcolumns_gen.go's source from the
// registry: for each knob with a column, in registry order, one statement
// that sets the column from the field (Go's conversion, which is
// reflect's Convert for these kinds; a nil block or optional leaves the
// column as it was) or by a direct call of the knob's Value.
func generateKnobColumns() ([]byte, error) {
	rowType := reflect.TypeOf(output.SummaryRow{})
	var body, paths bytes.Buffer
	nValues, nColumns := 0, 0
	// emit writes statement stmt under condition cond ("": always),
	// consecutive statements of one condition in one if block.
	cond := ""
	emit := func(c, stmt string) {
		if c != cond && cond != "" {
			body.WriteString("\t}\n")
		}
		if c != cond && c != "" {
			fmt.Fprintf(&body, "\tif %s {\n", c)
		}
		cond = c
		if stmt != "" {
			fmt.Fprintf(&body, "\t%s\n", stmt)
			nColumns++
		}
	}
	for _, k := range scenario.Knobs {
		if k.Column == "" {
			continue
		}
		fi, ok := summaryFields[k.Column]
		if !ok {
			return nil, fmt.Errorf("%s: column %q is not in output.SummaryRow", k.Path, k.Column)
		}
		dst := rowType.Field(fi)
		if k.Value != nil {
			want := reflect.FuncOf([]reflect.Type{reflect.TypeFor[*scenario.Plan]()}, []reflect.Type{dst.Type}, false)
			if got := reflect.TypeOf(k.Value); got != want {
				return nil, fmt.Errorf("%s: Value is a %s; column %s wants a %s", k.Path, got, k.Column, want)
			}
			name := "value" + dst.Name
			emit("", fmt.Sprintf("row.%s = %s(s)", dst.Name, name))
			fmt.Fprintf(&paths, "\t%s = valueFunc[%s](%q)\n", name, dst.Type, k.Path)
			nValues++
			continue
		}
		g, err := fieldOf(k.Path)
		if err != nil {
			return nil, err
		}
		if !g.typ.ConvertibleTo(dst.Type) {
			return nil, fmt.Errorf("%s: a %s cannot fill column %s (%s)", k.Path, g.typ, k.Column, dst.Type)
		}
		var nilChecks []string
		expr := "sc"
		for i, n := range g.names {
			expr += "." + n
			if g.ptr[i] {
				nilChecks = append(nilChecks, expr+" != nil")
			}
		}
		last := len(g.names) - 1
		if g.ptr[last] {
			expr = "*" + expr
		}
		if g.typ != dst.Type {
			expr = dst.Type.String() + "(" + expr + ")"
		}
		emit(strings.Join(nilChecks, " && "), fmt.Sprintf("row.%s = %s", dst.Name, expr))
	}
	emit("", "")
	var src bytes.Buffer
	src.WriteString(`// Code generated by "go test -tags knobgen -run ^TestKnobColumnsGenerated$ -update"; DO NOT EDIT.
// The source is scenario.Knobs (each knob's Column and Value) and the
// arrow tags of output.SummaryRow; go generate ./sim/report rewrites it.

//go:build !knobgen

package report

import (
	"github.com/simtrain/simtrain/sim/output"
	"github.com/simtrain/simtrain/sim/scenario"
)

// The registry's Value functions, of the knobs whose column is their
// value.
var (
`)
	src.Write(paths.Bytes())
	fmt.Fprintf(&src, `)

// setKnobColumns sets plan s's knob columns in row, in registry order, and
// leaves its other fields as they are: a column is the knob's Value or
// its field's own value converted to the column's type;
// a missing block (model.moe) or a null optional (a *bool) leaves the
// column as it was. It equals reflection's Convert of every knob's value
// (TestKnobColumnsEqualConvert) without reflection: one assignment a
// column (%d), %d of them a direct call of a Value function.
func setKnobColumns(s *scenario.Plan, row *output.SummaryRow) {
	sc := &s.Scenario
`, nColumns, nValues)
	src.Write(body.Bytes())
	src.WriteString("}\n")
	return format.Source(src.Bytes())
}

// TestKnobColumnsGenerated: knobcolumns_gen.go is what the registry
// generates today, so a knob added, dropped, renamed, reordered or given
// another column, Value or type fails here until it is regenerated.
func TestKnobColumnsGenerated(t *testing.T) {
	want, err := generateKnobColumns()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(genFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(genFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not what the knob registry generates: run go generate ./sim/report", genFile)
	}
}

// knobColumns is the row setKnobColumns fills from zero.
func knobColumns(s *scenario.Plan) output.SummaryRow {
	var row output.SummaryRow
	setKnobColumns(s, &row)
	return row
}

// bundledPlans are the plans of every bundled scenario file (scenarios/,
// holdout/, validation/) and every point of the bundled sweeps, invalid
// points (partly resolved plans) included, by name.
func bundledPlans(t *testing.T) map[string]*scenario.Plan {
	t.Helper()
	plans := map[string]*scenario.Plan{}
	var sweeps []string
	err := filepath.WalkDir("../../scenarios", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".yaml" {
			return err
		}
		if filepath.Base(filepath.Dir(path)) == "sweeps" {
			sweeps = append(sweeps, path)
			return nil
		}
		s, err := scenario.Load(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
		plans[path] = s
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(sweeps) == 0 {
		t.Fatal("no bundled sweep found")
	}
	for _, path := range sweeps {
		sw, err := sweep.Load(path, sweep.Options{})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for i := 0; i < sw.Len(); i++ {
			p := sw.Point(i)
			plans[fmt.Sprintf("%s point %d", path, i)] = p.Scenario
		}
	}
	return plans
}

// TestKnobColumnsEqualConvert: the generated columns equal reflection's
// Convert of every knob's value for every bundled scenario and every
// point of the bundled sweeps (valid and invalid), into a zero row and
// into a row already holding another plan's columns (every column is
// set but those of a missing block or a null optional, as Convert's).
func TestKnobColumnsEqualConvert(t *testing.T) {
	plans := bundledPlans(t)
	if len(plans) < 1000 {
		t.Fatalf("%d bundled plans, want the scenarios and the sweeps' points", len(plans))
	}
	moe, err := scenario.Load("../../scenarios/deepseek-v3-256-gb200.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dirty := knobColumns(moe)
	for _, name := range slices.Sorted(maps.Keys(plans)) {
		s := plans[name]
		if got, want := knobColumns(s), knobColumnsConverted(s, output.SummaryRow{}); got != want {
			t.Errorf("%s: %s", name, rowDiff(got, want))
			continue
		}
		got := dirty
		setKnobColumns(s, &got)
		if want := knobColumnsConverted(s, dirty); got != want {
			t.Errorf("%s, over another plan's row: %s", name, rowDiff(got, want))
		}
	}
}

// rowDiff lists the columns where got and want differ.
func rowDiff(got, want output.SummaryRow) string {
	g, w := reflect.ValueOf(got), reflect.ValueOf(want)
	var out []string
	for i := 0; i < g.NumField(); i++ {
		if !g.Field(i).Equal(w.Field(i)) {
			out = append(out, fmt.Sprintf("%s %v, want %v", g.Type().Field(i).Name, g.Field(i), w.Field(i)))
		}
	}
	return strings.Join(out, "; ")
}

// TestKnobColumnsFollowEveryField: each knob column read from a field
// follows that field: set to a value of its own in a plan (with every
// optional block made present), the column changes to that value converted
// to the column's type, and the row is reflection's. A knob the
// generated code drops, reads from another field or converts otherwise
// fails here.
func TestKnobColumnsFollowEveryField(t *testing.T) {
	base, err := scenario.Load("../../scenarios/deepseek-v3-256-gb200.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if base.Model.MoE == nil {
		t.Fatal("the base plan has no model.moe block")
	}
	n := 0
	for ki, k := range scenario.Knobs {
		if k.Column == "" || k.Value != nil {
			continue
		}
		s := *base
		f, err := ownField(&s.Scenario, k.Path)
		if err != nil {
			t.Fatal(err)
		}
		switch f.Kind() {
		case reflect.Int, reflect.Int64, reflect.Int32:
			f.SetInt(f.Int()*3 + int64(ki) + 7)
		case reflect.Float64:
			f.SetFloat(f.Float()*3 + float64(ki) + 0.1)
		case reflect.String:
			f.SetString(fmt.Sprintf("%s-%d", f.String(), ki))
		case reflect.Bool:
			f.SetBool(!f.Bool())
		default:
			t.Fatalf("%s: a %s field: add its kind to this test", k.Path, f.Type())
		}
		was, got, want := knobColumns(base), knobColumns(&s), knobColumnsConverted(&s, output.SummaryRow{})
		col := summaryFields[k.Column]
		if reflect.ValueOf(got).Field(col).Equal(reflect.ValueOf(was).Field(col)) {
			t.Errorf("%s: column %s does not follow its field", k.Path, k.Column)
		}
		if got != want {
			t.Errorf("%s: %s", k.Path, rowDiff(got, want))
		}
		n++
	}
	if n < 50 {
		t.Errorf("%d field knobs tried, want every one with a column", n)
	}
}

// ownField is the settable field of a knob path in s, every pointer on the
// way (a block, an optional leaf) replaced by a fresh copy of what it
// pointed to (zero when nil), so that setting it changes s alone.
func ownField(s *scenario.Scenario, path string) (reflect.Value, error) {
	g, err := fieldOf(path)
	if err != nil {
		return reflect.Value{}, err
	}
	v := reflect.ValueOf(s).Elem()
	for i, name := range g.names {
		v = v.FieldByName(name)
		if g.ptr[i] {
			fresh := reflect.New(v.Type().Elem())
			if !v.IsNil() {
				fresh.Elem().Set(v.Elem())
			}
			v.Set(fresh)
			v = v.Elem()
		}
	}
	return v, nil
}

// benchPlans are the 1,000-point 70B sweep's point plans.
func benchPlans(b *testing.B) []*scenario.Plan {
	sw, err := sweep.Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", sweep.Options{})
	if err != nil {
		b.Fatal(err)
	}
	plans := make([]*scenario.Plan, sw.Len())
	for i := range plans {
		plans[i] = sw.Point(i).Scenario
	}
	return plans
}

// BenchmarkKnobColumns sets the knob columns of the 1,000-point 70B
// sweep's points (ns/op: all 1,000), as summary does.
func BenchmarkKnobColumns(b *testing.B) {
	plans := benchPlans(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range plans {
			var row output.SummaryRow
			setKnobColumns(s, &row)
		}
	}
}

// BenchmarkKnobColumnsReflect is BenchmarkKnobColumns by reflection, as
// summary set them before knobcolumns_gen.go.
func BenchmarkKnobColumnsReflect(b *testing.B) {
	plans := benchPlans(b)
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range plans {
			_ = knobColumnsConverted(s, output.SummaryRow{})
		}
	}
}
