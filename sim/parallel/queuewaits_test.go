package parallel

import (
	"fmt"
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
		k := h.launches(task, p.Issue(t))
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
			rest[t] = engine.Time(float64(p.Issue(t))*float64(k-q)/float64(k) + 0.5)
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
				if int32(p.QueueAfter(i)+1) != after[i] {
					t.Fatalf("%s: stage %d task %d waits for %d, the plain walk %d", c.name, p.Stage, i, int32(p.QueueAfter(i)+1)-1, after[i]-1)
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

// setQueueWaits agrees with the plain walk (refQueueWaits) on builds of
// several layouts (tensor, data and pipeline parallel; two schedules;
// passes copied or emitted; arena programs, rebuilt into the arena's
// storage), for queues that never fill, fill and are outlaunched by one
// task, with compute tasks of no launches among them: the waits, QueueSelf,
// queued and the launch-queue lists (ends and tasks) are the same.
func TestQueueWaitsOnLayouts(t *testing.T) {
	n, waits, selfs := 0, 0, 0
	eachQueueBuild(t, []bool{false, true}, func(name string, p *Program, h *HostModel) {
		w, s := sameQueueWaits(t, name, p, h)
		n, waits, selfs = n+len(p.Tasks), waits+w, selfs+s
	})
	if waits == 0 || selfs == 0 {
		t.Errorf("%d waits and %d self-waits: the cases do not fill the queues", waits, selfs)
	}
	t.Logf("%d tasks compared: %d wait for a full queue, %d for their own launches", n, waits, selfs)
}

// eachQueueBuild builds, for two steps into one arena, every layout of
// the launch-queue tests (tensor, data and pipeline parallel) under 1F1B
// and GPipe, with passes and layers copied or (emit true) emitted, under
// every host model of queueHosts, and calls f with each program, its host
// model and a name for failures.
func eachQueueBuild(t *testing.T, emits []bool, f func(name string, p *Program, h *HostModel)) {
	t.Helper()
	arena := new(Arena)
	pr := commPricer{unit: engine.Millisecond, comm: 300 * engine.Microsecond}
	for _, l := range []struct{ tp, dp, pp, m int }{{1, 1, 1, 4}, {2, 2, 4, 16}, {4, 1, 8, 24}, {1, 4, 2, 3}} {
		for _, sched := range []pipeline.Schedule{pipeline.OneFOneB, pipeline.GPipe} {
			for _, emit := range emits {
				for hi, h := range queueHosts() {
					_, cfg := stepConfig(t, l.tp, l.dp, l.pp, l.m, sched)
					cfg.Steps = 2
					cfg.EmitEveryPass, cfg.EmitEveryLayer = emit, emit
					cfg.Host = h
					cfg.Arena = arena
					progs, err := Build(cfg, pr)
					if err != nil {
						t.Fatal(err)
					}
					for _, p := range progs {
						f(fmt.Sprintf("%+v %v emit %v host %d stage %d", l, sched, emit, hi, p.Stage), p, &cfg.Host)
					}
				}
			}
		}
	}
}

// queueHosts are the launch-queue tests' host models: queues that never
// fill, fill, and are outlaunched by one task, with compute tasks of no
// launches (forward or backward kernels free) among them.
func queueHosts() []HostModel {
	us := engine.Microsecond
	return []HostModel{
		{On: true, KernelFwd: 5 * us, KernelBwd: 5 * us, Call: 10 * us, Queue: 1 << 20},
		{On: true, KernelFwd: 5 * us, KernelBwd: 3 * us, Call: 10 * us, Queue: 64},
		{On: true, KernelFwd: 5 * us, KernelBwd: 3 * us, Call: 10 * us, Queue: 4},
		{On: true, KernelFwd: 0, KernelBwd: 7 * us, Call: us, Queue: 2},
		{On: true, KernelFwd: 2 * us, KernelBwd: 0, Call: us, Queue: 1},
	}
}

// sameQueueWaits fails the test where p's queue waits, QueueSelf, queued
// or launch-queue lists differ from the plain walk's; it returns the
// waits and self-waits it saw.
func sameQueueWaits(t *testing.T, name string, p *Program, h *HostModel) (waits, selfs int) {
	t.Helper()
	after, self, rest := refQueueWaits(p, h)
	for i := range p.Tasks {
		if int32(p.QueueAfter(i)+1) != after[i] {
			t.Fatalf("%s: task %d waits for %d, the plain walk %d", name, i, int32(p.QueueAfter(i)+1)-1, after[i]-1)
		}
		s, r := p.QueueSelf(i)
		if int32(s+1) != self[i] || r != rest[i] {
			t.Fatalf("%s: task %d QueueSelf (%d, %d), the plain walk (%d, %d)", name, i, s, r, self[i]-1, rest[i])
		}
		if after[i] != 0 {
			waits++
		}
		if self[i] != 0 {
			selfs++
		}
	}
	if p.queued != (waits+selfs > 0) {
		t.Errorf("%s: queued %v with %d waits", name, p.queued, waits+selfs)
	}
	// the lists: per stream, the launches through each task with any
	var lists [NumStreams][]queueEntry
	var done [NumStreams]int64
	for i := range p.Tasks {
		task := &p.Tasks[i]
		if task.Kind == KindRecv {
			continue
		}
		if k := h.launches(task, p.Issue(i)); k > 0 {
			done[task.Stream] += k
			lists[task.Stream] = append(lists[task.Stream], qEntry(done[task.Stream], int32(i)))
		}
	}
	for s := range lists {
		if !slices.Equal(p.queue[s], lists[s]) {
			t.Fatalf("%s: stream %d's launch list differs from the plain walk's", name, s)
		}
	}
	return waits, selfs
}

// TestQueueWide checks the walk past what a list entry holds (queueWide,
// Program.qwide): with compute issue times so long that a stream's
// launches reach 2^32 partway through a program (a kind's issue the same
// wherever it is, so copied ranges keep their sources' launches), the
// waits, QueueSelf, queued and the lists' ids and exact ends are the
// plain walk's (refQueueWaits), for programs walked in full, from
// copied ranges (copyQueues, which refuses a range that would pass it)
// and from the start; a program that stays under it keeps no wide ends.
func TestQueueWide(t *testing.T) {
	wide, narrow, bounded := 0, 0, 0
	us := engine.Microsecond
	for _, c := range []struct {
		name     string
		fwd, bwd engine.Time // compute issue times; the per-kernel cost is 1
		queue    int
	}{
		{"passes 2^32 early", 1 << 26, 3 << 25, 64},
		{"passes 2^32 late", 5 << 10, 7 << 10, 16},
		{"one task past it, queue 1", 1 << 23, 1 << 22, 1},
		{"stays under it", 3, 5, 4},
	} {
		eachQueueBuild(t, []bool{false, true}, func(name string, p *Program, _ *HostModel) {
			h := HostModel{On: true, KernelFwd: 1, KernelBwd: 1, Call: us, Queue: c.queue}
			for i := range p.hot {
				switch k := p.hot[i].kind; {
				case k == KindBackward || k == KindWGrad:
					p.hot[i].issue = c.bwd
				case k == KindRecv || k.IsComm() || k == KindHostCopy:
				default:
					p.hot[i].issue = c.fwd
				}
			}
			var sum engine.Time // (Program.issueSum: launchBound)
			for i := range p.hot {
				if p.hot[i].kind != KindRecv {
					sum += p.hot[i].issue
				}
			}
			p.issueSum = sum
			p.setQueueWaits(&h, nil)
			name = c.name + ": " + name
			if p.qnarrow {
				bounded++
			}
			sameQueueWaits(t, name, p, &h)
			var done [NumStreams]int64
			var ends [NumStreams][]int64
			for i := range p.Tasks {
				task := &p.Tasks[i]
				if k := h.launches(task, p.Issue(i)); task.Kind != KindRecv && k > 0 {
					done[task.Stream] += k
					ends[task.Stream] = append(ends[task.Stream], done[task.Stream])
				}
			}
			over := slices.ContainsFunc(done[:], func(d int64) bool { return d >= queueWide })
			if over != (p.qwide != nil) {
				t.Fatalf("%s: launches past 2^32 %v, wide ends kept %v", name, over, p.qwide != nil)
			}
			if !over {
				narrow++
				return
			}
			wide++
			for s := range ends {
				if got := p.qwide.ends[s][:len(p.queue[s])]; !slices.Equal(got, ends[s]) {
					t.Fatalf("%s: stream %d's exact ends differ from the plain walk's", name, s)
				}
			}
		})
	}
	if wide == 0 || narrow == 0 || bounded == 0 || bounded == narrow+wide {
		t.Errorf("%d programs past 2^32, %d under it, %d bounded under it: the cases do not cover each", wide, narrow, bounded)
	}
}

// launchBound bounds a stream's launches by the issue times' sum: at
// least each task's launchScale, the sum over the smaller positive
// per-kernel cost, and queueWide where the sum is out of its range.
func TestLaunchBound(t *testing.T) {
	for _, c := range []struct {
		sum  engine.Time
		n    int
		perK [2]int64
		want int64
	}{
		{0, 0, [2]int64{1, 1}, 0},
		{0, 10, [2]int64{0, 0}, 10 * 1025},
		{1000, 10, [2]int64{0, 0}, 10 * 1025},
		{1000, 10, [2]int64{7, 5}, 10*1025 + 1000*1024/5},
		{1000, 10, [2]int64{5, 0}, 10*1025 + 1000*1024/5},
		{1000, 1, [2]int64{0, 3}, 1025 + 1000*1024/3},
		{1<<40 - 1, 0, [2]int64{1, 1}, (1<<40 - 1) * 1024},
		{1 << 40, 0, [2]int64{1 << 30, 1 << 30}, queueWide},
		{-1, 0, [2]int64{1, 1}, queueWide},
	} {
		if got := launchBound(c.sum, c.n, c.perK); got != c.want {
			t.Errorf("launchBound(%d, %d, %v) = %d, want %d", c.sum, c.n, c.perK, got, c.want)
		}
	}
}
