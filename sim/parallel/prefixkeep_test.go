package parallel

import (
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
)

// A build after a failed shortened play resumes each stage from the state
// the shortened build kept at its common prefix (Arena.KeepPrefixes): the
// programs equal those built afresh, every field (programDiff), on a
// two-stage 1F1B pipeline of 48 micro-batches played as one of 11 (margin
// 8), with and without a host thread. It resumes only from the Arena's
// last build, asked to keep, with the failed play's Fork detached: a build
// in between, no request, a Fork not detached or another step (other host
// costs: the prefixes' tasks differ) are built from the start, equal all
// the same, as is a build whose task pool has no
// populated room above its programs for the prefixes' tasks (keptPrefixes:
// here, no larger build before it). A longer shortened play's build
// (margin 16) resumes too, and keeps its own prefixes for the full build;
// a shortened build that re-prices the arena's last keeps them as one
// built afresh.
func TestBuildResumesKeptPrefixes(t *testing.T) {
	const m = 48
	pr := unitPricer{unit: engine.Millisecond}
	hosted := prefixTestHost
	for _, tc := range []struct {
		name     string
		host     HostModel
		noKeep   bool // KeepPrefixes not asked of the shortened build
		noDetach bool // the Fork not detached
		between  bool // another build between the shortened one and the full one
		other    bool // the full step another host's (its prefixes' tasks differ)
		second   bool // a longer shortened play built in between, resumed, keeping its own
		cold     bool // no larger build before: the task pool has no populated room to move the prefixes to
		repriced bool // the shortened build re-prices the arena's last (the same step built just before)
		resumes  bool
	}{
		{name: "plain", resumes: true},
		{name: "hosted", host: hosted, resumes: true},
		{name: "no request", noKeep: true},
		{name: "not detached", noDetach: true},
		{name: "a build between", between: true},
		{name: "another step", host: hosted, other: true},
		{name: "second play", host: hosted, second: true, resumes: true},
		{name: "no room", cold: true},
		{name: "re-priced", host: hosted, repriced: true, resumes: true},
		{name: "re-priced, second play", repriced: true, second: true, resumes: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := steadyConfig(t, m, tc.host)
			a := new(Arena)
			a.Reserve(1 << 14) // (an array populated ahead: warmTo's least)
			cfg.Arena = a
			if !tc.cold {
				buildLarger(t, cfg, pr)
			}
			plan, short := shortenedStep(t, cfg, 8)
			if tc.repriced {
				pre := short // (BuildAfter sets defaults in what it is given: the key is of the step as given)
				if _, err := BuildAfter(&pre, pr, nil); err != nil {
					t.Fatal(err)
				}
			}
			if !tc.noKeep {
				a.KeepPrefixes(&plan)
			}
			r0 := RepricedBuilds()
			sp, err := BuildAfter(&short, pr, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r := RepricedBuilds() - r0; (r == 1) != tc.repriced {
				t.Fatalf("%d re-priced builds of the shortened step", r)
			}
			var f Fork
			playPaused(t, &short, sp, plan, &f)
			if !tc.noDetach {
				f.Detach()
			}
			if tc.between {
				if _, err := BuildAfter(&short, pr, nil); err != nil {
					t.Fatal(err)
				}
			}
			check := func(c *StepConfig, got []*Program, resumes bool) {
				t.Helper()
				fresh := *c
				fresh.Arena = new(Arena)
				want, err := BuildAfter(&fresh, pr, nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(want) {
					t.Fatalf("%d programs, built afresh %d", len(got), len(want))
				}
				for s := range want {
					if d := programDiff(got[s], want[s]); d != "" {
						t.Errorf("%d micro-batches, stage %d: %s differ from a fresh build's", c.Microbatches, s, d)
					}
				}
				if r := a.keep.resumed; (r == len(got)) != resumes || (r == 0) == resumes {
					t.Errorf("%d micro-batches: %d of %d stages resumed, want all: %v", c.Microbatches, r, len(got), resumes)
				}
			}
			from := &f
			if tc.second {
				plan2, short2 := shortenedStep(t, cfg, 16)
				a.KeepPrefixes(&plan2)
				sp2, err := BuildAfter(&short2, pr, &f)
				if err != nil {
					t.Fatal(err)
				}
				check(&short2, sp2, true)
				y := NewSymmetric(engine.New(), short2.Layout, sp2)
				y.CountEvents()
				var f2 Fork
				if err := y.Resume(&f); err != nil {
					t.Fatal(err)
				}
				if _, err := y.RunSteadyResumed(plan2, &f2); err != nil {
					t.Fatal(err)
				}
				if saved, _, _ := f2.Saved(); !saved {
					t.Fatal("no state saved by the second play")
				}
				f2.Detach()
				from = &f2
			}
			full := cfg
			if tc.other {
				o := *cfg
				o.Host.KernelFwd *= 2
				full = &o
			}
			got, err := BuildAfter(full, pr, from)
			if err != nil {
				t.Fatal(err)
			}
			check(full, got, tc.resumes)
		})
	}
}

// prefixTestHost is the host thread of the prefix tests' hosted steps:
// 20 µs to launch a kernel, 5 µs for a call.
var prefixTestHost = HostModel{On: true, KernelFwd: 20 * engine.Microsecond, KernelBwd: 20 * engine.Microsecond, Call: 5 * engine.Microsecond}

// playPaused plays sp, the programs of short built for plan's shortened
// play, with events counted, saving its state at the common prefixes in
// f: the play must have paused there (Fork.Saved), as a failed shortened
// play's resumption needs.
func playPaused(t *testing.T, short *StepConfig, sp []*Program, plan Steady, f *Fork) {
	t.Helper()
	xs := NewSymmetric(engine.New(), short.Layout, sp)
	xs.CountEvents()
	if _, err := xs.RunSteady(plan, f); err != nil {
		t.Fatal(err)
	}
	if saved, _, _ := f.Saved(); !saved {
		t.Fatal("no state saved")
	}
}

// playedWhole builds cfg's full step on storage of its own and plays it
// from the start: the play a resumed build's must equal.
func playedWhole(t *testing.T, cfg *StepConfig, pr Pricer) *Executor {
	t.Helper()
	whole := *cfg
	whole.Arena = new(Arena)
	wp, err := BuildAfter(&whole, pr, nil)
	if err != nil {
		t.Fatal(err)
	}
	x := NewSymmetric(engine.New(), whole.Layout, wp)
	if err := x.Run(); err != nil {
		t.Fatal(err)
	}
	return x
}

// detachedShortPlay leaves what a failed shortened play leaves for the
// full build: in a new reserved Arena, set as cfg's, a larger step built
// (buildLarger), then the shortened step (margin 8) over kept prefixes,
// played paused into the returned Fork, which is detached.
func detachedShortPlay(t *testing.T, cfg *StepConfig, pr Pricer) (*Arena, *Fork) {
	t.Helper()
	a := new(Arena)
	a.Reserve(1 << 14)
	cfg.Arena = a
	buildLarger(t, cfg, pr)
	plan, short := shortenedStep(t, cfg, 8)
	a.KeepPrefixes(&plan)
	sp, err := BuildAfter(&short, pr, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := new(Fork)
	playPaused(t, &short, sp, plan, f)
	f.Detach()
	return a, f
}

// buildLarger builds cfg's step with twice its micro-batches in cfg's
// Arena: a sweep worker's earlier, larger point, whose populated pages
// hold the moved prefixes above the full step's programs (keptPrefixes).
func buildLarger(t *testing.T, cfg *StepConfig, pr Pricer) {
	t.Helper()
	big := *cfg
	big.Microbatches = 2 * cfg.Microbatches
	if _, err := BuildAfter(&big, pr, nil); err != nil {
		t.Fatal(err)
	}
}

// shortenedStep plans cfg's shortened play with margin (PlanSteady, which
// must accept it) and returns the plan and the step it plays.
func shortenedStep(t *testing.T, cfg *StepConfig, margin int) (Steady, StepConfig) {
	t.Helper()
	plan, ok := PlanSteady(cfg, margin)
	if !ok {
		t.Fatalf("PlanSteady refused margin %d", margin)
	}
	short := *cfg
	short.Microbatches = plan.Played
	return plan, short
}
