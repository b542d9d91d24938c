package simulation

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/workload"
)

// heteroScenario is Llama 3 8B at tp 8 on nodes of 8 GPUs with the given
// cluster block (one line per field, indented two spaces) and parallel
// fields.
func heteroScenario(t *testing.T, cluster, par string) *scenario.Plan {
	t.Helper()
	doc := fmt.Sprintf(`name: hetero
model:
  preset: llama3-8b
training:
  seq_len: 4096
  global_batch: 64
cluster:
%s
parallel:
  tp: 8
%s
`, cluster, par)
	s, err := scenario.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// stageCompute is the compute-stream time per step of each pipeline stage's
// first rank.
func stageCompute(r *Result) []float64 {
	pp := r.Layout.PP
	out := make([]float64, pp)
	ranks := make([]int, pp)
	for st := range ranks {
		ranks[st] = r.Layout.World() / pp * st
	}
	r.Tasks(ranks, func(tr TaskRecord) {
		if tr.Stream == "compute" {
			out[r.Layout.CoordOf(tr.Rank).PP] += float64(tr.EndNs-tr.StartNs) / 1e9
		}
	})
	return out
}

// TestHeteroStagesPricedOnTheirGPU is the hand-checkable H100+H200 case:
// pp 2 with stage 0 on an H100 node and stage 1 on an H200 node computes
// each stage exactly as the all-H100 and the all-H200 cluster compute that
// stage, and the H200 stage is faster by no more than the two profiles'
// effective-HBM ratio (GEMMs run at the same tensor-core peak and
// efficiency, memory-bound kernels at 4.15 vs the H100's STREAM TB/s).
func TestHeteroStagesPricedOnTheirGPU(t *testing.T) {
	par := "  pp: 2"
	mixed := mustRun(t, heteroScenario(t, "  node_groups: [{gpu: h100-sxm, nodes: 1}, {gpu: h200, nodes: 1}]", par), Options{})
	h100 := mustRun(t, heteroScenario(t, "  gpu: h100-sxm\n  nodes: 2", par), Options{})
	h200 := mustRun(t, heteroScenario(t, "  gpu: h200\n  nodes: 2", par), Options{})
	m, a, b := stageCompute(mixed), stageCompute(h100), stageCompute(h200)
	// Within 5e-5: a compute kernel overlapped with communication is
	// slowed by it (parallel.Interference, persistent GEMMs by whole waves
	// on Hopper), and what overlaps shifts a little when the neighbouring
	// stage runs at another pace.
	if math.Abs(m[0]/a[0]-1) > 5e-5 || math.Abs(m[1]/b[1]-1) > 5e-5 {
		t.Fatalf("stage compute %v s, want stage 0 as on H100 (%v) and stage 1 as on H200 (%v)", m, a[0], b[1])
	}
	g100, _ := hardware.LookupGPU("h100-sxm")
	g200, _ := hardware.LookupGPU("h200")
	hbm := func(g hardware.GPU) float64 { return float64(g.HBMBandwidth) * g.Compute.HBMEff }
	ratio := hbm(g200) / hbm(g100)
	if speedup := a[1] / m[1]; !(speedup > 1 && speedup < ratio) {
		t.Errorf("H200 stage speed-up %.4f, want between 1 and the HBM ratio %.4f", speedup, ratio)
	}
	// A purely memory-bound kernel runs exactly the HBM ratio faster.
	op := workload.Op{Name: "copy", Class: workload.ClassMemory, BytesRead: 4e9, BytesWritten: 4e9}
	d100, d200 := workload.DeviceOf(g100).OpTime(op, workload.BF16), workload.DeviceOf(g200).OpTime(op, workload.BF16)
	if got := d100 / d200; math.Abs(got/ratio-1) > 0.02 {
		t.Errorf("memory-bound kernel H100/H200 %.4f, want the HBM ratio %.4f", got, ratio)
	}
	if mixed.StepTimeS >= h100.StepTimeS || mixed.StepTimeS <= h200.StepTimeS {
		t.Errorf("step %.4g s, want between all-H200 %.4g and all-H100 %.4g", mixed.StepTimeS, h200.StepTimeS, h100.StepTimeS)
	}
}

// TestHeteroCriticalStage: with more layers on stage 0 (the critical
// stage), putting the slower H100 nodes under it is slower than putting
// the H200 there.
func TestHeteroCriticalStage(t *testing.T) {
	par := "  pp: 2\n  stage_layers: [20, 12]"
	slowOnCritical := mustRun(t, heteroScenario(t, "  node_groups: [{gpu: h100-sxm, nodes: 1}, {gpu: h200, nodes: 1}]", par), Options{})
	fastOnCritical := mustRun(t, heteroScenario(t, "  node_groups: [{gpu: h200, nodes: 1}, {gpu: h100-sxm, nodes: 1}]", par), Options{})
	if slowOnCritical.StepTimeS <= fastOnCritical.StepTimeS {
		t.Errorf("H100 on the 20-layer stage %.5g s, H200 there %.5g s: want the first slower", slowOnCritical.StepTimeS, fastOnCritical.StepTimeS)
	}
	if c := slowOnCritical.Scenario.Chunks(); c[0][0].Layers != 20 || c[1][0].Layers != 12 || c[1][0].FirstLayer != 20 {
		t.Errorf("stage_layers [20, 12] cut %+v", c)
	}
}

// TestHeteroDataParallelSlowestSetsThePace: with dp outermost every stage
// spans both groups, and synchronous data parallelism runs at the slowest
// member's pace: every stage computes as on the all-H100 cluster, and the
// step is no faster than the all-H100 step (the H200 nodes' tensor-parallel
// collectives run with the H200's own NCCL profile, a little slower here).
func TestHeteroDataParallelSlowestSetsThePace(t *testing.T) {
	par := "  pp: 2\n  order: tp-cp-ep-pp-dp"
	mixed := mustRun(t, heteroScenario(t, "  node_groups: [{gpu: h100-sxm, nodes: 2}, {gpu: h200, nodes: 2}]", par), Options{})
	h100 := mustRun(t, heteroScenario(t, "  gpu: h100-sxm\n  nodes: 4", par), Options{})
	h200 := mustRun(t, heteroScenario(t, "  gpu: h200\n  nodes: 4", par), Options{})
	m, a := stageCompute(mixed), stageCompute(h100)
	for st := range m {
		if math.Abs(m[st]/a[st]-1) > 1e-5 {
			t.Errorf("stage %d computes %.6g s, want the all-H100 %.6g s", st, m[st], a[st])
		}
	}
	if mixed.StepTimeS < h100.StepTimeS || mixed.StepTimeS <= h200.StepTimeS {
		t.Errorf("dp over H100+H200: step %.6g s, want no faster than all-H100 %.6g s (all-H200 %.6g s)", mixed.StepTimeS, h100.StepTimeS, h200.StepTimeS)
	}
	if g := mixed.Scenario.StageGroups(); len(g) != 2 || g[0] != 3 || g[1] != 3 {
		t.Errorf("stage groups %v, want both stages on both groups (3, 3)", g)
	}
	// Every rank, not one per stage: the same figures.
	all := mustRun(t, heteroScenario(t, "  node_groups: [{gpu: h100-sxm, nodes: 2}, {gpu: h200, nodes: 2}]", par), Options{AllRanks: true})
	if all.StepTimeS != mixed.StepTimeS {
		t.Errorf("every rank played: step %.6g s, representative ranks %.6g s", all.StepTimeS, mixed.StepTimeS)
	}
}

// TestHeteroMemoryCostAndMFU: memory is checked per stage against its own
// GPUs; MFU divides by the sum of every GPU's peak; cost sums each group's
// GPUs at its price.
func TestHeteroMemoryCostAndMFU(t *testing.T) {
	r := mustRun(t, heteroScenario(t, "  node_groups: [{gpu: h200, nodes: 1, gpu_hour_usd: 3}, {gpu: h100-sxm, nodes: 3, gpu_hour_usd: 2}]", "  pp: 4"), Options{})
	s := r.Scenario
	g100, _ := hardware.LookupGPU("h100-sxm")
	g200, _ := hardware.LookupGPU("h200")
	if got := s.StageCapacityBytes(0); got != float64(g200.HBMUsableBytes) {
		t.Errorf("stage 0 capacity %g, want the H200's %g", got, float64(g200.HBMUsableBytes))
	}
	if got := s.StageCapacityBytes(3); got != float64(g100.HBMUsableBytes) {
		t.Errorf("stage 3 capacity %g, want the H100's %g", got, float64(g100.HBMUsableBytes))
	}
	if r.MemCapacityBytes != float64(g100.HBMUsableBytes) {
		t.Errorf("capacity %g, want the smallest GPU's %g", r.MemCapacityBytes, float64(g100.HBMUsableBytes))
	}
	wantMargin := math.Inf(1)
	for _, m := range r.Memory {
		wantMargin = min(wantMargin, s.StageCapacityBytes(m.Stage)-m.Total)
	}
	if r.MemMarginBytes != wantMargin {
		t.Errorf("margin %g, want %g", r.MemMarginBytes, wantMargin)
	}
	wantCost := (8*3.0 + 24*2.0) * r.StepTimeS / 3600
	if math.Abs(r.CostUSDPerStep/wantCost-1) > 1e-12 {
		t.Errorf("cost per step %.6g, want %.6g", r.CostUSDPerStep, wantCost)
	}
	peak := 8*float64(workload.DeviceOf(g200).Peak[workload.BF16]) + 24*float64(workload.DeviceOf(g100).Peak[workload.BF16])
	if want := r.ModelFLOPsPerStep / (peak * r.StepTimeS); math.Abs(r.MFU/want-1) > 1e-12 {
		t.Errorf("MFU %.6g, want %.6g", r.MFU, want)
	}
	if s.GPUName() != "h200+h100-sxm" || s.Nodes() != 4 || s.GPUs() != 32 {
		t.Errorf("gpu %q, nodes %d, GPUs %d", s.GPUName(), s.Nodes(), s.GPUs())
	}
}

// TestHeteroErrors: bad node groups and stage splits fail with one line
// naming the field.
func TestHeteroErrors(t *testing.T) {
	for _, c := range []struct{ cluster, par, want string }{
		{"  gpu: h100-sxm\n  node_groups: [{gpu: h200, nodes: 1}]", "", "cluster.node_groups: replaces cluster.gpu and cluster.nodes"},
		{"  node_groups: [{gpu: h100-sxm, nodes: 1}, {gpu: h300, nodes: 1}]", "", "cluster.node_groups[1].gpu:"},
		{"  node_groups: [{gpu: h100-sxm, nodes: 1}, {nodes: 1}]", "", "cluster.node_groups[1].gpu: required (valid:"},
		{"  node_groups: [{gpu: h100-sxm, nodes: 0}]", "", "cluster.node_groups[0].nodes: must be between 1 and"},
		{"  node_groups: [{gpu: h100-sxm, nodes: 9000000000000000000}, {gpu: h200, nodes: 9000000000000000000}]", "", "cluster.node_groups[0].nodes: must be between 1 and"},
		{"  node_groups: [{gpu: h100-sxm, nodes: 60000}, {gpu: h200, nodes: 60000}]", "", "more than the"},
		{"  node_groups: [{gpu: h100-sxm, nodes: 1}, {gpu: a100-80gb, nodes: 1}]", "", "cluster.node_groups[1].gpu: a100-80gb's node fabric"},
		{"  node_groups: [{gpu: h100-sxm, nodes: 1, gpu_hour_usd: -1}]", "", "cluster.node_groups[0].gpu_hour_usd: must be >= 0"},
		{"  node_groups: [{gpu: h100-sxm, nodes: 1}]\n  gpu_hour_usd: 2", "", "cluster.gpu_hour_usd: with cluster.node_groups"},
		{"  gpu: h100-sxm\n  nodes: 2", "  pp: 2\n  stage_layers: [16]", "parallel.stage_layers: 1 entries for pp 2"},
		{"  gpu: h100-sxm\n  nodes: 2", "  pp: 2\n  stage_layers: [16, 15]", "parallel.stage_layers: the entries sum to 31, model.layers is 32"},
		{"  gpu: h100-sxm\n  nodes: 2", "  pp: 2\n  stage_layers: [16, 16]\n  first_stage_layers: 10", "parallel.stage_layers: replaces first_stage_layers"},
		{"  gpu: h100-sxm\n  nodes: 2", "  pp: 2\n  schedule: dualpipe-v\n  stage_layers: [16, 16]", "parallel.stage_layers: schedule dualpipe-v does not cut the model by stage (valid: gpipe, 1f1b, interleaved, zero-bubble)"},
	} {
		doc := fmt.Sprintf("name: e\nmodel:\n  preset: llama3-8b\ntraining:\n  seq_len: 4096\n  global_batch: 64\ncluster:\n%s\nparallel:\n  tp: 8\n%s\n", c.cluster, c.par)
		_, err := scenario.Parse([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %v, want %q", c.cluster+" / "+c.par, err, c.want)
		}
	}
}

// TestHeteroEncodeRoundTrips: a heterogeneous scenario written by Encode
// reads back to the same run id.
func TestHeteroEncodeRoundTrips(t *testing.T) {
	s := heteroScenario(t, "  node_groups: [{gpu: h200, nodes: 1, gpu_hour_usd: 3.5}, {gpu: h100-sxm, nodes: 1}]", "  pp: 2\n  stage_layers: [18, 14]")
	back, err := scenario.Parse(scenario.Encode(&s.Scenario))
	if err != nil {
		t.Fatalf("%v\n%s", err, scenario.Encode(&s.Scenario))
	}
	if back.RunID() != s.RunID() {
		t.Errorf("run id %s after Encode, want %s:\n%s", back.RunID(), s.RunID(), scenario.Encode(&s.Scenario))
	}
}
