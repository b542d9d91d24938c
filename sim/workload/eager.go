package workload

// Eager PyTorch elementwise kernels (training.compile: false).
//
// The builder prices every elementwise module of a layer (norm, RoPE,
// activation, residual add, dropout) as one kernel that reads its inputs and
// writes its outputs once at activation width: what torch.compile (Inductor)
// or hand-fused kernels (Megatron-LM, Transformer Engine, flash-attn) give.
// Eager PyTorch runs the model's Python op by op: each ATen op is its own
// kernel that reads its operands from HBM and writes its result back, the
// model code upcasts to fp32 on the way, and autograd runs one or more
// kernels per op in the backward. This file lists those kernels for the
// modules of torchtitan's Llama at the December-2024 commit 9dec370 (the
// code of the torchtitan-2024-12 benchmark rows), each with its HBM bytes;
// every kernel is a separate ClassMemory Op, so OpTime charges it its own
// KernelOverhead (the launch count is the op count).
//
// Notation: n elements of the module's tensor in r rows, a the activation
// width in bytes (2 for bf16; storageBytes), 4 for fp32. Per-row terms are
// the fp32 row statistics; the norm weight (one row of w values) is
// neglected. With fp32 activations (a = 4) .float() and .type_as() return
// their input without a kernel, so those kernels are left out. Views
// (reshape, view_as_complex, view_as_real, flatten, expand) launch nothing.
// FLOPs: one per element written (three per real element for the complex
// product); these kernels are bandwidth-bound, the FLOPs only matter for the
// roofline's compute term.
//
// RMSNorm (torchtitan/models/norms.py, RMSNorm.forward and _norm:
// output = (x.float() * rsqrt(x.float().pow(2).mean(-1, keepdim) + eps))
// .type_as(x); return output * weight):
//
//	forward                      read          write
//	to_fp32     x.float()        a·n           4n
//	pow         x.pow(2)         4n            4n
//	mean        .mean(-1)        4n            4r
//	add_eps     + eps            4r            4r
//	rsqrt       torch.rsqrt      4r            4r
//	mul_rstd    x · rstd         4n + 4r       4n
//	type_as     .type_as(x)      4n            a·n
//	mul_weight  output · weight  a·n           a·n
//	                             = 20n + 12r   16n + 12r  (a = 2)
//
// Autograd saves x.float() (for pow and mul), rstd, the bf16 output and the
// weight. The backward, in execution order (derivative formulas of
// PyTorch's tools/autograd/derivatives.yaml and FunctionsManual.cpp: mul's
// gradients are grad·other, reduced to a broadcast operand's shape by a sum;
// rsqrt's is −0.5·grad·result³; mean's is grad expanded and divided by the
// width; pow(x, 2)'s is grad·(2·x.pow(1)), where pow with exponent 1 is a
// copy; a tensor used twice has its two gradients added):
//
//	backward                              read         write
//	mul_weight       grad · weight        a·n          a·n
//	mul_weight_wgrad grad · output        2a·n         a·n
//	sum_weight       sum over rows        a·n          (w values)
//	type_as          grad.float()         a·n          4n
//	mul_rstd         grad · rstd          4n + 4r      4n
//	mul_rstd_rgrad   grad · x             8n           4n
//	sum_rstd         sum over the width   4n           4r
//	rsqrt ×3         pow 3, ·(−0.5), ·    16r          12r
//	mean             expand / width       4r           4n
//	pow ×3           x.pow(1), ·2, grad·  16n          12n
//	accumulate       the two x grads      8n           4n
//	to_fp32          grad.to(bf16)        4n           a·n
//	                                      = 54n + 24r  38n + 16r  (a = 2)
//
// so an eager RMSNorm moves 128 bytes per element over 24 kernels where the
// fused one moves 10 (plus its 4-byte row statistic) over 2. LayerNorm
// (nn.LayerNorm: one native_layer_norm kernel, one backward) needs no eager
// decomposition: eager prices it as the fused kernel, as it does a norm
// under training.fused_norm (torchtitan's fused_rmsnorm Triton kernel).
//
// RoPE (torchtitan/models/llama/model.py, apply_rotary_emb: xq_ =
// view_as_complex(xq.float()...); xq_out = view_as_real(xq_ *
// freqs_cis).flatten(3); xq_out.type_as(xq); the same for xk), for each of
// q (n = tokens·local heads·head_dim) and k (tokens·local KV heads·head_dim);
// freqs_cis is complex64, head_dim/2 values (4·head_dim bytes) per token
// position, read once per token (it broadcasts over the heads, which share
// it through L2) and a buffer without gradient:
//
//	forward     to_fp32  a·n → 4n;  mul_freqs  4n + 4·hd·t → 4n;  type_as  4n → a·n
//	backward    type_as  a·n → 4n;  mul_freqs  4n + 4·hd·t → 4n;  to_fp32  4n → a·n
//
// 20 bytes per element each way against the fused kernel's 4, six kernels
// each way against one.
//
// SwiGLU (model.py, FeedForward.forward: w2(F.silu(w1(x)) * w3(x))): silu is
// one ATen kernel and the product another; autograd saves w1(x) (for
// silu_backward), the silu output and w3(x) (for the product):
//
//	forward     silu  a·n → a·n;  mul  2a·n → a·n
//	backward    mul (grad·w3x)  2a·n → a·n;  mul (grad·silu)  2a·n → a·n;
//	            silu_backward  2a·n → a·n
//
// 10 and 18 bytes per element against the fused kernel's 6 and 10. GELU
// (F.gelu: one gelu kernel, one gelu_backward) and the squared ReLU keep the
// fused pricing (the squared ReLU's eager decomposition is not modelled).
//
// Residual adds (TransformerBlock.forward: h = x + attention(...)) are one
// add kernel in eager mode too, and their backward is the accumulation of
// the two gradients of the block input, one add kernel: exactly the fused
// pricing, so eager changes nothing there. Dropout (F.dropout: one
// native_dropout kernel writing the output and the mask) likewise.
//
// Recomputation uses the same kernels: full recompute replays the layer's
// forward list and per-op selective checkpointing replays every memory-bound
// kernel (selectiveOp), which includes every eager forward kernel.

// kernelCost is one eager kernel: its name suffix and its cost.
type kernelCost struct {
	name string
	c    cost
}

// eagerKernels accumulates kernels; casts are dropped when the activation
// width is already fp32.
type eagerKernels []kernelCost

func (k *eagerKernels) add(name string, flops, read, write float64) {
	*k = append(*k, kernelCost{name, cost{flops, read, write}})
}

// cast adds a dtype conversion of n elements from `from` to `to` bytes per
// value, or nothing when the widths agree (.float() on fp32 is a no-op).
func (k *eagerKernels) cast(name string, n, from, to float64) {
	if from == to {
		return
	}
	k.add(name, n, from*n, to*n)
}

// eagerRMSNorm returns the forward and backward kernels of torchtitan's
// eager RMSNorm over n elements in r rows at activation width a (see the
// table above). The backward kernels are in execution order.
func eagerRMSNorm(n, r, a float64) (fwd, bwd eagerKernels) {
	const f = 4 // fp32
	fwd.cast("to_fp32", n, a, f)
	fwd.add("pow", n, f*n, f*n)
	fwd.add("mean", n, f*n, f*r)
	fwd.add("add_eps", r, f*r, f*r)
	fwd.add("rsqrt", r, f*r, f*r)
	fwd.add("mul_rstd", n, f*n+f*r, f*n)
	fwd.cast("type_as", n, f, a)
	fwd.add("mul_weight", n, a*n, a*n)

	bwd.add("mul_weight", n, a*n, a*n)
	bwd.add("mul_weight_wgrad", n, 2*a*n, a*n)
	bwd.add("sum_weight", n, a*n, 0)
	bwd.cast("type_as", n, a, f)
	bwd.add("mul_rstd", n, f*n+f*r, f*n)
	bwd.add("mul_rstd_rgrad", n, 2*f*n, f*n)
	bwd.add("sum_rstd", n, f*n, f*r)
	bwd.add("rsqrt_pow", r, f*r, f*r)
	bwd.add("rsqrt_scale", r, f*r, f*r)
	bwd.add("rsqrt_mul", r, 2*f*r, f*r)
	bwd.add("mean", n, f*r, f*n)
	bwd.add("pow_copy", n, f*n, f*n)
	bwd.add("pow_scale", n, f*n, f*n)
	bwd.add("pow_mul", n, 2*f*n, f*n)
	bwd.add("accumulate", n, 2*f*n, f*n)
	bwd.cast("to_fp32", n, f, a)
	return fwd, bwd
}

// eagerRoPE returns the kernels of torchtitan's eager apply_rotary_emb on
// nq query and nk key elements over t tokens with rotary head dimension hd
// at activation width a (see the table above).
func eagerRoPE(nq, nk, t float64, hd int, a float64) (fwd, bwd eagerKernels) {
	const f = 4
	freqs := 4 * float64(hd) * t // complex64 freqs_cis rows of the tokens
	fwd.cast("q_to_fp32", nq, a, f)
	fwd.cast("k_to_fp32", nk, a, f)
	fwd.add("q_mul_freqs", 3*nq, f*nq+freqs, f*nq)
	fwd.add("k_mul_freqs", 3*nk, f*nk+freqs, f*nk)
	fwd.cast("q_type_as", nq, f, a)
	fwd.cast("k_type_as", nk, f, a)

	bwd.cast("k_type_as", nk, a, f)
	bwd.cast("q_type_as", nq, a, f)
	bwd.add("k_mul_freqs", 3*nk, f*nk+freqs, f*nk)
	bwd.add("q_mul_freqs", 3*nq, f*nq+freqs, f*nq)
	bwd.cast("k_to_fp32", nk, f, a)
	bwd.cast("q_to_fp32", nq, f, a)
	return fwd, bwd
}

// eagerSwiGLU returns the kernels of torchtitan's eager
// F.silu(w1(x)) * w3(x) on n elements of the inner width (see above).
func eagerSwiGLU(n, a float64) (fwd, bwd eagerKernels) {
	fwd.add("silu", 4*n, a*n, a*n)
	fwd.add("mul", n, 2*a*n, a*n)

	bwd.add("mul_up", n, 2*a*n, a*n)
	bwd.add("mul_gate", n, 2*a*n, a*n)
	bwd.add("silu_bwd", 4*n, 2*a*n, a*n)
	return fwd, bwd
}

// eager adds a module's eager kernels as separate memory-bound forward ops
// named name_kernel; the module's backward kernels, in execution order, ride
// on its last forward op, so bwdList emits them where the module's backward
// runs (all other forward kernels of the module have no backward op of
// their own). Backward ops are named name_kernel_bwd.
func (b *builder) eager(name string, blk Block, fwd, bwd eagerKernels) {
	if len(fwd) == 0 {
		return
	}
	back := make([]Op, len(bwd))
	for i, k := range bwd {
		back[i] = Op{Name: name + "_" + k.name + "_bwd", Block: blk, Class: ClassMemory, Pass: Backward,
			FLOPs: k.c.flops, BytesRead: k.c.read, BytesWritten: k.c.write, Batch: 1}
	}
	for i, k := range fwd {
		f := fwdOp{op: Op{Name: name + "_" + k.name, Block: blk, Class: ClassMemory,
			FLOPs: k.c.flops, BytesRead: k.c.read, BytesWritten: k.c.write, Batch: 1}, kind: kindAten}
		if i == len(fwd)-1 {
			f.bwdOps = back
		}
		b.ops = append(b.ops, f)
	}
}

// rope adds the rotary embedding of q (qWidth values per token row) and k
// (kWidth) with rotary head dimension hd: one fused kernel reading and
// writing both once, or torchtitan's eager kernels under Shape.Eager.
func (b *builder) rope(name string, blk Block, rows float64, qWidth, kWidth, hd int) {
	if b.eagerOps {
		fwd, bwd := eagerRoPE(rows*float64(qWidth), rows*float64(kWidth), rows, hd, b.act)
		b.eager(name, blk, fwd, bwd)
		return
	}
	e := rows * float64(qWidth+kWidth)
	c := cost{flopsRoPE * e, e * b.act, e * b.act}
	b.mem(name, blk, c, c)
}

// Hugging Face GPT-2's eager layer (transformers 4.20.1, the version
// TorchBench pinned in 2022-23; models/gpt2/modeling_gpt2.py and
// activations.py), run under torch.autocast over fp32 parameters as eager
// mixed-precision training does. Autocast's op reference (PyTorch
// amp.html, "CUDA Ops that can autocast to float32") lists pow and softmax:
// their inputs are cast to fp32 by a kernel of their own, and everything
// computed from them stays fp32 until a GEMM casts its input back (another
// kernel). With fp32 activations (a = 4) the casts vanish.
//
// gelu_new (NewGELUActivation.forward: 0.5 * x * (1.0 + torch.tanh(
// math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))) on n
// elements of fc1's output, w = 4 (the fp32 chain after pow's cast):
//
//	forward                      read         write
//	half_x      0.5 * x          a·n          a·n
//	pow_cast    autocast → fp32  a·n          w·n
//	pow         x³               w·n          w·n
//	mul_coef    0.044715 · x³    w·n          w·n
//	add_x       x + …            (a+w)·n      w·n
//	mul_sqrt    √(2/π) · …       w·n          w·n
//	tanh                         w·n          w·n
//	add_one     1 + tanh         w·n          w·n
//	mul         0.5x · (1+tanh)  (a+w)·n      w·n
//	fc2_cast    fc2's autocast   w·n          a·n
//
// The backward (derivatives.yaml; a scalar add passes its gradient
// through; pow_backward is grad · (3 · x.pow(2)), three kernels; the
// engine casts a gradient to its input's dtype; x collects three
// gradients, two adds):
//
//	fc2_cast    grad → fp32                 a·n       w·n
//	mul_other   grad · 0.5x                 (w+a)·n   w·n
//	mul_self    grad · (1+tanh)             2w·n      w·n
//	self_cast   → 0.5x's dtype              w·n       a·n
//	tanh_bwd    grad · (1 − tanh²)          2w·n      w·n
//	mul_sqrt    grad · √(2/π)               w·n       w·n
//	add_cast    x's gradient → x's dtype    w·n       a·n
//	mul_coef    grad · 0.044715             w·n       w·n
//	pow_sq      x.pow(2)                    w·n       w·n
//	pow_scale   3 · x²                      w·n       w·n
//	pow_mul     grad · 3x²                  2w·n      w·n
//	pow_cast    → x's dtype                 w·n       a·n
//	half_x      grad · 0.5                  a·n       a·n
//	accumulate  ×2, x's three gradients     2a·n      a·n
//
// With a = 2: 10 kernels reading 40 and writing 36 bytes per element
// forward against the fused GELU's one kernel reading and writing 2; 15
// kernels reading 70 and writing 48 backward against one reading 4 and
// writing 2.
func eagerGELUNew(n, a float64) (fwd, bwd eagerKernels) {
	const f = 4
	w := max(a, f) // pow's fp32 chain under autocast
	fwd.add("half_x", n, a*n, a*n)
	fwd.cast("pow_cast", n, a, w)
	fwd.add("pow", 2*n, w*n, w*n)
	fwd.add("mul_coef", n, w*n, w*n)
	fwd.add("add_x", n, (a+w)*n, w*n)
	fwd.add("mul_sqrt", n, w*n, w*n)
	fwd.add("tanh", 12*n, w*n, w*n)
	fwd.add("add_one", n, w*n, w*n)
	fwd.add("mul", n, (a+w)*n, w*n)
	fwd.cast("fc2_cast", n, w, a)

	bwd.cast("fc2_cast", n, a, w)
	bwd.add("mul_other", n, (w+a)*n, w*n)
	bwd.add("mul_self", n, 2*w*n, w*n)
	bwd.cast("self_cast", n, w, a)
	bwd.add("tanh_bwd", 3*n, 2*w*n, w*n)
	bwd.add("mul_sqrt", n, w*n, w*n)
	bwd.cast("add_cast", n, w, a)
	bwd.add("mul_coef", n, w*n, w*n)
	bwd.add("pow_sq", n, w*n, w*n)
	bwd.add("pow_scale", n, w*n, w*n)
	bwd.add("pow_mul", n, 2*w*n, w*n)
	bwd.cast("pow_cast", n, w, a)
	bwd.add("half_x", n, a*n, a*n)
	bwd.add("accumulate", n, 2*a*n, a*n)
	bwd.add("accumulate2", n, 2*a*n, a*n)
	return fwd, bwd
}

// eagerAttnSoftmax returns the kernels between the two attention GEMMs of
// GPT-2's eager _attn (transformers 4.20.1) on e = batch·heads·q·k score
// elements with a causal mask of m = q·k elements:
//
//	attn_weights = attn_weights / (float(value.size(-1)) ** 0.5)
//	causal_mask = self.bias[…].bool()          (a uint8 buffer: a copy)
//	attn_weights = torch.where(causal_mask, attn_weights, <min value>)
//	attn_weights = nn.Softmax(dim=-1)(attn_weights)   (fp32 under autocast)
//	attn_weights = attn_weights.type(value.dtype)
//
// (the minimum value is a 0-dim tensor, masked_bias cast or mask_value
// copied by .to(device) depending on the version: one tiny kernel or copy,
// left out)
//
//	forward                  read          write
//	scale      div           a·e           a·e
//	mask_bool  .bool()       m             m
//	mask       where         a·e + m       a·e
//	to_fp32    autocast      a·e           4e
//	softmax                  4e            4e
//	type       → value's     4e            a·e
//	backward
//	type       → fp32        a·e           4e
//	softmax    _softmax_backward_data  8e  4e
//	to_fp32    → a           4e            a·e
//	mask       where(mask, grad, 0)  a·e + m   a·e
//	scale      grad / √d     a·e           a·e
//
// (the mask is read once per head from L2). The dropout after it is
// builder.dropout, one native_dropout kernel either way. Megatron's and
// torch.compile's fused scale-mask-softmax is one kernel each way.
func eagerAttnSoftmax(e, m, a float64) (fwd, bwd eagerKernels) {
	const f = 4
	fwd.add("scale", e, a*e, a*e)
	fwd.add("mask_bool", 0, m, m)
	fwd.add("mask", e, a*e+m, a*e)
	fwd.cast("to_fp32", e, a, f)
	fwd.add("softmax", flopsSoftmax*e, f*e, f*e)
	fwd.cast("type", e, f, a)

	bwd.cast("type", e, a, f)
	bwd.add("softmax", 2*flopsSoftmax*e, 2*f*e, f*e)
	bwd.cast("to_fp32", e, f, a)
	bwd.add("mask", e, a*e+m, a*e)
	bwd.add("scale", e, a*e, a*e)
	return fwd, bwd
}
