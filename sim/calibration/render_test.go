package calibration

import (
	"bytes"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/hardware"
)

// TestRender: a fit rewrites its entries' value, runs (by id) and
// objective, and nothing else; the committed file renders unchanged when
// the fit reproduces it.
func TestRender(t *testing.T) {
	file := hardware.CalibrationFile()
	p := &Problem{Names: []string{"r023-deepseek", "r024-qwen"}, Params: []Param{{Name: "moe_host_sync"}}}
	out, err := Render(file, p, Fit{Values: []string{"3ms"}, Steps: []Step{{Params: []int{0}, Rows: []int{0, 1}, Objective: 0.0123}}})
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{"  value: 3ms\n", "  runs: [r023, r024]\n", "  objective: mean |step-time error| 1.23% over the 2 rows of runs (simtrain calibrate)\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("rendered file lacks %q", want)
		}
	}
	if !strings.Contains(s, "kernel_overhead:\n  value: 2.2µs\n") {
		t.Error("an entry without fit: changed")
	}
	same, err := Render(file, &Problem{}, Fit{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(same, file) {
		t.Error("rendering the committed file without a fit changed it: it is not in calibrate's own format")
	}
}
