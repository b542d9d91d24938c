package parallel

import (
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
)

// BenchmarkStats measures Stats on BenchmarkExecutorHost's step played
// once (a 4-stage 1F1B step with TP, DP and pipeline traffic, every task
// issued by a host thread): each stage's tasks walked per op.
func BenchmarkStats(b *testing.B) {
	l, progs := stepPrograms(b, 2, 2, 4, 32, pipeline.OneFOneB, commPricer{unit: engine.Millisecond, comm: 300 * engine.Microsecond})
	tasks := 0
	for _, p := range progs {
		p.Hosted = true
		for i := range p.Tasks {
			if p.Tasks[i].Kind != KindRecv {
				p.hot[i].issue = 5 * engine.Microsecond
			}
		}
		tasks += len(p.Tasks)
	}
	x := playStep(b, l, progs, Interference{}, nil)
	var st Stats
	for b.Loop() {
		for i := range x.Instances() {
			st = x.Stats(i)
		}
	}
	if st.End == 0 {
		b.Fatal("nothing measured")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(tasks), "ns/task")
}
