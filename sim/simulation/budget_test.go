package simulation

import (
	"context"
	"errors"
	"fmt"
	"github.com/simtrain/simtrain/sim/pipeline"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/topology"
	"github.com/simtrain/simtrain/sim/workload"
)

// estimateCheckFiles lists the bundled scenarios (scenarios/*.yaml) and
// every third published run of scenarios/validation and scenarios/holdout
// (all of them with SIMTRAIN_ALL_SCENARIOS=1; building them all takes
// half a minute).
func estimateCheckFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../scenarios/*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("bundled scenarios: %v %v", files, err)
	}
	step := 3
	if os.Getenv("SIMTRAIN_ALL_SCENARIOS") != "" {
		step = 1
	}
	for _, pat := range []string{"../../scenarios/validation/*.yaml", "../../scenarios/holdout/*.yaml"} {
		m, err := filepath.Glob(pat)
		if err != nil || len(m) < 20 {
			t.Fatalf("%s: %d files, %v", pat, len(m), err)
		}
		for i := 0; i < len(m); i += step {
			files = append(files, m[i])
		}
	}
	return files
}

// builtTasks builds s's stage programs as Run does and counts their tasks.
func builtTasks(t *testing.T, s *scenario.Plan) int64 {
	t.Helper()
	cl, err := topology.Build(s.TopologySpec())
	if err != nil {
		t.Fatal(err)
	}
	layout, err := s.NewLayout()
	if err != nil {
		t.Fatal(err)
	}
	progs, err := parallel.Build(s.StepConfig(layout), newPricer(s, cl, layout, workload.DeviceOf(s.GPU())))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, pr := range progs {
		n += int64(len(pr.Tasks))
	}
	return n
}

// The closed-form estimate must bound the tasks really built, and not by
// much: between 1 and WorkEstimateFactor times the count, on every bundled
// scenario.
func TestWorkEstimateBoundsBuiltTasks(t *testing.T) {
	lo, hi := 1e9, 0.0
	for _, f := range estimateCheckFiles(t) {
		s, err := scenario.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		got := builtTasks(t, s)
		est := EstimateWork(s, Options{}).ProgramTasks
		if e := EstimateProgramTasks(s, Options{}); e != est {
			t.Errorf("%s: EstimateProgramTasks %d, EstimateWork's %d", f, e, est)
		}
		ratio := float64(est) / float64(got)
		lo, hi = min(lo, ratio), max(hi, ratio)
		if est < got || ratio > WorkEstimateFactor {
			t.Errorf("%s: estimate %d tasks, built %d (ratio %.2f, want 1..%d)", f, est, got, ratio, WorkEstimateFactor)
		}
	}
	t.Logf("estimate / built tasks: %.2f .. %.2f", lo, hi)
}

// 100,000 layers × 4,096 micro-batches passed every check and then built a
// task graph past 7 GB (issue 19): now Run refuses it before building,
// naming the fields and the estimate, over the task budget and over the
// memory budget, in CheckBudget's words (Run names the fields only when
// it refuses: estimateWork).
func TestRunRefusesWorkAboveBudget(t *testing.T) {
	s := llama8bOnOneGPU(t, 100_000, 2048, 4096)
	for _, tc := range []struct {
		name   string
		budget Budget
		want   []string
	}{
		{"tasks", Budget{}, []string{"model.layers 100000", "4096 micro-batches", "--max-tasks"}},
		{"memory", Budget{MaxTasks: math.MaxInt64, MaxMemoryBytes: 1 << 20}, []string{"model.layers 100000", "4096 micro-batches", "--max-memory"}},
	} {
		_, err := Run(context.Background(), s, Options{Budget: tc.budget})
		if !errors.Is(err, ErrBudget) {
			t.Fatalf("%s: got %v, want ErrBudget", tc.name, err)
		}
		for _, want := range tc.want {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not name %q", tc.name, err, want)
			}
		}
		if want := CheckBudget(s, Options{}, tc.budget); want == nil || err.Error() != want.Error() {
			t.Errorf("%s: Run's error %q, CheckBudget's %v", tc.name, err, want)
		}
	}
}

// llama8bOnOneGPU is Llama 3 8B with the given depth on one H100, one
// sequence per micro-batch: the shape of the runaway and long-build cases.
func llama8bOnOneGPU(t *testing.T, layers, seq, globalBatch int) *scenario.Plan {
	t.Helper()
	s, err := scenario.Parse([]byte(fmt.Sprintf(`name: one-gpu
model: {preset: llama3-8b, layers: %d}
training: {seq_len: %d, global_batch: %d, micro_batch: 1}
cluster: {gpu: h100-sxm, nodes: 1, gpus_per_node: 1}
`, layers, seq, globalBatch)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSplitsForRemembers: splitsFor answers what probing the order
// answers, for every schedule on shapes it can and cannot run, asked in
// turns (each schedule after another on the same shape, shapes sharing a
// slot of splitsCache) and again: an entry taken for another schedule or
// shape would give the other's answer.
func TestSplitsForRemembers(t *testing.T) {
	shapes := []pipeline.Shape{
		{Stages: 1, Microbatches: 2, Virtual: 1}, {Stages: 4, Microbatches: 8, Virtual: 1},
		{Stages: 4, Microbatches: 8, Virtual: 2}, {Stages: 8, Microbatches: 16, Virtual: 1},
		{Stages: 8, Microbatches: 16, Virtual: 2}, {Stages: 3, Microbatches: 5, Virtual: 1},
		// runs of shapes in one slot of splitsCache, each next to one
		// that differs in one field and in some schedule's answer: the
		// stages, the virtual stages, both, the micro-batches
		{Stages: 66, Microbatches: 4, Virtual: 1},
		{Stages: 2, Microbatches: 4, Virtual: 1}, {Stages: 2, Microbatches: 4, Virtual: 65},
		{Stages: 2, Microbatches: 68, Virtual: 1}, {Stages: 2, Microbatches: 13, Virtual: 2},
		{Stages: 3, Microbatches: 3, Virtual: 1}, {Stages: 3, Microbatches: 67, Virtual: 1},
	}
	var scheds []pipeline.Schedule
	for _, n := range pipeline.Names() {
		sc, err := pipeline.Lookup(n)
		if err != nil {
			t.Fatal(err)
		}
		scheds = append(scheds, sc)
	}
	seen := map[bool]bool{}
	check := func(round int, sc pipeline.Schedule, sh pipeline.Shape) {
		want := probeSplits(sc, sh)
		seen[want] = true
		if got := splitsFor(sc, sh); got != want {
			t.Errorf("round %d: %s on %+v: splitsFor %v, probe %v", round, sc.Name(), sh, got, want)
		}
	}
	for round := range 4 {
		for _, sh := range shapes { // each schedule after another on a shape
			for _, sc := range scheds {
				check(round, sc, sh)
			}
		}
		for _, sc := range scheds { // a schedule on shapes sharing a slot
			for _, sh := range shapes {
				check(round, sc, sh)
			}
		}
	}
	if !seen[true] || !seen[false] {
		t.Fatalf("the cases give only %v: they test nothing", seen)
	}
	if !splitsFor(nil, shapes[0]) {
		t.Error("splitsFor(nil) = false, want true (unknown schedule)")
	}
}
