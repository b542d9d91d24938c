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

// TestLayerRepeatReport measures, on the whole play of every simulated point
// of the 70B layout sweep, whether the layers of a pass repeat one period
// apart (parallel.MeasureLayers), and writes one row per point and the
// totals to the file SIMTRAIN_LAYERREPEAT_REPORT names (skipped without
// it): a diagnostic for issue 18, not a check. Each point is also run as
// the sweep runs it (FiguresOnly, one Reuse) for the sweep's played tasks,
// and the counted whole play's engine events must equal that run's. The
// groups "played …" measure what the sweep plays: the whole step, or for
// a replicated point its shortened step (PlayCounted with the played
// micro-batches, which must have the tasks the run's successful play had);
// the others measure every point's whole step.
func TestLayerRepeatReport(t *testing.T) {
	out, sw := reportSweep(t, "SIMTRAIN_LAYERREPEAT_REPORT")
	var b strings.Builder
	b.WriteString("point\tvalues\tpp\tm\tkind\tsweep_played\twhole_tasks\tpasses\tlayer_tasks\tpairs\tsame\texact\truns\trun_layers\tskip\tskip_alone\tskip_min\treach\texternal\tbreak_at\tbreaks\n")
	type group struct {
		points, played int
		rep            parallel.LayerReport
	}
	groups := map[string]*group{}
	var sweepPlayed, failedTasks int
	eachSimulatedPoint(t, sw, func(i int, p *sweep.Point, r *simulation.Result) {
		sweepPlayed += r.PlayedTasks
		x, events, err := simulation.PlayCounted(p.Scenario, 0)
		if err != nil {
			t.Fatalf("point %d: %v", i, err)
		}
		if events != r.Events {
			t.Fatalf("point %d: the counted play has %d events, the sweep's run %d", i, events, r.Events)
		}
		rep := x.LayerRepeats()
		if rep.Tasks != x.Completed() {
			t.Fatalf("point %d: %d tasks measured, %d played", i, rep.Tasks, x.Completed())
		}
		kind := "whole"
		if r.Replicated > 0 {
			kind = "replicated"
		}
		m := p.Scenario.StepConfig(r.Layout).Microbatches
		// What the sweep played: the whole step, or the shortened step
		// of a replicated run (its failed plays aside).
		played := rep
		if r.Replicated > 0 {
			xs, _, err := simulation.PlayCounted(p.Scenario, m-r.Replicated)
			if err != nil {
				t.Fatalf("point %d: %v", i, err)
			}
			if xs.Completed() != r.PlayedTasks-r.FailedTasks {
				t.Fatalf("point %d: the shortened play has %d tasks, the sweep's run %d", i, xs.Completed(), r.PlayedTasks-r.FailedTasks)
			}
			played = xs.LayerRepeats()
			failedTasks += r.FailedTasks
		}
		for _, k := range []string{"played " + kind, "played all"} {
			g := groups[k]
			if g == nil {
				g = &group{}
				groups[k] = g
			}
			g.points++
			g.played += r.PlayedTasks
			g.rep.Add(played)
		}
		for _, k := range []string{fmt.Sprintf("pp%d %s", r.Layout.PP, kind), kind, "all"} {
			g := groups[k]
			if g == nil {
				g = &group{}
				groups[k] = g
			}
			g.points++
			g.played += r.PlayedTasks
			g.rep.Add(rep)
		}
		fmt.Fprintf(&b, "%d\t%s\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%v\t%d\t%v\t%s\n", i, strings.Join(p.Values, ","),
			r.Layout.PP, m, kind, r.PlayedTasks, rep.Tasks, rep.Passes, rep.LayerTasks, rep.Pairs, rep.Same, rep.Exact,
			rep.Runs, rep.RunLayers, rep.Skip, rep.SkipAlone, rep.SkipMin, rep.Reach, rep.External, rep.BreakAt, breaks(rep.Breaks))
	})
	var keys []string
	for k := range groups {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b.WriteString("\n# group\tpoints\tsweep_played\twhole_tasks\tpasses\tlayer_tasks\tpairs\tsame\texact\truns\trun_layers\tskip\tskip_alone\tskip_min\treach\texternal\tbreak_at\tskip/sweep_played\tskip_alone/sweep_played\tskip_min/sweep_played\tbreaks\n")
	for _, k := range keys {
		g := groups[k]
		r := g.rep
		line := fmt.Sprintf("# %s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%v\t%d\t%v\t%.4f\t%.4f\t%.4f\t%s", k, g.points, g.played, r.Tasks, r.Passes,
			r.LayerTasks, r.Pairs, r.Same, r.Exact, r.Runs, r.RunLayers, r.Skip, r.SkipAlone, r.SkipMin, r.Reach, r.External, r.BreakAt,
			float64(r.Skip)/float64(sweepPlayed), float64(r.SkipAlone)/float64(sweepPlayed), float64(r.SkipMin)/float64(sweepPlayed), breaks(r.Breaks))
		b.WriteString(line + "\n")
		line += "\tskipped beside: " + fmt.Sprint(r.SkipBeside)
		t.Log(line)
	}
	t.Logf("sweep played tasks %d, of them in failed shortened plays %d", sweepPlayed, failedTasks)
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// breaks lists m's labels by count, most first, each with its count at
// the pass's first pair, its second, its last and those between.
func breaks(m map[string][4]int) string {
	sum := func(c [4]int) int { return c[0] + c[1] + c[2] + c[3] }
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b string) int {
		if sum(m[a]) != sum(m[b]) {
			return sum(m[b]) - sum(m[a])
		}
		return strings.Compare(a, b)
	})
	var s []string
	for _, k := range ks {
		c := m[k]
		s = append(s, fmt.Sprintf("%s:%d(%d/%d/%d/%d)", k, sum(c), c[0], c[1], c[2], c[3]))
	}
	return strings.Join(s, ",")
}
