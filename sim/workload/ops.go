package workload

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// cost is the FLOPs and HBM traffic of one memory-bound kernel.
type cost struct{ flops, read, write float64 }

// opKind says how a forward op's backward is derived.
type opKind uint8

const (
	kindGEMM opKind = iota // C = A·B: backward is dA = dC·Bᵀ (dgrad) then dB = Aᵀ·dC (wgrad)
	kindAttn               // fused attention: one backward kernel
	kindMem                // memory-bound kernel with an explicit backward cost
	kindAten               // eager PyTorch (ATen) kernel: its module's backward kernels are bwdOps (eager.go)
)

// fwdOp is a forward op plus what its backward needs.
type fwdOp struct {
	op   Op
	kind opKind
	bwd  cost
	// bwdEff is the attention backward kernel's efficiency (Op.AttnEff of
	// the backward op); zero for other ops.
	bwdEff float64
	// bwdOps, for kindAten, are the backward kernels of the op's eager
	// module in execution order, carried by the module's last forward
	// kernel; nil for the others (see builder.eager).
	bwdOps []Op
	// parts lists the framework linears a fused GEMM stands for, in
	// forward order (the Q, K and V projections of qkv_proj; the gate and
	// up projections of a GLU fc1), each with its output width; nil means
	// one linear of width op.N. Per-op selective checkpointing counts
	// linears, not fused kernels.
	parts []linear
	// quant marks an FP8 recipe's quantisation op (fp8.go), which
	// precedes its GEMM.
	quant bool
	// bwdScaling is the scaling of a GEMM's dgrad and wgrad (Op.Scaling).
	bwdScaling Scaling
}

// linear is one projection (nn.Linear) inside a fused GEMM: its name and
// output width N; it shares the GEMM's M, K and batch.
type linear struct {
	name string
	n    int
}

// split is a Shape with defaults applied and the per-GPU sizes derived.
type split struct {
	m        Model
	d        attnDims
	b, seq   int     // micro-batch, full sequence
	tp, ep   int     // tensor and expert parallel degrees
	etp      int     // expert tensor parallel degree: tp unless folded (Shape.ETP)
	sl       int     // local sequence: ceil(seq/cp)
	tok      float64 // tokens per GPU per micro-batch: b·sl
	tokSP    float64 // tokens of the norm/residual/dropout kernels: tok/tp with SP
	hl, kvl  int     // local query and key/value heads (KV replicated when kv_heads < tp)
	kva      int     // key/value heads the attention kernel reads: hl with Shape.RepeatKV, else kvl
	cp       int     // context-parallel degree
	cpImpl   CPImpl  // Shape.CPImpl
	act, gin float64 // activation bytes; GEMM input bytes
	flash    bool
	unpad    bool       // AttentionUnpad: bert_padding gathers around the fused attention
	attnEff  [2]float64 // fused attention kernel efficiency by Pass (0 = the Device's)
	attnDims []int      // fused attention kernel's compiled head dimensions (Shape.AttnHeadDims)
	// eagerOps and eagerNorm price RoPE and SwiGLU, and RMSNorm, as eager
	// PyTorch kernels (Shape.Eager, Shape.EagerNorm; eager.go).
	eagerOps, eagerNorm bool
	// autocast adds torch.autocast's weight casts (Shape.Autocast, 16-bit
	// dtypes only; autocast.go). accum is the bytes read, bytes written
	// and elements added per linear weight element per micro-batch by the
	// gradient accumulation's add: Shape.GradAccumulate × GradAccumShard
	// × (2·GradAccumWidth, GradAccumWidth, 1).
	autocast bool
	accum    [3]float64
	// replLogits prices the output layer with the logits gathered to every
	// TP rank (Shape.ReplicatedLogits).
	replLogits bool
	// fp8 is the quantisation model of FP8 GEMMs (Shape.FP8Recipe); nil
	// unless the dtype is FP8.
	fp8 *fp8Recipe
}

// headDimTile is the head dimension a fused attention kernel compiled for
// tiles (ascending) computes d at: the first tile >= d, or d itself when
// none is (no tiles, or d above the last).
func headDimTile(d int, tiles []int) int {
	for _, t := range tiles {
		if t >= d {
			return t
		}
	}
	return d
}

func cdiv(a, b int) int {
	if b <= 0 {
		return a
	}
	return (a + b - 1) / b
}

// newSplit normalises s: zero TP/CP/EP and micro-batch mean 1.
func newSplit(m Model, s Shape) split {
	one := func(v int) int { return max(v, 1) }
	tp, cp, ep, b := one(s.TP), one(s.CP), one(s.EP), one(s.MicroBatch)
	seq := max(s.Seq, 0)
	d := m.dims()
	etp := tp
	if s.ETP > 0 && s.ETP < tp {
		etp = s.ETP
	}
	sp := split{m: m, d: d, b: b, seq: seq, tp: tp, ep: ep, etp: etp, sl: cdiv(seq, cp), cp: cp, cpImpl: s.CPImpl,
		hl: cdiv(d.heads, tp), kvl: cdiv(d.kvHeads, tp),
		act: s.Dtype.storageBytes(), gin: s.Dtype.Bytes(), flash: s.FlashAttention, unpad: s.AttentionUnpad && s.FlashAttention,
		attnEff:  [2]float64{max(s.AttnEff, 0), max(s.AttnBwdEff, 0)},
		attnDims: s.AttnHeadDims,
		eagerOps: s.Eager, eagerNorm: s.EagerNorm, fp8: s.fp8Recipe(), replLogits: s.ReplicatedLogits,
		autocast: s.Autocast && (s.Dtype == FP16 || s.Dtype == BF16)}
	if share := min(max(s.GradAccumulate, 0), 1); share > 0 {
		w, f := s.GradAccumWidth, s.GradAccumShard
		if w <= 0 {
			w = 4
		}
		if f <= 0 || f > 1 {
			f = 1
		}
		sp.accum = [3]float64{2 * w * f * share, w * f * share, f * share}
	}
	if sp.gin <= 0 {
		sp.gin = sp.act
	}
	sp.kva = sp.kvl
	if s.RepeatKV && !(m.Attention == "mla" && m.MLA != nil) && sp.kvl < sp.hl {
		sp.kva = sp.hl
	}
	sp.tok = float64(b * sp.sl)
	sp.tokSP = sp.tok
	if s.SP {
		sp.tokSP = sp.tok / float64(tp)
	}
	return sp
}

// builder accumulates one layer's forward ops.
type builder struct {
	split
	ops    []fwdOp
	window int // the layer's sliding attention window (Model.Window), 0 = full
	// parts holds the ops' fused linears (fwdOp.parts), one op's after
	// another, kept with ops when the builder is reused (gemm).
	parts []linear
}

// gemm adds C[M×N] = A[M×K]·B[K×N], batch times. Inputs are read at the
// GEMM input width (1 byte for fp8), the output written at activation width.
// parts, when given, are the linears fused in it (their widths sum to n).
func (b *builder) gemm(name string, blk Block, m, n, k, batch int, parts ...linear) {
	if m <= 0 || n <= 0 || k <= 0 {
		return
	}
	o := gemmOp(m, n, k, batch, b.gin, b.act)
	o.Name, o.Block = name, blk
	var acc cost
	if b.autocast && blk != BlockAttnCore {
		b.autocastWeight(name, blk, k, n, batch)
	} else if blk != BlockAttnCore && b.accum[0] > 0 {
		w := float64(k) * float64(n) * float64(max(batch, 1))
		acc = cost{w * b.accum[2], w * b.accum[0], w * b.accum[1]}
	}
	var kept []linear // the op's parts (nil: none)
	if len(parts) > 0 {
		// The op's linears in the builder's storage, not the caller's
		// (a variadic list, or fc1Parts' pair, stored in the op, made
		// each call a new array: ≈ 0.15 MB over the 1,000-point 70B
		// sweep command, fresh pages while its collector seldom runs;
		// issue 18, alloc43). A grown array leaves the earlier ops'
		// linears in the old one, unchanged.
		from := len(b.parts)
		b.parts = append(b.parts, parts...)
		kept = b.parts[from:len(b.parts):len(b.parts)]
	}
	var bwdScaling Scaling
	if b.fp8 != nil {
		o.Quant = QuantScaled
		o.Scaling, bwdScaling = b.fp8.fwdScaling, b.fp8.bwdScaling
		b.ops = append(b.ops, b.fp8.quant(name, blk, m, n, k, batch, kept))
	}
	b.ops = append(b.ops, fwdOp{op: o, kind: kindGEMM, parts: kept, bwdScaling: bwdScaling, bwd: acc})
}

// fc1Parts are the linears of an MLP's first projection of inner width f
// (local to this GPU): the gate and up projections of a GLU (SwiGLU's w1
// and w3, in that order), or none (n 0) for a single projection. An
// array, not a slice: the caller's copy stays on its stack (gemm keeps
// the parts in the builder's storage).
func (b *builder) fc1Parts(name string, f int) (parts [2]linear, n int) {
	if !b.m.glu() {
		return parts, 0
	}
	return [2]linear{{suffixed(name, "_gate"), f}, {suffixed(name, "_up"), f}}, 2
}

// gemmOp is batch GEMMs C[m×n] = A[m×k]·B[k×n] reading inputs of in bytes
// per value and writing outputs of out bytes.
func gemmOp(m, n, k, batch int, in, out float64) Op {
	bt := float64(max(batch, 1))
	M, N, K := float64(m), float64(n), float64(k)
	return Op{Class: ClassGEMM, FLOPs: 2 * M * N * K * bt,
		BytesRead: (M*K + K*N) * in * bt, BytesWritten: M * N * out * bt,
		M: m, N: n, K: k, Batch: max(batch, 1)}
}

// mem adds a memory-bound kernel with its forward and backward costs.
func (b *builder) mem(name string, blk Block, fwd, bwd cost) {
	b.ops = append(b.ops, fwdOp{op: Op{Name: name, Block: blk, Class: ClassMemory,
		FLOPs: fwd.flops, BytesRead: fwd.read, BytesWritten: fwd.write, Batch: 1}, kind: kindMem, bwd: bwd})
}

// Per-element FLOP counts of memory-bound kernels (our convention; they
// rarely matter because these kernels are bandwidth-bound):
// LayerNorm 8 (mean 1, variance 3, normalise 2, affine 2), RMSNorm 4,
// residual add 1, dropout 2 (compare, scale), GELU 20 (tanh form: 8
// multiply/adds plus tanh counted as 12), SwiGLU 8 per output
// (sigmoid 4, two products, gate 2), squared ReLU 2, RoPE 3 (two products and
// a sum per rotated element), softmax 5 (max, subtract, exp, sum, divide),
// cross-entropy 5. Backward kernels count twice their forward.
const (
	flopsLayerNorm = 8
	flopsRMSNorm   = 4
	flopsResidual  = 1
	flopsDropout   = 2
	flopsGELU      = 20
	flopsSwiGLU    = 8
	flopsReLU2     = 2
	flopsRoPE      = 3
	flopsSoftmax   = 5
	flopsXent      = 5
)

// norm adds a norm over rows×width elements; statistics are fp32 per row.
func (b *builder) norm(name string, blk Block, rows float64, width int) {
	e := rows * float64(width)
	if b.eagerNorm && b.m.Norm == "rmsnorm" {
		fwd, bwd := eagerRMSNorm(e, rows, b.act)
		b.eager(name, blk, fwd, bwd)
		return
	}
	f := float64(flopsLayerNorm)
	stats := 8 * rows // mean and rstd
	if b.m.Norm == "rmsnorm" {
		f, stats = flopsRMSNorm, 4*rows
	}
	b.mem(name, blk, cost{f * e, e * b.act, e*b.act + stats},
		cost{2 * f * e, 2*e*b.act + stats, e * b.act})
}

// streamNorm adds a norm on the residual stream (a layer's input norms,
// the final norm). Under autocast the stream is fp32 (autocast.go): the
// norm reads and writes 4 bytes per element (LayerNorm is on autocast's
// fp32 list) and its output is cast to the GEMM input width for the linear
// after it (name_cast; backward the 16-bit input gradient cast back to
// fp32). Eager RMSNorm keeps its kernels at the activation width and gets
// the cast only.
func (b *builder) streamNorm(name string, blk Block, rows float64, width int) {
	if !b.autocast {
		b.norm(name, blk, rows, width)
		return
	}
	e := rows * float64(width)
	if b.eagerNorm && b.m.Norm == "rmsnorm" {
		b.norm(name, blk, rows, width)
	} else {
		f, stats := float64(flopsLayerNorm), 8*rows
		if b.m.Norm == "rmsnorm" {
			f, stats = flopsRMSNorm, 4*rows
		}
		b.mem(name, blk, cost{f * e, e * fp32Stream, e*fp32Stream + stats},
			cost{2 * f * e, 2*e*fp32Stream + stats, e * fp32Stream})
	}
	b.mem(name+"_cast", blk, cost{0, e * fp32Stream, e * b.gin}, cost{0, e * b.gin, e * fp32Stream})
}

// fp32Stream is the residual stream's bytes per element under autocast.
const fp32Stream = 4

// residual adds a residual add. Under autocast the 16-bit branch output is
// added to the fp32 stream (type promotion: fp32 out), and the backward
// sums the stream's two fp32 gradients at the fork and casts the branch's
// gradient to the branch's 16 bits.
func (b *builder) residual(name string, blk Block, e float64) {
	if b.autocast {
		b.mem(name, blk, cost{flopsResidual * e, e * (b.act + fp32Stream), e * fp32Stream},
			cost{flopsResidual * e, 3 * e * fp32Stream, e * (fp32Stream + b.act)})
		return
	}
	c := cost{flopsResidual * e, 2 * e * b.act, e * b.act}
	b.mem(name, blk, c, c)
}

func (b *builder) dropout(name string, blk Block, e float64) {
	if !b.m.Dropout {
		return
	}
	b.mem(name, blk, cost{flopsDropout * e, e * b.act, e*b.act + e},
		cost{e, e*b.act + e, e * b.act})
}

// activation adds the MLP non-linearity on rows tokens of inner width f.
func (b *builder) activation(name string, blk Block, rows float64, f int) {
	e := rows * float64(f)
	if b.eagerOps && b.m.Activation == "swiglu" {
		fwd, bwd := eagerSwiGLU(e, b.act)
		b.eager(name, blk, fwd, bwd)
		return
	}
	if b.eagerOps && b.m.Activation == "gelu_new" {
		fwd, bwd := eagerGELUNew(e, b.act)
		b.eager(name, blk, fwd, bwd)
		return
	}
	switch b.m.Activation {
	case "swiglu":
		b.mem(name, blk, cost{flopsSwiGLU * e, 2 * e * b.act, e * b.act},
			cost{2 * flopsSwiGLU * e, 3 * e * b.act, 2 * e * b.act})
	case "relu2":
		b.mem(name, blk, cost{flopsReLU2 * e, e * b.act, e * b.act},
			cost{2 * flopsReLU2 * e, 2 * e * b.act, e * b.act})
	default:
		b.mem(name, blk, cost{flopsGELU * e, e * b.act, e * b.act},
			cost{2 * flopsGELU * e, 2 * e * b.act, e * b.act})
	}
}

// LayerOps are one transformer layer's kernels for pass p, per GPU, in
// execution order (backward ops in backward order: the forward list reversed,
// each GEMM giving its dgrad then its wgrad). Every op carries its Block, and
// the ops of a block are contiguous, so the step simulator can insert the
// TP/SP collectives after BlockAttnPost and BlockMLP/BlockCombine (and, in
// backward, after BlockAttnPre and BlockMLP/BlockRouter), CP K/V gathers
// before BlockAttnCore and EP all-to-alls after BlockRouter and BlockExperts.
// A layer index outside the model gives nil.
func (m Model) LayerOps(layer int, s Shape, p Pass) []Op {
	if layer < 0 || layer >= m.StackLayers() {
		return nil
	}
	b := m.forward(layer, s)
	defer b.release()
	if p == Forward {
		return fwdList(b.ops)
	}
	return bwdList(b.ops, b.gin, b.act)
}

// AppendLayerOps appends LayerOps(layer, s, p) to dst and returns the
// extended list: the same ops, in dst's storage when it has the room (a
// caller that lists a layer's ops for every build keeps one list instead
// of making garbage of each: parallel's blockCache, ≈ 370 page faults a
// 70B sweep on one worker). A layer outside the model appends nothing.
func (m Model) AppendLayerOps(dst []Op, layer int, s Shape, p Pass) []Op {
	if layer < 0 || layer >= m.StackLayers() {
		return dst
	}
	b := m.forward(layer, s)
	defer b.release()
	if p == Forward {
		return appendFwdList(dst, b.ops)
	}
	return appendBwdList(dst, b.ops, b.gin, b.act)
}

// fwdList returns the forward ops of a builder list.
func fwdList(ops []fwdOp) []Op {
	return appendFwdList(make([]Op, 0, len(ops)), ops)
}

// appendFwdList appends the forward ops of a builder list to out.
func appendFwdList(out []Op, ops []fwdOp) []Op {
	for _, f := range ops {
		out = append(out, f.op)
		out[len(out)-1].Pass = Forward
	}
	return out
}

// suffixed is name+suffix, made once per pair in the process (up to
// maxSuffixed pairs; past them, made each call). A layer's backward op
// names (qkv_proj_dgrad, …) and a GLU's linears (fc1_gate, fc1_up) were
// concatenated anew every time a point listed a layer's ops: ≈ 0.15 MB of
// fresh pages over the 1,000-point 70B sweep command, whose collector
// seldom runs (issue 18, alloc43). The names are the model's op names, a
// few dozen.
//
// A call first looks in suffixedSlots, without the lock: both sweep
// workers list every point's layers, and the mutex's cache line moving
// between their cores, the map's hashing of both strings and its compare
// were ≈ 0.24% of the 70B sweep command's CPU samples (138 of 58,427).
func suffixed(name, suffix string) string {
	h := suffixSlot(name, suffix)
	e, f := &suffixedSlots[h], &suffixedSlots[h^1]
	if x := e.Load(); x != nil && x.is(name, suffix) {
		return x.s
	}
	if x := f.Load(); x != nil && x.is(name, suffix) {
		return x.s
	}
	s := suffixedLocked(name, suffix)
	if e.Load() != nil && f.Load() == nil {
		e = f
	}
	e.Store(&suffixEntry{name: name, suffix: suffix, s: s})
	return s
}

// suffixedSlots answer suffixed for the names and suffixes it was last
// called with, in either slot of its pair (so that two pairs of one hash,
// as fc1+_wgrad and embedding+_bwd are, do not take turns: ≈ 900 misses
// a 70B sweep, each an entry allocated, with one slot), by the addresses
// and lengths of their bytes (the model's op
// names and the suffixes are mostly string literals, which stay where they
// are): an entry holds its strings, so an entry whose name and suffix sit
// at the same addresses with the same lengths holds the same bytes (Go
// strings are immutable), and its s is what suffixedLocked answers for
// them (the pair's kept string, or an equal new one). A slot is replaced
// whole (an atomic pointer), so a reader sees an entry or none.
var suffixedSlots [suffixSlots]atomic.Pointer[suffixEntry]

const suffixSlotBits = 7
const suffixSlots = 1 << suffixSlotBits

// suffixEntry is one suffixedSlots answer.
type suffixEntry struct {
	name, suffix, s string
}

// is says whether e is the entry of name and suffix (see suffixedSlots).
func (e *suffixEntry) is(name, suffix string) bool {
	return unsafe.StringData(e.name) == unsafe.StringData(name) && len(e.name) == len(name) &&
		unsafe.StringData(e.suffix) == unsafe.StringData(suffix) && len(e.suffix) == len(suffix)
}

// suffixSlot is the slot of name and suffix in suffixedSlots: the
// addresses of their bytes mixed.
func suffixSlot(name, suffix string) uint {
	a := uint64(uintptr(unsafe.Pointer(unsafe.StringData(name))))
	b := uint64(uintptr(unsafe.Pointer(unsafe.StringData(suffix))))
	return uint(((a ^ b<<1 ^ uint64(len(name))) * 0x9E3779B97F4A7C15) >> (64 - suffixSlotBits))
}

// suffixedLocked is suffixed through the process's map, under its lock.
func suffixedLocked(name, suffix string) string {
	k := [2]string{name, suffix}
	suffixedNames.mu.Lock()
	s, ok := suffixedNames.m[k]
	suffixedNames.mu.Unlock()
	if ok {
		return s
	}
	s = name + suffix
	suffixedNames.mu.Lock()
	if suffixedNames.m == nil {
		suffixedNames.m = map[[2]string]string{}
	}
	if len(suffixedNames.m) < maxSuffixed {
		suffixedNames.m[k] = s
	}
	suffixedNames.mu.Unlock()
	return s
}

// maxSuffixed bounds suffixedNames, so that a long-lived process meeting
// ever new op names stops keeping them.
const maxSuffixed = 4096

// suffixedNames holds suffixed's strings by (name, suffix).
var suffixedNames struct {
	mu sync.Mutex
	m  map[[2]string]string
}

// bwdList derives the backward kernels of a forward list, in reverse order.
func bwdList(ops []fwdOp, gin, act float64) []Op {
	return appendBwdList(make([]Op, 0, 2*len(ops)), ops, gin, act)
}

// appendBwdList appends bwdList(ops, gin, act) to out.
func appendBwdList(out []Op, ops []fwdOp, gin, act float64) []Op {
	for i := len(ops) - 1; i >= 0; i-- {
		f := ops[i]
		o := f.op
		switch f.kind {
		case kindGEMM:
			M, N, K := o.M, o.N, o.K
			bt := float64(o.Batch)
			fm, fn, fk := float64(M), float64(N), float64(K)
			// dA[M×K] = dC[M×N]·Bᵀ; dB[K×N] = Aᵀ·dC.
			out = append(out,
				Op{Name: suffixed(o.Name, "_dgrad"), Block: o.Block, Class: ClassGEMM, Pass: Backward,
					FLOPs: o.FLOPs, BytesRead: (fm*fn + fk*fn) * gin * bt, BytesWritten: fm * fk * act * bt,
					M: M, N: K, K: N, Batch: o.Batch, Quant: o.Quant, Scaling: f.bwdScaling},
				Op{Name: suffixed(o.Name, "_wgrad"), Block: o.Block, Class: ClassGEMM, Pass: Backward,
					FLOPs: o.FLOPs, BytesRead: (fm*fk + fm*fn) * gin * bt, BytesWritten: fk * fn * act * bt,
					M: K, N: N, K: M, Batch: o.Batch, Quant: o.Quant, Scaling: f.bwdScaling})
			if f.bwd.read > 0 { // the gradient accumulation's add (autocast.go)
				out = append(out, Op{Name: suffixed(o.Name, "_grad_acc"), Block: o.Block, Class: ClassMemory, Pass: Backward,
					FLOPs: f.bwd.flops, BytesRead: f.bwd.read, BytesWritten: f.bwd.write, Batch: 1})
			}
		case kindAten: // the module's backward kernels, on its last forward kernel
			out = append(out, f.bwdOps...)
		default: // attention and memory kernels carry their backward cost
			o.Name = suffixed(o.Name, "_bwd")
			o.Pass = Backward
			o.FLOPs, o.BytesRead, o.BytesWritten = f.bwd.flops, f.bwd.read, f.bwd.write
			o.AttnEff = f.bwdEff
			out = append(out, o)
		}
	}
	return out
}

// layerOpsCap is the room forward gives a layer's op list.
const layerOpsCap = 16

// builders holds forward's builders between uses (see forward).
var builders = sync.Pool{New: func() any { return &builder{ops: make([]fwdOp, 0, layerOpsCap)} }}

// release hands b, from forward, back for a later forward to reuse; b
// and any slice of its ops must not be used after it. What the callers
// return (fwdList, bwdList, the activation sums) is copied out first.
func (b *builder) release() {
	builders.Put(b)
}

// pooledBuilder is a builder from the pool set for sp with an empty list
// (no window), as &builder{split: sp} would be, in reused storage: the
// embedding and head lists, built per point like the layers', grew from
// nil each time (≈ 1.4 MB of the 1,000-point 70B sweep's garbage; garb35).
func pooledBuilder(sp split) *builder {
	b := builders.Get().(*builder)
	*b = builder{split: sp, ops: b.ops[:0], parts: b.parts[:0]}
	return b
}

// forward builds layer's forward ops; a multi-token-prediction layer
// starts with its module's input ops (mtpInput).
func (m Model) forward(layer int, s Shape) *builder {
	s = s.forLayer(m, layer)
	// A dense layer lists 11 ops in BF16, 15 with FP8's quantisations: room
	// for them from the start (grown from nil the list was reallocated four
	// times: 10.2 MB of the ≈ 200 MB the 1,000-point 70B sweep allocated,
	// 4.9 MB with the room).
	//
	// The builder and its list come from a pool (garb35): forward runs for
	// every layer kind of every sweep point, and a fresh 4 KB list each
	// time was the sweep's largest per-point garbage outside the arena
	// (4.6 MB over the 1,000-point 70B sweep), each byte on a new page
	// while the collector seldom runs. Every element is written whole
	// by append before it is read, so a reused list builds what a fresh
	// one would.
	b := builders.Get().(*builder)
	m.forwardInto(b, layer, s)
	return b
}

// forwardInto builds layer's forward ops for shape s (already
// forLayer's) into b, whatever b held before: every field is set afresh
// and the list restarts at length zero in b's storage.
func (m Model) forwardInto(b *builder, layer int, s Shape) {
	*b = builder{split: newSplit(m, s), window: m.Window(layer), ops: b.ops[:0], parts: b.parts[:0]}
	if m.IsMTPLayer(layer) {
		b.mtpInput()
	}
	b.attention()
	if m.IsMoELayer(layer) {
		b.moe()
	} else {
		b.denseMLP()
	}
}

// attention adds BlockAttnPre, BlockAttnCore and BlockAttnPost.
func (b *builder) attention() {
	m, d := b.m, b.d
	h := m.Hidden
	T := int(b.tok)
	b.streamNorm("attn_norm", BlockAttnPre, b.tokSP, h)
	if m.Attention == "mla" && m.MLA != nil {
		// Megatron-Core MLA: the down projections are replicated over TP,
		// the up projections split by heads.
		a := m.MLA
		if a.QLoRARank > 0 {
			b.gemm("q_down", BlockAttnPre, T, a.QLoRARank, h, 1)
			b.norm("q_norm", BlockAttnPre, b.tok, a.QLoRARank)
			b.gemm("q_up", BlockAttnPre, T, b.hl*d.qk, a.QLoRARank, 1)
		} else {
			b.gemm("q_proj", BlockAttnPre, T, b.hl*d.qk, h, 1)
		}
		b.gemm("kv_down", BlockAttnPre, T, a.KVLoRARank+a.RopeHeadDim, h, 1)
		b.norm("kv_norm", BlockAttnPre, b.tok, a.KVLoRARank)
		b.gemm("kv_up", BlockAttnPre, T, b.hl*(a.NopeHeadDim+a.VHeadDim), a.KVLoRARank, 1)
		b.rope("rope", BlockAttnPre, b.tok, b.hl*a.RopeHeadDim, a.RopeHeadDim, a.RopeHeadDim)
	} else {
		b.gemm("qkv_proj", BlockAttnPre, T, (b.hl+2*b.kvl)*d.qk, h, 1,
			linear{"q_proj", b.hl * d.qk}, linear{"k_proj", b.kvl * d.qk}, linear{"v_proj", b.kvl * d.qk})
		if m.QKNorm {
			b.norm("qk_norm", BlockAttnPre, b.tok*float64(b.hl+b.kvl), d.qk)
		}
		if m.usesRoPE() {
			b.rope("rope", BlockAttnPre, b.tok, b.hl*d.qk, b.kvl*d.qk, d.qk)
		}
		if b.kva > b.kvl {
			fwd, bwd := repeatKVKernels(b.tok*float64(b.kvl*d.qk), b.tok*float64(b.kvl*d.v), b.kva/b.kvl, b.act)
			b.eager("repeat_kv", BlockAttnPre, fwd, bwd)
		}
	}
	b.attnCore()
	b.gemm("out_proj", BlockAttnPost, T, h, b.hl*d.v, 1)
	b.dropout("attn_out_dropout", BlockAttnPost, b.tokSP*float64(h))
	b.residual("attn_residual", BlockAttnPost, b.tokSP*float64(h))
}

// attnCore adds the attention kernels of BlockAttnCore. Attention is causal.
// With context parallelism each GPU holds sl = seq/cp query rows and, after
// the K/V all-gather, all seq key rows; with the load-balanced split each
// GPU's queries attend to (seq+1)/2 keys on average. A sliding-window layer
// attends to at most window keys per query (causalKeys); FlashAttention
// skips the blocks outside the band (flash-attn's window_size, cuDNN's
// sliding window), unfused attention computes every score and masks them.
func (b *builder) attnCore() {
	d := b.d
	sl, seq := b.sl, b.seq
	if sl <= 0 || seq <= 0 {
		return
	}
	batch := b.b * b.hl
	bh := float64(batch)
	fsl, fseq := float64(sl), float64(seq)
	q := float64(b.b) * fsl * float64(b.hl)
	kvRows := float64(b.b) * fseq * float64(b.kva)
	if b.flash {
		// FlashAttention (Dao 2022; Dao 2023): one kernel, causal blocks
		// above the diagonal skipped, so it executes sl·(seq+1)/2 score
		// entries per head; HBM traffic is the compulsory Q, K, V read and
		// O (+ fp32 log-sum-exp) write. The backward kernel recomputes the
		// scores and runs five GEMM-sized products against the forward's
		// two: 2.5× the forward FLOPs (the flash-attention benchmark
		// convention).
		// A head dimension the kernel has no tile for runs the next larger
		// tile's products (Shape.AttnHeadDims): those FLOPs are executed.
		mean := causalKeys(seq, b.window)
		flops := 2 * bh * fsl * mean * float64(headDimTile(d.qk, b.attnDims)+headDimTile(d.v, b.attnDims))
		qkvIn := (q*float64(d.qk) + kvRows*float64(d.qk+d.v)) * b.act
		out := q*float64(d.v)*b.act + q*4
		if b.unpad {
			fwd, bwd := unpadKernels(q*float64(d.qk), kvRows*float64(d.qk), kvRows*float64(d.v), b.act)
			b.eager("unpad", BlockAttnCore, fwd, bwd)
		}
		b.ops = append(b.ops, fwdOp{op: Op{Name: "flash_attn", Block: BlockAttnCore, Class: ClassAttention,
			FLOPs: flops, BytesRead: qkvIn, BytesWritten: out,
			M: sl, N: int(math.Ceil(mean)), K: d.qk, Batch: batch, AttnEff: b.attnEff[Forward]}, kind: kindAttn,
			bwd: cost{2.5 * flops, qkvIn + out + q*float64(d.v)*b.act, qkvIn}, bwdEff: b.attnEff[Backward]})
		if kl := float64(b.b) * fsl * float64(b.kva); b.cp > 1 {
			switch b.cpImpl {
			case CPPyTorch:
				fwd, bwd := ringKernels(b.cp, q*float64(d.v), q*float64(d.qk), kl*float64(d.qk), kl*float64(d.v), b.act, b.eagerOps)
				b.eager("cp_ring", BlockAttnCore, fwd, bwd)
			case CPP2P:
				fwd, bwd := p2pKernels(b.cp, q*float64(d.v), q*float64(d.qk), kl*float64(d.qk), kl*float64(d.v), b.act)
				b.eager("cp_p2p", BlockAttnCore, fwd, bwd)
			}
		}
		if b.unpad {
			fwd, bwd := padKernels(q*float64(d.v), b.act)
			b.eager("pad", BlockAttnCore, fwd, bwd)
		}
		return
	}
	// Unfused attention (Megatron core attention): the score GEMM computes
	// every entry and the mask is applied afterwards, so nothing is skipped.
	e := bh * fsl * fseq
	if b.eagerOps {
		b.eagerAttention(q, kvRows, e, fsl*fseq, batch)
		return
	}
	b.gemm("attn_scores", BlockAttnCore, sl, seq, d.qk, batch)
	b.mem("attn_softmax", BlockAttnCore, cost{flopsSoftmax * e, e * b.act, e * b.act},
		cost{2 * flopsSoftmax * e, 2 * e * b.act, e * b.act})
	b.dropout("attn_dropout", BlockAttnCore, e)
	b.gemm("attn_context", BlockAttnCore, sl, d.v, seq, batch)
}

// eagerAttention adds unfused attention as eager PyTorch runs it
// (Hugging Face GPT-2's _attn, transformers 4.20.1): torch.matmul on the
// heads split by permute copies Q and K (and V before the second matmul)
// into batched rows, the scale, mask and fp32 softmax are separate kernels
// (eagerAttnSoftmax), and merging the heads (permute(…).contiguous()) is a
// copy whose gradient is copied back into batched rows in the backward; the
// gradients of Q, K and V meet in one cat (split's backward) after it. q
// and kvRows are query and key/value rows (tokens × heads), e the score
// elements and mask the causal mask's q·k elements.
func (b *builder) eagerAttention(q, kvRows, e, mask float64, batch int) {
	d, a := b.d, b.act
	qn, kn, vn, on := q*float64(d.qk), kvRows*float64(d.qk), kvRows*float64(d.v), q*float64(d.v)
	var fwd, bwd eagerKernels
	fwd.add("q_copy", 0, a*qn, a*qn)
	fwd.add("k_copy", 0, a*kn, a*kn)
	bwd.add("qkv_cat", 0, a*(qn+kn+vn), a*(qn+kn+vn))
	b.eager("attn_heads", BlockAttnCore, fwd, bwd)
	b.gemm("attn_scores", BlockAttnCore, b.sl, b.seq, d.qk, batch)
	fwd, bwd = eagerAttnSoftmax(e, mask, a)
	b.eager("attn_softmax", BlockAttnCore, fwd, bwd)
	b.dropout("attn_dropout", BlockAttnCore, e)
	b.eager("attn_v", BlockAttnCore, eagerKernels{{"copy", cost{0, a * vn, a * vn}}}, nil)
	b.gemm("attn_context", BlockAttnCore, b.sl, d.v, b.seq, batch)
	b.eager("attn_merge", BlockAttnCore, eagerKernels{{"copy", cost{0, a * on, a * on}}},
		eagerKernels{{"grad_copy", cost{0, a * on, a * on}}})
}

// denseMLP adds BlockMLP.
func (b *builder) denseMLP() {
	m := b.m
	h := m.Hidden
	T := int(b.tok)
	f := cdiv(m.FFN, b.tp)
	b.streamNorm("mlp_norm", BlockMLP, b.tokSP, h)
	parts, n := b.fc1Parts("fc1", f)
	b.gemm("fc1", BlockMLP, T, m.fc1Width(f), h, 1, parts[:n]...)
	b.activation("act", BlockMLP, b.tok, f)
	b.gemm("fc2", BlockMLP, T, h, f, 1)
	b.dropout("mlp_dropout", BlockMLP, b.tokSP*float64(h))
	b.residual("mlp_residual", BlockMLP, b.tokSP*float64(h))
}

// moe adds BlockRouter, BlockExperts and BlockCombine.
//
// Tokens: the router sees this GPU's tokens (tok/tp with sequence
// parallelism). With balanced routing each EP rank receives top_k ×
// capacity_factor tokens per token of its TP group (with TP the dispatched
// tokens are gathered over the TP group, as Megatron-Core's all-to-all
// dispatcher does), spread evenly over its experts/EP local experts. Expert
// MLPs are split by TP along the inner dimension like dense MLPs (expert
// tensor parallelism = TP). Shared experts run densely on all tokens.
//
// With MoE parallel folding (Shape.ETP = etp < tp) the experts are split
// etp ways and an EP rank's expert tokens are those of its etp-rank expert
// TP group: the stage's tp·cp·dp ranks route b·s/cp tokens per TP group,
// k·cf·b·s/cp·cp·dp in all, shared by tp·cp·dp/etp expert shards, so
// k·cf·tok·etp/tp per GPU (= k·cf·tokSP·etp with SP). Shared experts stay
// on TP.
func (b *builder) moe() {
	m, e := b.m, b.m.MoE
	h, fh := m.Hidden, float64(m.Hidden)
	tr := b.tokSP
	k := float64(e.TopK)
	b.streamNorm("moe_norm", BlockRouter, tr, h)
	b.gemm("router", BlockRouter, int(math.Ceil(tr)), e.Experts, h, 1)
	re := tr * float64(e.Experts)
	b.mem("router_topk", BlockRouter, cost{flopsSoftmax * re, 4 * re, 8 * tr * k},
		cost{2 * flopsSoftmax * re, 4*re + 4*tr*k, 4 * re})
	b.mem("moe_permute", BlockRouter, cost{0, tr * fh * b.act, tr * k * fh * b.act},
		cost{tr * k * fh, tr * k * fh * b.act, tr * fh * b.act})

	local := max(e.Experts/b.ep, 1)
	te := b.expertTokens()
	me := int(math.Ceil(te / float64(local)))
	f := cdiv(e.ExpertFFN, b.etp)
	parts, n := b.fc1Parts("expert_fc1", f)
	b.gemm("expert_fc1", BlockExperts, me, m.fc1Width(f), h, local, parts[:n]...)
	b.activation("expert_act", BlockExperts, float64(me*local), f)
	b.gemm("expert_fc2", BlockExperts, me, h, f, local)
	if e.SharedExperts > 0 {
		fs := cdiv(e.SharedExperts*e.ExpertFFN, b.tp)
		T := int(b.tok)
		parts, n := b.fc1Parts("shared_fc1", fs)
		b.gemm("shared_fc1", BlockExperts, T, m.fc1Width(fs), h, 1, parts[:n]...)
		b.activation("shared_act", BlockExperts, b.tok, fs)
		b.gemm("shared_fc2", BlockExperts, T, h, fs, 1)
	}

	b.mem("moe_unpermute", BlockCombine, cost{2 * tr * k * fh, tr * k * fh * b.act, tr * fh * b.act},
		cost{3 * tr * k * fh, (tr + tr*k) * fh * b.act, tr * k * fh * b.act})
	b.dropout("moe_dropout", BlockCombine, tr*fh)
	b.residual("moe_residual", BlockCombine, tr*fh)
}

// expertTokens is the routed tokens one GPU's experts process per
// micro-batch (see moe): tok·k·cf, times etp/tp when folded.
func (sp split) expertTokens() float64 {
	e := sp.m.MoE
	te := sp.tok * float64(e.TopK) * e.RankLoad()
	if sp.etp != sp.tp {
		te = te * float64(sp.etp) / float64(sp.tp)
	}
	return te
}

// RecomputeOps are the forward kernels redone before a layer's backward:
// none; selective = the attention core (scores, softmax, dropout, context —
// Korthikanti et al. 2022 §5), except with FlashAttention, whose backward
// kernel already recomputes the scores (its FLOPs are in flash_attn_bwd), so
// selective adds nothing; full = the whole forward of the layer;
// selective-op = see selectiveOp; save-dots = see saveDots.
func (m Model) RecomputeOps(layer int, s Shape, r Recompute) []Op {
	if layer < 0 || layer >= m.StackLayers() || r == RecomputeNone {
		return nil
	}
	b := m.forward(layer, s)
	defer b.release()
	redo, ok := b.recomputed(s, r)
	if !ok {
		return nil
	}
	return fwdList(redo)
}

// AppendRecomputeOps appends RecomputeOps(layer, s, r) to dst and returns
// the extended list (dst when there are none): the same ops, in dst's
// storage when it has the room, as AppendLayerOps lists a layer's
// (parallel's blockCache lists them for every build; a new list each was
// garbage, fresh pages once a sweep's workers had reserved their memory:
// docs/design.md "Speed", foot37).
func (m Model) AppendRecomputeOps(dst []Op, layer int, s Shape, r Recompute) []Op {
	if layer < 0 || layer >= m.StackLayers() || r == RecomputeNone {
		return dst
	}
	b := m.forward(layer, s)
	defer b.release()
	redo, ok := b.recomputed(s, r)
	if !ok {
		return dst
	}
	return appendFwdList(dst, redo)
}

// recomputed is the forward list of RecomputeOps from b, a layer's
// forward; ok is false when RecomputeOps is nil (selective recompute with
// nothing to redo).
func (b *builder) recomputed(s Shape, r Recompute) (redo []fwdOp, ok bool) {
	m := b.m
	switch r {
	case RecomputeFull:
		return b.ops, true
	case RecomputeSelectiveOp:
		return b.selectiveOp(), true
	case RecomputeSaveDots:
		return b.saveDots(), true
	}
	for _, f := range b.ops {
		switch {
		case f.op.Block == BlockAttnCore:
			if !s.FlashAttention && s.RecomputeModules.has(RecomputeCoreAttn) {
				redo = append(redo, f)
			}
		case isOp(f.op.Name, "expert_act"):
			if s.RecomputeModules.has(RecomputeMoEAct) {
				redo = append(redo, f)
			}
		case isOp(f.op.Name, "attn_norm"), isOp(f.op.Name, "mlp_norm"), isOp(f.op.Name, "moe_norm"):
			if s.RecomputeModules.has(RecomputeLayerNorm) {
				redo = append(redo, f)
			}
		case m.Attention == "mla" && (isOp(f.op.Name, "q_up") || isOp(f.op.Name, "q_proj") || isOp(f.op.Name, "kv_up") || isOp(f.op.Name, "rope")):
			if s.RecomputeModules.has(RecomputeMLAUpProj) {
				redo = append(redo, f)
			}
		}
	}
	return redo, len(redo) > 0
}

// isOp reports whether an op named name belongs to the module kernel base:
// the fused kernel itself or one of its eager ATen kernels (eager.go names
// them base_<kernel>).
func isOp(name, base string) bool {
	return name == base || strings.HasPrefix(name, base+"_")
}

// selectiveOp is what per-op selective activation checkpointing redoes
// before a layer's backward, in forward order. torchtitan's policy
// (torchtitan/parallelisms/parallelize_llama.py, _apply_ac_to_transformer_block
// with selective_ac_option = "op", 2024-12; a fresh counter per layer call)
// saves the outputs of aten.mm, of the fused SDPA kernels and of the
// reduce-scatters, except every second mm of the layer, and recomputes
// everything else. So, with the layer's projections counted in forward order
// (Llama: wq 1, wk 2, wv 3, wo 4, w1 5, w3 6, w2 7; fused GEMMs counted by
// their linears):
//
//   - every even-numbered projection is recomputed, as its own GEMM of
//     the linear's width (Llama: wk, wo and w3, 36% of the forward
//     projection FLOPs of Llama 3 8B);
//   - every memory-bound kernel (norms, RoPE, activation, residual adds,
//     dropout, MoE permutations) is recomputed;
//   - the FlashAttention kernel's output is saved; an unfused attention
//     core (batched products and softmax, not aten.mm) is recomputed.
func (b *builder) selectiveOp() []fwdOp {
	var out []fwdOp
	count := 0
	var one [1]linear
	for _, f := range b.ops {
		switch {
		case f.op.Block == BlockAttnCore:
			if f.kind != kindAttn {
				out = append(out, f)
			}
		case f.kind == kindGEMM:
			for _, p := range f.linears(&one) {
				count++
				if count%2 != 0 {
					continue
				}
				o := gemmOp(f.op.M, p.n, f.op.K, f.op.Batch, b.gin, b.act)
				o.Name, o.Block, o.Quant, o.Scaling = p.name, f.op.Block, f.op.Quant, f.op.Scaling
				if b.fp8 != nil { // the recomputed linear quantises its inputs again
					out = append(out, b.fp8.quant(p.name, f.op.Block, f.op.M, p.n, f.op.K, f.op.Batch, nil))
				}
				out = append(out, fwdOp{op: o, kind: kindGEMM, bwdScaling: f.bwdScaling})
			}
		case f.quant: // priced with the recomputed linears above
		default:
			out = append(out, f)
		}
	}
	return out
}

// saveDots is what the save-dots policy redoes before a layer's backward,
// in forward order. JAX's checkpoint_dots_with_no_batch_dims
// (jax.checkpoint_policies; MaxText's remat_policy "minimal", and
// "minimal_flash" = that policy plus the names "context", which Transformer
// Engine's JAX fused attention gives its output and softmax statistics:
// MaxText layers/models.py and transformer_engine/jax/fused_attn.py,
// 2024-04) marks every dot_general without batch dimensions saveable; JAX's
// partial evaluation then keeps those the backward needs (its residuals)
// and reruns the rest of the forward that the backward needs from them and
// the layer input. So:
//
//   - no projection GEMM is rerun (their outputs, or their TP reductions,
//     are kept: saveDotsActivationBytes);
//   - the fused attention kernel's output is kept (named "context");
//   - an unfused attention core (batched products: dots with batch
//     dimensions, and the softmax) is rerun;
//   - every other memory-bound kernel up to the layer's closing
//     projection is rerun (norms, RoPE, q/k norms, activations, the
//     attention residual add, FP8 quantisations of the rebuilt GEMM
//     inputs): the dense MLP's second projection and the MoE combine end
//     the layer, and what follows them (dropout, the residual add, the
//     unpermutation) only makes the layer output, which no backward kernel
//     reads;
//   - on MoE layers the dispatched tokens (the permutation's output, the
//     all-to-all's with EP) are kept, so the permutation is not rerun.
func (b *builder) saveDots() []fwdOp {
	var out []fwdOp
	closed := false
	for _, f := range b.ops {
		switch {
		case closed || f.op.Block == BlockCombine:
		case f.op.Block == BlockAttnCore:
			if f.kind != kindAttn {
				out = append(out, f)
			}
		case f.kind == kindGEMM:
			closed = f.op.Name == "fc2"
		case isOp(f.op.Name, "moe_permute"):
		default:
			out = append(out, f)
		}
	}
	return out
}

// linears returns the framework linears of a GEMM: its parts, or itself
// (in *one: the caller's storage, so that the list of one is not a new
// array per GEMM each time a point lists its recomputed or saved
// activations; issue 18, alloc43).
func (f *fwdOp) linears(one *[1]linear) []linear {
	if len(f.parts) > 0 {
		return f.parts
	}
	one[0] = linear{f.op.Name, f.op.N}
	return one[:]
}

// mtpInput adds a multi-token-prediction module's ops before its
// transformer layer (Megatron-Core MultiTokenPredictionLayer.forward; DeepSeek-V3
// arXiv:2412.19437 §2.2, eq. 21): the shared embedding's lookup of the
// tokens one further ahead, enorm on it and hnorm on the previous depth's
// hidden state, their concatenation (a copy of both), and eh_proj, the
// column-parallel 2h → h projection. The TP all-gather Megatron runs after
// eh_proj with sequence parallelism is not priced.
func (b *builder) mtpInput() {
	h := b.m.Hidden
	b.lookup("mtp_embedding", BlockAttnPre)
	b.norm("mtp_enorm", BlockAttnPre, b.tokSP, h)
	b.norm("mtp_hnorm", BlockAttnPre, b.tokSP, h)
	e := 2 * b.tokSP * float64(h)
	b.mem("mtp_concat", BlockAttnPre, cost{0, e * b.act, e * b.act}, cost{0, e * b.act, e * b.act})
	b.gemm("mtp_eh_proj", BlockAttnPre, int(b.tok), cdiv(h, b.tp), 2*h, 1)
}

// lookup adds a vocabulary-parallel embedding lookup: each TP rank reads
// its share of the rows and writes a full-width partial sum for the
// following all-reduce; the backward scatters the gradient into the
// table's rows. Learned position rows are added where the model has them.
func (b *builder) lookup(name string, blk Block) {
	e := b.tok * float64(b.m.Hidden)
	fwd := cost{0, e*b.act/float64(b.tp) + 4*b.tok, e * b.act}
	bwd := cost{e / float64(b.tp), e*b.act + e*b.act/float64(b.tp), e * b.act / float64(b.tp)}
	if b.m.MaxPositions > 0 {
		fwd.flops += e
		fwd.read += e * b.act
		bwd.read += e * b.act
		bwd.write += e * b.act
	}
	b.mem(name, blk, fwd, bwd)
}

// EmbeddingOps price the input embedding on the first pipeline rank: a
// vocabulary-parallel lookup (builder.lookup), the learned position rows
// when the model has them, and dropout.
func (m Model) EmbeddingOps(s Shape, p Pass) []Op {
	b := m.embedding(s)
	defer b.release()
	return b.list(nil, p)
}

// AppendEmbeddingOps appends EmbeddingOps(s, p) to dst and returns the
// extended list: the same ops, in dst's storage when it has the room
// (AppendHeadOps says why).
func (m Model) AppendEmbeddingOps(dst []Op, s Shape, p Pass) []Op {
	b := m.embedding(s)
	defer b.release()
	return b.list(dst, p)
}

// embedding is a pooled builder with the embedding's forward ops.
func (m Model) embedding(s Shape) *builder {
	b := pooledBuilder(newSplit(m, s))
	b.lookup("embedding", BlockEmbedding)
	b.dropout("embedding_dropout", BlockEmbedding, b.tokSP*float64(m.Hidden))
	return b
}

// list is b's ops for pass p: appended to dst, or in a list of their own
// (fwdList, bwdList) when dst is nil.
func (b *builder) list(dst []Op, p Pass) []Op {
	switch {
	case dst == nil && p == Forward:
		return fwdList(b.ops)
	case dst == nil:
		return bwdList(b.ops, b.gin, b.act)
	case p == Forward:
		return appendFwdList(dst, b.ops)
	}
	return appendBwdList(dst, b.ops, b.gin, b.act)
}

// HeadOps price the output layer on the last pipeline rank: the final norm,
// the vocabulary-parallel LM head GEMM and the cross-entropy over this TP
// rank's e = tok·V/tp logits. Every stack computes the loss in fp32; what
// differs is the HBM traffic. A fused kernel (flash-attn's cross_entropy,
// the default of llm-foundry's MPT; Megatron-LM's fused vocab-parallel
// cross-entropy) reads the logits at activation width, keeps the fp32
// log-sum-exp per token and in the backward reads the logits again and
// writes their gradient:
//
//	cross_entropy    read e·act, write 8 bytes per token
//	backward         read e·act (+ 8 per token), write e·act
//
// PyTorch's unfused path (Shape.CrossEntropy unfused: torchtitan's
// cross_entropy(pred.float(), labels), autocast's fp32 cross_entropy) runs
// separate fp32 kernels:
//
//	logits_to_fp32   read e·act, write 4e      backward: read 4e, write e·act
//	cross_entropy    read 4e, write 4e log-probabilities (+ 12 per token)
//	                 backward: nll_loss_backward writes a dense fp32 gradient
//	                 (4e), log_softmax_backward reads it and the log-
//	                 probabilities (8e) and writes 4e
//
// Megatron-LM's unfused vocabulary-parallel path (vocab-parallel) makes
// five fp32 passes over the logits in the forward and two in the backward
// (vocabParallelCrossEntropy). F.cross_entropy on the 16-bit logits without
// the upcast (unfused-native) runs the same log_softmax and nll_loss
// kernels at the logits' width and no casts:
//
//	cross_entropy    read e·act, write e·act (+ 12 per token)
//	backward         read 2e·act (+ 4 per token), write 2e·act
//
// (training in fp32 skips the cast).
//
// With multi-token prediction each module's hidden state passes through
// its own final norm, the shared LM head and a loss of its own, after the
// main one (Megatron-Core's GPTModel postprocess: one output_layer call
// and loss per depth); those ops are named mtp<k>_….
func (m Model) HeadOps(s Shape, p Pass) []Op {
	b := m.heads(s)
	defer b.release()
	return b.list(nil, p)
}

// AppendHeadOps appends HeadOps(s, p) to dst and returns the extended
// list: the same ops, in dst's storage when it has the room. Parallel's
// blockCache prices the head and embedding once per build and keeps no
// list: a new one each build was garbage, a fresh page once a sweep's
// workers had reserved their memory (with AppendEmbeddingOps and
// AppendRecomputeOps ≈ 225 page faults of the 1,000-point 70B sweep;
// docs/design.md "Speed", foot37).
func (m Model) AppendHeadOps(dst []Op, s Shape, p Pass) []Op {
	b := m.heads(s)
	defer b.release()
	return b.list(dst, p)
}

// heads is a pooled builder with the output layers' forward ops (the
// main one's, then each multi-token-prediction module's).
func (m Model) heads(s Shape) *builder {
	b := pooledBuilder(newSplit(m, s))
	for k := 0; k <= max(m.MTPLayers, 0); k++ {
		prefix := ""
		if k > 0 {
			prefix = "mtp" + strconv.Itoa(k) + "_"
		}
		b.head(prefix, s.CrossEntropy)
	}
	return b
}

// head adds one output layer: the final norm, the vocabulary-parallel LM
// head GEMM and the cross-entropy (see HeadOps), names prefixed.
func (b *builder) head(prefix string, ce CrossEntropy) {
	m := b.m
	v := cdiv(m.Vocab, b.tp)
	b.streamNorm(prefix+"final_norm", BlockHead, b.tokSP, m.Hidden)
	b.gemm(prefix+"lm_head", BlockHead, int(b.tok), v, m.Hidden, 1)
	e := b.tok * float64(v)
	if b.replLogits && b.tp > 1 {
		// The logits all-gathered along the vocabulary (last) dimension:
		// DTensor gathers into a rank-major buffer and concatenates it
		// along the last dimension (one read and one write of the
		// gathered logits); the backward redistributes the replicated
		// gradient to the vocabulary shard with a contiguous copy of this
		// rank's e logits. The loss then runs over every rank's logits.
		full := e * float64(b.tp)
		b.mem(prefix+"logits_gather_cat", BlockHead, cost{0, full * b.act, full * b.act}, cost{0, e * b.act, e * b.act})
		e = full
	}
	switch ce {
	case CrossEntropyFused:
		b.mem(prefix+"cross_entropy", BlockHead, cost{flopsXent * e, e * b.act, 8 * b.tok},
			cost{2 * e, e*b.act + 8*b.tok, e * b.act})
	case CrossEntropyVocabParallel:
		fwd, bwd := vocabParallelCrossEntropy(e, b.tok, b.act)
		b.eager(prefix+"cross_entropy", BlockHead, fwd, bwd)
	case CrossEntropyUnfusedNative:
		// log_softmax at the logits' width (+ nll_loss's per-token reads
		// and writes, as unfused); backward: nll_loss_backward's dense
		// gradient, log_softmax_backward reads it and the output and
		// writes its result, all at the logits' width
		b.mem(prefix+"cross_entropy", BlockHead, cost{flopsXent * e, e * b.act, e*b.act + 12*b.tok},
			cost{2 * e, 2*e*b.act + 4*b.tok, 2 * e * b.act})
	default:
		if b.act < 4 {
			b.mem(prefix+"logits_to_fp32", BlockHead, cost{e, e * b.act, 4 * e}, cost{e, 4 * e, e * b.act})
		}
		b.mem(prefix+"cross_entropy", BlockHead, cost{flopsXent * e, 4 * e, 4*e + 12*b.tok},
			cost{2 * e, 8*e + 4*b.tok, 8 * e})
	}
}

// CommSizes are the message sizes, in bytes per GPU, of the collectives the
// step simulator inserts around a layer's blocks (see LayerOps).
type CommSizes struct {
	// TPActivation is the activation tensor of one TP collective: the
	// all-reduce after BlockAttnPost / BlockMLP (tok·h, the full local
	// sequence on every TP rank), or the all-gather + reduce-scatter pair
	// of the same tensor with sequence parallelism.
	TPActivation float64
	// CPKeyValue is this GPU's K and V shard that the CP all-gather before
	// BlockAttnCore exchanges: micro-batch·(seq/cp)·local kv heads·(d_qk+d_v).
	CPKeyValue float64
	// EPDispatch is what this GPU sends in one EP all-to-all (dispatch
	// after BlockRouter, or combine after BlockExperts): its routed tokens
	// × top_k × capacity factor × h.
	EPDispatch float64
	// PPActivation is one micro-batch's activation sent to the next
	// pipeline stage (tok·h, divided by tp with sequence parallelism).
	PPActivation float64
}

// Comm returns the per-GPU message sizes for shape s. EPDispatch is zero for
// a dense model.
func (m Model) Comm(s Shape) CommSizes {
	sh := newSplit(m, s)
	h := float64(m.Hidden)
	c := CommSizes{
		TPActivation: sh.tok * h * sh.act,
		CPKeyValue:   sh.tok * float64(sh.kva*(sh.d.qk+sh.d.v)) * sh.act,
		PPActivation: sh.tokSP * h * sh.act,
	}
	if e := m.MoE; e != nil {
		c.EPDispatch = sh.tokSP * float64(e.TopK) * e.RankLoad() * h * sh.act
	}
	return c
}
