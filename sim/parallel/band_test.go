package parallel

import (
	"testing"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/workload"
)

// TestBandTiles: on a 132-SM GPU a GEMM of T 128² tiles with 66 < T < 132
// runs in two waves once b ≥ 132 − T + 1 communication CTAs run beside it
// (⌈T/(132 − b)⌉ = 2); 132 tiles or more are full grids (fullGrid), 66 or
// fewer fit in the 66 SMs the executor always leaves.
func TestBandTiles(t *testing.T) {
	c := &blockCache{cfg: &StepConfig{GEMMSMs: 132}}
	cases := []struct {
		m, n, batch int
		ctas        int32
	}{
		{2048, 1024, 1, 5},      // 16·8 = 128 tiles: two waves from b = 132 − 128 + 1 = 5
		{2048, 1040, 1, 0},      // 16·9 = 144 tiles: a full grid (fullGrid), not band
		{117 * 128, 128, 1, 16}, // 117 tiles: from 16 CTAs, H100's ctas_scale_out
		{116 * 128, 128, 1, 17}, // 116 tiles: one wave beside 16 CTAs
		{131 * 128, 100, 1, 2},  // 131 tiles (a partial tile counts)
		{132 * 128, 128, 1, 0},  // 132 tiles: full grid
		{67 * 128, 128, 1, 66},  // 67 tiles: only at b = 66 = SMs/2, the cap
		{66 * 128, 128, 1, 0},   // 66 tiles: never two waves
		{128, 128, 120, 13},     // 120 batched tiles
	}
	for _, tc := range cases {
		op := workload.Op{Class: workload.ClassGEMM, M: tc.m, N: tc.n, K: 4096, Batch: tc.batch}
		if got := c.bandTiles(op); got != tc.ctas {
			t.Errorf("%d×%d×%d: bandTiles %d, want %d", tc.batch, tc.m, tc.n, got, tc.ctas)
		}
		if full := c.fullGrid(op); full != (workload.GEMMTiles(op) >= 132) {
			t.Errorf("%d×%d×%d: fullGrid %v", tc.batch, tc.m, tc.n, full)
		}
	}
	op := workload.Op{Class: workload.ClassMemory, M: 2048, N: 1024}
	if got := c.bandTiles(op); got != 0 {
		t.Errorf("memory op: bandTiles %d, want 0", got)
	}
}

// TestInterferenceBand: a compute task of D = 1,000,000 ns, all band GEMM
// (taskBand share 65535), beside a DP collective that holds 16 of 132 SMs
// for longer than the task. With the threshold at 16 CTAs (117 tiles) the
// GEMM runs in ⌈117/116⌉ = 2 waves: rate 132·132·116·65535 /
// (2·65535·132·116) = 66, end 2,000,000, as a full grid (GEMMShare 65535)
// does. At 17 CTAs (116 tiles, one wave on the 116 free SMs) it keeps the
// fluid rate 116: end ⌈1,000,000·132/116⌉ = 1,137,932. Half band (share
// 32767): rate ⌊132·132·116·65535 / (2·32767·132·116 + 32768·132·132)⌋ =
// 84 SM-ns/ns (time per unit 2/2 + 132/116/2 = 1.569), end
// ⌈132,000,000/84⌉ = 1,571,429.
func TestInterferenceBand(t *testing.T) {
	const D = 1000000
	iv := Interference{132, hardware.CommCTAs{ScaleUp: 24, ScaleOut: 16, P2P: 2}, 0, true}
	cases := []struct {
		name    string
		task    Task
		band    []taskBand
		wantEnd engine.Time
	}{
		{"full grid", gemm(D, 65535), nil, 2000000},
		{"band at 16 CTAs", compute(D), []taskBand{{0, 65535, 16}}, 2000000},
		{"band at 17 CTAs", compute(D), []taskBand{{0, 65535, 17}}, 1137932},
		{"half band at 16 CTAs", compute(D), []taskBand{{0, 32767, 16}}, 1571429},
		{"no band", compute(D), nil, 1137932},
	}
	for _, c := range cases {
		p := handProgram([]Task{c.task, coll(GroupDP, StreamDP, 3*D)}, [][]int32{nil, nil})
		p.bands = c.band
		start, end := runInterfered(t, p, iv)
		if end[0] != c.wantEnd || start[0] != 0 {
			t.Errorf("%s: compute task [%d, %d], want [0, %d]", c.name, start[0], end[0], c.wantEnd)
		}
	}
}

// TestGEMMBandBuild: the test model's mlp_fwd is fc1 (128 × 4096: 1·32
// tiles), fc2 (128 × 1024: 8 tiles) and three other ops, priced 3 µs per
// GEMM and 1 µs per other op (9 µs). GEMMSMs 40 puts fc1 in the band
// (20 < 32 < 40): band share ⌊3·65535/9⌋ = 21845 from 40 − 32 + 1 = 9
// CTAs, GEMMShare 0. GEMMSMs 32 makes fc1 a full grid: GEMMShare 21845,
// no band (fc2's 8 tiles ≤ 16). GEMMSMs 0 counts both GEMMs as full.
func TestGEMMBandBuild(t *testing.T) {
	cases := []struct {
		sms         int
		share, band uint16
		ctas        int32
	}{
		{40, 0, 21845, 9},
		{32, 21845, 0, 0},
		{0, 43690, 0, 0},
	}
	for _, c := range cases {
		cfg := zero3Config(t, 1e6, 1)
		cfg.GEMMSMs = c.sms
		progs, err := Build(cfg, opPricer{gemm: 3 * engine.Microsecond, other: engine.Microsecond})
		if err != nil {
			t.Fatal(err)
		}
		p := progs[0]
		found := false
		for i, task := range p.Tasks {
			if task.Name.String() != "mlp_fwd" {
				continue
			}
			found = true
			var band uint16
			var ctas int32
			for _, e := range p.bands {
				if e.task == int32(i) {
					band, ctas = e.share, e.ctas
				}
			}
			if task.GEMMShare != c.share || band != c.band || ctas != c.ctas {
				t.Errorf("GEMMSMs %d: mlp_fwd (layer %d) GEMMShare %d, band %d from %d CTAs; want %d, %d from %d",
					c.sms, task.Layer, task.GEMMShare, band, ctas, c.share, c.band, c.ctas)
			}
		}
		if !found {
			t.Fatalf("GEMMSMs %d: no mlp_fwd", c.sms)
		}
		for i := 1; i < len(p.bands); i++ {
			if p.bands[i].task <= p.bands[i-1].task {
				t.Fatalf("GEMMSMs %d: bands not in task order", c.sms)
			}
		}
	}
}
