package output

import (
	"reflect"
	"strings"
	"testing"
)

// TestOneIntegerTypePerConcept checks results/README.md's rule on every
// table's row type: index columns are int32, byte counts int64, and a
// column name means one type in every table that has it.
func TestOneIntegerTypePerConcept(t *testing.T) {
	index := map[string]bool{"rank": true, "node": true, "stage": true, "step": true, "layer": true,
		"microbatch": true, "chunk": true, "link": true, "slowest_rank": true, "trial": true, "seq": true}
	seen := map[string]colKind{}
	where := map[string]string{}
	for _, row := range []any{TimelineRow{}, SummaryRow{}, StepRow{}, MemoryRow{}, LinkRow{},
		GoodputRow{}, GoodputSummaryRow{}, ValidationRow{}} {
		spec, err := specOf(reflect.TypeOf(row))
		if err != nil {
			t.Fatal(err)
		}
		name := spec.typ.Name()
		for _, f := range spec.fields {
			if index[f.column] && f.kind != kindInt32 {
				t.Errorf("%s.%s: index column %q is %s, want int32", name, f.goName, f.column, f.arrowType(0))
			}
			if (f.column == "bytes" || strings.HasSuffix(f.column, "_bytes")) && f.kind != kindInt64 {
				t.Errorf("%s.%s: byte count %q is %s, want int64", name, f.goName, f.column, f.arrowType(0))
			}
			if k, ok := seen[f.column]; ok && k != f.kind && !(f.kind == kindInt && k == kindInt64 || f.kind == kindInt64 && k == kindInt) {
				t.Errorf("column %q is %s in %s but %s in %s", f.column, f.arrowType(0), name, (&fieldSpec{kind: k}).arrowType(0), where[f.column])
			}
			seen[f.column], where[f.column] = f.kind, name
		}
	}
}
