package scenario

// The knobs resolution fills and checks, looked up once: fill and checkChoice
// found them by name, hashing the path per call (≈ 50 lookups a plan).
var (
	knobModelLayers                    = mustKnob("model.layers")
	knobModelHidden                    = mustKnob("model.hidden")
	knobModelHeads                     = mustKnob("model.heads")
	knobModelKVHeads                   = mustKnob("model.kv_heads")
	knobModelHeadDim                   = mustKnob("model.head_dim")
	knobModelFFN                       = mustKnob("model.ffn")
	knobModelVocab                     = mustKnob("model.vocab")
	knobModelActivation                = mustKnob("model.activation")
	knobModelAttention                 = mustKnob("model.attention")
	knobModelNorm                      = mustKnob("model.norm")
	knobModelAttentionWindow           = mustKnob("model.attention_window")
	knobModelFullAttentionEvery        = mustKnob("model.full_attention_every")
	knobModelMtpLayers                 = mustKnob("model.mtp_layers")
	knobTrainingSeqLen                 = mustKnob("training.seq_len")
	knobTrainingGlobalBatch            = mustKnob("training.global_batch")
	knobClusterNodes                   = mustKnob("cluster.nodes")
	knobTrainingMicroBatch             = mustKnob("training.micro_batch")
	knobTrainingPrecision              = mustKnob("training.precision")
	knobTrainingOptimizer              = mustKnob("training.optimizer")
	knobTrainingMasterDtype            = mustKnob("training.master_dtype")
	knobTrainingGradDtype              = mustKnob("training.grad_dtype")
	knobTrainingRecompute              = mustKnob("training.recompute")
	knobTrainingFlashAttention         = mustKnob("training.flash_attention")
	knobTrainingCrossEntropy           = mustKnob("training.cross_entropy")
	knobTrainingCompile                = mustKnob("training.compile")
	knobTrainingFusedNorm              = mustKnob("training.fused_norm")
	knobTrainingAttentionKernel        = mustKnob("training.attention_kernel")
	knobTrainingOptimizerStateDtype    = mustKnob("training.optimizer_state_dtype")
	knobTrainingOptimizerLoop          = mustKnob("training.optimizer_loop")
	knobTrainingLossReadbackAt         = mustKnob("training.loss_readback_at")
	knobTrainingCudaGraphs             = mustKnob("training.cuda_graphs")
	knobTrainingHostDispatch           = mustKnob("training.host_dispatch")
	knobTrainingFp8Recipe              = mustKnob("training.fp8_recipe")
	knobClusterGpusPerNode             = mustKnob("cluster.gpus_per_node")
	knobClusterIntraNode               = mustKnob("cluster.intra_node")
	knobClusterNetworkKind             = mustKnob("cluster.network.kind")
	knobClusterNetworkNic              = mustKnob("cluster.network.nic")
	knobClusterNetworkNicGbps          = mustKnob("cluster.network.nic_gbps")
	knobClusterNetworkNicsPerNode      = mustKnob("cluster.network.nics_per_node")
	knobClusterNetworkOversubscription = mustKnob("cluster.network.oversubscription")
	knobClusterGpuHourUsd              = mustKnob("cluster.gpu_hour_usd")
	knobClusterPue                     = mustKnob("cluster.pue")
	knobParallelDp                     = mustKnob("parallel.dp")
	knobParallelZero                   = mustKnob("parallel.zero")
	knobParallelSchedule               = mustKnob("parallel.schedule")
	knobParallelOrder                  = mustKnob("parallel.order")
	knobParallelTpImpl                 = mustKnob("parallel.tp_impl")
	knobParallelZero3Impl              = mustKnob("parallel.zero3_impl")
	knobParallelZero3GradSync          = mustKnob("parallel.zero3_grad_sync")
	knobParallelPipeEngine             = mustKnob("parallel.pipe_engine")
	knobParallelTpLogits               = mustKnob("parallel.tp_logits")
	knobParallelTpEmbedding            = mustKnob("parallel.tp_embedding")
	knobParallelCpImpl                 = mustKnob("parallel.cp_impl")
	knobSimFidelity                    = mustKnob("sim.fidelity")
	knobSimSteps                       = mustKnob("sim.steps")
	knobSimTimeline                    = mustKnob("sim.timeline")
	knobSimLinks                       = mustKnob("sim.links")
	knobSimVariabilityDistribution     = mustKnob("sim.variability.distribution")
	knobExpectFlopsConvention          = mustKnob("expect.flops_convention")
	knobExpectAttentionFlops           = mustKnob("expect.attention_flops")
)

// The knobs filled in a loop (resolveParallel, resolveVariability,
// fillDisplayDefaults), in the order resolution fills them.
var (
	knobParallelTp            = mustKnob("parallel.tp")
	knobParallelPp            = mustKnob("parallel.pp")
	knobParallelCp            = mustKnob("parallel.cp")
	knobParallelEp            = mustKnob("parallel.ep")
	knobParallelVirtualStages = mustKnob("parallel.virtual_stages")
	knobsOverlap              = mustKnobs("parallel.overlap.", "grad_reduce", "param_gather", "tp_comm", "tp_bwd", "p2p", "ep")
	knobsOverlapDisplay       = knobsOverlap[:5] // without ep: an invalid point's row shows these
	knobsVariability          = mustKnobs("sim.variability.", "distribution", "gpu_cv", "step_cv", "slow_prob", "slow_factor")
)

// mustKnob is the registry entry of path (knobByPath, which Go initialises
// before the variables that call this: a lookup each instead of a scan of
// Knobs, ≈ 35,000 instructions of every process's start for the 67 knobs
// here; docs/design.md "Speed", start53); a path the registry lacks is a
// programming error.
func mustKnob(path string) *Knob {
	if k := knobByPath[path]; k != nil {
		return k
	}
	panic("scenario: no knob " + path)
}

// mustKnobs is mustKnob of prefix+name for each name, in order.
func mustKnobs(prefix string, names ...string) []*Knob {
	out := make([]*Knob, len(names))
	for i, n := range names {
		out[i] = mustKnob(prefix + n)
	}
	return out
}
