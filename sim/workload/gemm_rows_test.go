package workload

import (
	"math"
	"testing"
)

// TestGEMMTimePerFLOPWithRows pins that the GEMM price does not make a
// token dearer when a micro-batch adds rows (issue 16, round 19: r015's
// "compute" rose from micro-batch 1 to 2; the cause was the share of
// GEMMs beside the data-parallel collectives, not this price). The shapes
// are r015's MLP on one TP-8 rank (GPT 32B: hidden 7168, ffn 28672/8 =
// 3584), at micro-batch 1 and 2 of sequence 4096 (M = 4096, 8192 rows).
// Expected efficiencies are computed by hand from doc.go's formula
// MAMF × tiles/(waves·SMs) × K/(K + gemmK0), 128² tiles, 132 SMs, k0 392.
func TestGEMMTimePerFLOPWithRows(t *testing.T) {
	d := h100() // MAMF 0.803, 132 SMs, 2.2 µs per kernel
	const h, f = 7168, 3584
	for _, c := range []struct {
		name    string
		m, n, k int
		want    float64
	}{
		// fc1 forward (= fc2 dgrad): 32×28 = 896 tiles, ⌈896/132⌉ = 7 waves.
		{"fc1 fwd, M 4096", 4096, f, h, 0.803 * 896 / (7 * 132) * 7168 / (7168 + 392)},
		// 64×28 = 1792 tiles in 14 waves: the same busy fraction 896/924.
		{"fc1 fwd, M 8192", 8192, f, h, 0.803 * 1792 / (14 * 132) * 7168 / (7168 + 392)},
		// fc2 forward (= fc1 dgrad): 32×56 = 1792 tiles, 14 waves, K 3584.
		{"fc2 fwd, M 4096", 4096, h, f, 0.803 * 1792 / (14 * 132) * 3584 / (3584 + 392)},
		// 64×56 = 3584 tiles, ⌈27.15⌉ = 28 waves.
		{"fc2 fwd, M 8192", 8192, h, f, 0.803 * 3584 / (28 * 132) * 3584 / (3584 + 392)},
		// fc1 wgrad dB[7168×3584] = Aᵀ·dC: the tokens are the reduction,
		// 56×28 = 1568 tiles in 12 waves at either M; K/(K+k0) rises.
		{"fc1 wgrad, M 4096", h, f, 4096, 0.803 * 1568 / (12 * 132) * 4096 / (4096 + 392)},
		{"fc1 wgrad, M 8192", h, f, 8192, 0.803 * 1568 / (12 * 132) * 8192 / (8192 + 392)},
	} {
		if got := d.GEMMEfficiency(c.m, c.n, c.k, 1, BF16); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: efficiency %.6f, want %.6f", c.name, got, c.want)
		}
	}

	// The layer's six MLP GEMMs per token: micro-batch 2 must not cost more
	// than micro-batch 1 (at equal wave fractions only the 2.2 µs kernel
	// overhead and the wgrad's K/(K+k0) differ, both in favour of more rows).
	perToken := func(M int) float64 {
		var s float64
		for _, g := range [][3]int{{M, f, h}, {M, h, f}, {h, f, M}, {M, h, f}, {M, f, h}, {f, h, M}} {
			s += d.OpTime(gemmOp(g[0], g[1], g[2], 1, 2, 2), BF16)
		}
		return s / float64(M)
	}
	if a, b := perToken(4096), perToken(8192); b > a {
		t.Errorf("MLP GEMM time per token: M 4096 %.4g s, M 8192 %.4g s (rises)", a, b)
	}

	// Doubling the rows never lowers the efficiency: ⌈2T/S⌉ ≤ 2⌈T/S⌉ waves
	// hold 2T tiles, so the busy fraction cannot fall, and K is unchanged;
	// for a wgrad (rows are the reduction) the tiles stay and K/(K+k0)
	// rises. Wave steps between other row counts (e.g. 24576 → 32768 rows
	// of fc1, 41 → 55 waves, busy 0.993 → 0.987) are wave quantisation and
	// allowed.
	for _, nk := range [][2]int{{f, h}, {h, f}, {1536, 4096}, {4096, 1024}, {192, 768}, {2145, 1024}} {
		for m := 128; m <= 32768; m += 128 {
			n, k := nk[0], nk[1]
			if e1, e2 := d.GEMMEfficiency(m, n, k, 1, BF16), d.GEMMEfficiency(2*m, n, k, 1, BF16); e2 < e1 {
				t.Errorf("rows %d → %d (n %d, k %d): efficiency %.4f → %.4f", m, 2*m, n, k, e1, e2)
			}
			if e1, e2 := d.GEMMEfficiency(n, k, m, 1, BF16), d.GEMMEfficiency(n, k, 2*m, 1, BF16); e2 < e1 {
				t.Errorf("wgrad reduction %d → %d (%d×%d): efficiency %.4f → %.4f", m, 2*m, n, k, e1, e2)
			}
		}
	}
}
