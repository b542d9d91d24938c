package validation

import (
	"errors"
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
