package parallel

import (
	"slices"
	"testing"
)

// Build runs each stage's finish and setQueueWaits right after that
// stage's build, before the later stages are built and before linkP2P
// pairs the sends and receives: the successor lists, queue waits, self
// waits, launch-queue lists and hot records equal those the two walks
// give when run again on the finished programs, after linkP2P (the order
// Build used before), on arena builds of one to eight stages with
// pipeline transfers and launch queues that fill.
func TestStageWalksBeforeLinkEqualAfter(t *testing.T) {
	programs, p2p := 0, 0
	eachQueueBuild(t, []bool{false, true}, func(name string, p *Program, h *HostModel) {
		programs++
		p2p += len(p.p2p)
		succOf, succ := slices.Clone(p.succOf), slices.Clone(p.succ)
		hot := slices.Clone(p.hot)
		waits := make([]int32, len(p.Tasks))
		for i := range p.Tasks {
			waits[i] = int32(p.QueueAfter(i) + 1)
		}
		qself, qrest := slices.Clone(p.qself), slices.Clone(p.qrest)
		var queue [NumStreams][]queueEntry
		for s := range p.queue {
			queue[s] = slices.Clone(p.queue[s])
		}
		queued := p.queued
		p.finish()
		p.setQueueWaits(h, nil)
		if !slices.Equal(succOf, p.succOf) || !slices.Equal(succ, p.succ) {
			t.Fatalf("%s: successor lists differ from finish after linkP2P", name)
		}
		for i := range p.Tasks {
			if int32(p.QueueAfter(i)+1) != waits[i] {
				t.Fatalf("%s: task %d waits for %d, after linkP2P %d", name, i, waits[i]-1, int32(p.QueueAfter(i)+1)-1)
			}
		}
		if !slices.Equal(hot, p.hot) {
			t.Fatalf("%s: hot records differ from the walk after linkP2P", name)
		}
		if !slices.Equal(qself, p.qself) || !slices.Equal(qrest, p.qrest) || queued != p.queued {
			t.Fatalf("%s: self waits or queued differ from the walk after linkP2P", name)
		}
		for s := range p.queue {
			if !slices.Equal(queue[s], p.queue[s]) {
				t.Fatalf("%s: stream %d's launch queue differs from the walk after linkP2P", name, s)
			}
		}
	})
	t.Logf("%d programs, %d pipeline sends and receives", programs, p2p)
	if p2p == 0 {
		t.Error("no pipeline transfer: linkP2P had nothing to pair")
	}
}
