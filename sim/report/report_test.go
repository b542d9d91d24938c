package report

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/output"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/simulation"
)

// derivedColumns are summary.arrow's input columns that are not one knob's
// value: computed from the plan, or set per sweep point.
var derivedColumns = []string{"run_id", "error", "params", "active_params", "num_gpus", "microbatches"}

// firstResultColumn ends summary.arrow's input columns.
const firstResultColumn = "step_time_s"

// TestKnobColumnsMatchTheSchema: every knob column of the registry is a
// summary.arrow input column whose type holds the knob's value, and every
// input column is a knob's or a derived one; every knob without a column
// says why.
func TestKnobColumnsMatchTheSchema(t *testing.T) {
	s, err := scenario.Load("../../scenarios/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	typ := reflect.TypeOf(output.SummaryRow{})
	covered := map[string]string{}
	for _, k := range scenario.Knobs {
		if k.Column == "" {
			if k.NoColumn == "" {
				t.Errorf("%s: no summary column and no reason (Knob.NoColumn)", k.Path)
			}
			continue
		}
		if prev, dup := covered[k.Column]; dup {
			t.Errorf("column %s reports both %s and %s", k.Column, prev, k.Path)
		}
		covered[k.Column] = k.Path
		i, ok := summaryFields[k.Column]
		if !ok {
			t.Errorf("%s: column %q is not in output.SummaryRow", k.Path, k.Column)
			continue
		}
		if v, ok := knobValue(k, s); ok && !v.Type().ConvertibleTo(typ.Field(i).Type) {
			t.Errorf("%s: a %s value cannot fill column %s (%s)", k.Path, v.Type(), k.Column, typ.Field(i).Type)
		}
	}
	for i := 0; i < typ.NumField(); i++ {
		col, _, _ := strings.Cut(typ.Field(i).Tag.Get("arrow"), ",")
		if col == firstResultColumn {
			break
		}
		if covered[col] == "" && !slices.Contains(derivedColumns, col) {
			t.Errorf("summary.arrow input column %s is neither a knob's (scenario.Knob.Column) nor derived", col)
		}
	}
}

// TestSummaryOfARun: the row carries the plan's knobs and the result's
// figures; without a result only the inputs.
func TestSummaryOfARun(t *testing.T) {
	s, err := scenario.Load("../../scenarios/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := simulation.Run(context.Background(), s, simulation.Options{})
	if err != nil {
		t.Fatal(err)
	}
	row := Summary(s, r)
	if row.RunID != s.RunID() || row.Name != s.Name || row.TP != int64(s.Parallel.TP) || row.GPU != s.Cluster.GPU ||
		row.NumGPUs != int64(s.GPUs()) || row.StepTimeS != r.StepTimeS || row.MFU != r.MFU || row.Fits != r.Fits {
		t.Errorf("row %+v", row)
	}
	if in := Summary(s, nil); in.StepTimeS != 0 || in.TP != row.TP || in.Params != row.Params {
		t.Errorf("inputs-only row %+v", in)
	}
	if m := Memory(r); len(m) != r.Layout.World() || m[0].TotalBytes != output.ByteCount(r.Memory[0].Total) {
		t.Errorf("memory rows %d for %d ranks", len(m), r.Layout.World())
	}
	n := 0
	if err := Timeline(context.Background(), r, r.TimelineRanks(), func(rows []output.TimelineRow) error { n += len(rows); return nil }); err != nil || n == 0 {
		t.Errorf("timeline: %d rows, %v", n, err)
	}
	if Meta(r)[output.MetaConfig] != string(s.CanonicalJSON()) {
		t.Error("meta config is not the canonical scenario")
	}
}
