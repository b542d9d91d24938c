package scenario

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/simtrain/simtrain/sim/goodput"
	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/topology"
	"github.com/simtrain/simtrain/sim/workload"
)

// Knob is one field of the scenario format and everything simtrain knows
// about it apart from its model code: its default, the values it accepts,
// what a sweep's `auto` enumerates for it, whether a sweep may vary it and
// how a generated file writes it. The registry, Knobs, holds one per field
// of Scenario; the resolver fills defaults from it, sweeps take their auto
// rules and value checks from it, Encode writes files in its order, and the
// tests hold docs/scenario-format.md's tables to it.
type Knob struct {
	// Path is the dotted field, as a file nests it and a sweep names it
	// ("parallel.tp").
	Path string
	// Default is the default as docs/scenario-format.md states it: a value,
	// "required", "derived", or how it is derived ("`heads`"). With Const
	// set it may be left empty: it is then Const as written in a file.
	Default string
	// Const is a constant default: the value an unset field takes.
	Const any
	// Derive computes the default of an unset field from the plan resolved
	// so far (the resolver calls it where the field's inputs are known).
	Derive func(s *Plan) any
	// Choices lists the values the field accepts, as written in a file; nil
	// when any value of its type is accepted (numbers, free text) or its
	// resolver checks a rule instead.
	Choices func() []string
	// Accepts reports the values outside Choices the field also accepts
	// (cluster.gpu: a GPU record file); nil when Choices is the whole set.
	Accepts func(v string) bool
	// Items lists the values each item of a list-valued field accepts.
	Items func() []string
	// Auto enumerates a sweep's `auto` candidates of an integer field for a
	// point. Without it a field with Choices enumerates them, a true/false
	// field false and true, and other fields do not support auto.
	Auto *Auto
	// NotSwept says why a sweep may not vary the field ("" when it may).
	NotSwept string
	// Quote marks free text, which Encode writes double-quoted.
	Quote bool
	// Column is the summary.arrow column that reports the field (sim/report
	// fills it), "" when NoColumn says why there is none. Value reads the
	// column's value from a plan: a func(*Plan) T, T the column's type in
	// output.SummaryRow (int64, float64, bool or string; sim/report's
	// generated code calls it as such and its tests reject another type);
	// without it the field's own value is reported (a null optional as
	// false, a missing block as zero). A plan that failed to resolve (a
	// sweep's invalid point) is only partly filled: Value must not assume
	// more. Typed, not a func returning any, so that a sweep's summary rows
	// box no value (≈ 10 allocations a point of the 1,000-point 70B sweep).
	Column   string
	Value    any
	NoColumn string
	// ZeroIsUnset: an explicit 0 also takes the default ("0 = the catalog's").
	ZeroIsUnset bool

	id      int          // the knob's index in Knobs (init)
	index   []int        // reflect field index path from Scenario
	parts   []string     // Path split at its dots
	choices *choicesMemo // Choices' list, taken once (Valid)
	// direct: a string, int, float64 or bool field (of any type of that
	// kind) in Scenario itself or in blocks it holds by value, every field
	// on the way exported, at offset bytes from the scenario's start, of
	// kind fkind: Plan.fill reads and sets it there (bindKnobs).
	direct bool
	offset uintptr
	fkind  reflect.Kind
}

// choicesMemo holds a knob's Choices list once asked for. Every Choices
// function gives the same list for the life of the process (fixed lists,
// package tables filled in init, the embedded catalog's names), and a
// fresh copy each call: Valid, called for ≈ 15 fields a resolved plan,
// copied it every time (≈ 5% of a sweep's load, TestValidMemo).
type choicesMemo struct {
	once sync.Once
	list []string
}

// choiceList is Choices(), taken on the first call and kept: read-only.
func (k *Knob) choiceList() []string {
	if k.choices == nil { // a Knob outside the registry
		return k.Choices()
	}
	k.choices.once.Do(func() { k.choices.list = k.Choices() })
	return k.choices.list
}

// Set sets the field's value in a scenario document (a document node or
// its root mapping), creating the blocks on the way; sweeps set their
// points' values with it.
func (k *Knob) Set(doc, value *yaml.Node) error { return setParts(doc, k.Path, k.parts, value) }

// Auto is a sweep's `auto` rule for an integer field.
type Auto struct {
	// Doc says what is enumerated, for messages and docs/sweeps.md.
	Doc string
	// Ints lists the candidates for a point whose model, training and
	// cluster are resolved (Probe).
	Ints func(s *Plan) []int
}

// DefaultText is the default as the docs state it.
func (k *Knob) DefaultText() string {
	if k.Default == "" && k.Const != nil {
		return fmt.Sprint(k.Const)
	}
	return k.Default
}

// AutoValues lists a field's auto candidates that do not depend on the point
// (Choices, or false and true), nil for an integer rule (Auto.Ints) or a
// field without auto.
func (k *Knob) AutoValues() []string {
	switch {
	case k.Auto != nil:
		return nil
	case k.Choices != nil:
		return k.Choices()
	case k.IsBool():
		return []string{"false", "true"}
	}
	return nil
}

// SupportsAuto reports whether a sweep may write `auto` for the field.
func (k *Knob) SupportsAuto() bool { return k.Auto != nil || k.AutoValues() != nil }

// AutoDoc says what auto enumerates for the field ("" without auto).
func (k *Knob) AutoDoc() string {
	if k.Auto != nil {
		return k.Auto.Doc
	}
	return strings.Join(k.AutoValues(), "|")
}

// IsBool reports a true/false field.
func (k *Knob) IsBool() bool { return k.kind() == reflect.Bool }

// IsList reports a list-valued field (training.recompute_modules, ...).
func (k *Knob) IsList() bool { return k.typ().Kind() == reflect.Slice }

func (k *Knob) typ() reflect.Type {
	t := reflect.TypeOf(Scenario{})
	for _, i := range k.index {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		t = t.Field(i).Type
	}
	return t
}

// kind is the field's kind with a pointer (optional true/false) removed.
func (k *Knob) kind() reflect.Kind {
	t := k.typ()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind()
}

func fixed(v ...string) func() []string { return func() []string { return slices.Clone(v) } }

func divisorsOf(n int) []int {
	var out []int
	for d := 1; d <= n; d++ {
		if n%d == 0 {
			out = append(out, d)
		}
	}
	return out
}

func upTo(n int) []int {
	out := make([]int, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, i)
	}
	return out
}

var gpuDivisors = &Auto{Doc: "divisors of the GPU count", Ints: func(s *Plan) []int { return divisorsOf(s.r.numGPUs) }}

const notAKnob = "a measured figure, not a configuration knob"

// constant is the Derive of a field of an optional block: its default,
// filled only when the block is present (a Const default would be expected
// of a scenario without the block).
func constant(v any) func(*Plan) any { return func(*Plan) any { return v } }

// noColumnGoodput is why the goodput fields have no summary.arrow column.
const noColumnGoodput = "a whole-run input, not a step knob: simtrain goodput and goodput-summary.arrow report the run under it"

// noColumnExpect is why the expect fields have no summary.arrow column.
const noColumnExpect = "a measured figure: validation.arrow reports it"

// fp8RecipeColumn is training.fp8_recipe's summary value: the recipe an FP8
// run uses, "" for other precisions.
func fp8RecipeColumn(s *Plan) string {
	if s.Training.Precision != "fp8" {
		return ""
	}
	return s.r.fp8.String()
}

// moeImbalanceColumn is model.moe.imbalance's summary value: the
// most-loaded expert-parallel rank's share the model uses (1 when unset or
// with capacity padding), 0 for a dense model.
func moeImbalanceColumn(s *Plan) float64 {
	if s.model().MoE == nil {
		return 0.0
	}
	return max(s.model().MoE.Imbalance, 1)
}

// recomputeModulesColumn is training.recompute_modules' summary value: the
// modules selective recomputation redoes, joined by '+' in module order;
// "" for other recompute policies.
func recomputeModulesColumn(s *Plan) string {
	if s.Training.Recompute != workload.RecomputeSelective.String() {
		return ""
	}
	var names []string
	for i, n := range workload.RecomputeModuleNames {
		if s.r.recomputeModules&(1<<i) != 0 || (i == 0 && s.r.recomputeModules == 0) {
			names = append(names, n)
		}
	}
	return strings.Join(names, "+")
}

// Knobs is the registry, in the order Encode writes a file (and the docs
// list the fields). Adding a field to the format is one entry here, the
// field in Scenario, and the model code that reads it.
var Knobs = []*Knob{
	{Path: "name", Column: "name", Default: "required", NotSwept: "points are named after the sweep (set the sweep's own name:)"},
	{Path: "description", NoColumn: "free text, not a configuration knob", Default: `""`, Quote: true, NotSwept: "it does not change the configuration"},

	// model: a preset fills every field (workload.Preset), workload.Model.Fill
	// what is left; the model resolver echoes the result.
	{Path: "model.preset", Column: "model_preset", Value: func(s *Plan) string { return cmp.Or(s.Model.Preset, "custom") }, Default: "—", Choices: workload.PresetNames},
	{Path: "model.layers", Column: "layers", Default: "preset"},
	{Path: "model.hidden", Column: "hidden", Default: "preset"},
	{Path: "model.heads", Column: "heads", Default: "preset"},
	{Path: "model.kv_heads", Column: "kv_heads", Default: "`heads`"},
	{Path: "model.head_dim", Column: "head_dim", Default: "`hidden/heads`"},
	{Path: "model.ffn", Column: "ffn", Default: "`4*hidden`"},
	{Path: "model.vocab", Column: "vocab", Default: "preset"},
	{Path: "model.activation", Column: "activation", Default: "gelu", Choices: workload.ActivationNames},
	{Path: "model.attention", Column: "attention", Default: "mha", Choices: workload.AttentionNames},
	{Path: "model.attention_window", Column: "attention_window", Default: "0"},
	{Path: "model.full_attention_every", Column: "full_attention_every", Default: "0"},
	{Path: "model.norm", Column: "norm", Default: "layernorm", Choices: workload.NormNames},
	{Path: "model.tied_embeddings", Column: "tied_embeddings", Default: "false"},
	{Path: "model.dropout", NoColumn: "its kernels show in timeline.arrow (the *_dropout ops) and its masks in memory.arrow; the run id tells runs apart", Default: "preset (false without one)"},
	{Path: "model.mtp_layers", Column: "mtp_layers", Default: "0"},
	{Path: "model.moe.experts", Column: "experts", Default: "required in `moe`"},
	{Path: "model.moe.top_k", Column: "top_k", Default: "required in `moe`"},
	{Path: "model.moe.expert_ffn", Column: "expert_ffn", Default: "`ffn`"},
	{Path: "model.moe.shared_experts", Column: "shared_experts", Default: "0"},
	{Path: "model.moe.dense_layers", Column: "dense_layers", Default: "0"},
	{Path: "model.moe.capacity_factor", Column: "capacity_factor", Default: "1.0"},
	{Path: "model.moe.dropless", Column: "dropless", Value: func(s *Plan) bool { return s.model().MoE != nil && s.r.dropless }, Default: "true"},
	{Path: "model.moe.imbalance", Column: "moe_imbalance", Value: moeImbalanceColumn, Default: "1.0"},

	{Path: "training.seq_len", Column: "seq_len", Default: "required"},
	{Path: "training.global_batch", Column: "global_batch", Default: "required"},
	{Path: "training.micro_batch", Column: "micro_batch", Const: 1, Auto: &Auto{Doc: "divisors of training.global_batch", Ints: func(s *Plan) []int { return divisorsOf(s.Training.GlobalBatch) }}},
	{Path: "training.precision", Column: "precision", Const: "bf16", Choices: fixed("fp32", "tf32", "fp16", "bf16", "fp8")},
	{Path: "training.fp8_recipe", Column: "fp8_recipe", Value: fp8RecipeColumn, Default: "tensorwise (with `precision: fp8`)", Choices: workload.FP8RecipeNames},
	{Path: "training.fp8_param_gather", Column: "fp8_param_gather", Default: "false"},
	{Path: "training.bf16_layers_at_start", Column: "bf16_layers_at_start", Default: "0"},
	{Path: "training.bf16_layers_at_end", Column: "bf16_layers_at_end", Default: "0"},
	{Path: "training.optimizer", Column: "optimizer", Const: "adamw", Choices: workload.OptimizerNames},
	{Path: "training.master_dtype", Column: "master_dtype", Const: "fp32"},
	{Path: "training.grad_dtype", Column: "grad_dtype", Default: "precision (bf16 for fp8)",
		Derive: func(s *Plan) any { return DefaultGradDtype(s.r.precision).String() }},
	{Path: "training.optimizer_state_dtype", Column: "optimizer_state_dtype", Value: func(s *Plan) string { return cmp.Or(s.Training.OptimizerStateDtype, s.Training.MasterDtype) }, Default: "`master_dtype`", Choices: fixed("fp32", "bf16", "fp16")},
	{Path: "training.recompute", Column: "recompute", Const: "none", Choices: workload.RecomputeNames},
	{Path: "training.recompute_modules", Column: "recompute_modules", Value: recomputeModulesColumn, Default: "[core_attn]", Items: func() []string { return slices.Clone(workload.RecomputeModuleNames) }},
	{Path: "training.recompute_every", Column: "recompute_every", Default: "0"},
	{Path: "training.recompute_reentrant", NoColumn: "the recomputed forward's extra TP reduction shows in timeline.arrow (tp_mlp_recompute); the run id tells runs apart", Default: "false"},
	{Path: "training.offload_modules", Column: "offload_modules", Value: func(s *Plan) string { return strings.Join(s.Training.OffloadModules, "+") }, Default: "[]", Items: func() []string { return slices.Clone(workload.OffloadModuleNames) }},
	{Path: "training.offload_optimizer", Column: "offload_optimizer", Default: "false"},
	{Path: "training.log_optimizer_states", Default: "false",
		NoColumn: "no summary column yet (adding one changes summary.arrow's schema); the run id tells it apart"},
	{Path: "training.optimizer_loop", NoColumn: "a column would need a schema bump; the loop's kernels are priced inside the optimizer_step task and the run id tells runs apart", Default: "transformers", Choices: fixed("transformers", "torch")},
	{Path: "training.loss_readback", Default: "false",
		NoColumn: "no summary column yet (adding one changes summary.arrow's schema); the waits show in timeline.arrow (loss_readback) and the run id tells runs apart"},
	{Path: "training.loss_readback_at", Default: "before_backward", Choices: fixed("before_backward", "after_backward"),
		NoColumn: "no summary column yet (adding one changes summary.arrow's schema); the waits' place shows in timeline.arrow (loss_readback) and the run id tells runs apart"},
	{Path: "training.grad_nan_check", Default: "false",
		NoColumn: "no summary column yet (adding one changes summary.arrow's schema); the waits show in timeline.arrow (grad_nan_check) and the run id tells runs apart"},
	{Path: "training.layer_host_sync", Default: "false",
		NoColumn: "no summary column yet (adding one changes summary.arrow's schema); the waits show in timeline.arrow (layer_host_sync) and the run id tells runs apart"},
	{Path: "training.optimizer_tensors", NoColumn: "a column would need a schema bump; the loop's kernels are priced inside the optimizer_step task and the run id tells runs apart", Default: "0"},
	{Path: "training.flash_attention", Column: "flash_attention", Const: true},
	{Path: "training.fused_loss", NoColumn: "an alias of cross_entropy (false = unfused), which has the column", Default: "true"},
	{Path: "training.cross_entropy", Column: "cross_entropy", Default: "`fused`", Choices: workload.CrossEntropyNames,
		Derive: func(s *Plan) any {
			if f := s.Training.FusedLoss; f != nil && !*f {
				return workload.CrossEntropyUnfused.String()
			}
			return workload.CrossEntropyFused.String()
		}},
	{Path: "training.compile", Column: "compile", Const: true},
	{Path: "training.autocast", NoColumn: "a column would need a schema bump; its casts are priced inside each layer's tasks and the run id tells runs apart", Default: "false"},
	{Path: "training.fused_norm", Column: "fused_norm", Default: "`compile`", Derive: func(s *Plan) any { return *s.Training.Compile }},
	{Path: "training.attention_kernel", Column: "attention_kernel", Default: "auto", Choices: hardware.AttentionKernelNames,
		Derive: func(s *Plan) any {
			if !*s.Training.FlashAttention {
				return "unfused"
			}
			return "auto"
		}},
	{Path: "training.attention_unpad", Column: "attention_unpad", Default: "false"},
	{Path: "training.attention_repeat_kv", Column: "attention_repeat_kv", Default: "false"},
	{Path: "training.cuda_graphs", Column: "cuda_graphs", Value: func(s *Plan) string { return cmp.Or(s.Training.CUDAGraphs, "none") }, Default: "none", Choices: fixed("none", "full")},
	{Path: "training.host_dispatch", Column: "host_dispatch", Value: func(s *Plan) string { return s.HostDispatchClass() }, Default: "auto",
		Choices: func() []string { return append([]string{"auto"}, hardware.HostDispatchNames()...) }},
	{Path: "training.framework", NoColumn: "a profile of defaults: the fields it sets have their own columns", Default: "auto",
		Choices: func() []string { return append([]string{"auto"}, hardware.FrameworkNames()...) }},
	{Path: "training.framework_date", NoColumn: "selects which of the profile's defaults apply: the fields they set have their own columns", Default: "current release", Quote: true},

	{Path: "cluster.gpu", Column: "gpu", Default: "required", Choices: hardware.GPUNames, Accepts: IsGPUFile, Value: func(s *Plan) string { return s.GPUName() }},
	{Path: "cluster.nodes", Column: "nodes", Default: "required", Value: func(s *Plan) int64 { return int64(s.Nodes()) }},
	{Path: "cluster.node_groups", Default: "none", NotSwept: "a list of node groups; write one base scenario per cluster",
		NoColumn: "reported by the gpu (h100-sxm+h200-sxm), nodes (the sum) and gpu_hour_usd (the mean price) columns"},
	{Path: "cluster.gpus_per_node", Column: "gpus_per_node", Default: "the GPU's usual", Derive: func(s *Plan) any { return s.r.gpu.DefaultGPUsPerNode }},
	{Path: "cluster.intra_node", Column: "intra_node", Default: "the GPU's usual", Choices: topology.IntraNodeNames, Derive: func(s *Plan) any { return s.r.gpu.DefaultIntraNode }},
	{Path: "cluster.network.kind", Column: "network", Const: "rail-optimized", Choices: topology.NetworkNames},
	{Path: "cluster.network.nic", Column: "nic", Const: "ib-ndr-400", Choices: hardware.NICNames},
	{Path: "cluster.network.nic_gbps", Column: "nic_gbps", Default: "catalog", ZeroIsUnset: true, Derive: func(s *Plan) any { return s.r.nicGbps }},
	{Path: "cluster.network.nics_per_node", Column: "nics_per_node", Default: "`gpus_per_node`", Derive: func(s *Plan) any { return s.Cluster.GPUsPerNode }},
	{Path: "cluster.network.oversubscription", Column: "oversubscription", Const: 1.0},
	{Path: "cluster.network.pod_gpus", Column: "pod_gpus", Default: "0"},
	{Path: "cluster.gpu_hour_usd", Column: "gpu_hour_usd", Default: "catalog", ZeroIsUnset: true, Derive: func(s *Plan) any { return s.r.gpuHourUSD },
		Value: func(s *Plan) float64 { return cmp.Or(s.Cluster.GPUHourUSD, s.r.gpuHourUSD) }},
	{Path: "cluster.pue", Column: "pue", Const: PUEDefault},

	{Path: "parallel.tp", Column: "tp", Const: 1, Auto: gpuDivisors},
	{Path: "parallel.pp", Column: "pp", Const: 1, Auto: gpuDivisors},
	{Path: "parallel.dp", Column: "dp", Default: "derived", Auto: gpuDivisors, ZeroIsUnset: true,
		Derive: func(s *Plan) any { p := s.Parallel; return s.r.numGPUs / (p.TP * p.PP * p.CP) }},
	{Path: "parallel.cp", Column: "cp", Const: 1, Auto: gpuDivisors},
	{Path: "parallel.ep", Column: "ep", Const: 1, Auto: gpuDivisors},
	{Path: "parallel.expert_tp", Column: "expert_tp", Value: func(s *Plan) int64 { return int64(s.ExpertTP()) }, Default: "tp"},
	{Path: "parallel.sp", Column: "sp", Default: "false"},
	{Path: "parallel.zero", Column: "zero", Const: 0, Auto: &Auto{Doc: "0, 1, 2, 3", Ints: func(*Plan) []int { return []int{0, 1, 2, 3} }}},
	{Path: "parallel.zero3_prefetch_bucket", Column: "zero3_prefetch_bucket", Default: "0"},
	{Path: "parallel.zero3_impl", Column: "zero3_impl", Const: "fsdp", Choices: fixed("fsdp", "deepspeed", "megatron")},
	{Path: "parallel.zero3_grad_sync", Default: "every", Choices: fixed("every", "last"),
		NoColumn: "no summary column yet (adding one changes summary.arrow's schema); the run id tells every from last apart"},
	{Path: "parallel.pipe_engine", Default: "megatron", Choices: fixed("megatron", "deepspeed"),
		NoColumn: "no summary column yet (adding one changes summary.arrow's schema); the run id tells megatron from deepspeed apart"},
	{Path: "parallel.tp_logits", Default: "sharded", Choices: fixed("sharded", "replicated"),
		NoColumn: "no summary column yet (adding one changes summary.arrow's schema); the run id tells sharded from replicated apart"},
	{Path: "parallel.tp_embedding", Default: "sharded", Choices: fixed("sharded", "replicated"),
		NoColumn: "no summary column yet (adding one changes summary.arrow's schema); the run id tells sharded from replicated apart"},
	{Path: "parallel.grad_bucket", Column: "grad_bucket", Value: func(s *Plan) float64 { return s.GradBucket() }, Default: "0"},
	{Path: "parallel.schedule", Column: "schedule", Const: "1f1b", Choices: pipeline.Names},
	{Path: "parallel.tp_impl", Column: "tp_impl", Const: "megatron", Choices: fixed("megatron", "dtensor")},
	{Path: "parallel.cp_impl", Column: "cp_impl", Value: func(s *Plan) string { return cmp.Or(s.Parallel.CPImpl, workload.CPP2P.String()) }, Default: "p2p", Choices: workload.CPImplNames},
	{Path: "parallel.ep_backend", Column: "ep_backend", Value: func(s *Plan) string { return cmp.Or(s.Parallel.EPBackend, parallel.EPNCCL.String()) }, Default: "nccl", Choices: func() []string { return slices.Clone(parallel.EPBackendNames) }},
	{Path: "parallel.ep_sms", Column: "ep_sms", Default: "0"},
	{Path: "parallel.virtual_stages", Column: "virtual_stages", Const: 1, Auto: &Auto{Doc: "1 … model.layers", Ints: func(s *Plan) []int { return upTo(s.model().Layers) }}},
	{Path: "parallel.first_stage_layers", Column: "first_stage_layers", Default: "0"},
	{Path: "parallel.last_stage_layers", Column: "last_stage_layers", Default: "0"},
	{Path: "parallel.stage_layers", Default: "even", NotSwept: "a list, one entry per stage; write one base scenario per split",
		NoColumn: "a list, one entry per stage; the run id tells splits apart"},
	{Path: "parallel.order", Column: "order", Const: "tp-cp-ep-dp-pp"},
	{Path: "parallel.overlap.grad_reduce", Column: "overlap_grad_reduce", Const: true},
	{Path: "parallel.overlap.param_gather", Column: "overlap_param_gather", Const: true},
	{Path: "parallel.overlap.tp_comm", Column: "overlap_tp_comm", Const: false},
	{Path: "parallel.overlap.tp_bwd", Column: "overlap_tp_bwd", Const: false},
	{Path: "parallel.overlap.p2p", Column: "overlap_p2p", Const: true},
	{Path: "parallel.overlap.ep", Column: "overlap_ep", Const: false},

	{Path: "sim.fidelity", Column: "fidelity", Const: "analytic", Choices: network.FidelityNames},
	{Path: "sim.steps", Column: "steps", Const: 1},
	{Path: "sim.seed", Column: "seed", Default: "1 with `variability`, else 0"},
	{Path: "sim.variability.distribution", Column: "variability", Default: "none", Derive: constant("none"), Choices: func() []string { return slices.Clone(VariabilityNames) },
		Value: func(s *Plan) string { return cmp.Or(s.VariabilityModel().Distribution, "none") }},
	{Path: "sim.variability.gpu_cv", Column: "variability_gpu_cv", Default: "0.011", Derive: constant(VariabilityGPUCV)},
	{Path: "sim.variability.step_cv", Column: "variability_step_cv", Default: "0", Derive: constant(0.0)},
	{Path: "sim.variability.slow_prob", Column: "variability_slow_prob", Default: "0", Derive: constant(0.0)},
	{Path: "sim.variability.slow_factor", Column: "variability_slow_factor", Default: "1.5", Derive: constant(VariabilitySlowFactor)},
	{Path: "sim.timeline", NoColumn: "what a run writes, not part of the configuration", Const: true, NotSwept: "sweeps write no timelines; it does not change the configuration"},
	{Path: "sim.links", NoColumn: "what a run writes, not part of the configuration", Const: "auto", Choices: func() []string { return slices.Clone(LinksNames) },
		NotSwept: "sweeps write no links.arrow; it does not change the configuration"},

	// goodput: the whole-run block; goodput.Config.Resolve fills its
	// defaults (sim/goodput states their sources).
	{Path: "goodput.failure_rates", Default: "meta-rsc", Choices: goodput.RateSetNames, NoColumn: noColumnGoodput},
	{Path: "goodput.failures_per_hour.gpu", Default: "the set's", NoColumn: noColumnGoodput},
	{Path: "goodput.failures_per_hour.hbm", Default: "the set's", NoColumn: noColumnGoodput},
	{Path: "goodput.failures_per_hour.software", Default: "the set's", NoColumn: noColumnGoodput},
	{Path: "goodput.failures_per_hour.network", Default: "the set's", NoColumn: noColumnGoodput},
	{Path: "goodput.failures_per_hour.nic", Default: "the set's", NoColumn: noColumnGoodput},
	{Path: "goodput.failures_per_hour.host", Default: "the set's", NoColumn: noColumnGoodput},
	{Path: "goodput.planned_per_day", Default: "0.870", NoColumn: noColumnGoodput},
	{Path: "goodput.detect_s", Default: "150", NoColumn: noColumnGoodput},
	{Path: "goodput.relaunch_s", Default: "300", NoColumn: noColumnGoodput},
	{Path: "goodput.comm_init_ms_per_gpu", Default: "2.44", NoColumn: noColumnGoodput},
	{Path: "goodput.spare_nodes", Default: "auto", NoColumn: noColumnGoodput},
	{Path: "goodput.node_repair_h", Default: "2.2", NoColumn: noColumnGoodput},
	{Path: "goodput.checkpoint.format", Default: "sharded", Choices: func() []string { return slices.Clone(goodput.FormatNames) }, NoColumn: noColumnGoodput},
	{Path: "goodput.checkpoint.mode", Default: "sync", Choices: func() []string { return slices.Clone(goodput.ModeNames) }, NoColumn: noColumnGoodput},
	{Path: "goodput.checkpoint.interval", Default: "daly", NoColumn: noColumnGoodput},
	{Path: "goodput.checkpoint.node_gb_s", Default: "100", NoColumn: noColumnGoodput},
	{Path: "goodput.checkpoint.storage_write_gb_s", Default: "2000", NoColumn: noColumnGoodput},
	{Path: "goodput.checkpoint.storage_read_gb_s", Default: "2000", NoColumn: noColumnGoodput},

	{Path: "expect.step_time_s", NotSwept: notAKnob, NoColumn: noColumnExpect},
	{Path: "expect.tokens_per_s_per_gpu", NotSwept: notAKnob, NoColumn: noColumnExpect},
	{Path: "expect.mfu", NotSwept: notAKnob, NoColumn: noColumnExpect},
	{Path: "expect.tflops_per_gpu", NotSwept: notAKnob, NoColumn: noColumnExpect},
	{Path: "expect.peak_memory_gib", NotSwept: notAKnob, NoColumn: noColumnExpect},
	{Path: "expect.source", Quote: true, NotSwept: notAKnob, NoColumn: noColumnExpect},
	{Path: "expect.flops_convention", Const: "model", Choices: fixed("model", "hardware", "megatron-sc21"), NotSwept: notAKnob, NoColumn: noColumnExpect},
	{Path: "expect.attention_flops", Default: "full", Choices: fixed("full", "causal"), NotSwept: notAKnob, NoColumn: noColumnExpect},
	{Path: "expect.group", NotSwept: notAKnob, NoColumn: noColumnExpect},
	{Path: "expect.notes", Quote: true, NotSwept: notAKnob, NoColumn: noColumnExpect},
}

// knobByPath indexes Knobs; init checks that the registry and Scenario's
// fields are the same set. It is built before the package's knob
// variables (knobvars.go), which look their knobs up in it (mustKnob).
var knobByPath = indexKnobs(Knobs)

// indexKnobs is knobByPath of knobs: each knob by its path; a path
// listed twice is a programming error (panic).
func indexKnobs(knobs []*Knob) map[string]*Knob {
	m := make(map[string]*Knob, len(knobs))
	for _, k := range knobs {
		if m[k.Path] != nil {
			panic("scenario: registry knob " + k.Path + " listed twice")
		}
		m[k.Path] = k
	}
	return m
}

// init binds each knob to its field of Scenario (bindKnobs): every
// simtrain command pays it at start, so it is one walk over Scenario's
// fields that allocates no path string, and the knobs' index paths, parts
// and memos lie in three shared arrays (each knob's slices capped at their
// length). The former walk (a map of every field's path, then a second
// reflect walk per knob, four allocations a knob) was ≈ 2.5% of the
// process start's CPU and 821 of its allocations.
func init() {
	nparts := 0
	for _, k := range Knobs {
		nparts += strings.Count(k.Path, ".") + 1
	}
	b := knobBinder{ints: make([]int, 0, nparts)}
	if b.bind(reflect.TypeFor[Scenario](), make([]byte, 0, 64), nil, 0, true); b.n != len(Knobs) {
		for _, k := range Knobs {
			if k.index == nil {
				panic("scenario: registry knob " + k.Path + " is not a field of Scenario")
			}
		}
	}
	parts, memos := make([]string, 0, nparts), make([]choicesMemo, len(Knobs))
	for i, k := range Knobs {
		n := len(parts)
		for p := range strings.SplitSeq(k.Path, ".") {
			parts = append(parts, p)
		}
		k.parts, k.choices, k.id = parts[n:len(parts):len(parts)], &memos[i], i
	}
}

// knobBinder is init's walk over Scenario's fields: ints holds the knobs'
// index paths, n counts the knobs bound.
type knobBinder struct {
	ints []int
	n    int
}

// bind sets index, direct, offset and fkind of the knob of every value
// field below struct type t (pointers to structs are followed), t being at
// dotted path path (its bytes), field index path index and offset bytes
// from a Scenario's start; it panics at a field with no knob. A field is
// direct (Plan.fill reads and sets it at its offset, bypassing reflection:
// ≈ 80 knobs a sweep point went through reflect's walk along the path,
// Value.String/IsZero/SetString..., ≈ 10% of the 1,000-point 70B sweep's
// load instructions) when its kind is string, int, float64 or bool, no
// pointer lies on the way and every field on it is exported: viaValue says
// whether that holds of the way to t.
func (b *knobBinder) bind(t reflect.Type, path []byte, index []int, offset uintptr, viaValue bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		p := path
		if len(p) > 0 {
			p = append(p, '.')
		}
		p = append(p, name...) // siblings reuse the bytes past path
		ft, direct := f.Type, viaValue && f.IsExported()
		if ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct {
			ft, direct = ft.Elem(), false
		}
		if ft.Kind() == reflect.Struct {
			b.bind(ft, p, append(index[:len(index):len(index)], i), offset+f.Offset, direct)
			continue
		}
		k := knobByPath[string(p)]
		if k == nil {
			panic("scenario: field " + string(p) + " of Scenario has no entry in Knobs (knobs.go)")
		}
		n := len(b.ints)
		b.ints = append(append(b.ints, index...), i)
		k.index = b.ints[n:len(b.ints):len(b.ints)]
		switch kind := ft.Kind(); kind {
		case reflect.String, reflect.Int, reflect.Float64, reflect.Bool:
			if direct {
				k.direct, k.offset, k.fkind = true, offset+f.Offset, kind
			}
		}
		b.n++
	}
}

// Lookup returns the registry entry of a dotted field, or an error that
// suggests the nearest field.
func Lookup(path string) (*Knob, error) {
	if k := knobByPath[path]; k != nil {
		return k, nil
	}
	if err := CheckFieldPath(path); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%s: not a field of the scenario format", path)
}

// Choices lists the values a field accepts (nil: not a fixed set): the CLI
// offers the same lists for its flags.
func Choices(path string) []string {
	if k := knobByPath[path]; k != nil && k.Choices != nil {
		return k.Choices()
	}
	return nil
}

// AutoFields lists the fields that accept auto, sorted, each with what it
// enumerates; every true/false field accepts it too (false, true).
func AutoFields() []string {
	var out []string
	for _, k := range Knobs {
		if k.NotSwept != "" || !k.SupportsAuto() || k.IsBool() {
			continue
		}
		out = append(out, k.Path+" ("+k.AutoDoc()+")")
	}
	slices.Sort(out)
	return append(out, "any true/false field")
}

// Field returns the addressable value of knob k in s (ok false when a
// block on the way, model.moe or expect, is absent).
func (k *Knob) Field(s *Scenario) (reflect.Value, bool) {
	v := reflect.ValueOf(s).Elem()
	for _, i := range k.index {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		v = v.Field(i)
	}
	return v, true
}

// Valid reports whether v is one of the field's Choices or a value it also
// Accepts; true for a field without a fixed set of values.
func (k *Knob) Valid(v string) bool {
	return k.Choices == nil || slices.Contains(k.choiceList(), v) || (k.Accepts != nil && k.Accepts(v))
}

// checkChoice checks v against the knob's Choices, with the error every
// enumerated field gives.
func checkChoice(k *Knob, v string) error {
	if k.Valid(v) {
		return nil
	}
	ch := k.Choices()
	return fmt.Errorf("%s: unknown value %q (valid: %s)", k.Path, v, strings.Join(ch, ", "))
}

// DefaultGradDtype is the gradient dtype when training.grad_dtype is unset:
// the compute precision, except that FP8 and FP4 training keep bf16
// gradients (Transformer Engine and torchao quantise only the GEMM
// operands; the weight gradients they produce and reduce are bf16).
func DefaultGradDtype(precision workload.Dtype) workload.Dtype {
	switch precision {
	case workload.FP8, workload.FP4, workload.MXFP4, workload.NVFP4:
		return workload.BF16
	}
	return precision
}
