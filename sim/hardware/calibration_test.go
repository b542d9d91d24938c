package hardware

import (
	"math"
	"strings"
	"testing"
)

// TestLookupGPUCalibrated: a setting replaces its entry for that lookup
// only: the stall takes the value given, a factor multiplies through
// (times: [train_gemm]: 0.95/0.90 of the committed efficiency), and the
// committed GPU is unchanged afterwards.
func TestLookupGPUCalibrated(t *testing.T) {
	base, err := LookupGPU("h100-sxm")
	if err != nil {
		t.Fatal(err)
	}
	g, err := LookupGPUCalibrated("h100-sxm", Calibration{{"moe_host_sync", "2.5ms"}, {"train_gemm", "0.95"}})
	if err != nil {
		t.Fatal(err)
	}
	if g.Compute.MoEHostSync != 0.0025 {
		t.Errorf("moe_host_sync = %g s, want 0.0025", g.Compute.MoEHostSync)
	}
	if r := g.Compute.MatmulEffBF16 / base.Compute.MatmulEffBF16; math.Abs(r-0.95/0.90) > 1e-12 {
		t.Errorf("matmul efficiency ratio = %g, want 0.95/0.90", r)
	}
	again, _ := LookupGPU("h100-sxm")
	if again.Compute.MoEHostSync != base.Compute.MoEHostSync || again.Compute.MatmulEffBF16 != base.Compute.MatmulEffBF16 {
		t.Error("a calibrated lookup changed the committed GPU")
	}
	if _, err := LookupGPUCalibrated("h100-sxm", Calibration{{"no_such", "1"}}); err == nil || !strings.Contains(err.Error(), "valid: train_gemm") {
		t.Errorf("unknown entry: err = %v, want one naming the valid entries", err)
	}
	if _, err := LookupGPUCalibrated("h100-sxm", Calibration{{"moe_host_sync", "fast"}}); err == nil {
		t.Error("a value that is not a duration resolved")
	}
}

// TestFittedOnRuns: the entries refit from published runs, in file order,
// each with a grid and a prior.
func TestFittedOnRuns(t *testing.T) {
	var names []string
	for _, e := range FittedOnRuns() {
		names = append(names, e.Name)
		if len(e.Fit.Grid) == 0 || e.Fit.Prior == "" {
			t.Errorf("%s: fit %+v lacks a grid or prior", e.Name, e.Fit)
		}
	}
	if got := strings.Join(names, ","); got != "train_gemm,train_attn,moe_host_sync,host_sync_stall" {
		t.Errorf("fitted on runs = %s", got)
	}
}
