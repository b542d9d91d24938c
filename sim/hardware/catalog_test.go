package hardware

import (
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/simtrain/simtrain/sim/units"
)

// The catalog names the issue and scenario-format.md require.
var (
	wantGPUs = []string{"h100-sxm", "h100-96gb-500w", "h100-pcie", "h800", "h200", "b200", "b300", "gb200", "gb300",
		"a100-80gb", "a100-40gb", "l40s", "mi300x", "mi325x"}
	wantNICs = []string{"ib-hdr-200", "ib-ndr-400", "ib-xdr-800", "roce-200", "roce-400", "roce-800", "eth-100", "opa-100"}
)

func TestCatalogComplete(t *testing.T) {
	if got := GPUNames(); len(got) != len(wantGPUs) || !slices.IsSorted(got) {
		t.Errorf("GPUNames() = %v, want the %d required names sorted", got, len(wantGPUs))
	}
	for _, name := range wantGPUs {
		g, err := LookupGPU(name)
		if err != nil {
			t.Errorf("LookupGPU(%q): %v", name, err)
			continue
		}
		if g.Name != name || g.HBMBytes <= 0 || g.HBMBandwidth <= 0 || g.Peak.BF16 <= 0 || g.Peak.FP16 <= 0 ||
			g.Peak.FP32 <= 0 || g.Peak.TF32 <= 0 || g.SMs <= 0 || g.TDPWatts <= 0 || g.GPUHourUSD <= 0 ||
			g.PCIeBandwidth <= 0 || g.DomainGPUs <= 0 || g.DefaultGPUsPerNode <= 0 || len(g.Sources) == 0 {
			t.Errorf("%s: a key field is zero: %+v", name, g)
		}
		if !slices.Contains([]string{"ampere", "hopper", "blackwell", "ada", "cdna3"}, g.Arch) {
			t.Errorf("%s: Arch %q", name, g.Arch)
		}
		if !slices.Contains([]string{"nvswitch", "pcie", "nvlink-pairs"}, g.DefaultIntraNode) {
			t.Errorf("%s: DefaultIntraNode %q", name, g.DefaultIntraNode)
		}
		if (g.ScaleUp == "none") != (g.ScaleUpBandwidth == 0) || (g.ScaleUp == "none") != (g.ScaleUpLinks == 0) {
			t.Errorf("%s: ScaleUp %q with %g B/s over %d links", name, g.ScaleUp, g.ScaleUpBandwidth, g.ScaleUpLinks)
		}
		// NVLS: Hopper and Blackwell SXM parts on an NVSwitch (brief).
		wantNVLS := (g.Arch == "hopper" || g.Arch == "blackwell") && g.ScaleUp == "nvlink"
		if g.NVLS != wantNVLS {
			t.Errorf("%s: NVLS = %v, want %v", name, g.NVLS, wantNVLS)
		}
	}
	if got := NICNames(); len(got) != len(wantNICs) || !slices.IsSorted(got) {
		t.Errorf("NICNames() = %v", got)
	}
	for _, name := range wantNICs {
		n, err := LookupNIC(name)
		if err != nil {
			t.Errorf("LookupNIC(%q): %v", name, err)
			continue
		}
		if n.Name != name || n.Gbps <= 0 || float64(n.Bandwidth) != n.Gbps*1e9/8 || n.Latency <= 0 || n.Kind == "" || len(n.Sources) == 0 {
			t.Errorf("%s: %+v", name, n)
		}
	}
}

// Figures the brief and other packages rely on, checked by hand against
// hardware-facts.md §5/§5b.
func TestCatalogFigures(t *testing.T) {
	type row struct {
		name               string
		hbm                units.Bytes
		scaleUp            units.BytesPerSecond
		links, domain, gpn int
		intra, arch        string
		pcieGen            int
		pcieBW             units.BytesPerSecond
		bf16, fp8          units.FLOPPerSecond
	}
	for _, r := range []row{
		// estimate fit relies on 8 × 80e9 bytes for a DGX H100.
		{"h100-sxm", 80e9, 450e9, 18, 8, 8, "nvswitch", "hopper", 5, 63e9, 989e12, 1979e12},
		{"h800", 80e9, 200e9, 8, 8, 8, "nvswitch", "hopper", 5, 63e9, 989e12, 1979e12},
		{"a100-40gb", 40e9, 300e9, 12, 8, 8, "nvswitch", "ampere", 4, 31.5e9, 312e12, 0},
		{"gb200", 186e9, 900e9, 18, 72, 4, "nvswitch", "blackwell", 5, 63e9, 2500e12, 5000e12},
		{"gb300", 288e9, 900e9, 18, 72, 4, "nvswitch", "blackwell", 6, 121e9, 2500e12, 5000e12},
		{"mi300x", 192e9, 448e9, 7, 8, 8, "nvswitch", "cdna3", 5, 63e9, 1307.4e12, 2614.9e12},
		{"l40s", 48e9, 0, 0, 8, 8, "pcie", "ada", 4, 31.5e9, 362e12, 733e12},
		{"h100-pcie", 80e9, 300e9, 12, 8, 8, "nvlink-pairs", "hopper", 5, 63e9, 756e12, 1513e12},
		{"h100-96gb-500w", 96e9, 450e9, 18, 8, 8, "nvswitch", "hopper", 5, 63e9, 989e12, 1979e12},
	} {
		g, _ := LookupGPU(r.name)
		if g.HBMBytes != r.hbm || g.ScaleUpBandwidth != r.scaleUp || g.ScaleUpLinks != r.links ||
			g.DomainGPUs != r.domain || g.DefaultGPUsPerNode != r.gpn || g.DefaultIntraNode != r.intra ||
			g.Arch != r.arch || g.PCIeGen != r.pcieGen || g.PCIeBandwidth != r.pcieBW || g.Peak.BF16 != r.bf16 || g.Peak.FP8 != r.fp8 {
			t.Errorf("%s: got %+v\nwant %+v", r.name, g, r)
		}
	}
	// The 500 W H100: H100 SXM's profile with GEMMs and attention at the
	// H100 NVL's dense peak (835.5 of 989 TFLOP/s); HBM fraction unchanged.
	sxm, _ := LookupGPU("h100-sxm")
	capped, _ := LookupGPU("h100-96gb-500w")
	if capped.HBMBandwidth != 2.4e12 || capped.TDPWatts != 500 ||
		!near(capped.Compute.MatmulEffBF16, sxm.Compute.MatmulEffBF16*835.5/989) ||
		!near(capped.Compute.MatmulEffFP8, sxm.Compute.MatmulEffFP8*835.5/989) ||
		!near(capped.Compute.AttnEff, sxm.Compute.AttnEff*835.5/989) || capped.Compute.HBMEff != sxm.Compute.HBMEff {
		t.Errorf("h100-96gb-500w profile %+v\nvs h100-sxm %+v", capped.Compute, sxm.Compute)
	}
	n, _ := LookupNIC("ib-ndr-400")
	if n.Bandwidth != 50e9 {
		t.Errorf("ib-ndr-400 bandwidth %g, want 50e9 (400 Gb/s / 8)", n.Bandwidth)
	}
}

func TestLookupErrorsListNames(t *testing.T) {
	_, err := LookupGPU("x")
	if err == nil || !strings.Contains(err.Error(), `"x"`) {
		t.Fatalf("LookupGPU(x) = %v", err)
	}
	for _, name := range wantGPUs {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("LookupGPU error %q does not list %s", err, name)
		}
	}
	_, err = LookupNIC("ib-edr-100")
	if err == nil {
		t.Fatal("LookupNIC(ib-edr-100) succeeded")
	}
	for _, name := range wantNICs {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("LookupNIC error %q does not list %s", err, name)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error is not one line: %q", err)
	}
}

func TestLookupReturnsCopies(t *testing.T) {
	g, _ := LookupGPU("h100-sxm")
	g.Sources[0] = "changed"
	names := GPUNames()
	names[0] = "changed"
	g2, _ := LookupGPU("h100-sxm")
	if g2.Sources[0] == "changed" || GPUNames()[0] == "changed" {
		t.Error("lookups share state with the catalog")
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

// TestUsableMemory: the fit limit is the memory the CUDA runtime reports,
// GiB-based on NVIDIA parts (an "80 GB" H100 is 79.11 GiB to a process,
// more than 80e9 bytes); a GPU without a reading falls back to its
// datasheet figure, and a record that gives its own hbm_bytes does not
// take its reference's reading.
func TestUsableMemory(t *testing.T) {
	for _, c := range []struct {
		name string
		want float64
	}{
		{"h100-sxm", 79.11 * (1 << 30)}, {"a100-80gb", 79.15 * (1 << 30)}, {"a100-40gb", 39.59 * (1 << 30)},
		{"h200", 139.72 * (1 << 30)}, {"b200", 178.35 * (1 << 30)}, {"gb200", 184.31 * (1 << 30)},
		{"gb300", 288e9}, {"mi300x", 192e9},
	} {
		g, err := LookupGPU(c.name)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(float64(g.HBMUsableBytes)-c.want) > 1 {
			t.Errorf("%s: usable %.0f bytes, want %.0f", c.name, float64(g.HBMUsableBytes), c.want)
		}
	}
	data, err := os.ReadFile("testdata/unmeasured.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g, err := ParseGPU(data)
	if err != nil {
		t.Fatal(err)
	}
	if g.HBMUsableBytes != g.HBMBytes {
		t.Errorf("own hbm_bytes %v took the reference's usable reading %v", g.HBMBytes, g.HBMUsableBytes)
	}
	g, err = ParseGPU([]byte(strings.Replace(string(data), "hbm_bytes:", "hbm_usable_bytes: {value: 70e9, measured: \"a reading\"}\nhbm_bytes:", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if g.HBMUsableBytes != 70e9 {
		t.Errorf("own usable reading lost: %v", g.HBMUsableBytes)
	}
}

// TestCatalogDecodesOnDemand: a fresh catalog decodes no GPU or NIC record
// until one is asked for, then that record and the one it inherits from,
// each once; names and unknown-name errors need no record decoded.
func TestCatalogDecodesOnDemand(t *testing.T) {
	c, err := newCatalog()
	if err != nil {
		t.Fatal(err)
	}
	decoded := func() int64 { return recordsDecoded.Load() }
	start := decoded()
	if !slices.Equal(c.gpuNames, GPUNames()) || !slices.Equal(c.nicNames, NICNames()) || len(c.gpuNames) != len(wantGPUs) {
		t.Errorf("names %v %v", c.gpuNames, c.nicNames)
	}
	if _, err := c.gpuRecord("x"); err == nil || !strings.Contains(err.Error(), "h100-sxm") {
		t.Errorf("gpuRecord(x) = %v", err)
	}
	if d := decoded() - start; d != 0 {
		t.Fatalf("listing decoded %d records, want 0", d)
	}
	// h100-96gb-500w inherits h100-sxm (its file): two records, once each.
	for i, want := range []int64{2, 2} {
		g, err := c.gpus["h100-96gb-500w"].res()
		if err != nil || g.Name != "h100-96gb-500w" || g.Inherits != "h100-sxm" {
			t.Fatalf("resolve: %v %q %q", err, g.Name, g.Inherits)
		}
		if d := decoded() - start; d != want {
			t.Errorf("round %d: %d records decoded, want %d", i, d, want)
		}
	}
	if _, err := c.gpus["h100-sxm"].res(); err != nil {
		t.Fatal(err)
	}
	n, err := c.nics["ib-ndr-400"].res()
	if err != nil || n.Name != "ib-ndr-400" {
		t.Fatalf("NIC: %v %q", err, n.Name)
	}
	if d := decoded() - start; d != 3 {
		t.Errorf("%d records decoded, want 3 (h100-96gb-500w, h100-sxm, ib-ndr-400)", d)
	}
	// The lazily resolved GPU equals the package's.
	want, _ := LookupGPU("h100-96gb-500w")
	got, _ := c.gpus["h100-96gb-500w"].res()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fresh catalog's GPU differs from LookupGPU's")
	}
}

// TestCatalogConcurrentLookups resolves every record from many goroutines
// on a fresh catalog (run with -race): each gets the same values.
func TestCatalogConcurrentLookups(t *testing.T) {
	c, err := newCatalog()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8*len(c.gpuNames))
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, n := range c.gpuNames {
				g, err := c.gpus[n].res()
				if err == nil && g.Name != n {
					err = fmt.Errorf("%s resolved as %s", n, g.Name)
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestNICGbpsEqualsLookupNIC holds NICGbps to LookupNIC's line rate and
// error for every catalog NIC and an unknown name, and checks that
// LookupNIC still hands out copies of the source lists NICGbps shares.
func TestNICGbpsEqualsLookupNIC(t *testing.T) {
	for _, name := range append(NICNames(), "ib-edr-100", "") {
		n, nerr := LookupNIC(name)
		g, gerr := NICGbps(name)
		if fmt.Sprint(nerr) != fmt.Sprint(gerr) || g != n.Gbps {
			t.Errorf("NICGbps(%q) = %g, %v; LookupNIC: %g, %v", name, g, gerr, n.Gbps, nerr)
		}
		if nerr == nil && g <= 0 {
			t.Errorf("NICGbps(%q) = %g", name, g)
		}
	}
	a, _ := LookupNIC("ib-ndr-400")
	if len(a.Sources) == 0 {
		t.Fatal("ib-ndr-400 has no sources")
	}
	a.Sources[0] = "changed"
	if b, _ := LookupNIC("ib-ndr-400"); b.Sources[0] == "changed" {
		t.Error("LookupNIC's Sources is the catalog's, not a copy")
	}
}
