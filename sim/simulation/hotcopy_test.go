package simulation

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/workload"
)

// The executor's records of copied task ranges, copied from their sources
// (parallel's fillHot, Program.copies), equal those converted from every
// Task (parallel.CheckHot) on every bundled scenario, every published run
// of scenarios/validation and scenarios/holdout and every test-data
// scenario, built one after another into one arena as a sweep worker
// builds its points; and some ranges were copied.
func TestHotCopiesMatchTasks(t *testing.T) {
	var files []string
	for _, pat := range []string{"../../scenarios/*.yaml", "../../scenarios/validation/*.yaml",
		"../../scenarios/holdout/*.yaml", "testdata/*.yaml"} {
		m, _ := filepath.Glob(pat)
		files = append(files, m...)
	}
	arena := new(parallel.Arena)
	built, tasks, copied := 0, 0, 0
	for _, f := range files {
		s, err := scenario.Load(f)
		if err != nil {
			continue // test data that is meant not to load
		}
		if s.GPUs() > 4096 && os.Getenv("SIMTRAIN_ALL_SCENARIOS") == "" {
			continue // the 16k-GPU runs take seconds each
		}
		cl, err := (*Reuse)(nil).cluster(s.TopologySpec())
		if err != nil {
			continue
		}
		layout, err := s.NewLayout()
		if err != nil {
			continue
		}
		cfg := s.StepConfig(layout)
		cfg.Arena = arena
		pr := newPricer(s, cl, layout, workload.DeviceOf(s.GPU()))
		cfg.DeviceClass = pr.deviceClasses()
		progs, err := parallel.Build(cfg, pr)
		if err != nil || pr.err != nil {
			continue
		}
		built++
		for _, p := range progs {
			c, err := parallel.CheckHot(p)
			if err != nil {
				t.Errorf("%s: %v", filepath.Base(f), err)
			}
			tasks += len(p.Tasks)
			copied += c
		}
	}
	t.Logf("%d scenarios built: %d tasks, %d of them in copied ranges", built, tasks, copied)
	if built < 60 || copied == 0 {
		t.Errorf("%d scenarios built, %d tasks in copied ranges", built, copied)
	}
}
