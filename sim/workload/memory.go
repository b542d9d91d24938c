package workload

import (
	"fmt"
	"math"
	"strings"

	"github.com/simtrain/simtrain/sim/pipeline"
)

// optimizerStates is the number of per-parameter state tensors of each
// optimizer (Adam/AdamW: first and second moments; Adagrad: squared-gradient
// sum; SGD with momentum: the momentum buffer).
var optimizerStates = []struct {
	name   string
	states int
}{{"adamw", 2}, {"adam", 2}, {"sgd", 1}, {"adagrad", 1}}

// OptimizerNames lists the optimizers the memory model knows.
func OptimizerNames() []string {
	n := make([]string, len(optimizerStates))
	for i, o := range optimizerStates {
		n[i] = o.name
	}
	return n
}

// OptimizerStates returns the per-parameter state tensors of an optimizer;
// the error lists the valid names.
func OptimizerStates(name string) (int, error) {
	for _, o := range optimizerStates {
		if o.name == name {
			return o.states, nil
		}
	}
	return 0, fmt.Errorf("unknown optimizer %q (valid: %s)", name, strings.Join(OptimizerNames(), ", "))
}

// StateBytes is the model-state memory per parameter, in bytes.
type StateBytes struct {
	Weights   float64 // the compute copy (2 for bf16/fp16 and for fp8 recipes, 4 for fp32/tf32)
	Gradients float64 // in the gradient dtype
	Master    float64 // a master copy when its dtype differs from the weights'
	Optimizer float64 // optimizer states, kept in the master dtype
}

// Total is the bytes per parameter of all model states.
func (b StateBytes) Total() float64 { return b.Weights + b.Gradients + b.Master + b.Optimizer }

// WithStates returns b with the optimizer states held in d instead of the
// master dtype (Megatron-Core's precision-aware optimizer,
// --use-precision-aware-optimizer with --exp-avg-dtype/--exp-avg-sq-dtype:
// DeepSeek-V3's recipes keep both Adam moments in bf16). An unknown
// optimizer leaves b as it is.
func (b StateBytes) WithStates(d Dtype, optimizer string) StateBytes {
	if k, err := OptimizerStates(optimizer); err == nil && d.Valid() {
		b.Optimizer = float64(k) * d.Bytes()
	}
	return b
}

// ModelStateBytes is the per-parameter memory of weights, gradients, master
// weights and optimizer states (Rajbhandari et al. 2020, ZeRO, §3.1: mixed
// precision Adam needs 2 + 2 + K with K = 12 = 4 master + 4 + 4 states, 16
// bytes in all).
func ModelStateBytes(precision, master, grad Dtype, optimizer string) (StateBytes, error) {
	k, err := OptimizerStates(optimizer)
	if err != nil {
		return StateBytes{}, err
	}
	for _, d := range []Dtype{precision, master, grad} {
		if !d.Valid() {
			return StateBytes{}, fmt.Errorf("unknown dtype %v", d)
		}
	}
	b := StateBytes{Weights: precision.storageBytes(), Gradients: grad.storageBytes()}
	if master.Bytes() != b.Weights {
		b.Master = master.Bytes()
	}
	b.Optimizer = float64(k) * master.Bytes()
	return b, nil
}

// LayerActivationBytes is the activation memory one micro-batch of layer
// keeps for its backward on one GPU, following Korthikanti et al. 2022
// (arXiv:2205.05198) §4: every tensor a kernel saves for its backward, at
// the activation width (2 bytes for 16-bit and fp8 recipes, 4 for fp32).
// Sequence-parallel regions (norm inputs, dropout masks, the inputs of the
// first projections) hold tok/tp tokens with SP and tok without; tensor-
// parallel regions hold 1/tp of their width. With context parallelism tok =
// micro-batch × seq/cp. For the paper's GPT (MHA, 4h GELU MLP, dropout,
// 16-bit) this is exactly s·b·h·(34 + 5·a·s/h) bytes without parallelism,
// s·b·h·(10 + 24/t + 5·a·s/(h·t)) with TP and s·b·h·(34 + 5·a·s/h)/t with
// TP+SP. The 5·a·s/h score term disappears with selective recompute or
// FlashAttention, and full recompute keeps only the layer input (2·s·b·h,
// /t with SP).
func (m Model) LayerActivationBytes(layer int, s Shape, r Recompute) float64 {
	if layer < 0 || layer >= m.StackLayers() {
		return 0
	}
	s = s.forLayer(m, layer)
	sh := newSplit(m, s)
	return m.layerActivationBytes(layer, &s, &sh, r)
}

// layerSplits are a stage's shape and split (newSplit) as its layers run
// (Shape.forLayer): the stage's own, and for the BF16 layers of an FP8
// run the BF16 shape and its split, made on first use. forLayer changes
// the dtype alone, and to BF16 for every BF16 layer, so two shapes hold
// every layer's.
type layerSplits struct {
	s, bf16   Shape
	sh, bf16h split
	made      bool
}

// of returns layer's shape and split.
func (l *layerSplits) of(m Model, layer int) (*Shape, *split) {
	if !l.s.IsBF16Layer(m, layer) {
		return &l.s, &l.sh
	}
	return l.bf16Of(m, layer)
}

// bf16Of returns the shape and split of layer, a BF16 layer of the FP8 run.
func (l *layerSplits) bf16Of(m Model, layer int) (*Shape, *split) {
	if !l.made {
		l.bf16 = l.s.forLayer(m, layer)
		l.bf16h, l.made = newSplit(m, l.bf16), true
	}
	return &l.bf16, &l.bf16h
}

// numMemoRecomputes: StageMemory prices a layer once per class
// (layerClasses) under the recomputations below it (none, selective,
// full), whose activation and offload bytes read the layer only through
// its class.
const numMemoRecomputes = RecomputeFull + 1

// layerClasses tells apart the layers whose activation and offload bytes
// differ under recomputation none, selective or full (class): in the
// model's range or not, BF16 in an FP8 run (Shape.IsBF16Layer: priced on
// the BF16 split), a multi-token-prediction layer (Model.IsMTPLayer), an
// MoE layer (Model.IsMoELayer). Those are all layerActivationBytes and
// OffloadBytes read of the layer id on those paths. It holds the fields
// those predicates read, once: a Model method copies the model, which per
// layer cost more than pricing the stage's few classes.
type layerClasses struct {
	stack, layers, dense int // StackLayers, Layers, MoE.DenseLayers
	moe, fp8             bool
	bf16Start, bf16End   int // Shape.BF16AtStart, BF16AtEnd
}

// Bits of layerClasses.class.
const (
	classInRange = 1 << iota
	classBF16
	classMTP
	classMoE
	numLayerClasses = 1 << iota
)

func newLayerClasses(m *Model, s *Shape) layerClasses {
	k := layerClasses{stack: m.StackLayers(), layers: m.Layers, moe: m.MoE != nil, fp8: s.Dtype == FP8,
		bf16Start: s.BF16AtStart, bf16End: s.BF16AtEnd}
	if m.MoE != nil {
		k.dense = m.MoE.DenseLayers
	}
	return k
}

// class is layer id's class: the classInRange, classBF16, classMTP and
// classMoE bits, each the predicate named in layerClasses (the layer tests
// hold them equal on every catalog model).
func (k *layerClasses) class(id int) int {
	c := 0
	in := id >= 0 && id < k.stack
	if in {
		c |= classInRange
	}
	if k.fp8 && id >= 0 && (id < k.bf16Start || (k.bf16End > 0 && id >= k.layers-k.bf16End)) {
		c |= classBF16
	}
	if id >= k.layers && id < k.stack {
		c |= classMTP
	}
	spec := id // specLayer
	if id >= k.layers {
		spec = k.layers - 1
	}
	if k.moe && in && spec >= k.dense {
		c |= classMoE
	}
	return c
}

// specMoE is Model.IsMoELayer(Model.specLayer(id)): the layer whose kind
// id has is an MoE layer.
func (k *layerClasses) specMoE(id int) bool {
	spec := id
	if id >= k.layers {
		spec = k.layers - 1
	}
	return k.moe && spec >= 0 && spec < k.stack && spec >= k.dense
}

// layerActivationBytes is LayerActivationBytes of a layer in range, with s
// as the layer runs (Shape.forLayer) and sh = newSplit(m, s); neither is
// modified (pointers: a split is 456 bytes, copied per call it cost more
// than making it).
func (m Model) layerActivationBytes(layer int, s *Shape, sh *split, r Recompute) float64 {
	a, h := sh.act, float64(m.Hidden)
	T, Tsp := sh.tok, sh.tokSP
	// A multi-token-prediction module also keeps its inputs: the
	// embedding and hidden state (the norms' inputs) and eh_proj's 2h
	// input; under full recompute it keeps the two inputs.
	mtp := 0.0
	if m.IsMTPLayer(layer) {
		mtp = 2 * Tsp * h * a
		if r != RecomputeFull {
			mtp += 2 * T * h * s.savedGEMMInputBytes(a)
		}
	}
	switch r {
	case RecomputeFull:
		return Tsp*h*a + mtp
	case RecomputeSelectiveOp:
		return m.selectiveOpActivationBytes(layer, *s) + mtp
	case RecomputeSaveDots:
		return m.saveDotsActivationBytes(layer, *s) + mtp
	}
	d := sh.d
	hl, kvl := float64(sh.hl), float64(sh.kvl)
	kva := float64(sh.kva) // K and V as the attention kernel saves them
	mask := 0.0
	if m.Dropout {
		mask = 1 // one byte per element
	}
	// With the layernorm module recomputed (RecomputeModules) the norms'
	// outputs are not kept: the first projection's and the MLP's (or
	// router's) input.
	// GEMM inputs are kept at the width the recipe saves them:
	// Transformer Engine's FP8 recipes keep the quantised copy
	// (savedGEMMInputBytes; DeepSeek-V3 arXiv:2412.19437 §3.3.2 caches
	// them in FP8 likewise).
	g := s.savedGEMMInputBytes(a)
	keepNorm := 1.0
	if r == RecomputeSelective && s.RecomputeModules.has(RecomputeLayerNorm) {
		keepNorm = 0
	}
	normOut := keepNorm * Tsp * h * g
	// Attention block: norm input, the first projection's input, Q and K,
	// V, the output projection's input, the output dropout mask.
	act := Tsp*h*a + normOut
	if m.Attention == "mla" && m.MLA != nil {
		ml := m.MLA
		// latent norm inputs and up-projection inputs (replicated over TP)
		act += T * float64(2*ml.QLoRARank+2*ml.KVLoRARank+ml.RopeHeadDim) * a
	}
	qkv := T*(hl+kva)*float64(d.qk)*a + T*kva*float64(d.v)*a
	if m.Attention == "mla" && m.MLA != nil && r == RecomputeSelective && s.RecomputeModules.has(RecomputeMLAUpProj) {
		qkv = 0 // rebuilt from the kept latents before the backward
	}
	act += qkv + T*hl*float64(d.v)*a + Tsp*h*mask
	if m.QKNorm {
		act += T * (hl + kvl) * float64(d.qk) * a
	}
	// FlashAttention keeps O (counted as the output projection's input) and
	// an fp32 log-sum-exp per query row and head, 4·a bytes per token, which
	// the paper's accounting (written before FlashAttention) leaves out and
	// so do we (< 0.2% of a layer).
	if !s.FlashAttention && !(r == RecomputeSelective && s.RecomputeModules.has(RecomputeCoreAttn)) {
		// softmax output (+ dropout mask and output): 5·a·s²·b/t bytes
		scores := float64(sh.b) * hl * float64(sh.sl) * float64(sh.seq)
		act += scores * (a + mask*(1+a))
		if s.Eager {
			// eager PyTorch under autocast keeps the softmax output in
			// fp32 for its backward (eagerAttnSoftmax)
			act += scores * max(4-a, 0)
		}
	}
	// MLP block.
	act += Tsp * h * a // norm input
	if m.IsMoELayer(layer) {
		e := m.MoE
		f := float64(cdiv(e.ExpertFFN, sh.etp))
		te := T * float64(e.TopK) * e.RankLoad()
		if sh.etp != sh.tp { // folded: see split.expertTokens
			te = te * float64(sh.etp) / float64(sh.tp)
		}
		// router input (the norm output, kept in bf16 for the router GEMM
		// and the permutation), fp32 probabilities
		act += keepNorm*Tsp*h*a + Tsp*float64(e.Experts)*4
		actOut := te * f * g // the second expert GEMM's input
		if r == RecomputeSelective && s.RecomputeModules.has(RecomputeMoEAct) {
			actOut = 0
		}
		// first expert GEMM's input, its output (the activation's input),
		// the activation output, the second GEMM's output (kept for the
		// probability-weighted combine)
		act += te*h*g + te*float64(m.fc1Width(int(f)))*a + actOut + te*h*a
		if e.SharedExperts > 0 {
			fs := float64(cdiv(e.SharedExperts*e.ExpertFFN, sh.tp))
			act += T*float64(m.fc1Width(int(fs)))*a + T*fs*a
		}
	} else {
		f := float64(cdiv(m.FFN, sh.tp))
		act += normOut + T*float64(m.fc1Width(int(f)))*a + T*f*g
		if s.Eager && m.Activation == "gelu_new" {
			// eager gelu_new (eagerGELUNew) keeps 0.5x in place of x and
			// three fp32 tensors more: pow's fp32 input, tanh's output and
			// 1 + tanh (the last product's other operand)
			act += 3 * 4 * T * f
		}
	}
	act += Tsp * h * mask
	return act + mtp
}

// selectiveOpActivationBytes is what per-op selective checkpointing keeps
// for one micro-batch of layer (see selectiveOp): the layer input, the
// output of every odd-numbered projection (the saved aten.mm results), the
// FlashAttention output O, and with TP + SP the two reduce-scatter outputs
// (attention and MLP). Everything else is recomputed from these.
func (m Model) selectiveOpActivationBytes(layer int, s Shape) float64 {
	b := m.forward(layer, s)
	defer b.release()
	a, h := b.act, float64(m.Hidden)
	act := b.tokSP * h * a
	count := 0
	var one [1]linear
	for _, f := range b.ops {
		switch {
		case f.kind == kindAttn:
			act += b.tok * float64(b.hl*b.d.v) * a
		case f.kind == kindGEMM && f.op.Block != BlockAttnCore:
			for _, p := range f.linears(&one) {
				count++
				if count%2 != 0 {
					act += float64(f.op.M) * float64(p.n) * float64(f.op.Batch) * a
				}
			}
		}
	}
	if b.tp > 1 && s.SP {
		act += 2 * b.tokSP * h * a
	}
	return act
}

// saveDotsActivationBytes is what the save-dots policy keeps for one
// micro-batch of layer (see saveDots): the layer input, the output of every
// projection GEMM except the dense MLP's closing one (fc2, shared_fc2: its
// output only feeds the residual add that makes the layer output, which no
// backward kernel reads, so JAX keeps no residual for it), the fused
// attention output O, and on MoE layers the dispatched tokens (expert_fc1's
// input). The attention output projection's output is kept after its TP
// reduction (the reduce-scatter's tok/tp rows with SP, the all-reduce's
// full rows without), so no collective is rerun: the kept tensor is what
// the attention residual add reads. FlashAttention's fp32 log-sum-exp is
// left out as in LayerActivationBytes.
func (m Model) saveDotsActivationBytes(layer int, s Shape) float64 {
	b := m.forward(layer, s)
	defer b.release()
	a, h := b.act, float64(m.Hidden)
	act := b.tokSP * h * a
	for _, f := range b.ops {
		switch {
		case f.kind == kindAttn:
			act += b.tok * float64(b.hl*b.d.v) * a
		case f.kind != kindGEMM || f.op.Block == BlockAttnCore:
		case f.op.Name == "fc2" || f.op.Name == "shared_fc2":
		case f.op.Name == "out_proj" && b.tp > 1 && s.SP:
			act += b.tokSP * h * a
		default:
			act += float64(f.op.M) * float64(f.op.N) * float64(f.op.Batch) * a
		}
	}
	if m.IsMoELayer(layer) {
		act += b.expertTokens() * h * s.savedGEMMInputBytes(a)
	}
	return act
}

// Framework overhead (estimates, see doc.go).
const (
	// cudaContextBytes: the CUDA context, kernel images and cuBLAS
	// workspaces of a PyTorch process; PyTorch forums report "~700+MB"
	// allocated by the context alone (discuss.pytorch.org/t/81330).
	// Estimate, rounded up.
	cudaContextBytes = 1e9
	// ncclGroupBytes: NCCL buffers of one communicator: Simple 4 MiB +
	// LL128 ≈4.69 MiB + LL 0.5 MiB per channel (hardware-facts §3a
	// [NCCL-TUNE]) × 32 channels ≈ 0.31 GB. Estimate.
	ncclGroupBytes = 0.31e9
	// allocatorFragmentation is the share of the caching allocator's
	// reserved memory that holds no live tensor at the peak. PyTorch's
	// CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp) never
	// returns memory to the device on its own: a freed block stays cached
	// in its stream's pool, a request takes the best-fitting cached block
	// and splits it, and a request no cached block fits gets a new
	// cudaMalloc segment, so the reserved peak is above the live peak by
	// the holes that the activations', gathered weights' and loss
	// buffers' changing sizes leave. Measured: GMLake (Guo et al.,
	// ASPLOS'24, arXiv:2401.08156) removes on average 15% (up to 33%)
	// fragmentation across eight LLMs trained on A100-80GB with PyTorch's
	// allocator; torchtitan#135 (FSDP2, Llama on 8 H100) logged peak
	// active vs peak reserved of 52.13% vs 62.51% of the device with
	// selective checkpointing (16.6% of reserved idle) and 23.92% vs
	// 32.64% with full checkpointing (26.7%). The average of the larger
	// study is taken; the torchtitan pair ran at a quarter to half of the
	// device, where the allocator never needs to release its cache.
	allocatorFragmentation = 0.15
	// allocatorPinned is the part of the cache, as a share of the live
	// tensors, that the allocator cannot give back under pressure: free
	// blocks split off segments that still hold live ones, which
	// release_cached_blocks cannot free. Estimate (the model's former
	// fragmentation allowance); every published run of scenarios/
	// validation and scenarios/holdout fits with it, the tightest (r025)
	// with live tensors at 93% of the device.
	allocatorPinned = 0.05
)

// allocatorReserve is the caching allocator's cache beyond tensors bytes of
// live tensors (Memory.AllocatorReserve): reserved = tensors / (1 −
// allocatorFragmentation), but, when capacity > 0, no more than capacity −
// tensors − outside (outside: the CUDA context and NCCL's buffers,
// allocated beside the allocator), since a cudaMalloc that fails makes the
// allocator free its unused cached segments and retry (release_cached_blocks;
// memory_stats "num_alloc_retries") before it reports out of memory — and
// never less than the part it cannot free (allocatorPinned), so a rank
// whose tensors leave less than that does not fit.
func allocatorReserve(tensors, outside, capacity float64) float64 {
	r := tensors * allocatorFragmentation / (1 - allocatorFragmentation)
	if capacity > 0 {
		r = max(min(r, capacity-tensors-outside), allocatorPinned*tensors)
	}
	return r
}

// FP8ParamBytes is what one parameter kept in FP8 takes: Megatron-LM's
// --fp8-param-gather keeps "the compute param in fp8 (do not use any other
// intermediate dtype)" (arguments.py), as Transformer Engine FP8 tensors.
// A per-tensor-scaled tensor (tensorwise, delayed, rowwise, blockwise) is
// one byte per value plus, where FP8 GEMMs run only in the TN layout
// (Hopper; TE's non_tn_fp8_gemm_supported() is compute capability >= 10,
// transformer_engine/pytorch/csrc/extensions/util.cpp), its cached
// transpose for the backward GEMMs: 2 bytes. MXFP8 scales along rows for
// the forward and along columns for the backward, so it keeps both
// quantisations with one E8M0 scale per 32 values each: 2 + 2/32 bytes.
func FP8ParamBytes(r FP8Recipe, nonTNGEMM bool) float64 {
	switch {
	case r == FP8MXFP8:
		return 2 + 2.0/32
	case nonTNGEMM:
		return 1
	}
	return 2
}

// rankParams is the parameter count on one GPU, split into parameters
// replicated over the data-parallel×context-parallel group ("dense") and
// expert parameters, replicated only over its expert data-parallel part
// (DP·CP/EP; TP·CP·DP/(ETP·EP) with MoE parallel folding).
type rankParams struct {
	dense, expert float64
	maxLayer      float64 // the largest layer on this rank, per GPU (ZeRO-3 gather unit)
}

// layerIDs are the rank's transformer layers: LayerIDs, or Layers
// consecutive layers from Stage·Layers, clamped into the model.
func (in MemoryInput) layerIDs() []int {
	return in.appendLayerIDs(make([]int, 0, max(len(in.LayerIDs), in.Layers)))
}

// appendLayerIDs is layerIDs appended to ids[:0] (StageMemory passes an
// array on its stack: a sweep prices every point's stages, and a new list
// a stage was garbage, fresh pages while its collector seldom runs;
// docs/design.md "Speed", foot36).
func (in MemoryInput) appendLayerIDs(ids []int) []int {
	ids = ids[:0]
	if in.LayerIDs != nil {
		ids = append(ids, in.LayerIDs...)
	} else {
		for i := range max(in.Layers, 0) {
			ids = append(ids, in.Stage*in.Layers+i)
		}
	}
	for i, id := range ids {
		ids[i] = min(max(id, 0), max(in.Model.StackLayers()-1, 0))
	}
	return ids
}

func (in MemoryInput) params(sh split, ids []int) rankParams {
	m := in.Model
	tp, ep := float64(sh.tp), float64(sh.ep)
	var p rankParams
	// A layer's counts read its id through three predicates only: layer
	// reads IsMoELayer(specLayer(id)), the rest IsMoELayer(id) and
	// IsMTPLayer(id). Each combination met is counted once (m.layer per
	// id was a third of StageMemory's time); the sums below add the same
	// values in the same order.
	var seen [8]struct {
		dense, expert float64
		ok            bool
	}
	classes := newLayerClasses(&in.Model, &in.Shape) // the predicates without a Model copy each
	for _, id := range ids {
		k := 0
		if classes.specMoE(id) {
			k |= 1
		}
		c := classes.class(id)
		if c&classMoE != 0 {
			k |= 2
		}
		if c&classMTP != 0 {
			k |= 4
		}
		if c := &seen[k]; c.ok {
			p.dense += c.dense
			p.expert += c.expert
			p.maxLayer = max(p.maxLayer, c.dense+c.expert)
			continue
		}
		lp := m.layer(id)
		attn := lp.attnMatmul / tp
		if m.Attention == "mla" && m.MLA != nil { // down projections are replicated
			ml := m.MLA
			down := float64(m.Hidden) * float64(ml.QLoRARank+ml.KVLoRARank+ml.RopeHeadDim)
			attn = down + (lp.attnMatmul-down)/tp
		}
		dense := attn + lp.attnOther + lp.norms + lp.router
		var expert float64
		if m.IsMoELayer(id) {
			e := m.MoE
			one, oneOther := m.mlpParams(e.ExpertFFN)
			per := (one + oneOther) / tp
			expert = (one + oneOther) / float64(sh.etp) * math.Ceil(float64(e.Experts)/ep)
			dense += per * float64(e.SharedExperts)
		} else {
			dense += (lp.mlpMatmul + lp.mlpOther) / tp
		}
		if m.IsMTPLayer(id) { // eh_proj is column-parallel; the norms are replicated
			dense += m.mtpInputParams() - m.mtpProjParams() + m.mtpProjParams()/tp
		}
		seen[k].dense, seen[k].expert, seen[k].ok = dense, expert, true
		p.dense += dense
		p.expert += expert
		p.maxLayer = max(p.maxLayer, dense+expert)
	}
	vh := float64(m.Vocab) * float64(m.Hidden) / tp
	if in.HasEmbedding {
		emb := vh
		if in.ReplicatedEmbedding {
			emb *= tp // every TP rank holds the whole table
		}
		p.dense += emb + float64(m.MaxPositions)*float64(m.Hidden)
	}
	if in.HasHead {
		p.dense += m.normParams(m.Hidden)
		if !m.TiedEmbeddings || !in.HasEmbedding {
			p.dense += vh // untied head, or the tied copy Megatron keeps on the last stage
		}
		if m.MTPLayers > 0 && !in.HasEmbedding && !m.TiedEmbeddings {
			// multi-token prediction embeds tokens on the last stage: Megatron
			// builds the embedding there too (gpt_model.py: pre_process or
			// mtp_process); a tied model's copy is the head already
			p.dense += vh
		}
	}
	return p
}

// StageMemory is the peak memory of one GPU of a pipeline stage:
//
//   - Weights, Gradients, Optimizer (master copy + states): parameters on
//     the rank (its layers split by TP, experts by EP, the vocabulary-
//     parallel embedding/LM head on the first/last stage) × ModelStateBytes,
//     divided by the ZeRO group (DP·CP; the EDP group DP·CP/EP, or
//     TP·CP·DP/(ETP·EP) folded, for experts, which ETP splits) — optimizer
//     from ZeRO-1, gradients from ZeRO-2, weights from ZeRO-3;
//   - Activations: the rank's LayerActivationBytes × the micro-batches in
//     flight at the schedule's peak (pipeline.Schedule.InFlight),
//     plus, under full or per-op selective recompute, one layer's
//     recomputed activations;
//   - Buffers: the first stage's embedding dropout mask, the last stage's
//     output-layer buffers (Korthikanti et al. §4.3: 4·s·b·h/t·(1 + V/h):
//     norm and head inputs and fp32 logits), with ZeRO-3 the gathered
//     weights of two layers (current + prefetched) and one layer's
//     unsharded gradients, and with context parallelism one layer's
//     gathered K/V (and PyTorch's ring's fp32 gradient buffers, cpBuffers);
//   - Overhead: CUDA context + NCCL buffers per process group (estimates)
//   - the caching allocator's reserve above the live tensors
//     (allocatorReserve: a measured share, bounded by the device).
//
// Invalid input (unknown optimizer or dtype) prices it as AdamW.
func StageMemory(in MemoryInput) Memory {
	m := in.Model
	sh := newSplit(m, in.Shape)
	sb, err := ModelStateBytes(in.Shape.Dtype, in.MasterDtype, in.GradDtype, in.Optimizer)
	if err != nil {
		sb, _ = ModelStateBytes(in.Shape.Dtype, FP32, in.Shape.Dtype, "adamw")
	} else {
		sb = sb.WithStates(in.StateDtype, in.Optimizer)
	}
	if in.WeightBytes > 0 {
		sb.Weights = in.WeightBytes
	}
	var idBuf [160]int // a stage's layers, unless more
	ids := in.appendLayerIDs(idBuf[:0])
	p := in.params(sh, ids)
	cp := float64(max(in.Shape.CP, 1))
	dgrp := float64(max(in.DP, 1)) * cp
	egrp := max(dgrp/float64(sh.ep), 1)
	if sh.etp != sh.tp {
		// folded: the expert data-parallel group is tp·cp·dp/(etp·ep)
		egrp = max(dgrp*float64(sh.tp)/(float64(sh.etp)*float64(sh.ep)), 1)
	}
	shard := func(stage int, bytes float64) float64 {
		if in.Zero >= stage {
			return p.dense*bytes/dgrp + p.expert*bytes/egrp
		}
		return (p.dense + p.expert) * bytes
	}
	var mem Memory
	mem.Weights = shard(3, sb.Weights)
	mem.Gradients = shard(2, sb.Gradients)
	if in.GradBucketCopy && in.Zero == 0 {
		mem.Gradients *= 2 // MemoryInput.GradBucketCopy: DDP's buckets beside .grad
	}
	mem.Optimizer = shard(1, sb.Master+sb.Optimizer)
	if in.Zero == 3 && in.ShardIsMaster && sb.Master > 0 {
		// MemoryInput.ShardIsMaster: the weights are the master's shard
		mem.Weights = shard(3, sb.Master)
		mem.Optimizer = shard(1, sb.Optimizer)
	}
	// Offloaded, the master weights and states are on the GPU only from
	// their reload after the backward through the step, when the
	// activations are gone: the step's peak is checked below.
	stepStates := 0.0
	if in.OffloadOptimizer {
		stepStates, mem.Optimizer = mem.Optimizer, 0
	}

	inflight := pipeline.Of(in.Schedule).InFlight(pipeline.Shape{Stages: in.PP, Microbatches: in.Microbatches, Virtual: in.VirtualStages}, in.Stage)
	perMB, work, reload := in.layerBytes(ids, sh)
	// Offloaded inputs come back one layer ahead of the backward: the
	// layer being differentiated and the next one hold theirs.
	mem.Activations = perMB*inflight + 2*reload
	stepGrads := mem.Gradients // by the optimizer step every gradient is reduced
	if (in.Zero == 2 || in.Zero == 3 && in.GradSyncLast) && in.Microbatches > 1 {
		// ZeRO-2 reduces gradients on the last micro-batch only (the
		// builder's gradReady: FSDP2 under torch.distributed.pipelining
		// turns gradient sync and post-backward resharding off for every
		// backward but the last, stage.py backward_maybe_with_nosync), and
		// so does ZeRO-3 with GradSyncLast (FSDP2's
		// set_requires_gradient_sync(False), FSDP1's no_sync), so
		// the rank's whole gradient accumulates unsharded, in the reduce
		// dtype (FSDPParam.to_accumulated_grad_if_needed upcasts it), from
		// the first backward on. The activations then held are the
		// in-flight micro-batches', less the one whose backward ran when no
		// forward follows it.
		unsharded := (p.dense + p.expert) * sb.Gradients
		after := mem.Activations
		if float64(in.Microbatches) <= inflight {
			after -= perMB
		}
		if unsharded+after > mem.Gradients+mem.Activations {
			mem.Gradients, mem.Activations = unsharded, after
		}
	}

	h := float64(m.Hidden)
	if in.HasEmbedding && m.Dropout {
		mem.Buffers += sh.tokSP * h * inflight
	}
	// Two transients never meet: the loss's buffers live from the logits
	// to the output layer's backward, a recomputed layer's working set and
	// context parallelism's gathered K/V only inside one layer's backward.
	// The larger of the two is the peak's.
	var loss, cpBuf float64
	if in.HasHead {
		vl := cdiv(m.Vocab, sh.tp)
		if in.Shape.ReplicatedLogits {
			vl *= sh.tp // every TP rank holds the gathered logits (Shape.ReplicatedLogits)
		}
		loss = LossBytesPerLogit(in.Shape.CrossEntropy) * sh.tok * float64(vl)
		mem.Buffers += 2 * sh.tokSP * h * sh.act
		// each multi-token-prediction depth's loss runs after the main one
		// and keeps its own norm and head inputs and logits for the backward
		mtp := float64(max(m.MTPLayers, 0))
		mem.Buffers += mtp * (2*sh.tokSP*h*sh.act + sh.tok*float64(cdiv(m.Vocab, sh.tp))*sh.act)
	}
	if in.Zero >= 3 {
		mem.Buffers += p.maxLayer * (2*sb.Weights + sb.Gradients)
	}
	if in.Shape.CP > 1 {
		cpBuf = cpBuffers(m, sh)
	}
	if loss >= work+cpBuf {
		mem.Buffers += loss
	} else {
		mem.Activations += work
		mem.Buffers += cpBuf
	}

	groups := 0
	for _, g := range []int{sh.tp, in.Shape.CP, sh.ep, in.DP, in.PP} {
		if g > 1 {
			groups++
		}
	}
	tensors := mem.Weights + mem.Gradients + mem.Optimizer + mem.Activations + mem.Buffers
	if step := mem.Weights + stepGrads + stepStates; step > tensors {
		// the optimizer step with the reloaded states is the peak
		mem.Gradients, mem.Optimizer, mem.Activations, mem.Buffers = stepGrads, stepStates, 0, 0
		tensors = step
	}
	outside := cudaContextBytes + float64(groups)*ncclGroupBytes
	mem.AllocatorReserve = allocatorReserve(tensors, outside, in.CapacityBytes)
	mem.Overhead = outside + mem.AllocatorReserve
	mem.Total = tensors + mem.Overhead
	return mem
}

// layerBytes is what StageMemory reads of the stage's layers ids on the
// stage's split sh: the activation bytes one micro-batch keeps less what
// it offloads (perMB), the largest recomputed layer's working set (work)
// and the largest offloaded layer (reload).
func (in *MemoryInput) layerBytes(ids []int, sh split) (perMB, work, reload float64) {
	m := in.Model
	splits := layerSplits{s: in.Shape, sh: sh}
	classes := newLayerClasses(&in.Model, &in.Shape)
	// A layer's activation and offload bytes under recomputation none,
	// selective or full read its id only through its split (layerSplits:
	// BF16 or not), IsMTPLayer and IsMoELayer (layerActivationBytes,
	// OffloadBytes): each class (layerClasses) met is priced once per r and
	// its value reused for the stage's other layers of that class, added
	// in the same order (pricing each of 80 layers was most of a
	// StageMemory call, once per stage of every point a sweep loads).
	// Per-op selective and save-dots build the layer's forward ops, which
	// read more of the layer: those are priced per layer as before.
	var byClass [numLayerClasses][numMemoRecomputes]struct {
		act, off     float64
		actOK, offOK bool
	}
	for i, id := range ids {
		r := in.Recompute
		if r == RecomputeFull && !RecomputesLayer(in.RecomputeEvery, i+1) {
			r = RecomputeNone
		}
		// actOf is m.LayerActivationBytes(id, in.Shape, r) on the
		// stage's splits (layerSplits): a newSplit per call was a
		// quarter of StageMemory's time.
		class := classes.class(id)
		ls, lsh := &splits.s, &splits.sh
		if class&classBF16 != 0 {
			ls, lsh = splits.bf16Of(m, id)
		}
		actOf := func(r Recompute) float64 {
			if class&classInRange == 0 {
				return 0
			}
			if r >= numMemoRecomputes {
				return m.layerActivationBytes(id, ls, lsh, r)
			}
			e := &byClass[class][r]
			if !e.actOK {
				e.act, e.actOK = m.layerActivationBytes(id, ls, lsh, r), true
			}
			return e.act
		}
		var off float64
		if r < numMemoRecomputes {
			e := &byClass[class][r]
			if !e.offOK {
				e.off, e.offOK = m.OffloadBytes(id, in.Shape, r), true
			}
			off = e.off
		} else {
			off = m.OffloadBytes(id, in.Shape, r)
		}
		perMB += actOf(r) - off
		reload = max(reload, off)
		switch r {
		case RecomputeFull, RecomputeSelectiveOp:
			work = max(work, actOf(RecomputeNone))
		case RecomputeSaveDots:
			// the rerun kernels' outputs, next to the kept ones
			// (counted in perMB)
			work = max(work, actOf(RecomputeNone)-actOf(r))
		}
	}
	return perMB, work, reload
}

// cpBuffers is what context parallelism holds while one layer's attention
// runs: the all-gathered keys and values of the whole sequence (the
// compressed latent and rope key for MLA), and under PyTorch's ring
// (CPPyTorch) the backward's fp32 dQ, dK and dV sums and the fp32 dK/dV
// being sent and received (_templated_ring_attention_backward).
func cpBuffers(m Model, sh split) float64 {
	rows := float64(sh.b) * float64(sh.seq)
	if m.Attention == "mla" && m.MLA != nil {
		return rows * float64(m.MLA.KVLoRARank+m.MLA.RopeHeadDim) * sh.act
	}
	buf := rows * float64(sh.kva*(sh.d.qk+sh.d.v)) * sh.act
	if sh.cpImpl == CPPyTorch {
		q := sh.tok * float64(sh.hl*sh.d.qk)
		kv := sh.tok * float64(sh.kva*(sh.d.qk+sh.d.v))
		buf += 4*(q+kv) + 2*4*kv
	}
	return buf
}

// Fits reports whether the total fits in hbmBytes of device memory.
func (mem Memory) Fits(hbmBytes float64) bool { return mem.Total <= hbmBytes }

// KVCacheBytesPerToken is the inference key/value cache per token of
// context at dtype dt: 2·L·kv_heads·head_dim values for MHA/GQA; for MLA the
// compressed latent and the shared rope key, L·(kv_lora_rank + rope_dim)
// (DeepSeek-V2, arXiv:2405.04434 §2.1.2).
func (m Model) KVCacheBytesPerToken(dt Dtype) float64 {
	if m.Attention == "mla" && m.MLA != nil {
		return float64(m.Layers) * float64(m.MLA.KVLoRARank+m.MLA.RopeHeadDim) * dt.Bytes()
	}
	return 2 * float64(m.Layers) * float64(m.KVHeads) * float64(m.HeadDim) * dt.Bytes()
}

// Decode is the memory-bandwidth bound of autoregressive decoding.
type Decode struct {
	WeightBytes float64 // weights read per decode step
	KVBytes     float64 // KV cache read per decode step (all sequences)
	TokensPerS  float64 // batch / ((WeightBytes + KVBytes) / bandwidth)
	// WeightsOnlyTokensPerS ignores the KV cache (the classic
	// "bandwidth / model bytes" bound).
	WeightsOnlyTokensPerS float64
}

// DecodeBound is the upper bound on decode throughput at batch sequences of
// context seq on a GPU with HBM bandwidth bw (bytes/s): each step reads
// every weight it uses once (the input embedding table only for the looked-up
// rows; for MoE the experts the batch's tokens reach, E·(1 − (1 − k/E)^B)
// per layer with uniform routing) plus every sequence's KV cache, and compute
// is assumed free.
func (m Model) DecodeBound(seq, batch int, dt Dtype, bw float64) Decode {
	p := m.Params()
	w := p.Total - float64(m.MaxPositions)*float64(m.Hidden)
	if !m.TiedEmbeddings {
		w -= float64(m.Vocab) * float64(m.Hidden) // input table: only batch rows are read
	}
	if e := m.MoE; e != nil {
		one, other := m.mlpParams(e.ExpertFFN)
		E, k := float64(e.Experts), float64(e.TopK)
		touched := E * (1 - math.Pow(1-k/E, float64(max(batch, 1))))
		moeLayers := float64(m.Layers - min(max(e.DenseLayers, 0), m.Layers))
		w -= moeLayers * (E - touched) * (one + other)
	}
	d := Decode{WeightBytes: w * dt.Bytes(), KVBytes: m.KVCacheBytesPerToken(dt) * float64(seq) * float64(batch)}
	if bw > 0 && d.WeightBytes > 0 {
		d.TokensPerS = float64(batch) * bw / (d.WeightBytes + d.KVBytes)
		d.WeightsOnlyTokensPerS = float64(batch) * bw / d.WeightBytes
	}
	return d
}
