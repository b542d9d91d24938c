package simulation

import (
	"context"
	"github.com/simtrain/simtrain/sim/scenario"
	"math"
	"path/filepath"
	"testing"

	"github.com/simtrain/simtrain/sim/collectives"
	"github.com/simtrain/simtrain/sim/engine"
	"github.com/simtrain/simtrain/sim/topology"
	"github.com/simtrain/simtrain/sim/units"
)

// flow runs a scenario at flow fidelity.
var flow = scenario.Override{Path: "sim.fidelity", Value: "flow"}

func mustRun(t *testing.T, s *scenario.Plan, opt Options) *Result {
	t.Helper()
	r, err := Run(context.Background(), s, opt)
	if err != nil {
		t.Fatalf("%s: %v", s.Name, err)
	}
	if err := r.Check(); err != nil {
		t.Fatalf("%s: invariant broken: %v", s.Name, err)
	}
	if r.StepTimeS <= 0 || math.IsNaN(r.MFU) || r.MFU <= 0 || r.MFU >= 1 {
		t.Fatalf("%s: step %.4g s, MFU %.3f", s.Name, r.StepTimeS, r.MFU)
	}
	for _, m := range r.Memory {
		if m.Total < 0 || m.Weights < 0 || m.Activations < 0 {
			t.Fatalf("%s: negative memory %+v", s.Name, m)
		}
	}
	// The step can never be shorter than the busiest rank's compute.
	if r.StepTimeS+1e-9 < r.ComputeS {
		t.Fatalf("%s: step %.6g s shorter than compute %.6g s", s.Name, r.StepTimeS, r.ComputeS)
	}
	return r
}

func TestBundledScenariosRun(t *testing.T) {
	files, _ := filepath.Glob("../../scenarios/*.yaml")
	for _, f := range files {
		s, err := scenario.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		if testing.Short() && s.GPUs() > 2048 {
			continue
		}
		a := mustRun(t, s, Options{})
		// Determinism: the same scenario twice gives the same figures.
		s2, _ := scenario.Load(f)
		b := mustRun(t, s2, Options{})
		if a.StepTimeS != b.StepTimeS || a.Events != b.Events || a.ExposedCommS != b.ExposedCommS || a.PeakMemBytes != b.PeakMemBytes {
			t.Errorf("%s: two runs differ: %v/%v s, %d/%d events", s.Name, a.StepTimeS, b.StepTimeS, a.Events, b.Events)
		}
	}
}

// TestPureDPExposedCommIsTheBucketedAllReduce: with gradient reduction not
// overlapped, a data-parallel-only step exposes exactly the bucketed
// all-reduces the collectives package predicts, one after another.
func TestPureDPExposedCommIsTheBucketedAllReduce(t *testing.T) {
	s, err := parse("parallel.tp", "1", "parallel.overlap.grad_reduce", "false", "training.global_batch", "16")
	if err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, s, Options{})
	cl, err := topology.Build(s.TopologySpec())
	if err != nil {
		t.Fatal(err)
	}
	ranks := make([]int, s.GPUs())
	for i := range ranks {
		ranks[i] = i
	}
	g, err := collectives.NewGroup(cl, ranks)
	if err != nil {
		t.Fatal(err)
	}
	// Rebuild the bucket sizes: layers in backward order, 40M-parameter
	// buckets (Megatron's default for dp <= 40), embedding last.
	m := s.Arch()
	var buckets []float64
	cur := 0.0
	add := func(p float64) {
		cur += p
		if cur >= 40e6 {
			buckets = append(buckets, cur)
			cur = 0
		}
	}
	add(float64(m.Vocab * m.Hidden)) // output layer (untied)
	for l := m.Layers - 1; l >= 0; l-- {
		d, e := m.LayerParams(l)
		add(d + e)
	}
	add(float64(m.Vocab * m.Hidden)) // embedding
	if cur > 0 {
		buckets = append(buckets, cur)
	}
	var want engine.Time
	for _, b := range buckets {
		c, err := g.Cost(collectives.AllReduce, collectives.Auto, units.Bytes(b*2))
		if err != nil {
			t.Fatal(err)
		}
		want += c.Time
	}
	got := r.ExposedCommS[3]
	if math.Abs(got-want.Seconds()) > 1e-9*float64(len(buckets)+1) {
		t.Errorf("exposed DP %.9f s, want Σ bucket all-reduce %.9f s over %d buckets", got, want.Seconds(), len(buckets))
	}
}

func TestFlowFidelityAgreesOnUncontendedStep(t *testing.T) {
	s, err := scenario.Parse([]byte(baseScenario))
	if err != nil {
		t.Fatal(err)
	}
	a := mustRun(t, s, Options{})
	s2, _ := scenario.Parse([]byte(baseScenario), flow)
	var broken error
	b := mustRun(t, s2, Options{checkEvery: func(err error) {
		if broken == nil {
			broken = err
		}
	}})
	if broken != nil {
		t.Fatalf("fabric invariant broken during the step: %v", broken)
	}
	if d := math.Abs(a.StepTimeS-b.StepTimeS) / a.StepTimeS; d > 0.05 {
		t.Errorf("analytic %.6g s vs flow %.6g s differ by %.1f%%", a.StepTimeS, b.StepTimeS, 100*d)
	}
}

// TestSymmetricEqualsAllRanks: at analytic fidelity the representative-rank
// shortcut gives exactly what playing every rank gives.
func TestSymmetricEqualsAllRanks(t *testing.T) {
	for _, f := range []string{"../../scenarios/quickstart.yaml", "../../scenarios/mixtral-8x7b-ep8.yaml"} {
		s, err := scenario.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		a := mustRun(t, s, Options{})
		s2, _ := scenario.Load(f)
		b := mustRun(t, s2, Options{AllRanks: true})
		if a.StepTimeS != b.StepTimeS || a.ExposedCommS != b.ExposedCommS || a.BubbleFraction != b.BubbleFraction {
			t.Errorf("%s: symmetric %v s %v, all ranks %v s %v", f, a.StepTimeS, a.ExposedCommS, b.StepTimeS, b.ExposedCommS)
		}
	}
	// A HybridEP dispatch, priced from its measured bandwidth, not NCCL's.
	for _, backend := range []string{"hybridep", "deepep"} {
		a := mustRun(t, loadEdited(t, "../../scenarios/mixtral-8x7b-ep8.yaml", "parallel.ep_backend", backend), Options{})
		b := mustRun(t, loadEdited(t, "../../scenarios/mixtral-8x7b-ep8.yaml", "parallel.ep_backend", backend), Options{AllRanks: true})
		if a.StepTimeS != b.StepTimeS || a.ExposedCommS != b.ExposedCommS {
			t.Errorf("%s: symmetric %v s %v, all ranks %v s %v", backend, a.StepTimeS, a.ExposedCommS, b.StepTimeS, b.ExposedCommS)
		}
	}
	// A pipelined layout too.
	s, err := parse("parallel.tp", "2", "parallel.pp", "4", "parallel.schedule", "interleaved", "parallel.virtual_stages", "2")
	if err != nil {
		t.Fatal(err)
	}
	a := mustRun(t, s, Options{})
	s2, _ := parse("parallel.tp", "2", "parallel.pp", "4", "parallel.schedule", "interleaved", "parallel.virtual_stages", "2")
	b := mustRun(t, s2, Options{AllRanks: true})
	if a.StepTimeS != b.StepTimeS || a.BubbleFraction != b.BubbleFraction {
		t.Errorf("pipeline: symmetric %v s %v %v, all ranks %v s %v %v", a.StepTimeS, a.BubbleFraction, a.ExposedCommS, b.StepTimeS, b.BubbleFraction, b.ExposedCommS)
	}
}

// TestAnalyticLinkTrafficMatchesFlow: the traffic reconstructed at analytic
// fidelity puts the same bytes on the same links as the flow simulation.
func TestAnalyticLinkTrafficMatchesFlow(t *testing.T) {
	for _, kv := range [][]string{nil, {"parallel.tp", "2", "parallel.pp", "2", "parallel.zero", "1"}} {
		a := mustRun(t, parseWith(t, kv), Options{})
		b := mustRun(t, parseWith(t, kv, "sim.fidelity", "flow"), Options{})
		la, lb := a.Links(), b.Links()
		var ta, tb float64
		for i := range la {
			ta += la[i].Bytes
			tb += lb[i].Bytes
			if d := math.Abs(la[i].Bytes - lb[i].Bytes); d > 1e-6*max(la[i].Bytes, lb[i].Bytes)+1 {
				t.Fatalf("link %d (%s→%s): analytic %g bytes, flow %g", i, la[i].From, la[i].To, la[i].Bytes, lb[i].Bytes)
			}
		}
		if ta == 0 {
			t.Fatal("no traffic")
		}
	}
}

// loadEdited loads a scenario file and sets field paths on it (key, value
// pairs, as SetFieldPath takes them).
func loadEdited(t *testing.T, file string, kv ...string) *scenario.Plan {
	t.Helper()
	s, err := scenario.Load(file, scenario.Overrides(kv...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSoftware: the software line resolves auto choices and names only the
// parts that apply.
func TestSoftware(t *testing.T) {
	for _, c := range []struct {
		kv   []string
		want string
	}{
		{nil, "bf16, attention cudnn (auto), fused kernels, tp megatron"},
		{[]string{"training.precision", "fp8", "training.fp8_recipe", "rowwise", "training.compile", "false"}, "fp8 rowwise, attention cudnn (auto), eager, tp megatron"},
		{[]string{"training.attention_kernel", "flash2", "training.compile", "false", "training.fused_norm", "true", "parallel.tp", "2", "parallel.tp_impl", "dtensor"}, "bf16, attention flash2, eager (fused norm), tp dtensor"},
		{append(append([]string{}, moeKV...), "parallel.ep_backend", "hybridep"), "bf16, attention cudnn (auto), fused kernels, ep hybridep, moe dropless"},
		{append(append([]string{}, moeKV...), "model.moe.dropless", "false", "training.cuda_graphs", "full"), "bf16, attention cudnn (auto), fused kernels, ep nccl, moe token-drop, cuda graphs full"},
	} {
		s, err := parse(c.kv...)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Software(); got != c.want {
			t.Errorf("%v: %q, want %q", c.kv, got, c.want)
		}
	}
}
