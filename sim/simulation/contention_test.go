package simulation

import (
	"math"
	"testing"

	"github.com/simtrain/simtrain/sim/scenario"
)

// contended is baseScenario on 16 nodes of a fat-tree whose leaf uplinks
// are oversubscribed (4 nodes per leaf): TP 8 inside each node, DP 16 rings
// across all four leaves, ZeRO-1.
func contended(t *testing.T, over string, kv ...string) *scenario.Plan {
	return parseWith(t, nil, append([]string{"cluster.nodes", "16", "cluster.network.kind", "fat-tree",
		"cluster.network.oversubscription", over, "parallel.dp", "16", "parallel.zero", "1",
		"training.global_batch", "32"}, kv...)...)
}

// TestOversubscriptionSlowsAnalytic: at analytic fidelity an oversubscribed
// tier under the DP rings makes the step slower (the static-load share,
// collectives.StaticShares), every rank played gives the same answer as the
// representatives, and the answer stays within 10% of flow fidelity.
func TestOversubscriptionSlowsAnalytic(t *testing.T) {
	free := mustRun(t, contended(t, "1"), Options{})
	slow := mustRun(t, contended(t, "8"), Options{})
	if !(slow.StepTimeS > free.StepTimeS) || !(slow.ExposedCommS[3] > free.ExposedCommS[3]) {
		t.Errorf("8:1 oversubscribed step %.6g s (DP %.4g s), 1:1 %.6g s (DP %.4g s): want slower",
			slow.StepTimeS, slow.ExposedCommS[3], free.StepTimeS, free.ExposedCommS[3])
	}
	all := mustRun(t, contended(t, "8"), Options{AllRanks: true})
	if all.StepTimeS != slow.StepTimeS || all.ExposedCommS != slow.ExposedCommS {
		t.Errorf("every rank %v s %v, representatives %v s %v", all.StepTimeS, all.ExposedCommS, slow.StepTimeS, slow.ExposedCommS)
	}
	flow := mustRun(t, contended(t, "8", "sim.fidelity", "flow"), Options{})
	if d := slow.StepTimeS/flow.StepTimeS - 1; math.Abs(d) > 0.10 {
		t.Errorf("analytic %.6g s vs flow %.6g s (%+.1f%%)", slow.StepTimeS, flow.StepTimeS, 100*d)
	}
	t.Logf("1:1 %.4f s, 8:1 analytic %.4f s (DP %.4f), flow %.4f s (DP %.4f)", free.StepTimeS, slow.StepTimeS, slow.ExposedCommS[3], flow.StepTimeS, flow.ExposedCommS[3])
}
