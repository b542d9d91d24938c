package parallel

import (
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
)

// refQueueWaits is the launch-queue walk written the plain way, one pass
// in task order with each stream's queue searched as the task is met: the
// reference setQueueWaits' two phases must agree with. It returns, per
// task, 1 + the task waited for (0: none), and QueueSelf's task and rest.
func refQueueWaits(p *Program, h *HostModel) (after, self []int32, rest []engine.Time) {
	n := len(p.Tasks)
	after, self, rest = make([]int32, n), make([]int32, n), make([]engine.Time, n)
	q := int64(h.Queue) * launchScale
	var ends [NumStreams][]int64
	var ids [NumStreams][]int32
	var done [NumStreams]int64
	var last [NumStreams]int32
	for t := range p.Tasks {
		task := &p.Tasks[t]
		if task.Kind == KindRecv {
			continue
		}
		s := task.Stream
		k := h.launches(task)
		if first := done[s] - q; first >= 0 {
			i := 0
			for i < len(ends[s]) && ends[s][i] <= first {
				i++
			}
			if i < len(ends[s]) {
				after[t] = ids[s][i] + 1
			}
		}
		if k > q && last[s] > 0 {
			self[t] = last[s]
			rest[t] = engine.Time(float64(task.Issue)*float64(k-q)/float64(k) + 0.5)
		}
		last[s] = int32(t) + 1
		done[s] += k
		if k > 0 {
			ends[s], ids[s] = append(ends[s], done[s]), append(ids[s], int32(t))
		}
	}
	return after, self, rest
}

// setQueueWaits agrees with the plain walk (refQueueWaits) on hosted
// steps: queues that fill early and late, tasks of more launches than the
// queue (QueueSelf), compute tasks of no launches (a zero per-kernel
// cost), several schedules; and with the queue unbounded nothing waits.
func TestQueueWaitsMatchPlainWalk(t *testing.T) {
	us := engine.Microsecond
	cases := []struct {
		name  string
		sched pipeline.Schedule
		v     int
		host  HostModel
	}{
		{"1F1B, queue 1024", pipeline.OneFOneB, 1, HostModel{On: true, KernelFwd: us, KernelBwd: us, Call: 10 * us, Queue: 1024}},
		{"1F1B, queue 16", pipeline.OneFOneB, 1, HostModel{On: true, KernelFwd: us, KernelBwd: 2 * us, Call: 10 * us, Queue: 16}},
		{"1F1B, queue 2 (tasks beyond it)", pipeline.OneFOneB, 1, HostModel{On: true, KernelFwd: us, KernelBwd: us, Call: us, Queue: 2}},
		{"interleaved, queue 8", pipeline.Interleaved, 2, HostModel{On: true, KernelFwd: 3 * us, KernelBwd: us, Call: 5 * us, Queue: 8}},
		{"zero forward kernel cost", pipeline.OneFOneB, 1, HostModel{On: true, KernelFwd: 0, KernelBwd: us, Call: us, Queue: 4}},
		{"no kernel cost at all", pipeline.OneFOneB, 1, HostModel{On: true, Call: us, Queue: 1}},
	}
	for _, c := range cases {
		cfg := copyConfig(t, 2, c.v, 8, 16)
		cfg.Schedule, cfg.Host = c.sched, c.host
		progs, err := Build(cfg, unitPricer{unit: engine.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		waits := 0
		for _, p := range progs {
			after, self, rest := refQueueWaits(p, &cfg.Host)
			for i := range p.Tasks {
				if p.Tasks[i].queueAfter != after[i] {
					t.Fatalf("%s: stage %d task %d waits for %d, the plain walk %d", c.name, p.Stage, i, p.Tasks[i].queueAfter-1, after[i]-1)
				}
				if after[i] != 0 {
					waits++
				}
				s, r := p.QueueSelf(i)
				if int32(s+1) != self[i] || r != rest[i] {
					t.Fatalf("%s: stage %d task %d QueueSelf (%d, %d), the plain walk (%d, %d)", c.name, p.Stage, i, s, r, self[i]-1, rest[i])
				}
			}
			if p.queued != (slices.ContainsFunc(after, func(a int32) bool { return a != 0 }) ||
				slices.ContainsFunc(self, func(a int32) bool { return a != 0 })) {
				t.Errorf("%s: stage %d queued %v", c.name, p.Stage, p.queued)
			}
		}
		if waits == 0 {
			t.Errorf("%s: no task waits for a full queue", c.name)
		}
	}
}
