package sweep

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestWarmBaseChangesNothing: the bundled sweeps and a sweep of an inline
// scenario load with warmBase running beside the load (on two CPUs and on
// one) to the same points as without it, point for point: count,
// duplicates, run ids, validity, values, names and the scenario file each
// point prints (so the summary rows, which follow from these, keep their
// order and ids). warmBase leaves the copy of the base it is given as it
// found it, and it finishes (Parse does not wait for it). Run under -race
// it also checks that warmBase shares nothing unsynchronised with the
// load's goroutines.
func TestWarmBaseChangesNothing(t *testing.T) {
	files, _ := filepath.Glob("../../scenarios/sweeps/*.yaml")
	if len(files) == 0 {
		t.Fatal("no bundled sweeps")
	}
	dir := t.TempDir()
	inline := filepath.Join(dir, "inline.yaml")
	// An inline base that a point's GPU overrides (the warmed record is
	// not every point's), with invalid points among the valid.
	body := sweepBase + "sweep:\n  parallel.tp: [1, 2, 4, 8]\n  training.micro_batch: [1, 2, 3]\n  cluster.gpu: [h100-sxm, a100-80gb]\n"
	if err := os.WriteFile(inline, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	files = append(files, inline)
	defer func(on bool) { warmBaseOn, warmBaseDone = on, nil }(warmBaseOn)
	for _, f := range files {
		warmBaseOn, warmBaseDone = false, nil
		ref, err := Load(f, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, procs := range []int{runtime.GOMAXPROCS(0), 1} {
			warmBaseOn, warmBaseDone = true, make(chan *yaml.Node, 1)
			prev := runtime.GOMAXPROCS(procs)
			sw, err := Load(f, Options{})
			doc := <-warmBaseDone
			runtime.GOMAXPROCS(prev)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := encodeNode(t, doc), encodeNode(t, ref.base); a != b {
				t.Errorf("%s: warmBase changed its copy of the base:\n%s\nwant\n%s", f, a, b)
			}
			sameSweep(t, f, procs, ref, sw)
		}
	}
}

// sameSweep fails t unless a and b hold the same points.
func sameSweep(t *testing.T, f string, procs int, a, b *Sweep) {
	t.Helper()
	if a.Len() != b.Len() || a.Duplicates != b.Duplicates || a.DuplicateExample != b.DuplicateExample {
		t.Fatalf("%s on %d CPUs: %d points, %d duplicates with warmBase; %d, %d without", f, procs, b.Len(), b.Duplicates, a.Len(), a.Duplicates)
	}
	for i := 0; i < a.Len(); i++ {
		if a.RunID(i) != b.RunID(i) || a.points[i].err != b.points[i].err || a.describe(a.points[i].vals) != b.describe(b.points[i].vals) || a.PointName(i) != b.PointName(i) {
			t.Errorf("%s on %d CPUs: point %d: %s %q with warmBase, %s %q without", f, procs, i, b.RunID(i), b.points[i].err, a.RunID(i), a.points[i].err)
		}
		if i%97 == 0 || i == a.Len()-1 {
			x, errA := a.PointYAML(i)
			y, errB := b.PointYAML(i)
			if string(x) != string(y) || (errA == nil) != (errB == nil) {
				t.Errorf("%s on %d CPUs: point %d prints differently with warmBase", f, procs, i)
			}
		}
	}
}

func encodeNode(t *testing.T, n *yaml.Node) string {
	t.Helper()
	b, err := yaml.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
