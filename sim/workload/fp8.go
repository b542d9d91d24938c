package workload

import (
	"fmt"
	"strings"
)

// FP8 scaling recipes.
//
// FP8 training keeps weights, activations and gradients in bf16 and quantises
// the two inputs of every FP8 GEMM right before it (Micikevicius et al. 2022,
// arXiv:2209.05433 §4). Per linear layer C[M×N] = X[M×K]·W[K×N] there are
// three GEMMs: forward X·W, dgrad G·Wᵀ and wgrad Xᵀ·G (G = dC, M×N), so a
// recipe quantises X, W and G for the forward and the backward. What it costs
// depends on the recipe: how many passes over the bf16 tensor a
// quantisation takes, whether both orientations come from one kernel, which
// quantised copies are saved for the backward, and whether the GEMM needs an
// extra kernel. The builder prices these as one memory-bound op per GEMM
// (forward) whose backward is the backward's quantisation; bytes per
// element of a bf16 operand:
//
//	recipe      one cast          G casts  W, X again  input per  rescale
//	            read  write       (bwd)    (bwd)       linear     (bwd out)
//	tensorwise  4     1           2        yes         no         0
//	rowwise     4     1           2        yes         yes        2+2
//	delayed     2     2           1        no          no         0
//	blockwise   2     2+8/128     1        no          no         0
//	mxfp8       2     2+2/32      1        no          no         0
//	current     4     2           1        no          no         0
//
// tensorwise — torchao Float8Linear with dynamic per-tensor scales
// (torchtitan's default float8 converter): torchao's
// matmul_with_hp_or_float8_args saves the bf16 input and weight and calls
// hp_tensor_to_float8_dynamic for each GEMM operand: a tensor amax (read 2)
// then a scale-and-cast (read 2, write 1) = 5 bytes, for X and W in the
// forward, G and W for dgrad, G and X for wgrad. With tensor parallelism
// torchtitan (parallelize_llama.py at 820504e, apply_tp) casts a block's
// input once with PrepareFloat8ModuleInput and all-gathers it in float8, so
// the q/k/v (and gate/up) projections share one quantised input: X is
// counted once per fused GEMM.
//
// rowwise — torchao recipe "rowwise" (axiswise scales, power-of-2 scales):
// every operand is quantised along the axis its GEMM reduces over, so X is
// cast along K for the forward and along M for wgrad, W along K (forward) and
// N (dgrad), G along N (dgrad) and M (wgrad): the same six casts as
// tensorwise. Two things differ. torchtitan uses plain (bf16) tensor
// parallelism for rowwise ("float8 all-gather with TP is only supported for
// tensorwise", parallelize_llama.py at 820504e), so each nn.Linear casts the
// gathered input itself: a fused QKV is three quantisations of X (twice: row-
// and column-wise), a GLU fc1 two. And the backward GEMMs run with
// use_fast_accum=False, for which torchao calls the tensorwise cuBLAS kernel
// and applies the row and column scales afterwards in a separate kernel
// (torchao float8_python_api.addmm_float8_unwrapped: "the rowwise
// CUTLASS-based kernel is so slow without fast-accum"; pytorch/ao#2184: "at
// least one extra triton kernel per GEMM ... just for the rescaling"): read
// and write the bf16 dgrad and wgrad outputs, 4 bytes per element. The
// forward GEMM is CUTLASS's rowwise kernel with fast accumulation, "most
// shapes within 90-100% of tensor-wise efficiency, but a long tail down to
// 50%" (pytorch/pytorch#147971): it is marked ScalingRow and priced at the
// GPU's Device.RowScaledGEMMRel (fitted for Hopper on torchao's own
// tensorwise/rowwise training pair, sim/hardware calibration.yaml, hopper_rowwise_gemm).
//
// delayed — Transformer Engine's DelayedScaling (Megatron-LM --fp8-format
// hybrid, Composer amp_fp8): the scale comes from the amax history, so a
// cast is one pass, and TE's cast_transpose kernel writes the fp8 tensor
// and its transpose together (read 2, write 1+1). X and W are cast once in
// the forward and their transposes saved for wgrad and dgrad; G is
// cast-transposed once for both backward GEMMs. (With LayerNormLinear the
// norm writes fp8 directly, saving part of the X cast; not counted.)
//
// blockwise — DeepSeek-V3 (arXiv:2412.19437 §3.3: 1×128 activation tiles,
// 128×128 weight blocks; TE Float8BlockScaling): scales are local to a
// tile, so one pass quantises both orientations (read 2, write 1+1) plus one
// fp32 scale per 128 values per orientation (8/128 bytes; the weights'
// 128×128 blocks have fewer, counted the same — an upper bound).
//
// mxfp8 — OCP MX v1.0 MXFP8: blocks of 32 values share one E8M0 (1-byte)
// scale; Blackwell tensor cores apply the block scales inside the GEMM. One
// pass writes both orientations: read 2, write 1+1 plus 2/32 bytes of scales.
//
// current — Transformer Engine's Float8CurrentScaling, which Megatron-Core
// runs for --fp8-recipe tensorwise (megatron/core/fp8_utils.py: "elif
// config.fp8_recipe == Fp8Recipe.tensorwise ... Float8CurrentScaling") and
// Megatron-Bridge's performance tables call FP8-CS: per-tensor scales
// computed from the tensor itself, so an amax pass (read 2) precedes a
// cast-transpose that writes the fp8 tensor and its transpose (read 2,
// write 1+1). As in the delayed recipe X and W are cast once in the forward
// with their transposes saved for wgrad and dgrad, and G once for both
// backward GEMMs; only the amax pass is added. Same per-tensor scaling as
// tensorwise, different costs: torchao casts every GEMM operand again.
//
// Weights are quantised per micro-batch in every recipe. Known savings not
// modelled: TE caches the fp8 weight across micro-batches
// (is_first_microbatch), and torchao with enable_fsdp_float8_all_gather and
// precompute_float8_dynamic_scale_for_fsdp casts each weight shard before
// the all-gather, once per gather.
type FP8Recipe uint8

// The recipes; the zero value is tensorwise, the default for precision fp8.
const (
	FP8Tensorwise FP8Recipe = iota
	FP8Rowwise
	FP8Delayed
	FP8Blockwise
	FP8MXFP8
	FP8Current
)

// fp8Recipe is the quantisation cost model of one recipe (see FP8Recipe).
type fp8Recipe struct {
	name string
	// castRead, castWrite: HBM bytes per element of one quantisation of a
	// bf16 operand (including scales).
	castRead, castWrite float64
	// gradCasts: quantisations of grad_output per linear in the backward.
	gradCasts float64
	// recast: W (for dgrad) and X (for wgrad) are quantised again in the
	// backward from the saved bf16 tensors.
	recast bool
	// perLinearInput: each nn.Linear of a fused GEMM quantises the shared
	// input itself (in the forward and, with recast, for wgrad).
	perLinearInput bool
	// rescale: bytes per element of the dgrad and wgrad outputs moved by a
	// separate scaling kernel.
	rescale float64
	// saved: bytes per element of a GEMM input kept for the backward. A
	// recipe that quantises once and saves the quantised copy for wgrad
	// (Transformer Engine's Linear saves its fp8 input, with the
	// recipe's scales) keeps 1 byte plus its scales; torchao's recipes
	// (recast) keep the bf16 tensor, 0 here meaning the activation width.
	saved float64
	// fwdScaling, bwdScaling: the scaling of the forward GEMM and of the
	// dgrad and wgrad GEMMs (Op.Scaling), which picks their kernels.
	fwdScaling, bwdScaling Scaling
}

var fp8Recipes = [...]fp8Recipe{
	FP8Tensorwise: {name: "tensorwise", castRead: 4, castWrite: 1, gradCasts: 2, recast: true},
	FP8Rowwise:    {name: "rowwise", castRead: 4, castWrite: 1, gradCasts: 2, recast: true, perLinearInput: true, rescale: 4, fwdScaling: ScalingRow},
	FP8Delayed:    {name: "delayed", castRead: 2, castWrite: 2, gradCasts: 1, saved: 1},
	FP8Blockwise:  {name: "blockwise", castRead: 2, castWrite: 2 + 8.0/128, gradCasts: 1, saved: 1 + 4.0/128, fwdScaling: ScalingBlock, bwdScaling: ScalingBlock},
	FP8MXFP8:      {name: "mxfp8", castRead: 2, castWrite: 2 + 2.0/32, gradCasts: 1, saved: 1 + 1.0/32, fwdScaling: ScalingBlock, bwdScaling: ScalingBlock},
	FP8Current:    {name: "current", castRead: 4, castWrite: 2, gradCasts: 1, saved: 1},
}

// savedGEMMInputBytes is the bytes per element of a GEMM input kept for
// the backward under s: the recipe's quantised copy (fp8Recipe.saved) in
// FP8 training with a Transformer Engine-style recipe, else act.
func (s Shape) savedGEMMInputBytes(act float64) float64 {
	if r := s.fp8Recipe(); r != nil && r.saved > 0 {
		return r.saved
	}
	return act
}

// FP8RecipeNames lists the recipe names in FP8Recipe order.
func FP8RecipeNames() []string {
	out := make([]string, len(fp8Recipes))
	for i, r := range fp8Recipes {
		out[i] = r.name
	}
	return out
}

// ParseFP8Recipe parses a recipe name (case-insensitive); the error lists
// the valid names.
func ParseFP8Recipe(s string) (FP8Recipe, error) {
	k := strings.ToLower(strings.TrimSpace(s))
	for i, r := range fp8Recipes {
		if r.name == k {
			return FP8Recipe(i), nil
		}
	}
	return 0, fmt.Errorf("unknown fp8 recipe %q (valid: %s)", s, strings.Join(FP8RecipeNames(), ", "))
}

// Valid reports whether r is a defined recipe.
func (r FP8Recipe) Valid() bool { return int(r) < len(fp8Recipes) }

// String is the recipe's name; an undefined value prints as "fp8recipe(N)".
func (r FP8Recipe) String() string {
	if !r.Valid() {
		return fmt.Sprintf("fp8recipe(%d)", uint8(r))
	}
	return fp8Recipes[r].name
}

// fp8Recipe returns the quantisation model the builder applies to its
// GEMMs: the recipe's when the compute dtype is FP8 (an undefined recipe
// counts as tensorwise), nil otherwise.
// IsBF16Layer reports whether layer of m runs in BF16 inside an FP8 run
// (Shape.BF16AtStart, BF16AtEnd): the global index is below the first
// count or at least Layers minus the last one, as Megatron-Core's
// is_first_last_bf16_layer counts (MTP layers, numbered after the
// decoder's, fall in the last group).
func (s Shape) IsBF16Layer(m Model, layer int) bool {
	if s.Dtype != FP8 || layer < 0 {
		return false
	}
	return layer < s.BF16AtStart || (s.BF16AtEnd > 0 && layer >= m.Layers-s.BF16AtEnd)
}

// forLayer is s as layer of m runs: BF16 for a BF16 layer of an FP8 run.
// It changes the dtype alone (StageMemory reuses the stage's split for the
// layers whose dtype it leaves).
func (s Shape) forLayer(m Model, layer int) Shape {
	if s.IsBF16Layer(m, layer) {
		s.Dtype = BF16
	}
	return s
}

func (s Shape) fp8Recipe() *fp8Recipe {
	if s.Dtype != FP8 {
		return nil
	}
	if !s.FP8Recipe.Valid() {
		return &fp8Recipes[FP8Tensorwise]
	}
	return &fp8Recipes[s.FP8Recipe]
}

// quant returns the quantisation op of GEMM C[m×n] = A[m×k]·B[k×n]
// (batch times; parts are its linears, nil meaning one) under recipe r: its
// forward cost quantises the forward's inputs, its backward cost those of
// dgrad and wgrad plus any rescale kernel. FLOPs: one per element
// quantised or rescaled (the kernels are bandwidth-bound).
func (r *fp8Recipe) quant(name string, blk Block, m, n, k, batch int, parts []linear) fwdOp {
	bt := float64(max(batch, 1))
	M, N, K := float64(m), float64(n), float64(k)
	ex, ew, eg := M*K*bt, K*N*bt, M*N*bt
	nl := 1.0
	if r.perLinearInput && len(parts) > 1 {
		nl = float64(len(parts))
	}
	cast := func(e float64) cost { return cost{e, e * r.castRead, e * r.castWrite} }
	add := func(a, b cost) cost { return cost{a.flops + b.flops, a.read + b.read, a.write + b.write} }
	fwd := add(cast(nl*ex), cast(ew))
	bwd := cast(r.gradCasts * eg)
	if r.recast {
		bwd = add(bwd, add(cast(ew), cast(nl*ex)))
	}
	if r.rescale > 0 {
		// dgrad writes M×K per linear (each linear's own input gradient),
		// wgrad K×N in total.
		out := nl*ex + ew
		bwd = add(bwd, cost{out, out * r.rescale / 2, out * r.rescale / 2})
	}
	return fwdOp{op: Op{Name: name + "_fp8_quant", Block: blk, Class: ClassMemory, Quant: QuantCast,
		FLOPs: fwd.flops, BytesRead: fwd.read, BytesWritten: fwd.write, Batch: 1},
		kind: kindMem, bwd: bwd, quant: true}
}
