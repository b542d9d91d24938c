package parallel

import (
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
)

// TestSkipRunsSamePrices: a re-priced program keeps its layer runs
// (skipRuns) only where the rewritten dur and share still repeat along
// every run; a change outside the runs keeps them.
func TestSkipRunsSamePrices(t *testing.T) {
	// 2 tasks before the run, a run of 3 layers of 4 tasks, 2 after.
	base := func() []hotTask {
		hot := make([]hotTask, 16)
		for i := range hot {
			hot[i] = hotTask{dur: 100, share: 7}
		}
		for i := 2; i < 14; i++ {
			hot[i].dur = engine.Time(100 + 10*((i-2)%4)) // (periodic: 4 tasks a layer)
		}
		return hot
	}
	runs := &skipRuns{passes: []skipPass{{r0: 2, r1: 14, l: 4}}}
	cases := []struct {
		name   string
		change func(h []hotTask)
		want   bool
	}{
		{"unchanged", func([]hotTask) {}, true},
		{"every layer alike", func(h []hotTask) {
			for i := 2; i < 14; i++ {
				h[i].dur *= 3
			}
		}, true},
		{"outside the run", func(h []hotTask) { h[0].dur, h[15].share = 1, 1 }, true},
		{"first layer's dur", func(h []hotTask) { h[3].dur++ }, false},
		{"middle layer's dur", func(h []hotTask) { h[9].dur++ }, false},
		{"last layer's share", func(h []hotTask) { h[13].share++ }, false},
		{"fewer records", func(h []hotTask) {}, false},
	}
	for _, c := range cases {
		h := base()
		c.change(h)
		if c.name == "fewer records" {
			h = h[:13]
		}
		if got := runs.samePrices(h); got != c.want {
			t.Errorf("%s: samePrices %v, want %v", c.name, got, c.want)
		}
	}
}
