package simulation

import (
	"math"
	"testing"

	"github.com/simtrain/simtrain/sim/parallel"
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

// sendContention finds a rank's peer in stage b as the rank plus the
// difference of the two stages' offsets. That is RankOf(CoordOf(r) with
// PP = b) for every rank of stage a, on every order of the dimensions and
// uneven sizes (pp outermost or not, cp and ep present), by hand on one:
// tp 2, dp 3, pp 4 with pp innermost puts stage 1's ranks at 1, 5, 9, …,
// and stage 3's peer of rank 1 at 3 (step 2).
func TestSendPeerStep(t *testing.T) {
	perms := []string{"tp-cp-ep-dp-pp", "tp-pp-cp-ep-dp", "pp-tp-cp-ep-dp", "tp-cp-pp-ep-dp", "cp-tp-ep-dp-pp", "dp-ep-cp-pp-tp"}
	for _, ord := range perms {
		order, err := parallel.ParseOrder(ord)
		if err != nil {
			t.Fatal(err)
		}
		l, err := parallel.NewLayout(2, 2, 1, 3, 4, order)
		if err != nil {
			t.Fatal(err)
		}
		for a := range l.PP {
			for b := range l.PP {
				step := l.RankOf(parallel.Coord{PP: b}) - l.RankOf(parallel.Coord{PP: a})
				for _, r := range l.StageRanks(a) {
					co := l.CoordOf(r)
					co.PP = b
					if want := l.RankOf(co); r+step != want {
						t.Fatalf("%s: stage %d rank %d: peer in stage %d is %d, step gives %d", ord, a, r, b, want, r+step)
					}
				}
			}
		}
	}
	order, _ := parallel.ParseOrder("pp-tp-cp-ep-dp")
	l, err := parallel.NewLayout(2, 1, 1, 3, 4, order)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.StageRanks(1)[:3]; got[0] != 1 || got[1] != 5 || got[2] != 9 {
		t.Errorf("stage 1's ranks %v, want 1, 5, 9, …", got)
	}
	if step := l.RankOf(parallel.Coord{PP: 3}) - l.RankOf(parallel.Coord{PP: 1}); 1+step != 3 {
		t.Errorf("stage 3's peer of rank 1: %d, want 3", 1+step)
	}
}
