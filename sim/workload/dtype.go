package workload

import (
	"fmt"
	"strings"
)

// dtypeInfo is the static description of one Dtype.
type dtypeInfo struct {
	name string
	// bits per value including the amortised block-scale overhead.
	bits float64
}

// dtypeTable is indexed by Dtype. Sources:
//   - fp32/fp16/bf16: IEEE 754 binary32/binary16 and bfloat16 (1+8+7 bits).
//   - tf32: NVIDIA A100 whitepaper — a tensor-core input format with a
//     10-bit mantissa; tensors are stored in memory as fp32 (4 bytes).
//   - fp8: OCP 8-bit floating point spec (E4M3, E5M2), 1 byte.
//   - fp4: OCP MX spec v1.0 element type E2M1, 4 bits, no scale.
//   - mxfp4: OCP MX spec v1.0: blocks of 32 E2M1 values share one 8-bit
//     power-of-two (E8M0) scale: (32·4 + 8)/32 = 4.25 bits/value.
//   - nvfp4: NVIDIA Blackwell NVFP4: blocks of 16 E2M1 values share one FP8
//     E4M3 scale, plus one fp32 scale per tensor: (16·4 + 8)/16 = 4.5
//     bits/value (the per-tensor 32 bits are negligible and not counted).
var dtypeTable = [...]dtypeInfo{
	FP32:  {"fp32", 32},
	TF32:  {"tf32", 32},
	FP16:  {"fp16", 16},
	BF16:  {"bf16", 16},
	FP8:   {"fp8", 8},
	FP4:   {"fp4", 4},
	MXFP4: {"mxfp4", 4 + 8.0/32},
	NVFP4: {"nvfp4", 4 + 8.0/16},
}

// dtypeAliases are extra spellings accepted by ParseDtype.
var dtypeAliases = map[string]Dtype{
	"float32": FP32, "float16": FP16, "bfloat16": BF16,
	"fp8-e4m3": FP8, "fp8-e5m2": FP8, "e4m3": FP8, "e5m2": FP8,
	"e2m1": FP4, "fp4-e2m1": FP4,
}

// DtypeNames lists the canonical dtype names in Dtype order.
func DtypeNames() []string {
	names := make([]string, len(dtypeTable))
	for i, d := range dtypeTable {
		names[i] = d.name
	}
	return names
}

// ParseDtype parses a dtype name (case-insensitive). The error lists the
// valid names.
func ParseDtype(s string) (Dtype, error) {
	k := strings.ToLower(strings.TrimSpace(s))
	for i, d := range dtypeTable {
		if d.name == k {
			return Dtype(i), nil
		}
	}
	if d, ok := dtypeAliases[k]; ok {
		return d, nil
	}
	return 0, fmt.Errorf("unknown dtype %q (valid: %s)", s, strings.Join(DtypeNames(), ", "))
}

// Valid reports whether d is one of the defined dtypes.
func (d Dtype) Valid() bool { return int(d) < len(dtypeTable) }

// String is the canonical name ("bf16"); an undefined value prints as
// "dtype(N)".
func (d Dtype) String() string {
	if !d.Valid() {
		return fmt.Sprintf("dtype(%d)", uint8(d))
	}
	return dtypeTable[d].name
}

// Bits per value, including the amortised block-scale overhead for MXFP4
// (4.25) and NVFP4 (4.5). Zero for an undefined dtype.
func (d Dtype) Bits() float64 {
	if !d.Valid() {
		return 0
	}
	return dtypeTable[d].bits
}

// Bytes per value, including block-scale overhead for MXFP4/NVFP4
// (0.53125 and 0.5625). Zero for an undefined dtype.
func (d Dtype) Bytes() float64 { return d.Bits() / 8 }

// StorageBytes is the width of an activation held in HBM, and so of an
// activation sent between GPUs (pipeline sends, context-parallel K/V,
// expert-parallel dispatch), when the compute dtype is d (see storageBytes).
func (d Dtype) StorageBytes() float64 { return d.storageBytes() }

// storageBytes is the size of an activation or weight held in HBM when the
// compute dtype is d. FP8 and FP4 training recipes (Transformer Engine,
// Micikevicius et al. arXiv:2209.05433) keep weights and activations in bf16
// and cast to the narrow format only as GEMM inputs, so narrow formats store
// 2 bytes; tf32 tensors are fp32 in memory.
func (d Dtype) storageBytes() float64 {
	switch d {
	case FP8, FP4, MXFP4, NVFP4:
		return 2
	}
	if b := d.Bytes(); b > 0 {
		return b
	}
	return 2
}

// StorageDtype is the dtype a tensor of compute dtype d is held in (see
// storageBytes): bf16 for the narrow training formats, fp32 for tf32.
func (d Dtype) StorageDtype() Dtype {
	switch d {
	case FP8, FP4, MXFP4, NVFP4:
		return BF16
	case TF32:
		return FP32
	}
	return d
}
