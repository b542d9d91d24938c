package simulation

import (
	"github.com/simtrain/simtrain/sim/scenario"
	"os"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/parallel"
)

// TestDualPipeRuns: the bidirectional and V-shaped schedules run from a
// scenario; DualPipe's stages hold two copies of the parameters, the
// V-shaped placement one, as 1F1B's.
func TestDualPipeRuns(t *testing.T) {
	oneF := runWith(t, nil, "parallel.tp", "4", "parallel.pp", "2", "parallel.dp", "2")
	dual := runWith(t, nil, "parallel.tp", "4", "parallel.pp", "2", "parallel.dp", "2", "parallel.schedule", "dualpipe")
	v := runWith(t, nil, "parallel.tp", "4", "parallel.pp", "2", "parallel.dp", "2", "parallel.schedule", "dualpipe-v")
	weights := func(r *Result) (w float64) {
		for _, m := range r.Memory {
			w += m.Weights
		}
		return w
	}
	if w1, wd, wv := weights(oneF), weights(dual), weights(v); wd != 2*w1 || wv != w1 {
		t.Errorf("weights over the stages: 1f1b %.6g, dualpipe %.6g (2 copies), dualpipe-v %.6g (1 copy)", w1, wd, wv)
	}
	if dual.StepTimeS >= oneF.StepTimeS {
		t.Errorf("dualpipe step %.4g s, 1f1b %.4g s: the bubble should shrink", dual.StepTimeS, oneF.StepTimeS)
	}
	// Every rank played gives the representative ranks' figures, for both
	// placements (the bidirectional one sends both ways between stages).
	for _, r := range []*Result{dual, v} {
		all := mustRun(t, r.Scenario, Options{AllRanks: true})
		if all.StepTimeS != r.StepTimeS || all.ExposedCommS != r.ExposedCommS {
			t.Errorf("%s: every rank %v s, representatives %v s", r.Scenario.Parallel.Schedule, all.StepTimeS, r.StepTimeS)
		}
	}
}

// TestDeepSeekV3DualPipe checks the DualPipe schedule against what the
// DeepSeek-V3 technical report (arXiv:2412.19437) says of its own
// training, simulated from the configuration it describes
// (testdata/deepseek-v3-2048-h800-dualpipe.yaml):
//
//   - §3.2: cross-node expert parallelism makes the computation-to-
//     communication ratio "approximately 1:1": an MoE layer's forward
//     computation against its dispatch and combine all-to-alls is held
//     within 1:2 … 2:1;
//   - §3.2.1: DualPipe's overlapped chunks hide the all-to-all ("both
//     all-to-all and PP communication can be fully hidden"): under
//     DualPipe at most a quarter of the all-to-all time stays exposed —
//     the warm-up and cool-down chunks, a fifth of the 120 micro-batches,
//     run alone — while 1F1B on the same cluster exposes nine tenths or
//     more of it;
//   - §1, Table 1: 180K H800 GPU hours per trillion tokens, 1,543 tokens/s
//     per GPU: the simulated throughput is held within ±25% of it.
func TestDeepSeekV3DualPipe(t *testing.T) {
	if testing.Short() {
		t.Skip("2,048-GPU step")
	}
	data, err := os.ReadFile("testdata/deepseek-v3-2048-h800-dualpipe.yaml")
	if err != nil {
		t.Fatal(err)
	}
	run := func(yaml string) *Result {
		s, err := scenario.Parse([]byte(yaml))
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(t.Context(), s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Check(); err != nil {
			t.Fatal(err)
		}
		return r
	}
	dual := run(string(data))
	// 1F1B needs the 61 layers on 16 stages: 1 on the first, 4 on the rest.
	oneF := run(strings.NewReplacer("schedule: dualpipe", "schedule: 1f1b",
		"first_stage_layers: 3", "first_stage_layers: 1", "last_stage_layers: 2", "last_stage_layers: 0").Replace(string(data)))

	// The all-to-all and the computation of a middle stage's MoE layers.
	var fwdCompute, fwdA2A, a2a float64
	dual.Tasks([]int{dual.Layout.RankOf(parallel.Coord{PP: 5})}, func(tr TaskRecord) {
		d := float64(tr.EndNs-tr.StartNs) / 1e9
		switch tr.Name {
		case "attn_fwd", "router_fwd", "experts_fwd", "combine_fwd":
			fwdCompute += d
		case "ep_dispatch", "ep_combine":
			fwdA2A += d
		}
		if tr.Stream == "ep" {
			a2a += d
		}
	})
	if ratio := fwdCompute / fwdA2A; ratio < 0.5 || ratio > 2 {
		t.Errorf("MoE forward computation : all-to-all = %.2f : 1, the report says about 1:1", ratio)
	}
	const ep = 2 // ExposedCommS index of expert parallelism
	if got := dual.ExposedCommS[ep] / a2a; got > 0.25 {
		t.Errorf("dualpipe exposes %.2f s of %.2f s of all-to-all per rank (%.0f%%)", dual.ExposedCommS[ep], a2a, 100*got)
	}
	if got := oneF.ExposedCommS[ep] / a2a; got < 0.9 {
		t.Errorf("1f1b exposes only %.0f%% of the all-to-all", 100*got)
	}
	const published = 1e12 / (180e3 * 3600) // tokens/s per GPU
	if got := dual.TokensPerSPerGPU / published; got < 0.75 || got > 1.25 {
		t.Errorf("dualpipe: %.0f tokens/s per GPU, %.0f%% of the report's %.0f", dual.TokensPerSPerGPU, 100*got, published)
	}
	t.Logf("MoE forward compute : all-to-all = %.2f : 1; exposed all-to-all %.2f of %.2f s (dualpipe), %.2f s (1f1b); %.0f tokens/s/GPU (dualpipe), %.0f (1f1b), report %.0f",
		fwdCompute/fwdA2A, dual.ExposedCommS[ep], a2a, oneF.ExposedCommS[ep], dual.TokensPerSPerGPU, oneF.TokensPerSPerGPU, published)
}
