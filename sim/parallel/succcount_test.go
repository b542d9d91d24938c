package parallel

import (
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
)

// CheckSucc fails on a successor list or dependency count that is not the
// recount's.
func TestCheckSuccCatches(t *testing.T) {
	p := handProgram(make([]Task, 3), [][]int32{{}, {0}, {0, 1}})
	if err := CheckSucc(p); err != nil {
		t.Fatal(err)
	}
	p.succ[0], p.succ[1] = p.succ[1], p.succ[0] // task 0's list out of order
	if err := CheckSucc(p); err == nil || !strings.Contains(err.Error(), "task 0") {
		t.Errorf("swapped successors: %v", err)
	}
	p.succ[0], p.succ[1] = p.succ[1], p.succ[0]
	p.succOf[1]++ // task 0's list one long, task 1's one short
	if err := CheckSucc(p); err == nil {
		t.Error("a wrong list length passed")
	}
}

// On built steps (schedules, hosted or not, copying on and off, built
// one after another into one arena or not), the lists finish made equal a
// recount (CheckSucc).
func TestSuccListsOnBuilds(t *testing.T) {
	arena := new(Arena)
	pr := commPricer{unit: engine.Millisecond, comm: 300 * engine.Microsecond}
	n := 0
	for _, sched := range []pipeline.Schedule{pipeline.OneFOneB, pipeline.GPipe} {
		for _, hosted := range []bool{false, true} {
			for _, emit := range []bool{false, true} {
				for _, useArena := range []bool{false, true} {
					_, cfg := stepConfig(t, 2, 2, 4, 16, sched)
					cfg.Steps = 2
					cfg.EmitEveryPass, cfg.EmitEveryLayer = emit, emit
					if hosted {
						cfg.Host = HostModel{On: true, KernelFwd: 5 * engine.Microsecond, KernelBwd: 5 * engine.Microsecond,
							Call: 10 * engine.Microsecond, Queue: 64}
					}
					if useArena {
						cfg.Arena = arena
					}
					progs, err := Build(cfg, pr)
					if err != nil {
						t.Fatal(err)
					}
					for _, p := range progs {
						if err := CheckSucc(p); err != nil {
							t.Errorf("%v hosted %v emit %v arena %v: %v", sched, hosted, emit, useArena, err)
						}
						n += len(p.Tasks)
					}
				}
			}
		}
	}
	t.Logf("%d tasks checked", n)
}
