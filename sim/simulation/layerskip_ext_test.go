package simulation_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/simulation"
	"github.com/simtrain/simtrain/sim/sweep"
)

// TestOnlineSkipReport plays the per-layer fast-forward's online rule
// (parallel.MeasureOnlineSkips) on what the 70B sweep plays and writes
// the totals per group to SIMTRAIN_ONLINESKIP_REPORT (skipped without it):
// a diagnostic for issue 18, not a check.
func TestOnlineSkipReport(t *testing.T) {
	out, sw := reportSweep(t, "SIMTRAIN_ONLINESKIP_REPORT")
	type group struct {
		points, played, hitPoints, wasted, kept, netPoint, netMat int
		rep                                                       parallel.OnlineSkips
	}
	groups := map[string]*group{}
	eachSimulatedPoint(t, sw, func(i int, p *sweep.Point, r *simulation.Result) {
		m := p.Scenario.StepConfig(r.Layout).Microbatches
		kind := "whole"
		mb := 0
		if r.Replicated > 0 {
			kind, mb = "replicated", m-r.Replicated
		}
		x, _, err := simulation.PlayCounted(p.Scenario, mb)
		if err != nil {
			t.Fatalf("point %d: %v", i, err)
		}
		rep := x.OnlineSkips()
		for _, k := range []string{fmt.Sprintf("pp%02d_%s", r.Layout.PP, kind), "all"} {
			g := groups[k]
			if g == nil {
				g = &group{rep: parallel.OnlineSkips{FirstHit: -1}}
				groups[k] = g
			}
			g.points++
			g.played += r.PlayedTasks
			g.rep.Add(rep)
			if rep.Hit > 0 {
				g.hitPoints++
				g.wasted += rep.BeforeHit
				g.netPoint -= rep.BeforeHit
			} else {
				g.kept += rep.CleanTasks
				g.netPoint += rep.CleanTasks
			}
			g.netMat += rep.CleanTasks + rep.HitEarly
		}
	})
	var keys []string
	for k := range groups {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString("group\tpoints\tplayed\tpasses\tfired\tp2p\tclean\thit\twrong\tclean_tasks\thit_tasks\twrong_tasks\thit_early\trecv_beside\thit_points\twasted\tnet_point\tnet_materialise\tclean%\tnet_point%\tnet_mat%\tproven\tproven_clean\tproven_wrong\tviolations\tproven_clean%\tchain_proven\tchain_clean\tchain_clean%\tstate_ok\tstate_clean\tstate_wrong\tstate_refused\tstate_clean%\n")
	for _, k := range keys {
		g := groups[k]
		r := g.rep
		pc := func(n int) float64 { return 100 * float64(n) / float64(g.played) }
		fmt.Fprintf(&b, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f\t%.1f\t%.1f\t%d\t%d\t%d\t%d\t%.1f\t%d\t%d\t%.1f\t%d\t%d\t%d\t%d\t%.1f\n", k, g.points, g.played,
			r.Passes, r.Fired, r.P2P, r.Clean, r.Hit, r.Wrong, r.CleanTasks, r.HitTasks, r.WrongTasks, r.HitEarly, r.RecvBeside,
			g.hitPoints, g.wasted, g.netPoint, g.netMat, pc(r.CleanTasks), pc(g.netPoint), pc(g.netMat),
			r.Proven, r.ProvenClean, r.ProvenWrong, r.Violations, pc(r.ProvenClean), r.ChainProven, r.ChainClean, pc(r.ChainClean),
			r.StateOK, r.StateClean, r.StateWrong, r.StateRefused, pc(r.StateClean))
	}
	for _, k := range keys {
		r := groups[k].rep
		fmt.Fprintf(&b, "# outside %s: %d skips, %d tasks: %v\n", k, r.Outside, r.OutsideTasks, r.OutsideStreams)
		if w := groups[k].rep.WrongWhy; len(w) > 0 {
			fmt.Fprintf(&b, "# wrong %s: %v\n", k, w)
		}
	}
	t.Log("\n" + b.String())
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
