package parallel

import (
	"fmt"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/workload"
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

// BenchmarkBuildLayerCopy builds a 2-stage 1F1B step of 16 micro-batches
// with TP and DP (the 70B sweep's shape of pass) with L layers per stage,
// with layer copying (copy) and with every layer emitted (emit), into one
// Arena: what copying saves, or costs where few layers repeat.
func BenchmarkBuildLayerCopy(b *testing.B) {
	pr := commPricer{unit: engine.Millisecond, comm: 300 * engine.Microsecond}
	for _, per := range []int{4, 5, 10, 20, 40} {
		for _, every := range []bool{false, true} {
			name := fmt.Sprintf("layers=%d/copy", per)
			if every {
				name = fmt.Sprintf("layers=%d/emit", per)
			}
			b.Run(name, func(b *testing.B) {
				_, cfg := stepConfig(b, 2, 2, 2, 16, pipeline.OneFOneB)
				cfg.Model = workload.Model{Name: "test", Layers: 2 * per, Hidden: 1024, Heads: 16, Vocab: 32000}
				cfg.Model.Fill()
				chunks, err := Partition(2*per, 2, 1, 0, 0)
				if err != nil {
					b.Fatal(err)
				}
				cfg.Chunks, cfg.EmitEveryLayer, cfg.Arena = chunks, every, new(Arena)
				for b.Loop() {
					c := *cfg
					if _, err := Build(&c, pr); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkBuildHosted is a sweep point's build as the sweep runs it: an
// 8-stage 1F1B step of 32 micro-batches with TP, DP, a host thread and a
// bounded launch queue, built into one Arena and prepared for the
// symmetric play (NewSymmetric), without the play.
func BenchmarkBuildHosted(b *testing.B) {
	pr := commPricer{unit: engine.Millisecond, comm: 300 * engine.Microsecond}
	l, cfg := stepConfig(b, 2, 2, 8, 32, pipeline.OneFOneB)
	cfg.Host = HostModel{On: true, KernelFwd: 5 * engine.Microsecond, KernelBwd: 5 * engine.Microsecond,
		Call: 10 * engine.Microsecond, Queue: 1024}
	cfg.Arena = new(Arena)
	for b.Loop() {
		c := *cfg
		progs, err := Build(&c, pr)
		if err != nil {
			b.Fatal(err)
		}
		NewSymmetric(engine.New(), l, progs)
	}
}
