package workload

// torch.autocast over fp32 parameters (Shape.Autocast).
//
// Eager mixed-precision training without FSDP (DDP or one GPU; Hugging Face
// Trainer's --fp16/--bf16 through Accelerate's native AMP, Lightning's
// "16-mixed"/"bf16-mixed", hand-written loops) keeps the model's parameters
// in fp32 and runs the forward under torch.autocast. Autocast's op
// reference (PyTorch amp.html, "CUDA Ops that can autocast to float16":
// addmm, linear, matmul, …) casts each such op's fp32 inputs to 16 bits
// first: for a linear layer that is its weight, a separate cast kernel
// (aten::_to_copy) reading 4 and writing 2 bytes per weight element, once
// per forward (autocast caches the cast of a leaf tensor only inside one
// autocast-enabled region, so every micro-batch casts again). Autograd
// records the cast too: the weight gradient the GEMM produces in 16 bits
// goes through ToCopyBackward to reach the fp32 parameter's .grad, a
// second kernel reading 2 and writing 4 bytes per element after the
// weight-gradient GEMM. With FSDP the cast happens once per all-gather
// (MixedPrecision param_dtype) and Megatron, DeepSpeed and Transformer
// Engine keep 16-bit model weights, so none of them pays these kernels.
// The attention's batched products have no weight and no cast.
//
// The residual stream is fp32 too: the embedding lookup of an fp32 table
// is not an autocast op, LayerNorm is on autocast's fp32 list (PyTorch
// amp.html, "CUDA Ops that can autocast to float32": layer_norm), and
// adding a linear's 16-bit output to the fp32 stream promotes to fp32. So
// each input norm and the final norm read and write 4 bytes per element,
// their fp32 output is cast to 16 bits for the linear after it (and its
// gradient back), and each residual add reads the 16-bit branch and the
// fp32 stream and writes fp32, its backward summing the fork's fp32
// gradients and casting the branch's to 16 bits (ops.go streamNorm,
// residual). The embedding's own fp32 output and the activations the
// backward keeps at fp32 (memory) are not priced.
//
// With gradient accumulation the fp32 gradient reaches a .grad that is
// already there on every micro-batch but the first of a step (after
// zero_grad(set_to_none=True), PyTorch's default from 2.0, the first one's
// gradient becomes .grad), and autograd's AccumulateGrad adds it in place
// (torch/csrc/autograd/functions/accumulate_grad.h accumulateGrad:
// variable_grad += new_grad): a kernel reading both fp32 gradients and
// writing the sum, 8 bytes read and 4 written per weight element. DDP
// under no_sync, one GPU and FSDP's no_sync all accumulate so; Megatron's
// fused weight-gradient accumulation adds inside the wgrad GEMM and pays
// nothing. The micro-batches share one op list, so the add is priced on
// every micro-batch's gradient cast at Shape.GradAccumulate = (m−1)/m of
// its bytes (the step's total is exact; no kernel of its own is counted).
// Biases, norm weights and an untied embedding table accumulate too and
// are not priced (a GPT's linear weights are over 99% of its parameters
// besides the embeddings).
//
// The same add happens without autocast (round 17, gradacc17): under
// Shape.GradAccumulate each linear's wgrad GEMM is followed by a memory
// kernel (<gemm>_grad_acc) that reads 2·GradAccumWidth and writes
// GradAccumWidth bytes per element of its GradAccumShard of the weight:
// autograd's AccumulateGrad at the parameter dtype (fp32/TF32 weights 4
// bytes, 16-bit weights 2) on one GPU and under DDP, and FSDP's add of
// the reduce-scattered shard (1/dp of the weight, off by default:
// sim/scenario plan.go gradAccumulate says which framework adds what). It
// is a kernel of its own on every micro-batch's op list, its bytes scaled
// by (m−1)/m, so its launch is counted m times rather than m−1.

// autocastWeight adds the cast of a linear layer's K×N weight (batch of
// them, for grouped experts) before its GEMM; its backward op, the
// gradient's cast back to fp32, runs after the GEMM's wgrad (bwdList
// reverses the forward list).
func (b *builder) autocastWeight(name string, blk Block, k, n, batch int) {
	w := float64(k) * float64(n) * float64(max(batch, 1))
	const f = 4
	b.mem(name+"_autocast", blk, cost{w, f * w, b.gin * w},
		cost{w + w*b.accum[2], b.gin*w + w*b.accum[0], f*w + w*b.accum[1]})
}
