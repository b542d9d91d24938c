package workload

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// fp8Llama is a one-layer GQA SwiGLU model whose attention input projection
// is a 1024×512×256 GEMM at micro-batch 1 and sequence 1024: hidden 256,
// 4 query heads and 2 KV heads of 64, so qkv_proj fuses q (256), k (128)
// and v (128).
func fp8Llama() Model {
	m := Model{Name: "fp8-test", Layers: 1, Hidden: 256, Heads: 4, KVHeads: 2, FFN: 512, Vocab: 1000,
		Activation: "swiglu", Norm: "rmsnorm"}
	m.Fill()
	return m
}

func opNamed(ops []Op, name string) (Op, bool) {
	for _, o := range ops {
		if o.Name == name {
			return o, true
		}
	}
	return Op{}, false
}

// TestFP8QuantBytes checks the quantisation op of qkv_proj (X 1024×256,
// W 256×512, G 1024×512; three linears) for every recipe. Element counts:
// ex = 262144, ew = 131072, eg = 524288.
//
//	tensorwise  fwd: 5 B per element of X and W: read 4·393216 = 1572864,
//	            write 393216. bwd: G twice (read 8·eg = 4194304, write
//	            2·eg = 1048576) + W and X again (read 1572864, write
//	            393216) = read 5767168, write 1441792 — the 5 B per value
//	            of both inputs of dgrad and wgrad that OpTime's implicit
//	            quantisation charged (10·eg + 5·ew + 5·ex = 7208960).
//	rowwise     X per linear (3·ex = 786432): fwd read 4·917504 = 3670016,
//	            write 917504; bwd G 4194304 / 1048576, W + 3X again
//	            3670016 / 917504, rescale of the dgrad outputs (3·ex) and
//	            the wgrad output (ew): 2 + 2 B on 917504 elements =
//	            1835008 / 1835008; total read 9699328, write 3801088.
//	delayed     cast-transpose, 2 read + 2 written: fwd X, W 786432 /
//	            786432; bwd G once 1048576 / 1048576.
//	blockwise   as delayed plus 8/128 B of scales written per element:
//	            fwd write 393216·2.0625 = 811008; bwd write 524288·2.0625
//	            = 1081344.
//	mxfp8       as delayed plus 2/32 B of E8M0 scales: the same 2.0625.
//	current     as delayed plus the amax read: fwd read 4·393216 =
//	            1572864, write 786432; bwd G once, read 4·eg = 2097152,
//	            write 1048576.
func TestFP8QuantBytes(t *testing.T) {
	m := fp8Llama()
	for _, c := range []struct {
		r              FP8Recipe
		fr, fw, br, bw float64
	}{
		{FP8Tensorwise, 1572864, 393216, 5767168, 1441792},
		{FP8Rowwise, 3670016, 917504, 9699328, 3801088},
		{FP8Delayed, 786432, 786432, 1048576, 1048576},
		{FP8Blockwise, 786432, 811008, 1048576, 1081344},
		{FP8MXFP8, 786432, 811008, 1048576, 1081344},
		{FP8Current, 1572864, 786432, 2097152, 1048576},
	} {
		s := Shape{MicroBatch: 1, Seq: 1024, Dtype: FP8, FlashAttention: true, FP8Recipe: c.r}
		fwd, okF := opNamed(m.LayerOps(0, s, Forward), "qkv_proj_fp8_quant")
		bwd, okB := opNamed(m.LayerOps(0, s, Backward), "qkv_proj_fp8_quant_bwd")
		if !okF || !okB {
			t.Fatalf("%v: no qkv_proj quantisation ops", c.r)
		}
		if fwd.BytesRead != c.fr || fwd.BytesWritten != c.fw || bwd.BytesRead != c.br || bwd.BytesWritten != c.bw {
			t.Errorf("%v: fwd %v/%v bwd %v/%v, want %v/%v %v/%v", c.r, fwd.BytesRead, fwd.BytesWritten,
				bwd.BytesRead, bwd.BytesWritten, c.fr, c.fw, c.br, c.bw)
		}
		if fwd.Class != ClassMemory || fwd.Quant != QuantCast || fwd.Block != BlockAttnPre {
			t.Errorf("%v: quantisation op %+v", c.r, fwd)
		}
		g, _ := opNamed(m.LayerOps(0, s, Forward), "qkv_proj")
		if g.Quant != QuantScaled {
			t.Errorf("%v: qkv_proj Quant = %v, want QuantScaled", c.r, g.Quant)
		}
	}
}

// TestFP8TensorwiseMatchesImplicit: the default recipe moves the same bytes
// as OpTime's implicit per-GEMM quantisation, in one kernel per GEMM per
// pass instead of one per GEMM kernel, so a layer's time differs by one
// KernelOverhead per GEMM (the backward's dgrad and wgrad casts share one
// op).
func TestFP8TensorwiseMatchesImplicit(t *testing.T) {
	m, d := fp8Llama(), h100()
	s := Shape{MicroBatch: 2, Seq: 1024, Dtype: FP8, TP: 2, SP: true, FlashAttention: true}
	legacy := &builder{split: newSplit(m, s)}
	legacy.fp8 = nil // GEMMs without Quant: OpTime adds the implicit kernel
	legacy.attention()
	legacy.denseMLP()
	total := func(ops []Op) float64 {
		t := 0.0
		for _, o := range ops {
			t += d.OpTime(o, FP8)
		}
		return t
	}
	gemms := 0
	for _, f := range legacy.ops {
		if f.kind == kindGEMM {
			gemms++
		}
	}
	old := total(fwdList(legacy.ops)) + total(bwdList(legacy.ops, legacy.gin, legacy.act))
	now := total(m.LayerOps(0, s, Forward)) + total(m.LayerOps(0, s, Backward))
	if want := old - float64(gemms)*d.KernelOverhead; math.Abs(now-want) > 1e-12*old {
		t.Errorf("tensorwise layer %.9g s, implicit quantisation %.9g s less %d overheads = %.9g s", now, old, gemms, want)
	}
}

// TestFP8OnlyWithFP8: other dtypes get no quantisation ops whatever the
// recipe field says (bf16 is unchanged bit for bit).
func TestFP8OnlyWithFP8(t *testing.T) {
	m := fp8Llama()
	for _, dt := range []Dtype{BF16, FP16, FP32} {
		base := Shape{MicroBatch: 1, Seq: 512, Dtype: dt, FlashAttention: true}
		for _, p := range []Pass{Forward, Backward} {
			want := m.LayerOps(0, base, p)
			for r := FP8Rowwise; r <= FP8MXFP8; r++ {
				s := base
				s.FP8Recipe = r
				if got := m.LayerOps(0, s, p); !reflect.DeepEqual(got, want) {
					t.Errorf("%v %v: recipe %v changed the ops", dt, p, r)
				}
			}
			for _, o := range want {
				if o.Quant != QuantNone || strings.Contains(o.Name, "fp8") {
					t.Errorf("%v: op %s carries FP8 quantisation", dt, o.Name)
				}
			}
		}
	}
}

// TestFP8SelectiveOpRequantises: per-op selective checkpointing recomputes
// every second linear (k_proj, out_proj, fc1_up; see selectiveOp), and each
// recomputed linear quantises its own inputs again: k_proj's X (1024×256)
// and W (256×128) at 5 B = 5·(262144 + 32768) = 1474560 bytes.
func TestFP8SelectiveOpRequantises(t *testing.T) {
	m := fp8Llama()
	s := Shape{MicroBatch: 1, Seq: 1024, Dtype: FP8, FlashAttention: true, FP8Recipe: FP8Rowwise}
	ops := m.RecomputeOps(0, s, RecomputeSelectiveOp)
	q, ok := opNamed(ops, "k_proj_fp8_quant")
	if !ok {
		t.Fatal("no k_proj_fp8_quant in the recompute")
	}
	if got := q.Bytes(); got != 1474560 {
		t.Errorf("k_proj requantisation %v bytes, want 1474560", got)
	}
	if _, ok := opNamed(ops, "qkv_proj_fp8_quant"); ok {
		t.Error("the fused GEMM's quantisation is recomputed")
	}
	if _, ok := opNamed(ops, "q_proj_fp8_quant"); ok {
		t.Error("q_proj (saved) is requantised")
	}
	if g, _ := opNamed(ops, "k_proj"); g.Quant != QuantScaled {
		t.Error("recomputed k_proj would add the implicit quantisation")
	}
	// Full recomputation repeats the forward's quantisation exactly.
	full := m.RecomputeOps(0, s, RecomputeFull)
	if !reflect.DeepEqual(full, m.LayerOps(0, s, Forward)) {
		t.Error("full recompute differs from the forward")
	}
}

// TestFP8CastFreeWithoutFP8: on a GPU without FP8 (A100) the GEMMs run at
// BF16 and the recipe's casts cost nothing.
func TestFP8CastFreeWithoutFP8(t *testing.T) {
	d := h100()
	d.Peak[FP8] = 0
	op := Op{Class: ClassMemory, Quant: QuantCast, BytesRead: 1e9}
	if got := d.OpTime(op, FP8); got != 0 {
		t.Errorf("cast on a GPU without FP8: %v s", got)
	}
	if got := h100().OpTime(op, FP8); got <= 0 {
		t.Errorf("cast on H100: %v s", got)
	}
}

func TestParseFP8Recipe(t *testing.T) {
	for i, n := range FP8RecipeNames() {
		r, err := ParseFP8Recipe(strings.ToUpper(n))
		if err != nil || r != FP8Recipe(i) || r.String() != n {
			t.Errorf("%s: %v %v", n, r, err)
		}
	}
	_, err := ParseFP8Recipe("perblock")
	if err == nil || !strings.Contains(err.Error(), "valid: tensorwise, rowwise, delayed, blockwise, mxfp8") {
		t.Errorf("error %v", err)
	}
	if s := FP8Recipe(9).String(); s != "fp8recipe(9)" {
		t.Error(s)
	}
}

// TestGEMMScaling: the mxfp8 and blockwise recipes mark every GEMM
// block-scaled, forward and backward; rowwise marks its forward GEMMs
// row-scaled and leaves dgrad and wgrad per-tensor (torchao runs them on
// cuBLAS and rescales afterwards); the other recipes mark none, and no
// other op is marked. On a GPU with a relative rate r a compute-bound
// scaled GEMM takes 1/r of the per-tensor time (8192³ at FP8, r = 0.95);
// without the figure (0) or in BF16 it is priced as before.
func TestGEMMScaling(t *testing.T) {
	m := fp8Llama()
	for r := FP8Tensorwise; r <= FP8Current; r++ {
		for _, rec := range []Recompute{RecomputeNone, RecomputeSelectiveOp} {
			s := Shape{MicroBatch: 1, Seq: 512, Dtype: FP8, FP8Recipe: r, FlashAttention: true}
			var fwd, bwd Scaling
			switch r {
			case FP8MXFP8, FP8Blockwise:
				fwd, bwd = ScalingBlock, ScalingBlock
			case FP8Rowwise:
				fwd = ScalingRow
			}
			lists := map[string][]Op{
				"forward":   m.LayerOps(0, s, Forward),
				"backward":  m.LayerOps(0, s, Backward),
				"recompute": m.RecomputeOps(0, s, rec),
			}
			for _, name := range []string{"forward", "backward", "recompute"} {
				want := fwd
				if name == "backward" {
					want = bwd
				}
				for _, o := range lists[name] {
					if o.Class != ClassGEMM {
						if o.Scaling != ScalingTensor {
							t.Errorf("%v %s: %s is not a GEMM but has scaling %d", r, name, o.Name, o.Scaling)
						}
						continue
					}
					if o.Scaling != want {
						t.Errorf("%v %s: GEMM %s scaling %d, want %d", r, name, o.Name, o.Scaling, want)
					}
				}
			}
		}
	}

	d := h100()
	op := gemmOp(8192, 8192, 8192, 1, 1, 2)
	op.Quant = QuantScaled
	perTensor := d.OpTime(op, FP8)
	compute := perTensor - d.KernelOverhead
	for _, sc := range []Scaling{ScalingRow, ScalingBlock} {
		d := h100()
		op := op
		op.Scaling = sc
		if got := d.OpTime(op, FP8); got != perTensor {
			t.Errorf("scaling %d without a figure: %g s, want the per-tensor %g s", sc, got, perTensor)
		}
		d.RowScaledGEMMRel, d.BlockScaledGEMMRel = 0.5, 0.5
		if sc == ScalingRow {
			d.RowScaledGEMMRel = 0.95
		} else {
			d.BlockScaledGEMMRel = 0.95
		}
		if got, want := d.OpTime(op, FP8), compute/0.95+d.KernelOverhead; math.Abs(got-want) > 1e-12 {
			t.Errorf("scaling %d at 0.95: %g s, want %g s", sc, got, want)
		}
		bf16 := op
		bf16.Scaling = ScalingTensor
		if got, want := d.OpTime(op, BF16), d.OpTime(bf16, BF16); got != want {
			t.Errorf("scaling %d in bf16: %g s, want %g s", sc, got, want)
		}
	}
}

// TestBF16Layers: with one BF16 layer at each end, an FP8 Llama 3 8B runs
// layers 0 and 31 (and an MTP layer 32 after them) with BF16 GEMMs and
// no quantisation kernels, the others in FP8, as Megatron-Core's
// is_first_last_bf16_layer counts; a BF16 run is unaffected.
func TestBF16Layers(t *testing.T) {
	m, _ := Preset("llama3-8b")
	m.MTPLayers = 1
	s := Shape{MicroBatch: 1, Seq: 4096, TP: 1, Dtype: FP8, FlashAttention: true, BF16AtStart: 1, BF16AtEnd: 1}
	for l, want := range map[int]bool{0: true, 1: false, 30: false, 31: true, 32: true} {
		if got := s.IsBF16Layer(m, l); got != want {
			t.Errorf("layer %d: BF16 %v, want %v", l, got, want)
		}
		quant := 0
		for _, o := range m.LayerOps(l, s, Forward) {
			if o.Quant != 0 {
				quant++
			}
		}
		if (quant == 0) != want {
			t.Errorf("layer %d: %d quantisation kernels, BF16 %v", l, quant, want)
		}
	}
	bf := s
	bf.Dtype = BF16
	if bf.IsBF16Layer(m, 1) || s.IsBF16Layer(m, -1) {
		t.Error("only FP8 runs have BF16 layers, and only real ones")
	}
	plain := s
	plain.BF16AtStart, plain.BF16AtEnd = 0, 0
	if m.LayerActivationBytes(0, s, RecomputeNone) <= m.LayerActivationBytes(0, plain, RecomputeNone) &&
		plain.savedGEMMInputBytes(2) < 2 {
		t.Error("a BF16 layer must keep its GEMM inputs at bf16 width")
	}
}
