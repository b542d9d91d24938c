package parallel

import (
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/units"
)

// stagePairPricer prices a pipeline send by its stages and size, so that a
// send priced for another pair or size shows in its Dur.
type stagePairPricer struct{ commPricer }

func (stagePairPricer) SendTime(from, to int, bytes units.Bytes) engine.Time {
	return engine.Time(1000*from+10*to) + engine.Time(bytes)%7
}

// Every program's p2p list holds exactly its sends and receives, in task
// order (linkP2P pairs only those), and every send's Dur is the pricer's
// answer for its own stage pair and size (builder.sendTime asks once per
// pair and size), on schedules whose stages send both ways, to chunks on
// their own stage (V-shaped), and through layer copying.
func TestP2PListAndSendTimes(t *testing.T) {
	for _, c := range []struct {
		name   string
		sched  pipeline.Schedule
		pp, v  int
		m, lay int
	}{
		{"1f1b", pipeline.OneFOneB, 4, 1, 8, 16},
		{"gpipe", pipeline.GPipe, 3, 1, 5, 12},
		{"interleaved", pipeline.Interleaved, 2, 2, 4, 32},
		{"zero bubble", pipeline.ZeroBubble, 4, 1, 6, 16},
		{"dualpipe", pipeline.DualPipe, 4, 2, 8, 32},
	} {
		cfg := copyConfig(t, c.pp, c.v, c.m, c.lay)
		cfg.Schedule = c.sched
		pr := stagePairPricer{commPricer{unit: engine.Microsecond, comm: engine.Microsecond}}
		progs, err := Build(cfg, pr)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		sends := 0
		for s, p := range progs {
			var want []int32
			for i := range p.Tasks {
				task := &p.Tasks[i]
				if task.Kind != KindSend && task.Kind != KindRecv {
					continue
				}
				want = append(want, int32(i))
				if task.Kind == KindSend {
					sends++
					if d := pr.SendTime(s, int(task.Peer()), units.Bytes(task.Bytes)); task.Dur != d {
						t.Errorf("%s: stage %d send %d to stage %d lasts %v, priced %v", c.name, s, i, task.Peer(), task.Dur, d)
					}
				}
			}
			if !slices.Equal(p.p2p, want) {
				t.Errorf("%s: stage %d p2p list %v, sends and receives at %v", c.name, s, p.p2p, want)
			}
		}
		if sends == 0 {
			t.Errorf("%s: no sends", c.name)
		}
	}
}

// finish lists each task's successors in task order and counts its
// dependencies, by hand on small graphs (a task nobody waits for, the
// last task with successors none, one with several, a reused program).
func TestFinishSuccessors(t *testing.T) {
	for _, c := range []struct {
		name  string
		deps  [][]int32
		succ  [][]int32
		ndeps []int32
	}{
		{"chain", [][]int32{nil, {0}, {1}}, [][]int32{{1}, {2}, nil}, []int32{0, 1, 1}},
		{"fan", [][]int32{nil, {0}, {0}, {2, 1, 0}}, [][]int32{{1, 2, 3}, {3}, {3}, nil}, []int32{0, 1, 1, 3}},
		{"last has none, first none", [][]int32{nil, nil, {1}, {1}, nil}, [][]int32{nil, {2, 3}, nil, nil, nil}, []int32{0, 0, 1, 1, 0}},
		{"one task", [][]int32{nil}, [][]int32{nil}, []int32{0}},
	} {
		tasks := make([]Task, len(c.deps))
		p := handProgram(tasks, c.deps)
		for range 2 { // again on the program's own storage
			for i := range tasks {
				if got := p.Succ(i); !slices.Equal(got, c.succ[i]) && len(got)+len(c.succ[i]) > 0 {
					t.Errorf("%s: Succ(%d) = %v, want %v", c.name, i, got, c.succ[i])
				}
			}
			for i, n := range c.ndeps {
				if got := p.depCount(i); got != n {
					t.Errorf("%s: task %d has %d dependencies, want %d", c.name, i, got, n)
				}
			}
			p.finish()
		}
	}
}
