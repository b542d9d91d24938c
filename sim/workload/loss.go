package workload

import (
	"fmt"
	"strings"
)

// CrossEntropy is how the output layer computes the cross-entropy over the
// vocabulary; it decides the loss kernels' HBM traffic (see HeadOps).
type CrossEntropy uint8

const (
	// CrossEntropyFused is one fused kernel per pass that reads the
	// low-precision logits and does the fp32 math in registers:
	// flash-attn's cross_entropy (llm-foundry's MPT default), Megatron-Core
	// with --cross-entropy-loss-fusion, Transformer Engine's, Inductor's.
	CrossEntropyFused CrossEntropy = iota
	// CrossEntropyUnfused is PyTorch's F.cross_entropy on fp32-upcast
	// logits: cast, log_softmax, nll_loss and their backward kernels
	// (eager torchtitan, autocast's fp32 cross_entropy).
	CrossEntropyUnfused
	// CrossEntropyVocabParallel is Megatron-LM's VocabParallelCrossEntropy
	// without --cross-entropy-loss-fusion (the default through
	// Megatron-Core r0.8.0 and in the 2021 code): the logits upcast with
	// .float(), then max, in-place subtract, in-place exp, sum and in-place
	// divide as separate ATen kernels over the fp32 logits, whose softmax
	// the backward scales in place before the cast back.
	CrossEntropyVocabParallel
	// CrossEntropyUnfusedNative is PyTorch's F.cross_entropy called on the
	// 16-bit logits without an upcast (KempnerForge's scripts/train.py on
	// its bf16 model's output): log_softmax writes its output at the
	// logits' width (fp32 math inside the kernel), nll_loss's backward a
	// dense gradient at that width, log_softmax's backward reads both and
	// writes its result: no cast kernels and half the bytes of unfused.
	CrossEntropyUnfusedNative
)

var crossEntropyNames = []string{"fused", "unfused", "vocab-parallel", "unfused-native"}

func (c CrossEntropy) String() string { return crossEntropyNames[c] }

// CrossEntropyNames lists the values of training.cross_entropy (a fresh slice).
func CrossEntropyNames() []string { return append([]string(nil), crossEntropyNames...) }

// ParseCrossEntropy parses a cross-entropy implementation name.
func ParseCrossEntropy(s string) (CrossEntropy, error) {
	for i, n := range crossEntropyNames {
		if n == s {
			return CrossEntropy(i), nil
		}
	}
	return 0, fmt.Errorf("unknown cross-entropy %q (valid: %s)", s, strings.Join(crossEntropyNames, ", "))
}

// LossBytesPerLogit is the memory the cross-entropy holds at its peak per
// logit (a token × vocabulary entry of the rank's shard), beside the
// activations still saved for the backward:
//
//   - fused and vocab-parallel: 4 bytes, the fp32 logits (Korthikanti et
//     al. 2022, §4.3: the 4·s·b·V/t of the output layer); a fused kernel
//     keeps the bf16 logits and writes their bf16 gradient, Megatron's
//     vocab-parallel path works in place on one fp32 copy.
//   - unfused: 12 bytes, PyTorch's F.cross_entropy on the fp32 upcast at the
//     start of the backward: log_softmax saved its fp32 output for the
//     backward, nll_loss's backward writes a dense fp32 gradient of it, and
//     log_softmax's backward allocates its fp32 result beside both
//     (aten log_softmax_backward_data is out of place). In the forward it
//     holds 10 (the bf16 logits, their fp32 copy and the log-probabilities;
//     torchtitan deletes the bf16 logits before loss.backward()).
//   - unfused-native: 8 bytes, the same three tensors at 16 bits plus the
//     logits the caller still holds (KempnerForge keeps them in a local
//     variable through the backward).
func LossBytesPerLogit(c CrossEntropy) float64 {
	switch c {
	case CrossEntropyUnfused:
		return 12
	case CrossEntropyUnfusedNative:
		return 8
	}
	return 4
}

// vocabParallelCrossEntropy returns the forward and backward kernels of
// Megatron-LM's unfused VocabParallelCrossEntropy over e fp32 logits of tok
// tokens, upcast from activation width a (megatron/core/tensor_parallel/
// cross_entropy.py at core_r0.8.0; megatron/mpu/cross_entropy.py in 2021):
//
//	.float()          read e·a, write 4e      (skipped when a = 4)
//	max(dim=-1)       read 4e, write 4/token
//	-= logits_max     read 4e, write 4e       (in place)
//	exp(out=)         read 4e, write 4e       (in place)
//	sum(dim=-1)       read 4e, write 4/token
//	predicted logit and log(sum) − predicted: per-token gathers and
//	                  arithmetic, read 12, write 4 per token (folded into
//	                  one kernel; they are tiny beside the vocabulary passes)
//	div_(sum)         read 4e, write 4e       (the softmax saved for backward)
//
// backward: grad_input.mul_(grad_output) reads and writes the saved softmax
// (4e each; the per-token "−= 1" at the targets is folded in), and the cast
// back to activation width reads 4e and writes e·a. In all 48e + 2·e·a
// bytes, 52 per bf16 logit, against the fused kernel's 6.
func vocabParallelCrossEntropy(e, tok, a float64) (fwd, bwd eagerKernels) {
	const f = 4 // fp32
	fwd.cast("to_fp32", e, a, f)
	fwd.add("max", e, f*e, f*tok)
	fwd.add("sub_max", e, f*e+f*tok, f*e)
	fwd.add("exp", e, f*e, f*e)
	fwd.add("sum", e, f*e, f*tok)
	fwd.add("loss", 2*tok, 12*tok, f*tok)
	fwd.add("softmax", e, f*e+f*tok, f*e)
	bwd.add("grad_scale", e, f*e+f*tok, f*e)
	bwd.cast("to_act", e, f, a)
	return fwd, bwd
}
