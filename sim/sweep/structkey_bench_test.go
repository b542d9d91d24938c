package sweep

import (
	"testing"

	"github.com/simtrain/simtrain/sim/parallel"
)

// BenchmarkStructureKeys70B computes the structure key of every valid
// point of the 70B layout sweep, as byStructure does at load (the step
// configurations made beforehand, outside the loop): the keys' own cost.
func BenchmarkStructureKeys70B(b *testing.B) {
	sw, err := Load("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml", Options{})
	if err != nil {
		b.Fatal(err)
	}
	var cfgs []*parallel.StepConfig
	for i := range sw.points {
		if sw.points[i].err != "" {
			continue
		}
		s := sw.plans[i].Load()
		l, err := s.NewLayout()
		if err != nil {
			continue
		}
		cfgs = append(cfgs, s.StepConfig(l))
	}
	b.ResetTimer()
	for b.Loop() {
		for _, c := range cfgs {
			if _, ok := c.StructureKey(); !ok {
				b.Fatal("no key")
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(cfgs)), "ns/key")
}
