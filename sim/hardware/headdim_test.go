package hardware

import (
	"slices"
	"testing"
)

// TestAttentionHeadDims checks the compiled head dimensions of the fused
// attention kernels: auto resolves to the GPU's own kernel, every list is
// strictly ascending, Triton's are its powers of two (BLOCK_HEADDIM), and
// cuDNN and unfused attention round nothing.
func TestAttentionHeadDims(t *testing.T) {
	for _, name := range GPUNames() {
		g, err := LookupGPU(name)
		if err != nil {
			t.Fatal(err)
		}
		c := g.Compute
		if got, want := c.AttentionHeadDims("auto"), c.AttentionHeadDims(c.AttnKernel); !slices.Equal(got, want) {
			t.Errorf("%s: auto tiles %v, want %s's %v", name, got, c.AttnKernel, want)
		}
		for _, k := range c.AttnKernels {
			d := c.AttentionHeadDims(k.Name)
			for i := 1; i < len(d); i++ {
				if d[i] <= d[i-1] {
					t.Errorf("%s %s: tiles %v not ascending", name, k.Name, d)
				}
			}
		}
		if d := c.AttentionHeadDims(KernelCuDNN); d != nil {
			t.Errorf("%s: cudnn tiles %v, want none", name, d)
		}
		if d := c.AttentionHeadDims("unfused"); d != nil {
			t.Errorf("%s: unfused tiles %v, want none", name, d)
		}
	}
	var c ComputeProfile
	if got := c.AttentionHeadDims(KernelTriton); !slices.Equal(got, []int{16, 32, 64, 128}) {
		t.Errorf("triton tiles %v, want 16, 32, 64, 128", got)
	}
}
