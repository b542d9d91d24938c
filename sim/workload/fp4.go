package workload

import (
	"errors"
	"fmt"
	"math"
)

// FP8 E4M3 and E5M2 largest finite magnitudes (OCP 8-bit floating point
// specification, 2023): E4M3 has no infinities and uses S.1111.111 for NaN, so
// its largest value is 1.75·2^8 = 448; E5M2 follows IEEE rules, largest
// 1.75·2^15 = 57344.
const (
	FP8E4M3Max = 448.0
	FP8E5M2Max = 57344.0
	// FP4E2M1Max is the largest E2M1 magnitude (OCP MX spec v1.0): 1.5·2^2.
	FP4E2M1Max = 6.0
)

// fp4Grid holds the non-negative E2M1 values in increasing order: exponent
// bias 1, one mantissa bit, a subnormal 0.5 (OCP MX spec v1.0 §5.3.3).
var fp4Grid = [8]float64{0, 0.5, 1, 1.5, 2, 3, 4, 6}

// FP4Values returns the non-negative values representable in FP4 E2M1:
// 0, 0.5, 1, 1.5, 2, 3, 4, 6 (and their negatives).
func FP4Values() []float64 { return append([]float64(nil), fp4Grid[:]...) }

// RoundFP4 rounds x to the nearest E2M1 value, ties to the value with an even
// mantissa bit (IEEE round-half-to-even), saturating at ±6. NaN stays NaN.
func RoundFP4(x float64) float64 {
	if math.IsNaN(x) {
		return x
	}
	a := math.Abs(x)
	r := FP4E2M1Max
	for i := 1; i < len(fp4Grid); i++ {
		lo, hi := fp4Grid[i-1], fp4Grid[i]
		if a > hi {
			continue
		}
		mid := (lo + hi) / 2
		switch {
		case a < mid:
			r = lo
		case a > mid:
			r = hi
		default: // tie: codes 0,2,4,6 of the grid have an even mantissa bit
			if (i-1)%2 == 0 {
				r = lo
			} else {
				r = hi
			}
		}
		break
	}
	return math.Copysign(r, x)
}

// RoundFP8E4M3 rounds x to the nearest FP8 E4M3 value (bias 7, 3 mantissa
// bits, subnormals down to 2^-9), ties to even, saturating at ±448 (the
// "satfinite" conversion used for scales and GEMM inputs).
func RoundFP8E4M3(x float64) float64 { return roundMiniFloat(x, 3, -6, FP8E4M3Max) }

// RoundFP8E5M2 rounds x to the nearest FP8 E5M2 value (bias 15, 2 mantissa
// bits, subnormals down to 2^-16), ties to even, saturating at ±57344.
func RoundFP8E5M2(x float64) float64 { return roundMiniFloat(x, 2, -14, FP8E5M2Max) }

// roundMiniFloat rounds to a binary format with mbits mantissa bits, minimum
// normal exponent emin and largest finite value max.
func roundMiniFloat(x float64, mbits int, emin int, max float64) float64 {
	if math.IsNaN(x) || x == 0 {
		return x
	}
	a := math.Abs(x)
	if a >= max {
		return math.Copysign(max, x)
	}
	_, e := math.Frexp(a) // a = f·2^e, f in [0.5, 1)
	e--                   // a = 1.xxx · 2^e
	if e < emin {
		e = emin // subnormal: fixed quantum
	}
	q := math.Ldexp(1, e-mbits) // spacing of representable values
	r := math.RoundToEven(a/q) * q
	if r > max {
		r = max
	}
	return math.Copysign(r, x)
}

// QuantizeFP4 returns x quantized to FP4 E2M1 with one shared scale and
// dequantized again: RoundFP4(x/scale)·scale, appended to dst. This is the
// worked example of the docs: [12, −6, 3, 1.2] with scale 2 gives
// [12, −6, 3, 1] (1.2/2 = 0.6 rounds to 0.5).
func QuantizeFP4(dst, x []float64, scale float64) ([]float64, error) {
	if !(scale > 0) || math.IsInf(scale, 0) {
		return dst, fmt.Errorf("fp4 scale: %v must be positive and finite", scale)
	}
	for _, v := range x {
		dst = append(dst, RoundFP4(v/scale)*scale)
	}
	return dst, nil
}

// ScaleRule says how a block's shared scale is chosen from its largest
// magnitude amax.
type ScaleRule uint8

const (
	// ScaleAbsMax maps amax exactly onto the largest E2M1 value: amax/6.
	ScaleAbsMax ScaleRule = iota
	// ScalePow2 is the MXFP4 rule (OCP MX spec v1.0 §6.3): an E8M0 scale
	// 2^(floor(log2 amax) − 2), 2 being E2M1's largest exponent; values
	// above 6·scale saturate.
	ScalePow2
	// ScaleE4M3 is the NVFP4 rule: amax/6 rounded to FP8 E4M3 (the
	// per-tensor fp32 scale is taken as 1).
	ScaleE4M3
)

// QuantizeFP4Blocks quantizes x to FP4 E2M1 in consecutive blocks of block
// values, each with its own scale chosen by rule, and returns the dequantized
// values and the per-block scales. An all-zero block gets scale 1. A single
// outlier shrinks the resolution of its whole block: [1,1,1,1,1,1,1,60] in one
// block of 8 (scale 10) loses the ones (1/10 rounds to 0); in blocks of 4 the
// first block (scale 1/6) keeps them exactly.
func QuantizeFP4Blocks(x []float64, block int, rule ScaleRule) (q, scales []float64, err error) {
	if block <= 0 {
		return nil, nil, fmt.Errorf("fp4 block size: %d must be positive", block)
	}
	if rule > ScaleE4M3 {
		return nil, nil, errors.New("fp4 scale rule: unknown (valid: absmax, pow2, e4m3)")
	}
	q = make([]float64, 0, len(x))
	for start := 0; start < len(x); start += block {
		end := min(start+block, len(x))
		amax := 0.0
		for _, v := range x[start:end] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, nil, fmt.Errorf("fp4 input[%d]: %v is not finite", start, v)
			}
			amax = math.Max(amax, math.Abs(v))
		}
		scale := 1.0
		if amax > 0 {
			switch rule {
			case ScaleAbsMax:
				scale = amax / FP4E2M1Max
			case ScalePow2:
				scale = math.Ldexp(1, int(math.Floor(math.Log2(amax)))-2)
			case ScaleE4M3:
				scale = RoundFP8E4M3(amax / FP4E2M1Max)
				if scale == 0 { // below E4M3's smallest subnormal
					scale = math.Ldexp(1, -9)
				}
			}
		}
		scales = append(scales, scale)
		q, _ = QuantizeFP4(q, x[start:end], scale)
	}
	return q, scales, nil
}
