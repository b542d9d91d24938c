package simulation_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/simulation"
	"github.com/simtrain/simtrain/sim/sweep"
)

// TestPlayedProgramsAsBuilt: after a sweep worker's Run (one Reuse,
// FiguresOnly, the 70B layout sweep's points in order: shortened plays,
// replicated or failed and resumed, and whole ones) the arena's programs
// of the last build are as that build left them — every field (tasks,
// dependencies, successors, queue and self waits, bands, the copies'
// marks, the played records Program.hot, issueSum, …; programDiff) equals
// that of the same configuration built afresh in an arena of its own — so
// that a
// build-structure reuse (docs/design.md, reuse37) may take them for the
// next point's build instead of building again. Only the arena pointer
// differs. Every fourth simulated point (the test's time).
func TestPlayedProgramsAsBuilt(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the 70B sweep")
	}
	sw, err := sweep.Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", sweep.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n, checked, tasks := 0, 0, 0
	eachSimulatedPoint(t, sw, func(i int, p *sweep.Point, r *simulation.Result) {
		n++
		if n%4 != 1 && r.FailedTasks == 0 {
			return // every fourth point, and every one with a failed shortened play
		}
		checked++
		m := p.Scenario.StepConfig(r.Layout).Microbatches
		cfg, err := simulation.StepConfigOf(p.Scenario, m-r.Replicated)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Arena = new(parallel.Arena)
		want, err := simulation.BuildFresh(p.Scenario, cfg)
		if err != nil {
			t.Fatal(err)
		}
		got := simulation.ProgramsOf(r)
		if len(got) != len(want) {
			t.Fatalf("point %d: %d programs played, %d built", i, len(got), len(want))
		}
		for s := range want {
			tasks += len(want[s].Tasks)
			if f := programDiff(got[s], want[s]); f != "" {
				t.Errorf("point %d stage %d: field %s differs after the play", i, s, f)
			}
		}
	})
	t.Logf("%d points checked of %d, %d tasks", checked, n, tasks)
	if checked == 0 {
		t.Fatal("no point checked")
	}
}

// programDiff names the fields of a and b whose values differ (slices by
// their elements), "" if none, but for the arena pointer and the launch-
// queue walk's record of how it went, which depends on what the build
// took from a failed shortened play (BuildAfter: qfrom, the task the walk
// started at, qbig, the walk's own state, and qcopied, a count for
// tests), not on the play; for the layer skip's runs (skipRuns), which
// a Run finds, not the build; and for where a resumed build took its
// prefix from (prefix).
func programDiff(a, b *parallel.Program) string {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	var diff []string
	for i := 0; i < va.NumField(); i++ {
		name := va.Type().Field(i).Name
		if name == "arena" || name == "qfrom" || name == "qcopied" || name == "qbig" || name == "skipRuns" || name == "prefix" {
			continue
		}
		if !deepEqualUnexported(va.Field(i), vb.Field(i)) {
			diff = append(diff, name)
		}
	}
	return strings.Join(diff, ", ")
}

// deepEqualUnexported is reflect.DeepEqual for values read through
// unexported fields (Interface refuses them): ints, floats, bools,
// strings and their slices, arrays, structs and pointers to them
// (Program.qwide: nil on both, or equal values).
func deepEqualUnexported(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return deepEqualUnexported(a.Elem(), b.Elem())
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return a.Uint() == b.Uint()
	case reflect.Float32, reflect.Float64:
		return a.Float() == b.Float() || a.Float() != a.Float() && b.Float() != b.Float()
	case reflect.String:
		return a.String() == b.String()
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return false
		}
		for i := 0; i < a.Len(); i++ {
			if !deepEqualUnexported(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if !deepEqualUnexported(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	}
	panic("deepEqualUnexported: " + a.Kind().String())
}
