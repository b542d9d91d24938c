package workload

// Unpadded (varlen) attention inputs. llm-foundry's flash_attn_fn
// (llmfoundry/models/layers/attention.py, commit 5e85bd62, the 2024-01 H100
// benchmarks' attn_impl: flash) calls flash-attn's bert_padding.unpad_input
// on the query, the key and the value separately, runs
// flash_attn_varlen_func on the packed rows and calls pad_input on its
// output, in every layer, even when no token is padding (the mask is then
// all ones). In flash-attn 2.4.2's bert_padding.py:
//
//	unpad_input   IndexFirstAxis: torch.gather of the rows, reading and
//	              writing the tensor once; backward: torch.zeros of the
//	              padded shape, then scatter_ of the gradient into it
//	pad_input     IndexPutFirstAxis: torch.zeros of the padded shape, then
//	              output[indices] = values; backward: grad_output[indices]
//
// so each of Q, K and V costs a copy forward and a zero-fill plus a copy
// backward, and the output a zero-fill plus a copy forward and a copy
// backward. The index tensor is an expanded (stride-0) view whose reads
// hit the cache, and the per-call mask kernels (sum, nonzero, cumsum) are
// per token; neither is priced. Nor are the host synchronisations of
// nonzero and .item() in each unpad_input call (six per layer), which
// simtrain does not model for dense layers.

// unpadKernels returns the kernels of unpad_input on the query (q
// elements), key (k) and value (v) at activation width a: the forward
// gathers, and the backward's zero-fill and scatter for each.
func unpadKernels(q, k, v, a float64) (fwd, bwd eagerKernels) {
	for _, t := range []struct {
		name string
		n    float64
	}{{"q", q}, {"k", k}, {"v", v}} {
		fwd.add("gather_"+t.name, 0, t.n*a, t.n*a)
	}
	for _, t := range []struct {
		name string
		n    float64
	}{{"q", q}, {"k", k}, {"v", v}} {
		bwd.add("zeros_"+t.name, 0, 0, t.n*a)
		bwd.add("scatter_"+t.name, 0, t.n*a, t.n*a)
	}
	return fwd, bwd
}

// padKernels returns the kernels of pad_input on the attention output (o
// elements at width a): the forward's zero-fill and index_put, and the
// backward's gather.
func padKernels(o, a float64) (fwd, bwd eagerKernels) {
	fwd.add("zeros", 0, 0, o*a)
	fwd.add("index_put", 0, o*a, o*a)
	bwd.add("gather", 0, o*a, o*a)
	return fwd, bwd
}
