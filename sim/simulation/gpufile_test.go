package simulation

import (
	"github.com/simtrain/simtrain/sim/scenario"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/simtrain/simtrain/sim/hardware"
)

// TestGPUFromFile adds GPUs from record files and simulates them:
//   - the catalog's h100-sxm record written to a file under another name
//     (what `simtrain list gpus h100-sxm --format yaml` prints) simulates
//     bit-identically to h100-sxm, read relative to the scenario file;
//   - a part nobody has measured, given by its datasheet figures and
//     inheriting the rest from h100-sxm, simulates and says which figures
//     it took (here the H100's own datasheet figures, so the result is
//     again h100-sxm's, every efficiency inherited);
//   - a bad record or a missing file is a one-line error naming
//     cluster.gpu.
func TestGPUFromFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rec, err := hardware.GPURecordOf("h100-sxm")
	if err != nil {
		t.Fatal(err)
	}
	rec.Name = "my-h100"
	out, err := yaml.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	write("gpus/my-h100.yaml", string(out))
	unmeasured, err := os.ReadFile("../hardware/testdata/unmeasured.yaml")
	if err != nil {
		t.Fatal(err)
	}
	write("gpus/next-gen.yaml", string(unmeasured))
	base, err := os.ReadFile("../../scenarios/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	scen := func(gpu string) *scenario.Plan {
		t.Helper()
		p := write("scenario-"+strings.ReplaceAll(filepath.Base(gpu), ".yaml", "")+".yaml",
			strings.Replace(string(base), "gpu: h100-sxm", "gpu: "+gpu, 1))
		s, err := scenario.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ref := mustRun(t, scen("h100-sxm"), Options{})
	for _, gpu := range []string{"gpus/my-h100.yaml", "gpus/next-gen.yaml"} {
		s := scen(gpu)
		r := mustRun(t, s, Options{})
		if s.GPUFile() != gpu || r.Cluster.GPU.Name != strings.TrimSuffix(filepath.Base(gpu), ".yaml") {
			t.Errorf("%s: file %q, GPU %q", gpu, s.GPUFile(), r.Cluster.GPU.Name)
		}
		if r.StepTimeS != ref.StepTimeS || r.PeakMemBytes != ref.PeakMemBytes || r.MFU != ref.MFU {
			t.Errorf("%s: step %v s, peak %v B; h100-sxm: %v s, %v B", gpu, r.StepTimeS, r.PeakMemBytes, ref.StepTimeS, ref.PeakMemBytes)
		}
	}
	next := scen("gpus/next-gen.yaml")
	if g := next.GPU(); g.Inherits != "h100-sxm" || g.InheritedFigures() < 30 {
		t.Errorf("next-gen: inherits %q, %d figures inherited", g.Inherits, g.InheritedFigures())
	}

	write("gpus/bad.yaml", "name: bad\narch: hopper\ninherits: h100-sxm\nhbm_bytes: 80e9\n")
	for _, c := range []struct{ gpu, want string }{
		{"gpus/bad.yaml", "cluster.gpu: gpus/bad.yaml: line 4: a figure needs its provenance"},
		{"gpus/none.yaml", "cluster.gpu: gpus/none.yaml: open"},
		{"h1000", `cluster.gpu: unknown GPU "h1000"`},
	} {
		p := write("scenario-err.yaml", strings.Replace(string(base), "gpu: h100-sxm", "gpu: "+c.gpu, 1))
		_, err := scenario.Load(p)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want %q", c.gpu, err, c.want)
		}
	}
}
