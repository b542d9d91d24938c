package simulation

import (
	"context"
	"path/filepath"
	"testing"
)

// Stats skips reading a played hosted compute task's dependencies when the
// task started after its issue (parallel.Executor.Stats: the symmetric
// play starts such a task at its last dependency's end, so it did not wait
// for the host thread). On every bundled scenario and every published run
// of scenarios/validation and scenarios/holdout (every third with -short),
// played as a sweep plays them (replicated, resumed or whole), every
// instance's Stats equal the walk that reads every task's dependencies and
// every copy (StatsEveryWait).
func TestStatsShortcutEqualsEveryWait(t *testing.T) {
	files := scenarioFiles(t)
	reuse := new(Reuse)
	hosted, bound, instances := 0, 0, 0
	for _, f := range files {
		s, ok := playable(t, f)
		if !ok {
			continue
		}
		res, err := Run(context.Background(), s, Options{FiguresOnly: true, Reuse: reuse})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		x := res.exec
		if !x.Symmetric() {
			continue
		}
		for i := 0; i < x.Instances(); i++ {
			got, want := x.Stats(i), x.StatsEveryWait(i)
			if got != want {
				t.Errorf("%s: instance %d: Stats %+v, reading every dependency %+v", filepath.Base(f), i, got, want)
			}
			instances++
			if _, _, p := x.Place(i); p.Hosted {
				hosted++
				if want.HostBound > 0 {
					bound++
				}
			}
		}
	}
	t.Logf("%d instances of %d files, %d with a host thread, %d of them waiting for it", instances, len(files), hosted, bound)
	if hosted == 0 || bound == 0 {
		t.Errorf("%d hosted instances, %d waiting for the host thread: the shortcut is not tested", hosted, bound)
	}
}
