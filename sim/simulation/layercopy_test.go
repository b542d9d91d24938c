package simulation

import (
	"os"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/workload"
)

// Layer and pass copying are exact: on every bundled scenario, every published run of
// scenarios/validation and scenarios/holdout and every test-data scenario,
// the programs built with layer and pass copying (parallel's layercopy.go,
// passcopy.go) equal, task for task and dependency for dependency, those
// built with every layer emitted (StepConfig.EmitEveryLayer, which turns
// both off), and some layers and some passes were copied.
func TestLayerCopyEqualsEmit(t *testing.T) {
	var files []string
	for _, pat := range []string{"../../scenarios/*.yaml", "../../scenarios/validation/*.yaml",
		"../../scenarios/holdout/*.yaml", "testdata/*.yaml"} {
		m, _ := filepath.Glob(pat)
		files = append(files, m...)
	}
	if len(files) < 80 {
		t.Fatalf("%d scenario files", len(files))
	}
	built, tasks, copied := 0, 0, 0
	pc0 := passCopied.Load()
	for _, f := range files {
		s, err := scenario.Load(f)
		if err != nil {
			continue // test data that is meant not to load
		}
		if s.GPUs() > 4096 && os.Getenv("SIMTRAIN_ALL_SCENARIOS") == "" {
			continue // the 16k-GPU runs take seconds each
		}
		n, c, ok := layerCopyMatches(t, filepath.Base(f), s)
		if ok {
			built++
			tasks += n
			copied += c
		}
	}
	pc := passCopied.Load() - pc0
	t.Logf("%d scenarios built both ways: %d tasks, %d of them in layers the copying run did not emit, %d in passes copied whole", built, tasks, copied, pc)
	if built < 60 || copied == 0 || pc == 0 {
		t.Errorf("%d scenarios built, %d tasks copied in layers, %d in passes", built, copied, pc)
	}
}

// passCopied counts the tasks layerCopyMatches's copying builds appended
// as copies of whole passes.
var passCopied atomic.Int64

// layerCopyMatches builds s's programs with and without layer copying and
// reports the tasks and how many of them the copying build appended as
// copies.
func layerCopyMatches(t *testing.T, name string, s *scenario.Plan) (tasks, copied int, ok bool) {
	t.Helper()
	cl, err := (*Reuse)(nil).cluster(s.TopologySpec())
	if err != nil {
		return 0, 0, false
	}
	layout, err := s.NewLayout()
	if err != nil {
		return 0, 0, false
	}
	build := func(every bool) []*parallel.Program {
		cfg := s.StepConfig(layout)
		cfg.EmitEveryLayer = every
		pr := newPricer(s, cl, layout, workload.DeviceOf(s.GPU()))
		cfg.DeviceClass = pr.deviceClasses()
		progs, err := parallel.Build(cfg, pr)
		if err == nil {
			err = pr.err
		}
		if err != nil {
			return nil
		}
		return progs
	}
	c0, p0 := parallel.CopiedTasks(), parallel.CopiedPassTasks()
	copiedProgs := build(false)
	copied = int(parallel.CopiedTasks() - c0)
	passCopied.Add(parallel.CopiedPassTasks() - p0)
	every := build(true)
	if every == nil {
		return 0, 0, false
	}
	if !reflect.DeepEqual(copiedProgs, every) {
		for i := range every {
			if i < len(copiedProgs) && !reflect.DeepEqual(copiedProgs[i], every[i]) {
				a, b := copiedProgs[i], every[i]
				for j := range min(len(a.Tasks), len(b.Tasks)) {
					if a.Tasks[j] != b.Tasks[j] || !reflect.DeepEqual(a.Deps(j), b.Deps(j)) {
						t.Errorf("%s: stage %d task %d: copied %+v deps %v, emitted %+v deps %v", name, i, j, a.Tasks[j], a.Deps(j), b.Tasks[j], b.Deps(j))
						break
					}
				}
				if len(a.Tasks) != len(b.Tasks) {
					t.Errorf("%s: stage %d: %d tasks copied, %d emitted", name, i, len(a.Tasks), len(b.Tasks))
				}
			}
		}
		t.Errorf("%s: programs differ", name)
		return 0, 0, false
	}
	for _, p := range every {
		tasks += len(p.Tasks)
	}
	return tasks, copied, true
}
