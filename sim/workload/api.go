package workload

import "github.com/simtrain/simtrain/sim/pipeline"

// The exported types below are relied on by sim and sim/parallel; fields may
// be added, never removed or renamed.

// Dtype is a numeric format.
type Dtype uint8

// The dtypes, in the order that indexes Device.Peak.
const (
	FP32 Dtype = iota
	TF32
	FP16
	BF16
	FP8
	FP4
	MXFP4
	NVFP4
)

// MoE describes a mixture-of-experts MLP.
type MoE struct {
	Experts        int
	TopK           int
	ExpertFFN      int     // default: Model.FFN
	SharedExperts  int     // always-on experts of size ExpertFFN (DeepSeek/Qwen style)
	DenseLayers    int     // the first DenseLayers layers use a dense MLP of size Model.FFN
	CapacityFactor float64 // default 1.0
	// Imbalance is the routed tokens of the most-loaded expert-parallel
	// rank over the mean (≥ 1; 0 or 1 = balanced, as benchmarks force it
	// with Megatron's --moe-router-force-load-balancing). Every MoE layer
	// waits for that rank in its combine, so the step runs at its load:
	// the expert GEMMs, the dispatch and combine bytes it receives and the
	// activations it keeps scale by it. Dropless routing only; a capacity
	// factor pads every expert to the capacity instead.
	Imbalance float64
}

// RankLoad is the routed tokens the most-loaded expert-parallel rank
// processes per token routed to it on average: CapacityFactor × Imbalance.
func (e MoE) RankLoad() float64 {
	cf := e.CapacityFactor
	if cf <= 0 {
		cf = 1
	}
	return cf * max(e.Imbalance, 1)
}

// MLA describes DeepSeek's multi-head latent attention.
type MLA struct {
	QLoRARank, KVLoRARank, RopeHeadDim, NopeHeadDim, VHeadDim int
}

// Model is a transformer architecture. Zero fields take defaults in Fill.
type Model struct {
	Name           string
	Layers         int
	Hidden         int
	Heads          int
	KVHeads        int // default Heads
	HeadDim        int // default Hidden/Heads
	FFN            int // default 4*Hidden
	Vocab          int
	Activation     string // gelu | swiglu | relu2
	Attention      string // mha | mla
	Norm           string // layernorm | rmsnorm
	TiedEmbeddings bool
	Bias           bool // linear layers carry biases (GPT-2/3 style)
	MoE            *MoE
	MLA            *MLA
	// MaxPositions is the size of a learned absolute position-embedding
	// table (GPT-2/3: the context length); 0 means rotary or no position
	// embedding parameters (RoPE is then applied to q and k).
	MaxPositions int
	// QKNorm adds an RMSNorm over each head's query and key (Qwen3).
	QKNorm bool
	// AttentionWindow is the sliding (banded) attention window in tokens:
	// a query attends to itself and the AttentionWindow−1 keys before it
	// (GPT-OSS 128, Mistral 7B 4096, Gemma 3 1024); 0 = full causal
	// attention. FullAttentionEvery K > 0 keeps every K-th layer (layers
	// K−1, 2K−1, …) at full attention, as GPT-OSS (K = 2) and Gemma 3
	// (K = 6) alternate; 0 windows every layer.
	AttentionWindow    int
	FullAttentionEvery int
	// Dropout says the model has Megatron-style dropout layers (after
	// attention probabilities, after the attention and MLP outputs, after
	// the embedding). It adds dropout kernels and their masks.
	Dropout bool
	// MTPLayers is the depth of multi-token prediction (DeepSeek-V3
	// arXiv:2412.19437 §2.2; Megatron-LM --mtp-num-layers): each module
	// embeds the tokens one further ahead with the shared embedding, norms
	// them and the previous depth's hidden state, projects the 2h concat
	// back to h (eh_proj), runs one transformer layer of the decoder's last
	// layer's kind, and predicts through the shared output head with its
	// own loss. The modules follow the decoder on the last pipeline stage
	// and are numbered Layers … Layers+MTPLayers−1 (StackLayers). 0 = none.
	MTPLayers int
	Source    string
}

// Recompute is the activation-recomputation policy.
type Recompute uint8

const (
	RecomputeNone Recompute = iota
	// RecomputeSelective redoes the attention core (Korthikanti et al.
	// 2022 §5): nothing next to FlashAttention.
	RecomputeSelective
	// RecomputeFull redoes the whole forward of every layer.
	RecomputeFull
	// RecomputeSelectiveOp is per-op selective checkpointing
	// (torchtitan's selective_ac_option = "op"): every matmul output and
	// the fused attention output are saved except every second projection
	// matmul of a layer, which is recomputed together with every
	// memory-bound kernel (norms, activations, RoPE, residual adds).
	RecomputeSelectiveOp
	// RecomputeSaveDots keeps the output of every projection GEMM the
	// backward needs and the fused attention output, and reruns only the
	// memory-bound kernels (norms, RoPE, activations, residual adds) before
	// a layer's backward: JAX's checkpoint_dots_with_no_batch_dims policy,
	// MaxText's remat_policy minimal / minimal_flash (see saveDots).
	RecomputeSaveDots
)

// Pass is a direction of the training step.
type Pass uint8

const (
	Forward Pass = iota
	Backward
)

// Block groups the ops of a layer at the points where the simulator inserts
// communication (TP/SP collectives around attention and MLP, CP gathers
// before the attention core, EP all-to-alls around the experts).
type Block uint8

const (
	BlockAttnPre   Block = iota // input norm, QKV projection (and MLA down/up projections)
	BlockAttnCore               // scores, softmax, weighted sum (one fused kernel with flash attention)
	BlockAttnPost               // output projection, dropout, residual add
	BlockMLP                    // post-attention norm, dense MLP, residual
	BlockRouter                 // MoE: norm, router GEMM, top-k, permutation
	BlockExperts                // MoE: expert GEMMs (and shared experts)
	BlockCombine                // MoE: unpermute, weighted sum, residual
	BlockEmbedding              // token (+position) embedding
	BlockHead                   // final norm, LM head, cross-entropy
)

// OpClass says which efficiency prices an op.
type OpClass uint8

const (
	ClassGEMM      OpClass = iota // dense matmul: shape-dependent GEMM efficiency
	ClassAttention                // fused attention kernel
	ClassMemory                   // bandwidth-bound elementwise / norm / softmax
)

// Op is one kernel's work on one GPU (after the TP/CP/EP split).
//
// For ClassGEMM, M×N×K is one GEMM (C[M×N] = A[M×K]·B[K×N]) and Batch counts
// identical GEMMs in the op; FLOPs = 2·M·N·K·Batch. For ClassAttention, M is
// the query rows per head on this GPU, N the mean number of key rows each
// query attends to (the full key length, or about half of it when causal),
// K the query/key head dimension and Batch the micro-batch × local heads.
// For ClassMemory, M, N, K are zero and Batch is 1.
type Op struct {
	Name         string
	Block        Block
	Class        OpClass
	Pass         Pass    // Forward for forward and recompute kernels, Backward otherwise
	FLOPs        float64 // floating-point operations the kernel executes
	BytesRead    float64 // HBM bytes read
	BytesWritten float64 // HBM bytes written
	M, N, K      int     // GEMM problem (ClassGEMM) or attention shape (ClassAttention)
	Batch        int     // identical GEMMs in the op (e.g. local experts), >= 1
	// AttnEff, for ClassAttention when positive, is the asymptotic
	// efficiency (fraction of the BF16 peak) of the fused attention kernel
	// that runs this op, for its pass: Shape.AttnEff or AttnBwdEff. Zero
	// means the Device's AttnEff or AttnBwdEff.
	AttnEff float64
	// Quant says how the op takes part in an FP8 recipe's quantisation
	// (Shape.FP8Recipe, fp8.go); QuantNone for every other op.
	Quant QuantRole
	// Scaling is how an FP8 GEMM's inputs are scaled, which picks its
	// kernel: one scale per tensor (the zero value), per row and column
	// (torchao's rowwise forward GEMM, a CUTLASS kernel), or per block (the
	// mxfp8 and blockwise recipes). OpTime prices the last two with
	// Device.RowScaledGEMMRel and Device.BlockScaledGEMMRel.
	Scaling Scaling
}

// Scaling is the scale granularity of an FP8 GEMM's inputs (Op.Scaling).
type Scaling uint8

const (
	ScalingTensor Scaling = iota // one scale per tensor (cuBLAS)
	ScalingRow                   // one scale per row of A and column of B
	ScalingBlock                 // one scale per block of 32 (MX) or 128 values
)

// QuantRole marks the ops of an FP8 recipe.
type QuantRole uint8

const (
	// QuantNone: OpTime adds the implicit quantisation kernel of a GEMM in
	// an 8- or 4-bit format (a standalone GEMM, an FP4 format).
	QuantNone QuantRole = iota
	// QuantScaled: a GEMM whose inputs the op list's own QuantCast ops
	// quantise; OpTime adds nothing for them.
	QuantScaled
	// QuantCast: a recipe's quantisation (or rescale) kernel. It costs
	// nothing on a GPU without the format, where the GEMMs run at BF16.
	QuantCast
)

// Bytes is the op's total HBM traffic.
func (o Op) Bytes() float64 { return o.BytesRead + o.BytesWritten }

// Shape is the per-GPU problem: micro-batch, sequence and the split.
type Shape struct {
	MicroBatch int
	Seq        int // full sequence length (before the CP split)
	Dtype      Dtype
	TP, CP, EP int // 0 treated as 1
	// ETP is the expert tensor-parallel size (MoE parallel folding): the
	// routed experts are split ETP ways instead of TP ways and each EP rank
	// receives the dispatched tokens of ETP·EP ranks' own (sequence-
	// parallel) tokens. 0, or a value not below TP, means TP: no folding.
	ETP            int
	SP             bool
	FlashAttention bool
	// AttentionUnpad runs the fused attention kernel on unpadded (varlen)
	// inputs: flash-attn's bert_padding gathers Q, K and V into packed rows
	// before it and scatters the output back after it, every layer
	// (llm-foundry's attn_impl: flash; see unpadKernels). Only with
	// FlashAttention.
	AttentionUnpad bool
	// RepeatKV materialises the keys and values at the query head count
	// before the attention kernel, as torchtitan's Llama does (repeat_kv):
	// a copy forward and a sum backward (repeatKVKernels), the kernel reads
	// every query head's K and V and saves them for the backward, and
	// context parallelism exchanges them at that size. No effect without
	// grouped-query attention (fewer KV heads than query heads) or with MLA.
	RepeatKV bool
	// CPImpl is the context-parallel attention implementation (CP > 1):
	// the zero value CPAllGather, Transformer Engine's p2p ring (its output
	// corrections, p2pKernels) or PyTorch's ring attention (its fp32 merges
	// and accumulations, ringKernels), priced in the attention core. The
	// scenario default is CPP2P (sim resolves it).
	CPImpl CPImpl
	// CrossEntropy is how the output layer's cross-entropy runs: one fused
	// kernel (the zero value), PyTorch's unfused fp32 kernels or
	// Megatron-LM's unfused vocabulary-parallel kernels. See HeadOps.
	CrossEntropy CrossEntropy
	// ReplicatedLogits: under tensor parallelism the LM head's
	// vocabulary-sharded logits are all-gathered to every TP rank
	// (DTensor ColwiseParallel(output_layouts=Replicate()), KempnerForge's
	// output head) and each rank computes the cross-entropy over the whole
	// vocabulary, instead of a vocabulary-parallel loss over its V/tp
	// shard (torchtitan's loss_parallel, Megatron-LM). The output layer
	// adds the gather's concatenation copy (logits_gather_cat) and prices
	// the loss on tok·V logits; the all-gather itself is the step
	// simulator's (parallel.StepConfig.TPLogitsReplicated). No effect
	// without TP.
	ReplicatedLogits bool
	// AttnEff and AttnBwdEff, when positive, are the asymptotic forward and
	// backward efficiencies (fractions of the BF16 peak) of the fused
	// attention kernel the run uses on its GPU — training.attention_kernel
	// resolved against the GPU's compute profile by sim. They are stamped
	// on the attention ops (Op.AttnEff); zero keeps the Device's AttnEff and
	// AttnBwdEff. Ignored without FlashAttention.
	AttnEff, AttnBwdEff float64
	// AttnHeadDims are the head dimensions the fused attention kernel is
	// compiled for, ascending (hardware.ComputeProfile.AttentionHeadDims):
	// a head dimension between two entries executes the next larger one's
	// products, so the attention kernel's FLOPs count the rounded-up query/
	// key and value dimensions. Nil (cuDNN, or no fused kernel) rounds
	// nothing; a dimension above the last entry is not rounded.
	AttnHeadDims []int
	// Eager prices RoPE, the SwiGLU product, Hugging Face's gelu_new and
	// unfused attention's scale, mask and softmax as eager PyTorch runs them
	// (training.compile: false): one ATen kernel per op with fp32
	// intermediates, and autograd's backward kernels, instead of one fused
	// kernel each (eager.go). F.gelu, the squared ReLU, residual adds and
	// dropout cost the same either way.
	Eager bool
	// Autocast adds torch.autocast's weight casts around every linear
	// layer's GEMM (not the attention's batched products): the fp32 weight
	// read and written at the 16-bit width before the forward GEMM, its
	// 16-bit gradient read and written in fp32 after the weight-gradient
	// GEMM (autocast.go). Only for FP16 and BF16; ignored otherwise.
	Autocast bool
	// GradAccumulate is the share of a step's micro-batches whose linear
	// weight gradients are added in place into the gradient the earlier
	// micro-batches left, (m−1)/m of m micro-batches (the first one's
	// gradient becomes .grad): autograd's AccumulateGrad, or FSDP's add of
	// the reduce-scattered shard. Each add reads 2·GradAccumWidth and
	// writes GradAccumWidth bytes per element of GradAccumShard of each
	// weight (autocast.go). Under Autocast it is priced on the weight
	// gradient's cast, otherwise as a kernel after the wgrad GEMM. 0
	// without gradient accumulation or where the framework fuses the add
	// into the wgrad GEMM (Megatron).
	GradAccumulate float64
	// GradAccumWidth is the accumulated gradient's bytes per element: 0
	// means 4 (fp32).
	GradAccumWidth float64
	// GradAccumShard is the share of each weight's gradient this GPU
	// adds: 1/dp for FSDP's sharded gradient; 0 means 1.
	GradAccumShard float64
	// EagerNorm prices RMSNorm as eager PyTorch's op-by-op kernels
	// (torchtitan's RMSNorm module without compile); false is one fused
	// kernel (compiled, or a fused norm kernel such as torchtitan's
	// fused_rmsnorm). LayerNorm is one ATen kernel either way.
	EagerNorm bool
	// FP8Recipe is the scaling recipe of FP8 training (Dtype FP8; ignored
	// otherwise): which quantisation kernels every GEMM's inputs cost
	// (fp8.go). The zero value is tensorwise.
	FP8Recipe FP8Recipe
	// BF16AtStart and BF16AtEnd keep the first and last decoder layers
	// (and the multi-token-prediction layers after them) of an FP8 run in
	// BF16 (Megatron-Core first_last_layers_bf16 with
	// num_layers_at_start_in_bf16 / num_layers_at_end_in_bf16; fp8_utils.py
	// is_first_last_bf16_layer). Ignored for other dtypes.
	BF16AtStart, BF16AtEnd int
	// RecomputeModules are the modules RecomputeSelective recomputes
	// (Megatron-LM --recompute-modules); the zero value is the attention
	// core alone (RecomputeCoreAttn), Megatron's default.
	RecomputeModules RecomputeModules
	// Offload are the modules whose inputs are offloaded to host memory
	// after the forward and reloaded before the backward (Megatron-Core
	// fine-grained activation offloading, --offload-modules); zero = none.
	Offload OffloadModules
}

// RecomputeModules is a set of modules selective recomputation redoes
// before a layer's backward (Megatron-Core --recompute-granularity
// selective --recompute-modules; transformer_config.py): their outputs are
// not kept for the backward and their forward kernels run again. The zero
// value means the attention core alone.
type RecomputeModules uint8

const (
	// RecomputeCoreAttn is the attention core (Korthikanti et al. 2022
	// §5): the score matrices of unfused attention; nothing next to
	// FlashAttention, whose backward recomputes the scores anyway.
	RecomputeCoreAttn RecomputeModules = 1 << iota
	// RecomputeMoEAct is the routed experts' activation function: its
	// output (the second expert GEMM's input) is recomputed from the first
	// GEMM's output.
	RecomputeMoEAct
	// RecomputeLayerNorm is the layer's two input norms (before attention
	// and before the MLP or router): their outputs are recomputed from the
	// kept layer inputs.
	RecomputeLayerNorm
	// RecomputeMLAUpProj is multi-head latent attention's up projections
	// and RoPE (Megatron-Core multi_latent_attention.py recompute_up_proj:
	// qkv_up_proj_and_rope_apply under CheckpointWithoutOutput, its output
	// discarded once the attention core has run): the query, key and value
	// heads the attention core reads are not kept, and q_up, kv_up and the
	// RoPE run again before the backward. Nothing for other attention.
	RecomputeMLAUpProj
)

// RecomputeModuleNames are the module names in RecomputeModules bit order.
var RecomputeModuleNames = []string{"core_attn", "moe_act", "layernorm", "mla_up_proj"}

// has reports whether the set (zero = core_attn) contains m.
func (r RecomputeModules) has(m RecomputeModules) bool {
	if r == 0 {
		r = RecomputeCoreAttn
	}
	return r&m != 0
}

// MemoryInput describes one pipeline rank for the memory model.
type MemoryInput struct {
	Model         Model
	Shape         Shape
	Layers        int // transformer layers on this rank
	HasEmbedding  bool
	HasHead       bool
	PP, DP        int
	VirtualStages int
	Stage         int               // this rank's pipeline stage, 0-based
	Schedule      pipeline.Schedule // nil: 1F1B
	Microbatches  int               // per step per pipeline
	Zero          int
	Optimizer     string
	MasterDtype   Dtype
	GradDtype     Dtype // set by the caller: the zero value is FP32
	// StateDtype is the optimizer states' dtype, set by the caller (the
	// zero value is FP32): MasterDtype unless a precision-aware optimizer
	// keeps them narrower (StateBytes.WithStates).
	StateDtype Dtype
	Recompute  Recompute
	// RecomputeEvery applies full recomputation to every k-th layer of the
	// rank (RecomputesLayer) and keeps the others' activations; 0 or 1 =
	// every layer. Only with Recompute RecomputeFull.
	RecomputeEvery int
	// LayerIDs optionally lists this rank's transformer layers (0-based),
	// which decides how many of them are MoE layers; nil means Layers
	// consecutive layers starting at Stage·Layers.
	LayerIDs []int
	// OffloadOptimizer keeps the master weights and optimizer states in
	// host memory outside the optimizer step (Megatron-Core
	// --offload-optimizer-states): they are on the GPU only from the
	// reload after the backward through the step.
	OffloadOptimizer bool
	// WeightBytes is what one parameter's kept compute copy takes when it
	// is not the precision's storage width: the FP8 parameters of
	// Megatron-LM's --fp8-param-gather (FP8ParamBytes). 0 keeps
	// StateBytes.Weights.
	WeightBytes float64
	// ShardIsMaster: under ZeRO-3 the rank's parameter shard is the
	// master copy itself, with no low-precision copy kept beside it —
	// PyTorch FSDP with a mixed-precision policy: "the *sharded*
	// parameters are kept in full precision" (FSDP1, torch/distributed/
	// fsdp/api.py MixedPrecision) and FSDP2 "keeps the high-precision
	// sharded parameters in memory anyway ... does not require any extra
	// memory to keep a high-precision copy of the parameters for the
	// optimizer step" (_fully_shard/_fsdp_api.py MixedPrecisionPolicy);
	// the low-precision copy is cast for each all-gather and freed with
	// it. DeepSpeed ZeRO-3 (fp16/bf16 partitions beside the fp32 ones)
	// and Megatron-FSDP (a bf16 weight buffer beside the fp32 main
	// weights) keep both.
	ShardIsMaster bool
	// GradSyncLast: under ZeRO-3 the gradients are reduce-scattered on the
	// last micro-batch only (parallel.StepConfig.Zero3GradSyncLast), so
	// with gradient accumulation the rank's whole gradient is held
	// unsharded in GradDtype from the first backward on, as under ZeRO-2.
	GradSyncLast bool
	// GradBucketCopy: PyTorch DDP's reducer keeps, beside each .grad, a
	// bucket holding a copy of every gradient (gradient_as_bucket_view
	// off, its default: reducer.cpp initialize_buckets allocates each
	// bucket's flat tensor once and keeps it), so zero 0 holds the rank's
	// gradients twice in GradDtype (parallel.StepConfig.DDPGradCopy).
	GradBucketCopy bool
	// ReplicatedEmbedding: the input embedding table is not split by
	// tensor parallelism; every TP rank holds it whole
	// (parallel.StepConfig.TPEmbeddingReplicated).
	ReplicatedEmbedding bool
	// CapacityBytes is what a process can allocate on the rank's GPU
	// (hardware.GPU.HBMUsableBytes); it bounds the caching allocator's
	// reserve (Memory.AllocatorReserve). 0: unbounded.
	CapacityBytes float64
}

// Memory is a per-rank breakdown in bytes (see StageMemory): Optimizer
// includes the master copy; Buffers are the embedding/output-layer buffers,
// ZeRO-3's gathered layers and context parallelism's gathered K/V; Overhead
// is the CUDA context, NCCL buffers and the caching allocator's reserve
// above the live tensors (AllocatorReserve, part of Overhead); Total is
// their sum.
type Memory struct {
	Weights, Gradients, Optimizer, Activations, Buffers, Overhead, Total float64
	// AllocatorReserve is the memory PyTorch's caching allocator holds in
	// its cache beyond the live tensors at the peak (allocatorFragmentation),
	// never more than the device has left once the live tensors, context
	// and NCCL buffers are placed (the allocator frees its cache and
	// retries before it fails an allocation), but at least the part it
	// cannot free (allocatorPinned).
	AllocatorReserve float64
}

// AllocatorReserved is what the caching allocator has reserved from the
// device at the peak (PyTorch's memory_stats "reserved_bytes.all.peak",
// what torchtitan logs as its memory): the live tensors and the
// allocator's reserve, without the CUDA context and NCCL's buffers, which
// are allocated outside it.
func (m Memory) AllocatorReserved() float64 {
	return m.Weights + m.Gradients + m.Optimizer + m.Activations + m.Buffers + m.AllocatorReserve
}
