package parallel

import (
	"fmt"
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
)

// queuePrefixOf is what Fork.queuePrefix would give for p's first c
// tasks had p been the failed play's program: their records, each
// stream's entries of them, their self waits and p's walk parameters.
func queuePrefixOf(p *Program, c int) *queuePrefix {
	pre := &queuePrefix{qlim: p.qlim, perK: p.qperK}
	pre.hot = slices.Clone(p.hot[:c]) // (the records, which hold the waits)
	for s, q := range p.queue {
		n := 0
		for n < len(q) && q[n].id < int32(c) {
			n++
		}
		pre.queue[s] = slices.Clone(q[:n])
	}
	if p.qself != nil {
		pre.qself, pre.qrest = slices.Clone(p.qself[:c]), slices.Clone(p.qrest[:c])
	}
	return pre
}

// queueWalk is what setQueueWaits leaves in a program, to compare.
type queueWalk struct {
	waits, self []int32
	rest        []engine.Time
	hot         []int32
	queue       [NumStreams][]queueEntry
	queued      bool
}

func walkOf(p *Program) queueWalk {
	w := queueWalk{queued: p.queued}
	for i := range p.Tasks {
		w.waits = append(w.waits, int32(p.QueueAfter(i)+1))
		s, r := p.QueueSelf(i)
		w.self, w.rest = append(w.self, int32(s+1)), append(w.rest, r)
	}
	for i := range p.hot {
		w.hot = append(w.hot, p.hot[i].queueAfter)
	}
	for s := range p.queue {
		w.queue[s] = slices.Clone(p.queue[s])
	}
	return w
}

// plainWalkOf is what setQueueWaits leaves in p walking every task from
// the first, without its copied ranges (copyQueues).
func plainWalkOf(p *Program, h *HostModel) queueWalk {
	copies := p.copies
	p.copies = nil
	p.setQueueWaits(h, nil)
	p.copies = copies
	return walkOf(p)
}

func (w *queueWalk) diff(o *queueWalk) string {
	for i := range w.waits {
		if w.waits[i] != o.waits[i] || w.self[i] != o.self[i] || w.rest[i] != o.rest[i] {
			return fmt.Sprintf("task %d: wait %d self %d rest %d, walked whole %d, %d, %d", i, w.waits[i]-1, w.self[i]-1, w.rest[i], o.waits[i]-1, o.self[i]-1, o.rest[i])
		}
	}
	if !slices.Equal(w.hot, o.hot) {
		return "the hot records' waits differ"
	}
	for s := range w.queue {
		if !slices.Equal(w.queue[s], o.queue[s]) {
			return fmt.Sprintf("stream %d's list differs", s)
		}
	}
	if w.queued != o.queued {
		return fmt.Sprintf("queued %v, walked whole %v", w.queued, o.queued)
	}
	return ""
}

// setQueueWaits started after a prefix (resumeQueues) leaves what the walk
// from the first task leaves, on TestQueueWaitsOnLayouts' builds and host
// models (queues that never fill, fill, and are outlaunched; compute tasks
// of no launches), cut at evenly spaced tasks and at tasks that outlaunch
// their queue (the first task the walk meets on its stream, whose previous
// task lies in the prefix: prevMet), in arena programs; and a prefix that
// differs from the program in one task's issue time, or a queue bound or
// per-kernel cost, is not taken (the walk starts at the first task) and
// changes nothing either; one that differs only in fields the walk does
// not read (duration, group, share, flags) is taken.
func TestQueueWaitsAfterPrefix(t *testing.T) {
	cuts, resumed, selfCuts, refused := 0, 0, 0, 0
	eachQueueBuild(t, []bool{false}, func(name string, p *Program, h *HostModel) {
		whole := plainWalkOf(p, h)
		n := len(p.Tasks)
		at := []int{1, 2, n - 1, n}
		for k := 1; k < 16; k++ {
			at = append(at, n*k/16)
		}
		self := 0
		for i := range n {
			if s, _ := p.QueueSelf(i); s >= 0 && self < 12 {
				at = append(at, i)
				self++
			}
		}
		for _, c := range at {
			pre := queuePrefixOf(p, c)
			p.setQueueWaits(h, pre)
			if p.qfrom != c {
				t.Fatalf("%s: cut at %d: the walk started at %d", name, c, p.qfrom)
			}
			w := walkOf(p)
			if d := w.diff(&whole); d != "" {
				t.Fatalf("%s: cut at %d: %s", name, c, d)
			}
			cuts++
			resumed++
			if c < n {
				if s, _ := p.QueueSelf(c); s >= 0 {
					selfCuts++
				}
			}
		}
		// taken: a prefix whose records differ only in what the walk does
		// not read (duration, group, share, flags)
		if n > 2 {
			pre := queuePrefixOf(p, n/2)
			for i := range pre.hot {
				h := &pre.hot[i]
				h.dur, h.group, h.share, h.flags = h.dur+1, h.group^1, h.share^1, h.flags^hotSMSized
			}
			p.setQueueWaits(h, pre)
			if p.qfrom != n/2 {
				t.Fatalf("%s: a prefix that differs only in what the walk does not read was refused", name)
			}
			w := walkOf(p)
			if d := w.diff(&whole); d != "" {
				t.Fatalf("%s: after a prefix of other durations: %s", name, d)
			}
		}
		// refused: a prefix that is not this program's (the kind of its
		// first task, the stream or issue time of its last, the middle
		// one's issue time)
		if n > 2 {
			for _, edit := range []func(*queuePrefix){
				func(q *queuePrefix) { q.hot[len(q.hot)/2].issue++ },
				func(q *queuePrefix) { q.hot[0].kind ^= 1 },
				func(q *queuePrefix) { q.hot[len(q.hot)-1].stream ^= 1 },
				func(q *queuePrefix) { q.hot[len(q.hot)-1].issue ^= 1 << 40 },
				func(q *queuePrefix) { q.qlim++ },
				func(q *queuePrefix) { q.perK[1]++ },
			} {
				pre := queuePrefixOf(p, n/2)
				edit(pre)
				p.setQueueWaits(h, pre)
				if p.qfrom != 0 {
					t.Fatalf("%s: a prefix that differs was taken", name)
				}
				w := walkOf(p)
				if d := w.diff(&whole); d != "" {
					t.Fatalf("%s: after a refused prefix: %s", name, d)
				}
				refused++
			}
		}
	})
	t.Logf("%d cuts walked after the prefix (%d at a task that outlaunches its queue), %d prefixes refused", resumed, selfCuts, refused)
	if selfCuts == 0 || resumed < 1000 {
		t.Errorf("%d cuts, %d at a self-waiting task", cuts, selfCuts)
	}
}
