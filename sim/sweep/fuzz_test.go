package sweep

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseSweep: any sweep file is a sweep whose points are all
// enumerable, or a one-line error; never a panic or a runaway enumeration
// (the point bound is lowered to 512 here so that each input stays quick).
func FuzzParseSweep(f *testing.F) {
	files, _ := filepath.Glob("../../scenarios/sweeps/*.yaml")
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	base, err := os.ReadFile("../testdata/base.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte("name: s\nscenario:\n" + indent(string(base)) + "sweep:\n  parallel.tp: [1, 2, 8]\n  parallel.pp: auto\n"))
	f.Add([]byte("scenario: {name: x}\nsweep: {parallel.tp: [1, 1]}\n"))
	f.Add([]byte("base: /dev/zero\nsweep: {parallel.tp: [1]}\n"))
	f.Add([]byte("name: ..\nbase: ../quickstart.yaml\nsweep: {training.micro_batch: {auto: true, max: 4}}\n"))
	old := maxSweepPoints
	maxSweepPoints = 512
	defer func() { maxSweepPoints = old }()
	f.Fuzz(func(t *testing.T, data []byte) {
		sw, err := Parse(data, "../../scenarios/sweeps", Options{})
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		if sw.Len() == 0 || sw.Len() > maxSweepPoints {
			t.Fatalf("%d points", sw.Len())
		}
		for _, i := range []int{0, sw.Len() - 1} {
			p := sw.Point(i)
			if p.RunID == "" || (p.Err == nil && p.Scenario == nil) {
				t.Fatalf("point %d: %+v", i, p)
			}
			if _, err := sw.PointYAML(i); err != nil {
				t.Fatalf("point %d as YAML: %v", i, err)
			}
		}
	})
}

func indent(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		b.WriteString("  " + line + "\n")
	}
	return b.String()
}
