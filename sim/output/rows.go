package output

import "math"

// The row types below are the schemas of the small tables. Each field's arrow
// tag is its column name (snake_case, unit in the name); ",dict" marks a
// string column to dictionary-encode. Column order is field order. Pointer
// fields are nullable. Documented column by column in results/README.md.

// SummaryRow is one simulated scenario (summary.arrow; also one sweep point).
type SummaryRow struct {
	RunID string `arrow:"run_id"`
	Name  string `arrow:"name"`
	Error string `arrow:"error"` // empty when the point simulated

	// Input knobs.
	ModelPreset         string  `arrow:"model_preset,dict"`
	Layers              int64   `arrow:"layers"`
	Hidden              int64   `arrow:"hidden"`
	Heads               int64   `arrow:"heads"`
	KVHeads             int64   `arrow:"kv_heads"`
	FFN                 int64   `arrow:"ffn"`
	Vocab               int64   `arrow:"vocab"`
	Experts             int64   `arrow:"experts"`
	TopK                int64   `arrow:"top_k"`
	HeadDim             int64   `arrow:"head_dim"`
	Activation          string  `arrow:"activation,dict"`
	Attention           string  `arrow:"attention,dict"`
	Norm                string  `arrow:"norm,dict"`
	TiedEmbeddings      bool    `arrow:"tied_embeddings"`
	AttentionWindow     int64   `arrow:"attention_window"`
	FullAttentionEvery  int64   `arrow:"full_attention_every"`
	MTPLayers           int64   `arrow:"mtp_layers"`
	ExpertFFN           int64   `arrow:"expert_ffn"`
	SharedExperts       int64   `arrow:"shared_experts"`
	DenseLayers         int64   `arrow:"dense_layers"`
	CapacityFactor      float64 `arrow:"capacity_factor"`
	Dropless            bool    `arrow:"dropless"`
	MoEImbalance        float64 `arrow:"moe_imbalance"`
	Params              float64 `arrow:"params"`
	ActiveParams        float64 `arrow:"active_params"`
	SeqLen              int64   `arrow:"seq_len"`
	GlobalBatch         int64   `arrow:"global_batch"`
	MicroBatch          int64   `arrow:"micro_batch"`
	Precision           string  `arrow:"precision,dict"`
	Optimizer           string  `arrow:"optimizer,dict"`
	Recompute           string  `arrow:"recompute,dict"`
	FlashAttention      bool    `arrow:"flash_attention"`
	FP8Recipe           string  `arrow:"fp8_recipe,dict"`
	FP8ParamGather      bool    `arrow:"fp8_param_gather"`
	BF16LayersAtStart   int64   `arrow:"bf16_layers_at_start"`
	BF16LayersAtEnd     int64   `arrow:"bf16_layers_at_end"`
	MasterDtype         string  `arrow:"master_dtype,dict"`
	GradDtype           string  `arrow:"grad_dtype,dict"`
	OptimizerStateDtype string  `arrow:"optimizer_state_dtype,dict"`
	RecomputeModules    string  `arrow:"recompute_modules,dict"`
	RecomputeEvery      int64   `arrow:"recompute_every"`
	OffloadModules      string  `arrow:"offload_modules,dict"`
	OffloadOptimizer    bool    `arrow:"offload_optimizer"`
	CrossEntropy        string  `arrow:"cross_entropy,dict"`
	Compile             bool    `arrow:"compile"`
	FusedNorm           bool    `arrow:"fused_norm"`
	AttentionKernel     string  `arrow:"attention_kernel,dict"`
	AttentionUnpad      bool    `arrow:"attention_unpad"`
	AttentionRepeatKV   bool    `arrow:"attention_repeat_kv"`
	CUDAGraphs          string  `arrow:"cuda_graphs,dict"`
	HostDispatch        string  `arrow:"host_dispatch,dict"`
	GPU                 string  `arrow:"gpu,dict"`
	Nodes               int64   `arrow:"nodes"`
	GPUsPerNode         int64   `arrow:"gpus_per_node"`
	NumGPUs             int64   `arrow:"num_gpus"`
	IntraNode           string  `arrow:"intra_node,dict"`
	Network             string  `arrow:"network,dict"`
	NIC                 string  `arrow:"nic,dict"`
	NICGbps             float64 `arrow:"nic_gbps"`
	NICsPerNode         int64   `arrow:"nics_per_node"`
	Oversubscription    float64 `arrow:"oversubscription"`
	PodGPUs             int64   `arrow:"pod_gpus"`
	GPUHourUSD          float64 `arrow:"gpu_hour_usd"`
	PUE                 float64 `arrow:"pue"`
	TP                  int64   `arrow:"tp"`
	PP                  int64   `arrow:"pp"`
	DP                  int64   `arrow:"dp"`
	CP                  int64   `arrow:"cp"`
	EP                  int64   `arrow:"ep"`
	SP                  bool    `arrow:"sp"`
	Zero                int64   `arrow:"zero"`
	Zero3PrefetchBucket float64 `arrow:"zero3_prefetch_bucket"`
	GradBucket          float64 `arrow:"grad_bucket"`
	Schedule            string  `arrow:"schedule,dict"`
	VirtualStages       int64   `arrow:"virtual_stages"`
	Microbatches        int64   `arrow:"microbatches"`
	ExpertTP            int64   `arrow:"expert_tp"`
	EPBackend           string  `arrow:"ep_backend,dict"`
	EPSMs               int64   `arrow:"ep_sms"`
	CPImpl              string  `arrow:"cp_impl,dict"`
	TPImpl              string  `arrow:"tp_impl,dict"`
	Zero3Impl           string  `arrow:"zero3_impl,dict"`
	FirstStageLayers    int64   `arrow:"first_stage_layers"`
	LastStageLayers     int64   `arrow:"last_stage_layers"`
	Order               string  `arrow:"order,dict"`
	OverlapGradReduce   bool    `arrow:"overlap_grad_reduce"`
	OverlapParamGather  bool    `arrow:"overlap_param_gather"`
	OverlapTPComm       bool    `arrow:"overlap_tp_comm"`
	OverlapTPBwd        bool    `arrow:"overlap_tp_bwd"`
	OverlapP2P          bool    `arrow:"overlap_p2p"`
	OverlapEP           bool    `arrow:"overlap_ep"`
	Fidelity            string  `arrow:"fidelity,dict"`
	Steps               int64   `arrow:"steps"`
	Seed                int64   `arrow:"seed"`
	Variability         string  `arrow:"variability,dict"`
	VariabilityGPUCV    float64 `arrow:"variability_gpu_cv"`
	VariabilityStepCV   float64 `arrow:"variability_step_cv"`
	VariabilitySlowProb float64 `arrow:"variability_slow_prob"`
	VariabilitySlowFac  float64 `arrow:"variability_slow_factor"`

	// Results.
	StepTimeS            float64 `arrow:"step_time_s"`
	StepP50S             float64 `arrow:"step_p50_s"` // median step (nearest rank) over sim.steps
	StepP99S             float64 `arrow:"step_p99_s"` // 99th-percentile step (nearest rank) over sim.steps
	TokensPerS           float64 `arrow:"tokens_per_s"`
	TokensPerSPerGPU     float64 `arrow:"tokens_per_s_per_gpu"`
	ModelFLOPsPerStep    float64 `arrow:"model_flops_per_step"`
	HardwareFLOPsPerStep float64 `arrow:"hardware_flops_per_step"`
	MFU                  float64 `arrow:"mfu"`
	HFU                  float64 `arrow:"hfu"`
	TFLOPsPerGPU         float64 `arrow:"tflops_per_gpu"`
	BubbleFraction       float64 `arrow:"bubble_fraction"`
	ComputeS             float64 `arrow:"compute_s"`    // busy compute time of the busiest rank per step
	HostSyncS            float64 `arrow:"host_sync_s"`  // compute-stream idle in host synchronisations, mean over ranks, per step
	HostBoundS           float64 `arrow:"host_bound_s"` // compute-stream wait for the host thread's issue, mean over ranks, per step
	HostIssueS           float64 `arrow:"host_issue_s"` // host thread busy issuing kernels and calls, mean over ranks, per step
	ExposedTPS           float64 `arrow:"exposed_tp_s"`
	ExposedCPS           float64 `arrow:"exposed_cp_s"`
	ExposedEPS           float64 `arrow:"exposed_ep_s"`
	ExposedDPS           float64 `arrow:"exposed_dp_s"`
	ExposedPPS           float64 `arrow:"exposed_pp_s"`
	PeakMemBytes         int64   `arrow:"peak_mem_bytes"`     // largest rank
	MinPeakMemBytes      int64   `arrow:"min_peak_mem_bytes"` // smallest rank
	MemCapacityBytes     int64   `arrow:"mem_capacity_bytes"`
	MemMarginBytes       int64   `arrow:"mem_margin_bytes"` // mem_capacity_bytes − peak_mem_bytes, negative when it does not fit
	Fits                 bool    `arrow:"fits"`
	CostUSDPerStep       float64 `arrow:"cost_usd_per_step"`
	EnergyKWhPerStep     float64 `arrow:"energy_kwh_per_step"`
	Events               int64   `arrow:"events"`
	SimWallS             float64 `arrow:"sim_wall_s"`
}

// StepRow is one simulated optimizer step (steps.arrow, written when the
// scenario has a sim.variability block).
type StepRow struct {
	Step        int32   `arrow:"step"`
	StepTimeS   float64 `arrow:"step_time_s"`  // with the slowest rank's delay
	BaseS       float64 `arrow:"base_s"`       // as simulated, every rank at its profile's speed
	SlowestRank int32   `arrow:"slowest_rank"` // the rank the step waited for
	Slowdown    float64 `arrow:"slowdown"`     // that rank's compute-time factor
}

// MemoryRow is one rank's memory breakdown at its peak (memory.arrow).
type MemoryRow struct {
	Rank             int32 `arrow:"rank"`
	Node             int32 `arrow:"node"`
	Stage            int32 `arrow:"stage"`
	WeightsBytes     int64 `arrow:"weights_bytes"`
	GradientsBytes   int64 `arrow:"gradients_bytes"`
	OptimizerBytes   int64 `arrow:"optimizer_bytes"`
	ActivationsBytes int64 `arrow:"activations_bytes"`
	BuffersBytes     int64 `arrow:"buffers_bytes"`
	OverheadBytes    int64 `arrow:"overhead_bytes"`
	TotalBytes       int64 `arrow:"total_bytes"`
	CapacityBytes    int64 `arrow:"capacity_bytes"`
	Fits             bool  `arrow:"fits"`
}

// LinkRow is one directed link's traffic over the simulated steps (links.arrow).
type LinkRow struct {
	Link               int32   `arrow:"link"`
	From               string  `arrow:"from"`
	To                 string  `arrow:"to"`
	Kind               string  `arrow:"kind,dict"`
	BandwidthBytesPerS float64 `arrow:"bandwidth_bytes_per_s"`
	Bytes              int64   `arrow:"bytes"`
	BusyNs             int64   `arrow:"busy_ns"`
	Utilization        float64 `arrow:"utilization"` // bytes / (bandwidth * simulated time)
}

// ByteCount is a modelled byte count (a float64 in the simulator, where
// sizes come from products of shapes and fractions) rounded to the nearest
// whole byte: every *_bytes column is int64 (results/README.md). NaN is 0;
// values beyond the int64 range saturate.
func ByteCount(b float64) int64 {
	switch {
	case b != b:
		return 0
	case b >= math.MaxInt64:
		return math.MaxInt64
	case b <= math.MinInt64:
		return math.MinInt64
	}
	return int64(math.Round(b))
}
