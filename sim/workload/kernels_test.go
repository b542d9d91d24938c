package workload

import "testing"

// TestKernelIntensity: the roofline lesson's arithmetic intensities at bf16.
func TestKernelIntensity(t *testing.T) {
	const n = 1048576
	for _, c := range []struct {
		kind    string
		m, n, k int
		want    float64
	}{
		{"relu", 0, n, 0, 0.25},               // 1 FLOP / (2 + 2) bytes
		{"gelu", 0, n, 0, 5},                  // 20 / 4
		{"layernorm", 0, n, 0, 2},             // 8 / 4
		{"softmax", 0, n, 0, 1.25},            // 5 / 4
		{"dot", 0, n, 0, 2.0 * n / (4*n + 2)}, // ≈ 0.5
		{"matvec", 0, 4096, 0, 2 * 4096.0 * 4096 / (2 * (4096*4096 + 2*4096))}, // ≈ 1
		{"matmul", 0, 1024, 0, 1024.0 / 3},                                     // 2n³ / (3·2n²) ≈ 341.3
		{"matmul", 512, 1024, 256, 2 * 512 * 1024 * 256.0 / (2 * (512*256 + 256*1024 + 512*1024))},
	} {
		op, err := KernelOp(c.kind, c.m, c.n, c.k, BF16)
		if err != nil {
			t.Fatal(err)
		}
		if got := op.FLOPs / op.Bytes(); !near(got, c.want, 1e-12) {
			t.Errorf("%s %d×%d×%d: %v FLOP/byte, want %v", c.kind, c.m, c.n, c.k, got, c.want)
		}
	}
	for _, bad := range []struct {
		kind    string
		m, n, k int
	}{{"relu", 0, 0, 0}, {"matmul", -1, 4, 0}, {"conv", 0, 4, 0}, {"matmul", 0, 4, -2}} {
		if _, err := KernelOp(bad.kind, bad.m, bad.n, bad.k, BF16); err == nil {
			t.Errorf("%+v: want an error", bad)
		}
	}
}
