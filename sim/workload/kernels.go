package workload

import (
	"fmt"
	"strings"
)

// kernelKinds are the textbook kernels KernelOp describes.
var kernelKinds = []string{"relu", "gelu", "dot", "matvec", "matmul", "layernorm", "softmax"}

// KernelKinds lists the kinds KernelOp accepts.
func KernelKinds() []string { return append([]string(nil), kernelKinds...) }

// KernelOp is one textbook kernel at dtype dt, with every operand read from
// and every result written to HBM once (the roofline lesson's accounting):
//
//	relu       n elements: n FLOPs (a max), read n, write n values
//	gelu       n elements: 20·n FLOPs (tanh form, see ops.go), read n, write n
//	layernorm  n elements: 8·n FLOPs, read n, write n
//	softmax    n elements: 5·n FLOPs, read n, write n
//	dot        two n-vectors: 2·n FLOPs, read 2n, write 1
//	matvec     A[m×k]·x[k]: 2·m·k FLOPs, read m·k + k, write m (m, k default n)
//	matmul     A[m×k]·B[k×n]: 2·m·n·k FLOPs, read m·k + k·n, write m·n (m, k default n)
//
// so at 2 bytes per value relu does 0.25 FLOP/byte, gelu 5, dot ≈ 0.5,
// matvec ≈ 1 and a square matmul n/3. matmul is a ClassGEMM op; the others
// are ClassMemory (vector units). Sizes must be positive.
func KernelOp(kind string, m, n, k int, dt Dtype) (Op, error) {
	if n <= 0 {
		return Op{}, fmt.Errorf("n: %d must be positive", n)
	}
	if m == 0 {
		m = n
	}
	if k == 0 {
		k = n
	}
	if m < 0 {
		return Op{}, fmt.Errorf("m: %d must be positive", m)
	}
	if k < 0 {
		return Op{}, fmt.Errorf("k: %d must be positive", k)
	}
	if !dt.Valid() {
		return Op{}, fmt.Errorf("unknown dtype %v", dt)
	}
	b := dt.Bytes()
	N, M, K := float64(n), float64(m), float64(k)
	o := Op{Name: kind, Class: ClassMemory, Batch: 1}
	elementwise := func(f float64) { o.FLOPs, o.BytesRead, o.BytesWritten = f*N, N*b, N*b }
	switch kind {
	case "relu":
		elementwise(1)
	case "gelu":
		elementwise(flopsGELU)
	case "layernorm":
		elementwise(flopsLayerNorm)
	case "softmax":
		elementwise(flopsSoftmax)
	case "dot":
		o.FLOPs, o.BytesRead, o.BytesWritten = 2*N, 2*N*b, b
	case "matvec":
		o.FLOPs, o.BytesRead, o.BytesWritten = 2*M*K, (M*K+K)*b, M*b
	case "matmul":
		o = gemmOp(m, n, k, 1, b, b)
		o.Name = kind
	default:
		return Op{}, fmt.Errorf("kind: unknown value %q (valid: %s)", kind, strings.Join(kernelKinds, ", "))
	}
	return o, nil
}
