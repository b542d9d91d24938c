package validation

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/simtrain/simtrain/sim/simulation"
)

// TestSummarise: MAPE is the mean and median the median of the absolute
// errors of the cases that compared; a failed case counts as a row only;
// memory statistics take the cases that publish a peak memory; groups
// split the same figures, an empty key under "(none)".
func TestSummarise(t *testing.T) {
	ok := &simulation.Result{Fits: true}
	cases := []Case{
		{Name: "a", GPU: "h100-sxm", Group: "g1", Result: ok, Comparison: Comparison{Error: 0.1, HasMemory: true, MemError: -0.2}},
		{Name: "b", GPU: "a100-80gb", Group: "g1", Result: ok, Comparison: Comparison{Error: -0.3}},
		{Name: "c", GPU: "h100-pcie", Result: &simulation.Result{}, Comparison: Comparison{Error: 0.2}},
		{Name: "d", GPU: "h100-sxm", Group: "g2", Err: errors.New("failed")},
	}
	s := Summarise(cases)
	near := func(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }
	if a := s.All; a.Rows != 4 || a.Simulated != 3 || !near(a.MAPE, 0.2) || !near(a.Median, 0.2) || a.Worst != 0.3 || a.WorstName != "b" {
		t.Errorf("all: %+v", a)
	}
	if m := s.Memory; m.Rows != 1 || m.Simulated != 1 || m.MAPE != 0.2 || m.WorstName != "a" {
		t.Errorf("memory: %+v", m)
	}
	var bySource, byModel []string
	for _, g := range s.Groups[0] {
		bySource = append(bySource, g.Name)
	}
	for _, g := range s.Groups[2] {
		byModel = append(byModel, g.Name)
	}
	if len(bySource) != 3 || bySource[0] != "(none)" || len(byModel) != 2 || byModel[1] != "h100" || s.Groups[2][1].Simulated != 2 {
		t.Errorf("groups: source %v, model %v %+v", bySource, byModel, s.Groups[2])
	}
	if nf := NotFitting(cases); len(nf) != 1 || nf[0] != "c" {
		t.Errorf("not fitting: %v", nf)
	}
}

// Run's workers each keep one simulation.Reuse from case to case
// (EvaluateWith); the cases are the ones Evaluate gives with nothing
// reused, whatever the worker count (and so whatever each Reuse saw
// before): the error, the comparison and every figure a Case is read for,
// on every published run of scenarios/validation and scenarios/holdout
// (every fourth with -short). A Reuse whose storage, cluster or prices
// leaked into the next case fails here.
func TestRunReusesAsFresh(t *testing.T) {
	var paths []string
	for _, pat := range []string{"../../scenarios/validation/*.yaml", "../../scenarios/holdout/*.yaml"} {
		m, err := filepath.Glob(pat)
		if err != nil || len(m) == 0 {
			t.Fatalf("%s: %v (%d files)", pat, err, len(m))
		}
		for i, p := range m {
			if !testing.Short() || i%4 == 0 {
				paths = append(paths, p)
			}
		}
	}
	ctx := context.Background()
	budget := simulation.Budget{} // the defaults
	fresh := make([]Case, len(paths))
	for i, p := range paths {
		fresh[i] = Evaluate(ctx, p, budget)
	}
	figures := func(c Case) []any {
		if c.Result == nil {
			return nil
		}
		r := c.Result
		return []any{r.StepTimeS, r.StepP50S, r.StepP99S, r.TokensPerS, r.MFU, r.HFU, r.TFLOPsPerGPU, r.BubbleFraction,
			r.ComputeS, r.ExposedCommS, r.HostBoundS, r.PeakMemBytes, r.PeakReservedBytes, r.MemCapacityBytes,
			r.MemMarginBytes, r.Fits, r.Events, r.SimWallS > 0}
	}
	simulated := 0
	for _, workers := range []int{1, 2} {
		cases := Run(ctx, paths, workers, budget)
		for i, c := range cases {
			f := fresh[i]
			if (c.Err == nil) != (f.Err == nil) || (c.Err != nil && c.Err.Error() != f.Err.Error()) {
				t.Fatalf("%d workers, %s: error %v, alone %v", workers, c.Name, c.Err, f.Err)
			}
			if c.Comparison != f.Comparison || !reflect.DeepEqual(figures(c), figures(f)) {
				t.Errorf("%d workers, %s: %+v %v\nalone %+v %v", workers, c.Name, c.Comparison, figures(c), f.Comparison, figures(f))
			}
			if c.Err == nil && workers == 1 {
				simulated++
			}
		}
	}
	if simulated < len(paths)/2 {
		t.Errorf("%d of %d cases simulated", simulated, len(paths))
	}
}
