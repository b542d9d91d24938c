package workload

import (
	"fmt"
	"strings"
)

// CPImpl is how context parallelism runs the attention across the CP ranks.
// Every implementation splits the sequence in 2·cp chunks, two per rank
// (the load-balanced causal split), and all-gathers the keys and values;
// they differ in what else the ring costs.
type CPImpl uint8

const (
	// CPAllGather all-gathers K and V once per attention (overlapped with
	// the local block) and reduce-scatters dK and dV after the backward
	// kernel, with the per-block partial results combined inside the
	// attention kernel (Transformer Engine's cp_comm_type all_gather).
	CPAllGather CPImpl = iota
	// CPPyTorch is PyTorch's experimental context_parallel (torch.
	// distributed.tensor.experimental._attention, rotate method allgather,
	// torchtitan's default in 2024-25): one SDPA call per ring step on the
	// local queries against one rank's keys, the partial outputs merged in
	// fp32 by _SDPAMerger; in the backward the keys and values are
	// all-gathered again, and dK and dV are accumulated in fp32 and passed
	// one rank along the ring after every step (an ALL_TO_ALL rotater), the
	// last pass waited for after the loop. ringKernels prices the merge and
	// accumulation kernels; the parallel package the rotation.
	CPPyTorch
	// CPP2P is Transformer Engine's cp_comm_type p2p, Megatron-Core's
	// default (AttnFuncWithCPAndKVP2P in transformer_engine/pytorch/
	// attention/dot_product_attention/context_parallel.py): K and V pass
	// one rank along the ring per step while the step's attention runs;
	// each step's output is folded into the running output with its
	// log-sum-exp (flash_attn_fwd_out_correction, a fused kernel at the
	// activation width); the backward passes K/V and the accumulated dK/dV
	// together, in one activation-width buffer, and sends the finished
	// dK/dV home after the last step.
	CPP2P
)

var cpImplNames = []string{"allgather", "pytorch", "p2p"}

// CPImplNames lists the values of parallel.cp_impl (a fresh slice).
func CPImplNames() []string { return append([]string(nil), cpImplNames...) }

func (c CPImpl) String() string {
	if int(c) < len(cpImplNames) {
		return cpImplNames[c]
	}
	return fmt.Sprintf("CPImpl(%d)", c)
}

// ParseCPImpl parses a context-parallel implementation name.
func ParseCPImpl(s string) (CPImpl, error) {
	for i, n := range cpImplNames {
		if n == s {
			return CPImpl(i), nil
		}
	}
	return 0, fmt.Errorf("unknown context-parallel implementation %q (valid: %s)", s, strings.Join(cpImplNames, ", "))
}

// repeatKVKernels returns the kernels of materialising k and v elements of
// keys and values (at activation width a) rep times each, once for the keys
// and once for the values: torchtitan's Llama repeat_kv (models/llama/
// model.py at 9dec370: x[:, :, :, None, :].expand(...).reshape(...), a copy
// because the expanded view cannot be reshaped in place) before
// F.scaled_dot_product_attention. Its backward is expand's: a sum of the
// rep gradient copies back to one head. torch.compile cannot drop the copy:
// the attention kernel is an external kernel that reads materialised
// inputs.
func repeatKVKernels(k, v float64, rep int, a float64) (fwd, bwd eagerKernels) {
	r := float64(rep)
	fwd.add("k", 0, k*a, r*k*a)
	fwd.add("v", 0, v*a, r*v*a)
	bwd.add("v_sum", r*v, r*v*a, v*a)
	bwd.add("k_sum", r*k, r*k*a, k*a)
	return fwd, bwd
}

// ringKernels returns the elementwise kernels of PyTorch's ring attention
// (CPPyTorch) on one CP rank of cp: n output elements, q query, k key and
// v value elements of the rank's local sequence as the attention kernel
// sees them (after any repeat_kv), activations of width a. The counts
// follow torch/distributed/tensor/experimental/_attention.py
// (_templated_ring_attention, _SDPAMerger, _templated_ring_attention_backward
// with convert_to_f32 true, the default) for the rank that runs the most
// of them, the last one, whose every step past the first attends to the
// first half of the remote keys with all its queries.
//
// Forward: the local K and V are made contiguous (the model transposes
// them) and concatenated into the send buffer; each step's bf16 output is
// cast to fp32 and merged into the running fp32 output,
// out − sigmoid(lse_b − lse)·(out − out_b); the result is cast back.
// Backward: fp32 zero buffers for dQ, dK and dV; K and V made contiguous
// and packed again (the backward all-gathers them too); every step adds
// the kernel's dQ, dK and dV into the fp32 buffers (dK and dV through
// _partial_update, which also re-concatenates the halves) and packs dK and
// dV into the rotation buffer; the sums are cast back at the end.
//
// Eager PyTorch runs each of these ops as its own kernel: 4 kernels per
// merge on the output (cast, two subtractions, the product with the
// sigmoid; the log-sum-exp ones, per row, are left out), and the K/V pack
// is redone every step although the all-gather only sends the first.
// Under torch.compile (torchtitan compiles each TransformerBlock with
// fullgraph=True, so the ring is traced with it) Inductor fuses each
// step's pointwise work into one kernel that reads its inputs once and
// drops the unused packs.
func ringKernels(cp int, n, q, k, v, a float64, eager bool) (fwd, bwd eagerKernels) {
	steps := float64(cp)
	kv := k + v
	if eager {
		fwd.add("kv_contiguous", 0, kv*a, kv*a)
		fwd.add("kv_pack", 0, (steps-1)*kv*a, (steps-1)*kv*a)
		fwd.cast("out_to_fp32", steps*n, a, 4)
		fwd.add("merge", 3*(steps-1)*n, (steps-1)*24*n, (steps-1)*12*n)
		fwd.cast("out_cast", n, 4, a)
		bwd.add("zeros", 0, 0, 4*(q+kv))
		bwd.add("kv_contiguous", 0, kv*a, kv*a)
		bwd.add("kv_pack", 0, (steps-1)*kv*a, (steps-1)*kv*a)
		bwd.add("dq_accumulate", steps*q, steps*(4+a)*q, steps*4*q)
		// first step: dK += dK_step; later steps: the half-size add of
		// _partial_update and the concatenation of the two halves
		bwd.add("dkv_accumulate", steps*kv, (4+a)*kv+(steps-1)*(2+a/2+4)*kv, 4*kv+(steps-1)*6*kv)
		bwd.add("dkv_pack", 0, steps*4*kv, steps*4*kv)
		bwd.cast("grad_cast", q+kv, 4, a)
		return fwd, bwd
	}
	fwd.add("kv_pack", 0, kv*a, kv*a)
	fwd.add("merge", 3*(steps-1)*n, (steps-1)*(a+4)*n, (steps-1)*4*n)
	fwd.cast("out_cast", n, 4, a)
	bwd.add("zeros", 0, 0, 4*(q+kv))
	bwd.add("kv_pack", 0, kv*a, kv*a)
	bwd.add("accumulate", steps*(q+kv), steps*(4+a)*(q+kv), steps*4*(q+kv))
	bwd.cast("grad_cast", q+kv, 4, a)
	return fwd, bwd
}

// p2pKernels returns the elementwise kernels of Transformer Engine's p2p
// ring (CPP2P) on one CP rank of cp, sizes as ringKernels': forward, the
// first step's output scaled into the running output and each later
// step's folded in (read the step's output and the running one, write the
// running one, at width a; the per-row log-sum-exp updates are left out);
// backward, K and V copied into the ring buffer once and every step's dQ,
// dK and dV added into the running sums (read both, write one).
func p2pKernels(cp int, n, q, k, v, a float64) (fwd, bwd eagerKernels) {
	steps := float64(cp)
	kv := k + v
	fwd.add("out_correction", 2*steps*n, steps*2*a*n, steps*a*n)
	bwd.add("kv_copy", 0, kv*a, kv*a)
	bwd.add("grad_accumulate", steps*(q+kv), steps*2*a*(q+kv), steps*a*(q+kv))
	return fwd, bwd
}
