package main

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/spf13/cobra"

	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/sweep"
)

// A plan whose points play every rank (flow fidelity) first runs the same
// search at analytic fidelity, the representative ranks' play, and plays
// its points in the order that pass ranks them: the analytic plan's best
// first, with no cutoff, then the next ones against the cutoff those give,
// then the rest (planPriorPhases). The analytic pass only orders the
// points: a point is ruled out only by the figures of points played at
// the plan's own fidelity (planCutoff), so the answer is the same in any
// order; the order decides how soon the cutoff reaches its final value,
// and so how much of the other points' plays is spent before they are
// given up.
//
// Why (issue 18, round 68): the plan of Llama 3 70B on 512 H100 at flow
// fidelity spent 14.6 s of CPU on its sample's first part, played whole
// before any cutoff existed, and most of its 179 s of plays given up
// against cutoffs of 12.9, 10.0, 8.24 and 7.84 s a step, the best five
// found so far in the order the sample and its fit gave, where the final
// fifth best is 7.51 s. The analytic plan of the same search takes 0.44 s
// of CPU and its five best are the flow plan's five best, in the same
// order, so the flow plan's first phase holds its answer and its cutoff
// is final, or nearly, for the rest.

// planRef is one point of a plan's sweeps with the analytic pass's figure
// for it (planPrior): exact (played to its figure), a bound (ruled out by
// the pass's cutoff, no better than that), or none (not played there:
// invalid, not fitting or failed).
type planRef struct {
	sweep, point int
	class        priorClass
	figure       float64
}

// priorClass orders planRef's kinds of figure: exact ones first, then
// bounds, then points with none.
type priorClass int8

const (
	priorExact priorClass = iota
	priorBound
	priorNone
)

// planPrior is the analytic pass's record of each point's figure, by
// sweep and point (planTally.run notes them).
type planPrior struct {
	sweep int // the sweep being recorded
	figs  [][]planRef
}

// note records point i of the sweep being recorded at figure f, exact or
// a bound; nothing on a nil prior. A point noted exact is not demoted by a
// bound.
func (p *planPrior) note(i int, f float64, exact bool) {
	if p == nil || p.sweep >= len(p.figs) || i < 0 || i >= len(p.figs[p.sweep]) || !(f > 0) {
		return
	}
	r := &p.figs[p.sweep][i]
	switch {
	case exact:
		r.class, r.figure = priorExact, f
	case r.class != priorExact:
		r.class, r.figure = priorBound, f
	}
}

// planAnalyticPrior runs the plan's sweeps (docs, with the user's
// overrides) at analytic fidelity, quietly, as plan runs them (its cutoff
// and phases), and returns every point of runs (the same documents at the
// plan's fidelity) ordered best first by what that pass found
// (priorOrder). Nil, with no error, where a document does not load at
// analytic fidelity or holds another number of points: the plan then runs
// as without a prior.
func planAnalyticPrior(cmd *cobra.Command, runs []*sweep.Sweep, docs []string, overrides []scenario.Override, o planOptions, tokens float64, pool *sweep.Pool) ([]planRef, error) {
	analytic := network.Analytic
	pre := planTally{failed: map[string]bool{}, prior: &planPrior{}}
	quiet := o
	quiet.quiet, quiet.out = true, ""
	for k, doc := range docs {
		sw, err := sweep.Parse([]byte(doc), ".", sweep.Options{Budget: o.budget.budget(), Context: cmd.Context(), Overrides: overrides, Fidelity: &analytic})
		if err != nil || sw.Len() != runs[k].Len() {
			if err := cmd.Context().Err(); err != nil {
				return nil, err
			}
			return nil, nil
		}
		sw.SetPool(pool)
		pre.prior.sweep = k
		pre.prior.figs = append(pre.prior.figs, make([]planRef, sw.Len()))
		for i := range pre.prior.figs[k] {
			pre.prior.figs[k][i] = planRef{sweep: k, point: i, class: priorNone}
		}
		if err := planRun(cmd, sw, quiet, &pre, tokens); err != nil {
			return nil, err
		}
	}
	return priorOrder(runs, pre.prior), nil
}

// priorOrder is every point of runs with its figure in prior, best first:
// exact figures, then bounds, then none, each by figure, ties by sweep
// and point.
func priorOrder(runs []*sweep.Sweep, prior *planPrior) []planRef {
	var order []planRef
	for k, sw := range runs {
		for _, i := range sw.ShardIndices(0, 1) {
			order = append(order, prior.figs[k][i])
		}
	}
	slices.SortFunc(order, func(a, b planRef) int {
		return cmp.Or(cmp.Compare(a.class, b.class), cmp.Compare(a.figure, b.figure), cmp.Compare(a.sweep, b.sweep), cmp.Compare(a.point, b.point))
	})
	return order
}

// planPriorNext: after the first phase of a plan with a prior (the --top
// points the analytic pass ranks best, played with no cutoff), the second
// holds the planPriorNext × --top points ranked next, played against the
// first phase's cutoff, and the third all the others, against the cutoff
// of both. The second phase brings in the layouts whose figure at the
// plan's fidelity beats one of the first phase's, so that the many points
// of the third meet a cutoff closer to its final value.
const planPriorNext = 3

// planPriorPhases cuts order (best first) into the phases plan runs one
// after another: the first points up to the top-th distinct exact figure
// (ties all in: layouts that differ only where the play cannot tell, the
// recompute policy at times, are one proposal, rankPlan), at least top;
// the next planPriorNext × top; and the rest (empty phases left out).
// Each phase's exact ties after the first of their figure follow it as a
// phase of their own (tiesAfter), marked ties.
func planPriorPhases(order []planRef, top int) []priorPhase {
	top = max(top, 1)
	first, distinct := 0, 0
	for first < len(order) && order[first].class == priorExact {
		if first == 0 || order[first].figure != order[first-1].figure {
			if distinct == top {
				break
			}
			distinct++
		}
		first++
	}
	var phases []priorPhase
	for _, n := range []int{max(first, top), planPriorNext * top, len(order)} {
		n = min(n, len(order))
		if n > 0 {
			lead, ties := tiesAfter(order[:n])
			phases = append(phases, priorPhase{points: lead})
			if len(ties) > 0 {
				phases = append(phases, priorPhase{points: ties, ties: true})
			}
		}
		order = order[n:]
	}
	return phases
}

// priorPhase is one of planPriorPhases' phases: its points, and whether
// they are the ties of the phase before it, which they are played against
// the cutoffs of (planRunPrior).
type priorPhase struct {
	points []planRef
	ties   bool
}

// tiesAfter splits phase (best first) into its leads (every point whose
// figure is not an exact one the point before it holds) and the ties
// after them, each list in phase's order.
//
// Why (issue 18, round 69): layouts the analytic pass finds exactly tied
// are mostly twins, equal but for a recompute policy the play cannot
// tell (selective recomputation with FlashAttention), whose every-rank
// plays a sweep shares (sim/simulation twins.go): the second takes the
// first's figures once it has ended, and waits for it while it plays. In
// one phase two workers met the twins together (the sweep deals a short
// list costliest first, and twins cost alike), so one waited while the
// other played: the 70B plan at flow fidelity took 14.4 s of CPU against
// 19.0 s, but 11.5 s of wall against 10.6 s. Played after the leads,
// the twins find their figures ready; and played against the leads'
// cutoffs, a twin of a lead given up is given up alike, which it takes
// from the lead as well.
func tiesAfter(phase []planRef) (lead, ties []planRef) {
	for k, r := range phase {
		if k > 0 && r.class == priorExact && phase[k-1].class == priorExact && r.figure == phase[k-1].figure {
			ties = append(ties, r)
		} else {
			lead = append(lead, r)
		}
	}
	return lead, ties
}

// planRunPrior plays the points of runs in order's phases into t
// (planPriorPhases): each phase sweep by sweep, in the sweep's order of
// points, against the cutoff (planCutoff) of all that t holds before the
// sweep's part of the phase starts; the first phase against what t holds
// before it starts (mostly nothing: no cutoff), a phase of ties against
// the cutoff the sweep's part of the leads met. Those two kinds, whose
// cutoffs are known before they start, run their sweeps' parts at once,
// one worker each, on pool's storage split between them
// (planPartsAtOnce). The phases run one after another, so the answer and
// the counts are the same on any number of workers.
func planRunPrior(cmd *cobra.Command, runs []*sweep.Sweep, order []planRef, o planOptions, t *planTally, tokens float64, pool *sweep.Pool) error {
	workers := o.workerCount()
	prog := newProgress(cmd.ErrOrStderr(), o.quiet, len(order), 0)
	t.rows = slices.Grow(t.rows, len(order))
	cutoffs := make([]func(*scenario.Plan) float64, len(runs)) // each sweep's in the last phase of leads
	for n, phase := range planPriorPhases(order, o.top) {
		bySweep := make([][]int, len(runs))
		for _, r := range phase.points {
			bySweep[r.sweep] = append(bySweep[r.sweep], r.point)
		}
		var parts []int // the sweeps with points in the phase
		for k, indices := range bySweep {
			if len(indices) > 0 {
				slices.Sort(indices)
				parts = append(parts, k)
			}
		}
		// The first phase's cutoff is made once, before it, on any number
		// of workers; a phase of ties keeps its leads'.
		fixed := n == 0 || phase.ties
		if n == 0 {
			at := planCutoff(t, tokens, o)
			for _, k := range parts {
				cutoffs[k] = at
			}
		}
		if fixed && len(parts) > 1 && workers > 1 {
			err := planPartsAtOnce(cmd, runs, parts, bySweep, cutoffs, min(workers, len(parts)), pool, prog, t, tokens, o)
			if err != nil {
				prog.finish()
				return err
			}
			continue
		}
		for _, k := range parts {
			if !fixed {
				cutoffs[k] = planCutoff(t, tokens, o)
			}
			runs[k].SetCutoff(cutoffs[k])
			if err := t.run(cmd, runs[k], bySweep[k], workers, prog, tokens, o); err != nil {
				prog.finish()
				return err
			}
		}
	}
	prog.finish()
	return nil
}

// partsAtOnce counts planPartsAtOnce's calls (for tests).
var partsAtOnce atomic.Int64

// planPartsAtOnce runs the parts of one phase, sweep k's points
// bySweep[k] for each k of parts against cutoffs[k], on lanes goroutines
// at once, each taking the next part not taken and playing it with one
// worker and its own share of pool (sweep.Pool.Split), and returns the
// first lane's error.
//
// Why (issue 18, round 69): the first phase of a plan at flow fidelity
// holds the --top best layouts, often one in each of several sweeps, and
// run sweep by sweep each part held one layout for two workers: the plan
// of Llama 3 405B on 2,048 H100 played its five best one after another,
// 21 s of wall while the other worker idled (before twins shared their
// plays, each part held a layout and its twin, one on each worker).
func planPartsAtOnce(cmd *cobra.Command, runs []*sweep.Sweep, parts []int, bySweep [][]int, cutoffs []func(*scenario.Plan) float64,
	lanes int, pool *sweep.Pool, prog *progress, t *planTally, tokens float64, o planOptions) error {
	partsAtOnce.Add(1)
	pools := pool.Split(lanes)
	errs := make([]error, lanes)
	var next atomic.Int64 // the next part to take
	var wg sync.WaitGroup
	for g := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for errs[g] == nil {
				p := int(next.Add(1)) - 1
				if p >= len(parts) {
					return
				}
				k := parts[p]
				runs[k].SetPool(pools[g])
				runs[k].SetCutoff(cutoffs[k])
				errs[g] = t.run(cmd, runs[k], bySweep[k], 1, prog, tokens, o)
				runs[k].SetPool(pool)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
