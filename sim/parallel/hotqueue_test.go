package parallel

import "testing"

// TestHotQueueWaitsCopiesEveryRecord checks that hotQueueWaits' unrolled
// copy sets every hot record's queue wait to its task's, and touches no
// other field, for lengths around its eight-record turns (the tail).
func TestHotQueueWaitsCopiesEveryRecord(t *testing.T) {
	for n := 0; n <= 27; n++ {
		p := &Program{keepHot: true, queued: true}
		p.Tasks = make([]Task, n)
		p.hot = make([]hotTask, n)
		for i := range p.Tasks {
			p.Tasks[i].queueAfter = int32(3*i + 1)
			p.hot[i].queueAfter = -1
			p.hot[i].hostAfter = int32(i)
		}
		p.hotQueueWaits()
		for i := range p.hot {
			if got, want := p.hot[i].queueAfter, p.Tasks[i].queueAfter; got != want {
				t.Fatalf("n=%d: record %d waits %d, task %d", n, i, got, want)
			}
			if p.hot[i].hostAfter != int32(i) {
				t.Fatalf("n=%d: record %d's hostAfter changed to %d", n, i, p.hot[i].hostAfter)
			}
		}
		if !p.hotQueued {
			t.Fatalf("n=%d: hotQueued not set", n)
		}
	}
}
