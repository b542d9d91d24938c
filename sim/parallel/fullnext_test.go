package parallel

import (
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
)

// TestFullNextIsSucc: full mode's successor runs (fullStage.next, which a
// task's end walks on every rank of the stage) list, per task of every
// stage, Program.Succ's successors in Succ's order, each with its
// fullTask's input count, for pipelines with and without a host thread
// (whose issue is one more input) and for a task waiting for more inputs
// than a byte counts.
func TestFullNextIsSucc(t *testing.T) {
	pr := unitPricer{unit: 20 * engine.Microsecond}
	var progs [][]*Program
	for _, c := range []struct {
		tp, dp, pp, m int
		host          bool
	}{
		{1, 1, 1, 2, false},
		{2, 2, 1, 2, true},
		{1, 2, 4, 8, false},
		{1, 1, 3, 6, true},
	} {
		_, cfg := stepConfig(t, c.tp, c.dp, c.pp, c.m, pipeline.OneFOneB)
		if c.host {
			cfg.Host = HostModel{On: true, KernelFwd: 3 * engine.Microsecond, KernelBwd: 2 * engine.Microsecond,
				Call: 5 * engine.Microsecond, Queue: 4}
		}
		ps, err := Build(cfg, pr)
		if err != nil {
			t.Fatal(err)
		}
		progs = append(progs, ps)
	}
	// A task with 300 inputs (counted beside the byte counters), hosted.
	var tasks []Task
	var deps [][]int32
	var all []int32
	for k := 0; k < 300; k++ {
		tasks, deps, all = append(tasks, compute(10)), append(deps, nil), append(all, int32(k))
	}
	tasks, deps = append(tasks, compute(5)), append(deps, all)
	hand := handProgram(tasks, deps)
	hand.Hosted = true
	progs = append(progs, []*Program{hand})
	for n, ps := range progs {
		l, err := NewLayout(1, 1, 1, 1, len(ps), [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
		if err != nil {
			t.Fatal(err)
		}
		x, err := NewFull(engine.New(), l, ps, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for s, p := range ps {
			fs := &x.full.stage[s]
			if len(fs.nextOf) != len(p.Tasks)+1 || fs.nextOf[0] != 0 {
				t.Fatalf("case %d stage %d: %d offsets from %v for %d tasks", n, s, len(fs.nextOf), fs.nextOf[:1], len(p.Tasks))
			}
			for k := range p.Tasks {
				got := fs.next[fs.nextOf[k]:fs.nextOf[k+1]]
				want := p.Succ(k)
				if len(got) != len(want) {
					t.Fatalf("case %d stage %d task %d: successors %v, Succ %v", n, s, k, got, want)
				}
				for j, w := range want {
					if got[j].task != w || got[j].need != fs.task[w].need {
						t.Fatalf("case %d stage %d task %d: successor %d is %+v, want task %d need %d",
							n, s, k, j, got[j], w, fs.task[w].need)
					}
				}
			}
		}
	}
}
