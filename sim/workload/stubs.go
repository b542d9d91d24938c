package workload

// STUBS — the workload implementation replaces these bodies.

func ParseDtype(s string) (Dtype, error) { panic("TODO") }
func (d Dtype) String() string           { panic("TODO") }

// Bytes per value, including block-scale overhead for MXFP4/NVFP4.
func (d Dtype) Bytes() float64 { panic("TODO") }

func ParseRecompute(s string) (Recompute, error) { panic("TODO") }

// Preset returns a catalog model with defaults filled; the error lists names.
func Preset(name string) (Model, error) { panic("TODO") }
func PresetNames() []string             { panic("TODO") }

// Fill sets defaults (KVHeads, HeadDim, FFN, Activation, ...).
func (m *Model) Fill() { panic("TODO") }

// Validate checks the architecture; errors name the field (model.kv_heads ...).
func (m Model) Validate() error { panic("TODO") }

// Params is an exact parameter count.
type Params struct {
	Total     float64
	Active    float64 // per token (MoE: top-k + shared experts)
	Embedding float64 // input embedding (+ output if untied)
}

func (m Model) Params() Params { panic("TODO") }

// IsMoELayer reports whether layer (0-based) has a routed-expert MLP.
func (m Model) IsMoELayer(layer int) bool { panic("TODO") }

// LayerOps are one transformer layer's kernels for pass p, per GPU, in
// execution order (backward ops in backward order).
func (m Model) LayerOps(layer int, s Shape, p Pass) []Op { panic("TODO") }

// RecomputeOps are the forward kernels redone before a layer's backward.
func (m Model) RecomputeOps(layer int, s Shape, r Recompute) []Op { panic("TODO") }

// EmbeddingOps / HeadOps price the input embedding and the output layer
// (final norm, LM head, cross-entropy) on the first / last pipeline rank.
func (m Model) EmbeddingOps(s Shape, p Pass) []Op { panic("TODO") }
func (m Model) HeadOps(s Shape, p Pass) []Op      { panic("TODO") }

// ModelFLOPsPerToken is the training (fwd+bwd) FLOPs per token by the
// standard convention (6N + attention, no recompute); HardwareFLOPsPerToken
// adds recomputation.
func (m Model) ModelFLOPsPerToken(seq int) float64                 { panic("TODO") }
func (m Model) HardwareFLOPsPerToken(seq int, r Recompute) float64 { panic("TODO") }

// Device is the GPU description the compute-time model prices ops against;
// sim fills it from the topology catalog.
type Device struct {
	Name           string
	Peak           [8]float64 // FLOP/s indexed by Dtype
	HBMBandwidth   float64
	HBMBytes       float64
	SMs            int
	MatmulEffBF16  float64
	MatmulEffFP8   float64
	HBMEff         float64
	AttnEff        float64
	AttnBwdEff     float64
	KernelOverhead float64
}

// OpTime is the op's time in seconds on d at compute dtype dt.
func (d Device) OpTime(op Op, dt Dtype) float64 { panic("TODO") }

// MemoryInput describes one pipeline rank for the memory model.
type MemoryInput struct {
	Model         Model
	Shape         Shape
	Layers        int // transformer layers on this rank
	HasEmbedding  bool
	HasHead       bool
	PP, DP        int
	VirtualStages int
	Stage         int // this rank's pipeline stage, 0-based
	Schedule      string
	Microbatches  int // per step per pipeline
	Zero          int
	Optimizer     string
	MasterDtype   Dtype
	GradDtype     Dtype
	Recompute     Recompute
}

// Memory is a per-rank breakdown in bytes.
type Memory struct {
	Weights, Gradients, Optimizer, Activations, Buffers, Overhead, Total float64
}

func StageMemory(in MemoryInput) Memory { panic("TODO") }
