package simulation

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/scenario"
)

// figures are every figure of a Result that a summary row holds, Events
// included.
func figures(r *Result) []any {
	return []any{r.StepTimeS, r.StepP50S, r.StepP99S, r.Steps, r.TokensPerS, r.MFU, r.HFU, r.TFLOPsPerGPU,
		r.BubbleFraction, r.ComputeS, r.HostSyncS, r.HostBoundS, r.HostIssueS, r.ExposedCommS,
		r.PeakMemBytes, r.MinPeakMemBytes, r.MemMarginBytes, r.Fits, r.CostUSDPerStep, r.EnergyKWhPerStep, r.Events}
}

// steadyMatches runs s played whole and with FiguresOnly (steady-state
// replication where it applies) and fails unless every figure is equal to
// the bit; it reports whether replication was used and on how many
// stages Stats measured one period instead of walking every copy
// (parallel.Executor.PeriodStats), and how many tasks fewer than playing
// failed shortened plays whole it played. It counts in atOnce the steps
// that worthShortening plays whole at once.
func steadyMatches(t *testing.T, name string, s *scenario.Plan, reuse *Reuse, resumed, atOnce *int) (bool, int, int) {
	t.Helper()
	full, err := Run(context.Background(), s, Options{})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	// Shortened wherever PlanSteady accepts the step (alwaysShorten), so
	// that every failed and resumed play is tested; the choice
	// worthShortening makes is below.
	short, err := Run(context.Background(), s, Options{FiguresOnly: true, Reuse: reuse, alwaysShorten: true})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := short.Check(); err != nil {
		t.Fatalf("%s: the played (shortened) step breaks an invariant: %v", name, err)
	}
	if g, w := figures(short), figures(full); !reflect.DeepEqual(g, w) {
		t.Errorf("%s: replicated figures\n%v\nfull play\n%v", name, g, w)
	}
	// A shortened play stopped as soon as its units show it will not
	// replicate (parallel.Executor.RunSteady) decides as the whole play
	// did: the same plays, replication and figures, with no more played.
	whole, err := Run(context.Background(), s, Options{FiguresOnly: true, Reuse: reuse, wholeSteady: true, alwaysShorten: true})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if g, w := figures(short), figures(whole); !reflect.DeepEqual(g, w) {
		t.Errorf("%s: stopping failed plays early gives\n%v\nplaying them whole\n%v", name, g, w)
	}
	if short.Replicated != whole.Replicated || short.SteadyPlays != whole.SteadyPlays || short.PlayedTasks > whole.PlayedTasks {
		t.Errorf("%s: stopping failed plays early: %d micro-batches replicated after %d plays, %d tasks played; whole: %d after %d, %d",
			name, short.Replicated, short.SteadyPlays, short.PlayedTasks, whole.Replicated, whole.SteadyPlays, whole.PlayedTasks)
	}
	// A full play resumed from a failed shortened play's state
	// (parallel.Fork) is the full play from the start: same figures and
	// events, the same tasks played once.
	fresh, err := Run(context.Background(), s, Options{FiguresOnly: true, Reuse: reuse, noResume: true, alwaysShorten: true})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if g, w := figures(short), figures(fresh); !reflect.DeepEqual(g, w) {
		t.Errorf("%s: the full play resumed (%d tasks) gives\n%v\nplayed from the start\n%v", name, short.ResumedTasks, g, w)
	}
	if fresh.ResumedTasks != 0 || short.PlayedTasks+short.ResumedTasks != fresh.PlayedTasks ||
		short.PlayedTasks-short.FailedTasks != fresh.PlayedTasks-fresh.FailedTasks {
		t.Errorf("%s: resumed: %d tasks played, %d thrown away, %d resumed; from the start: %d, %d, %d", name,
			short.PlayedTasks, short.FailedTasks, short.ResumedTasks, fresh.PlayedTasks, fresh.FailedTasks, fresh.ResumedTasks)
	}
	if short.ResumedTasks > 0 {
		*resumed++
	}
	if short.exec.Replicated() != (short.Replicated > 0) {
		t.Errorf("%s: Replicated %d, executor replicated %v", name, short.Replicated, short.exec.Replicated())
	}
	period := 0
	for i := 0; i < short.exec.Instances(); i++ {
		if short.exec.PeriodStats(i) {
			period++
		}
	}
	rep, less := short.Replicated > 0, whole.PlayedTasks-short.PlayedTasks
	// (after the reads of short's executor, whose storage reuse holds)
	// The sweep worker's choice (worthShortening): a step it plays whole
	// at once has the same figures, and plays no shortened step.
	chosen, err := Run(context.Background(), s, Options{FiguresOnly: true, Reuse: reuse})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if g, w := figures(chosen), figures(full); !reflect.DeepEqual(g, w) {
		t.Errorf("%s: with worthShortening's choice\n%v\nfull play\n%v", name, g, w)
	}
	if chosen.SteadyPlays == 0 {
		*atOnce++
		if chosen.Replicated != 0 || chosen.FailedTasks != 0 || chosen.ResumedTasks != 0 || chosen.PlayedTasks != full.PlayedTasks {
			t.Errorf("%s: played whole: %d replicated, %d failed, %d resumed, %d tasks; full play %d", name,
				chosen.Replicated, chosen.FailedTasks, chosen.ResumedTasks, chosen.PlayedTasks, full.PlayedTasks)
		}
	} else if chosen.SteadyPlays != short.SteadyPlays || chosen.Replicated != short.Replicated || chosen.PlayedTasks != short.PlayedTasks {
		t.Errorf("%s: tried: %d plays, %d replicated, %d tasks; always tried: %d, %d, %d", name,
			chosen.SteadyPlays, chosen.Replicated, chosen.PlayedTasks, short.SteadyPlays, short.Replicated, short.PlayedTasks)
	}
	return rep, period, less
}

// Steady-state replication is exact: on every bundled scenario, every
// published run of scenarios/validation and scenarios/holdout (every third
// with -short) that PlanSteady accepts, the figures of the replicated play equal the full play's,
// Events included.
func TestSteadyMatchesFull(t *testing.T) {
	files := scenarioFiles(t)
	reuse := new(Reuse)
	used, tried, period, stages, saved, resumed, wholeAtOnce := 0, 0, 0, 0, 0, 0, 0
	for _, f := range files {
		s, ok := playable(t, f)
		if !ok {
			continue // (played whole)
		}
		layout, err := s.NewLayout()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if _, ok := parallel.PlanSteady(s.StepConfig(layout), steadyMargin); !ok {
			continue // played whole either way
		}
		tried++
		ok, p, less := steadyMatches(t, filepath.Base(f), s, reuse, &resumed, &wholeAtOnce)
		saved += less
		if ok {
			used++
			period += p
			stages += layout.PP
		}
	}
	t.Logf("replicated %d of the %d that PlanSteady accepts, of %d; Stats on one period on %d of their %d stages; %d tasks fewer played than with failed plays played whole; %d full plays resumed; %d played whole at once (worthShortening)",
		used, tried, len(files), period, stages, saved, resumed, wholeAtOnce)
	if used < tried && saved == 0 {
		t.Error("no failed shortened play stopped early")
	}
	if used == 0 {
		t.Error("no scenario was replicated")
	}
	if used < tried && resumed == 0 {
		t.Error("no full play resumed from a failed shortened play")
	}
	if period < stages/2 {
		t.Errorf("Stats measured one period on %d of %d replicated stages, want most", period, stages)
	}
}
