package parallel

import (
	"math"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/workload"
)

// TestExpectedDistinct checks D(E, R, k) = R·(1 − C(E−E/R, k)/C(E, k))
// against hand-computed values.
func TestExpectedDistinct(t *testing.T) {
	cases := []struct {
		e, r, k int
		want    float64
	}{
		// top-8 of 128 experts over 8 ranks of 16: C(112,8)/C(128,8) =
		// Π_{i<8} (112−i)/(128−i) = 0.332580…, 8·(1 − 0.332580) = 5.33936.
		{128, 8, 8, 5.339356895383487},
		// 16 ranks of 8: C(120,8)/C(128,8) = 0.587718…, 16·0.412282 = 6.59651.
		{128, 16, 8, 6.596512811001903},
		{128, 32, 8, 7.359370078740156},
		{128, 64, 8, 7.7795275590551185},
		// one expert per rank: every choice is a distinct rank, D = k.
		{128, 128, 8, 8},
		// two domains of 64: C(64,8)/C(128,8) = 0.0030959, 2·0.9969 = 1.99381.
		{128, 2, 8, 1.9938082714464158},
		// small: 8 experts, 2 ranks, top-2: C(4,2)/C(8,2) = 6/28, 2·22/28 = 11/7.
		{8, 2, 2, 11.0 / 7},
		// one group holds every expert.
		{128, 1, 8, 1},
		// not an even split, or bad input: the all-to-all's k copies.
		{100, 3, 8, 8},
		{128, 0, 8, 8},
		{4, 2, 8, 8},
	}
	for _, c := range cases {
		if got := ExpectedDistinct(c.e, c.r, c.k); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("ExpectedDistinct(%d, %d, %d) = %.15g, want %.15g", c.e, c.r, c.k, got, c.want)
		}
	}
}

func TestParseEPBackend(t *testing.T) {
	for i, n := range EPBackendNames {
		b, err := ParseEPBackend(n)
		if err != nil || b != EPBackend(i) || b.String() != n {
			t.Errorf("%s: %v %v", n, b, err)
		}
	}
	_, err := ParseEPBackend("mori")
	if err == nil || err.Error() != `parallel.ep_backend: unknown value "mori" (valid: nccl, deepep, hybridep)` {
		t.Errorf("error %v", err)
	}
	// Sources: Megatron _DeepepManager (20); hybrid-ep config.cuh (24 / 8).
	if EPNCCL.DefaultSMs(false) != 0 || EPDeepEP.DefaultSMs(true) != 20 ||
		EPHybridEP.DefaultSMs(false) != 24 || EPHybridEP.DefaultSMs(true) != 8 {
		t.Error("default SMs")
	}
}

// TestEPBytes checks the dispatch bytes per backend: Qwen3-30B-A3B-like
// (128 experts, top-8, hidden 2048) at 4096 tokens per rank, EP 8, FP8.
func TestEPBytes(t *testing.T) {
	l, err := NewLayout(1, 1, 8, 8, 1, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
	if err != nil {
		t.Fatal(err)
	}
	m := workload.Model{Hidden: 2048, MoE: &workload.MoE{Experts: 128, TopK: 8}}
	sh := workload.Shape{MicroBatch: 1, Seq: 4096, Dtype: workload.FP8, TP: 1, CP: 1, EP: 8}
	for _, c := range []struct {
		be   EPBackend
		want float64
	}{
		// NCCL: 4096 tokens × 8 copies × 2048 × 1 byte (FP8 compute width).
		{EPNCCL, 4096 * 8 * 2048 * 1},
		// DeepEP/HybridEP: 4096 × D(128, 8, 8) × 2048 × 2 bytes (bf16).
		{EPDeepEP, 4096 * 5.339356895383487 * 2048 * 2},
		{EPHybridEP, 4096 * 5.339356895383487 * 2048 * 2},
	} {
		b := &builder{cfg: &StepConfig{Layout: l, Model: m, Shape: sh, EPBackend: c.be}}
		if got := b.a2aBytes(); math.Abs(got-c.want) > 1e-6*c.want {
			t.Errorf("%s: %.0f bytes, want %.0f", c.be, got, c.want)
		}
	}
	// With sequence parallelism the tokens are split over TP first.
	sh.TP, sh.SP = 2, true
	b := &builder{cfg: &StepConfig{Layout: l, Model: m, Shape: sh, EPBackend: EPHybridEP}}
	if got, want := b.a2aBytes(), 2048*5.339356895383487*2048*2; math.Abs(got-want) > 1e-6*want {
		t.Errorf("SP: %.0f, want %.0f", got, want)
	}
}

// TestEPDispatchTime checks the pricing against the tables by hand.
func TestEPDispatchTime(t *testing.T) {
	hy8 := (550.10 + 538.44) / 2 // HybridEP GB200, 8 ranks, 16 SMs, GB/s
	hy8s32 := (545.71 + 568.94) / 2
	cases := []struct {
		name  string
		d     EPDispatch
		bytes float64
		want  float64 // seconds
	}{
		// One NVLink domain at a measured point: bytes / 544.27 GB/s.
		{"nvl measured", EPDispatch{Backend: EPHybridEP, SMs: 16, Experts: 128, TopK: 8, Ranks: 8, Domains: 1, ScaleUpBW: 900e9},
			544.27e6, 544.27e6 / (hy8 * 1e9)},
		// 24 SMs: halfway between the 16- and 32-SM columns.
		{"nvl sms interpolated", EPDispatch{Backend: EPHybridEP, SMs: 24, Experts: 128, TopK: 8, Ranks: 8, Domains: 1, ScaleUpBW: 900e9},
			1e9, 1e9 / ((hy8 + hy8s32) / 2 * 1e9)},
		// H100 NVLink (450 GB/s) gets the same fraction: half the bandwidth.
		{"nvl other gpu", EPDispatch{Backend: EPHybridEP, SMs: 16, Experts: 128, TopK: 8, Ranks: 8, Domains: 1, ScaleUpBW: 450e9},
			1e9, 1e9 / (hy8 / 2 * 1e9)},
		// 12 ranks: halfway between 8 and 16 (both at 16 SMs).
		{"nvl ranks interpolated", EPDispatch{Backend: EPHybridEP, SMs: 16, Experts: 96, TopK: 8, Ranks: 12, Domains: 1, ScaleUpBW: 900e9},
			1e9, 1e9 / ((hy8 + (472.84+474.48)/2) / 2 * 1e9)},
		// Below the measured SMs and above the measured ranks: clamped.
		{"nvl clamped", EPDispatch{Backend: EPHybridEP, SMs: 4, Experts: 128, TopK: 8, Ranks: 64, Domains: 1, ScaleUpBW: 900e9},
			1e9, 1e9 / ((469.96 + 418.27) / 2 * 1e9)},
		// H100 over 2 nodes, EP 16, 8 SMs: per-token bytes B/D(128,16,8)
		// to D(128,2,8) domains at 57.35 GB/s; NVLink leg B/(272.135 GB/s)
		// is shorter (B·1.99381/6.59651/57.35 = B/189.74 GB/s).
		{"rdma", EPDispatch{Backend: EPHybridEP, SMs: 8, Experts: 128, TopK: 8, Ranks: 16, Domains: 2, ScaleUpBW: 450e9, NICBW: 50e9},
			1e9, 1e9 / 6.596512811001903 * 1.9938082714464158 / ((57.74 + 56.96) / 2 * 1e9)},
		// DeepEP over 4 nodes (one column): 57.5 GB/s.
		{"deepep rdma", EPDispatch{Backend: EPDeepEP, SMs: 20, Experts: 128, TopK: 8, Ranks: 32, Domains: 4, ScaleUpBW: 450e9, NICBW: 50e9},
			1e9, 1e9 / 7.359370078740156 * 3.6290109244257005 / (57.5e9)},
		// DeepEP in one domain at 24 SMs, 16 ranks: (442.47+378.32)/2.
		{"deepep nvl", EPDispatch{Backend: EPDeepEP, SMs: 24, Experts: 128, TopK: 8, Ranks: 16, Domains: 1, ScaleUpBW: 900e9},
			1e9, 1e9 / ((442.47 + 378.32) / 2 * 1e9)},
	}
	for _, c := range cases {
		got, err := c.d.Time(c.bytes)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if want := engine.Seconds(c.want); got < want-1 || got > want+1 {
			t.Errorf("%s: %d ns, want %d", c.name, got, want)
		}
	}
	for _, c := range []struct {
		d    EPDispatch
		want string
	}{
		{EPDispatch{Backend: EPNCCL, Ranks: 8, Domains: 1, ScaleUpBW: 900e9}, "nccl is priced as an all-to-all"},
		{EPDispatch{Backend: EPHybridEP, SMs: 24, Experts: 128, TopK: 8, Ranks: 8, Domains: 1}, "needs a scale-up fabric"},
		{EPDispatch{Backend: EPHybridEP, SMs: 8, Experts: 128, TopK: 8, Ranks: 16, Domains: 2, ScaleUpBW: 450e9}, "needs a NIC bandwidth"},
	} {
		if _, err := c.d.Time(1e6); err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "parallel.ep_backend: ") {
			t.Errorf("%+v: error %v, want %q", c.d, err, c.want)
		}
	}
}
