package workload

// Params is an exact parameter count.
type Params struct {
	Total     float64
	Active    float64 // per token (MoE: top-k + shared experts)
	Embedding float64 // input embedding and learned positions (+ output if untied)
	// Matmul counts the weight-matrix parameters one token multiplies with:
	// attention and MLP projections (routed experts: top-k only), routers and
	// the LM head (V·h even when tied). Embedding lookups, norms and biases
	// are excluded. ModelFLOPsPerToken is 6·Matmul plus attention.
	Matmul float64
}

// layerParams is one transformer layer's parameters.
type layerParams struct {
	attnMatmul float64 // projection weights
	attnOther  float64 // biases, q/k norms, MLA latent norms
	mlpMatmul  float64 // all experts (total)
	mlpActive  float64 // experts one token uses
	mlpOther   float64 // biases
	router     float64
	norms      float64 // the two per-layer norms
}

func (p layerParams) total() float64 {
	return p.attnMatmul + p.attnOther + p.mlpMatmul + p.mlpOther + p.router + p.norms
}

func (p layerParams) active() float64 {
	return p.attnMatmul + p.attnOther + p.mlpActive + p.mlpOther + p.router + p.norms
}

// attnParams counts one layer's attention parameters.
func (m Model) attnParams() (matmul, other float64) {
	h := float64(m.Hidden)
	if m.Attention == "mla" && m.MLA != nil {
		a := m.MLA
		nh := float64(m.Heads)
		qk := float64(a.NopeHeadDim + a.RopeHeadDim)
		if a.QLoRARank > 0 {
			ql := float64(a.QLoRARank)
			matmul += h*ql + ql*nh*qk // q down, q up
			other += m.normParams(a.QLoRARank)
		} else {
			matmul += h * nh * qk
		}
		kl := float64(a.KVLoRARank)
		matmul += h * (kl + float64(a.RopeHeadDim))           // kv down (+ shared rope key)
		matmul += kl * nh * float64(a.NopeHeadDim+a.VHeadDim) // kv up
		matmul += nh * float64(a.VHeadDim) * h                // output
		other += m.normParams(a.KVLoRARank)
		return matmul, other
	}
	d := float64(m.HeadDim)
	q, kv := float64(m.Heads)*d, float64(m.KVHeads)*d
	matmul = h*(q+2*kv) + q*h
	if m.Bias {
		other += q + 2*kv + h
	}
	if m.QKNorm {
		other += 2 * d // RMSNorm weights shared by all heads (Qwen3)
	}
	return matmul, other
}

// mlpParams counts one dense MLP of inner size f.
func (m Model) mlpParams(f int) (matmul, other float64) {
	h := float64(m.Hidden)
	matmul = h*float64(m.fc1Width(f)) + float64(f)*h
	if m.Bias {
		other = float64(m.fc1Width(f)) + h
	}
	return matmul, other
}

// layer counts layer (0-based) of m; a multi-token-prediction layer
// counts as the decoder layer it copies (mtpInputParams holds the rest).
func (m Model) layer(i int) layerParams {
	i = m.specLayer(i)
	var p layerParams
	p.attnMatmul, p.attnOther = m.attnParams()
	p.norms = 2 * m.normParams(m.Hidden)
	if !m.IsMoELayer(i) {
		p.mlpMatmul, p.mlpOther = m.mlpParams(m.FFN)
		p.mlpActive = p.mlpMatmul
		return p
	}
	e := m.MoE
	one, oneOther := m.mlpParams(e.ExpertFFN)
	p.mlpMatmul = float64(e.Experts+e.SharedExperts) * one
	p.mlpActive = float64(e.TopK+e.SharedExperts) * one
	p.mlpOther = float64(e.Experts+e.SharedExperts) * oneOther
	p.router = float64(m.Hidden) * float64(e.Experts)
	return p
}

// embeddingParams are the input table and learned positions; headParams the
// final norm and, when untied, the output projection.
func (m Model) embeddingParams() float64 {
	return float64(m.Vocab)*float64(m.Hidden) + float64(m.MaxPositions)*float64(m.Hidden)
}

func (m Model) headParams() float64 {
	p := m.normParams(m.Hidden)
	if !m.TiedEmbeddings {
		p += float64(m.Vocab) * float64(m.Hidden)
	}
	return p
}

// Params counts m's parameters exactly (call Fill first): embeddings,
// attention (GQA/MQA and MLA), MLPs or experts, routers, norms, biases where
// the architecture has them, and the output layer when untied.
func (m Model) Params() Params {
	var p Params
	lmHead := float64(m.Vocab) * float64(m.Hidden)
	// layers come in at most two kinds (dense, MoE); count each kind once.
	nDense := m.Layers
	if m.MoE != nil {
		nDense = min(max(m.MoE.DenseLayers, 0), m.Layers)
	}
	for _, g := range []struct {
		n     int
		layer int
	}{{nDense, 0}, {m.Layers - nDense, m.Layers - 1}} {
		if g.n <= 0 {
			continue
		}
		lp := m.layer(g.layer)
		n := float64(g.n)
		p.Total += n * lp.total()
		p.Active += n * lp.active()
		p.Matmul += n * (lp.attnMatmul + lp.mlpActive + lp.router)
	}
	if n := float64(max(m.MTPLayers, 0)); n > 0 && m.Layers > 0 {
		// each module: one layer of the last layer's kind, its input
		// norms and projection, and a pass through the shared head
		lp := m.layer(m.Layers - 1)
		in := m.mtpInputParams()
		p.Total += n * (lp.total() + in)
		p.Active += n * (lp.active() + in)
		p.Matmul += n * (lp.attnMatmul + lp.mlpActive + lp.router + m.mtpProjParams() + lmHead)
	}
	edge := m.embeddingParams() + m.headParams()
	p.Total += edge
	p.Active += edge
	p.Matmul += lmHead
	p.Embedding = m.embeddingParams()
	if !m.TiedEmbeddings {
		p.Embedding += lmHead
	}
	return p
}

// mtpProjParams is one multi-token-prediction module's eh_proj weight:
// the concatenated [embedding; hidden] (2h) projected back to h
// (DeepSeek-V3 §2.2's M_k ∈ R^{d×2d}).
func (m Model) mtpProjParams() float64 { return 2 * float64(m.Hidden) * float64(m.Hidden) }

// mtpInputParams is what a multi-token-prediction module adds to its
// transformer layer: eh_proj (with a bias where the linears have one) and
// its three norms — enorm and hnorm on the two inputs, and the module's
// final norm before the shared output head (Megatron-Core
// MultiTokenPredictionLayer).
func (m Model) mtpInputParams() float64 {
	p := m.mtpProjParams() + 3*m.normParams(m.Hidden)
	if m.Bias {
		p += float64(m.Hidden)
	}
	return p
}

// LayerParams splits layer l's parameters (whole model, before any
// parallel split) into dense ones — attention, norms, a dense MLP, the
// router and shared experts — and routed experts (all of them). A layer
// outside the model has none.
func (m Model) LayerParams(l int) (dense, expert float64) {
	if l < 0 || l >= m.StackLayers() {
		return 0, 0
	}
	p := m.layer(l)
	dense = p.attnMatmul + p.attnOther + p.norms + p.router
	if m.IsMTPLayer(l) {
		dense += m.mtpInputParams()
	}
	if !m.IsMoELayer(l) {
		return dense + p.mlpMatmul + p.mlpOther, 0
	}
	e := m.MoE
	one, other := m.mlpParams(e.ExpertFFN)
	shared := float64(e.SharedExperts) * (one + other)
	return dense + shared, p.mlpMatmul + p.mlpOther - shared
}
