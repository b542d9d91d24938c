package scenario

import (
	"bytes"
	"crypto/sha1"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/google/uuid"
	"go.yaml.in/yaml/v3"

	"github.com/simtrain/simtrain/sim/goodput"
	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/limits"
)

// Scenario is the document of one scenario file (the contract is
// docs/scenario-format.md), field for field. In a Plan it holds every
// default filled in, in canonical form: the bytes the run id hashes.
type Scenario struct {
	Name        string         `yaml:"name" json:"name"`
	Description string         `yaml:"description" json:"-"`
	Model       ModelConfig    `yaml:"model" json:"model"`
	Training    TrainingConfig `yaml:"training" json:"training"`
	Cluster     ClusterConfig  `yaml:"cluster" json:"cluster"`
	Parallel    ParallelConfig `yaml:"parallel" json:"parallel"`
	Sim         SimConfig      `yaml:"sim" json:"sim"`
	Expect      *Expect        `yaml:"expect" json:"-"`
	// Goodput is the optional whole-run block (failures, restarts,
	// checkpoints; sim/goodput). Absent, it stays nil and out of the
	// canonical form, so run ids of scenarios without it do not change.
	Goodput *goodput.Config `yaml:"goodput" json:"goodput,omitempty"`
}

// ModelConfig is the model block. Explicit fields override the preset.
type ModelConfig struct {
	Preset         string `yaml:"preset" json:"preset"`
	Layers         int    `yaml:"layers" json:"layers"`
	Hidden         int    `yaml:"hidden" json:"hidden"`
	Heads          int    `yaml:"heads" json:"heads"`
	KVHeads        int    `yaml:"kv_heads" json:"kv_heads"`
	HeadDim        int    `yaml:"head_dim" json:"head_dim"`
	FFN            int    `yaml:"ffn" json:"ffn"`
	Vocab          int    `yaml:"vocab" json:"vocab"`
	Activation     string `yaml:"activation" json:"activation"`
	Attention      string `yaml:"attention" json:"attention"`
	Norm           string `yaml:"norm" json:"norm"`
	TiedEmbeddings *bool  `yaml:"tied_embeddings" json:"tied_embeddings"`
	// Dropout says the model trains with dropout layers (after the
	// attention probabilities, the attention and MLP outputs and the
	// embedding; workload.Model.Dropout): their kernels and masks. Unset it
	// is the preset's (the GPT-3 presets have it) or false; left out of the
	// canonical form when unset, so run ids of files without it do not
	// change.
	Dropout *bool `yaml:"dropout" json:"dropout,omitempty"`
	// AttentionWindow is the sliding attention window in tokens (0 = full
	// causal attention) and FullAttentionEvery keeps every K-th layer at
	// full attention (workload.Model). Both are echoed from the resolved
	// model and left out of the canonical form when 0, so run ids of
	// full-attention models do not change.
	AttentionWindow    int `yaml:"attention_window" json:"attention_window,omitempty"`
	FullAttentionEvery int `yaml:"full_attention_every" json:"full_attention_every,omitempty"`
	// MTPLayers is the multi-token-prediction depth (workload.Model.MTPLayers;
	// Megatron-LM --mtp-num-layers); left out of the canonical form when 0.
	MTPLayers int        `yaml:"mtp_layers" json:"mtp_layers,omitempty"`
	MoE       *MoEConfig `yaml:"moe" json:"moe,omitempty"`
}

// MoEConfig is the model.moe block.
type MoEConfig struct {
	Experts        int     `yaml:"experts" json:"experts"`
	TopK           int     `yaml:"top_k" json:"top_k"`
	ExpertFFN      int     `yaml:"expert_ffn" json:"expert_ffn"`
	SharedExperts  int     `yaml:"shared_experts" json:"shared_experts"`
	DenseLayers    int     `yaml:"dense_layers" json:"dense_layers"`
	CapacityFactor float64 `yaml:"capacity_factor" json:"capacity_factor"`
	// Dropless routes every token to its experts with data-dependent
	// shapes (default true, Megatron-Core without a capacity factor):
	// the dispatch synchronises the host once per MoE layer forward
	// (parallel.StepConfig.MoEHostSync). false drops tokens beyond the
	// capacity and pads every expert's input to it (Megatron
	// --moe-expert-capacity-factor with --moe-pad-expert-input-to-capacity):
	// static shapes, no synchronisation. The canonical form leaves it
	// unset when true, so run ids do not change.
	Dropless *bool `yaml:"dropless" json:"dropless,omitempty"`
	// Imbalance is the routed tokens of the most-loaded expert-parallel
	// rank over the mean (≥ 1; unset = 1, the forced balance of
	// benchmarks, Megatron --moe-router-force-load-balancing): that rank's
	// expert GEMMs, dispatch/combine bytes and expert activations scale by
	// it (workload.MoE.Imbalance). Dropless routing only: with dropless
	// false every expert is padded to the capacity instead. The canonical
	// form leaves it unset at 1, so run ids do not change.
	Imbalance float64 `yaml:"imbalance" json:"imbalance,omitempty"`
}

// TrainingConfig is the training block.
type TrainingConfig struct {
	SeqLen      int    `yaml:"seq_len" json:"seq_len"`
	GlobalBatch int    `yaml:"global_batch" json:"global_batch"`
	MicroBatch  int    `yaml:"micro_batch" json:"micro_batch"`
	Precision   string `yaml:"precision" json:"precision"`
	Optimizer   string `yaml:"optimizer" json:"optimizer"`
	MasterDtype string `yaml:"master_dtype" json:"master_dtype"`
	// OptimizerStateDtype is the optimizer states' dtype: fp32, bf16 or
	// fp16 (Megatron-Core's precision-aware optimizer, --exp-avg-dtype and
	// --exp-avg-sq-dtype); default master_dtype, left out of the canonical
	// form when equal to it.
	OptimizerStateDtype string `yaml:"optimizer_state_dtype" json:"optimizer_state_dtype,omitempty"`
	GradDtype           string `yaml:"grad_dtype" json:"grad_dtype"`
	Recompute           string `yaml:"recompute" json:"recompute"`
	// RecomputeModules are the modules selective recomputation redoes
	// (Megatron-LM --recompute-modules): core_attn, moe_act, layernorm;
	// empty is core_attn alone. Only with recompute: selective; the
	// canonical form leaves the default out.
	RecomputeModules []string `yaml:"recompute_modules" json:"recompute_modules,omitempty"`
	// OffloadModules are the modules whose input activations are offloaded
	// to host memory between forward and backward (Megatron-Core
	// --fine-grained-activation-offloading --offload-modules;
	// workload.OffloadModules); OffloadOptimizer keeps the master weights
	// and optimizer states in host memory outside the optimizer step
	// (--offload-optimizer-states). Both left out of the canonical form
	// when unset.
	OffloadModules   []string `yaml:"offload_modules" json:"offload_modules,omitempty"`
	OffloadOptimizer bool     `yaml:"offload_optimizer" json:"offload_optimizer,omitempty"`
	// LogOptimizerStates is Megatron-DeepSpeed's
	// --log-optimizer-states-to-tensorboard: after every step each rank
	// reduces its optimizer's flat fp32 tensors (norms, maxima, minima of
	// the Adam states and master weights) and reads each result back
	// (parallel.StepConfig.LogOptimizerStates). Left out of the canonical
	// form when unset.
	LogOptimizerStates bool `yaml:"log_optimizer_states" json:"log_optimizer_states,omitempty"`
	// LayerHostSync says every transformer-layer forward (and recomputed
	// forward) blocks the host until the GPU has run everything issued
	// before, between the attention and the MLP: Megatron-DeepSpeed's
	// ParallelTransformerLayer makes two scalar tensors on the GPU with
	// torch.tensor on every call (parallel.StepConfig.LayerHostSync). Left
	// out of the canonical form when unset.
	LayerHostSync bool `yaml:"layer_host_sync" json:"layer_host_sync,omitempty"`
	// LossReadback says the training loop reads every micro-batch's loss
	// back to the host (a blocking .item()) before its backward:
	// DeepSpeed's engine from v0.9.3 to v0.13.2 (DeepSpeedEngine.backward,
	// loss.mean().item(); parallel.StepConfig.LossReadback). A fact of the
	// run's library version: the hf-trainer profile sets it, and the
	// megatron-lm profile for code from 2023-08-30 (training.framework_date).
	// Optional so that a document can state false against a profile; left
	// out of the canonical form when unset.
	LossReadback *bool `yaml:"loss_readback" json:"loss_readback,omitempty"`
	// LossReadbackAt places that read: before_backward (the default,
	// DeepSpeed's engine) or after_backward (the Hugging Face Trainer's
	// logging_nan_inf_filter test of each micro-batch's loss once
	// training_step has run the backward;
	// parallel.StepConfig.LossReadbackAfter). Left out of the canonical
	// form when it is the default.
	LossReadbackAt string `yaml:"loss_readback_at" json:"loss_readback_at,omitempty"`
	// GradNaNCheck says the data-parallel gradient reduction reads every
	// bucket's gradient norm back to the host before reducing it
	// (Megatron-Core's check_for_nan_in_grad;
	// parallel.StepConfig.GradBucketSync); the megatron-lm profile sets it
	// for code from 2023-12-05 (training.framework_date). Optional so that
	// a document can state false against a profile; left out of the
	// canonical form when unset.
	GradNaNCheck *bool `yaml:"grad_nan_check" json:"grad_nan_check,omitempty"`
	// OptimizerTensors > 0 says the optimizer is a Python loop over that
	// many parameter tensors, each stepped by its own elementwise kernels
	// (transformers.AdamW, torch.optim with foreach=False), and zero_grad
	// fills each gradient by a kernel of its own; 0 (default) prices one
	// fused pass. Adam/AdamW only, without ZeRO (zero: 0).
	OptimizerTensors int `yaml:"optimizer_tensors" json:"optimizer_tensors,omitempty"`
	// OptimizerLoop names the per-tensor loop's code when OptimizerTensors
	// > 0: "transformers" (default; Hugging Face's transformers.AdamW 4.x)
	// or "torch" (torch.optim's single-tensor Adam/AdamW: the bias
	// correction's division and AdamW's decoupled decay are kernels of
	// their own). Canonical: empty for transformers.
	OptimizerLoop string `yaml:"optimizer_loop" json:"optimizer_loop,omitempty"`
	// RecomputeEvery applies full recomputation to every k-th transformer
	// layer of each pipeline rank and keeps the others' activations
	// (torchtitan's selective layer checkpointing, selective_ac_option =
	// "k"); 0 or 1 = every layer (canonical 0). Only with recompute: full.
	RecomputeEvery int `yaml:"recompute_every" json:"recompute_every,omitempty"`
	// RecomputeReentrant says full recomputation is a reentrant checkpoint
	// (Megatron-Core's tensor_parallel.checkpoint, Transformer Engine's
	// checkpoint, DeepSpeed's activation checkpointing), which reruns each
	// layer to its output, the MLP's closing TP reduction included
	// (parallel.StepConfig.RecomputeToOutput); false (the default) is
	// PyTorch's non-reentrant checkpoint, which stops before it. Only with
	// recompute: full; left out of the canonical form when false.
	RecomputeReentrant bool  `yaml:"recompute_reentrant" json:"recompute_reentrant,omitempty"`
	FlashAttention     *bool `yaml:"flash_attention" json:"flash_attention"`
	// FusedLoss prices the vocabulary cross-entropy as one fused kernel
	// (default true); false prices PyTorch's unfused fp32 path. Kept for
	// existing files: CrossEntropy says the same and more.
	FusedLoss *bool `yaml:"fused_loss" json:"fused_loss"`
	// CrossEntropy is the cross-entropy implementation: fused (default),
	// unfused (PyTorch's fp32 kernels; = fused_loss: false) or
	// vocab-parallel (Megatron-LM's unfused VocabParallelCrossEntropy).
	CrossEntropy string `yaml:"cross_entropy" json:"cross_entropy"`
	// Compile says the model runs under torch.compile or with fused
	// elementwise kernels (default true): each norm, RoPE, activation and
	// residual add is one kernel. false prices eager PyTorch: RMSNorm, RoPE
	// and SwiGLU as their op-by-op ATen kernels with fp32 intermediates and
	// autograd's backward kernels (torchtitan without compile; see
	// sim/workload/eager.go).
	Compile *bool `yaml:"compile" json:"compile"`
	// FusedNorm runs the norms as one fused kernel even without compile
	// (torchtitan's norm_type = "fused_rmsnorm"); default: compile. false
	// needs compile: false.
	FusedNorm *bool `yaml:"fused_norm" json:"fused_norm"`
	// Autocast says the 16-bit compute comes from torch.autocast over fp32
	// parameters (eager PyTorch DDP or one GPU, Hugging Face Trainer's and
	// Lightning's mixed precision): every linear layer casts its weight to
	// 16 bits in each forward and its weight gradient back to fp32 in the
	// backward. Default false (16-bit model weights, or FSDP's cast at the
	// all-gather); ignored unless precision is fp16 or bf16.
	Autocast bool `yaml:"autocast" json:"autocast,omitempty"`
	// AttentionKernel names the attention kernel (default auto: the GPU's
	// profile kernel); unfused equals flash_attention: false.
	AttentionKernel string `yaml:"attention_kernel" json:"attention_kernel"`
	// AttentionUnpad runs the fused attention on unpadded (varlen) rows:
	// flash-attn's bert_padding gathers Q, K and V before the kernel and
	// scatters its output back after it in every layer (llm-foundry's
	// attn_impl: flash). Default false; needs a fused attention kernel.
	AttentionUnpad bool `yaml:"attention_unpad" json:"attention_unpad,omitempty"`
	// AttentionRepeatKV materialises the key and value heads at the query
	// head count before the attention kernel (torchtitan's Llama
	// repeat_kv): a copy forward, a sum backward, and context parallelism
	// exchanges every query head's K and V. Default false; no effect without
	// grouped-query attention.
	AttentionRepeatKV bool `yaml:"attention_repeat_kv" json:"attention_repeat_kv,omitempty"`
	// FP8Recipe is the FP8 scaling recipe (tensorwise, rowwise, delayed,
	// blockwise, mxfp8; see workload.FP8Recipe): which quantisation kernels
	// the GEMMs cost. Only with precision fp8, where it defaults to
	// tensorwise; mxfp8 needs a Blackwell GPU.
	FP8Recipe string `yaml:"fp8_recipe" json:"fp8_recipe"`
	// FP8ParamGather all-gathers the parameters in FP8 (Megatron-LM
	// --fp8-param-gather; torchtitan enable_fsdp_float8_all_gather): one
	// byte per parameter in the ZeRO/FSDP parameter all-gathers instead of
	// the bf16 copy's two. Only with precision fp8; default false, both
	// frameworks' default.
	FP8ParamGather bool `yaml:"fp8_param_gather" json:"fp8_param_gather,omitempty"`
	// BF16LayersAtStart and BF16LayersAtEnd keep that many first and last
	// decoder layers of an FP8 run in BF16 (Megatron-Core
	// --first-last-layers-bf16 --num-layers-at-start-in-bf16 N
	// --num-layers-at-end-in-bf16 N; Megatron-Bridge's FP8 current-scaling
	// config uses 1 and 1). Default 0; only with precision fp8.
	BF16LayersAtStart int `yaml:"bf16_layers_at_start" json:"bf16_layers_at_start,omitempty"`
	BF16LayersAtEnd   int `yaml:"bf16_layers_at_end" json:"bf16_layers_at_end,omitempty"`
	// CUDAGraphs is how much of the step runs as captured CUDA graphs:
	// none (default) or full (one graph per iteration, Megatron-LM's
	// full-iteration CUDA graph, which needs a synchronisation-free MoE
	// dispatch, so a dropless MoE layer does not stall the GPU). Per-layer
	// graph scopes leave the dynamic-shape MoE dispatch outside the graphs
	// and are written as none. The canonical form leaves none unset.
	CUDAGraphs string `yaml:"cuda_graphs" json:"cuda_graphs,omitempty"`
	// HostDispatch is the dispatch class of the rank's host thread
	// (sim/hardware data/host.yaml): eager (kernels issued from eager
	// Python), graphs (the step replays without the host) or auto
	// (default: graphs with cuda_graphs full, else eager). The canonical
	// form leaves auto unset.
	HostDispatch string `yaml:"host_dispatch" json:"host_dispatch,omitempty"`
	// Framework names the training framework whose defaults fill the
	// implementation fields this scenario leaves unset (sim/hardware
	// data/frameworks.yaml: megatron-lm, torchtitan, deepspeed, ...);
	// explicit fields always win. auto (the default) applies no profile.
	// The canonical form leaves auto unset.
	Framework string `yaml:"framework" json:"framework,omitempty"`
	// FrameworkDate is the date (YYYY-MM-DD) of the framework code the run
	// used, e.g. its release's commit: the profile's version-dated defaults
	// (a since/until range in data/frameworks.yaml) apply only where they
	// hold at that date. Empty (the default) is the current release: every
	// default without an end date. Left out of the canonical form when
	// unset.
	FrameworkDate string `yaml:"framework_date" json:"framework_date,omitempty"`
}

// ClusterConfig is the cluster block.
type ClusterConfig struct {
	GPU   string `yaml:"gpu" json:"gpu"`
	Nodes int    `yaml:"nodes" json:"nodes"`
	// NodeGroups, in place of GPU and Nodes, makes a heterogeneous cluster:
	// consecutive node ranges of different GPUs, in the order listed (ranks
	// are node-major, so with pp outermost in parallel.order the first
	// stages sit on the first group).
	NodeGroups  []NodeGroup   `yaml:"node_groups" json:"node_groups,omitempty"`
	GPUsPerNode int           `yaml:"gpus_per_node" json:"gpus_per_node"`
	IntraNode   string        `yaml:"intra_node" json:"intra_node"`
	Network     NetworkConfig `yaml:"network" json:"network"`
	// GPUHourUSD overrides the catalog price per GPU-hour (cost outputs).
	GPUHourUSD float64 `yaml:"gpu_hour_usd" json:"gpu_hour_usd"`
	// PUE is the data-centre power usage effectiveness for energy outputs
	// (default 1.2).
	PUE float64 `yaml:"pue" json:"pue"`
}

// NodeGroup is one item of cluster.node_groups: nodes of one GPU type,
// optionally at their own price.
type NodeGroup struct {
	GPU   string `yaml:"gpu" json:"gpu"`
	Nodes int    `yaml:"nodes" json:"nodes"`
	// GPUHourUSD is the group's price per GPU-hour (0 = the catalog's).
	GPUHourUSD float64 `yaml:"gpu_hour_usd" json:"gpu_hour_usd,omitempty"`
}

// NetworkConfig is the cluster.network block.
type NetworkConfig struct {
	Kind             string  `yaml:"kind" json:"kind"`
	NIC              string  `yaml:"nic" json:"nic"`
	NICGbps          float64 `yaml:"nic_gbps" json:"nic_gbps"`
	NICsPerNode      int     `yaml:"nics_per_node" json:"nics_per_node"`
	Oversubscription float64 `yaml:"oversubscription" json:"oversubscription"`
	PodGPUs          int     `yaml:"pod_gpus" json:"pod_gpus"`
}

// ParallelConfig is the parallel block.
type ParallelConfig struct {
	TP int `yaml:"tp" json:"tp"`
	PP int `yaml:"pp" json:"pp"`
	DP int `yaml:"dp" json:"dp"`
	CP int `yaml:"cp" json:"cp"`
	EP int `yaml:"ep" json:"ep"`
	// ExpertTP is the expert tensor-parallel size (MoE parallel folding,
	// Megatron-LM --expert-tensor-parallel-size): a divisor of tp, default
	// tp. Below tp the MoE layers use their own ETP×EP×EDP layout over each
	// stage's TP×CP×DP ranks (parallel.NewFoldedLayout). The canonical form
	// leaves it 0 when it equals tp, so run ids do not change.
	ExpertTP int  `yaml:"expert_tp" json:"expert_tp,omitempty"`
	SP       bool `yaml:"sp" json:"sp"`
	Zero     int  `yaml:"zero" json:"zero"`
	// Zero3PrefetchBucket is the most parameters one ZeRO-3 parameter
	// all-gather call moves: 0 (the default) gathers each layer in one call,
	// as PyTorch FSDP's flat parameter per wrapped block does; DeepSpeed
	// stage 3 gathers by its stage3_prefetch_bucket_size (5e7 elements by
	// default), ⌈layer parameters / bucket⌉ calls a layer, each paying a
	// collective's launch and ring latency (parallel.StepConfig
	// .Zero3GatherParams). Needs zero 3.
	Zero3PrefetchBucket float64 `yaml:"zero3_prefetch_bucket" json:"zero3_prefetch_bucket,omitempty"`
	// Zero3Impl is the library that shards the parameters under zero 3:
	// "fsdp" (the default: PyTorch FSDP1/FSDP2, whose fp32 parameter shard
	// is the master copy), "deepspeed" or "megatron" (Megatron-FSDP), which
	// keep a 16-bit shard beside the fp32 one (workload.MemoryInput
	// .ShardIsMaster).
	Zero3Impl string `yaml:"zero3_impl" json:"zero3_impl"`
	// Zero3GradSync is when ZeRO-3 reduce-scatters the gradients with
	// gradient accumulation: "every" micro-batch (the default, PyTorch
	// FSDP's behaviour unless told otherwise) or the "last" one only
	// (FSDP2's set_requires_gradient_sync(False), FSDP1's no_sync, on
	// the others: the unsharded gradient accumulates in grad_dtype).
	// The canonical form leaves every empty, so run ids do not change.
	Zero3GradSync string `yaml:"zero3_grad_sync" json:"zero3_grad_sync,omitempty"`
	// PipeEngine is the program that runs the pipeline schedule when pp >
	// 1: "megatron" (the default: Megatron's schedules, no host reads per
	// micro-batch) or "deepspeed" (DeepSpeed's PipelineEngine driven by
	// Megatron-DeepSpeed's GPTModelPipe: the host synchronisations of its
	// instructions, parallel.StepConfig.PipeEngineSync). The canonical
	// form leaves megatron empty, so run ids do not change.
	PipeEngine string `yaml:"pipe_engine" json:"pipe_engine,omitempty"`
	// TPLogits is where the LM head's logits go under tensor parallelism:
	// "sharded" (the default: each TP rank keeps its vocabulary shard and
	// the loss is vocabulary-parallel, torchtitan's loss_parallel and
	// Megatron-LM) or "replicated" (DTensor ColwiseParallel with
	// output_layouts=Replicate(): the logits are all-gathered to every TP
	// rank, which computes the loss over the whole vocabulary;
	// KempnerForge). Needs tp > 1. The canonical form leaves sharded
	// empty, so run ids do not change.
	TPLogits string `yaml:"tp_logits" json:"tp_logits,omitempty"`
	// TPEmbedding is how tensor parallelism holds the input embedding:
	// "sharded" (the default: vocabulary-parallel, each TP rank a V/tp
	// slice, its output reduced over the group; Megatron-LM, torchtitan)
	// or "replicated" (the whole table on every TP rank, KempnerForge).
	// Needs tp > 1. The canonical form leaves sharded empty.
	TPEmbedding string `yaml:"tp_embedding" json:"tp_embedding,omitempty"`
	// GradBucket is the DP gradient bucket of ZeRO 0-2, in parameters: the
	// backward's gradients are reduced in calls of about this many
	// parameters, each paying a collective's launch and latency. 0 (the
	// default) takes Megatron-LM's max(40M, 1M·dp); the framework profiles
	// set their own (PyTorch DDP's bucket_cap_mb, DeepSpeed's
	// reduce_bucket_size) (parallel.StepConfig.BucketParams). Needs zero
	// 0-2: ZeRO-3 reduce-scatters each layer's gradients.
	GradBucket       float64 `yaml:"grad_bucket" json:"grad_bucket,omitempty"`
	Schedule         string  `yaml:"schedule" json:"schedule"`
	VirtualStages    int     `yaml:"virtual_stages" json:"virtual_stages"`
	FirstStageLayers int     `yaml:"first_stage_layers" json:"first_stage_layers"`
	LastStageLayers  int     `yaml:"last_stage_layers" json:"last_stage_layers"`
	// StageLayers gives every pipeline stage its own number of layers (one
	// entry per stage, summing to model.layers), for uneven splits: a
	// heterogeneous pipeline gives its faster GPUs more layers.
	StageLayers []int  `yaml:"stage_layers" json:"stage_layers,omitempty"`
	Order       string `yaml:"order" json:"order"`
	// TPImpl is how tensor parallelism is implemented: "megatron" (the
	// default: Megatron-LM / Transformer Engine on sequence-first
	// activations, collectives in place) or "dtensor" (PyTorch DTensor
	// tensor parallelism on batch-first activations, as torchtitan runs it:
	// a copy after every sequence all-gather and before every
	// reduce-scatter, and AsyncTP leaves the backward input-gradient
	// reduce-scatter exposed). See parallel.StepConfig.TPImplDTensor.
	TPImpl string `yaml:"tp_impl" json:"tp_impl"`
	// EPBackend is the library that runs the MoE dispatch and combine:
	// "nccl" (the default: an all-to-all of tokens × top-k rows), "deepep"
	// or "hybridep" (one bf16 row per destination rank at the backend's
	// measured bandwidth; see parallel.EPDispatch). Not "nccl" needs ep > 1.
	// The canonical form leaves nccl empty, so run ids do not change.
	EPBackend string `yaml:"ep_backend" json:"ep_backend,omitempty"`
	// EPSMs is the SMs the DeepEP/HybridEP kernels hold (Megatron's
	// moe_flex_dispatcher_num_sms / moe_hybridep_num_sms); 0 picks the
	// backend's default (parallel.EPBackend.DefaultSMs).
	EPSMs int `yaml:"ep_sms" json:"ep_sms,omitempty"`
	// CPImpl is the context-parallel attention implementation: "p2p" (the
	// default: Transformer Engine's cp_comm_type p2p, Megatron-Core's
	// default, K/V passed along the ring step by step; workload.CPP2P),
	// "allgather" (K and V all-gathered once, dK and dV reduce-scattered;
	// Transformer Engine's cp_comm_type all_gather) or "pytorch" (PyTorch's
	// experimental context_parallel as torchtitan runs it: fp32 merges of
	// per-step outputs, K and V gathered again in the backward, fp32 dK and
	// dV passed around the ring every step; workload.CPPyTorch). The
	// canonical form leaves p2p empty.
	CPImpl  string        `yaml:"cp_impl" json:"cp_impl,omitempty"`
	Overlap OverlapConfig `yaml:"overlap" json:"overlap"`
}

// OverlapConfig is the parallel.overlap block.
type OverlapConfig struct {
	GradReduce  *bool `yaml:"grad_reduce" json:"grad_reduce"`
	ParamGather *bool `yaml:"param_gather" json:"param_gather"`
	TPComm      *bool `yaml:"tp_comm" json:"tp_comm"`
	// TPBwd is Megatron's asynchronous TP communication in the backward of
	// a column-parallel linear (parallel.Overlap.TPBwd). Default false: on,
	// it raised the holdout MAPE (docs/validation.md round 14).
	TPBwd *bool `yaml:"tp_bwd" json:"tp_bwd"`
	P2P   *bool `yaml:"p2p" json:"p2p"`
	// EP overlaps the MoE all-to-alls with expert and shared-expert compute
	// (Megatron-Core's --moe-*-overlap / DeepEP-style dispatch). Default false.
	EP *bool `yaml:"ep" json:"ep"`
}

// SimConfig is the sim block.
type SimConfig struct {
	Fidelity string `yaml:"fidelity" json:"fidelity"`
	Steps    int    `yaml:"steps" json:"steps"`
	Timeline *bool  `yaml:"timeline" json:"-"`
	// Links is links.arrow's size policy (LinksNames): what a run writes,
	// not part of the configuration, so no run id or column depends on it.
	Links string `yaml:"links" json:"-"`
	// Seed seeds every random draw of the run (Variability's); 0 when the
	// run draws nothing, so that a scenario without variability keeps its
	// run id.
	Seed int64 `yaml:"seed" json:"seed,omitempty"`
	// Variability, when present, slows each rank's compute per step by a
	// random factor (sim/simulation's variability model); nil plays every
	// step at the profile's speed.
	Variability *Variability `yaml:"variability" json:"variability,omitempty"`
}

// Variability is the sim.variability block: the per-rank, per-step compute
// slowdown a step's synchronous collectives make every rank wait for.
// Factor of rank r in step k: g_r · j_{r,k} · (SlowFactor with probability
// SlowProb, else 1), where g_r (GPUCV, drawn once per rank: GPU-to-GPU
// variation) and j_{r,k} (StepCV, drawn per step: throttling and jitter)
// follow Distribution with median 1.
type Variability struct {
	Distribution string  `yaml:"distribution" json:"distribution"`
	GPUCV        float64 `yaml:"gpu_cv" json:"gpu_cv"`
	StepCV       float64 `yaml:"step_cv" json:"step_cv"`
	SlowProb     float64 `yaml:"slow_prob" json:"slow_prob"`
	SlowFactor   float64 `yaml:"slow_factor" json:"slow_factor"`
}

// VariabilityNames are sim.variability.distribution's values: none (every
// factor 1), normal (1 + cv·Z) and lognormal (exp(σZ), σ² = ln(1+cv²): the
// same coefficient of variation, never negative, a heavier slow tail).
var VariabilityNames = []string{"none", "normal", "lognormal"}

// LinksNames are sim.links's values, links.arrow's size policy: auto
// writes one row per link when the cluster has at most
// report.AutoLinksMax links and nothing otherwise, full always writes
// them, off never does.
var LinksNames = []string{"auto", "full", "off"}

// Expect is a measured figure to compare a prediction against.
type Expect struct {
	StepTimeS        *float64 `yaml:"step_time_s" json:"step_time_s,omitempty"`
	TokensPerSPerGPU *float64 `yaml:"tokens_per_s_per_gpu" json:"tokens_per_s_per_gpu,omitempty"`
	MFU              *float64 `yaml:"mfu" json:"mfu,omitempty"`
	TFLOPsPerGPU     *float64 `yaml:"tflops_per_gpu" json:"tflops_per_gpu,omitempty"`
	// PeakMemoryGiB is the source's peak memory per GPU in GiB (2^30
	// bytes), the largest GPU's, as PyTorch's caching allocator reports it
	// (reserved_bytes.all.peak); optional, compared beside the speed figure
	// with the simulated reservation (Result.PeakReservedBytes).
	PeakMemoryGiB   *float64 `yaml:"peak_memory_gib" json:"peak_memory_gib,omitempty"`
	Source          string   `yaml:"source" json:"source"`
	FLOPsConvention string   `yaml:"flops_convention" json:"flops_convention"`
	// AttentionFLOPs says how the source counted the attention-matrix FLOPs
	// in an mfu or tflops_per_gpu figure: "full" (every query against every
	// key: PaLM appendix B, Megatron-LM until 2024, llm-foundry; the default)
	// or "causal" (half of that: Megatron-Core's formula since 2025).
	AttentionFLOPs string `yaml:"attention_flops" json:"attention_flops,omitempty"`
	// Group labels the row for per-group accuracy reports (e.g. the source table).
	Group string `yaml:"group" json:"group,omitempty"`
	// Notes carries free text about how the figure was read.
	Notes string `yaml:"notes" json:"notes,omitempty"`
}

// Override gives one field a value from outside the file (the CLI's
// --fidelity, a sweep's --fidelity): Value is YAML text of one value or a
// flow-style list. It is checked like the file's own fields and wins over
// them.
type Override struct {
	Path, Value string
}

// Overrides pairs up dotted paths and YAML values: Overrides("parallel.tp",
// "8", "sim.fidelity", "flow"). An odd last argument is ignored.
func Overrides(pathValue ...string) []Override {
	out := make([]Override, 0, len(pathValue)/2)
	for i := 0; i+1 < len(pathValue); i += 2 {
		out = append(out, Override{Path: pathValue[i], Value: pathValue[i+1]})
	}
	return out
}

// Load reads, checks and resolves a scenario file.
func Load(path string, overrides ...Override) (*Plan, error) {
	return LoadCalibrated(path, nil, overrides...)
}

// LoadCalibrated is Load with the calibration entries of cal replaced when
// cluster.gpu is resolved: how `simtrain calibrate` evaluates a fitted
// constant at another value (nil: the committed table).
func LoadCalibrated(path string, cal hardware.Calibration, overrides ...Override) (*Plan, error) {
	return ReadFile(path).Resolve(cal, overrides...)
}

// File is a scenario file read and parsed once, for a caller that resolves
// it many times: calibrate's search and validate --cv evaluate each
// validation file at many values of the fitted constants, and reading and
// parsing the file again for each was ≈ 5% of `validate --cv source`'s
// CPU (perf, issue 18, round 58). Resolve calls may run concurrently: they
// only read the parsed document (decode clones it before applying
// overrides).
type File struct {
	path string
	doc  *yaml.Node
	err  error // the read's, as is, or the parse's, with the path
}

// ReadFile reads and parses the scenario file at path; an error is kept
// for Resolve to return, as LoadCalibrated would.
func ReadFile(path string) *File {
	f := &File{path: path}
	data, err := limits.ReadFile(path, limits.MaxInputBytes)
	if err != nil {
		f.err = err
		return f
	}
	if f.doc, err = parseDoc(data); err != nil {
		f.err = fmt.Errorf("%s: %w", path, err)
	}
	return f
}

// Path is the file's path, as ReadFile was given it.
func (f *File) Path() string { return f.path }

// Resolve checks and resolves the file's scenario with the calibration
// entries of cal replaced (nil: the committed table) and the overrides
// applied: LoadCalibrated's result for the file as it was read.
func (f *File) Resolve(cal hardware.Calibration, overrides ...Override) (*Plan, error) {
	if f.err != nil {
		return nil, f.err
	}
	s, err := parseNodeCal(f.doc, filepath.Dir(f.path), cal, overrides)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.path, err)
	}
	return s, nil
}

// Parse decodes, checks and resolves a scenario document; a relative
// cluster.gpu file is read from the working directory.
func Parse(data []byte, overrides ...Override) (*Plan, error) {
	doc, err := parseDoc(data)
	if err != nil {
		return nil, err
	}
	return ParseNodeIn(doc, "", overrides...)
}

// parseDoc decodes one YAML document.
func parseDoc(data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not a YAML scenario: %w", cleanYAMLError(err))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, errors.New("the file holds more than one YAML document; a scenario is one document")
	}
	return &doc, nil
}

// ParseNode checks and resolves a scenario from a YAML node (a document or
// its root mapping), with the overrides applied first. The node is not
// changed.
func ParseNode(doc *yaml.Node, overrides ...Override) (*Plan, error) {
	return ParseNodeIn(doc, "", overrides...)
}

// ParseNodeIn is ParseNode for a scenario that lives in directory dir: a
// relative cluster.gpu file is read from there.
func ParseNodeIn(doc *yaml.Node, dir string, overrides ...Override) (*Plan, error) {
	return parseNodeCal(doc, dir, nil, overrides)
}

func parseNodeCal(doc *yaml.Node, dir string, cal hardware.Calibration, overrides []Override) (*Plan, error) {
	s, err := decode(doc, dir, overrides)
	if err != nil {
		return nil, err
	}
	s.cal = cal
	if err := s.resolve(s.set); err != nil {
		return nil, err
	}
	return s, nil
}

// ParsePartial is ParseNode for a sweep's invalid points: when resolution
// fails it still returns the plan as far as resolution got, with the
// defaults a summary row shows filled in, so the error row has the point's
// knobs and a run id. A document that does not even decode gives a plan
// that holds only its name. dir is as for ParseNodeIn.
func ParsePartial(doc *yaml.Node, dir, name string) (*Plan, error) {
	s, err := decode(doc, dir, nil)
	if err != nil {
		return &Plan{Scenario: Scenario{Name: name}}, err
	}
	if err := s.resolve(s.set); err != nil {
		s.fillDisplayDefaults()
		return s, err
	}
	return s, nil
}

// Probe resolves a document's model, training and cluster, not its layout:
// what a sweep's auto candidates depend on (Knob.Auto). dir is as for
// ParseNodeIn.
func Probe(doc *yaml.Node, dir string) (*Plan, error) {
	s, err := decode(doc, dir, nil)
	if err != nil {
		return nil, err
	}
	if err := s.resolveModel(s.set); err != nil {
		return nil, err
	}
	if err := s.resolveTraining(s.set); err != nil {
		return nil, err
	}
	if err := s.resolveCluster(s.set); err != nil {
		return nil, err
	}
	return s, nil
}

// decode checks doc against the format (field names and types) and decodes
// it, overrides applied, into an unresolved plan living in dir.
func decode(doc *yaml.Node, dir string, overrides []Override) (*Plan, error) {
	root := doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return nil, errors.New("empty scenario")
		}
		root = root.Content[0]
	}
	if len(overrides) > 0 {
		root = CloneNode(root)
		for _, o := range overrides {
			if err := o.Apply(root); err != nil {
				return nil, err
			}
		}
	}
	set := fieldSet{}
	if err := checkNode(root, reflect.TypeOf(Scenario{}), "", set); err != nil {
		return nil, err
	}
	s := &Plan{set: set, dir: dir}
	if err := root.Decode(&s.Scenario); err != nil {
		return nil, cleanYAMLError(err)
	}
	if err := s.applyFramework(root); err != nil {
		return nil, err
	}
	return s, nil
}

// Apply sets o's field in a scenario's root mapping, checked like a field
// of the file: an unknown path or a value that is not YAML is an error.
func (o Override) Apply(root *yaml.Node) error {
	if root.Kind != yaml.MappingNode {
		return fmt.Errorf("scenario: expected a mapping of fields, got %s (line %d)", describe(root), root.Line)
	}
	var v yaml.Node
	if err := yaml.Unmarshal([]byte(o.Value), &v); err != nil || len(v.Content) != 1 {
		return fmt.Errorf("%s: %q is not a YAML value", o.Path, o.Value)
	}
	val := v.Content[0]
	clearLines(val)
	return SetFieldPath(root, o.Path, val)
}

// clearLines marks a node as given outside the file: errors about it then
// carry no line number.
func clearLines(n *yaml.Node) {
	n.Line, n.Column = 0, 0
	for _, c := range n.Content {
		clearLines(c)
	}
}

// YAMLError turns a yaml.v3 error into one line without its package prefix.
func YAMLError(err error) error { return cleanYAMLError(err) }

func cleanYAMLError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	return errors.New(strings.ReplaceAll(msg, "\n", "; "))
}

// runIDNamespace is the UUIDv5 namespace of run ids (a fixed random UUID).
var runIDNamespace = uuid.MustParse("5d3c3b53-8f0a-4f59-9a3e-3f2c0b6f1a10")

// CanonicalJSON is the scenario's configuration with every default filled in,
// without name, description and expect: two files that configure the same run
// give the same bytes. The top-level blocks are written in the order of their
// keys (as encoding/json writes a map), each as encoding/json writes it in
// the struct, through a pointer so that pointer-receiver marshalers apply as
// they do there: the bytes of marshalling the scenario, decoding its top level
// into a map and marshalling that without "name" (what it did until sweeps
// hashed 1,000 points a load, ≈ half of loading them;
// TestCanonicalJSONUnchanged holds the two equal).
func (s *Scenario) CanonicalJSON() []byte {
	b, _ := s.appendCanonicalJSON(make([]byte, 0, 2048))
	return b
}

// appendCanonicalJSON appends CanonicalJSON's bytes to out. shared is the
// length of out up to the end of the model block: the cluster, goodput and
// model blocks, which a sweep's points mostly leave as the base has them.
func (s *Scenario) appendCanonicalJSON(out []byte) (b []byte, shared int) {
	// The json keys of Scenario's top-level fields in sorted order; goodput
	// is omitempty. name, description and expect are left out.
	out = append(out, `{"cluster":`...)
	out = appendBlock(out, &s.Cluster)
	if s.Goodput != nil {
		out = append(out, `,"goodput":`...)
		out = appendBlock(out, s.Goodput)
	}
	out = append(out, `,"model":`...)
	out = appendBlock(out, &s.Model)
	return s.appendCanonicalTail(out), len(out)
}

// appendCanonicalTail appends the canonical JSON's bytes after the model
// block: the parallel, sim and training blocks and the closing brace.
func (s *Scenario) appendCanonicalTail(out []byte) []byte {
	out = append(out, `,"parallel":`...)
	out = appendBlock(out, &s.Parallel)
	out = append(out, `,"sim":`...)
	out = appendBlock(out, &s.Sim)
	out = append(out, `,"training":`...)
	out = appendBlock(out, &s.Training)
	return append(out, '}')
}

// appendBlock appends the block v points to as json.Marshal writes it: by
// the compiled encoder (canonical.go), else by json.Marshal.
func appendBlock[T any](out []byte, v *T) []byte {
	if jt := canonicalType(reflect.TypeFor[T]()); jt != nil {
		if b, ok := jt.appendJSON(out, unsafe.Pointer(v)); ok {
			return b
		}
	}
	j, err := json.Marshal(v)
	if err != nil {
		panic(err) // plain data; cannot fail
	}
	return append(out, j...)
}

// runIDScratch is what RunID reuses between calls: the buffer of the
// namespace and canonical JSON, a SHA-1 hash and its sum.
type runIDScratch struct {
	buf []byte
	h   hash.Hash
	sum [sha1.Size]byte
}

// runIDScratches holds RunID's scratch between calls.
var runIDScratches = sync.Pool{New: func() any {
	return &runIDScratch{buf: make([]byte, 0, 2048), h: sha1.New()}
}}

// runIDPrefix is a hashed prefix of RunID's input: the namespace and the
// canonical JSON through the model block, the SHA-1 state (its
// encoding.BinaryMarshaler form) after hashing exactly those bytes, and
// copies of the blocks they encode (nil when a block's type has no
// compiled encoder: the bytes are then only compared). Read-only once
// stored.
type runIDPrefix struct {
	bytes   []byte
	state   []byte
	cluster *ClusterConfig
	goodput *goodput.Config
	model   *ModelConfig
}

// lastRunIDPrefix is the prefix of the last RunID whose prefix differed
// from the one before (nil before the first).
var lastRunIDPrefix atomic.Pointer[runIDPrefix]

// prefixTypes are the compiled encoders of the cluster, goodput and model
// blocks (nil where a type has none), looked up once.
var prefixTypes = sync.OnceValue(func() [3]*jsonType {
	return [3]*jsonType{
		canonicalType(reflect.TypeFor[ClusterConfig]()),
		canonicalType(reflect.TypeFor[goodput.Config]()),
		canonicalType(reflect.TypeFor[ModelConfig]()),
	}
})

// newRunIDPrefix keeps buf (RunID's input through the model block), the
// hash state state after it and copies of s's blocks written in it.
func newRunIDPrefix(s *Scenario, buf, state []byte) *runIDPrefix {
	p := &runIDPrefix{bytes: bytes.Clone(buf), state: state}
	if jt := prefixTypes(); jt[0] == nil || jt[2] == nil || (s.Goodput != nil && jt[1] == nil) {
		return p
	}
	var c Scenario
	deepCopy(reflect.ValueOf(&c.Cluster).Elem(), reflect.ValueOf(&s.Cluster).Elem())
	deepCopy(reflect.ValueOf(&c.Goodput).Elem(), reflect.ValueOf(&s.Goodput).Elem())
	deepCopy(reflect.ValueOf(&c.Model).Elem(), reflect.ValueOf(&s.Model).Elem())
	p.cluster, p.goodput, p.model = &c.Cluster, c.Goodput, &c.Model
	return p
}

// writes reports whether p's bytes are what s's cluster, goodput and
// model blocks write (jsonType.same on each: the same bytes whenever
// true; false may be a miss).
func (p *runIDPrefix) writes(s *Scenario) bool {
	if p.cluster == nil || (p.goodput == nil) != (s.Goodput == nil) {
		return false
	}
	jt := prefixTypes()
	return jt[0].same(unsafe.Pointer(p.cluster), unsafe.Pointer(&s.Cluster)) &&
		jt[2].same(unsafe.Pointer(p.model), unsafe.Pointer(&s.Model)) &&
		(s.Goodput == nil || jt[1].same(unsafe.Pointer(p.goodput), unsafe.Pointer(s.Goodput)))
}

// RunID is the UUIDv5 of the canonical configuration, so the same point gets
// the same id in every sweep and a resumed sweep can skip what is done.
//
// It is uuid.NewSHA1(runIDNamespace, s.CanonicalJSON()).String(): SHA-1
// of the namespace followed by the JSON, with uuid's version and variant
// bits. The buffer and hash are reused (runIDScratches: no allocation but
// the id's string). A sweep's points mostly share the cluster, goodput
// and model blocks (≈ 450 of the ≈ 1,140 bytes hashed per point of the
// 70B sweep), which come first: when s's blocks are field for field those
// of the last prefix kept (lastRunIDPrefix), RunID copies the prefix's
// bytes instead of encoding them again, and when the bytes are the
// prefix's, by that or by comparing, the hash resumes from the SHA-1
// state kept after them. SHA-1 of the same bytes from the same state is
// the same, so the id is exact (TestRunIDIsNewSHA1,
// TestRunIDSharedPrefix).
func (s *Scenario) RunID() string {
	sc := runIDScratches.Get().(*runIDScratch)
	h := sc.h
	h.Reset()
	var buf []byte
	var shared int
	p := lastRunIDPrefix.Load()
	resumed := false
	if p != nil && p.writes(s) && resume(h, p.state) {
		buf = s.appendCanonicalTail(append(sc.buf[:0], p.bytes...))
		shared, resumed = len(p.bytes), true
	} else {
		buf, shared = s.appendCanonicalJSON(append(sc.buf[:0], runIDNamespace[:]...))
		if p != nil && bytes.Equal(p.bytes, buf[:shared]) && resume(h, p.state) {
			resumed = true
		}
	}
	sc.buf = buf
	rest := buf // what is left to hash after h's state
	if resumed {
		rest = buf[shared:]
	} else if m, ok := h.(encoding.BinaryMarshaler); ok {
		h.Reset()
		h.Write(buf[:shared])
		if state, err := m.MarshalBinary(); err == nil {
			lastRunIDPrefix.Store(newRunIDPrefix(s, buf[:shared], state))
		}
		rest = buf[shared:]
	}
	h.Write(rest)
	var id uuid.UUID
	copy(id[:], h.Sum(sc.sum[:0]))
	runIDScratches.Put(sc)
	id[6] = (id[6] & 0x0f) | 0x50 // version 5
	id[8] = (id[8] & 0x3f) | 0x80 // RFC 4122 variant
	return id.String()
}

// resume sets h to the hash state state (MarshalBinary's form), reporting
// whether it could.
func resume(h hash.Hash, state []byte) bool {
	u, ok := h.(encoding.BinaryUnmarshaler)
	return ok && u.UnmarshalBinary(state) == nil
}

// CloneNode deep-copies a YAML node tree (aliases keep pointing at their
// original anchors, which are only read).
func CloneNode(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	if len(n.Content) > 0 {
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, x := range n.Content {
			c.Content[i] = CloneNode(x)
		}
	}
	return &c
}

// Expectation kinds, the keys of the expect: block.
const (
	MetricStepTime = "step_time_s"
	MetricTokens   = "tokens_per_s_per_gpu"
	MetricMFU      = "mfu"
	MetricTFLOPs   = "tflops_per_gpu"
)

// Metric returns the expect: block's measured figure and its key
// (MetricStepTime, MetricTokens, MetricMFU or MetricTFLOPs); "" when none is
// set.
func (e *Expect) Metric() (string, float64) {
	switch {
	case e.StepTimeS != nil:
		return MetricStepTime, *e.StepTimeS
	case e.TokensPerSPerGPU != nil:
		return MetricTokens, *e.TokensPerSPerGPU
	case e.MFU != nil:
		return MetricMFU, *e.MFU
	case e.TFLOPsPerGPU != nil:
		return MetricTFLOPs, *e.TFLOPsPerGPU
	}
	return "", 0
}
