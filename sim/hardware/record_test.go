package hardware

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// TestParseNumberExact: a product or quotient of decimals is the float64 Go
// gives the same constant expression (one rounding), so a record can write
// a ratio as its source states it.
func TestParseNumberExact(t *testing.T) {
	for _, c := range []struct {
		s    string
		want float64
	}{
		{"794.5/989", 794.5 / 989},
		{"0.35*11.8879/7.4875", 0.35 * 11.8879 / 7.4875},
		{"0.35*0.584/0.685*11.8879/7.4875", 0.35 * 0.584 / 0.685 * 11.8879 / 7.4875},
		{"835.5/989", 835.5 / 989},
		{"3.35e12", 3.35e12},
		{"80e9", 80e9},
		{"51/63", 51.0 / 63},
	} {
		got, err := ParseNumber(c.s)
		if err != nil || got != c.want {
			t.Errorf("ParseNumber(%q) = %v, %v; want %v", c.s, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "1/0", "a/2", "1//2", "2*"} {
		if _, err := ParseNumber(bad); err == nil {
			t.Errorf("ParseNumber(%q) accepted", bad)
		}
	}
	for _, x := range []float64{80e9, 3.35e12, 989e12, 0.8033367037411526, 26.28e9, 1, 0.5, 30e6, 1307.4e12} {
		if y, err := ParseNumber(FormatNumber(x)); err != nil || y != x {
			t.Errorf("FormatNumber(%v) = %q reads back as %v", x, FormatNumber(x), y)
		}
	}
}

// TestFigureYAML: the record form of a figure, round trip and errors.
func TestFigureYAML(t *testing.T) {
	var f struct {
		A Figure[float64]       `yaml:"a"`
		B Figure[time.Duration] `yaml:"b"`
		C Figure[int]           `yaml:"c"`
	}
	in := `
a: {value: 271.2/312, measured: "A100 MAMF", times: [train_gemm]}
b: {fit: nccl_ramp_time_h100, estimate: "no sweep for this part"}
c: {value: 24, datasheet: "24 channels"}
`
	if err := yaml.Unmarshal([]byte(in), &f); err != nil {
		t.Fatal(err)
	}
	if f.A.Value != 271.2/312 || f.A.Kind != Measured || !slices.Equal(f.A.Times, []string{"train_gemm"}) ||
		f.B.Fit != "nccl_ramp_time_h100" || f.B.Kind != Estimate || f.C.Value != 24 || f.C.Kind != Datasheet {
		t.Fatalf("decoded %+v", f)
	}
	out, err := yaml.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		A Figure[float64]       `yaml:"a"`
		B Figure[time.Duration] `yaml:"b"`
		C Figure[int]           `yaml:"c"`
	}
	if err := yaml.Unmarshal(out, &back); err != nil || back.A.Value != f.A.Value || back.B.Fit != f.B.Fit || back.C.Value != f.C.Value || back.C.Ref != f.C.Ref {
		t.Fatalf("round trip %s: %+v, %v", out, back, err)
	}
	for _, c := range []struct{ yaml, want string }{
		{"a: 3.35e12", "a figure needs its provenance"},
		{"a: {value: 1}", "exactly one source"},
		{"a: {value: 1, datasheet: x, measured: y}", "exactly one source"},
		{"a: {datasheet: x}", "needs a value"},
		{"a: {value: 1, datasheat: x}", `unknown figure key "datasheat"`},
		{"a: {fit: x, value: 1}", "takes its value and source from the calibration table"},
		{"a: {value: 12 GB, datasheet: x}", "not a number"},
		{"b: {value: 12, datasheet: x}", "a duration such as 500ns"},
	} {
		err := yaml.Unmarshal([]byte(c.yaml), &f)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.yaml, err, c.want)
		}
	}
}

// TestCalibrationTable: every entry says how it was fitted and on what,
// and is used by some record (no orphan fit); every fit a record names
// exists (Resolve fails otherwise, which loading the catalog checks).
func TestCalibrationTable(t *testing.T) {
	c := mustLoad()
	used := map[string]bool{}
	note := func(s Source) {
		if s.Fit != "" {
			used[s.Fit] = true
		}
		for _, m := range s.Times {
			used[m] = true
		}
	}
	var walk func(v any)
	walk = func(v any) {
		out, _ := yaml.Marshal(v)
		var n yaml.Node
		_ = yaml.Unmarshal(out, &n)
		var visit func(*yaml.Node)
		visit = func(n *yaml.Node) {
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if k := n.Content[i].Value; k == "fit" || k == "times" {
						var s Source
						if k == "fit" {
							s.Fit = n.Content[i+1].Value
						} else {
							_ = n.Content[i+1].Decode(&s.Times)
						}
						note(s)
					}
				}
			}
			for _, ch := range n.Content {
				visit(ch)
			}
		}
		visit(&n)
	}
	for _, n := range c.gpuNames {
		r, err := c.gpuRecord(n)
		if err != nil {
			t.Fatal(err)
		}
		walk(r)
	}
	for name, e := range c.cal {
		if e.Kind != Fitted || e.Ref == "" || len(e.Runs) == 0 {
			t.Errorf("calibration %s: %v %q, runs %v: a fit says how and on what", name, e.Kind, e.Ref, e.Runs)
		}
		if !used[name] {
			t.Errorf("calibration %s: no record uses it", name)
		}
	}
}

// TestEveryFigureSourced: every figure of every resolved catalog GPU has a
// source line with a kind and a reference.
func TestEveryFigureSourced(t *testing.T) {
	for _, name := range GPUNames() {
		g, _ := LookupGPU(name)
		for _, s := range g.Sources {
			i := strings.Index(s, ": ")
			rest := s[i+2:]
			k := strings.SplitN(rest, ":", 2)
			if len(k) != 2 || strings.TrimSpace(k[1]) == "" {
				t.Errorf("%s: source line %q has no reference", name, s)
			}
			kind := strings.Fields(k[0])[0]
			if !slices.Contains(kindNames[1:], kind) {
				t.Errorf("%s: source line %q: kind %q", name, s, kind)
			}
		}
		if len(g.Sources) < 40 {
			t.Errorf("%s: only %d source lines", name, len(g.Sources))
		}
	}
}

// TestInherits: a record naming a reference GPU takes what it leaves out
// from it, marked inherited, and keeps what it gives; the peaks are taken
// as a block; an unknown reference or a missing figure without one is an
// error naming the field.
func TestInherits(t *testing.T) {
	data, err := os.ReadFile("testdata/unmeasured.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rec := string(data)
	g, err := ParseGPU([]byte(strings.Replace(rec, "fp8: {value: 1979e12", "fp4: {value: 1979e12", 1)))
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := LookupGPU("h100-sxm")
	if g.Inherits != "h100-sxm" || g.HBMBytes != 80e9 || g.Peak.BF16 != 989e12 || g.Peak.FP8 != 0 || g.Peak.FP4 != 1979e12 {
		t.Errorf("own figures (the peaks taken as a block): %+v", g.Peak)
	}
	if g.Compute.MatmulEffBF16 != ref.Compute.MatmulEffBF16 || g.Comm.RingEfficiency != ref.Comm.RingEfficiency ||
		g.HostCopy.H2D != ref.HostCopy.H2D || g.HostCopy.D2H != ref.HostCopy.D2H || g.ScaleUpBandwidth != ref.ScaleUpBandwidth || g.DomainGPUs != 8 {
		t.Errorf("inherited figures differ from h100-sxm's")
	}
	inherited := 0
	for _, s := range g.Sources {
		if strings.Contains(s, ": inherited") {
			inherited++
			if !strings.Contains(s, "h100-sxm") {
				t.Errorf("inherited line without its reference: %q", s)
			}
		}
	}
	if inherited < 20 {
		t.Errorf("%d inherited figures", inherited)
	}
	for _, c := range []struct{ yaml, want string }{
		{strings.Replace(rec, "inherits: h100-sxm", "inherits: h900", 1), `inherits: unknown GPU "h900"`},
		{strings.Replace(rec, "inherits: h100-sxm\n", "", 1), "next-gen: scale_up: required"},
		{strings.Replace(rec, "inherits: h100-sxm\n", "scale_up: none\ndefault_intra_node: pcie\npcie: pcie-gen5\n", 1), "next-gen: domain_gpus: missing"},
		{strings.Replace(rec, "sms: {value: 132", "smz: {value: 132", 1), "field smz not found"},
		{rec + "pcie: pcie-gen9\n", `pcie: unknown host link "pcie-gen9"`},
	} {
		if _, err := ParseGPU([]byte(c.yaml)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
}

// TestRecordRoundTrip: every catalog record written back (what `simtrain
// list gpus NAME --format yaml` prints) reads as the same GPU.
func TestRecordRoundTrip(t *testing.T) {
	for _, name := range GPUNames() {
		rec, _ := GPURecordOf(name)
		out, err := yaml.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		g, err := ParseGPU(out)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		want, _ := LookupGPU(name)
		if !slices.Equal(g.Sources, want.Sources) || g.Compute.AttnEff != want.Compute.AttnEff || g.Comm.RampTime != want.Comm.RampTime ||
			g.HBMBandwidth != want.HBMBandwidth || g.HostCopy != want.HostCopy {
			t.Errorf("%s: the written record resolves differently", name)
		}
	}
}
