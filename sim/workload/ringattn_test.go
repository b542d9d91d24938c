package workload

import (
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/pipeline"
)

// llama8B is Llama 3 8B's layer: 32 query heads and 8 KV heads of 128.
func llama8B() Model {
	m := Model{Name: "llama3-8b", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, FFN: 14336, Vocab: 128256,
		Activation: "swiglu", Norm: "rmsnorm", MaxPositions: 8192}
	m.Fill()
	return m
}

// memOps returns the names and HBM bytes of block blk's memory-bound ops
// whose name starts with prefix.
func memOps(m Model, s Shape, p Pass, blk Block, prefix string) (names []string, read, write float64) {
	for _, o := range m.LayerOps(0, s, p) {
		if o.Block == blk && o.Class == ClassMemory && len(o.Name) >= len(prefix) && o.Name[:len(prefix)] == prefix {
			names = append(names, o.Name)
			read += o.BytesRead
			write += o.BytesWritten
		}
	}
	return
}

// TestRepeatKV checks torchtitan's repeat_kv by hand on Llama 3 8B at
// micro-batch 1, sequence 8192, bf16: K and V are T·8·128 values each
// (x = 8192·1024·2 bytes), repeated 4 times. Forward: read x, write 4x, for
// K then V; backward: expand's sum reads 4x and writes x, for V then K. The
// attention kernel reads 32 heads' K and V instead of 8, and the
// activations keep the repeated K and V (no recomputation).
func TestRepeatKV(t *testing.T) {
	m := llama8B()
	s := Shape{MicroBatch: 1, Seq: 8192, Dtype: BF16, FlashAttention: true}
	r := s
	r.RepeatKV = true
	x := 8192.0 * 1024 * 2
	fn, fr, fw := memOps(m, r, Forward, BlockAttnPre, "repeat_kv")
	if want := []string{"repeat_kv_k", "repeat_kv_v"}; !slices.Equal(fn, want) || fr != 2*x || fw != 8*x {
		t.Errorf("forward %v read %g write %g, want %v read %g write %g", fn, fr, fw, want, 2*x, 8*x)
	}
	bn, br, bw := memOps(m, r, Backward, BlockAttnPre, "repeat_kv")
	if want := []string{"repeat_kv_v_sum_bwd", "repeat_kv_k_sum_bwd"}; !slices.Equal(bn, want) || br != 8*x || bw != 2*x {
		t.Errorf("backward %v read %g write %g, want %v read %g write %g", bn, br, bw, want, 8*x, 2*x)
	}
	attnRead := func(sh Shape) float64 {
		for _, o := range m.LayerOps(0, sh, Forward) {
			if o.Name == "flash_attn" {
				return o.BytesRead
			}
		}
		t.Fatal("no flash_attn op")
		return 0
	}
	// Q (32 heads) + K and V: 8 heads each without repeat, 32 with.
	q := 8192.0 * 4096 * 2
	if a, b := attnRead(s), attnRead(r); a != q+2*x || b != q+8*x {
		t.Errorf("attention kernel reads %g / %g bytes, want %g / %g", a, b, q+2*x, q+8*x)
	}
	if d := m.LayerActivationBytes(0, r, RecomputeNone) - m.LayerActivationBytes(0, s, RecomputeNone); d != 6*x {
		t.Errorf("repeated K and V keep %g more activation bytes, want %g", d, 6*x)
	}
	if c, cr := m.Comm(s).CPKeyValue, m.Comm(r).CPKeyValue; cr != 4*c {
		t.Errorf("CP K/V shard %g bytes with repeat, %g without: want 4×", cr, c)
	}
	// Nothing to repeat with as many KV heads as query heads.
	mha := m
	mha.KVHeads = mha.Heads
	if a, b := len(mha.LayerOps(0, s, Forward)), len(mha.LayerOps(0, r, Forward)); a != b {
		t.Errorf("MHA: %d ops with repeat_kv, %d without", b, a)
	}
}

// TestRingKernels checks PyTorch's ring-attention kernels by hand at cp 4
// on Llama 3 8B (sequence 32768, so 8192 local rows; 32 heads of 128 after
// repeat_kv: the output, Q, K and V are each n = 8192·4096 values, 2n
// bytes in bf16).
//
// Compiled forward: pack K and V (read and write 4n), three merges (read
// the bf16 step output and the fp32 running output, 6n; write 4n), the
// cast back (read 4n, write 2n). Backward: fp32 zeros for dQ, dK, dV
// (write 12n), the pack again (4n, 4n), four accumulations of dQ, dK, dV
// (read 18n, write 12n each), the casts back (read 12n, write 6n).
//
// Eager forward: contiguous K/V (4n, 4n), three packs (12n, 12n), four
// casts to fp32 (read 8n, write 16n), three merges of two subtractions
// and a product on fp32 (read 24n, write 12n each), the cast back (4n,
// 2n). Backward: zeros (write 12n), contiguous (4n, 4n), three packs (12n,
// 12n), four dQ additions (read 24n, write 16n), dK/dV: the first step's
// addition (read 12n, write 8n) and three half-size additions with the
// halves' concatenation (read 14n, write 12n each), four dK/dV packs
// (read 32n, write 32n), the casts back (12n, 6n).
func TestRingKernels(t *testing.T) {
	m := llama8B()
	s := Shape{MicroBatch: 1, Seq: 32768, Dtype: BF16, FlashAttention: true, CP: 4, RepeatKV: true, CPImpl: CPPyTorch}
	n := 8192.0 * 4096
	for _, c := range []struct {
		eager                  bool
		fwdNames               []string
		fwdR, fwdW, bwdR, bwdW float64
	}{
		{false, []string{"cp_ring_kv_pack", "cp_ring_merge", "cp_ring_out_cast"},
			(4 + 18 + 4) * n, (4 + 12 + 2) * n,
			(4 + 72 + 12) * n, (12 + 4 + 48 + 6) * n},
		{true, []string{"cp_ring_kv_contiguous", "cp_ring_kv_pack", "cp_ring_out_to_fp32", "cp_ring_merge", "cp_ring_out_cast"},
			(4 + 12 + 8 + 72 + 4) * n, (4 + 12 + 16 + 36 + 2) * n,
			(4 + 12 + 24 + 12 + 42 + 32 + 12) * n, (12 + 4 + 12 + 16 + 8 + 36 + 32 + 6) * n},
	} {
		sh := s
		sh.Eager = c.eager
		fn, fr, fw := memOps(m, sh, Forward, BlockAttnCore, "cp_ring")
		if !slices.Equal(fn, c.fwdNames) || fr != c.fwdR || fw != c.fwdW {
			t.Errorf("eager %v: forward %v read %g write %g, want %v read %g write %g", c.eager, fn, fr, fw, c.fwdNames, c.fwdR, c.fwdW)
		}
		_, br, bw := memOps(m, sh, Backward, BlockAttnCore, "cp_ring")
		if br != c.bwdR || bw != c.bwdW {
			t.Errorf("eager %v: backward read %g write %g, want read %g write %g", c.eager, br, bw, c.bwdR, c.bwdW)
		}
	}
	// The all-gather implementation and cp 1 have no ring kernels.
	for _, sh := range []Shape{{MicroBatch: 1, Seq: 32768, Dtype: BF16, FlashAttention: true, CP: 4},
		{MicroBatch: 1, Seq: 32768, Dtype: BF16, FlashAttention: true, CPImpl: CPPyTorch}} {
		if names, _, _ := memOps(m, sh, Forward, BlockAttnCore, "cp_ring"); len(names) != 0 {
			t.Errorf("cp %d impl %v: ring kernels %v", sh.CP, sh.CPImpl, names)
		}
	}
	if _, err := ParseCPImpl("ring"); err == nil || err.Error() != `unknown context-parallel implementation "ring" (valid: allgather, pytorch, p2p)` {
		t.Errorf("ParseCPImpl(ring): %v", err)
	}
}

// TestCPBuffers checks context parallelism's transient buffers in the
// stage memory, by hand, on Llama 3 8B at cp 4, sequence 32768, one
// sequence: the all-gathered K and V of the whole sequence are 32768 rows
// of 2·8·128 values at 2 bytes (32 heads with repeat_kv); PyTorch's ring
// adds fp32 dQ (8192 local rows of 4096), dK and dV (8192 rows of 2·1024,
// or 2·4096 repeated) and the dK/dV in flight both ways.
func TestCPBuffers(t *testing.T) {
	m := llama8B()
	in := MemoryInput{Model: m, Layers: 32, PP: 1, DP: 1, Stage: 0, Schedule: pipeline.OneFOneB, Microbatches: 1,
		Optimizer: "adamw", MasterDtype: FP32, GradDtype: FP32, Recompute: RecomputeFull,
		Shape: Shape{MicroBatch: 1, Seq: 32768, Dtype: BF16, FlashAttention: true}}
	buffers := func(cp int, impl CPImpl, repeat bool) float64 {
		i := in
		i.Shape.CP, i.Shape.CPImpl, i.Shape.RepeatKV = cp, impl, repeat
		return StageMemory(i).Buffers
	}
	base := buffers(1, CPAllGather, false)
	for _, c := range []struct {
		impl   CPImpl
		repeat bool
		want   float64
	}{
		{CPAllGather, false, 32768 * 2048 * 2},
		{CPAllGather, true, 32768 * 8192 * 2},
		{CPPyTorch, false, 32768*2048*2 + 4*(8192*4096+8192*2048) + 8*8192*2048},
		{CPPyTorch, true, 32768*8192*2 + 4*(8192*4096+8192*8192) + 8*8192*8192},
	} {
		if got := buffers(4, c.impl, c.repeat) - base; got != c.want {
			t.Errorf("%v repeat %v: CP buffers %g bytes, want %g", c.impl, c.repeat, got, c.want)
		}
	}
}

// TestP2PKernels checks Transformer Engine's p2p ring kernels by hand at cp
// 4 on the TestRingKernels shape (n = 8192·4096 values each for the
// output, Q, K and V after repeat_kv; bf16). Forward: four output
// corrections reading 4n and writing 2n bytes each. Backward: K and V
// copied into the ring buffer (read and write 4n), four accumulations of
// dQ, dK, dV reading 12n and writing 6n each.
func TestP2PKernels(t *testing.T) {
	m := llama8B()
	s := Shape{MicroBatch: 1, Seq: 32768, Dtype: BF16, FlashAttention: true, CP: 4, RepeatKV: true, CPImpl: CPP2P}
	n := 8192.0 * 4096
	fn, fr, fw := memOps(m, s, Forward, BlockAttnCore, "cp_p2p")
	if want := []string{"cp_p2p_out_correction"}; !slices.Equal(fn, want) || fr != 4*4*n || fw != 4*2*n {
		t.Errorf("forward %v read %g write %g, want %v read %g write %g", fn, fr, fw, want, 16*n, 8*n)
	}
	if _, br, bw := memOps(m, s, Backward, BlockAttnCore, "cp_p2p"); br != 4*n+4*12*n || bw != 4*n+4*6*n {
		t.Errorf("backward read %g write %g, want %g %g", br, bw, 52*n, 28*n)
	}
	if names, _, _ := memOps(m, s, Forward, BlockAttnCore, "cp_ring"); len(names) != 0 {
		t.Errorf("p2p runs PyTorch's ring kernels %v", names)
	}
}
