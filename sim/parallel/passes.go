package parallel

import (
	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/workload"
)

// A chunk pass is one micro-batch's forward or backward through one chunk.
// It is emitted one unit at a time — its start (the pipeline receive and the
// embedding or output layer), then each block of each layer, then its end
// (the output layer or embedding and the pipeline send) — so that the
// builder can issue a pass alone (run) or two passes alternately
// (runOverlapped: a forward and a backward of different micro-batches,
// DualPipe's overlapped chunks), where each pass's communication runs
// under the other's computation. Issued alone, a pass emits its units in
// sequence: the task graph of a layer-by-layer emitter.
//
// A layer is a list of block emitters chosen once per layer from the
// recipe (layerBlocks): the attention (plain, context-parallel or with
// TP-paired GEMMs), the dense MLP or the MoE router, experts and combine,
// and in the backward the recomputation by policy and the attention
// backward by context-parallel implementation.
type chunkPass struct {
	ch      Chunk
	mb      int
	fwd     bool
	splitW  bool // backward for the input only (zero-bubble); its weights follow in wgradChunk
	reduce  bool // this backward completes the chunk's weight gradients for the step
	state   uint8
	recvd   bool // the pass's input has been received (receive)
	l       int  // layer being emitted
	inLayer bool // l's blocks have started
	blocks  []blockEmitter
	lp      layerPass
	// prefetched is the ZeRO-3 backward parameter gather already issued
	// for the next unit of this backward (bwdPrefetch), -1 when none. It
	// is builder state a layer's emission moves (stateInts), so layer
	// copying relabels it.
	prefetched int32
}

const (
	passStart = iota
	passLayers
	passEnd
	passDone
)

// layerPass is the state one layer's block emitters share: the task whose
// end makes the block's input available (in, replaced by each block with
// its output) and the task the layer's parameters wait for (gather).
type layerPass struct {
	l, mb, c int
	in       int32
	gather   int32
	splitW   bool
	reduce   bool
}

// blockEmitter emits one block of a layer pass.
type blockEmitter func(b *builder, p *layerPass)

// layerPlan is the block emitters of one layer: forward, backward, and
// backward for the input only.
type layerPlan struct {
	fwd, bwd, bwdInput []blockEmitter
}

// planLayers chooses every layer's block emitters from the recipe.
func (b *builder) planLayers() {
	cfg := b.cfg
	b.plans = resize(b.plans, cfg.Model.StackLayers())
	clear(b.plans)
	for _, ch := range cfg.Chunks[b.stage] {
		for l := ch.FirstLayer; l < ch.FirstLayer+ch.Layers && l < len(b.plans); l++ {
			if b.plans[l] == nil {
				b.plans[l] = b.layerBlocks(l)
			}
		}
	}
}

// planKey is what a layer's block emitters depend on besides the step's
// configuration: whether its MLP is MoE and how it is recomputed.
type planKey struct {
	moe  bool
	mode workload.Recompute
}

// layerBlocks returns layer l's block emitters, made once per build for
// each planKey (the builder keeps them in plansByKey): the layers of a
// model share a handful, and making them per layer and stage was four
// allocations a layer.
func (b *builder) layerBlocks(l int) *layerPlan {
	cfg := b.cfg
	moe := b.moe(l)
	mode := cfg.Recompute
	if mode == workload.RecomputeFull && l < len(b.recomputed) && !b.recomputed[l] {
		mode = workload.RecomputeNone // recompute_every: this layer keeps its activations
	}
	k := planKey{moe, mode}
	for _, e := range b.plansByKey {
		if e.key == k {
			return e.plan
		}
	}
	p := b.newLayerPlan(l, moe, mode)
	b.plansByKey = append(b.plansByKey, keyedPlan{k, p})
	return p
}

// keyedPlan is a layer plan with its planKey.
type keyedPlan struct {
	key  planKey
	plan *layerPlan
}

// newLayerPlan makes the block emitters of layer l, MoE or not, recomputed
// by mode.
func (b *builder) newLayerPlan(l int, moe bool, mode workload.Recompute) *layerPlan {
	cfg := b.cfg
	var p layerPlan
	switch {
	case b.tpPaired(l):
		p.fwd = []blockEmitter{fwdPaired}
	case moe:
		p.fwd = []blockEmitter{fwdAttn, fwdRouter, fwdExperts, fwdCombine}
	default:
		p.fwd = []blockEmitter{fwdAttn, fwdMLP}
	}
	var rec []blockEmitter
	switch mode {
	case workload.RecomputeFull:
		rec = []blockEmitter{recomputeFull}
	case workload.RecomputeSelectiveOp:
		rec = []blockEmitter{recomputeSelectiveOp}
	case workload.RecomputeSaveDots:
		rec = []blockEmitter{recomputeSaveDots}
	case workload.RecomputeSelective:
		rec = []blockEmitter{recomputeSelective}
	}
	attn := bwdAttn
	if cfg.Layout.CP > 1 {
		switch cfg.Shape.CPImpl {
		case workload.CPPyTorch:
			attn = bwdAttnCPPyTorch
		case workload.CPP2P:
			attn = bwdAttnCPRing
		default:
			attn = bwdAttnCPGather
		}
	}
	p.bwdInput = append(p.bwdInput, rec...)
	if moe {
		p.bwdInput = append(p.bwdInput, bwdCombine, bwdExperts, bwdRouter, attn)
	} else {
		p.bwdInput = append(p.bwdInput, bwdMLP, attn)
	}
	p.bwd = p.bwdInput
	if b.tpPaired(l) {
		p.bwd = append(append([]blockEmitter(nil), rec...), bwdPaired)
	}
	return &p
}

// run emits pass p alone.
func (b *builder) run(p *chunkPass) {
	if b.copying && p.ch.Layers >= copyMinLayers {
		b.runCopying(p) // layercopy.go
		return
	}
	for b.emitNext(p) {
	}
}

// runOverlapped emits a forward pass p and a backward pass q of another
// micro-batch together, as DualPipe runs an overlapped pair of chunks
// (DeepSeek-V3 technical report §3.2.1, Fig. 4: each chunk's attention,
// dispatch, MLP and combine rearranged so that the all-to-all and
// pipeline communication of one runs under the computation of the other).
// Both inputs are received before either computes, and both outputs are
// sent once both are done (the reference implementation's
// _forward_backward_chunk). In between, blocks are issued from one pass
// until a block issues communication its pass must wait for; then the
// other pass continues, so that the communication runs under its
// computation. The backward starts: its combine all-to-all then runs
// under the forward's attention, the forward's dispatch under the
// backward's experts, and so on.
func (b *builder) runOverlapped(p, q *chunkPass) {
	b.receive(p)
	b.receive(q)
	b.pairWait = append(b.pairWait[:0], p.lp.in, q.lp.in)
	cur, other := q, p
	for cur.state < passEnd || other.state < passEnd {
		if cur.state >= passEnd {
			cur, other = other, cur
			continue
		}
		n := len(b.prog.Tasks)
		b.emitNext(cur)
		if b.issuedComm(n) {
			cur, other = other, cur
		}
	}
	b.run(p)
	b.run(q)
}

// issuedComm reports whether the tasks from index n on include a
// collective.
func (b *builder) issuedComm(n int) bool {
	for _, t := range b.prog.Tasks[n:] {
		if t.Kind.IsComm() && t.Kind != KindSend && t.Kind != KindRecv {
			return true
		}
	}
	return false
}

// newPass prepares a pass of micro-batch mb through ch.
func (b *builder) newPass(p *chunkPass, ch Chunk, mb int, fwd, splitW, reduce bool) *chunkPass {
	*p = chunkPass{ch: ch, mb: mb, fwd: fwd, splitW: splitW, reduce: reduce, prefetched: -1}
	return p
}

// emitNext emits the next unit of p and reports whether there was one.
func (b *builder) emitNext(p *chunkPass) bool {
	ch := p.ch
	switch p.state {
	case passStart:
		if p.fwd {
			b.forwardStart(p)
			p.l = ch.FirstLayer
		} else {
			b.backwardStart(p)
			p.l = ch.FirstLayer + ch.Layers - 1
		}
		p.state = passLayers
		if ch.Layers <= 0 {
			p.state = passEnd
		}
		return true
	case passLayers:
		if !p.inLayer {
			b.layerStart(p)
		}
		emit := p.blocks[0]
		p.blocks = p.blocks[1:]
		emit(b, &p.lp)
		if len(p.blocks) == 0 {
			p.inLayer = false
			if p.fwd {
				b.offload(ch, p.l, p.mb, p.lp.in)
				p.l++
			} else {
				p.l--
			}
			if p.l < ch.FirstLayer || p.l >= ch.FirstLayer+ch.Layers {
				p.state = passEnd
			}
		}
		return true
	case passEnd:
		if p.fwd {
			b.forwardEnd(p)
		} else {
			b.backwardEnd(p)
		}
		p.state = passDone
		return true
	}
	return false
}

// layerStart begins layer p.l: in the forward the unpadded attention's host
// stall and the parameters' gather, in the backward the reloads of
// offloaded activations and the gather.
func (b *builder) layerStart(p *chunkPass) {
	l, c := p.l, p.ch.Index
	in := p.lp.in
	p.lp = layerPass{l: l, mb: p.mb, c: c, in: in, splitW: p.splitW, reduce: p.reduce}
	plan := b.plans[l]
	if p.fwd {
		p.lp.in = b.unpadSync(l, p.mb, c, in)
		p.lp.gather = b.gatherLayer(l, true)
		if b.cfg.Zero == 3 {
			d, _ := b.layerParams(l)
			p.lp.gather = b.fsdpCopyOut(p.lp.gather, d, KindForward, l, p.mb, c)
		}
		p.blocks = plan.fwd
	} else {
		// the previous layer's offloaded inputs come back while this
		// one's backward runs (Megatron reloads one group ahead)
		b.reload = b.reloadLayer(l, p.mb, c, in)
		if l > p.ch.FirstLayer {
			b.reloadLayer(l-1, p.mb, c, in)
		}
		p.lp.gather = b.bwdGather(p, l)
		b.bwdPrefetch(p, l-1)
		if b.cfg.Zero == 3 {
			d, _ := b.layerParams(l)
			p.lp.gather = b.fsdpCopyOut(p.lp.gather, d, KindBackward, l, p.mb, c)
		}
		p.blocks = plan.bwd
		if p.splitW {
			p.blocks = plan.bwdInput
		}
	}
	p.inLayer = true
}

// receive emits, once, the receive of the pass's input: the previous
// model chunk's activation for a forward, the next one's gradient for a
// backward (none at the ends of the model); p.lp.in is then the task after
// which it is here.
func (b *builder) receive(p *chunkPass) {
	if p.recvd {
		return
	}
	p.recvd = true
	ch, mb := p.ch, p.mb
	p.lp.in = -1
	switch {
	case p.fwd && !b.place.First(ch.Stage, ch.Index):
		p.lp.in = b.p2pGather(b.recv(false, mb, ch), "pp_gather_act", mb, ch.Index)
	case !p.fwd && !b.place.Last(ch.Stage, ch.Index):
		p.lp.in = b.p2pGather(b.recv(true, mb, ch), "pp_gather_grad", mb, ch.Index)
	}
}

// forwardStart receives the chunk's input (the previous model chunk's
// output) and runs the embedding on the first model chunk.
func (b *builder) forwardStart(p *chunkPass) {
	b.receive(p)
	ch, mb, in := p.ch, p.mb, p.lp.in
	// DeepSpeed's pipeline engine: RecvActivation, LoadMicroBatch (first
	// and last stage), then ForwardPass reads the received partition's
	// metadata (builder.go, dsLoadSyncs).
	n := 0
	if ch.Embedding || ch.Head {
		n += dsLoadSyncs
	}
	if b.pipeTP() && !b.place.First(ch.Stage, ch.Index) {
		n++
	}
	in = b.pipeSync("pipe_engine_sync", n, mb, ch.Index, in)
	if ch.Embedding {
		g := b.extraCopyOut(b.gatherExtra(false, true), false, KindForward, mb, ch.Index)
		e := b.compute(KindForward, "embedding_fwd", -1, mb, ch.Index, b.cache.embHead(false, passFwd), in, g)
		in = e
		if b.cfg.Layout.TP > 1 && !b.cfg.TPEmbeddingReplicated {
			in = b.tpReduce("tp_embedding", -1, mb, ch.Index, e)
		}
		b.releaseExtra(e)
	}
	p.lp.in = in
}

// forwardEnd runs the output layer on the last model chunk and sends the
// chunk's output on.
func (b *builder) forwardEnd(p *chunkPass) {
	ch, mb, in := p.ch, p.mb, p.lp.in
	if ch.Head {
		if b.cfg.Shape.SP && b.cfg.Layout.TP > 1 {
			in = b.tpComm(collectives.AllGather, "tp_head_gather", -1, mb, ch.Index, in)
		}
		g := b.extraCopyOut(b.gatherExtra(true, true), true, KindForward, mb, ch.Index)
		h := b.compute(KindForward, "head_fwd", -1, mb, ch.Index, b.cache.embHead(true, passFwd), in, g)
		b.releaseExtra(h)
		in = h
		if b.cfg.TPLogitsReplicated && b.cfg.Layout.TP > 1 {
			// The gather runs between the LM head GEMM and the loss, both
			// inside head_fwd; the rank waits for it either way, so it is
			// placed after the output layer's forward (StepConfig
			// .TPLogitsReplicated).
			in = b.comm(GroupTP, collectives.AllGather, b.logitsBytes(), "tp_logits_gather", -1, mb, ch.Index, h)
		}
	}
	if !b.place.Last(ch.Stage, ch.Index) {
		if b.pipeTP() {
			in = b.pipeSync("pipe_engine_sync", 1, mb, ch.Index, in) // to_meta of the output
		}
		b.send(false, mb, ch, in)
	}
}

// backwardStart receives the output gradient (from the next model chunk)
// and runs the output layer's backward on the last model chunk. With
// splitW it emits only input-gradient work; wgradChunk emits the rest.
func (b *builder) backwardStart(p *chunkPass) {
	b.receive(p)
	ch, mb, splitW, in := p.ch, p.mb, p.splitW, p.lp.in
	if b.pipeTP() && !b.place.Last(ch.Stage, ch.Index) {
		// DeepSpeed's BackwardPass: from_meta of the saved output and of
		// the received gradient, then the saved output all-gathered again
		// over TP (builder.go, dsLoadSyncs)
		in = b.pipeSync("pipe_engine_sync", 2, mb, ch.Index, in)
		in = b.comm(GroupTP, collectives.AllGather, b.actBytes(), "pp_regather_out", -1, mb, ch.Index, in)
	}
	if ch.Head {
		in = b.lossReadback(mb, ch.Index, in)
		g := b.gatherExtra(true, false)
		b.bwdPrefetch(p, ch.FirstLayer+ch.Layers-1)
		g = b.extraCopyOut(g, true, KindBackward, mb, ch.Index)
		h := b.compute(KindBackward, "head_bwd", -1, mb, ch.Index, b.bwdPart(b.cache.embHead(true, passBwd), splitW), in, g)
		in = h
		if b.cfg.Layout.TP > 1 {
			in = b.tpReduce("tp_head_bwd", -1, mb, ch.Index, h)
		}
		if !splitW {
			b.gradReady(b.headParams(), 0, h, p.reduce)
		}
		b.releaseExtra(h)
	}
	p.lp.in = in
}

// backwardEnd runs the embedding's backward on the first model chunk and
// sends the input gradient back.
func (b *builder) backwardEnd(p *chunkPass) {
	ch, mb, in := p.ch, p.mb, p.lp.in
	if ch.Embedding {
		if b.cfg.TPEmbeddingReplicated && b.cfg.Layout.TP > 1 && b.cfg.Shape.SP {
			in = b.tpComm(collectives.AllGather, "tp_embedding_bwd_gather", -1, mb, ch.Index, in)
		}
		g := b.extraCopyOut(b.bwdGather(p, -1), false, KindBackward, mb, ch.Index)
		e := b.compute(KindBackward, "embedding_bwd", -1, mb, ch.Index, b.bwdPart(b.cache.embHead(false, passBwd), p.splitW), in, g)
		if !p.splitW {
			b.gradReady(b.embParams(), 0, e, p.reduce)
		}
		b.releaseExtra(e)
		in = e
	}
	if !b.place.First(ch.Stage, ch.Index) {
		if b.pipeTP() {
			in = b.pipeSync("pipe_engine_sync", 1, mb, ch.Index, in) // to_meta of the input gradient
		}
		b.send(true, mb, ch, in)
	}
	if ch.Head {
		b.lossReadbackAfter(mb, ch.Index)
	}
}

// Forward blocks.

// fwdPaired is a dense layer whose TP collectives are paired with its
// GEMMs (tpPairedLayer), as one block.
func fwdPaired(b *builder, p *layerPass) {
	p.in = b.tpPairedLayer(passFwd, p.l, p.mb, p.c, p.in, p.gather)
}

// fwdAttn is the attention: with sequence parallelism after the sequence
// all-gather, then the TP reduction and the MLP's all-gather.
func fwdAttn(b *builder, p *layerPass) {
	cfg := b.cfg
	l, mb, c, in := p.l, p.mb, p.c, p.in
	tp, sp := cfg.Layout.TP > 1, cfg.Shape.SP
	if tp && sp {
		in = b.tpComm(collectives.AllGather, "tp_attn_gather", l, mb, c, in)
	}
	var a int32
	if cfg.Layout.CP > 1 {
		a = b.cpAttention(passFwd, l, mb, c, in, p.gather)
	} else {
		a = b.compute(KindForward, "attn_fwd", l, mb, c,
			b.cache.block(l, passFwd, workload.BlockAttnPre, workload.BlockAttnCore, workload.BlockAttnPost), in, p.gather)
	}
	x := a
	if tp {
		x = b.tpReduce("tp_attn", l, mb, c, a)
	}
	x = b.layerSync(l, mb, c, x)
	if tp && sp && b.mlpTP(l) {
		x = b.tpComm(collectives.AllGather, "tp_mlp_gather", l, mb, c, x)
	}
	p.in = x
}

// fwdMLP is a dense MLP.
func fwdMLP(b *builder, p *layerPass) {
	o := b.compute(KindForward, "mlp_fwd", p.l, p.mb, p.c, b.cache.block(p.l, passFwd, workload.BlockMLP), p.in)
	b.mlpForwardEnd(p, o)
}

// mlpForwardEnd closes a layer's forward after its MLP part ended at o.
func (b *builder) mlpForwardEnd(p *layerPass, o int32) {
	b.releaseLayer(o)
	if b.cfg.Layout.TP > 1 && b.mlpTP(p.l) {
		p.in = b.tpReduce("tp_mlp", p.l, p.mb, p.c, o)
		return
	}
	p.in = o
}

// fwdRouter, fwdExperts and fwdCombine are an MoE layer's MLP part in
// three blocks, split where the dispatch and the combine all-to-all run.
func fwdRouter(b *builder, p *layerPass) { p.in = b.moeRouter(passFwd, p.l, p.mb, p.c, p.in) }

func fwdExperts(b *builder, p *layerPass) { p.in = b.moeExperts(passFwd, p.l, p.mb, p.c, p.in) }

func fwdCombine(b *builder, p *layerPass) {
	b.mlpForwardEnd(p, b.moeCombine(passFwd, p.l, p.mb, p.c, p.in))
}

// moeForward emits an MoE block's forward (pass passFwd) or its recomputed
// forward (passRec, full recomputation) after task x: router, the dropless
// dispatch's host stall (StepConfig.MoEHostSync), the dispatch all-to-all,
// the experts and the combine all-to-all; it returns the combine's task. A
// recomputed MoE layer redoes its dispatch and combine, as Megatron-Core's
// checkpointed TransformerLayer does, and so its host synchronisation.
func (b *builder) moeForward(pass, l, mb, c int, x int32, deps ...int32) int32 {
	d := b.moeRouter(pass, l, mb, c, x, deps...)
	return b.moeCombine(pass, l, mb, c, b.moeExperts(pass, l, mb, c, d))
}

func moeNames(pass int) (Kind, string) {
	if pass == passRec {
		return KindRecompute, "_recompute"
	}
	return KindForward, "_fwd"
}

// moeRouter is the router, the host stall and the dispatch all-to-all; it
// returns the task the experts wait for.
func (b *builder) moeRouter(pass, l, mb, c int, x int32, deps ...int32) int32 {
	cfg := b.cfg
	kind, sfx := moeNames(pass)
	blocks := []workload.Block{workload.BlockRouter}
	dispatch := "ep_dispatch"
	if pass == passRec {
		blocks = []workload.Block{workload.BlockMLP, workload.BlockRouter}
		dispatch = "ep_dispatch_recompute"
	}
	r := b.compute(kind, "router"+sfx, l, mb, c, b.cache.block(l, pass, blocks...), append(deps, x)...)
	if cfg.MoEHostSync > 0 {
		r = b.hostSync("moe_host_sync", cfg.MoEHostSync, l, mb, c, r)
	}
	d := r
	if cfg.Layout.EP > 1 {
		d = b.epComm(dispatch, l, mb, c, r)
	}
	return d
}

// moeExperts is the experts between their expert-TP collectives, and the
// combine all-to-all; it returns the task the combine waits for.
func (b *builder) moeExperts(pass, l, mb, c int, d int32) int32 {
	kind, sfx := moeNames(pass)
	gather, scatter, combine := "etp_gather", "etp_scatter", "ep_combine"
	if pass == passRec {
		gather, scatter, combine = "etp_gather_recompute", "etp_scatter_recompute", "ep_combine_recompute"
	}
	d = b.etpComm(collectives.AllGather, gather, l, mb, c, d)
	e := b.compute(kind, "experts"+sfx, l, mb, c, b.cache.block(l, pass, workload.BlockExperts), d)
	e = b.etpComm(collectives.ReduceScatter, scatter, l, mb, c, e)
	cm := e
	if b.cfg.Layout.EP > 1 {
		cm = b.epComm(combine, l, mb, c, e)
	}
	return cm
}

// moeCombine is the weighted sum of the experts' outputs.
func (b *builder) moeCombine(pass, l, mb, c int, cm int32) int32 {
	kind, sfx := moeNames(pass)
	return b.compute(kind, "combine"+sfx, l, mb, c, b.cache.block(l, pass, workload.BlockCombine), cm)
}

// Backward blocks. Recomputation runs when the layer's output gradient is
// ready. With sequence parallelism the recomputed forward redoes the
// all-gather of the sequence-sharded input before the attention and before
// the MLP (all-gathers are not saved). The MLP's closing reduce-scatter
// (all-reduce without sequence parallelism) is redone only under a
// reentrant checkpoint (StepConfig.RecomputeToOutput: Megatron, Transformer
// Engine, DeepSpeed), which reruns the layer to its output and
// backpropagates from there; PyTorch's non-reentrant checkpoint stops
// before it (its output is not needed by the backward).

// recomputeInput is what a recomputed attention starts from: the layer's
// input after an unpadded path's host stall (the recomputed attention
// unpads again), and with sequence parallelism its all-gather.
func (b *builder) recomputeInput(p *layerPass) (in, attnIn int32) {
	in = b.unpadSync(p.l, p.mb, p.c, p.in)
	attnIn = in
	if b.cfg.Layout.TP > 1 && b.cfg.Shape.SP {
		attnIn = b.tpComm(collectives.AllGather, "tp_attn_recompute_gather", p.l, p.mb, p.c, in)
	}
	return in, attnIn
}

// recomputeFull reruns the layer's forward (full recomputation).
func recomputeFull(b *builder, p *layerPass) {
	cfg := b.cfg
	l, mb, c := p.l, p.mb, p.c
	tp, sp := cfg.Layout.TP > 1, cfg.Shape.SP
	in, ain := b.recomputeInput(p)
	var r int32
	if cfg.Layout.CP > 1 {
		r = b.cpAttention(passRec, l, mb, c, ain, p.gather)
	} else {
		rc := b.cache.block(l, passRec, workload.BlockAttnPre, workload.BlockAttnCore, workload.BlockAttnPost)
		r = b.compute(KindRecompute, "attn_recompute", l, mb, c, rc, ain, p.gather)
	}
	if tp {
		r = b.tpReduce("tp_attn_recompute", l, mb, c, r)
	}
	r = b.layerSync(l, mb, c, r)
	if tp && sp && b.mlpTP(l) {
		r = b.tpComm(collectives.AllGather, "tp_mlp_recompute_gather", l, mb, c, r)
	}
	var o int32
	if b.moe(l) {
		o = b.moeForward(passRec, l, mb, c, r, in)
	} else {
		rm := b.cache.block(l, passRec, workload.BlockMLP, workload.BlockRouter, workload.BlockExperts, workload.BlockCombine)
		o = b.compute(KindRecompute, "mlp_recompute", l, mb, c, rm, r, in)
	}
	if tp && cfg.RecomputeToOutput && b.mlpTP(l) {
		o = b.tpReduce("tp_mlp_recompute", l, mb, c, o)
	}
	p.in = o
}

// recomputeSelectiveOp is per-op selective checkpointing
// (workload.RecomputeSelectiveOp): it saves the reduce-scatter outputs, so
// the MLP's input is available without the attention part; the
// sequence-parallel all-gathers that feed the recomputed projections are
// redone. Without SP the attention's all-reduce (not saved) is redone after
// the recomputed output projection.
func recomputeSelectiveOp(b *builder, p *layerPass) {
	cfg := b.cfg
	l, mb, c := p.l, p.mb, p.c
	tp, sp := cfg.Layout.TP > 1, cfg.Shape.SP
	in, ain := b.recomputeInput(p)
	rc := b.cache.block(l, passRec, workload.BlockAttnPre, workload.BlockAttnCore, workload.BlockAttnPost)
	r := b.compute(KindRecompute, "attn_recompute", l, mb, c, rc, ain, p.gather)
	mlpIn := in
	switch {
	case tp && sp && !b.mlpTP(l):
		// folded MoE layer: the router takes the saved
		// sequence-sharded input as it is
	case tp && sp:
		mlpIn = b.tpComm(collectives.AllGather, "tp_mlp_recompute_gather", l, mb, c, in)
	case tp:
		mlpIn = b.tpComm(collectives.AllReduce, "tp_attn_recompute", l, mb, c, r)
	}
	rm := b.cache.block(l, passRec, workload.BlockMLP, workload.BlockRouter, workload.BlockExperts, workload.BlockCombine)
	p.in = b.compute(KindRecompute, "mlp_recompute", l, mb, c, rm, r, mlpIn, in)
}

// recomputeSaveDots reruns the memory-bound kernels of the save-dots
// policy (workload.RecomputeSaveDots) as one task before the layer's
// backward: every projection output, and the attention output projection's
// TP-reduced output, is kept, so no GEMM and no collective is rerun.
func recomputeSaveDots(b *builder, p *layerPass) {
	l := p.l
	rc := b.cache.block(l, passRec, workload.BlockAttnPre, workload.BlockAttnCore, workload.BlockAttnPost,
		workload.BlockMLP, workload.BlockRouter, workload.BlockExperts, workload.BlockCombine)
	if rc.dur > 0 {
		p.in = b.compute(KindRecompute, "elementwise_recompute", l, p.mb, p.c, rc, p.in, p.gather)
	}
}

// recomputeSelective recomputes the attention core (Korthikanti et al.
// 2022) or Megatron's recompute modules.
func recomputeSelective(b *builder, p *layerPass) {
	l := p.l
	rc := b.cache.block(l, passRec, workload.BlockAttnPre, workload.BlockAttnCore, workload.BlockAttnPost,
		workload.BlockMLP, workload.BlockRouter, workload.BlockExperts, workload.BlockCombine)
	if rc.dur > 0 {
		name := "attn_core_recompute"
		if m := b.cfg.Shape.RecomputeModules; m != 0 && m != workload.RecomputeCoreAttn {
			name = "selective_recompute" // Megatron's recompute modules (norms, MoE activation)
		}
		p.in = b.compute(KindRecompute, name, l, p.mb, p.c, rc, p.in, p.gather)
	}
}

// bwdPaired is a dense layer's backward with its TP collectives paired
// with its GEMMs (tpPairedLayer), as one block.
func bwdPaired(b *builder, p *layerPass) {
	p.in = b.tpPairedLayer(passBwd, p.l, p.mb, p.c, p.in, p.gather, p.reduce)
}

// mlpBackwardStart is the sequence all-gather of the output gradient
// before an MLP part's backward.
func (b *builder) mlpBackwardStart(p *layerPass) int32 {
	if b.cfg.Layout.TP > 1 && b.cfg.Shape.SP && b.mlpTP(p.l) {
		return b.tpComm(collectives.AllGather, "tp_mlp_bwd_gather", p.l, p.mb, p.c, p.in)
	}
	return p.in
}

// mlpBackwardEnd is the TP reduction after an MLP part's backward ended
// at x (unless reduced: tpAsyncBackward issued it), and the sequence
// all-gather before the attention's.
func (b *builder) mlpBackwardEnd(p *layerPass, x int32, reduced ...bool) {
	if b.cfg.Layout.TP > 1 {
		if b.mlpTP(p.l) && (len(reduced) == 0 || !reduced[0]) {
			x = b.tpReduce("tp_mlp_bwd", p.l, p.mb, p.c, x)
		}
		if b.cfg.Shape.SP {
			x = b.tpComm(collectives.AllGather, "tp_attn_bwd_gather", p.l, p.mb, p.c, x)
		}
	}
	p.in = x
}

// bwdMLP is a dense MLP's backward.
func bwdMLP(b *builder, p *layerPass) {
	in := b.mlpBackwardStart(p)
	if b.tpAsync(p) && b.mlpTP(p.l) {
		if x, _, ok := b.tpAsyncBackward(mlpAsync, p, in, workload.BlockMLP); ok {
			b.mlpBackwardEnd(p, x, true)
			return
		}
	}
	x := b.compute(KindBackward, "mlp_bwd", p.l, p.mb, p.c, b.bwdPart(b.cache.block(p.l, passBwd, workload.BlockMLP), p.splitW), in, p.gather)
	b.mlpBackwardEnd(p, x)
}

// bwdCombine, bwdExperts and bwdRouter are an MoE layer's MLP backward in
// three blocks, split where the combine's and the dispatch's backward
// all-to-alls run. The backward of the expert-TP reduce-scatter is an
// all-gather of the output gradients, and the other way round.
func bwdCombine(b *builder, p *layerPass) {
	in := b.mlpBackwardStart(p)
	cb := b.compute(KindBackward, "combine_bwd", p.l, p.mb, p.c, b.bwdPart(b.cache.block(p.l, passBwd, workload.BlockCombine), p.splitW), in, p.gather)
	d := cb
	if b.cfg.Layout.EP > 1 {
		d = b.epComm("ep_combine_bwd", p.l, p.mb, p.c, cb)
	}
	p.in = d
}

func bwdExperts(b *builder, p *layerPass) {
	l, mb, c := p.l, p.mb, p.c
	d := b.etpComm(collectives.AllGather, "etp_bwd_gather", l, mb, c, p.in)
	e := b.compute(KindBackward, "experts_bwd", l, mb, c, b.bwdPart(b.cache.block(l, passBwd, workload.BlockExperts), p.splitW), d)
	e = b.etpComm(collectives.ReduceScatter, "etp_bwd_scatter", l, mb, c, e)
	g := e
	if b.cfg.Layout.EP > 1 {
		g = b.epComm("ep_dispatch_bwd", l, mb, c, e)
	}
	p.in = g
}

func bwdRouter(b *builder, p *layerPass) {
	x := b.compute(KindBackward, "router_bwd", p.l, p.mb, p.c, b.bwdPart(b.cache.block(p.l, passBwd, workload.BlockRouter), p.splitW), p.in)
	b.mlpBackwardEnd(p, x)
}

// bwdAttn is the attention's backward without context parallelism.
func bwdAttn(b *builder, p *layerPass) {
	if b.tpAsync(p) {
		if x, a, ok := b.tpAsyncBackward(attnAsync, p, p.in, workload.BlockAttnPost, workload.BlockAttnCore, workload.BlockAttnPre); ok {
			dense, expert := b.layerParams(p.l)
			b.gradReady(dense, expert, a, p.reduce)
			b.releaseLayer(a)
			p.in = x
			return
		}
	}
	a := b.compute(KindBackward, "attn_bwd", p.l, p.mb, p.c,
		b.bwdPart(b.cache.block(p.l, passBwd, workload.BlockAttnPost, workload.BlockAttnCore, workload.BlockAttnPre), p.splitW), p.in)
	b.attnBackwardEnd(p, a)
}

// bwdAttnCPGather is the attention's backward with the all-gather context
// parallelism: the K/V gradients reduce-scattered back to their owners.
func bwdAttnCPGather(b *builder, p *layerPass) {
	l, mb, c := p.l, p.mb, p.c
	postCore := b.cache.block(l, passBwd, workload.BlockAttnPost, workload.BlockAttnCore)
	pc := b.compute(KindBackward, "attn_post_core_bwd", l, mb, c, b.bwdPart(postCore, p.splitW), p.in)
	kvg := b.comm(GroupCP, collectives.ReduceScatter, b.kvBytes(), "cp_kv_grad_scatter", l, mb, c, pc)
	b.attnPreBackward(p, kvg)
}

// bwdAttnCPRing is the attention's backward under Transformer Engine's p2p
// ring: K/V and the accumulated dK/dV travel together, one activation-width
// buffer per step; the finished dK/dV then go home, one more ring step
// (cp·s/(cp−1) in the all-gather convention).
func bwdAttnCPRing(b *builder, p *layerPass) {
	l, mb, c := p.l, p.mb, p.c
	cp := float64(b.cfg.Layout.CP)
	s := b.kvBytes() / cp
	core := b.bwdPart(b.cache.block(l, passBwd, workload.BlockAttnCore), p.splitW)
	post := b.bwdPart(b.cache.block(l, passBwd, workload.BlockAttnPost), p.splitW)
	last := b.ringSteps(KindBackward, "attn_core_bwd", "cp_kv_dkv_ring", l, mb, c, core, post, true, 2*s, p.in)
	kvg := b.comm(GroupCP, collectives.AllGather, cp*s/(cp-1), "cp_dkv_send_last", l, mb, c, last)
	b.attnPreBackward(p, kvg)
}

// bwdAttnCPPyTorch is the attention's backward under PyTorch's ring
// attention (pytorchRingBackward).
func bwdAttnCPPyTorch(b *builder, p *layerPass) {
	b.attnPreBackward(p, b.pytorchRingBackward(p.l, p.mb, p.c, p.in, p.splitW))
}

// attnPreBackward is the QKV projection's backward once the context-parallel
// K/V gradients (kvg) are complete.
func (b *builder) attnPreBackward(p *layerPass, kvg int32) {
	a := b.compute(KindBackward, "attn_pre_bwd", p.l, p.mb, p.c, b.bwdPart(b.cache.block(p.l, passBwd, workload.BlockAttnPre), p.splitW), kvg)
	b.attnBackwardEnd(p, a)
}

// attnBackwardEnd closes a layer's backward after its attention ended at a:
// the layer's gradients are ready (unless the weight gradients are split
// out), and the TP reduction of the input gradient.
func (b *builder) attnBackwardEnd(p *layerPass, a int32) {
	if !p.splitW {
		dense, expert := b.layerParams(p.l)
		b.gradReady(dense, expert, a, p.reduce)
	}
	b.releaseLayer(a)
	if b.cfg.Layout.TP > 1 {
		p.in = b.tpReduce("tp_attn_bwd", p.l, p.mb, p.c, a)
		return
	}
	p.in = a
}
