package parallel

import (
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
)

// BenchmarkBuildPrograms builds the programs of an 8-stage 1F1B step of 64
// micro-batches with TP, DP and pipeline traffic (the task graph only).
func BenchmarkBuildPrograms(b *testing.B) {
	pr := commPricer{unit: engine.Millisecond, comm: 300 * engine.Microsecond}
	for b.Loop() {
		stepPrograms(b, 2, 2, 8, 64, pipeline.OneFOneB, pr)
	}
}

// BenchmarkBuildProgramsArena is BenchmarkBuildPrograms building into one
// Arena, as a sweep worker does point after point.
func BenchmarkBuildProgramsArena(b *testing.B) {
	pr := commPricer{unit: engine.Millisecond, comm: 300 * engine.Microsecond}
	_, cfg := stepConfig(b, 2, 2, 8, 64, pipeline.OneFOneB)
	cfg.Arena = new(Arena)
	for b.Loop() {
		c := *cfg
		if _, err := Build(&c, pr); err != nil {
			b.Fatal(err)
		}
	}
}
