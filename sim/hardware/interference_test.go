package hardware

import (
	"strings"
	"testing"
)

// TestCommInterference checks the communication-kernel CTA counts of every
// catalog GPU: each fabric kind has some, scale-up equals the ring channel
// count, a send/recv holds fewer SMs than a collective, one kernel of each
// kind together stays under half the GPU's SMs (the executor's cap, see
// sim/parallel doc.go), and the values carry a source line.
func TestCommInterference(t *testing.T) {
	want := map[string]CommCTAs{
		// nccl-tests#100 (24 channels on HGX A100), nccl#689 (16 SMs on a
		// DGX with 8 NICs), nccl#1424 (2 channels per net peer).
		"a100-80gb": {24, 16, 2},
		// nccl#1259: 24 coll channels on 8×H100.
		"h100-sxm": {24, 16, 2},
		// nccl#892: 16 coll channels on 8×H800.
		"h800": {16, 16, 2},
		// PCIe node: Channels 4 (estimate), one NIC: 2 SMs (nccl#689).
		"l40s": {4, 2, 2},
	}
	for _, name := range GPUNames() {
		g, err := LookupGPU(name)
		if err != nil {
			t.Fatal(err)
		}
		iv := g.Comm.Interference
		if w, ok := want[name]; ok && iv != w {
			t.Errorf("%s: Interference %+v, want %+v", name, iv, w)
		}
		if iv.ScaleUp != g.Comm.Channels || iv.ScaleOut <= 0 || iv.P2P <= 0 || iv.P2P > iv.ScaleOut {
			t.Errorf("%s: Interference %+v with Channels %d", name, iv, g.Comm.Channels)
		}
		if sum := iv.ScaleUp + iv.ScaleOut + iv.P2P; 2*sum > g.SMs {
			t.Errorf("%s: one kernel of each kind holds %d of %d SMs, over half", name, sum, g.SMs)
		}
		found := 0
		for _, s := range g.Comm.Sources {
			if strings.HasPrefix(s, "comm.ctas_scale_out: ") || strings.HasPrefix(s, "comm.ctas_p2p: ") || strings.HasPrefix(s, "comm.channels: ") {
				found++
			}
		}
		if found != 3 {
			t.Errorf("%s: %d of the channels' and CTAs' source lines", name, found)
		}
	}
}

// TestPersistentGEMM: the Hopper GPUs run persistent one-CTA-per-SM GEMMs
// (resolve.go persistentGEMM); Ampere, Blackwell and CDNA3 do not.
func TestPersistentGEMM(t *testing.T) {
	for _, tc := range []struct {
		gpu  string
		want bool
	}{{"h100-sxm", true}, {"h200", true}, {"a100-80gb", false}, {"b300", false}, {"mi300x", false}} {
		g, err := LookupGPU(tc.gpu)
		if err != nil {
			t.Fatal(err)
		}
		if g.PersistentGEMM != tc.want {
			t.Errorf("%s (%s): PersistentGEMM %v, want %v", tc.gpu, g.Arch, g.PersistentGEMM, tc.want)
		}
	}
}
