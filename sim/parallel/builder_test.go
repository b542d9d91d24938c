package parallel

import (
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/pipeline"
	"github.com/simtrain/simtrain/sim/units"
	"github.com/simtrain/simtrain/sim/workload"
)

// blockPricer makes every priced block of a transformer layer take one
// millisecond (the embedding, output layer and optimizer nothing), every
// all-to-all a2a and every other collective nothing.
type blockPricer struct{ a2a engine.Time }

func (blockPricer) OpsTime(_ int, ops []workload.Op) engine.Time {
	return unitPricer{unit: engine.Millisecond}.OpsTime(0, ops)
}

func (p blockPricer) CommTime(_ GroupKind, _ int, op collectives.Op, _ units.Bytes) engine.Time {
	if op == collectives.AllToAll {
		return p.a2a
	}
	return 0
}

func (blockPricer) SendTime(int, int, units.Bytes) engine.Time { return 0 }

// stepEnd builds cfg with pr, plays one step on one pipeline stage and
// returns the last task end and the program.
func stepEnd(t *testing.T, cfg *StepConfig, pr Pricer) (engine.Time, *Program) {
	t.Helper()
	_, _, prog, _, stop := playSymmetric(t, cfg, pr).Instance(0)
	var end engine.Time
	for _, e := range stop {
		end = max(end, e)
	}
	return end, prog
}

// playSymmetric builds cfg with pr and plays it with one representative
// rank per pipeline stage.
func playSymmetric(t *testing.T, cfg *StepConfig, pr Pricer) *Executor {
	t.Helper()
	progs, err := Build(cfg, pr)
	if err != nil {
		t.Fatal(err)
	}
	x := NewSymmetric(engine.New(), cfg.Layout, progs)
	if err := x.Run(); err != nil {
		t.Fatal(err)
	}
	return x
}

func moeConfig(t *testing.T, overlapEP bool) *StepConfig {
	t.Helper()
	m := workload.Model{Name: "moe-test", Layers: 2, Hidden: 1024, Heads: 16, Vocab: 32000,
		MoE: &workload.MoE{Experts: 8, TopK: 2}}
	m.Fill()
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	l, err := NewLayout(1, 1, 2, 2, 1, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := Partition(2, 1, 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return &StepConfig{Layout: l, Model: m,
		Shape:    workload.Shape{MicroBatch: 1, Seq: 128, Dtype: workload.BF16, EP: 2, FlashAttention: true},
		Schedule: pipeline.OneFOneB, Virtual: 1, Microbatches: 1, Chunks: chunks, Optimizer: "adamw",
		ParamDtype: workload.BF16, GradDtype: workload.BF16, MasterDtype: workload.FP32,
		Overlap: Overlap{GradReduce: true, ParamGather: true, P2P: true, EP: overlapEP}, Steps: 1,
		LayerParams: func(int) (float64, float64) { return 0, 0 },
	}
}

// TestEPOverlap: two MoE layers, every block 1 ms, every all-to-all 0.5 ms.
// Without overlap a layer's forward is attention (3 blocks) + router +
// dispatch + experts + combine all-to-all + combine = 6 ms + 2 × 0.5 ms,
// its backward the same: 2 layers × 14 ms = 28 ms. With overlap.ep each
// all-to-all hides behind the 1 ms block that follows it: 24 ms, and the
// experts no longer wait for their own dispatch.
func TestEPOverlap(t *testing.T) {
	pr := blockPricer{a2a: engine.Millisecond / 2}
	plain, _ := stepEnd(t, moeConfig(t, false), pr)
	hidden, prog := stepEnd(t, moeConfig(t, true), pr)
	if plain != 28*engine.Millisecond || hidden != 24*engine.Millisecond {
		t.Errorf("step %v without and %v with EP overlap, want 28 ms and 24 ms", plain, hidden)
	}
	for i, task := range prog.Tasks {
		if task.Name.String() != "experts_fwd" {
			continue
		}
		for _, d := range prog.Deps(i) {
			if prog.Tasks[d].Name.String() == "ep_dispatch" && prog.Tasks[d].Layer == task.Layer {
				t.Errorf("layer %d: with overlap.ep experts_fwd waits for its own dispatch", task.Layer)
			}
		}
	}
	// All-to-alls longer than the compute behind them stay exposed: 2 ms
	// each, 8 of them, serial on the EP stream, against 1 ms blocks.
	slow, _ := stepEnd(t, moeConfig(t, true), blockPricer{a2a: 2 * engine.Millisecond})
	if slow <= 24*engine.Millisecond {
		t.Errorf("2 ms all-to-alls fully hidden behind 1 ms blocks: step %v", slow)
	}
}

// TestRecomputeSPGathers: with sequence parallelism the recomputed forward
// redoes the all-gathers of the sequence-sharded input: before the
// attention and before the MLP, for full recompute (with the attention's
// reduce-scatter between them) and for per-op selective checkpointing (whose
// saved reduce-scatter output needs none).
func TestRecomputeSPGathers(t *testing.T) {
	count := func(r workload.Recompute, sp bool) map[string]int {
		cfg := tpRecomputeConfig(t, r, sp, 3, 2)
		_, prog := stepEnd(t, cfg, blockPricer{})
		n := map[string]int{}
		for _, task := range prog.Tasks {
			n[task.Name.String()]++
		}
		return n
	}
	const layerMBs = 3 * 2
	for _, c := range []struct {
		r                     workload.Recompute
		sp                    bool
		attnAG, rs, mlpAG, ar int
	}{
		{workload.RecomputeFull, true, layerMBs, layerMBs, layerMBs, 0},
		{workload.RecomputeFull, false, 0, 0, 0, layerMBs},
		{workload.RecomputeSelectiveOp, true, layerMBs, 0, layerMBs, 0},
		{workload.RecomputeSelectiveOp, false, 0, 0, 0, layerMBs},
		{workload.RecomputeNone, true, 0, 0, 0, 0},
	} {
		n := count(c.r, c.sp)
		rsOrAR := n["tp_attn_recompute"]
		rs, ar := rsOrAR, 0
		if !c.sp {
			rs, ar = 0, rsOrAR
		}
		if n["tp_attn_recompute_gather"] != c.attnAG || rs != c.rs || n["tp_mlp_recompute_gather"] != c.mlpAG || ar != c.ar {
			t.Errorf("%v sp=%v: attention gathers %d, reduce-scatters %d, MLP gathers %d, all-reduces %d; want %d %d %d %d",
				c.r, c.sp, n["tp_attn_recompute_gather"], rs, n["tp_mlp_recompute_gather"], ar, c.attnAG, c.rs, c.mlpAG, c.ar)
		}
		if c.r != workload.RecomputeNone && (n["attn_recompute"] != layerMBs || n["mlp_recompute"] != layerMBs) {
			t.Errorf("%v: %d attention and %d MLP recompute tasks, want %d each", c.r, n["attn_recompute"], n["mlp_recompute"], layerMBs)
		}
	}
}

// tpPricer makes every priced op list of a transformer layer take one
// millisecond, the embedding, output layer and optimizer nothing, and every
// TP collective c.
type tpPricer struct{ c engine.Time }

func (tpPricer) OpsTime(_ int, ops []workload.Op) engine.Time {
	return unitPricer{unit: engine.Millisecond}.OpsTime(0, ops)
}
func (p tpPricer) CommTime(k GroupKind, _ int, _ collectives.Op, _ units.Bytes) engine.Time {
	if k == GroupTP {
		return p.c
	}
	return 0
}
func (tpPricer) SendTime(int, int, units.Bytes) engine.Time { return 0 }

// TestTPCommPairedWithGEMMs: with overlap.tp_comm each TP collective of a
// dense layer runs alongside the GEMM it is fused with. The attention and
// MLP parts are split into head (up to the first GEMM), middle and tail
// (the last GEMM on), 1 ms each here: the all-gather runs beside the head
// and the middle waits for it; the reduce-scatter starts with the tail and
// the next part waits for it. A 1.5 ms collective is therefore exposed
// 0.5 ms: in layer 1 the middle starts 1.5 ms after the head and the MLP
// head 1.5 ms after the attention tail; with 0.5 ms collectives nothing is
// exposed (1 ms gaps).
func TestTPCommPairedWithGEMMs(t *testing.T) {
	cfg := tpLayerConfig(t, true, Overlap{TPComm: true})
	l := cfg.Layout
	for _, c := range []struct{ comm, gap engine.Time }{
		{3 * engine.Millisecond / 2, 3 * engine.Millisecond / 2},
		{engine.Millisecond / 2, engine.Millisecond},
	} {
		progs, err := Build(cfg, tpPricer{c: c.comm})
		if err != nil {
			t.Fatal(err)
		}
		x := NewSymmetric(engine.New(), l, progs)
		if err := x.Run(); err != nil {
			t.Fatal(err)
		}
		_, _, prog, start, _ := x.Instance(0)
		at := map[string]engine.Time{}
		deps := map[string]map[string]bool{}
		for i, task := range prog.Tasks {
			if task.Layer != 1 {
				continue
			}
			at[task.Name.String()] = start[i]
			deps[task.Name.String()] = map[string]bool{}
			for _, d := range prog.Deps(i) {
				deps[task.Name.String()][prog.Tasks[d].Name.String()] = true
			}
		}
		for _, g := range []struct{ from, to string }{
			{"attn_head_fwd", "attn_fwd"}, {"attn_tail_fwd", "mlp_head_fwd"}, {"mlp_head_fwd", "mlp_fwd"},
			{"mlp_head_bwd", "mlp_bwd"}, {"mlp_tail_bwd", "attn_head_bwd"}, {"attn_head_bwd", "attn_bwd"},
		} {
			if got := at[g.to] - at[g.from]; got != c.gap {
				t.Errorf("%v collectives: %s starts %v after %s, want %v", c.comm, g.to, got, g.from, c.gap)
			}
		}
		if deps["attn_head_fwd"]["tp_attn_gather"] || !deps["attn_fwd"]["tp_attn_gather"] ||
			!deps["tp_attn"]["attn_fwd"] || deps["tp_attn"]["attn_tail_fwd"] || !deps["mlp_head_fwd"]["tp_attn"] {
			t.Errorf("dependencies %v", deps)
		}
	}
}

// tp2Program builds stage 0 of a two-layer model on TP 2 with sequence
// parallelism (micro-batch 2 × 128 tokens, one micro-batch), every TP
// collective 1 ms (tpPricer), for the TP width and implementation tests.
func tp2Program(t *testing.T, dt workload.Dtype, recipe workload.FP8Recipe, paired, dtensor bool) *Program {
	t.Helper()
	l, err := NewLayout(2, 1, 1, 1, 1, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
	if err != nil {
		t.Fatal(err)
	}
	chunks, _ := Partition(2, 1, 1, 0, 0)
	cfg := &StepConfig{Layout: l, Model: testModel(t, 2),
		Shape: workload.Shape{MicroBatch: 2, Seq: 128, Dtype: dt, FP8Recipe: recipe, TP: 2, SP: true,
			FlashAttention: true},
		Schedule: pipeline.OneFOneB, Virtual: 1, Microbatches: 1, Chunks: chunks, Optimizer: "adamw",
		ParamDtype: workload.BF16, GradDtype: workload.BF16, MasterDtype: workload.FP32, Steps: 1,
		Overlap:       Overlap{TPComm: paired, GradReduce: true, ParamGather: true, P2P: true},
		TPImplDTensor: dtensor,
		LayerParams:   func(int) (float64, float64) { return 1e6, 0 },
	}
	progs, err := Build(cfg, tpPricer{c: engine.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return progs[0]
}

// TestTPCollectiveWidths: the bytes of each TP collective of a layer by
// precision and recipe, for micro-batch 2 × seq 128 × hidden 1024 = 262144
// values (TP 2, SP). bf16: every collective 2 bytes per value = 524288.
// fp8 tensorwise: the block-input gathers (forward, and the output-gradient
// gathers of the backward) move the FP8 copy, 262144 bytes; every
// reduce-scatter moves bf16 GEMM outputs, 524288. fp8 rowwise: torchtitan's
// plain TP, everything bf16. The output layer's input gather is bf16 in all
// three (it stays a bf16 linear). Both the blocking (tpComm) and the paired
// (Overlap.TPComm) paths are checked.
func TestTPCollectiveWidths(t *testing.T) {
	const vals = 2 * 128 * 1024
	for _, c := range []struct {
		name            string
		dt              workload.Dtype
		recipe          workload.FP8Recipe
		gather, reduce  float64
		headGatherBytes float64
	}{
		{"bf16", workload.BF16, workload.FP8Tensorwise, 2 * vals, 2 * vals, 2 * vals},
		{"fp8 tensorwise", workload.FP8, workload.FP8Tensorwise, vals, 2 * vals, 2 * vals},
		{"fp8 rowwise", workload.FP8, workload.FP8Rowwise, 2 * vals, 2 * vals, 2 * vals},
	} {
		for _, paired := range []bool{false, true} {
			prog := tp2Program(t, c.dt, c.recipe, paired, false)
			n := 0
			for _, task := range prog.Tasks {
				if task.Stream != StreamTP {
					continue
				}
				want := c.reduce
				switch {
				case task.Layer < 0 && task.Op == collectives.AllGather:
					want = c.headGatherBytes
				case task.Layer >= 0 && task.Op == collectives.AllGather:
					want = c.gather
				}
				if task.Bytes != want {
					t.Errorf("%s paired=%v: %s (%v) moves %v bytes, want %v", c.name, paired, task.Name.String(), task.Op, task.Bytes, want)
				}
				n++
			}
			if n == 0 {
				t.Errorf("%s paired=%v: no TP collectives", c.name, paired)
			}
		}
	}
}

// TestTPImplDTensor: with StepConfig.TPImplDTensor and blocking TP, every
// sequence all-gather is followed, and every reduce-scatter preceded, by a
// compute-stream copy of the collective's full tensor (one read, one write
// of its bytes), in the pass of the collective; Megatron-style TP has none.
// With AsyncTP (paired layers) no copies are added, and each backward
// input-gradient reduce-scatter starts only after its part's last compute.
func TestTPImplDTensor(t *testing.T) {
	build := func(dtensor, paired bool) *Program {
		return tp2Program(t, workload.BF16, workload.FP8Tensorwise, paired, dtensor)
	}
	copies := func(p *Program) (n int, bad []string) {
		for i, task := range p.Tasks {
			if !strings.HasSuffix(task.Name.String(), "_cat") {
				continue
			}
			n++
			coll := strings.TrimSuffix(task.Name.String(), "_cat")
			// The copy's bytes are the collective's read plus write.
			for _, d := range p.Deps(i) {
				if p.Tasks[d].Name.String() == coll && task.Bytes != 2*p.Tasks[d].Bytes {
					bad = append(bad, task.Name.String())
				}
			}
			for _, s := range p.Succ(i) {
				if p.Tasks[s].Name.String() == coll && task.Bytes != 2*p.Tasks[s].Bytes {
					bad = append(bad, task.Name.String())
				}
			}
		}
		return n, bad
	}
	var gathers, scatters int
	for _, task := range build(true, false).Tasks {
		if task.Stream == StreamTP && task.Op == collectives.AllGather {
			gathers++
		}
		if task.Stream == StreamTP && task.Op == collectives.ReduceScatter {
			scatters++
		}
	}
	if n, bad := copies(build(true, false)); n != gathers+scatters || len(bad) > 0 {
		t.Errorf("dtensor blocking TP: %d copies for %d gathers + %d reduce-scatters; wrong sizes: %v", n, gathers, scatters, bad)
	}
	if n, _ := copies(build(false, false)); n != 0 {
		t.Errorf("megatron TP: %d copies, want 0", n)
	}
	p := build(true, true)
	if n, _ := copies(p); n != 0 {
		t.Errorf("dtensor AsyncTP: %d copies, want 0", n)
	}
	checked := 0
	for i, task := range p.Tasks {
		if task.Stream != StreamTP || task.Op != collectives.ReduceScatter || task.Layer < 0 || !strings.HasSuffix(task.Name.String(), "_bwd") {
			continue
		}
		for _, d := range p.Deps(i) {
			dep := p.Tasks[d]
			if dep.Stream == StreamCompute && !strings.Contains(dep.Name.String(), "tail") && strings.Contains(dep.Name.String(), "_bwd") && task.Layer == dep.Layer {
				// the part has a tail: the reduce-scatter must wait for it
				for _, s := range p.Succ(int(d)) {
					if strings.Contains(p.Tasks[s].Name.String(), "tail") && p.Tasks[s].Layer == task.Layer {
						t.Errorf("%s layer %d waits for %s, not its tail", task.Name.String(), task.Layer, dep.Name.String())
					}
				}
			}
		}
		checked++
	}
	if checked == 0 {
		t.Error("no backward reduce-scatters in the AsyncTP program")
	}
}

// TestFoldedMoECollectives: with MoE parallel folding the MoE block of a
// layer without shared experts has no TP collectives (tp_mlp_gather and the
// tp_mlp reduce-scatter, and their backward twins, disappear) while the
// attention keeps its own; with 1 < ETP < TP an expert-TP all-gather and
// reduce-scatter wrap the experts in each pass. Their size (nccl-tests
// convention, the gathered tensor): etp · tokens per rank (128/tp with SP)
// · top-k 2 · hidden 1024 · 2 bytes = 2·32·2·1024·2 = 262,144 for tp 4,
// etp 2. The expert gradients are per rank experts·params/(etp·ep).
func TestFoldedMoECollectives(t *testing.T) {
	count := func(tp, etp, ep, dp int) (map[string]int, map[string]float64) {
		cfg := moeConfig(t, false)
		l, err := NewFoldedLayout(tp, etp, 1, ep, dp, 1, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Layout = l
		cfg.Shape.TP, cfg.Shape.ETP, cfg.Shape.EP, cfg.Shape.SP = tp, etp, ep, true
		_, prog := stepEnd(t, cfg, blockPricer{})
		n, bytes := map[string]int{}, map[string]float64{}
		for _, task := range prog.Tasks {
			n[task.Name.String()]++
			bytes[task.Name.String()] = task.Bytes
			if strings.HasPrefix(task.Name.String(), "etp_") && task.Group != GroupETP {
				t.Errorf("%s on group %s", task.Name.String(), task.Group)
			}
		}
		return n, bytes
	}
	const layers = 2 // one micro-batch
	// unfolded tp 2: TP collectives around the MoE block, no ETP ones
	n, _ := count(2, 2, 2, 2)
	if n["tp_mlp_gather"] != layers || n["tp_mlp"] != layers || n["tp_mlp_bwd"] != layers || n["etp_gather"] != 0 {
		t.Errorf("unfolded: %v", n)
	}
	// tp 2, etp 1, ep 4 over tp×dp: none around the MoE block
	n, _ = count(2, 1, 4, 2)
	if n["tp_mlp_gather"]+n["tp_mlp"]+n["tp_mlp_bwd_gather"]+n["tp_mlp_bwd"]+n["etp_gather"] != 0 ||
		n["tp_attn"] != layers || n["tp_attn_bwd_gather"] != layers || n["ep_dispatch"] != layers {
		t.Errorf("etp 1: %v", n)
	}
	// tp 4, etp 2, ep 2: expert-TP collectives in both passes
	n, b := count(4, 2, 2, 1)
	for _, name := range []string{"etp_gather", "etp_scatter", "etp_bwd_gather", "etp_bwd_scatter"} {
		if n[name] != layers || b[name] != 262144 {
			t.Errorf("etp 2: %s ×%d, %v bytes; want ×%d, 262144", name, n[name], b[name], layers)
		}
	}
	if n["tp_mlp"] != 0 {
		t.Errorf("etp 2: tp_mlp ×%d", n["tp_mlp"])
	}
	// expert parameters per rank: 8 experts × 1 param / (etp 2 · ep 2)
	cfg := moeConfig(t, false)
	cfg.Layout, _ = NewFoldedLayout(4, 2, 1, 2, 1, 1, [5]Dim{DimTP, DimCP, DimEP, DimDP, DimPP})
	bld := &builder{cfg: cfg}
	cfg.LayerParams = func(int) (float64, float64) { return 4, 8 }
	if d, e := bld.layerParams(0); d != 1 || e != 2 {
		t.Errorf("layerParams = %v, %v; want 1 (4/tp), 2 (8/(etp·ep))", d, e)
	}
}

// TestAsyncTPSymmetricMemory: with StepConfig.TPImplDTensor, sequence
// parallelism and paired TP collectives (PyTorch AsyncTP), every paired
// all-gather and forward reduce-scatter is a copy-engine transfer, every
// paired all-gather has a compute-stream copy of the local shard before
// its first GEMM, and every forward reduce-scatter is followed by the
// reduction of the tp partial results, which the next compute waits for.
// Sizes, from the test shape (micro-batch 2, sequence 128, hidden 1024,
// bf16, tp 2): a gathered tensor S = 2·128·1024·2 = 524,288 bytes; the
// shard copy reads and writes S/2 (Bytes 524,288); the reduction reads S
// and writes S/2 (Bytes 786,432). The backward input-gradient
// reduce-scatters stay NCCL kernels without a reduction, and Megatron-style
// pairing (TPImplDTensor off) has none of this.
func TestAsyncTPSymmetricMemory(t *testing.T) {
	build := func(dtensor bool) *Program {
		return tp2Program(t, workload.BF16, workload.FP8Tensorwise, true, dtensor)
	}
	const S = 2 * 128 * 1024 * 2
	p := build(true)
	var gathers, fwdScatters, bwdScatters int
	for i, task := range p.Tasks {
		if task.Stream != StreamTP || task.Layer < 0 {
			continue
		}
		switch {
		case task.Op == collectives.AllGather:
			gathers++
			if !task.CopyEngine {
				t.Errorf("%s layer %d: not a copy-engine transfer", task.Name.String(), task.Layer)
			}
			found := false
			for j := i + 1; j < len(p.Tasks); j++ {
				c := p.Tasks[j]
				if c.Name.String() == task.Name.String()+"_shard_copy" && c.Layer == task.Layer && c.Stream == StreamCompute {
					found = c.Bytes == S
					break
				}
			}
			if !found {
				t.Errorf("%s layer %d: no shard copy of %d bytes", task.Name.String(), task.Layer, S)
			}
		case task.Op == collectives.ReduceScatter && strings.HasSuffix(task.Name.String(), "_bwd"):
			bwdScatters++
			if task.CopyEngine {
				t.Errorf("%s layer %d: the unfused reduce-scatter is an NCCL kernel", task.Name.String(), task.Layer)
			}
			for _, s := range p.Succ(i) {
				if strings.HasSuffix(p.Tasks[s].Name.String(), "_reduce") {
					t.Errorf("%s layer %d: unexpected reduction %s", task.Name.String(), task.Layer, p.Tasks[s].Name.String())
				}
			}
		case task.Op == collectives.ReduceScatter:
			fwdScatters++
			if !task.CopyEngine {
				t.Errorf("%s layer %d: not a copy-engine transfer", task.Name.String(), task.Layer)
			}
			n := 0
			for _, s := range p.Succ(i) {
				r := p.Tasks[s]
				if r.Name.String() == task.Name.String()+"_reduce" && r.Stream == StreamCompute && r.Bytes == S+S/2 {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%s layer %d: %d reductions of %d bytes, want 1", task.Name.String(), task.Layer, n, S+S/2)
			}
		}
	}
	// 2 layers × (2 forward + 2 backward gathers, 2 forward and 2 backward
	// reduce-scatters).
	if gathers != 8 || fwdScatters != 4 || bwdScatters != 4 {
		t.Errorf("gathers %d, forward reduce-scatters %d, backward %d; want 8, 4, 4", gathers, fwdScatters, bwdScatters)
	}
	for _, task := range build(false).Tasks {
		if task.CopyEngine || strings.HasSuffix(task.Name.String(), "_shard_copy") || strings.HasSuffix(task.Name.String(), "_reduce") {
			t.Errorf("megatron pairing: unexpected AsyncTP task %s", task.Name.String())
		}
	}
}

// TestMoEHostSync: a dropless MoE layer's forward stalls the compute stream
// for StepConfig.MoEHostSync after its router and before its dispatch, once
// per MoE layer and micro-batch: with 0.25 ms stalls the TestEPOverlap step
// grows from 28 ms by 2 layers × 0.25 ms. The stall is a host-sync task,
// not compute, and none is emitted when MoEHostSync is 0.
func TestMoEHostSync(t *testing.T) {
	pr := blockPricer{a2a: engine.Millisecond / 2}
	cfg := moeConfig(t, false)
	cfg.MoEHostSync = engine.Millisecond / 4
	end, prog := stepEnd(t, cfg, pr)
	if want := 28*engine.Millisecond + 2*cfg.MoEHostSync; end != want {
		t.Errorf("step %v with host syncs, want %v", end, want)
	}
	stalls := 0
	for i, task := range prog.Tasks {
		if task.Kind != KindHostSync {
			continue
		}
		stalls++
		if task.Name.String() != "moe_host_sync" || task.Stream != StreamCompute || task.Dur != cfg.MoEHostSync || task.Kind.IsCompute() || task.Kind.IsComm() {
			t.Errorf("stall task %+v", task)
		}
		after := false
		for _, d := range prog.Deps(i) {
			after = after || prog.Tasks[d].Name.String() == "router_fwd" && prog.Tasks[d].Layer == task.Layer
		}
		if !after {
			t.Errorf("layer %d: stall does not follow its router", task.Layer)
		}
	}
	for i, task := range prog.Tasks {
		if task.Name.String() != "ep_dispatch" {
			continue
		}
		waits := false
		for _, d := range prog.Deps(i) {
			waits = waits || prog.Tasks[d].Kind == KindHostSync && prog.Tasks[d].Layer == task.Layer
		}
		if !waits {
			t.Errorf("layer %d: dispatch does not wait for the host", task.Layer)
		}
	}
	if stalls != 2 {
		t.Errorf("%d stalls, want one per MoE layer forward (2)", stalls)
	}
	_, none := stepEnd(t, moeConfig(t, false), pr)
	for _, task := range none.Tasks {
		if task.Kind == KindHostSync {
			t.Fatal("stall emitted with MoEHostSync 0")
		}
	}
}

// TestMoEFullRecompute: full recomputation redoes an MoE layer's forward
// with its dispatch and combine all-to-alls (and the dropless host stall),
// as Megatron-Core's checkpointed TransformerLayer does. TestEPOverlap's
// step (28 ms) gains per layer the attention recompute (3 blocks, 3 ms) and
// router, dispatch, experts, combine all-to-all and combine (1 + 0.5 + 1 +
// 0.5 + 1 ms): 2 × 7 ms = 42 ms; with 0.25 ms stalls, four more stalls.
func TestMoEFullRecompute(t *testing.T) {
	pr := blockPricer{a2a: engine.Millisecond / 2}
	cfg := moeConfig(t, false)
	cfg.Recompute = workload.RecomputeFull
	end, prog := stepEnd(t, cfg, pr)
	if end != 42*engine.Millisecond {
		t.Errorf("step %v with full recompute, want 42 ms", end)
	}
	count := map[string]int{}
	for _, task := range prog.Tasks {
		count[task.Name.String()]++
	}
	for _, n := range []string{"router_recompute", "ep_dispatch_recompute", "experts_recompute", "ep_combine_recompute", "combine_recompute"} {
		if count[n] != 2 {
			t.Errorf("%d %s tasks, want one per layer (2)", count[n], n)
		}
	}
	if count["mlp_recompute"] != 0 {
		t.Error("an MoE layer recomputed as one dense MLP task")
	}
	cfg.MoEHostSync = engine.Millisecond / 4
	stalled, _ := stepEnd(t, cfg, pr)
	if want := 42*engine.Millisecond + 4*cfg.MoEHostSync; stalled != want {
		t.Errorf("step %v with host syncs in forward and recompute, want %v", stalled, want)
	}
}

// TestOffloadTasks: with expert_fc1 offloaded, TestEPOverlap's two-layer
// step (one chunk) copies layer 0's inputs to the host after its forward
// and back before its backward (layer 1, the chunk's last, keeps its own),
// on the two copy-engine streams; the backward of layer 0 waits for the
// reload, issued when layer 1's backward may start. Fast copies hide (28
// ms); 20 ms copies do not: the offload ends 20 ms after layer 0's forward
// (7 ms), the reload 20 ms later at 47 ms, where layer 0's backward would
// have started at 21 ms: +26 ms. Optimizer-state offloading reloads the
// states before the step and offloads them after it.
func TestOffloadTasks(t *testing.T) {
	pr := blockPricer{a2a: engine.Millisecond / 2}
	cfg := moeConfig(t, false)
	cfg.Shape.Offload = workload.OffloadExpertFC1
	bytes := cfg.Model.OffloadBytes(0, cfg.Shape, workload.RecomputeNone)
	cfg.HostD2H, cfg.HostH2D = bytes*1e6, bytes*1e6 // 1 µs copies
	fast, prog := stepEnd(t, cfg, pr)
	if fast != 28*engine.Millisecond {
		t.Errorf("step %v with fast copies, want 28 ms", fast)
	}
	names := map[string]int{}
	for i, task := range prog.Tasks {
		if task.Kind != KindHostCopy {
			continue
		}
		names[task.Name.String()]++
		if task.Layer != 0 || !task.CopyEngine || task.Kind.IsComm() || task.Kind.IsCompute() {
			t.Errorf("copy task %+v", task)
		}
		if task.Name.String() == "reload_h2d" {
			waits := false
			for _, d := range prog.Deps(i) {
				waits = waits || prog.Tasks[d].Name.String() == "offload_d2h"
			}
			if task.Stream != StreamH2D || !waits {
				t.Errorf("reload on stream %v, after its offload: %v", task.Stream, waits)
			}
		}
	}
	if names["offload_d2h"] != 1 || names["reload_h2d"] != 1 {
		t.Errorf("copies %v, want one offload and one reload (layer 0)", names)
	}
	cfg.HostD2H, cfg.HostH2D = bytes/0.020, bytes/0.020 // 20 ms copies
	slow, _ := stepEnd(t, cfg, pr)
	if want := fast + 26*engine.Millisecond; slow != want {
		t.Errorf("step %v with 20 ms copies, want %v", slow, want)
	}
	cfg.Shape.Offload, cfg.OffloadOptimizer = 0, true
	_, opt := stepEnd(t, cfg, pr)
	seen := map[string]bool{}
	for i, task := range opt.Tasks {
		seen[task.Name.String()] = true
		if task.Name.String() == "optimizer_step" {
			waits := false
			for _, d := range opt.Deps(i) {
				waits = waits || opt.Tasks[d].Name.String() == "optimizer_reload_h2d"
			}
			if !waits {
				t.Error("optimizer step does not wait for its states")
			}
		}
	}
	if !seen["optimizer_reload_h2d"] || !seen["optimizer_offload_d2h"] || seen["offload_d2h"] {
		t.Errorf("optimizer offload tasks: %v", seen)
	}
}
