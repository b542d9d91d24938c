package sim

import (
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/simtrain/simtrain/"

// mayImport is the import graph of docs/design.md ("Packages"): for every
// package under sim/, the packages of this module it may import. It points
// one way, from the CLI down to the engine; a package that is not listed
// fails the test until it is given its place here and in docs/design.md.
var mayImport = map[string][]string{
	"sim/engine":            nil,
	"sim/units":             nil,
	"sim/pipeline":          {"sim/hugepages"},
	"sim/limits":            nil,
	"sim/hugepages":         nil,
	"sim/goodput":           nil,
	"sim/hardware":          {"sim/units"},
	"sim/output":            {"sim/limits", "sim/output/parquet", "sim/hugepages"},
	"sim/output/parquet":    {},
	"sim/output/htmlreport": {"sim/output", "sim/output/numfmt"},
	"sim/output/numfmt":     {},
	"sim/workload":          {"sim/engine", "sim/units", "sim/hardware", "sim/pipeline"},
	"sim/topology":          {"sim/engine", "sim/units", "sim/hardware", "sim/hugepages"},
	"sim/network":           {"sim/engine", "sim/units", "sim/topology", "sim/hugepages"},
	"sim/collectives":       {"sim/engine", "sim/units", "sim/hardware", "sim/topology", "sim/network"},
	"sim/parallel":          {"sim/engine", "sim/units", "sim/hardware", "sim/pipeline", "sim/topology", "sim/network", "sim/collectives", "sim/workload", "sim/hugepages"},
	"sim/scenario":          {"sim/engine", "sim/limits", "sim/hardware", "sim/pipeline", "sim/topology", "sim/network", "sim/parallel", "sim/workload", "sim/goodput"},
	"sim/simulation":        {"sim/engine", "sim/units", "sim/pipeline", "sim/topology", "sim/network", "sim/collectives", "sim/parallel", "sim/workload", "sim/scenario", "sim/goodput", "sim/hugepages"},
	"sim/sweep":             {"sim/limits", "sim/network", "sim/scenario", "sim/simulation", "sim/hugepages"},
	"sim/validation":        {"sim/workload", "sim/hardware", "sim/scenario", "sim/simulation"},
	"sim/calibration":       {"sim/hardware", "sim/scenario", "sim/simulation", "sim/validation"},
	"sim/report":            {"sim/output", "sim/parallel", "sim/scenario", "sim/simulation", "sim/sweep", "sim/validation"},
	"sim":                   {"sim/output", "sim/scenario", "sim/simulation", "sim/sweep", "sim/validation", "sim/report"},
}

// TestImportGraphIsOneWay checks every package's imports (tests aside)
// against mayImport, and that only sim/output imports Arrow among them.
func TestImportGraphIsOneWay(t *testing.T) {
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if d.Name() == "testdata" {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(path, 0)
		if _, none := err.(*build.NoGoError); none {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.ToSlash(filepath.Join("sim", path))
		seen[name] = true
		allowed, ok := mayImport[name]
		if !ok {
			t.Errorf("%s: not in the import graph; give it its place in mayImport and in docs/design.md", name)
			return nil
		}
		for _, imp := range pkg.Imports {
			if strings.Contains(imp, "apache/arrow") && name != "sim/output" {
				t.Errorf("%s imports Arrow (%s); only sim/output and the CLI may", name, imp)
			}
			own, ok := strings.CutPrefix(imp, module)
			if ok && !slices.Contains(allowed, own) {
				t.Errorf("%s imports %s, against the one-way graph (it may import %v)", name, own, allowed)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name := range mayImport {
		if !seen[name] {
			t.Errorf("mayImport lists %s, which has no Go files", name)
		}
	}
}
