package workload

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestDtypeBytes(t *testing.T) {
	for _, c := range []struct {
		name  string
		d     Dtype
		bits  float64
		bytes float64
	}{
		{"fp32", FP32, 32, 4},
		{"tf32", TF32, 32, 4}, // stored as fp32
		{"fp16", FP16, 16, 2},
		{"bf16", BF16, 16, 2},
		{"fp8", FP8, 8, 1},
		{"fp4", FP4, 4, 0.5},
		{"mxfp4", MXFP4, 4.25, 0.53125}, // (32·4 + 8)/32 bits
		{"nvfp4", NVFP4, 4.5, 0.5625},   // (16·4 + 8)/16 bits
	} {
		d, err := ParseDtype(c.name)
		if err != nil || d != c.d {
			t.Fatalf("ParseDtype(%q) = %v, %v", c.name, d, err)
		}
		if d.String() != c.name || d.Bits() != c.bits || d.Bytes() != c.bytes {
			t.Errorf("%s: String %q Bits %v Bytes %v, want %v %v", c.name, d, d.Bits(), d.Bytes(), c.bits, c.bytes)
		}
	}
	if d, err := ParseDtype(" BF16 "); err != nil || d != BF16 {
		t.Errorf("ParseDtype is not case/space tolerant: %v %v", d, err)
	}
	if d, err := ParseDtype("e5m2"); err != nil || d != FP8 {
		t.Errorf("e5m2 alias: %v %v", d, err)
	}
	_, err := ParseDtype("fp64")
	if err == nil || !strings.Contains(err.Error(), "fp32, tf32, fp16, bf16, fp8, fp4, mxfp4, nvfp4") {
		t.Errorf("unknown dtype error should list the valid names: %v", err)
	}
	if Dtype(200).String() != "dtype(200)" || Dtype(200).Bytes() != 0 {
		t.Error("undefined dtype must not panic and has no size")
	}
}

func TestFP4Values(t *testing.T) {
	want := []float64{0, 0.5, 1, 1.5, 2, 3, 4, 6}
	if got := FP4Values(); !slices.Equal(got, want) {
		t.Errorf("FP4Values = %v, want %v", got, want)
	}
	for _, c := range []struct{ in, want float64 }{
		{0.6, 0.5}, {-0.6, -0.5}, {2.4, 2}, {2.6, 3}, {5.1, 6}, {100, 6}, {-100, -6},
		// ties go to the even mantissa: 0.25 → 0, 0.75 → 1, 1.25 → 1, 1.75 → 2, 2.5 → 2, 3.5 → 4, 5 → 4
		{0.25, 0}, {0.75, 1}, {1.25, 1}, {1.75, 2}, {2.5, 2}, {3.5, 4}, {5, 4},
	} {
		if got := RoundFP4(c.in); got != c.want {
			t.Errorf("RoundFP4(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	if !math.IsNaN(RoundFP4(math.NaN())) {
		t.Error("RoundFP4(NaN) must stay NaN")
	}
}

// TestFP4WorkedExamples reproduces the course's block-scaling examples.
func TestFP4WorkedExamples(t *testing.T) {
	// [12, −6, 3, 1.2] / 2 = [6, −3, 1.5, 0.6] → E2M1 [6, −3, 1.5, 0.5] → ×2.
	got, err := QuantizeFP4(nil, []float64{12, -6, 3, 1.2}, 2)
	if err != nil || !slices.Equal(got, []float64{12, -6, 3, 1}) {
		t.Errorf("QuantizeFP4 scale 2 = %v, %v; want [12 -6 3 1]", got, err)
	}
	x := []float64{1, 1, 1, 1, 1, 1, 1, 60}
	// One block of 8: scale 60/6 = 10; 1/10 = 0.1 rounds to 0 → the ones are lost.
	q8, s8, err := QuantizeFP4Blocks(x, 8, ScaleAbsMax)
	if err != nil || !slices.Equal(q8, []float64{0, 0, 0, 0, 0, 0, 0, 60}) || !slices.Equal(s8, []float64{10}) {
		t.Errorf("block 8 = %v scales %v (%v)", q8, s8, err)
	}
	// Blocks of 4: the first block's scale is 1/6 and 1·6 = 6 is exact, so
	// the ones survive; the outlier's block still loses its ones.
	q4, s4, err := QuantizeFP4Blocks(x, 4, ScaleAbsMax)
	if err != nil || !slices.Equal(q4[:4], []float64{1, 1, 1, 1}) || q4[7] != 60 || s4[0] != 1.0/6 {
		t.Errorf("block 4 = %v scales %v (%v)", q4, s4, err)
	}
	// MXFP4's power-of-two scale: amax 1 → 2^(0−2) = 0.25 keeps the ones;
	// amax 60 → 2^(5−2) = 8, and 60/8 = 7.5 saturates to 6 → 48.
	qm, sm, _ := QuantizeFP4Blocks(x, 4, ScalePow2)
	if !slices.Equal(qm, []float64{1, 1, 1, 1, 0, 0, 0, 48}) || !slices.Equal(sm, []float64{0.25, 8}) {
		t.Errorf("MXFP4 blocks = %v scales %v", qm, sm)
	}
	// NVFP4: amax/6 rounded to E4M3: 1/6 = 0.1667 → 0.171875 (1.375·2^-3);
	// 1/0.171875 = 5.82 → 6 → 1.03125.
	qn, sn, _ := QuantizeFP4Blocks([]float64{1, 1}, 16, ScaleE4M3)
	if sn[0] != 0.171875 || qn[0] != 6*0.171875 {
		t.Errorf("NVFP4 block = %v scales %v", qn, sn)
	}
	if _, _, err := QuantizeFP4Blocks(x, 0, ScaleAbsMax); err == nil || !strings.Contains(err.Error(), "block size") {
		t.Errorf("block 0 must be an error: %v", err)
	}
	if _, err := QuantizeFP4(nil, x, -1); err == nil {
		t.Error("negative scale must be an error")
	}
	if _, _, err := QuantizeFP4Blocks([]float64{math.Inf(1)}, 4, ScaleAbsMax); err == nil {
		t.Error("infinite input must be an error")
	}
}

func TestFP8Rounding(t *testing.T) {
	for _, c := range []struct {
		name     string
		f        func(float64) float64
		in, want float64
	}{
		{"e4m3 max", RoundFP8E4M3, 448, 448},
		{"e4m3 saturates", RoundFP8E4M3, 1e6, FP8E4M3Max},
		{"e4m3 step at 256 is 32", RoundFP8E4M3, 300, 288},
		{"e4m3 tie to even", RoundFP8E4M3, 1.0625, 1}, // halfway between 1 and 1.125
		{"e4m3 smallest subnormal", RoundFP8E4M3, 0.001953125, 0.001953125},
		{"e5m2 max", RoundFP8E5M2, 57344, 57344},
		{"e5m2 saturates", RoundFP8E5M2, -1e9, -FP8E5M2Max},
		{"e5m2 step at 1 is 0.25", RoundFP8E5M2, 1.1, 1},
	} {
		if got := c.f(c.in); got != c.want {
			t.Errorf("%s: %v → %v, want %v", c.name, c.in, got, c.want)
		}
	}
}
