package scenario

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/limits"
	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/topology"
	"github.com/simtrain/simtrain/sim/workload"
)

// parseRecomputeModules resolves training.recompute_modules: module names
// (workload.RecomputeModuleNames), only with recompute: selective.
func parseRecomputeModules(names []string, r workload.Recompute) (workload.RecomputeModules, error) {
	if len(names) > 0 && r != workload.RecomputeSelective {
		return 0, fmt.Errorf("training.recompute_modules: needs training.recompute: selective, got %s (drop the field or set selective)", r)
	}
	return parseModuleSet[workload.RecomputeModules]("training.recompute_modules", names, workload.RecomputeModuleNames)
}

// parseModuleSet resolves a list of module names into the bit set whose
// bit i is valid[i]; a name listed twice sets its bit once.
func parseModuleSet[S ~uint8](field string, names, valid []string) (S, error) {
	var set S
	for _, n := range names {
		i := slices.Index(valid, n)
		if i < 0 {
			return 0, fmt.Errorf("%s: unknown module %q (valid: %s)", field, n, strings.Join(valid, ", "))
		}
		set |= 1 << i
	}
	return set, nil
}

func bptr(b bool) *bool { return &b }

// PUEDefault is the power usage effectiveness used for energy when the
// scenario does not set cluster.pue. It is an assumption typical of modern
// large AI data centres, not a measurement; set cluster.pue for your site.
const PUEDefault = 1.2

// resolve fills defaults and checks every rule of the scenario contract, in
// dependency order: model, training, cluster (the GPU), layout and schedule,
// simulation, expectation. set holds the dotted paths present in the file,
// so that an explicit 0 is told apart from an absent field.
func (s *Plan) resolve(set fieldSet) error {
	s.set = set
	if err := limits.CheckName("name", s.Name); err != nil {
		return err
	}
	if err := s.resolveModel(set); err != nil {
		return err
	}
	if err := s.resolveTraining(set); err != nil {
		return err
	}
	if err := s.resolveCluster(set); err != nil {
		return err
	}
	if err := s.resolveParallel(set); err != nil {
		return err
	}
	if err := s.resolveSim(set); err != nil {
		return err
	}
	if s.Goodput != nil {
		if err := s.Goodput.Resolve(); err != nil {
			return err
		}
	}
	return s.validateExpect()
}

func (s *Plan) resolveModel(set fieldSet) error {
	mc := &s.Model
	var m workload.Model
	if mc.Preset != "" {
		p, err := workload.Preset(mc.Preset)
		if err != nil {
			return fmt.Errorf("model.preset: %w", err)
		}
		m = p
	} else {
		for _, f := range []struct {
			name string
			v    int
		}{{"layers", mc.Layers}, {"hidden", mc.Hidden}, {"heads", mc.Heads}, {"vocab", mc.Vocab}} {
			if !set["model."+f.name] {
				return fmt.Errorf("model.%s: required when model.preset is not given", f.name)
			}
		}
	}
	derivedHeadDim := m.Heads > 0 && m.HeadDim == m.Hidden/m.Heads
	// The paths are written out whole: "model."+name built a string per
	// field and plan.
	override := func(k *Knob, dst *int, v int) error {
		if !s.knobGiven(k) {
			return nil
		}
		path := k.Path
		limit := maxWidth
		if path == "model.layers" {
			limit = maxLayers
		}
		if v < 1 || v > limit {
			// path cloned: handed to the error as it is, it would take
			// the field table, and with it m, to the heap on every call
			// (escape analysis does not tell a struct's fields apart)
			return fmt.Errorf("%s: must be between 1 and %d, got %d", strings.Clone(path), limit, v)
		}
		*dst = v
		return nil
	}
	for _, f := range []struct {
		k   *Knob
		dst *int
		v   int
	}{{knobModelLayers, &m.Layers, mc.Layers}, {knobModelHidden, &m.Hidden, mc.Hidden}, {knobModelHeads, &m.Heads, mc.Heads},
		{knobModelKVHeads, &m.KVHeads, mc.KVHeads}, {knobModelHeadDim, &m.HeadDim, mc.HeadDim}, {knobModelFFN, &m.FFN, mc.FFN},
		{knobModelVocab, &m.Vocab, mc.Vocab}} {
		if err := override(f.k, f.dst, f.v); err != nil {
			return err
		}
	}
	if mc.Preset != "" && derivedHeadDim && !s.knobGiven(knobModelHeadDim) && (s.knobGiven(knobModelHidden) || s.knobGiven(knobModelHeads)) {
		m.HeadDim = 0 // re-derive from the overridden hidden/heads
	}
	if mc.Preset != "" && !s.knobGiven(knobModelKVHeads) && s.knobGiven(knobModelHeads) && m.KVHeads > m.Heads {
		m.KVHeads = m.Heads
	}
	if s.knobGiven(knobModelActivation) {
		m.Activation = mc.Activation
	}
	if s.knobGiven(knobModelAttention) {
		m.Attention = mc.Attention
	}
	if s.knobGiven(knobModelNorm) {
		m.Norm = mc.Norm
	}
	if mc.TiedEmbeddings != nil {
		m.TiedEmbeddings = *mc.TiedEmbeddings
	}
	if mc.Dropout != nil {
		m.Dropout = *mc.Dropout
	}
	if s.knobGiven(knobModelAttentionWindow) {
		if mc.AttentionWindow < 0 || mc.AttentionWindow > maxSeqLen {
			return fmt.Errorf("model.attention_window: must be between 0 (full attention) and %d tokens, got %d", maxSeqLen, mc.AttentionWindow)
		}
		m.AttentionWindow = mc.AttentionWindow
	}
	if s.knobGiven(knobModelFullAttentionEvery) {
		if mc.FullAttentionEvery < 0 || mc.FullAttentionEvery > maxLayers {
			return fmt.Errorf("model.full_attention_every: must be between 0 (every layer windowed) and %d, got %d", maxLayers, mc.FullAttentionEvery)
		}
		m.FullAttentionEvery = mc.FullAttentionEvery
	}
	if s.knobGiven(knobModelMtpLayers) {
		if mc.MTPLayers < 0 || mc.MTPLayers > maxMTPLayers {
			return fmt.Errorf("model.mtp_layers: must be between 0 (no multi-token prediction) and %d, got %d", maxMTPLayers, mc.MTPLayers)
		}
		m.MTPLayers = mc.MTPLayers
	}
	if mc.MoE != nil {
		moe := workload.MoE{}
		if m.MoE != nil {
			moe = *m.MoE
		}
		mo := mc.MoE
		for _, f := range []struct {
			name string
			dst  *int
			v    int
			min  int
		}{{"experts", &moe.Experts, mo.Experts, 1}, {"top_k", &moe.TopK, mo.TopK, 1}, {"expert_ffn", &moe.ExpertFFN, mo.ExpertFFN, 1},
			{"shared_experts", &moe.SharedExperts, mo.SharedExperts, 0}, {"dense_layers", &moe.DenseLayers, mo.DenseLayers, 0}} {
			if !set["model.moe."+f.name] {
				continue
			}
			if f.v < f.min || f.v > maxWidth {
				return fmt.Errorf("model.moe.%s: must be between %d and %d, got %d", f.name, f.min, maxWidth, f.v)
			}
			*f.dst = f.v
		}
		if set["model.moe.capacity_factor"] {
			if mo.CapacityFactor <= 0 {
				return fmt.Errorf("model.moe.capacity_factor: must be > 0, got %g", mo.CapacityFactor)
			}
			moe.CapacityFactor = mo.CapacityFactor
		}
		if set["model.moe.imbalance"] {
			if !(mo.Imbalance >= 1) || math.IsInf(mo.Imbalance, 0) {
				return fmt.Errorf("model.moe.imbalance: the most-loaded expert-parallel rank's tokens over the mean, must be >= 1 (1 = balanced), got %g", mo.Imbalance)
			}
			if mo.Dropless != nil && !*mo.Dropless && mo.Imbalance > 1 {
				return errors.New("model.moe.imbalance: applies to dropless routing; with model.moe.dropless false every expert is padded to model.moe.capacity_factor")
			}
			moe.Imbalance = mo.Imbalance
		}
		if moe.Experts == 0 {
			return errors.New("model.moe.experts: required in a model.moe block")
		}
		if moe.TopK == 0 {
			return errors.New("model.moe.top_k: required in a model.moe block")
		}
		m.MoE = &moe
	}
	if mc.Preset == "" {
		m.Name = "custom"
	}
	m.Fill()
	if err := m.Validate(); err != nil {
		return err
	}
	s.r.model = sharedModel(&m)
	// Echo the effective architecture so outputs and run ids see it.
	mc.Layers, mc.Hidden, mc.Heads, mc.KVHeads, mc.HeadDim, mc.FFN, mc.Vocab = m.Layers, m.Hidden, m.Heads, m.KVHeads, m.HeadDim, m.FFN, m.Vocab
	mc.Activation, mc.Attention, mc.Norm = m.Activation, m.Attention, m.Norm
	mc.TiedEmbeddings = bptr(m.TiedEmbeddings)
	mc.AttentionWindow, mc.FullAttentionEvery = m.AttentionWindow, m.FullAttentionEvery
	mc.MTPLayers = m.MTPLayers
	s.r.dropless = mc.MoE == nil || mc.MoE.Dropless == nil || *mc.MoE.Dropless
	if m.MoE != nil {
		mc.MoE = &MoEConfig{Experts: m.MoE.Experts, TopK: m.MoE.TopK, ExpertFFN: m.MoE.ExpertFFN,
			SharedExperts: m.MoE.SharedExperts, DenseLayers: m.MoE.DenseLayers, CapacityFactor: m.MoE.CapacityFactor}
		if m.MoE.Imbalance > 1 {
			mc.MoE.Imbalance = m.MoE.Imbalance
		}
		if !s.r.dropless {
			mc.MoE.Dropless = bptr(false)
		}
	}
	return nil
}

func (s *Plan) resolveTraining(set fieldSet) error {
	t := &s.Training
	if !s.knobGiven(knobTrainingSeqLen) {
		return errors.New("training.seq_len: required")
	}
	if t.SeqLen < 1 || t.SeqLen > maxSeqLen {
		return fmt.Errorf("training.seq_len: must be between 1 and %d, got %d", maxSeqLen, t.SeqLen)
	}
	if !s.knobGiven(knobTrainingGlobalBatch) {
		return errors.New("training.global_batch: required (sequences per optimizer step)")
	}
	if t.GlobalBatch < 1 || t.GlobalBatch > maxBatch {
		return fmt.Errorf("training.global_batch: must be between 1 and %d, got %d", maxBatch, t.GlobalBatch)
	}
	s.fill(knobTrainingMicroBatch)
	if t.MicroBatch < 1 || t.MicroBatch > t.GlobalBatch {
		return fmt.Errorf("training.micro_batch: must be between 1 and training.global_batch %d, got %d", t.GlobalBatch, t.MicroBatch)
	}
	s.fill(knobTrainingPrecision)
	if err := checkChoice(knobTrainingPrecision, t.Precision); err != nil {
		return err
	}
	var err error
	if s.r.precision, err = workload.ParseDtype(t.Precision); err != nil {
		return fmt.Errorf("training.precision: %w", err)
	}
	s.fill(knobTrainingOptimizer)
	if err := checkChoice(knobTrainingOptimizer, t.Optimizer); err != nil {
		return err
	}
	s.fill(knobTrainingMasterDtype)
	s.fill(knobTrainingGradDtype)
	s.fill(knobTrainingRecompute)
	s.fill(knobTrainingFlashAttention)
	s.fill(knobTrainingCrossEntropy)
	if err := checkChoice(knobTrainingCrossEntropy, t.CrossEntropy); err != nil {
		return err
	}
	ce, err := workload.ParseCrossEntropy(t.CrossEntropy)
	if err != nil {
		return fmt.Errorf("training.cross_entropy: %w", err)
	}
	if t.FusedLoss != nil && *t.FusedLoss != (ce == workload.CrossEntropyFused) {
		return fmt.Errorf("training.cross_entropy: %s contradicts training.fused_loss: %t (use fused for a fused loss kernel, or drop one of the two)", t.CrossEntropy, *t.FusedLoss)
	}
	t.FusedLoss = bptr(ce == workload.CrossEntropyFused)
	s.r.crossEntropy = ce
	s.fill(knobTrainingCompile)
	s.fill(knobTrainingFusedNorm)
	if *t.Compile && !*t.FusedNorm {
		return errors.New("training.fused_norm: false needs training.compile: false (a compiled model fuses its norms; valid: true, or set compile: false)")
	}
	s.fill(knobTrainingAttentionKernel)
	if err := checkChoice(knobTrainingAttentionKernel, t.AttentionKernel); err != nil {
		return err
	}
	if *t.FlashAttention == (t.AttentionKernel == "unfused") && (set["training.flash_attention"] || !*t.FlashAttention) {
		return fmt.Errorf("training.attention_kernel: %s contradicts training.flash_attention: %t (use unfused for unfused attention, or drop one of the two)", t.AttentionKernel, *t.FlashAttention)
	}
	if t.AttentionKernel == "unfused" {
		t.FlashAttention = bptr(false)
	}
	if t.AttentionUnpad && !*t.FlashAttention {
		return errors.New("training.attention_unpad: true needs a fused attention kernel, got attention_kernel: unfused (valid: false, or a fused attention_kernel)")
	}
	if s.r.master, err = workload.ParseDtype(t.MasterDtype); err != nil {
		return fmt.Errorf("training.master_dtype: %w", err)
	}
	if s.r.grad, err = workload.ParseDtype(t.GradDtype); err != nil {
		return fmt.Errorf("training.grad_dtype: %w", err)
	}
	s.r.states = s.r.master
	if t.OptimizerStateDtype != "" {
		if err := checkChoice(knobTrainingOptimizerStateDtype, t.OptimizerStateDtype); err != nil {
			return err
		}
		s.r.states, _ = workload.ParseDtype(t.OptimizerStateDtype)
		if s.r.states == s.r.master {
			t.OptimizerStateDtype = "" // canonical: the default is the master dtype
		}
	}
	if s.r.recompute, err = workload.ParseRecompute(t.Recompute); err != nil {
		return fmt.Errorf("training.recompute: %w", err)
	}
	if s.r.recomputeModules, err = parseRecomputeModules(t.RecomputeModules, s.r.recompute); err != nil {
		return err
	}
	if s.r.recomputeModules == workload.RecomputeCoreAttn {
		t.RecomputeModules = nil // canonical: core_attn alone is the default
	}
	if s.r.offload, err = parseModuleSet[workload.OffloadModules]("training.offload_modules", t.OffloadModules, workload.OffloadModuleNames); err != nil {
		return err
	}
	t.OffloadModules = nil // canonical: the set, in module order
	for i, n := range workload.OffloadModuleNames {
		if s.r.offload&(1<<i) != 0 {
			t.OffloadModules = append(t.OffloadModules, n)
		}
	}
	switch {
	case t.RecomputeEvery < 0:
		return fmt.Errorf("training.recompute_every: %d must be >= 0 (0 or 1 = every layer)", t.RecomputeEvery)
	case t.RecomputeEvery == 1:
		t.RecomputeEvery = 0 // canonical: every layer is the default
	case t.RecomputeEvery > 1 && s.r.recompute != workload.RecomputeFull:
		return fmt.Errorf("training.recompute_every: %d needs recompute: full (have %s)", t.RecomputeEvery, t.Recompute)
	case t.RecomputeReentrant && s.r.recompute != workload.RecomputeFull:
		return fmt.Errorf("training.recompute_reentrant: true needs recompute: full (have %s)", t.Recompute)
	}
	switch {
	case t.OptimizerTensors < 0:
		return fmt.Errorf("training.optimizer_tensors: %d must be >= 0 (0 = one fused optimizer pass)", t.OptimizerTensors)
	case t.OptimizerTensors > 0 && t.Optimizer != "adamw" && t.Optimizer != "adam":
		return fmt.Errorf("training.optimizer_tensors: the per-tensor loop is priced for adamw and adam only (have %s)", t.Optimizer)
	case t.OptimizerTensors > 0 && s.Parallel.Zero != 0:
		return fmt.Errorf("training.optimizer_tensors: the per-tensor loop needs parallel.zero: 0 (have %d)", s.Parallel.Zero)
	case t.OptimizerTensors > 0 && t.OffloadOptimizer:
		return fmt.Errorf("training.optimizer_tensors: cannot be combined with training.offload_optimizer: true")
	}
	if t.OptimizerLoop != "" {
		if err := checkChoice(knobTrainingOptimizerLoop, t.OptimizerLoop); err != nil {
			return err
		}
		if t.OptimizerLoop == "torch" && t.OptimizerTensors == 0 {
			return fmt.Errorf("training.optimizer_loop: torch needs training.optimizer_tensors > 0 (the per-tensor loop it describes)")
		}
		if t.OptimizerLoop == "torch" && t.Optimizer != "adamw" {
			return fmt.Errorf("training.optimizer_loop: torch is priced for adamw only (have %s)", t.Optimizer)
		}
	}
	if t.LossReadbackAt != "" {
		if err := checkChoice(knobTrainingLossReadbackAt, t.LossReadbackAt); err != nil {
			return err
		}
		if t.LossReadbackAt == "after_backward" && !isTrue(t.LossReadback) {
			return fmt.Errorf("training.loss_readback_at: after_backward needs training.loss_readback: true (the read it places)")
		}
	}
	if t.LossReadbackAt == "before_backward" {
		t.LossReadbackAt = "" // canonical: before_backward is the default
	}
	if t.OptimizerLoop == "transformers" {
		t.OptimizerLoop = "" // canonical: transformers is the default
	}
	if t.CUDAGraphs != "" {
		if err := checkChoice(knobTrainingCudaGraphs, t.CUDAGraphs); err != nil {
			return err
		}
	}
	if t.CUDAGraphs == "none" {
		t.CUDAGraphs = "" // canonical: none is the default
	}
	if t.HostDispatch != "" {
		if err := checkChoice(knobTrainingHostDispatch, t.HostDispatch); err != nil {
			return err
		}
	}
	if t.HostDispatch == "auto" {
		t.HostDispatch = "" // canonical: auto is the default
	}
	if t.Framework == "auto" {
		t.Framework = "" // canonical: auto is the default (decode checked the name)
	}
	// The default is not written back, so that a sweep over
	// training.precision stays valid.
	s.r.fp8 = workload.FP8Tensorwise
	if t.FP8Recipe != "" {
		if t.Precision != "fp8" {
			return fmt.Errorf("training.fp8_recipe: %s needs training.precision: fp8, got %s (drop the field or set precision fp8)", t.FP8Recipe, t.Precision)
		}
		if err := checkChoice(knobTrainingFp8Recipe, t.FP8Recipe); err != nil {
			return err
		}
		s.r.fp8, _ = workload.ParseFP8Recipe(t.FP8Recipe)
	}
	if t.FP8ParamGather && t.Precision != "fp8" {
		return fmt.Errorf("training.fp8_param_gather: needs training.precision: fp8, got %s (drop the field or set precision fp8)", t.Precision)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"bf16_layers_at_start", t.BF16LayersAtStart}, {"bf16_layers_at_end", t.BF16LayersAtEnd}} {
		if f.v == 0 {
			continue
		}
		if t.Precision != "fp8" {
			return fmt.Errorf("training.%s: needs training.precision: fp8, got %s (drop the field or set precision fp8)", f.name, t.Precision)
		}
		if f.v < 0 || f.v > s.model().Layers {
			return fmt.Errorf("training.%s: must be between 0 and model.layers %d, got %d", f.name, s.model().Layers, f.v)
		}
	}
	if n := t.BF16LayersAtStart + t.BF16LayersAtEnd; n > s.model().Layers {
		return fmt.Errorf("training.bf16_layers_at_start + bf16_layers_at_end: %d is more than model.layers %d", n, s.model().Layers)
	}
	return nil
}

// fp8RecipesOn lists the FP8 recipes g runs: mxfp8 needs Blackwell's
// block-scaled tensor cores (OCP MX formats; NVIDIA Blackwell architecture
// technical brief), the others any GPU with FP8 tensor cores.
func fp8RecipesOn(g *hardware.GPU) []string {
	var out []string
	for _, n := range workload.FP8RecipeNames() {
		if n != workload.FP8MXFP8.String() || g.Arch == "blackwell" {
			out = append(out, n)
		}
	}
	return out
}

// IsGPUFile reports whether a cluster.gpu value names a GPU record file
// (a path, ending in .yaml or .yml) rather than a catalog GPU.
func IsGPUFile(v string) bool {
	ext := strings.ToLower(filepath.Ext(v))
	return ext == ".yaml" || ext == ".yml"
}

// gpuFiles caches the GPU record files read by scenarios (a sweep reads
// its base's once).
var gpuFiles sync.Map // path → gpuFile

type gpuFile struct {
	g   *hardware.GPU
	err error
}

// catalogGPUs holds one resolved record per catalog GPU, shared read-only
// by every plan that names it: a sweep resolves its template once or twice
// a point, and copying the 3 KB record and its source lists each time was
// a third of a resolve's allocations.
var catalogGPUs sync.Map // name → *hardware.GPU

// lookupGPU resolves cluster.gpu into its hardware record: a catalog name,
// or a GPU record file relative to the scenario's directory. It is the one
// place a scenario's GPU is found. The record may be shared with other
// plans: it is never written.
func (s *Plan) lookupGPU(v string) (*hardware.GPU, error) {
	if v == "" {
		return nil, fmt.Errorf("cluster.gpu: required (valid: %s)", strings.Join(hardware.GPUNames(), ", "))
	}
	g, err := s.gpuRecord(v)
	if err != nil {
		return nil, fmt.Errorf("cluster.gpu: %w", err)
	}
	return g, nil
}

// gpuRecord reads cluster.gpu's record from the catalog or its file (a
// shared record, read-only).
//
// Only the shared catalog record's lookup is done here; every path that
// makes a record (a hardware.GPU of ≈ 3 KB, returned by value) is a
// function of its own that is never inlined, so that this frame, which
// every resolve enters, stays small. With those paths inlined it was
// 18.5 KB: a goroutine of the sweep's load (parsePoints, on a fresh 2 KB
// stack) grew its stack to 64 KB in four copies for every batch (the
// 70B sweep's load-only process: 73–101 page faults under the stack
// growth, 67–77 without the large frames; go build -gcflags=-S: 18,496 → 64 bytes; resolveCluster 6,816 →
// 1,712 with fp8RecipesOn taking the record by pointer). The records and
// errors are hardware's as before (TestGPURecordLookups).
func (s *Plan) gpuRecord(v string) (*hardware.GPU, error) {
	if len(s.cal) == 0 {
		// catalogGPUs holds catalog names alone (never a file's), so a
		// hit is the record the catalog branch below would give.
		if g, ok := catalogGPUs.Load(v); ok {
			return g.(*hardware.GPU), nil
		}
	}
	if !IsGPUFile(v) {
		if len(s.cal) > 0 {
			return calibratedCatalogGPU(v, s.cal)
		}
		return sharedCatalogGPU(v)
	}
	return s.gpuFileRecord(v)
}

// calibratedCatalogGPU is catalog GPU name's record under calibration cal
// (a record of the plan's own).
//
//go:noinline
func calibratedCatalogGPU(name string, cal hardware.Calibration) (*hardware.GPU, error) {
	g, err := hardware.LookupGPUCalibrated(name, cal)
	if err != nil {
		return nil, err
	}
	return &g, nil
}

// sharedCatalogGPU resolves catalog GPU name once per process and keeps
// it in catalogGPUs (the first goroutine's record wins).
//
//go:noinline
func sharedCatalogGPU(name string) (*hardware.GPU, error) {
	g, err := hardware.LookupGPU(name)
	if err != nil {
		return nil, err
	}
	shared, _ := catalogGPUs.LoadOrStore(name, &g)
	return shared.(*hardware.GPU), nil
}

// gpuFileRecord reads the GPU record file v (relative to the scenario's
// directory): once per path and process without calibration (gpuFiles),
// for this plan alone with it.
//
//go:noinline
func (s *Plan) gpuFileRecord(v string) (*hardware.GPU, error) {
	path := v
	if !filepath.IsAbs(path) {
		path = filepath.Join(s.dir, path)
	}
	if len(s.cal) > 0 {
		data, err := limits.ReadFile(path, limits.MaxInputBytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", v, err)
		}
		g, err := hardware.ParseGPUCalibrated(data, s.cal)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", v, cleanYAMLError(err))
		}
		return &g, nil
	}
	if f, ok := gpuFiles.Load(path); ok {
		return f.(gpuFile).g, f.(gpuFile).err
	}
	var f gpuFile
	data, err := limits.ReadFile(path, limits.MaxInputBytes)
	if err == nil {
		var g hardware.GPU
		g, err = hardware.ParseGPU(data)
		f.g = &g
	}
	if err != nil {
		f.g, f.err = nil, fmt.Errorf("%s: %v", v, cleanYAMLError(err))
	}
	gpuFiles.Store(path, f)
	return f.g, f.err
}

// GPUFile is the GPU record file cluster.gpu names, "" for a catalog GPU.
func (s *Plan) GPUFile() string {
	if IsGPUFile(s.Cluster.GPU) {
		return s.Cluster.GPU
	}
	return ""
}

func (s *Plan) resolveCluster(set fieldSet) error {
	c := &s.Cluster
	var g *hardware.GPU
	var err error
	if len(c.NodeGroups) > 0 {
		g, err = s.resolveNodeGroups(set)
	} else {
		g, err = s.lookupGPU(c.GPU)
	}
	if err != nil {
		return err
	}
	s.r.gpu = g
	if s.r.attn[0], s.r.attn[1], err = g.Compute.Attention(s.Training.AttentionKernel); err != nil {
		return fmt.Errorf("training.attention_kernel: on %s, %w", c.GPU, err)
	}
	s.r.attnDims = g.Compute.AttentionHeadDims(s.Training.AttentionKernel)
	if s.r.fp8 == workload.FP8MXFP8 && g.Arch != "blackwell" {
		return fmt.Errorf("training.fp8_recipe: mxfp8 needs a Blackwell GPU, %s is %s (valid: %s)", c.GPU, g.Arch, strings.Join(fp8RecipesOn(g), ", "))
	}
	nodes := s.Nodes()
	if len(c.NodeGroups) == 0 {
		if !s.knobGiven(knobClusterNodes) {
			return errors.New("cluster.nodes: required")
		}
		if c.Nodes < 1 {
			return fmt.Errorf("cluster.nodes: must be >= 1, got %d", c.Nodes)
		}
		s.r.groups = []GPUGroup{{GPU: g, Nodes: c.Nodes}}
	}
	s.fill(knobClusterGpusPerNode)
	if c.GPUsPerNode < 1 {
		return fmt.Errorf("cluster.gpus_per_node: must be >= 1, got %d", c.GPUsPerNode)
	}
	s.fill(knobClusterIntraNode)
	if err := checkChoice(knobClusterIntraNode, c.IntraNode); err != nil {
		return err
	}
	n := &c.Network
	s.fill(knobClusterNetworkKind)
	if err := checkChoice(knobClusterNetworkKind, n.Kind); err != nil {
		return err
	}
	s.fill(knobClusterNetworkNic)
	if s.r.nicGbps, err = hardware.NICGbps(n.NIC); err != nil {
		return fmt.Errorf("cluster.network.nic: %w", err)
	}
	if n.NICGbps < 0 {
		return fmt.Errorf("cluster.network.nic_gbps: must be > 0, got %g", n.NICGbps)
	}
	s.fill(knobClusterNetworkNicGbps)
	s.fill(knobClusterNetworkNicsPerNode)
	if n.NICsPerNode < 1 {
		return fmt.Errorf("cluster.network.nics_per_node: must be >= 1, got %d", n.NICsPerNode)
	}
	s.fill(knobClusterNetworkOversubscription)
	if n.Oversubscription < 1 {
		return fmt.Errorf("cluster.network.oversubscription: must be >= 1 (7 means 1:7), got %g", n.Oversubscription)
	}
	if n.PodGPUs < 0 {
		return fmt.Errorf("cluster.network.pod_gpus: must be >= 0, got %d", n.PodGPUs)
	}
	if c.GPUHourUSD < 0 {
		return fmt.Errorf("cluster.gpu_hour_usd: must be >= 0, got %g", c.GPUHourUSD)
	}
	if len(c.NodeGroups) > 0 && c.GPUHourUSD != 0 {
		return errors.New("cluster.gpu_hour_usd: with cluster.node_groups give each group's gpu_hour_usd (the cost uses their GPU-weighted mean)")
	}
	s.r.gpuHourUSD = 0
	for i := range s.r.groups {
		gr := &s.r.groups[i]
		gr.GPUs = gr.Nodes * c.GPUsPerNode
		if gr.GPUHourUSD == 0 {
			gr.GPUHourUSD = gr.GPU.GPUHourUSD
		}
		if len(s.r.groups) == 1 {
			gr.GPUHourUSD = cmp.Or(c.GPUHourUSD, gr.GPUHourUSD)
		}
		s.r.gpuHourUSD += gr.GPUHourUSD * float64(gr.Nodes) / float64(nodes)
	}
	if len(c.NodeGroups) == 0 {
		s.fill(knobClusterGpuHourUsd)
	}
	if s.knobGiven(knobClusterPue) && c.PUE < 1 {
		return fmt.Errorf("cluster.pue: must be >= 1, got %g", c.PUE)
	}
	s.fill(knobClusterPue)
	if c.GPUsPerNode > MaxGPUs || int64(nodes)*int64(c.GPUsPerNode) > MaxGPUs {
		return fmt.Errorf("cluster: %d nodes × %d GPUs is more than the %d GPUs simtrain simulates", nodes, c.GPUsPerNode, MaxGPUs)
	}
	s.r.numGPUs = nodes * c.GPUsPerNode
	return nil
}

// stageCutSchedules lists the pipeline schedules whose placement cuts the
// model by stage, the ones parallel.stage_layers applies to.
func stageCutSchedules() []string {
	var out []string
	for _, n := range pipeline.Names() {
		if sc, err := pipeline.Lookup(n); err == nil {
			if pl := sc.Placement(pipeline.Shape{Stages: 2, Virtual: 1}); pl.StageSplit && pl.Routes == 1 {
				out = append(out, n)
			}
		}
	}
	return out
}

// maxNodeGroups bounds cluster.node_groups (a stage's groups are a bit set).
const maxNodeGroups = 16

// resolveNodeGroups reads cluster.node_groups into s.r.groups and returns
// the first group's GPU: the one whose fabric, software defaults (attention
// kernel, FP8 recipes, gpus_per_node, intra_node) and NCCL profile the
// cluster takes. Every group must share that GPU's node fabric.
func (s *Plan) resolveNodeGroups(set fieldSet) (*hardware.GPU, error) {
	c := &s.Cluster
	if c.GPU != "" || set["cluster.nodes"] {
		return nil, errors.New("cluster.node_groups: replaces cluster.gpu and cluster.nodes; give one or the other")
	}
	if len(c.NodeGroups) > maxNodeGroups {
		return nil, fmt.Errorf("cluster.node_groups: %d groups, at most %d", len(c.NodeGroups), maxNodeGroups)
	}
	s.r.groups = make([]GPUGroup, len(c.NodeGroups))
	for i, ng := range c.NodeGroups {
		if ng.GPU == "" {
			return nil, fmt.Errorf("cluster.node_groups[%d].gpu: required (valid: %s)", i, strings.Join(hardware.GPUNames(), ", "))
		}
		g, err := s.gpuRecord(ng.GPU)
		if err != nil {
			return nil, fmt.Errorf("cluster.node_groups[%d].gpu: %w", i, err)
		}
		if ng.Nodes < 1 || ng.Nodes > MaxGPUs {
			return nil, fmt.Errorf("cluster.node_groups[%d].nodes: must be between 1 and %d, got %d", i, MaxGPUs, ng.Nodes)
		}
		if !(ng.GPUHourUSD >= 0) || math.IsInf(ng.GPUHourUSD, 0) {
			return nil, fmt.Errorf("cluster.node_groups[%d].gpu_hour_usd: must be >= 0 (0 = the catalog's), got %g", i, ng.GPUHourUSD)
		}
		if first := s.r.groups[0].GPU; i > 0 && !topology.SameNodeFabric(*first, *g) {
			return nil, fmt.Errorf("cluster.node_groups[%d].gpu: %s's node fabric (%s, %d-GPU domain, %d GPUs a node) differs from the first group's %s (%s, %d, %d); valid: GPUs of one board family (h100-sxm, h200)",
				i, g.Name, g.ScaleUp, g.DomainGPUs, g.DefaultGPUsPerNode, first.Name, first.ScaleUp, first.DomainGPUs, first.DefaultGPUsPerNode)
		}
		s.r.groups[i] = GPUGroup{GPU: g, Nodes: ng.Nodes, GPUHourUSD: ng.GPUHourUSD}
	}
	return s.r.groups[0].GPU, nil
}

// MaxGPUs is the largest cluster simtrain builds (the topology's limit).
const MaxGPUs = 131072

// Upper bounds that keep a hostile or mistyped file from asking for absurd
// work; each is far beyond any real configuration.
const (
	maxLayers    = 100_000
	maxMTPLayers = 16      // prediction depths; DeepSeek-V3 trained with 1
	maxWidth     = 1 << 24 // hidden, ffn, heads, vocab
	maxSeqLen    = 1 << 24
	maxBatch     = 1 << 30
	maxSteps     = 10_000
	maxMicroStep = 1 << 22 // micro-batches per pipeline per step
)

// resolveExpertTP checks parallel.expert_tp against tp and leaves it in
// canonical form: 0 for the default (equal to tp), else the folded size.
func (s *Plan) resolveExpertTP(set fieldSet) error {
	p := &s.Parallel
	if !set["parallel.expert_tp"] || p.ExpertTP == p.TP {
		p.ExpertTP = 0
		return nil
	}
	etp := p.ExpertTP
	switch {
	case etp < 1:
		return fmt.Errorf("parallel.expert_tp: must be >= 1, got %d (valid: divisors of tp %d)", etp, p.TP)
	case etp > p.TP:
		return fmt.Errorf("parallel.expert_tp: %d is more than tp %d; expert TP above TP is not supported (valid: divisors of tp %d)", etp, p.TP, p.TP)
	case p.TP%etp != 0:
		return fmt.Errorf("parallel.expert_tp: %d does not divide tp %d (valid: divisors of tp)", etp, p.TP)
	case s.model().MoE == nil:
		return fmt.Errorf("parallel.expert_tp: %d needs a mixture-of-experts model (model.moe); valid without one: tp %d", etp, p.TP)
	case !p.SP:
		return fmt.Errorf("parallel.expert_tp: %d < tp %d needs parallel.sp: true (Megatron-Core's MoE layer requires sequence parallelism with tp > 1)", etp, p.TP)
	}
	return nil
}

func (s *Plan) resolveParallel(set fieldSet) error {
	p := &s.Parallel
	m := *s.model()
	for _, f := range []struct {
		k *Knob
		v *int
	}{{knobParallelTp, &p.TP}, {knobParallelPp, &p.PP}, {knobParallelCp, &p.CP}, {knobParallelEp, &p.EP}, {knobParallelVirtualStages, &p.VirtualStages}} {
		s.fill(f.k)
		if *f.v < 1 {
			return fmt.Errorf("%s: must be >= 1, got %d", f.k.Path, *f.v)
		}
		if f.k != knobParallelVirtualStages && *f.v > s.r.numGPUs {
			return fmt.Errorf("%s: %d is more than the cluster's %d GPUs", f.k.Path, *f.v, s.r.numGPUs)
		}
	}
	if p.VirtualStages > m.Layers {
		return fmt.Errorf("parallel.virtual_stages: %d is more than model.layers %d", p.VirtualStages, m.Layers)
	}
	if p.DP > s.r.numGPUs {
		return fmt.Errorf("parallel.dp: %d is more than the cluster's %d GPUs", p.DP, s.r.numGPUs)
	}
	if m.Heads%p.TP != 0 {
		return fmt.Errorf("parallel.tp: %d does not divide model.heads %d", p.TP, m.Heads)
	}
	if m.KVHeads%p.TP != 0 {
		if p.TP%m.KVHeads == 0 {
			s.Warnings = append(s.Warnings, fmt.Sprintf("parallel.tp: %d exceeds model.kv_heads %d; K/V heads are replicated %d× across tensor-parallel ranks", p.TP, m.KVHeads, p.TP/m.KVHeads))
		} else {
			return fmt.Errorf("parallel.tp: %d does not divide model.kv_heads %d (and is not a multiple of it)", p.TP, m.KVHeads)
		}
	}
	n := s.r.numGPUs
	if p.DP < 0 {
		return fmt.Errorf("parallel.dp: must be >= 0 (0 = derived), got %d", p.DP)
	}
	if int64(p.TP)*int64(p.PP)*int64(p.CP) > int64(n) {
		return fmt.Errorf("parallel: tp*pp*cp = %d*%d*%d is more than the cluster's %d GPUs", p.TP, p.PP, p.CP, n)
	}
	if p.DP == 0 {
		if n%(p.TP*p.PP*p.CP) != 0 {
			return fmt.Errorf("parallel: tp*pp*cp = %d does not divide the %d GPUs (cluster.nodes * cluster.gpus_per_node)", p.TP*p.PP*p.CP, n)
		}
		s.fill(knobParallelDp)
	}
	if int64(p.TP)*int64(p.PP)*int64(p.CP)*int64(p.DP) != int64(n) {
		return fmt.Errorf("parallel: tp*pp*cp*dp = %d*%d*%d*%d = %d, but the cluster has %d GPUs (cluster.nodes * cluster.gpus_per_node)",
			p.TP, p.PP, p.CP, p.DP, p.TP*p.PP*p.CP*p.DP, n)
	}
	if p.EP > 1 && m.MoE == nil {
		return fmt.Errorf("parallel.ep: %d needs a mixture-of-experts model (model.moe)", p.EP)
	}
	if err := s.resolveExpertTP(set); err != nil {
		return err
	}
	if etp := p.ExpertTP; etp != 0 {
		if (p.TP*p.CP*p.DP)%(p.EP*etp) != 0 {
			return fmt.Errorf("parallel.ep: ep*expert_tp = %d*%d does not divide tp*cp*dp = %d (valid ep: divisors of %d)", p.EP, etp, p.TP*p.CP*p.DP, p.TP*p.CP*p.DP/etp)
		}
	} else if (p.DP*p.CP)%p.EP != 0 {
		return fmt.Errorf("parallel.ep: %d does not divide dp*cp = %d", p.EP, p.DP*p.CP)
	}
	if m.MoE != nil && m.MoE.Experts%p.EP != 0 {
		return fmt.Errorf("parallel.ep: %d does not divide model.moe.experts %d", p.EP, m.MoE.Experts)
	}
	t := s.Training
	if t.SeqLen%p.CP != 0 {
		return fmt.Errorf("parallel.cp: %d does not divide training.seq_len %d", p.CP, t.SeqLen)
	}
	if p.CP > 1 && t.SeqLen%(2*p.CP) != 0 {
		return fmt.Errorf("parallel.cp: training.seq_len %d must be a multiple of 2*cp = %d for the load-balanced causal split", t.SeqLen, 2*p.CP)
	}
	if p.SP && p.TP < 2 {
		return errors.New("parallel.sp: sequence parallelism needs tp > 1")
	}
	s.fill(knobParallelZero)
	if p.Zero < 0 || p.Zero > 3 {
		return fmt.Errorf("parallel.zero: unknown stage %d (valid: 0, 1, 2, 3)", p.Zero)
	}
	s.fill(knobParallelSchedule)
	sched, err := pipeline.Lookup(p.Schedule)
	if err != nil {
		return err
	}
	s.r.schedule = sched
	if err := sched.Check(pipeline.Shape{Stages: p.PP, Virtual: p.VirtualStages}); err != nil {
		return err
	}
	s.fill(knobParallelOrder)
	s.fill(knobParallelTpImpl)
	if err := checkChoice(knobParallelTpImpl, p.TPImpl); err != nil {
		return err
	}
	s.fill(knobParallelZero3Impl)
	if err := checkChoice(knobParallelZero3Impl, p.Zero3Impl); err != nil {
		return err
	}
	if p.Zero3GradSync == "every" {
		p.Zero3GradSync = "" // canonical: the default is left empty
	}
	if p.Zero3GradSync != "" {
		if err := checkChoice(knobParallelZero3GradSync, p.Zero3GradSync); err != nil {
			return err
		}
		if p.Zero != 3 {
			return fmt.Errorf("parallel.zero3_grad_sync: %s needs zero 3 (have zero %d; valid: every)", p.Zero3GradSync, p.Zero)
		}
	}
	if p.PipeEngine == "megatron" {
		p.PipeEngine = "" // canonical: the default is left empty
	}
	if p.PipeEngine != "" {
		if err := checkChoice(knobParallelPipeEngine, p.PipeEngine); err != nil {
			return err
		}
		// DeepSpeed's PipelineEngine runs only its TrainSchedule: 1F1B
		// over one model chunk per stage (deepspeed/runtime/pipe/schedule.py)
		if p.PP > 1 && (p.Schedule != "1f1b" || p.VirtualStages != 1) {
			return fmt.Errorf("parallel.pipe_engine: deepspeed runs DeepSpeed's TrainSchedule, schedule 1f1b with virtual_stages 1 (have schedule %s, virtual_stages %d; valid: megatron)", p.Schedule, p.VirtualStages)
		}
	}
	if p.TPLogits == "sharded" {
		p.TPLogits = "" // canonical: the default is left empty
	}
	if p.TPLogits != "" {
		if err := checkChoice(knobParallelTpLogits, p.TPLogits); err != nil {
			return err
		}
		if p.TP < 2 {
			return fmt.Errorf("parallel.tp_logits: %s needs tp > 1 (have tp %d; valid: sharded)", p.TPLogits, p.TP)
		}
	}
	if p.TPEmbedding == "sharded" {
		p.TPEmbedding = "" // canonical: the default is left empty
	}
	if p.TPEmbedding != "" {
		if err := checkChoice(knobParallelTpEmbedding, p.TPEmbedding); err != nil {
			return err
		}
		if p.TP < 2 {
			return fmt.Errorf("parallel.tp_embedding: %s needs tp > 1 (have tp %d; valid: sharded)", p.TPEmbedding, p.TP)
		}
	}
	if p.EPBackend == "nccl" {
		p.EPBackend = "" // canonical: the default is left empty
	}
	s.r.epBackend = parallel.EPNCCL
	if p.EPBackend != "" {
		if s.r.epBackend, err = parallel.ParseEPBackend(p.EPBackend); err != nil {
			return err
		}
		if p.EP < 2 {
			return fmt.Errorf("parallel.ep_backend: %s needs ep > 1 (have ep %d; valid with ep 1: nccl)", p.EPBackend, p.EP)
		}
	}
	if p.CPImpl == "p2p" {
		p.CPImpl = "" // canonical: the default is left empty
	}
	s.r.cpImpl = workload.CPP2P
	if p.CPImpl != "" {
		if err := checkChoice(knobParallelCpImpl, p.CPImpl); err != nil {
			return err
		}
		s.r.cpImpl, _ = workload.ParseCPImpl(p.CPImpl)
	}
	if p.EPSMs < 0 {
		return fmt.Errorf("parallel.ep_sms: %d must be >= 0 (0 = the backend's default)", p.EPSMs)
	}
	if b := p.Zero3PrefetchBucket; math.IsNaN(b) || math.IsInf(b, 0) || b < 0 {
		return fmt.Errorf("parallel.zero3_prefetch_bucket: %g must be >= 0 parameters (0 = one all-gather per layer, as FSDP; DeepSpeed's default 5e7)", b)
	}
	if p.Zero3PrefetchBucket > 0 && p.Zero != 3 {
		return fmt.Errorf("parallel.zero3_prefetch_bucket: needs parallel.zero 3, got zero %d", p.Zero)
	}
	if b := p.GradBucket; math.IsNaN(b) || math.IsInf(b, 0) || b < 0 {
		return fmt.Errorf("parallel.grad_bucket: %g must be >= 0 parameters (0 = Megatron-LM's max(40M, 1M x dp); PyTorch DDP 25 MiB of gradients, DeepSpeed 5e8)", b)
	}
	if p.GradBucket > 0 && p.Zero == 3 {
		return errors.New("parallel.grad_bucket: needs parallel.zero 0, 1 or 2, got zero 3 (ZeRO-3 reduce-scatters each layer's gradients)")
	}
	if p.EPSMs > 0 && s.r.epBackend == parallel.EPNCCL {
		return errors.New("parallel.ep_sms: needs parallel.ep_backend deepep or hybridep (nccl uses its channel count)")
	}
	if s.r.gpu.SMs > 0 && p.EPSMs > s.r.gpu.SMs/2 {
		return fmt.Errorf("parallel.ep_sms: %d is more than half of %s's %d SMs", p.EPSMs, s.r.gpu.Name, s.r.gpu.SMs)
	}
	if s.r.order, err = parallel.ParseOrder(p.Order); err != nil {
		return err
	}
	if p.ExpertTP != 0 && s.r.order[4] != parallel.DimPP {
		return fmt.Errorf("parallel.order: expert_tp %d < tp %d (MoE parallel folding) needs pp last in the order, got %s", p.ExpertTP, p.TP, p.Order)
	}
	if p.FirstStageLayers < 0 || p.LastStageLayers < 0 {
		return errors.New("parallel.first_stage_layers/last_stage_layers: must be >= 0")
	}
	place := sched.Placement(pipeline.Shape{Stages: p.PP, Virtual: p.VirtualStages})
	var chunks [][]parallel.Chunk
	if p.StageLayers != nil {
		if p.FirstStageLayers > 0 || p.LastStageLayers > 0 {
			return errors.New("parallel.stage_layers: replaces first_stage_layers/last_stage_layers; give one or the other")
		}
		if !place.StageSplit || place.Routes != 1 {
			return fmt.Errorf("parallel.stage_layers: schedule %s does not cut the model by stage (valid: %s)", p.Schedule, strings.Join(stageCutSchedules(), ", "))
		}
		if chunks, err = parallel.PlaceStages(place, m.Layers, p.StageLayers); err == nil {
			parallel.AppendMTP(chunks, m.MTPLayers)
		}
	} else {
		chunks, err = placeChunks(place, m.Layers, p.FirstStageLayers, p.LastStageLayers, m.MTPLayers) // shared: read-only
	}
	if err != nil {
		return err
	}
	s.r.chunks = chunks
	if t.GlobalBatch%(p.DP*t.MicroBatch) != 0 {
		return fmt.Errorf("training.global_batch: %d is not a multiple of dp*micro_batch = %d*%d", t.GlobalBatch, p.DP, t.MicroBatch)
	}
	s.r.microbatches = t.GlobalBatch / (p.DP * t.MicroBatch)
	if s.r.microbatches > maxMicroStep {
		return fmt.Errorf("training.global_batch: %d micro-batches per pipeline per step is more than simtrain plays (%d)", s.r.microbatches, maxMicroStep)
	}
	if err := sched.Check(pipeline.Shape{Stages: p.PP, Microbatches: s.r.microbatches, Virtual: p.VirtualStages}); err != nil {
		return err
	}
	for _, k := range knobsOverlap {
		s.fill(k)
	}
	return s.resolveStageGroups()
}

func (s *Plan) resolveSim(set fieldSet) error {
	s.fill(knobSimFidelity)
	f, err := network.ParseFidelity(s.Sim.Fidelity)
	if err != nil {
		return fmt.Errorf("sim.fidelity: %w", err)
	}
	s.r.fidelity = f
	s.fill(knobSimSteps)
	if s.Sim.Steps < 1 || s.Sim.Steps > maxSteps {
		return fmt.Errorf("sim.steps: must be between 1 and %d, got %d", maxSteps, s.Sim.Steps)
	}
	s.fill(knobSimTimeline)
	s.fill(knobSimLinks)
	if err := checkChoice(knobSimLinks, s.Sim.Links); err != nil {
		return err
	}
	return s.resolveVariability()
}

// resolveVariability fills the sim.variability block's defaults and the
// seed when the block is present, and checks its values.
func (s *Plan) resolveVariability() error {
	v := s.Sim.Variability
	if v == nil {
		if s.Sim.Seed != 0 {
			return errors.New("sim.seed: seeds sim.variability's draws; give a sim.variability block or drop the seed")
		}
		return nil
	}
	if !s.set["sim.seed"] {
		s.Sim.Seed = 1
	}
	for _, k := range knobsVariability {
		s.fill(k)
	}
	if err := checkChoice(knobSimVariabilityDistribution, v.Distribution); err != nil {
		return err
	}
	switch {
	case !(v.GPUCV >= 0 && v.GPUCV <= 0.5):
		return fmt.Errorf("sim.variability.gpu_cv: must be between 0 and 0.5, got %g", v.GPUCV)
	case !(v.StepCV >= 0 && v.StepCV <= 0.5):
		return fmt.Errorf("sim.variability.step_cv: must be between 0 and 0.5, got %g", v.StepCV)
	case !(v.SlowProb >= 0 && v.SlowProb <= 1):
		return fmt.Errorf("sim.variability.slow_prob: must be between 0 and 1, got %g", v.SlowProb)
	case !(v.SlowFactor >= 1 && v.SlowFactor <= 100):
		return fmt.Errorf("sim.variability.slow_factor: must be between 1 and 100, got %g", v.SlowFactor)
	}
	return nil
}

func (s *Plan) validateExpect() error {
	e := s.Expect
	if e == nil {
		return nil
	}
	n := 0
	for _, v := range []*float64{e.StepTimeS, e.TokensPerSPerGPU, e.MFU, e.TFLOPsPerGPU} {
		if v != nil {
			n++
			if *v <= 0 {
				return errors.New("expect: the measured figure must be > 0")
			}
		}
	}
	if n != 1 {
		return fmt.Errorf("expect: give exactly one of step_time_s, tokens_per_s_per_gpu, mfu, tflops_per_gpu (got %d)", n)
	}
	if m := e.PeakMemoryGiB; m != nil && !(*m > 0 && !math.IsInf(*m, 0)) {
		return fmt.Errorf("expect.peak_memory_gib: must be a positive number of GiB, got %g", *m)
	}
	s.fill(knobExpectFlopsConvention)
	if e.AttentionFLOPs != "" {
		if err := checkChoice(knobExpectAttentionFlops, e.AttentionFLOPs); err != nil {
			return err
		}
	}
	return checkChoice(knobExpectFlopsConvention, e.FLOPsConvention)
}

// fillDisplayDefaults fills the defaults an invalid point's summary row
// shows (ParsePartial): the ones validation may not have reached. The set
// is fixed: the row's run id hashes the result.
func (s *Plan) fillDisplayDefaults() {
	s.fill(knobTrainingFlashAttention)
	if s.Model.TiedEmbeddings == nil {
		s.Model.TiedEmbeddings = bptr(false)
	}
	for _, k := range knobsOverlapDisplay {
		s.fill(k)
	}
	if s.Sim.Fidelity == "" || s.Sim.Steps == 0 || s.Sim.Timeline == nil || s.Sim.Links == "" {
		_ = s.resolveSim(s.set)
	}
}

// LoadCatalog loads the hardware catalog's shared tables now rather than
// at the first resolve that needs them. They are filled once per process
// and hold the same values whichever caller fills them, so calling it
// changes no result; the sweep loader calls it on a goroutine of its own
// so the tables load beside the sweep file's decoding (sim/sweep can
// reach the catalog only through this package: DESIGN.md's one-way
// imports).
func LoadCatalog() { _ = hardware.GPUNames() }
