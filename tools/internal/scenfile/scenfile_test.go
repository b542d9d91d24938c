package scenfile

import (
	"testing"

	"github.com/simtrain/simtrain/sim/scenario"
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
	s := Scenario{Header: []string{"provenance"}, Facts: []string{"a fact"}}
	s.Name, s.Description = "t", `a "quoted" run`
	s.Model = scenario.ModelConfig{Preset: "llama3-8b", MTPLayers: 1}
	s.Training = scenario.TrainingConfig{SeqLen: 4096, GlobalBatch: 64, MicroBatch: 1, Precision: "bf16", GradDtype: "fp32",
		Recompute: "full", RecomputeEvery: 2, OffloadModules: []string{"attn_norm"}, OffloadOptimizer: true, OptimizerStateDtype: "bf16",
		CrossEntropy: "vocab-parallel", AttentionKernel: "flash2", AttentionUnpad: true, AttentionRepeatKV: true, Compile: BP(true)}
	s.Cluster = scenario.ClusterConfig{GPU: "h100-sxm", Nodes: 2, GPUsPerNode: 8,
		Network: scenario.NetworkConfig{NIC: "ib-ndr-400", NICsPerNode: 8}}
	s.Parallel = scenario.ParallelConfig{TP: 2, DP: 4, CP: 2, CPImpl: "pytorch", SP: true, Zero: 1,
		Overlap: scenario.OverlapConfig{GradReduce: BP(true)}}
	s.Measured("tokens_per_s_per_gpu", 1234.5)
	s.Exp().Source, s.Exp().Group = "a: source", "g"
	s.Assume("an assumption with a %s", "value")
	sc, err := scenario.Parse(s.YAML())
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

// TestYAMLLayout pins the layout: sections after a blank line, nested
// blocks indented, free text quoted, zero values left out.
func TestYAMLLayout(t *testing.T) {
	var s Scenario
	s.Name = "x"
	s.Model.Preset = "llama3-8b"
	s.MoE().Dropless = BP(false)
	s.Parallel.TP, s.Parallel.Overlap.P2P = 2, BP(false)
	s.Measured("mfu", 0.5)
	s.Exp().Source = "a: b"
	s.Assume("one")
	want := "#\n# Assumptions (not stated by the source):\n# - one\nname: x\n\nmodel:\n  preset: llama3-8b\n  moe:\n    dropless: false\n\n" +
		"parallel:\n  tp: 2\n  overlap:\n    p2p: false\n\nexpect:\n  mfu: 0.5\n  source: \"a: b\"\n  notes: \"one\"\n"
	if got := string(s.YAML()); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
