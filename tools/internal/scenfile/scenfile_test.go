package scenfile

import (
	"testing"

	"github.com/simtrain/simtrain/sim"
)

func TestSlug(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"GPT 1.7B", "gpt-1.7b"}, {"MPT-70b", "mpt-70b"}, {"LLaMa 13B (Llama 2 arch)", "llama-13b-llama-2-arch"},
		{"FP8-CS", "fp8-cs"}, {"DGX-GB300", "dgx-gb300"}, {"  x  ", "x"}, {"", ""},
	} {
		if got := Slug(c.in); got != c.want {
			t.Errorf("Slug(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestYAMLParses renders a scenario with every section and checks that
// the simulator's parser accepts it and reads the fields back: the layout
// and the key names are the scenario format's.
func TestYAMLParses(t *testing.T) {
	s := Scenario{
		Name: "t", Description: `a "quoted" run`, Header: []string{"provenance"}, Facts: []string{"a fact"},
		Preset: "llama3-8b", MTPLayers: 1, Seq: 4096, GlobalBatch: 64, MicroBatch: 1, Precision: "bf16", GradDtype: "fp32", Recompute: "full", RecomputeEvery: 2, OffloadModules: []string{"attn_norm"}, OffloadOptimizer: true, StateDtype: "bf16",
		CrossEntropy: "vocab-parallel", AttnKernel: "flash2", AttnUnpad: true, AttnRepeatKV: true, Compile: BP(true),
		GPU: "h100-sxm", Nodes: 2, GPUsPerNode: 8, NIC: "ib-ndr-400", NICsPerNode: 8,
		TP: 2, DP: 4, CP: 2, CPImpl: "pytorch", SP: true, Zero: 1, Overlap: []KV{{"grad_reduce", true}},
		Metric: "tokens_per_s_per_gpu", Value: 1234.5, Source: "a: source", Group: "g",
	}
	s.Assume("an assumption with a %s", "value")
	sc, err := sim.Parse(s.YAML())
	if err != nil {
		t.Fatalf("%v\n%s", err, s.YAML())
	}
	tr := sc.Training
	if sc.Name != "t" || tr.CrossEntropy != "vocab-parallel" || !tr.AttentionUnpad || !tr.AttentionRepeatKV || tr.RecomputeEvery != 2 ||
		sc.Parallel.TP != 2 || sc.Parallel.CPImpl != "pytorch" || sc.Cluster.Nodes != 2 || sc.Model.MTPLayers != 1 ||
		len(tr.OffloadModules) != 1 || !tr.OffloadOptimizer || tr.OptimizerStateDtype != "bf16" {
		t.Errorf("read back %+v", sc)
	}
	if sc.Expect == nil || sc.Expect.Notes != "an assumption with a value" || sc.Expect.Source != "a: source" {
		t.Errorf("expect block %+v", sc.Expect)
	}
}
