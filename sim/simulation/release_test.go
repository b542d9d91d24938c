package simulation

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/simtrain/simtrain/sim/scenario"
)

// A Reuse reserved from mappings (ReserveMapped) gives the figures of
// runs without a Reuse on bundled scenarios of several shapes (dense 3D,
// pipelined with a host thread, MoE), in every state of its storage:
// reserved for the largest, reserved too small (runs outgrow it on the
// heap), released (a run after Release starts afresh) and reserved again
// after a Release; and the figures of results kept from before a Release
// read the same after it (they hold nothing of the storage).
func TestReuseReleaseThenReserve(t *testing.T) {
	files := []string{"quickstart", "llama3-70b-1024-h100-3d", "mixtral-8x7b-ep8", "gpt3-175b-a100"}
	plans := make([]*scenario.Plan, len(files))
	want := make([][]any, len(files))
	var largest int64
	for i, f := range files {
		s, err := scenario.Load("../../scenarios/" + f + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		plans[i] = s
		res, err := Run(context.Background(), s, Options{FiguresOnly: true})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		want[i] = figures(res)
		largest = max(largest, EstimateWork(s, Options{FiguresOnly: true}).ProgramTasks)
	}
	reuse := new(Reuse)
	var kept []*Result
	runAll := func(label string) {
		t.Helper()
		for i, s := range plans {
			res, err := Run(context.Background(), s, Options{FiguresOnly: true, Reuse: reuse})
			if err != nil {
				t.Fatalf("%s %s: %v", label, files[i], err)
			}
			res.KeepFiguresOnly()
			if got := figures(res); !reflect.DeepEqual(got, want[i]) {
				t.Errorf("%s %s: figures\n%v\nwithout a Reuse\n%v", label, files[i], got, want[i])
			}
			kept = append(kept, res)
		}
	}
	for round := range 2 {
		reuse.ReserveMapped(largest)
		runAll(fmt.Sprintf("round %d reserved", round))
		reuse.Release()
		runAll(fmt.Sprintf("round %d released", round))
		reuse.Release()
		reuse.ReserveMapped(largest / 50)
		runAll(fmt.Sprintf("round %d outgrown", round))
		reuse.Release()
	}
	for k, res := range kept {
		if got := figures(res); !reflect.DeepEqual(got, want[k%len(files)]) {
			t.Errorf("kept result %d (%s): figures changed after Release", k, files[k%len(files)])
		}
	}
}

// ReservedBytes grows with the tasks up to the bound Reserve puts on them
// (maxReservedTasks), and is nothing for none.
func TestReuseReservedBytesBounded(t *testing.T) {
	cases := []struct {
		a, b int64
		less bool // ReservedBytes(a) < ReservedBytes(b), else equal
	}{
		{0, 0, false},
		{1, 1000, true},
		{1000, maxReservedTasks, true},
		{maxReservedTasks, maxReservedTasks + 1, false},
		{maxReservedTasks, 1 << 40, false},
	}
	if got := ReservedBytes(0); got != 0 {
		t.Errorf("ReservedBytes(0) = %d", got)
	}
	for _, c := range cases {
		a, b := ReservedBytes(c.a), ReservedBytes(c.b)
		if (c.less && a >= b) || (!c.less && a != b) {
			t.Errorf("ReservedBytes(%d) = %d, ReservedBytes(%d) = %d, want less %v", c.a, a, c.b, b, c.less)
		}
	}
}
