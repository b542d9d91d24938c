package simulation

import (
	"context"
	"testing"

	"github.com/simtrain/simtrain/sim/scenario"
)

// longStepScenario is Llama 3 8B at 128 tokens a sequence, tp 8 pp 8 with
// sequence parallelism and full recompute on 64 H100: each micro-batch is
// a few hundred microseconds of work, and the pipeline settles only after
// about 30 micro-batches, later than the first two shortened plays.
const longStepScenario = `name: long-step
model: {preset: llama3-8b}
training: {seq_len: 128, global_batch: 256, micro_batch: 1, recompute: full}
cluster: {gpu: h100-sxm, nodes: 8, gpus_per_node: 8}
parallel: {tp: 8, pp: 8, dp: 1, sp: true, zero: 1, schedule: 1f1b}
`

// A step of many micro-batches that the first two shortened plays do not
// settle is tried again with twice the margin (longerPlay), in units of the
// cycle the failed play's periods show (parallel.Executor.Cycle; two where
// none shows), and replicated there, to the full play's figures, rather
// than played whole: at tp 8 pp 8 with sp in units of two, at tp 4 pp 8,
// whose periods cycle every 8 micro-batches, in units of 8; far fewer tasks
// played than the full step. Without the longer plays it takes two plays
// and plays the step whole; longerTries 0, longStepShare 6 or 3, or the
// cycle ignored (units of two always) fails it. (issue 18, round 63)
func TestLongStepReplicatesOnALongerPlay(t *testing.T) {
	for _, tc := range []struct {
		name      string
		overrides []string
		unit      int
	}{
		{"tp 8 pp 8 sp", nil, 2},
		{"tp 4 pp 8", []string{"parallel.tp", "4", "parallel.dp", "2", "parallel.sp", "false",
			"training.recompute", "none", "training.global_batch", "2048"}, 8},
	} {
		s, err := scenario.Parse([]byte(longStepScenario), scenario.Overrides(tc.overrides...)...)
		if err != nil {
			t.Fatal(err)
		}
		reuse := new(Reuse)
		var resumed, atOnce int
		if rep, _, _ := steadyMatches(t, tc.name, s, reuse, &resumed, &atOnce); !rep {
			t.Fatalf("%s: not replicated", tc.name)
		}
		full, err := Run(context.Background(), s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), s, Options{FiguresOnly: true, Reuse: reuse})
		if err != nil {
			t.Fatal(err)
		}
		if res.SteadyPlays != steadyTries+1 || res.ReplicatedUnit != tc.unit || 4*res.PlayedTasks > full.PlayedTasks {
			t.Errorf("%s: %d plays, units of %d, %d tasks played of the full step's %d; want %d plays, units of %d, at most a quarter",
				tc.name, res.SteadyPlays, res.ReplicatedUnit, res.PlayedTasks, full.PlayedTasks, steadyTries+1, tc.unit)
		}
	}
	// Each longer play is at most a quarter of the step: with 128
	// micro-batches (a quarter is 32, the third play's 49 more) the step
	// is played whole after two plays.
	short, err := scenario.Parse([]byte(longStepScenario), scenario.Overrides("training.global_batch", "128")...)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), short, Options{FiguresOnly: true, Reuse: new(Reuse)})
	if err != nil {
		t.Fatal(err)
	}
	if res.SteadyPlays > steadyTries || res.Replicated != 0 {
		t.Errorf("128 micro-batches: %d plays, %d replicated; want at most %d plays, played whole", res.SteadyPlays, res.Replicated, steadyTries)
	}
}
