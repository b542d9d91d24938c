package calibration

import (
	"context"
	"math"
	"slices"
	"strconv"
	"testing"
)

// toy is a validation set of hand-computable rows: row r's predicted step
// is base[r] + n[r]·s for the stall s (ms), measured meas[r].
type toy struct {
	base, n, meas []float64
}

func (ty toy) eval(_ context.Context, pts []Point) []Outcome {
	out := make([]Outcome, len(pts))
	for i, pt := range pts {
		s, _ := strconv.ParseFloat(pt.Values[0], 64)
		r := pt.Row
		out[i] = Outcome{Err: (ty.base[r]+ty.n[r]*s)/ty.meas[r] - 1, OK: true}
	}
	return out
}

func stallProblem(names, groups []string, ty toy, moves []bool) *Problem {
	return &Problem{Names: names, Groups: groups, Eval: ty.eval,
		Params: []Param{{Name: "stall", Init: "1", Prior: "0", Grid: []string{"0", "1", "2", "3"}, With: -1,
			Rows: moves, Moves: moves}}}
}

// TestLeaveOneGroupOutByHand: rows a1 (group A: 8 + s against 10) and b1
// (group B: 6 + s against 9) use the stall, c1 (group C: 10 against 10)
// does not. Fit on all: mean |error| at s = 0,1,2,3 is 0.267, 0.161,
// 0.056, 0.050, so s = 3. Without A the fit is b1's s = 3 and a1 scores
// +10%; without B it is a1's s = 2 and b1 scores 8/9 − 1 = −11.1%; without
// C it is s = 3 and c1 scores 0.
func TestLeaveOneGroupOutByHand(t *testing.T) {
	ty := toy{base: []float64{8, 6, 10}, n: []float64{1, 1, 0}, meas: []float64{10, 9, 10}}
	p := stallProblem([]string{"a1", "b1", "c1"}, []string{"A", "B", "C"}, ty, []bool{true, true, false})
	ctx := context.Background()
	f, err := p.Fit(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.Values[0] != "3" || math.Abs(f.Steps[0].Objective-0.05) > 1e-12 || !slices.Equal(f.Steps[0].Rows, []int{0, 1}) {
		t.Fatalf("fit on all rows = %v, step %+v; want s = 3, objective 0.05 on rows a1, b1", f.Values, f.Steps[0])
	}
	folds, err := p.CrossValidate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		group, value string
		err          float64
	}{{"A", "3", 0.1}, {"B", "2", 8.0/9 - 1}, {"C", "3", 0}}
	for i, w := range want {
		fo := folds[i]
		if fo.Group != w.group || fo.Values[0] != w.value || len(fo.Outcomes) != 1 || math.Abs(fo.Outcomes[0].Err-w.err) > 1e-12 {
			t.Errorf("fold %d = %+v; want group %s refit %s, held-out error %.4f", i, fo, w.group, w.value, w.err)
		}
	}
	// every (row, stall) once: a1 and b1 at 4 values; c1, which the stall
	// does not move, once for all values
	if got := p.Evaluations(); got != 9 {
		t.Errorf("evaluations = %d, want 9 (4 + 4 + 1: the folds reuse the fit's)", got)
	}
}

// TestFoldWithoutRowsTakesThePrior: only group A's row uses the stall, so
// the fold without A has nothing to fit it on and takes the prior 0: a1
// (8 + s against 10) then scores −20%.
func TestFoldWithoutRowsTakesThePrior(t *testing.T) {
	ty := toy{base: []float64{8, 10}, n: []float64{1, 0}, meas: []float64{10, 10}}
	p := stallProblem([]string{"a1", "c1"}, []string{"A", "C"}, ty, []bool{true, false})
	folds, err := p.CrossValidate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if folds[0].Values[0] != "0" || math.Abs(folds[0].Outcomes[0].Err+0.2) > 1e-12 {
		t.Errorf("fold A = %+v; want the prior 0 and error −0.2", folds[0])
	}
	if folds[1].Values[0] != "2" || folds[1].Outcomes[0].Err != 0 {
		t.Errorf("fold C = %+v; want a1's s = 2 and error 0", folds[1])
	}
}

// TestJointGridTakesTheFirstMinimum: two factors fitted together on one
// row whose prediction is g·h against 1: (0.5, 2) and (1, 1) both hit it;
// the product is walked with g slowest, and the first minimum wins.
func TestJointGridTakesTheFirstMinimum(t *testing.T) {
	p := &Problem{Names: []string{"r"}, Groups: []string{"A"},
		Params: []Param{
			{Name: "g", Init: "1", Prior: "1", Grid: []string{"0.5", "1"}, With: 1, Rows: []bool{true}},
			{Name: "h", Init: "1", Prior: "1", Grid: []string{"1", "2"}, With: -1, Rows: []bool{true}},
		},
		Eval: func(_ context.Context, pts []Point) []Outcome {
			out := make([]Outcome, len(pts))
			for i, pt := range pts {
				g, _ := strconv.ParseFloat(pt.Values[0], 64)
				h, _ := strconv.ParseFloat(pt.Values[1], 64)
				out[i] = Outcome{Err: g*h - 1, OK: true}
			}
			return out
		}}
	f, err := p.Fit(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Values, []string{"0.5", "2"}) || len(f.Steps) != 1 {
		t.Errorf("fit = %+v; want g 0.5, h 2 in one step", f)
	}
}
