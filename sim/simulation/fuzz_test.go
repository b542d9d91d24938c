package simulation

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/scenario"
)

// fuzzBudget keeps each simulated input to a few milliseconds.
var fuzzBudget = Budget{MaxTasks: 200_000, MaxMemoryBytes: 256 << 20}

// fuzzScenario builds a scenario from fuzz bytes. The knobs are drawn so
// that most combinations are valid (tp within a node, pp within the
// layers, ep only for mixture-of-experts models), and some are not, which
// Parse must refuse with one line.
func fuzzScenario(b []byte) string {
	at := 0
	next := func(n int) int {
		v := 0
		if at < len(b) {
			v = int(b[at])
		}
		at++
		return v % n
	}
	pickInt := func(choices ...int) int { return choices[next(len(choices))] }
	presets := []struct {
		name string
		moe  bool
	}{{"llama3-8b", false}, {"gpt3-1.3b", false}, {"mixtral-8x7b", true}, {"qwen3-30b-a3b", true}, {"deepseek-v3", true}}
	m := presets[next(len(presets))]
	layers := pickInt(1, 2, 3, 4, 8)
	gb := pickInt(1, 2, 4, 8, 16, 64)
	mb := min(gb, pickInt(1, 2, 4))
	gpn := pickInt(1, 2, 4, 8)
	nodes := pickInt(1, 2, 3, 4)
	tp := min(gpn, pickInt(1, 2, 4, 8))
	pp := min(layers, pickInt(1, 2, 4))
	ep := 1
	if m.moe {
		ep = pickInt(1, 2, 4, 8)
	}
	schedules := []string{"1f1b", "gpipe", "interleaved", "zero-bubble"}
	sched := schedules[next(len(schedules))]
	var s strings.Builder
	fmt.Fprintf(&s, "name: fuzz\nmodel:\n  preset: %s\n  layers: %d\n", m.name, layers)
	fmt.Fprintf(&s, "training:\n  seq_len: %d\n  global_batch: %d\n  micro_batch: %d\n  recompute: %s\n  precision: %s\n",
		pickInt(128, 512, 2048, 4096), gb, mb, []string{"none", "full", "selective", "save-dots"}[next(4)], []string{"bf16", "fp8", "fp16"}[next(3)])
	gpu := []string{"h100-sxm", "a100-80gb", "gb200", "mi300x", "b200"}[next(5)]
	cluster := fmt.Sprintf("  gpu: %s\n  nodes: %d\n", gpu, nodes)
	fmt.Fprintf(&s, "cluster:\n%s  gpus_per_node: %d\n", cluster, gpn)
	fmt.Fprintf(&s, "parallel:\n  tp: %d\n  pp: %d\n  cp: %d\n  ep: %d\n  zero: %d\n  sp: %v\n  schedule: %s\n",
		tp, pp, pickInt(1, 1, 2), ep, pickInt(0, 1, 2, 3), next(2) == 1 && tp > 1, sched)
	if sched == "interleaved" {
		fmt.Fprintf(&s, "  virtual_stages: %d\n", pickInt(2, 4))
	}
	fmt.Fprintf(&s, "sim:\n  fidelity: %s\n  steps: %d\n", []string{"analytic", "flow"}[next(2)], pickInt(1, 2))
	// Drawn last, so that the seeds above keep their meaning: the same
	// nodes as two node groups (H100 SXM and H200, or the GPU twice).
	if nodes >= 2 && next(2) == 1 {
		second := gpu
		if gpu == "h100-sxm" {
			second = "h200"
		}
		k := 1 + next(nodes-1)
		return strings.Replace(s.String(), cluster, fmt.Sprintf("  node_groups: [{gpu: %s, nodes: %d}, {gpu: %s, nodes: %d}]\n", gpu, k, second, nodes-k), 1)
	}
	return s.String()
}

// FuzzSimulate: random valid scenarios within a small work budget run to
// completion, satisfy Result.Check's invariants and give finite figures;
// above the budget they are refused before anything is built. Neither may
// panic.
func FuzzSimulate(f *testing.F) {
	for _, seed := range [][]byte{ // valid scenarios: dense and MoE, analytic and flow
		{0x0, 0x0, 0x5, 0x4, 0x7, 0x1, 0x6, 0x0, 0x7, 0x2, 0x7, 0x4, 0x0, 0x3, 0x7, 0x0, 0x6, 0x4, 0x3, 0x7, 0x5, 0x4},
		{0x5, 0x5, 0x4, 0x0, 0x7, 0x5, 0x5, 0x1, 0x4, 0x5, 0x5, 0x7, 0x7, 0x6, 0x0, 0x6, 0x4, 0x0, 0x4, 0x5, 0x3, 0x3},
		{0x1, 0x6, 0x4, 0x5, 0x2, 0x5, 0x6, 0x6, 0x7, 0x0, 0x4, 0x4, 0x7, 0x7, 0x4, 0x5, 0x5, 0x6, 0x3, 0x4, 0x1, 0x6},
		{0x1, 0x3, 0x5, 0x3, 0x3, 0x1, 0x5, 0x3, 0x7, 0x4, 0x4, 0x3, 0x1, 0x6, 0x5, 0x1, 0x7, 0x7, 0x4, 0x5, 0x6, 0x2},
		{0x6, 0x1, 0x4, 0x7, 0x4, 0x7, 0x0, 0x7, 0x5, 0x2, 0x3, 0x0, 0x2, 0x2, 0x0, 0x4, 0x3, 0x2, 0x3, 0x2, 0x1, 0x5},
		{0x7, 0x2, 0x4, 0x3, 0x2, 0x3, 0x1, 0x0, 0x6, 0x1, 0x1, 0x5, 0x1, 0x0, 0x5, 0x0, 0x6, 0x3, 0x1, 0x6, 0x3, 0x4},
		// a heterogeneous cluster: one H100 SXM node and one H200 node, tp 4, pp 2
		{0x0, 0x1, 0x4, 0x0, 0x3, 0x1, 0x2, 0x1, 0x0, 0x1, 0x0, 0x0, 0x0, 0x0, 0x1, 0x1, 0x0, 0x0, 0x1, 0x0},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		text := fuzzScenario(b)
		s, err := scenario.Parse([]byte(text))
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		res, err := Run(context.Background(), s, Options{Budget: fuzzBudget})
		if errors.Is(err, ErrBudget) {
			return
		}
		if err != nil {
			t.Fatalf("%s\nrun: %v", text, err)
		}
		if err := res.Check(); err != nil {
			t.Fatalf("%s\ninvariant: %v", text, err)
		}
		for name, v := range map[string]float64{"step_time_s": res.StepTimeS, "mfu": res.MFU, "tokens_per_s": res.TokensPerS,
			"peak_mem_bytes": res.PeakMemBytes, "bubble_fraction": res.BubbleFraction} {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				t.Fatalf("%s\n%s = %v", text, name, v)
			}
		}
		if res.StepTimeS <= 0 {
			t.Fatalf("%s\nstep time %v", text, res.StepTimeS)
		}
	})
}
