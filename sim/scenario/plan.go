package scenario

import (
	"cmp"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/topology"
	"github.com/simtrain/simtrain/sim/workload"
)

// Plan is a resolved scenario: the document with every default filled in and
// every rule checked (Scenario, in canonical form), and what resolution
// derived from it: the model architecture, the hardware records, the
// recipe's dtypes and kernels, the layout and the pipeline schedule with its
// chunks. Only Parse, ParseNode and Load build one; nothing changes it
// afterwards (no method writes to it), so a plan is safe to share between
// goroutines. Callers must treat the embedded document as read-only too: a
// different configuration is a different plan (an Override at load).
type Plan struct {
	Scenario
	// Warnings are non-fatal remarks found while resolving (e.g. replicated
	// KV heads).
	Warnings []string

	set fieldSet // the dotted fields the file (or an override) gave
	r   resolved
	// dir is the directory of the scenario file, which a relative path in
	// cluster.gpu is read from ("" = the working directory).
	dir string
	// cal replaces calibration entries when cluster.gpu is resolved
	// (LoadCalibrated; nil: the committed table).
	cal hardware.Calibration
	// framework lists the training.framework profile's defaults that filled
	// fields the document left unset, in the profile's order.
	framework []hardware.FrameworkDefault
}

// fieldSet holds the dotted paths of the fields a document gives.
type fieldSet map[string]bool

// resolved holds what resolution derives from the document.
type resolved struct {
	model        *workload.Model // shared with other plans (sharedModel): read-only; nil until resolved (Plan.model)
	gpu          *hardware.GPU   // shared with other plans: read-only
	nicGbps      float64         // cluster.network.nic's catalog line rate (the NIC record is not kept: hardware.NICGbps)
	precision    workload.Dtype
	master, grad workload.Dtype
	states       workload.Dtype // training.optimizer_state_dtype (default master)
	crossEntropy workload.CrossEntropy
	recompute    workload.Recompute
	schedule     pipeline.Schedule
	order        [5]parallel.Dim
	fidelity     network.Fidelity
	numGPUs      int
	microbatches int // per pipeline per step
	chunks       [][]parallel.Chunk
	attn         [2]float64 // training.attention_kernel's forward/backward efficiency on cluster.gpu (0 = unfused)
	attnDims     []int      // training.attention_kernel's compiled head dimensions (hardware.ComputeProfile.AttentionHeadDims)

	fp8 workload.FP8Recipe // training.fp8_recipe (tensorwise when unset)

	epBackend parallel.EPBackend // parallel.ep_backend (nccl when unset)

	cpImpl workload.CPImpl // parallel.cp_impl (p2p when unset)

	dropless bool // model.moe.dropless (true when unset)

	recomputeModules workload.RecomputeModules // training.recompute_modules (0 = core_attn)
	offload          workload.OffloadModules   // training.offload_modules

	groups      []GPUGroup // the cluster's node groups (one without cluster.node_groups)
	gpuHourUSD  float64    // the GPU-weighted mean of the groups' prices
	stageGroups []uint64   // per pipeline stage, the bit set of groups its ranks sit on (nil: one group)
}

// GPUGroup is one resolved node group of the cluster: a homogeneous
// cluster is one group, cluster.node_groups lists several.
type GPUGroup struct {
	GPU        *hardware.GPU // shared with other plans: read-only
	Nodes      int
	GPUs       int
	GPUHourUSD float64 // the group's price (its own, or the catalog's)
}

// fill gives knob k's field its default when the document leaves it
// unset: absent, an empty string or a null, or 0 where the knob says 0
// means the default (Knob.ZeroIsUnset). The default is the registry's
// (Knob.Const, or Knob.Derive on what is resolved so far). This is the one
// place a default enters a plan: a framework profile's values (issue 16)
// come in here, ahead of the registry's.
func (s *Plan) fill(k *Knob) {
	if k.direct {
		s.fillDirect(k)
		return
	}
	s.fillReflect(k)
}

// fillDirect is fill for a direct knob (Knob.direct): the field read and
// set in place by its kind, as fillReflect reads and sets it through
// reflection (TestFillDirectEqualsReflect); a default whose type does not
// go into the field's kind goes to setScalar, which panics as before.
func (s *Plan) fillDirect(k *Knob) {
	p := unsafe.Add(unsafe.Pointer(&s.Scenario), k.offset)
	// unset: an empty string; else not given, or a zero the knob takes
	// for unset (reflect's IsZero: -0.0 too).
	switch k.fkind {
	case reflect.String:
		if *(*string)(p) != "" {
			return
		}
	case reflect.Int:
		if s.knobGiven(k) && !(k.ZeroIsUnset && *(*int)(p) == 0) {
			return
		}
	case reflect.Float64:
		if s.knobGiven(k) && !(k.ZeroIsUnset && *(*float64)(p) == 0) {
			return
		}
	case reflect.Bool:
		if s.knobGiven(k) && !(k.ZeroIsUnset && !*(*bool)(p)) {
			return
		}
	}
	d := s.knobDefault(k)
	switch x := d.(type) {
	case bool:
		if k.fkind == reflect.Bool {
			*(*bool)(p) = x
			return
		}
	case int:
		switch k.fkind {
		case reflect.Int:
			*(*int)(p) = x
			return
		case reflect.Float64:
			*(*float64)(p) = float64(x)
			return
		}
	case float64:
		if k.fkind == reflect.Float64 {
			*(*float64)(p) = x
			return
		}
	case string:
		if k.fkind == reflect.String {
			*(*string)(p) = x
			return
		}
	}
	v, _ := k.Field(&s.Scenario)
	setScalar(v, d) // panics as before
}

// knobDefault is knob k's default for plan s: its Derive of s, else its
// Const; a knob with neither is a registry error (panic).
func (s *Plan) knobDefault(k *Knob) any {
	switch {
	case k.Derive != nil:
		return k.Derive(s)
	case k.Const != nil:
		return k.Const
	}
	panic("scenario: fill " + k.Path + ": the knob has no default")
}

// fillReflect is fill through reflection: any knob.
func (s *Plan) fillReflect(k *Knob) {
	v, ok := k.Field(&s.Scenario)
	if !ok || !s.unset(k, v) {
		return
	}
	d := s.knobDefault(k)
	if v.Kind() == reflect.Pointer {
		p := reflect.New(v.Type().Elem())
		setScalar(p.Elem(), d)
		v.Set(p)
		return
	}
	setScalar(v, d)
}

// setScalar sets v to d, a bool, int, float64 or string (an int may fill a
// float field), without the allocations of reflect's Convert: sweeps
// resolve thousands of plans.
func setScalar(v reflect.Value, d any) {
	switch x := d.(type) {
	case bool:
		v.SetBool(x)
	case int:
		if v.Kind() == reflect.Float64 {
			v.SetFloat(float64(x))
		} else {
			v.SetInt(int64(x))
		}
	case float64:
		v.SetFloat(x)
	case string:
		v.SetString(x)
	default:
		panic(fmt.Sprintf("scenario: default of type %T", d))
	}
}

// knobGiven is s.set[k.Path]: read from the table of the last field set
// a template made (givenTable) when s's set is that very map and k a
// registry knob, else looked up. A sweep's points share their sets
// (Template.pointSet), and a set is not written once a template made it,
// so the table is the set's answer; fill's lookups (≈ 15 a point of the
// 70B sweep, each hashing the path) become an index (−1.3 M instructions
// in the 1,000-point load; TestKnobGivenEqualsSet).
func (s *Plan) knobGiven(k *Knob) bool {
	if g := givenTable.Load(); g != nil && setID(g.set) == setID(s.set) && uint(k.id) < uint(len(g.knobGiven)) && Knobs[k.id] == k {
		return g.knobGiven[k.id]
	}
	return s.set[k.Path]
}

// setID is the identity of the map m: a map value is a pointer to the
// runtime's map (what reflect.Value.UnsafePointer gives for a map, without
// the interface conversion, which cost more than the lookup it saves).
func setID(m fieldSet) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&m)) }

func (s *Plan) unset(k *Knob, v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		return v.String() == ""
	case reflect.Pointer, reflect.Slice:
		return v.IsNil()
	}
	return !s.knobGiven(k) || (k.ZeroIsUnset && v.IsZero())
}

// Given reports whether the document (or an override) gave the field at
// path, as opposed to the plan taking its default.
func (s *Plan) Given(path string) bool { return s.set[path] }

// Arch is the resolved model architecture.
func (s *Plan) Arch() workload.Model { return *s.model() }

// model is the resolved architecture, shared: read-only. A plan whose
// resolution stopped before the model (an invalid point's row) reads the
// zero Model, as it did when the plan held the model by value.
func (s *Plan) model() *workload.Model {
	if s.r.model == nil {
		return &unresolvedModel
	}
	return s.r.model
}

// unresolvedModel is model's answer before the model is resolved.
var unresolvedModel workload.Model

// lastModel is the model sharedModel last handed out, with its
// LayerParams bound once (layerParams).
var lastModel atomic.Pointer[sharedEntry]

// sharedEntry is a shared model and its LayerParams method value, which
// holds a copy of it: the model is read-only, so the copy is the model.
type sharedEntry struct {
	m  *workload.Model
	lp func(l int) (dense, expert float64)
}

// sharedModel returns *m in storage shared with the plans resolved before
// it when it equals the last model resolved (a sweep's points mostly
// share their model; a model with MoE or MLA blocks, which point to their
// own copies, never equals another), else in storage of its own. A Plan
// holding its model by value was 2,144 bytes, in the 1,792-byte size
// class without its NIC record and in the 1,536 one without the model:
// a sweep keeps every point's plan from loading until it runs, and once
// its workers have reserved their memory each byte is a fresh page
// (docs/design.md "Speed", foot37).
func sharedModel(m *workload.Model) *workload.Model {
	if e := lastModel.Load(); e != nil && *e.m == *m {
		return e.m
	}
	p := new(workload.Model) // a copy: m is the caller's
	*p = *m
	lastModel.Store(&sharedEntry{m: p, lp: p.LayerParams})
	return p
}

// layerParams is s.model().LayerParams, bound once per shared model
// (sharedEntry) when s's model is the last one shared. Binding the method
// value copies the model to the heap (208 bytes), and FillStepConfig
// bound it for every point a sweep keyed when loading and every run:
// ≈ 0.25 MB of fresh pages in the 1,000-point 70B sweep command, whose
// collector seldom runs (issue 18, alloc43). The calls cost what they did
// (the same method value, not a closure over the shared model: foot37).
func (s *Plan) layerParams() func(l int) (dense, expert float64) {
	if e := lastModel.Load(); e != nil && e.m == s.r.model {
		return e.lp
	}
	return s.model().LayerParams
}

// GPU is cluster.gpu's hardware record.
func (s *Plan) GPU() hardware.GPU { return *s.r.gpu }

// GPUs is the number of GPUs in the cluster.
func (s *Plan) GPUs() int { return s.r.numGPUs }

// Precision is the compute dtype (training.precision).
func (s *Plan) Precision() workload.Dtype { return s.r.precision }

// Microbatches is the number of micro-batches per pipeline per step.
func (s *Plan) Microbatches() int { return s.r.microbatches }

// Fidelity is the resolved sim.fidelity.
func (s *Plan) Fidelity() network.Fidelity { return s.r.fidelity }

// EPBackend is the MoE dispatch library (parallel.ep_backend).
func (s *Plan) EPBackend() parallel.EPBackend { return s.r.epBackend }

// Dropless reports model.moe.dropless (true for dense models).
func (s *Plan) Dropless() bool { return s.r.dropless }

// Recompute is training.recompute's policy.
func (s *Plan) Recompute() workload.Recompute { return s.r.recompute }

// Schedule is parallel.schedule's pipeline schedule.
func (s *Plan) Schedule() pipeline.Schedule { return s.r.schedule }

// Offload is the set of training.offload_modules.
func (s *Plan) Offload() workload.OffloadModules { return s.r.offload }

// Chunks are the model chunks of every pipeline stage (read-only: shared
// with the plans placed the same way, placeChunks).
func (s *Plan) Chunks() [][]parallel.Chunk { return s.r.chunks }

// StateBytes is the model state per parameter in the plan's dtypes:
// weights at the compute precision, gradients, master weights and optimizer
// states (workload.ModelStateBytes, with training.optimizer_state_dtype).
func (s *Plan) StateBytes() (workload.StateBytes, error) {
	sb, err := workload.ModelStateBytes(s.r.precision, s.r.master, s.r.grad, s.Training.Optimizer)
	if err != nil {
		return sb, err
	}
	return sb.WithStates(s.r.states, s.Training.Optimizer), nil
}

// NewLayout builds the parallel layout: ranks, coordinates and groups.
func (s *Plan) NewLayout() (*parallel.Layout, error) {
	p := s.Parallel
	return parallel.NewFoldedLayout(p.TP, s.ExpertTP(), p.CP, p.EP, p.DP, p.PP, s.r.order)
}

// TimelineEnabled reports sim.timeline (default true).
func (s *Plan) TimelineEnabled() bool { return s.Sim.Timeline == nil || *s.Sim.Timeline }

// LinksPolicy reports sim.links: "auto" (the default), "full" or "off"
// (LinksNames).
func (s *Plan) LinksPolicy() string { return cmp.Or(s.Sim.Links, "auto") }

// StageMemory is the memory of every rank of one pipeline stage.
type StageMemory struct {
	Stage int
	workload.Memory
	Fits bool
}

// TopologySpec is the cluster block as topology.Build takes it.
func (s *Plan) TopologySpec() topology.Spec {
	c := s.Cluster
	spec := topology.Spec{GPU: c.GPU, Hardware: s.r.gpu, Nodes: c.Nodes, GPUsPerNode: c.GPUsPerNode, IntraNode: c.IntraNode,
		Network: c.Network.Kind, NIC: c.Network.NIC, NICGbps: c.Network.NICGbps, NICsPerNode: c.Network.NICsPerNode,
		Oversubscription: c.Network.Oversubscription, PodGPUs: c.Network.PodGPUs}
	if len(c.NodeGroups) > 0 {
		spec.GPU, spec.Nodes = s.r.gpu.Name, s.Nodes()
		for _, g := range s.r.groups {
			spec.Groups = append(spec.Groups, topology.NodeGroup{GPU: *g.GPU, Nodes: g.Nodes})
		}
	}
	return spec
}

// GPUName names the cluster's GPU: cluster.gpu, or the node groups' GPUs
// joined by "+" (h100-sxm+h200). It reads the document only, so it works on
// a plan that failed to resolve.
func (s *Plan) GPUName() string {
	if len(s.Cluster.NodeGroups) == 0 {
		return s.Cluster.GPU
	}
	names := make([]string, len(s.Cluster.NodeGroups))
	for i, g := range s.Cluster.NodeGroups {
		names[i] = g.GPU
	}
	return strings.Join(names, "+")
}

// Nodes is the cluster's node count: cluster.nodes, or the node groups'
// sum. It reads the document only.
func (s *Plan) Nodes() int {
	if len(s.Cluster.NodeGroups) == 0 {
		return s.Cluster.Nodes
	}
	n := 0
	for _, g := range s.Cluster.NodeGroups {
		n += g.Nodes
	}
	return n
}

// GPUGroups are the cluster's node groups in node order (read-only): one
// for a homogeneous cluster.
func (s *Plan) GPUGroups() []GPUGroup { return s.r.groups }

// GPUHourUSD is the price per GPU-hour the cost outputs use:
// cluster.gpu_hour_usd, or with node groups their GPU-weighted mean (so
// cost = Σ groups GPUs × price).
func (s *Plan) GPUHourUSD() float64 { return cmp.Or(s.Cluster.GPUHourUSD, s.r.gpuHourUSD) }

// Heterogeneous reports whether the cluster mixes GPU types
// (cluster.node_groups of more than one group).
func (s *Plan) Heterogeneous() bool { return len(s.r.groups) > 1 }

// StageGroups is, per pipeline stage, the bit set of node groups (bit i:
// GPUGroups()[i]) that hold its ranks; nil for a one-group cluster. Where
// a stage spans groups its data-parallel replicas run on different GPUs,
// and the slowest sets the stage's pace (synchronous gradient reduction).
func (s *Plan) StageGroups() []uint64 { return s.r.stageGroups }

// StageCapacityBytes is the usable HBM of every GPU of pipeline stage st:
// the smallest among the groups its ranks sit on.
func (s *Plan) StageCapacityBytes(st int) float64 {
	if s.r.stageGroups == nil || st >= len(s.r.stageGroups) {
		return s.MemCapacityBytes()
	}
	c := math.Inf(1)
	for i, g := range s.r.groups {
		if s.r.stageGroups[st]&(1<<i) != 0 {
			c = min(c, float64(g.GPU.HBMUsableBytes))
		}
	}
	return c
}

// resolveStageGroups fills s.r.stageGroups from the layout's rank order:
// rank r sits on node r / gpus_per_node, and the groups hold consecutive
// node ranges in order.
func (s *Plan) resolveStageGroups() error {
	s.r.stageGroups = nil
	if len(s.r.groups) < 2 {
		return nil
	}
	l, err := s.NewLayout()
	if err != nil {
		return err
	}
	s.r.stageGroups = make([]uint64, l.PP)
	gpn := s.Cluster.GPUsPerNode
	group, end := 0, s.r.groups[0].Nodes
	for r := range l.World() {
		for r/gpn >= end && group < len(s.r.groups)-1 {
			group++
			end += s.r.groups[group].Nodes
		}
		s.r.stageGroups[l.CoordOf(r).PP] |= 1 << group
	}
	return nil
}

// Shape is what the workload model prices every op of a micro-batch with:
// the per-rank batch and sequence, the parallel split and the recipe.
func (s *Plan) Shape() workload.Shape {
	p := s.Parallel
	sh := workload.Shape{MicroBatch: s.Training.MicroBatch, Seq: s.Training.SeqLen, Dtype: s.r.precision,
		TP: p.TP, CP: p.CP, EP: p.EP, ETP: s.ExpertTP(), SP: p.SP, FlashAttention: *s.Training.FlashAttention, AttentionUnpad: s.Training.AttentionUnpad,
		RepeatKV: s.Training.AttentionRepeatKV, CPImpl: s.r.cpImpl,
		CrossEntropy: s.r.crossEntropy, Eager: !*s.Training.Compile, EagerNorm: !*s.Training.FusedNorm, Autocast: s.Training.Autocast,
		AttnEff: s.r.attn[0], AttnBwdEff: s.r.attn[1], AttnHeadDims: s.r.attnDims,
		FP8Recipe: s.r.fp8, RecomputeModules: s.r.recomputeModules, Offload: s.r.offload,
		BF16AtStart: s.Training.BF16LayersAtStart, BF16AtEnd: s.Training.BF16LayersAtEnd,
		ReplicatedLogits: p.TPLogits == "replicated"}
	sh.GradAccumulate, sh.GradAccumWidth, sh.GradAccumShard = s.gradAccumulate()
	return sh
}

// gradAccumulate is workload.Shape's GradAccumulate, GradAccumWidth and
// GradAccumShard: the share (m−1)/m of a step's m micro-batches whose
// weight gradients are added in place into a gradient an earlier one left
// (the first one's becomes .grad after zero_grad(set_to_none=True),
// PyTorch's default from 2.0), the bytes per element of the gradient added
// (read twice, written once) and the share of each linear weight's
// gradient this GPU adds. Each case is the framework's own code:
//   - autograd's AccumulateGrad (pytorch/pytorch
//     torch/csrc/autograd/functions/accumulate_grad.h accumulateGrad:
//     variable_grad += new_grad) adds the whole gradient in the
//     parameter's dtype on one GPU and under DDP, no_sync or not (DDP's
//     reducer reduces a bucket copy and writes it back into .grad, the
//     accumulation is autograd's): fp32 under training.autocast (fp32
//     parameters), else the precision's storage width (fp32/TF32 4 bytes,
//     16-bit weights 2);
//   - FSDP with zero3_grad_sync every: FSDP2 reduce-scatters each
//     micro-batch and adds the new shard into the sharded .grad
//     (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py
//     foreach_reduce: sharded_param.grad._local_tensor += new_sharded_grad,
//     in the parameter's original dtype, PyTorch 2.4-2.9), FSDP1 likewise
//     (torch/distributed/fsdp/_runtime_utils.py _accumulate_sharded_grad:
//     sharded_grad += flat_param._saved_grad_shard): 1/dp of the weights at
//     the fp32 master width (the shard is the master, Zero3Impl fsdp);
//     both run it on the reduce-scatter (FSDP2 post-reduce, FSDP1
//     post-backward) stream, beside the compute stream, so it mostly
//     overlaps the backward; priced on the compute stream it was measured
//     and not adopted (fsdpShardAccumulate);
//   - FSDP with zero3_grad_sync last (no_sync,
//     set_requires_gradient_sync(False)): the unsharded gradient
//     accumulates through AccumulateGrad at grad_dtype, the width the
//     memory model keeps it at (workload.MemoryInput.GradSyncLast);
//   - Megatron (megatron-lm, megatron-bridge, megatron-deepspeed, and a
//     run without a framework, whose defaults are Megatron-LM's): the
//     weight-gradient GEMM accumulates into main_grad itself
//     (--gradient-accumulation-fusion, default on; fused_weight_gradient_
//     mlp_cuda wgrad_gemm_accum_fp32), no add. DeepSpeed's ZeRO 1/2
//     engine is not priced (not read; megatron-deepspeed and zero 1/2
//     runs take none).
//
// Only the eager-PyTorch frameworks (pytorch-fsdp, hf-trainer,
// torchtitan, llm-foundry) and training.autocast take the add.
func (s *Plan) gradAccumulate() (share, width, shard float64) {
	m := s.r.microbatches
	if m <= 1 {
		return 0, 0, 0
	}
	share = float64(m-1) / float64(m)
	p := s.Parallel
	eager := s.Training.Autocast || slices.Contains(eagerAccumulateFrameworks, s.Training.Framework)
	switch {
	case !eager:
		return 0, 0, 0
	case p.Zero == 0 && s.Training.Autocast:
		return share, 4, 1
	case p.Zero == 0:
		return share, s.r.precision.StorageBytes(), 1
	case p.Zero == 3 && p.Zero3GradSync == "last":
		return share, s.r.grad.Bytes(), 1
	case p.Zero == 3 && p.Zero3Impl == "fsdp" && fsdpShardAccumulate:
		return share, s.r.master.Bytes(), 1 / float64(max(p.DP, 1))
	}
	return 0, 0, 0
}

// fsdpShardAccumulate prices FSDP's sharded add (zero 3, zero3_grad_sync
// every). Measured off (docs/validation.md, round 17 gradacc17): it slows
// the llm-foundry rows the validation already predicts too slow, LOSO
// 6.08% -> 6.16% (refit: in-sample 4.93%, holdout 10.72%). Priced where
// FSDP runs it instead (round 17 fsdpacc17: a memory kernel after each
// reduce-scatter of micro-batches 2..m on the reduce-scatter stream, HBM
// not shared) it measured the same LOSO 6.16% (refit 4.93%, holdout
// 10.72%): the slower llm-foundry H100 rows tip the refit without each
// other source to train_gemm 0.925 / host_sync 0.7 ms. Left off.
var fsdpShardAccumulate = false

// ddpGradCopy says whether the data parallelism is PyTorch
// DistributedDataParallel with gradient_as_bucket_view off, its default
// (parallel.StepConfig.DDPGradCopy; workload.MemoryInput.GradBucketCopy):
// zero 0 over more than one DP rank under an eager-PyTorch framework
// profile. Each wraps torch DDP without turning the view on: Hugging Face
// Accelerate (DistributedDataParallelKwargs: gradient_as_bucket_view
// False), torchtitan (apply_ddp: replicate(model, device_mesh,
// bucket_cap_mb=100), the rest DDP's defaults) and Lightning Fabric's
// DDPStrategy in LitGPT, whose published memory shows the copy (Thunder
// README @ 101e31d2: eager DDP 32.04 GB against one GPU's 29.84 GB, +2.20
// GB = TinyLlama's 1.1e9 bf16 gradients); Composer's (llm-foundry) was not
// read and is taken at DDP's default. Thunder's own DDP transform is not
// torch DDP (its scenario names no framework: 27.42 GB on 1 and 8 GPUs).
func (s *Plan) ddpGradCopy() bool {
	return s.Parallel.Zero == 0 && s.Parallel.DP > 1 && slices.Contains(eagerAccumulateFrameworks, s.Training.Framework)
}

// eagerAccumulateFrameworks are the training.framework profiles whose
// training loop accumulates gradients through PyTorch autograd or FSDP's
// sharded add, not Megatron's fused weight-gradient accumulation.
var eagerAccumulateFrameworks = []string{"hf-trainer", "llm-foundry", "pytorch-fsdp", "torchtitan"}

// MoEHostSync is the stall per MoE layer forward (parallel.StepConfig
// .MoEHostSync): the GPU's profile value for a dropless MoE model outside
// whole-iteration CUDA graphs, else 0.
func (s *Plan) MoEHostSync() engine.Time {
	if s.model().MoE == nil || !s.r.dropless || s.Training.CUDAGraphs == "full" {
		return 0
	}
	return engine.Time(s.r.gpu.Compute.MoEHostSync*1e9 + 0.5)
}

// unpadSyncsPerLayer is the blocking host synchronisations of llm-foundry's
// unpadded FlashAttention path per layer forward: flash-attn's
// bert_padding.unpad_input (v2.4.2) reads torch.nonzero's size and
// seqlens.max().item() on the host, and flash_attn_fn calls it for Q, K
// and V (llmfoundry/models/layers/attention.py at 5e85bd62); pad_input and
// the backward read nothing back.
const unpadSyncsPerLayer = 6

// UnpadHostSync is the stall per layer forward of training.attention_unpad
// (parallel.StepConfig.UnpadHostSync): unpadSyncsPerLayer × the GPU
// profile's HostSyncStall.
func (s *Plan) UnpadHostSync() engine.Time {
	if !s.Training.AttentionUnpad || !*s.Training.FlashAttention {
		return 0
	}
	return engine.Time(unpadSyncsPerLayer*s.r.gpu.Compute.HostSyncStall*1e9 + 0.5)
}

// PipeEngineSync is the compute-stream stall per host synchronisation of
// DeepSpeed's pipeline engine (parallel.pipe_engine: deepspeed, pp > 1;
// parallel.StepConfig.PipeEngineSync): the GPU profile's HostSyncStall,
// the idle per blocking read in eager Python code, here the reads that the
// engine's instructions and Megatron-DeepSpeed's batch loader make every
// micro-batch (the count is the builder's, from the source).
func (s *Plan) PipeEngineSync() engine.Time {
	if s.Parallel.PipeEngine != "deepspeed" || s.Parallel.PP < 2 {
		return 0
	}
	return engine.Time(s.r.gpu.Compute.HostSyncStall*1e9 + 0.5)
}

// LossReadback is the compute-stream stall per micro-batch of
// training.loss_readback (parallel.StepConfig.LossReadback): the GPU
// profile's HostSyncStall, the idle per blocking read in eager Python
// code, as for the pipeline engine's reads.
func (s *Plan) LossReadback() engine.Time {
	if !isTrue(s.Training.LossReadback) {
		return 0
	}
	return engine.Time(s.r.gpu.Compute.HostSyncStall*1e9 + 0.5)
}

// GradBucketSync is the compute-stream stall per DP gradient bucket of
// training.grad_nan_check (parallel.StepConfig.GradBucketSync): the GPU
// profile's HostSyncStall, the idle per blocking read in eager Python
// code, as for the loss read. FSDP (zero 3) reduces outside the buckets
// this check belongs to: no stall there.
func (s *Plan) GradBucketSync() engine.Time {
	if !isTrue(s.Training.GradNaNCheck) || s.Parallel.Zero == 3 {
		return 0
	}
	return engine.Time(s.r.gpu.Compute.HostSyncStall*1e9 + 0.5)
}

// HostSyncCauses names what makes the host wait for the GPU inside a step
// (the host sync stalls of Result.HostSyncS), "" when nothing does.
func (s *Plan) HostSyncCauses() string {
	var c []string
	if s.MoEHostSync() > 0 {
		c = append(c, "MoE dispatch: dropless, token counts to the host")
	}
	if s.UnpadHostSync() > 0 {
		c = append(c, "unpadded attention: nonzero and .item() on Q, K, V")
	}
	if s.PipeEngineSync() > 0 {
		c = append(c, "DeepSpeed pipeline engine: batch sizes and partition metadata read per micro-batch")
	}
	if s.LossReadback() > 0 {
		if s.Training.LossReadbackAt == "after_backward" {
			c = append(c, "loss read back after every micro-batch's backward")
		} else {
			c = append(c, "loss read back before every micro-batch's backward")
		}
	}
	if s.GradBucketSync() > 0 {
		c = append(c, "gradient buckets' norms read back (NaN check) before their reduction")
	}
	return strings.Join(c, "; ")
}

// ExpertTP is the resolved parallel.expert_tp: tp unless folded.
func (s *Plan) ExpertTP() int {
	if s.Parallel.ExpertTP > 0 {
		return s.Parallel.ExpertTP
	}
	return s.Parallel.TP
}

// StepConfig is what parallel.Build turns into the task graph of one step
// on layout l (NewLayout).
func (s *Plan) StepConfig(l *parallel.Layout) *parallel.StepConfig {
	c := new(parallel.StepConfig)
	s.FillStepConfig(c, l)
	return c
}

// FillStepConfig sets *dst to StepConfig(l) (every field: nothing of what
// dst held is kept), so that a caller running one scenario after another
// can keep one StepConfig (simulation.Reuse): a new one a run was 768
// bytes of garbage, on fresh pages once a sweep's workers had reserved
// their memory (docs/design.md "Speed", foot37).
func (s *Plan) FillStepConfig(dst *parallel.StepConfig, l *parallel.Layout) {
	p := s.Parallel
	m := *s.model()
	hc := s.r.gpu.HostCopy
	*dst = parallel.StepConfig{
		Layout: l, Model: m, Shape: s.Shape(), Recompute: s.r.recompute, RecomputeEvery: s.Training.RecomputeEvery,
		Schedule: s.r.schedule, Virtual: p.VirtualStages, Microbatches: s.r.microbatches,
		Chunks: s.r.chunks, Zero: p.Zero, Optimizer: s.Training.Optimizer,
		ParamDtype: s.paramDtype(), GradDtype: s.r.grad, MasterDtype: s.r.master, StateDtype: s.r.states,
		Overlap: parallel.Overlap{GradReduce: *p.Overlap.GradReduce, ParamGather: *p.Overlap.ParamGather,
			TPComm: *p.Overlap.TPComm, TPBwd: *p.Overlap.TPBwd, P2P: *p.Overlap.P2P, EP: *p.Overlap.EP},
		TPImplDTensor:     p.TPImpl == "dtensor",
		RecomputeToOutput: s.Training.RecomputeReentrant,
		EPBackend:         s.r.epBackend,
		Steps:             s.Sim.Steps,
		LayerParams:       s.layerParams(), // a method value on a copy of m, bound once per shared model: calls cost less than through a closure over the shared model (measured: docs/design.md "Speed", foot37)
		MoEHostSync:       s.MoEHostSync(),
		UnpadHostSync:     s.UnpadHostSync(),
		PipeEngineSync:    s.PipeEngineSync(),
		LossReadback:      s.LossReadback(),
		LossReadbackAfter: s.Training.LossReadbackAt == "after_backward",
		GradBucketSync:    s.GradBucketSync(),
		HostH2D:           float64(hc.H2D), HostD2H: float64(hc.D2H),
		OffloadOptimizer:      s.Training.OffloadOptimizer,
		LogOptimizerStates:    s.Training.LogOptimizerStates,
		LayerHostSync:         s.Training.LayerHostSync,
		OptimizerTensors:      s.Training.OptimizerTensors,
		OptimizerLoopTorch:    s.Training.OptimizerLoop == "torch",
		Host:                  s.HostModel(),
		Zero3GatherParams:     p.Zero3PrefetchBucket,
		Zero3GradSyncLast:     p.Zero3GradSync == "last",
		GEMMSMs:               s.r.gpu.SMs,
		DDPGradCopy:           s.ddpGradCopy(),
		TPLogitsReplicated:    p.TPLogits == "replicated",
		TPEmbeddingReplicated: p.TPEmbedding == "replicated",
		BucketParams:          p.GradBucket, // 0: the builder's max(40M, 1M·dp), as GradBucket reports
	}
}

// GradBucket is the DP gradient bucket in parameters (ZeRO 0-2):
// parallel.grad_bucket, or Megatron-LM's default max(40M, 1M·dp)
// (megatron/core/distributed/distributed_data_parallel_config.py
// bucket_size) when it is 0; 0 for ZeRO-3, whose reduce-scatters go one
// per layer.
func (s *Plan) GradBucket() float64 {
	p := &s.Parallel
	switch {
	case p.Zero == 3:
		return 0
	case p.GradBucket > 0:
		return p.GradBucket
	}
	return max(40e6, 1e6*float64(p.DP))
}

// paramDtype is the width the parameters are all-gathered at and the
// optimizer writes back: the compute dtype's storage (bf16 for FP8
// training: Transformer Engine and torchao keep bf16 weights), or FP8 with
// training.fp8_param_gather.
func (s *Plan) paramDtype() workload.Dtype {
	if s.Training.FP8ParamGather {
		return workload.FP8
	}
	return s.r.precision.StorageDtype()
}

// MemoryPerStage is the accounting model's memory of every rank of each
// pipeline stage and whether all of them fit in the GPU's memory. It needs no
// simulation, so sweeps use it to prune layouts that cannot fit.
func (s *Plan) MemoryPerStage() ([]StageMemory, bool) {
	return s.AppendMemoryPerStage(make([]StageMemory, 0, s.Parallel.PP))
}

// AppendMemoryPerStage is MemoryPerStage appending the stages to dst: a
// sweep worker passes the list of a point whose row was written, so the
// list is not ≈ 0.4 KB of fresh memory a point (≈ 100 first-touched pages
// of the 1,000-point 70B sweep after idle: docs/design.md "Speed",
// emit52).
func (s *Plan) AppendMemoryPerStage(dst []StageMemory) ([]StageMemory, bool) {
	p := s.Parallel
	all := true
	out := dst
	buf := stageIDBufs.Get().(*[]int)
	defer stageIDBufs.Put(buf)
	in := s.memoryInput()
	for st := 0; st < p.PP; st++ {
		ids := appendStageLayerIDs(*buf, s.r.chunks[st])
		if ids != nil {
			*buf = ids[:0] // its storage, grown, for the next stage and call
		}
		s.setStage(&in, st, ids)
		mem := workload.StageMemory(in)
		fits := mem.Total <= s.StageCapacityBytes(st)
		all = all && fits
		out = append(out, StageMemory{Stage: st, Memory: mem, Fits: fits})
	}
	return out, all
}

// memoryInput is StageMemory's input without the stage's fields
// (setStage): what every stage shares, computed once for all of them.
func (s *Plan) memoryInput() workload.MemoryInput {
	p := s.Parallel
	return workload.MemoryInput{
		Model: *s.model(), Shape: s.Shape(),
		PP: p.PP, DP: p.DP, VirtualStages: p.VirtualStages, Schedule: s.r.schedule,
		Microbatches: s.r.microbatches, Zero: p.Zero, Optimizer: s.Training.Optimizer,
		MasterDtype: s.r.master, GradDtype: s.r.grad, StateDtype: s.r.states, Recompute: s.r.recompute,
		RecomputeEvery: s.Training.RecomputeEvery, OffloadOptimizer: s.Training.OffloadOptimizer,
		WeightBytes: s.fp8WeightBytes(), ShardIsMaster: p.Zero3Impl == "fsdp", GradSyncLast: p.Zero3GradSync == "last",
		GradBucketCopy:      s.ddpGradCopy(),
		ReplicatedEmbedding: p.TPEmbedding == "replicated",
	}
}

// setStage sets in's fields of stage st, whose transformer layers are ids
// (appendStageLayerIDs), overwriting those of the stage before.
func (s *Plan) setStage(in *workload.MemoryInput, st int, ids []int) {
	layers := 0
	emb, head := false, false
	for _, ch := range s.r.chunks[st] {
		layers += ch.Layers
		emb = emb || ch.Embedding
		head = head || ch.Head
	}
	in.Stage, in.Layers, in.LayerIDs, in.HasEmbedding, in.HasHead = st, layers, ids, emb, head
	in.CapacityBytes = s.StageCapacityBytes(st)
}

// stageIDBufs keeps MemoryPerStage's list of a stage's layer ids between
// calls. A list per call (an array for all stages, stageLayerIDs before)
// was garbage each point, ≈ 135 fresh pages of the 1,000-point 70B sweep
// once its workers had reserved their memory and the collector stopped
// running (docs/design.md "Speed", foot37). A pooled list, not an array on
// the stack: StageMemory's input leaks (its optimizer name reaches an
// error), so such an array would be moved to the heap. StageMemory only
// reads the ids (copying them), so the list is free again on its return.
var stageIDBufs = sync.Pool{New: func() any { return new([]int) }}

// appendStageLayerIDs appends a stage's transformer layers to dst[:0], its
// chunks' in order (FirstLayer on), and returns the list, or nil for a
// stage without layers (StageMemory reads nil as Layers from
// Stage·Layers: none).
func appendStageLayerIDs(dst []int, stage []parallel.Chunk) []int {
	dst = dst[:0]
	for _, ch := range stage {
		for l := ch.FirstLayer; l < ch.FirstLayer+ch.Layers; l++ {
			dst = append(dst, l)
		}
	}
	if len(dst) == 0 {
		return nil
	}
	return dst
}

// fp8WeightBytes is the bytes per kept parameter under
// training.fp8_param_gather (workload.FP8ParamBytes; Blackwell runs FP8
// GEMMs in every layout), 0 otherwise.
func (s *Plan) fp8WeightBytes() float64 {
	if !s.Training.FP8ParamGather {
		return 0
	}
	return workload.FP8ParamBytes(s.r.fp8, s.r.gpu.Arch == "blackwell")
}

// MemCapacityBytes is the memory a process can allocate on one GPU of the
// scenario's cluster (hardware.GPU.HBMUsableBytes): the fit limit; with
// node groups the smallest group's (each stage's own is StageCapacityBytes).
func (s *Plan) MemCapacityBytes() float64 {
	c := float64(s.r.gpu.HBMUsableBytes)
	for _, g := range s.r.groups {
		c = min(c, float64(g.GPU.HBMUsableBytes))
	}
	return c
}

// Software describes, in one line, the framework choices a run is priced
// with after defaults and "auto" are resolved: the framework profile named,
// compute precision (and FP8 recipe), attention kernel (and unpadded
// inputs), an unfused loss, fused or eager elementwise kernels, and, where
// they apply, the tensor-parallel implementation and the MoE dispatch
// library. For tables and logs; the
// scenario fields are the contract.
func (s *Plan) Software() string {
	t, p := s.Training, s.Parallel
	prec := t.Precision
	if s.r.precision == workload.FP8 {
		prec += " " + s.r.fp8.String()
		if t.FP8ParamGather {
			prec += " (fp8 param gather)"
		}
		if a, e := t.BF16LayersAtStart, t.BF16LayersAtEnd; a+e > 0 {
			prec += fmt.Sprintf(" (bf16 layers: first %d, last %d)", a, e)
		}
	}
	attn := t.AttentionKernel
	if attn == "auto" {
		attn = s.r.gpu.Compute.AttnKernel + " (auto)"
	}
	if t.AttentionUnpad {
		attn += " unpadded"
	}
	if t.AttentionRepeatKV && s.model().KVHeads < s.model().Heads && s.model().Attention != "mla" {
		attn += " repeat-kv"
	}
	parts := []string{prec, "attention " + attn}
	if t.Framework != "" {
		parts = append([]string{t.Framework}, parts...)
	}
	if s.r.crossEntropy != workload.CrossEntropyFused {
		parts = append(parts, "loss "+s.r.crossEntropy.String())
	}
	switch {
	case t.Compile != nil && !*t.Compile && t.FusedNorm != nil && *t.FusedNorm:
		parts = append(parts, "eager (fused norm)")
	case t.Compile != nil && !*t.Compile:
		parts = append(parts, "eager")
	default:
		parts = append(parts, "fused kernels")
	}
	if p.TP > 1 {
		parts = append(parts, "tp "+p.TPImpl)
	}
	if p.CP > 1 {
		parts = append(parts, "cp "+s.r.cpImpl.String())
	}
	if p.EP > 1 {
		parts = append(parts, "ep "+s.r.epBackend.String())
	}
	if s.model().MoE != nil {
		if s.r.dropless {
			parts = append(parts, "moe dropless")
		} else {
			parts = append(parts, "moe token-drop")
		}
	}
	if t.CUDAGraphs == "full" {
		parts = append(parts, "cuda graphs full")
	}
	if n := s.model().MTPLayers; n > 0 {
		parts = append(parts, fmt.Sprintf("mtp %d", n))
	}
	if len(t.OffloadModules) > 0 {
		parts = append(parts, "offload "+strings.Join(t.OffloadModules, "+"))
	}
	if t.OffloadOptimizer {
		parts = append(parts, "offload optimizer")
	}
	if t.OptimizerTensors > 0 {
		parts = append(parts, fmt.Sprintf("optimizer loop over %d tensors", t.OptimizerTensors))
		if t.OptimizerLoop == "torch" {
			parts[len(parts)-1] += " (torch.optim)"
		}
	}
	return strings.Join(parts, ", ")
}

// HardwareFLOPsPerToken is Model.HardwareFLOPsPerToken for the scenario's
// recomputation: with training.recompute_every only the recomputed layers'
// share of full recomputation's extra FLOPs counts.
func (s *Plan) HardwareFLOPsPerToken(seq int) float64 {
	m := *s.model()
	h := m.HardwareFLOPsPerToken(seq, s.r.recompute)
	k := s.Training.RecomputeEvery
	if k <= 1 || s.r.recompute != workload.RecomputeFull || m.Layers == 0 {
		return h
	}
	recomputed := 0
	for _, stage := range s.r.chunks {
		n := 0
		for _, ch := range stage {
			n += ch.Layers
		}
		recomputed += n / k
	}
	base := m.ModelFLOPsPerToken(seq)
	return base + (h-base)*float64(recomputed)/float64(m.StackLayers())
}

// VariabilityGPUCV is sim.variability.gpu_cv's default, the coefficient of
// variation of a GPU's speed across the GPUs of one cluster (persistent per
// GPU). Estimate: Sinha et al., "Not All GPUs Are Created Equal", SC22
// (arXiv:2208.11035), measured an average 8% performance variation between
// GPUs of the same SKU across four large V100/MI60 clusters; read as the
// range of a normal sample of a few thousand GPUs (about 7.3 standard
// deviations), that is a standard deviation of 0.08/7.3 ≈ 1.1%.
const VariabilityGPUCV = 0.011

// VariabilitySlowFactor is sim.variability.slow_factor's default, how much
// slower a straggling rank computes: Sinha et al. (SC22) found outlier GPUs
// up to 1.5× slower than the cluster's median GPU.
const VariabilitySlowFactor = 1.5

// VariabilityModel is the run's sim.variability block with its defaults
// filled; Distribution "none" when the scenario has none.
func (s *Plan) VariabilityModel() Variability {
	if s.Sim.Variability == nil {
		return Variability{Distribution: "none"}
	}
	return *s.Sim.Variability
}

// isTrue reads an optional boolean field: unset is false.
func isTrue(b *bool) bool { return b != nil && *b }
