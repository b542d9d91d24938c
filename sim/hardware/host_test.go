package hardware

import (
	"math"
	"testing"
)

// TestHostDispatch checks the dispatch classes of data/host.yaml resolve
// with a source per figure, that eager costs the host more than replayed
// CUDA graphs, and that the Grace host's scale reaches the GB200 family
// (gb300 inherits it) but not x86-hosted GPUs.
func TestHostDispatch(t *testing.T) {
	eager, err := LookupHostDispatch(DispatchEager)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(eager.KernelFwd-10e-6) > 1e-12 || math.Abs(eager.KernelBwd-4e-6) > 1e-12 || math.Abs(eager.Call-10e-6) > 1e-12 {
		t.Errorf("eager = %+v, want 10/4/10 µs", eager)
	}
	if len(eager.Sources) != 3 {
		t.Errorf("eager sources = %q, want one per figure", eager.Sources)
	}
	g, err := LookupHostDispatch(DispatchGraphs)
	if err != nil {
		t.Fatal(err)
	}
	if g.KernelFwd != 0 || g.Call != 0 {
		t.Errorf("graphs = %+v, want no host cost", g)
	}
	if _, err := LookupHostDispatch("jax"); err == nil {
		t.Error("unknown class accepted")
	}
	for name, want := range map[string]float64{"gb200": 37.08 / 13.48, "gb300": 37.08 / 13.48, "h100-sxm": 1, "b200": 1, "a100-80gb": 1} {
		gpu, err := LookupGPU(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := gpu.Compute.HostDispatchScale; math.Abs(got-want) > 1e-9 {
			t.Errorf("%s host dispatch scale = %g, want %g", name, got, want)
		}
	}
}
