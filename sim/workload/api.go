// Package workload is the single source of simtrain's napkin math: datatypes,
// model architectures, exact parameter counts, per-layer operators with their
// FLOPs and HBM bytes, memory per rank, and the compute-time model.
//
// API CONTRACT (stubs written before implementation; the exported names and
// signatures here are relied on by sim and sim/parallel).
package workload

// Dtype is a numeric format.
type Dtype uint8

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
	Source         string
}

// Recompute is the activation-recomputation policy.
type Recompute uint8

const (
	RecomputeNone Recompute = iota
	RecomputeSelective
	RecomputeFull
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
type Op struct {
	Name         string
	Block        Block
	Class        OpClass
	FLOPs        float64 // floating-point operations the kernel executes
	BytesRead    float64 // HBM bytes read
	BytesWritten float64 // HBM bytes written
	M, N, K      int     // GEMM problem (ClassGEMM)
	Batch        int     // identical GEMMs in the op (e.g. local experts), >= 1
}

// Shape is the per-GPU problem: micro-batch, sequence and the split.
type Shape struct {
	MicroBatch     int
	Seq            int // full sequence length (before the CP split)
	Dtype          Dtype
	TP, CP, EP     int // 0 treated as 1
	SP             bool
	FlashAttention bool
}
