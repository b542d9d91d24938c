package workload

// OffloadModules is a set of modules whose input activation fine-grained
// activation offloading moves to host memory after the module's forward
// and back before its backward (Megatron-Core --fine-grained-activation-
// offloading --offload-modules; docs/user-guide/features/
// fine_grained_activation_offloading.md at 9c5258f109). The zero value
// offloads nothing.
type OffloadModules uint8

const (
	OffloadAttnNorm  OffloadModules = 1 << iota // the attention norm's input (the layer input)
	OffloadQKVLinear                            // the QKV (MLA: down) projections' input
	OffloadCoreAttn                             // the attention core's query, key and value
	OffloadAttnProj                             // the output projection's input (the attention output)
	OffloadMLPNorm                              // the MLP norm's input
	OffloadExpertFC1                            // the routed experts' first GEMM's input
	OffloadMoEAct                               // the routed experts' activation input
)

// OffloadModuleNames are the module names in OffloadModules bit order
// (Megatron's spellings).
var OffloadModuleNames = []string{"attn_norm", "qkv_linear", "core_attn", "attn_proj", "mlp_norm", "expert_fc1", "moe_act"}

// OffloadBytes is what the offloaded modules' inputs of one micro-batch of
// layer take, in bytes per GPU: the part of LayerActivationBytes that
// leaves the GPU between the layer's forward and its backward. A module
// whose input the recompute policy does not keep has nothing to offload
// (under full recompute only the layer input is kept; recomputing MLA's up
// projections drops the attention core's inputs). Megatron skips tensors
// under 1M elements (min_offloaded_tensor_size); simtrain offloads them too.
func (m Model) OffloadBytes(layer int, s Shape, r Recompute) float64 {
	o := s.Offload
	if o == 0 || layer < 0 || layer >= m.StackLayers() {
		return 0
	}
	s = s.forLayer(m, layer)
	sh := newSplit(m, s)
	a, h := sh.act, float64(m.Hidden)
	T, Tsp := sh.tok, sh.tokSP
	g := s.savedGEMMInputBytes(a)
	var b float64
	if o&OffloadAttnNorm != 0 {
		b += Tsp * h * a
	}
	if r == RecomputeFull || r == RecomputeSelectiveOp || r == RecomputeSaveDots {
		return b
	}
	normKept := !(r == RecomputeSelective && s.RecomputeModules.has(RecomputeLayerNorm))
	if o&OffloadQKVLinear != 0 && normKept {
		b += Tsp * h * g
	}
	d := sh.d
	if o&OffloadCoreAttn != 0 && !(m.Attention == "mla" && m.MLA != nil && r == RecomputeSelective && s.RecomputeModules.has(RecomputeMLAUpProj)) {
		b += T*float64(sh.hl+sh.kva)*float64(d.qk)*a + T*float64(sh.kva)*float64(d.v)*a
	}
	if o&OffloadAttnProj != 0 {
		b += T * float64(sh.hl) * float64(d.v) * a
	}
	if o&OffloadMLPNorm != 0 {
		b += Tsp * h * a
	}
	if m.IsMoELayer(layer) {
		e := m.MoE
		f := cdiv(e.ExpertFFN, sh.etp)
		te := sh.expertTokens()
		if o&OffloadExpertFC1 != 0 {
			b += te * h * g
		}
		if o&OffloadMoEAct != 0 {
			b += te * float64(m.fc1Width(f)) * a
		}
	}
	return b
}
