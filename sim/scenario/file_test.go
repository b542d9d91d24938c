package scenario

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/simtrain/simtrain/sim/hardware"
)

// TestFileResolvesAsLoad checks that a File read once resolves, from
// several goroutines at once, to what LoadCalibrated makes of the same
// path: with and without a calibration setting and an override, for the
// bundled scenarios, validation files, a missing file and a file that is
// not YAML (the same error). Run with -race it also checks that Resolve
// only reads the parsed document.
func TestFileResolvesAsLoad(t *testing.T) {
	bundled, _ := filepath.Glob("../../scenarios/*.yaml")
	valid, _ := filepath.Glob("../../scenarios/validation/*.yaml")
	if len(bundled) < 6 || len(valid) < 20 {
		t.Fatalf("found %d bundled and %d validation scenarios", len(bundled), len(valid))
	}
	paths := append(bundled, valid[:20]...)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: [unclosed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	paths = append(paths, bad, filepath.Join(t.TempDir(), "missing.yaml"))
	cals := []hardware.Calibration{nil, {{Name: "train_gemm", Value: "0.85"}}}
	overs := [][]Override{nil, Overrides("training.micro_batch", "2")}
	// what a resolved plan is, for comparing: its canonical form, run id
	// and resolved GPU record (where a calibration setting lands), or the
	// error
	key := func(s *Plan, err error) string {
		if err != nil {
			return "error: " + err.Error()
		}
		gpu, err := json.Marshal(s.GPU()) // (its pointers followed, not printed)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%s\n%s\n%s", s.CanonicalJSON(), s.RunID(), gpu)
	}
	calibrated := 0 // files whose plan the calibration setting changes
	for _, path := range paths {
		f := ReadFile(path)
		if key(LoadCalibrated(path, cals[0])) != key(LoadCalibrated(path, cals[1])) {
			calibrated++
		}
		for _, cal := range cals {
			for _, over := range overs {
				want := key(LoadCalibrated(path, cal, over...))
				got := make([]string, 4)
				var wg sync.WaitGroup
				for g := range got {
					wg.Add(1)
					go func() {
						defer wg.Done()
						got[g] = key(f.Resolve(cal, over...))
					}()
				}
				wg.Wait()
				for g, k := range got {
					if k != want {
						i := 0
						for i < len(k) && i < len(want) && k[i] == want[i] {
							i++
						}
						t.Errorf("%s (cal %v, overrides %v), goroutine %d: differs at byte %d:\n got …%.200s\nwant …%.200s", path, cal, over, g, i, k[max(0, i-60):], want[max(0, i-60):])
					}
				}
			}
		}
	}
	if calibrated == 0 {
		t.Error("the calibration setting changed no file's plan: the test cannot tell a calibration Resolve ignores")
	}
}
