package simulation

import (
	"context"
	"reflect"
	"testing"
)

// TestRunIntoResult: a Run given Options.Result returns that storage,
// holding what a Run without it returns, whatever the storage held before:
// the Result of a run with more steps (its Steps' storage kept and
// overwritten) or fewer, of a shortened run (counts that a Run adds to:
// SteadyPlays, Replicated) under a run played whole or shortened
// otherwise, or the same run again. Compared after KeepFiguresOnly, with
// the wall time and each run's own scenario, cluster and layout left out.
func TestRunIntoResult(t *testing.T) {
	variable3 := append([]string{}, variable...)
	variable3[1] = "3"
	long := []string{"training.global_batch", "1024", "parallel.pp", "2", "parallel.tp", "4"}
	long2 := append(append([]string{}, long...), "training.micro_batch", "2")
	short := Options{FiguresOnly: true}
	cases := []struct {
		name                string
		before, now         []string
		beforeOpt, nowOpt   Options
		wantPlays, wasPlays bool // the run now, the run before: shortened
	}{
		{name: "fewer steps over more", before: variable, now: variable3},
		{name: "more steps over fewer", before: nil, now: variable},
		{name: "whole over shortened", before: long, now: long, beforeOpt: short, wasPlays: true},
		{name: "shortened over shortened", before: long, now: long2, beforeOpt: short, nowOpt: short, wantPlays: true, wasPlays: true},
		{name: "shortened over itself", before: long2, now: long2, beforeOpt: short, nowOpt: short, wantPlays: true, wasPlays: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			want, err := Run(ctx, parseWith(t, tc.now), tc.nowOpt)
			if err != nil {
				t.Fatal(err)
			}
			into, err := Run(ctx, parseWith(t, tc.before), tc.beforeOpt)
			if err != nil {
				t.Fatal(err)
			}
			if (want.SteadyPlays > 0) != tc.wantPlays || (into.SteadyPlays > 0) != tc.wasPlays || len(into.Steps) == len(want.Steps) && tc.before == nil {
				t.Fatalf("the case does not play what it says: %d and %d plays, %d and %d steps", into.SteadyPlays, want.SteadyPlays, len(into.Steps), len(want.Steps))
			}
			opt := tc.nowOpt
			opt.Result = into
			got, err := Run(ctx, parseWith(t, tc.now), opt)
			if err != nil {
				t.Fatal(err)
			}
			if got != into {
				t.Fatal("Run did not return the storage it was given")
			}
			for _, r := range []*Result{want, got} {
				r.KeepFiguresOnly()
				r.SimWallS, r.Cluster, r.Layout, r.Scenario, r.fabric = 0, nil, nil, nil, nil
			}
			if !reflect.DeepEqual(*got, *want) {
				t.Errorf("into a used Result:\n got %+v\nwant %+v", *got, *want)
			}
		})
	}
}
