package parallel

import (
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
)

// hostedPrograms builds BenchmarkBuildHosted's step (8 stages of 1F1B, 32
// micro-batches, TP, DP, a host thread with a 1,024-launch queue).
func hostedPrograms(b *testing.B) ([]*Program, *StepConfig) {
	pr := commPricer{unit: engine.Millisecond, comm: 300 * engine.Microsecond}
	_, cfg := stepConfig(b, 2, 2, 8, 32, pipeline.OneFOneB)
	cfg.Host = HostModel{On: true, KernelFwd: 5 * engine.Microsecond, KernelBwd: 5 * engine.Microsecond,
		Call: 10 * engine.Microsecond, Queue: 1024}
	progs, err := Build(cfg, pr)
	if err != nil {
		b.Fatal(err)
	}
	return progs, cfg
}

// BenchmarkFinish is finish alone on BenchmarkBuildHosted's programs:
// the successor lists and dependency counts, on the programs' own
// storage.
func BenchmarkFinish(b *testing.B) {
	progs, _ := hostedPrograms(b)
	for b.Loop() {
		for _, p := range progs {
			p.finish()
		}
	}
}

// BenchmarkSetQueueWaits is setQueueWaits alone on BenchmarkBuildHosted's
// programs.
func BenchmarkSetQueueWaits(b *testing.B) {
	progs, cfg := hostedPrograms(b)
	for b.Loop() {
		for _, p := range progs {
			p.setQueueWaits(&cfg.Host, nil)
		}
	}
}
