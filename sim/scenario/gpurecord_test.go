package scenario

import (
	"reflect"
	"testing"

	"github.com/simtrain/simtrain/sim/hardware"
)

// TestGPURecordLookups holds gpuRecord, whose catalog lookup now comes
// first and whose record-making paths are functions of their own, to the
// records and errors hardware gives: a catalog GPU is one shared record
// (the same pointer for every plan, equal to LookupGPU's), a calibrated
// plan gets a record of its own even after the name was shared (a
// calibrated h100-sxm differs from the catalog's), and an unknown name or
// a missing record file gives the error it gave.
func TestGPURecordLookups(t *testing.T) {
	cal := hardware.Calibration{{Name: "train_gemm", Value: "0.5"}}
	plain, err := hardware.LookupGPU("h100-sxm")
	if err != nil {
		t.Fatal(err)
	}
	calibrated, err := hardware.LookupGPUCalibrated("h100-sxm", cal)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(plain, calibrated) {
		t.Fatal("train_gemm 0.5 leaves h100-sxm's record as it is: the calibrated case tests nothing")
	}
	_, unknownErr := hardware.LookupGPU("no-such-gpu")
	if unknownErr == nil {
		t.Fatal("LookupGPU(no-such-gpu) = nil error")
	}
	first, err := (&Plan{}).gpuRecord("h100-sxm") // shared from here on
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		v       string
		cal     hardware.Calibration
		want    *hardware.GPU // compared by value
		shared  bool          // the shared record itself
		wantErr string
	}{
		{name: "catalog", v: "h100-sxm", want: &plain, shared: true},
		{name: "calibrated after shared", v: "h100-sxm", cal: cal, want: &calibrated},
		{name: "unknown", v: "no-such-gpu", wantErr: unknownErr.Error()},
		{name: "unknown calibrated", v: "no-such-gpu", cal: cal, wantErr: unknownErr.Error()},
		{name: "missing file", v: "gpus/none.yaml", wantErr: "gpus/none.yaml: "},
		{name: "missing file calibrated", v: "gpus/none.yaml", cal: cal, wantErr: "gpus/none.yaml: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Plan{dir: t.TempDir(), cal: tc.cal}
			g, err := s.gpuRecord(tc.v)
			if tc.wantErr != "" {
				if err == nil || len(err.Error()) < len(tc.wantErr) || err.Error()[:len(tc.wantErr)] != tc.wantErr {
					t.Fatalf("gpuRecord(%s) = %v, want an error starting %q", tc.v, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*g, *tc.want) {
				t.Errorf("gpuRecord(%s) differs from hardware's record", tc.v)
			}
			if (g == first) != tc.shared {
				t.Errorf("gpuRecord(%s) is the shared record: %v, want %v", tc.v, g == first, tc.shared)
			}
		})
	}
}
