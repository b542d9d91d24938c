package workload

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/pipeline"
)

// korthikantiGPT is the GPT of Korthikanti et al. 2022: MHA, 4h GELU MLP,
// LayerNorm, dropout, 16-bit activations. h = 1024, a = 16 heads.
func korthikantiGPT() Model {
	m := Model{Name: "gpt", Layers: 4, Hidden: 1024, Heads: 16, Vocab: 1000, Activation: "gelu",
		Norm: "layernorm", Bias: true, TiedEmbeddings: true, MaxPositions: 2048, Dropout: true}
	m.Fill()
	return m
}

// TestKorthikantiActivations checks the per-layer activation memory against
// arXiv:2205.05198 eqs. 1-2 and §5 for s = 2048, b = 2, h = 1024, a = 16:
// s·b·h = 4,194,304 and 5·a·s/h = 160.
func TestKorthikantiActivations(t *testing.T) {
	m := korthikantiGPT()
	const sbh = 2048 * 2 * 1024.0
	base := Shape{MicroBatch: 2, Seq: 2048, Dtype: BF16}
	tp4 := base
	tp4.TP = 4
	tp4sp := tp4
	tp4sp.SP = true
	flash := base
	flash.FlashAttention = true
	for _, c := range []struct {
		name string
		s    Shape
		r    Recompute
		want float64
	}{
		// 4,194,304 · 194 = 813,694,976
		{"no parallelism: sbh(34 + 5as/h)", base, RecomputeNone, sbh * (34 + 160)},
		// 4,194,304 · 56 = 234,881,024
		{"TP 4: sbh(10 + 24/t + 5as/(ht))", tp4, RecomputeNone, sbh * (10 + 24.0/4 + 160.0/4)},
		// 4,194,304 · 48.5 = 203,423,744
		{"TP 4 + SP: sbh(34 + 5as/h)/t", tp4sp, RecomputeNone, sbh * (34 + 160) / 4},
		{"selective: 34sbh", base, RecomputeSelective, sbh * 34},
		{"selective, TP 4 + SP: 34sbh/t", tp4sp, RecomputeSelective, sbh * 34 / 4},
		{"flash: 34sbh", flash, RecomputeNone, sbh * 34},
		{"full recompute: 2sbh", base, RecomputeFull, 2 * sbh},
		{"full recompute, TP 4 + SP: 2sbh/t", tp4sp, RecomputeFull, 2 * sbh / 4},
		// 4-byte tensors, the two dropout masks stay 1 byte: 2·(34 − 2) + 2 = 66
		{"fp32 activations", Shape{MicroBatch: 2, Seq: 2048, Dtype: FP32}, RecomputeSelective, 66 * sbh},
		// each GPU holds s/2 tokens
		{"CP 2 halves the sequence", Shape{MicroBatch: 2, Seq: 2048, CP: 2, Dtype: BF16, FlashAttention: true}, RecomputeNone, sbh * 34 / 2},
	} {
		if got := m.LayerActivationBytes(1, c.s, c.r); !near(got, c.want, 1e-12) {
			t.Errorf("%s: %.0f bytes, want %.0f", c.name, got, c.want)
		}
	}
}

func TestModelStateBytes(t *testing.T) {
	for _, c := range []struct {
		prec, master, grad Dtype
		opt                string
		want               float64
	}{
		{BF16, FP32, BF16, "adamw", 16},   // ZeRO §3.1: 2 + 2 + (4 + 4 + 4)
		{BF16, FP32, FP32, "adam", 18},    // fp32 gradient accumulation
		{BF16, FP32, BF16, "sgd", 12},     // 2 + 2 + 4 master + 4 momentum
		{BF16, FP32, BF16, "adagrad", 12}, //
		{FP32, FP32, FP32, "adamw", 16},   // no separate master copy: 4 + 4 + 8
		{FP8, FP32, BF16, "adamw", 16},    // fp8 recipes keep bf16 weights
		{BF16, BF16, BF16, "adamw", 8},    // pure bf16: 2 + 2 + 2·2
	} {
		b, err := ModelStateBytes(c.prec, c.master, c.grad, c.opt)
		if err != nil || b.Total() != c.want {
			t.Errorf("%v/%v/%v %s: %+v = %v, want %v (%v)", c.prec, c.master, c.grad, c.opt, b, b.Total(), c.want, err)
		}
	}
	if _, err := ModelStateBytes(BF16, FP32, BF16, "lion"); err == nil || !strings.Contains(err.Error(), "adamw, adam, sgd, adagrad") {
		t.Errorf("unknown optimizer: %v", err)
	}
}

// TestStageMemory prices a whole GPU by hand. korthikantiGPT has
// 4·(12h² + 13h) + V·h + 2048·h + 2h = 50,384,896 + 1,024,000 + 2,097,152 +
// 2,048 = 53,508,096 parameters.
func TestStageMemory(t *testing.T) {
	m := korthikantiGPT()
	const P = 53508096.0
	if m.Params().Total != P {
		t.Fatalf("params %.0f", m.Params().Total)
	}
	s := Shape{MicroBatch: 2, Seq: 2048, Dtype: BF16}
	in := MemoryInput{Model: m, Shape: s, Layers: 4, HasEmbedding: true, HasHead: true, PP: 1, DP: 4,
		Schedule: pipeline.OneFOneB, Microbatches: 8, Zero: 1, Optimizer: "adamw", MasterDtype: FP32, GradDtype: BF16}
	got := StageMemory(in)
	const sbh = 2048 * 2 * 1024.0
	want := Memory{
		Weights:     2 * P,
		Gradients:   2 * P,
		Optimizer:   12 * P / 4,           // ZeRO-1 over DP 4
		Activations: 4 * sbh * (34 + 160), // four layers, one micro-batch in flight
		// embedding dropout mask s·b·h·1 + output layer 4sbh(1 + V/h): norm and
		// head inputs 2·sbh·2 bytes, fp32 logits s·b·V·4.
		Buffers: sbh + 2*sbh*2 + 4*2048*2*1000,
	}
	tensors := want.Weights + want.Gradients + want.Optimizer + want.Activations + want.Buffers
	// the allocator reserves tensors/0.85: 15% of it holds no live tensor
	want.AllocatorReserve = tensors * 0.15 / 0.85
	want.Overhead = 1e9 + 0.31e9 + want.AllocatorReserve // context, one NCCL group (DP), allocator cache
	want.Total = tensors + want.Overhead
	if got != want {
		t.Errorf("StageMemory\n got %+v\nwant %+v", got, want)
	}
	if r := got.AllocatorReserved(); math.Abs(r-tensors/0.85) > 1e-6*r {
		t.Errorf("allocator reserved %.0f, want tensors/0.85 = %.0f", r, tensors/0.85)
	}
	// The cache never takes the device beyond its capacity: the allocator
	// frees it and retries first. 0.5 GB above the live tensors, context and
	// NCCL buffers (the uncapped cache is 0.65 GB, the part it cannot free
	// 5% of 3.66 GB = 0.18 GB) leaves a 0.5 GB cache and a total of exactly
	// the capacity; 0.1 GB above them leaves less than the 0.18 GB it
	// cannot free: the rank does not fit; neither does a device smaller
	// than the tensors.
	outside := 1e9 + 0.31e9
	for _, c := range []struct {
		capacity, reserve float64
		fits              bool
	}{
		{tensors + outside + 0.5e9, 0.5e9, true},
		{tensors + outside + 1e12, tensors * 0.15 / 0.85, true},
		{tensors + outside + 0.1e9, tensors * 0.05, false},
		{tensors, tensors * 0.05, false},
	} {
		capped := in
		capped.CapacityBytes = c.capacity
		m := StageMemory(capped)
		if math.Abs(m.AllocatorReserve-c.reserve) > 1 || math.Abs(m.Total-(tensors+outside+c.reserve)) > 1 ||
			m.Fits(c.capacity) != c.fits {
			t.Errorf("capacity %.0f: reserve %.0f total %.0f, want reserve %.0f", c.capacity, m.AllocatorReserve, m.Total, c.reserve)
		}
	}
	if !got.Fits(80e9) || got.Fits(1e9) {
		t.Error("Fits")
	}

	// ZeRO-3 on the first of 4 pipeline stages (one layer, embedding only):
	// weights, gradients and optimizer all / DP 2; gathered buffers of two
	// layers of weights and one of gradients (12h² + 13h = 12,596,224 each);
	// activations × 4 micro-batches in flight (1F1B, stage 0).
	in = MemoryInput{Model: m, Shape: s, Layers: 1, HasEmbedding: true, PP: 4, DP: 2, Stage: 0,
		Schedule: pipeline.OneFOneB, Microbatches: 8, Zero: 3, Optimizer: "adamw", MasterDtype: FP32, GradDtype: BF16}
	got = StageMemory(in)
	const layer, emb = 12596224.0, 1024000 + 2097152.0
	if got.Weights != (layer+emb)*2/2 || got.Gradients != (layer+emb)*2/2 || got.Optimizer != (layer+emb)*12/2 {
		t.Errorf("ZeRO-3 states %+v", got)
	}
	if got.Activations != 4*sbh*(34+160) || got.Buffers != 4*sbh+layer*(2*2+2) {
		t.Errorf("ZeRO-3 activations %.0f buffers %.0f", got.Activations, got.Buffers)
	}
	// PyTorch FSDP (ShardIsMaster): the fp32 shard is the weights, no bf16
	// copy beside it: 4 + 2 (bf16 gradients) + 8 (Adam) = 14 bytes per
	// parameter / DP 2 instead of 2 + 2 + 12 = 16; the gathered buffers
	// stay bf16.
	fsdp := in
	fsdp.ShardIsMaster = true
	if f := StageMemory(fsdp); f.Weights != (layer+emb)*4/2 || f.Gradients != (layer+emb)*2/2 ||
		f.Optimizer != (layer+emb)*8/2 || f.Buffers != got.Buffers {
		t.Errorf("FSDP states %+v", f)
	}
	// Full recompute: 2sbh per layer per micro-batch in flight + one layer's working set.
	in.Recompute = RecomputeFull
	if got = StageMemory(in); got.Activations != 4*2*sbh+sbh*(34+160) {
		t.Errorf("full recompute activations %.0f", got.Activations)
	}
	// The model-state bytes do not depend on the activations.
	if got.Weights != (layer+emb)*2/2 {
		t.Error("recompute changed the weights")
	}
}

// TestLossMemory: PyTorch's unfused cross-entropy holds 12 bytes per logit
// at the start of its backward (fp32 log-probabilities, their incoming
// gradient and log_softmax's out-of-place result), the fused and
// vocab-parallel ones 4 (Korthikanti's fp32 logits): on korthikantiGPT's
// head stage the buffers differ by 8·s·b·V = 8·2048·2·1000 bytes, and by
// 1/tp of it with the vocabulary split over TP 2.
func TestLossMemory(t *testing.T) {
	m := korthikantiGPT()
	for _, tp := range []int{1, 2} {
		in := MemoryInput{Model: m, Shape: Shape{MicroBatch: 2, Seq: 2048, Dtype: BF16, TP: tp}, Layers: 4, HasHead: true, PP: 1, DP: 1,
			Schedule: pipeline.OneFOneB, Microbatches: 1, Optimizer: "adamw", MasterDtype: FP32, GradDtype: BF16}
		byCE := map[CrossEntropy]float64{}
		for _, ce := range []CrossEntropy{CrossEntropyFused, CrossEntropyUnfused, CrossEntropyVocabParallel} {
			in.Shape.CrossEntropy = ce
			byCE[ce] = StageMemory(in).Buffers
		}
		want := 8 * 2048 * 2 * 1000 / float64(tp)
		if got := byCE[CrossEntropyUnfused] - byCE[CrossEntropyFused]; got != want {
			t.Errorf("tp %d: unfused − fused buffers = %.0f, want %.0f", tp, got, want)
		}
		if byCE[CrossEntropyVocabParallel] != byCE[CrossEntropyFused] {
			t.Errorf("tp %d: vocab-parallel %.0f, fused %.0f", tp, byCE[CrossEntropyVocabParallel], byCE[CrossEntropyFused])
		}
	}
	// Only the stage with the head pays it.
	in := MemoryInput{Model: m, Shape: Shape{MicroBatch: 2, Seq: 2048, Dtype: BF16, CrossEntropy: CrossEntropyUnfused}, Layers: 1, HasEmbedding: true,
		PP: 4, DP: 1, Schedule: pipeline.OneFOneB, Microbatches: 8, Optimizer: "adamw", MasterDtype: FP32, GradDtype: BF16}
	fused := in
	fused.Shape.CrossEntropy = CrossEntropyFused
	if StageMemory(in) != StageMemory(fused) {
		t.Error("the loss changed a stage without the head")
	}
}

// TestZeRO2Accumulation: ZeRO-2 reduce-scatters gradients on the last
// micro-batch only, so with gradient accumulation the rank's whole gradient
// is held unsharded, in the reduce dtype, from the first backward on, beside
// the activations then in flight. korthikantiGPT's first of 4 stages (one
// layer + embedding: 12,596,224 + 3,121,152 = 15,717,376 parameters), fp32
// gradients, DP 4.
func TestZeRO2Accumulation(t *testing.T) {
	m := korthikantiGPT()
	const params = 12596224 + 1024000 + 2097152.0
	const sbh = 2048 * 2 * 1024.0
	perMB := sbh * (34 + 160)
	in := MemoryInput{Model: m, Shape: Shape{MicroBatch: 2, Seq: 2048, Dtype: BF16}, Layers: 1, HasEmbedding: true, PP: 4, DP: 4,
		Schedule: pipeline.OneFOneB, Microbatches: 8, Zero: 2, Optimizer: "adamw", MasterDtype: FP32, GradDtype: FP32}
	for _, c := range []struct {
		name        string
		micro       int
		r           Recompute
		grads, acts float64
	}{
		// 8 micro-batches > 4 in flight: forwards follow the first
		// backward, so all four micro-batches' activations meet the
		// unsharded gradient.
		{"8 micro-batches", 8, RecomputeNone, 4 * params, 4 * perMB},
		// 4 micro-batches = 4 in flight: after the first backward only
		// three remain, and the end of the warm-up (four in flight, no
		// gradient yet) is the larger peak with these activations ...
		{"4 micro-batches", 4, RecomputeNone, 4 * params / 4, 4 * perMB},
		// ... but not under full recomputation (2sbh per micro-batch plus
		// one layer's working set).
		{"4 micro-batches, full recompute", 4, RecomputeFull, 4 * params, 3*2*sbh + perMB},
		// one micro-batch: nothing accumulates, the gradients are reduced
		// as the backward makes them and held sharded.
		{"1 micro-batch", 1, RecomputeNone, 4 * params / 4, 1 * perMB},
	} {
		in.Microbatches, in.Recompute = c.micro, c.r
		got := StageMemory(in)
		if !near(got.Gradients, c.grads, 1e-12) || !near(got.Activations, c.acts, 1e-12) {
			t.Errorf("%s: gradients %.0f activations %.0f, want %.0f and %.0f", c.name, got.Gradients, got.Activations, c.grads, c.acts)
		}
	}
	// ZeRO-3 reduce-scatters every micro-batch: its gradients stay sharded.
	in.Zero, in.Microbatches, in.Recompute = 3, 8, RecomputeNone
	if got := StageMemory(in); !near(got.Gradients, 4*params/4, 1e-12) {
		t.Errorf("ZeRO-3 gradients %.0f, want %.0f", got.Gradients, 4*params/4)
	}
	// ... unless it syncs on the last micro-batch only (GradSyncLast:
	// FSDP2's set_requires_gradient_sync(False)): then, as ZeRO-2, the
	// whole fp32 gradient (4 bytes × 15,717,376 parameters) is held
	// unsharded beside the four micro-batches in flight.
	in.GradSyncLast = true
	if got := StageMemory(in); !near(got.Gradients, 4*params, 1e-12) || !near(got.Activations, 4*perMB, 1e-12) {
		t.Errorf("ZeRO-3 syncing on the last micro-batch: gradients %.0f activations %.0f, want %.0f and %.0f", got.Gradients, got.Activations, 4*params, 4*perMB)
	}
}

// TestStageMemoryMoE: expert parameters shard over EP and TP, the rest
// over TP only; mixtral-8x7b with TP 2, EP 8, one layer on the rank.
func TestStageMemoryMoE(t *testing.T) {
	m, _ := Preset("mixtral-8x7b")
	in := MemoryInput{Model: m, Shape: Shape{MicroBatch: 1, Seq: 4096, Dtype: BF16, TP: 2, EP: 8, SP: true, FlashAttention: true},
		Layers: 1, PP: 32, DP: 8, Stage: 5, Schedule: pipeline.OneFOneB, Microbatches: 64, Optimizer: "adamw", MasterDtype: FP32, GradDtype: BF16}
	got := StageMemory(in)
	// attention 41,943,040/2 + norms 8,192 + router 32,768 + one expert 176,160,768/2
	want := (41943040/2 + 8192 + 32768 + 176160768/2) * 2.0
	if got.Weights != want {
		t.Errorf("weights %.0f, want %.0f", got.Weights, want)
	}
}

func TestKVCacheAndDecode(t *testing.T) {
	m, _ := Preset("llama3-70b")
	// 2 (K,V) · 80 layers · 8 kv heads · 128 · 2 bytes = 327,680 bytes per token.
	if got := m.KVCacheBytesPerToken(BF16) * 8192; got != 2684354560 {
		t.Errorf("llama3-70b KV at 8192 = %.0f bytes, want 2,684,354,560", got)
	}
	ds, _ := Preset("deepseek-v3")
	if got := ds.KVCacheBytesPerToken(BF16); got != 61*576*2 { // latent 512 + rope key 64
		t.Errorf("deepseek-v3 MLA KV per token %.0f", got)
	}
	// Llama-3-70B in fp16 on one H100 (3.35 TB/s): every weight but the
	// input table (70,553,706,496 − 1,050,673,152 = 69,503,033,344 → 139.0 GB)
	// per token: 3.35e12/139.006e9 = 24.1 tok/s (the course's ≈ 24); with an
	// 8192-token KV cache (2.68 GB) 23.6 tok/s.
	d := m.DecodeBound(8192, 1, FP16, 3.35e12)
	if d.WeightBytes != 2*69503033344.0 || d.KVBytes != 2684354560 {
		t.Errorf("decode bytes %+v", d)
	}
	if !near(d.WeightsOnlyTokensPerS, 3.35e12/139006066688, 1e-12) || !near(d.TokensPerS, 3.35e12/(139006066688+2684354560), 1e-12) {
		t.Errorf("decode tokens/s %+v", d)
	}
	if d.WeightsOnlyTokensPerS < 23.5 || d.WeightsOnlyTokensPerS >= 24.5 || d.TokensPerS < 23.5 || d.TokensPerS >= 24.5 {
		t.Errorf("Llama-3-70B decode on H100 should be ≈ 24 tok/s: %+v", d)
	}
	// MoE decode at batch 1 reads only top-k experts: mixtral reads 2 of 8.
	mx, _ := Preset("mixtral-8x7b")
	one, _ := mx.mlpParams(14336)
	if got := mx.DecodeBound(1, 1, BF16, 1e12).WeightBytes; got != 2*(mx.Params().Total-32000*4096-32*6*one) {
		t.Errorf("mixtral decode weight bytes %.0f", got)
	}
}

// TestStageMemoryLayerIDs: which layers a rank holds decides how many are
// MoE; deepseek-v3's first three layers are dense.
func TestStageMemoryLayerIDs(t *testing.T) {
	m, _ := Preset("deepseek-v3")
	in := MemoryInput{Model: m, Shape: Shape{MicroBatch: 1, Seq: 4096, Dtype: BF16, EP: 8, FlashAttention: true},
		Layers: 3, PP: 16, DP: 8, Optimizer: "adamw", MasterDtype: FP32, GradDtype: BF16}
	dense := StageMemory(in) // Stage 0: layers 0-2
	in.LayerIDs = []int{3, 4, 5}
	moe := StageMemory(in)
	wd, we := 0.0, 0.0
	for l := range 3 {
		d, _ := m.LayerParams(l)
		wd += 2 * d
		d, e := m.LayerParams(3 + l)
		we += 2 * (d + e/8)
	}
	if dense.Weights != wd || moe.Weights != we {
		t.Errorf("weights dense %.0f (want %.0f), MoE %.0f (want %.0f)", dense.Weights, wd, moe.Weights, we)
	}
	in.LayerIDs, in.Stage = nil, 1 // Stage 1: layers 3-5
	if got := StageMemory(in); got.Weights != moe.Weights || got.Activations != moe.Activations*15/16 {
		t.Error("Stage 1 of 3-layer stages should hold layers 3-5, with 15 micro-batches in flight")
	}
}

// TestStageMemoryFolded: Mixtral with tp 2, ep 8 and expert TP 1 on dp 8:
// each GPU holds one whole expert (8/ep, not split), attention split by TP:
// weights (41,943,040/2 + 8,192 + 32,768 + 176,160,768) × 2 bytes. With
// ZeRO-1 the optimizer (12 bytes: fp32 master + two Adam states) is sharded
// over DP·CP = 8 for dense parameters and over the expert data-parallel
// group tp·cp·dp/(etp·ep) = 2·8/8 = 2 for the expert ones.
func TestStageMemoryFolded(t *testing.T) {
	m, _ := Preset("mixtral-8x7b")
	in := MemoryInput{Model: m, Shape: Shape{MicroBatch: 1, Seq: 4096, Dtype: BF16, TP: 2, ETP: 1, EP: 8, SP: true, FlashAttention: true},
		Layers: 1, PP: 32, DP: 8, Stage: 5, Schedule: pipeline.OneFOneB, Microbatches: 64, Zero: 1, Optimizer: "adamw", MasterDtype: FP32, GradDtype: BF16}
	got := StageMemory(in)
	dense, expert := 41943040/2+8192+32768.0, 176160768.0
	if got.Weights != (dense+expert)*2 {
		t.Errorf("weights %.0f, want %.0f", got.Weights, (dense+expert)*2)
	}
	if want := (dense/8 + expert/2) * 12; got.Optimizer != want {
		t.Errorf("optimizer %.0f, want %.0f", got.Optimizer, want)
	}
}

// TestRecomputeEveryMemory: with full recomputation of every 2nd of the
// four layers, two layers keep their full activations (34 + 160 sbh each,
// korthikantiGPT without FlashAttention), two keep their input (2 sbh),
// and one recomputed layer's activations are the working set.
func TestRecomputeEveryMemory(t *testing.T) {
	m := korthikantiGPT()
	s := Shape{MicroBatch: 2, Seq: 2048, Dtype: BF16}
	const sbh = 2048 * 2 * 1024.0
	for _, c := range []struct {
		every int
		want  float64
	}{
		{0, 4*2*sbh + (34+160)*sbh},
		{1, 4*2*sbh + (34+160)*sbh},
		{2, 2*2*sbh + 2*(34+160)*sbh + (34+160)*sbh},
		{5, 4*(34+160)*sbh + 0}, // no layer reaches the 5th: nothing recomputed
	} {
		in := MemoryInput{Model: m, Shape: s, Layers: 4, PP: 1, DP: 1, Schedule: pipeline.OneFOneB, Microbatches: 1,
			Optimizer: "adamw", MasterDtype: FP32, GradDtype: BF16, Recompute: RecomputeFull, RecomputeEvery: c.every}
		if got := StageMemory(in).Activations; got != c.want {
			t.Errorf("every %d: activations %.0f, want %.0f", c.every, got, c.want)
		}
	}
	if RecomputesLayer(2, 1) || !RecomputesLayer(2, 2) || !RecomputesLayer(0, 1) {
		t.Error("RecomputesLayer")
	}
}

// TestDualPipeMemory holds the memory model to DeepSeek-V3's Table 2
// (arXiv:2412.19437 §3.2.1): against 1F1B on the same p stages, a
// DualPipe stage holds two model chunks (one of each copy of the model:
// 2× the parameters) and p + 1 chunk-micro-batches of activations
// against 1F1B's first stage's p.
func TestDualPipeMemory(t *testing.T) {
	m, _ := Preset("llama3-8b")
	const p, mb = 4, 16
	per := m.Layers / p
	chunk := func(k int) []int {
		ids := make([]int, per)
		for i := range ids {
			ids[i] = k*per + i
		}
		return ids
	}
	s := Shape{MicroBatch: 1, Seq: 4096, TP: 1, EP: 1, Dtype: BF16, FlashAttention: true}
	in := func(sched pipeline.Schedule, stage int, ids []int) Memory {
		return StageMemory(MemoryInput{Model: m, Shape: s, Layers: len(ids), LayerIDs: ids, PP: p, DP: 1, Stage: stage,
			Schedule: sched, Microbatches: mb, Optimizer: "adamw", MasterDtype: FP32, GradDtype: BF16})
	}
	// stage 1 of DualPipe holds model chunk 1 of one copy and chunk p−2 of the other
	oneF, dual := in(pipeline.OneFOneB, 1, chunk(1)), in(pipeline.DualPipe, 1, append(chunk(1), chunk(p-2)...))
	if dual.Weights != 2*oneF.Weights || dual.Optimizer != 2*oneF.Optimizer {
		t.Errorf("dualpipe parameters %.4g B, 1F1B %.4g B: want 2×", dual.Weights, oneF.Weights)
	}
	first := in(pipeline.OneFOneB, 0, chunk(1)) // 1F1B's first stage: p in flight (same layer kind)
	if got, want := dual.Activations/first.Activations, float64(p+1)/p; math.Abs(got-want) > 1e-12 {
		t.Errorf("dualpipe activations %.4g B = %.4f × 1F1B's first stage, Table 2 gives (p+1)/p = %.4f", dual.Activations, got, want)
	}
}

// TestFP8ParamMemory: Megatron's FP8 parameters replace the bf16 compute
// copy: 1 byte per parameter where FP8 GEMMs run in any layout
// (Blackwell), 2 with Hopper's cached transpose, 2 + 2/32 for MXFP8's row-
// and column-wise copies with their E8M0 scales; only the weights move.
func TestFP8ParamMemory(t *testing.T) {
	for _, c := range []struct {
		r     FP8Recipe
		nonTN bool
		want  float64
	}{
		{FP8Tensorwise, true, 1}, {FP8Tensorwise, false, 2}, {FP8Delayed, true, 1}, {FP8Blockwise, false, 2},
		{FP8MXFP8, true, 2.0625}, {FP8MXFP8, false, 2.0625},
	} {
		if got := FP8ParamBytes(c.r, c.nonTN); got != c.want {
			t.Errorf("%v nonTN=%v: %v bytes, want %v", c.r, c.nonTN, got, c.want)
		}
	}
	m := korthikantiGPT()
	P := m.Params().Total
	in := MemoryInput{Model: m, Shape: Shape{MicroBatch: 2, Seq: 2048, Dtype: FP8}, Layers: 4, HasEmbedding: true, HasHead: true,
		PP: 1, DP: 4, Schedule: pipeline.OneFOneB, Microbatches: 8, Zero: 1, Optimizer: "adamw", MasterDtype: FP32, GradDtype: FP32}
	bf := StageMemory(in)
	in.WeightBytes = 1
	f8 := StageMemory(in)
	if bf.Weights != 2*P || f8.Weights != P || f8.Gradients != bf.Gradients || f8.Optimizer != bf.Optimizer || f8.Activations != bf.Activations {
		t.Errorf("bf16 copy %+v\nFP8 params %+v", bf, f8)
	}
}

// TestDDPBucketCopy: PyTorch DDP's reducer (gradient_as_bucket_view off)
// keeps a bucket copy of every gradient beside .grad, so zero 0 holds the
// gradients twice; ZeRO 1-3 (not DDP) are unchanged. korthikantiGPT's first
// of 4 stages: 15,717,376 parameters, fp32 gradients (4 B), DP 4.
func TestDDPBucketCopy(t *testing.T) {
	m := korthikantiGPT()
	const params = 12596224 + 1024000 + 2097152.0
	in := MemoryInput{Model: m, Shape: Shape{MicroBatch: 2, Seq: 2048, Dtype: BF16}, Layers: 1, HasEmbedding: true, PP: 4, DP: 4,
		Schedule: pipeline.OneFOneB, Microbatches: 8, Optimizer: "adamw", MasterDtype: FP32, GradDtype: FP32}
	for _, c := range []struct {
		zero  int
		copy  bool
		grads float64
	}{
		{0, false, 4 * params},
		{0, true, 2 * 4 * params}, // 125,739,008 B: .grad and its bucket
		{1, true, 4 * params},     // ZeRO-1 is not DDP: no bucket copy priced
		{2, true, 4 * params},     // ZeRO-2 holds the whole gradient while accumulating (TestZeRO2Accumulation)
	} {
		in.Zero, in.GradBucketCopy = c.zero, c.copy
		base := in
		base.GradBucketCopy = false
		got, without := StageMemory(in), StageMemory(base)
		if !near(got.Gradients, c.grads, 1e-12) {
			t.Errorf("zero %d, copy %v: gradients %.0f, want %.0f", c.zero, c.copy, got.Gradients, c.grads)
		}
		if got.Activations != without.Activations || got.Weights != without.Weights || got.Optimizer != without.Optimizer {
			t.Errorf("zero %d, copy %v: the bucket copy moved something besides the gradients", c.zero, c.copy)
		}
	}
}

// TestAppendLayerIDsEqualsLayerIDs: the layers listed into a dirty buffer
// (StageMemory's stack array) equal layerIDs' new list, from LayerIDs or
// from Stage·Layers, clamped, and past the buffer's room.
func TestAppendLayerIDsEqualsLayerIDs(t *testing.T) {
	m := llama8B()
	for _, in := range []MemoryInput{
		{Model: m, Layers: 4, Stage: 2},
		{Model: m, Layers: 12, Stage: 3}, // past the model: clamped
		{Model: m, LayerIDs: []int{7, 3, -1, 40, 5}},
		{Model: m, Layers: 0},
		{Model: m, LayerIDs: make([]int, 300)},
	} {
		buf := []int{9, 9, 9, 9, 9, 9}
		want := in.layerIDs()
		if got := in.appendLayerIDs(buf[:3]); !slices.Equal(got, want) {
			t.Errorf("%v layers from stage %d, ids %v: %v, want %v", in.Layers, in.Stage, in.LayerIDs, got, want)
		}
	}
}
