package calibration

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/simulation"
	"github.com/simtrain/simtrain/sim/validation"
)

// TestEvalAsFresh checks FromCases' Eval, whose workers keep their Reuses
// from one call to the next, against each point evaluated alone with
// nothing reused: every parameter at another grid value, on a dozen
// validation files, over three rounds of calls, the last one three calls
// at once (run with -race, it also checks that no two workers share a
// Reuse).
func TestEvalAsFresh(t *testing.T) {
	paths, _ := filepath.Glob("../../scenarios/validation/*.yaml")
	if len(paths) < 40 {
		t.Fatalf("found %d validation files", len(paths))
	}
	ctx := context.Background()
	var cases []validation.Case
	for i := 0; i < 40; i += 3 { // a dozen files, spread over the set
		cases = append(cases, validation.Evaluate(ctx, paths[i], simulation.Budget{}))
	}
	p, err := FromCases(cases, simulation.Budget{}, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	// points: each row at the grid's last value of every parameter, and
	// at its first
	var pts []Point
	for _, pick := range []func(g []string) string{
		func(g []string) string { return g[len(g)-1] },
		func(g []string) string { return g[0] },
	} {
		vals := make([]string, len(p.Params))
		for k, q := range p.Params {
			vals[k] = q.Init
			if len(q.Grid) > 0 {
				vals[k] = pick(q.Grid)
			}
		}
		for r := range p.Names {
			pts = append(pts, Point{Row: r, Values: vals})
		}
	}
	want := make([]Outcome, len(pts))
	for i, pt := range pts {
		cal := make(hardware.Calibration, len(p.Params))
		for k, q := range p.Params {
			cal[k] = hardware.Setting{Name: q.Name, Value: pt.Values[k]}
		}
		c := validation.EvaluateCalibrated(ctx, cases[rowCase(cases, p.Names[pt.Row])].Path, simulation.Budget{}, cal)
		want[i] = Outcome{Err: c.Comparison.Error, OK: c.Err == nil}
	}
	n := len(p.Names)
	differ := 0 // rows whose error the values move
	for r := range n {
		if want[r] != want[n+r] {
			differ++
		}
	}
	if differ == 0 {
		t.Fatal("the two sets of values give every row the same outcome: the test cannot tell a calibration Eval ignores")
	}
	check := func(round string, got []Outcome) {
		t.Helper()
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: point %d (row %s): %+v, alone %+v", round, i, p.Names[pts[i].Row], got[i], want[i])
			}
		}
	}
	check("first call", p.Eval(ctx, pts))
	check("second call", p.Eval(ctx, pts))
	var wg sync.WaitGroup
	got := make([][]Outcome, 3)
	for g := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[g] = p.Eval(ctx, pts)
		}()
	}
	wg.Wait()
	for _, o := range got {
		check("calls at once", o)
	}
}

// rowCase is the index of the case named name.
func rowCase(cases []validation.Case, name string) int {
	for i, c := range cases {
		if c.Name == name {
			return i
		}
	}
	return -1
}
