package main

import (
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/sweep"
)

// TestPlanPriorPhases: the first phase runs to the --top-th distinct
// exact figure of the analytic pass (ties, the layouts one proposal
// stands for, all in; at least --top points), the second holds the next
// planPriorNext × --top, the third the rest; every point once, in order.
func TestPlanPriorPhases(t *testing.T) {
	ref := func(class priorClass, figure float64) planRef { return planRef{class: class, figure: figure} }
	exact := func(figs ...float64) []planRef {
		var out []planRef
		for _, f := range figs {
			out = append(out, ref(priorExact, f))
		}
		return out
	}
	rest := func(n int) []planRef {
		var out []planRef
		for i := range n {
			out = append(out, ref(priorBound, float64(10+i)))
		}
		return out
	}
	cases := []struct {
		name  string
		order []planRef
		top   int
		sizes []int
	}{
		{"distinct", append(exact(1, 2, 3, 4, 5, 6), rest(30)...), 2, []int{2, 6, 28}},
		{"ties in the first", append(exact(1, 1, 2, 2, 2, 3), rest(30)...), 2, []int{2, 3, 6, 25}},
		{"a tie after the first", append(exact(1, 2, 2, 3), rest(30)...), 1, []int{1, 2, 1, 30}},
		{"few exact", append(exact(1), rest(30)...), 3, []int{3, 9, 19}},
		{"no exact", rest(5), 2, []int{2, 3}},
		{"small", exact(1, 2), 5, []int{2}},
		{"top 0 as 1", append(exact(1, 1, 2), rest(4)...), 0, []int{1, 1, 3, 2}},
		{"ties of bounds stay", append(exact(1), ref(priorBound, 5), ref(priorBound, 5)), 1, []int{1, 2}},
	}
	for _, c := range cases {
		for i := range c.order {
			c.order[i].point = i
		}
		phases := planPriorPhases(c.order, c.top)
		var sizes, all []int
		for n, phase := range phases {
			p := phase.points
			sizes = append(sizes, len(p))
			for k, r := range p {
				if phase.ties && (n == 0 || phases[n-1].ties || r.class != priorExact) {
					t.Errorf("%s: phase %d of ties follows no phase of leads, or holds a bound", c.name, n)
				}
				all = append(all, r.point)
				if k > 0 && r.point < p[k-1].point {
					t.Errorf("%s: a phase out of order: %v", c.name, p)
				}
			}
		}
		if !slices.Equal(sizes, c.sizes) {
			t.Errorf("%s: phases of %v points, want %v", c.name, sizes, c.sizes)
		}
		slices.Sort(all)
		for i, p := range all {
			if p != i {
				t.Errorf("%s: the phases do not hold every point once: %v", c.name, all)
				break
			}
		}
	}
}

// TestPriorOrder: exact figures first, then bounds, then points without a
// figure, each by figure, ties by sweep and point; a point noted exact is
// not demoted by a bound noted after it, and nothing is noted on a nil
// prior or past the sweep's points.
func TestPriorOrder(t *testing.T) {
	sw := guideSweep(t)
	n := sw.Len()
	if n < 6 {
		t.Fatalf("%d points: too few", n)
	}
	prior := &planPrior{}
	for k := range 2 {
		prior.sweep = k
		prior.figs = append(prior.figs, make([]planRef, n))
		for i := range prior.figs[k] {
			prior.figs[k][i] = planRef{sweep: k, point: i, class: priorNone}
		}
	}
	prior.sweep = 0
	prior.note(0, 5, false)
	prior.note(1, 3, true)
	prior.note(1, 9, false) // (a bound after the figure: kept exact)
	prior.note(2, 3, true)
	prior.note(n, 1, true) // (no such point)
	prior.note(3, 0, true) // (no figure)
	prior.sweep = 1
	prior.note(0, 2, false)
	prior.note(4, 3, true)
	var none *planPrior
	none.note(0, 1, true)
	order := priorOrder([]*sweep.Sweep{sw, sw}, prior)
	if len(order) != 2*len(sw.ShardIndices(0, 1)) {
		t.Fatalf("%d points ordered, want %d", len(order), 2*len(sw.ShardIndices(0, 1)))
	}
	type key struct {
		sweep, point int
		class        priorClass
	}
	var head []key
	for _, r := range order[:5] {
		head = append(head, key{r.sweep, r.point, r.class})
	}
	want := []key{{0, 1, priorExact}, {0, 2, priorExact}, {1, 4, priorExact}, {1, 0, priorBound}, {0, 0, priorBound}}
	if !slices.Equal(head, want) {
		t.Errorf("first five %v, want %v", head, want)
	}
	for _, r := range order[5:] {
		if r.class != priorNone {
			t.Fatalf("a point with a figure after the first five: %+v", r)
		}
	}
}

// A flow plan whose first phase and phases of ties lie in several sweeps
// runs their parts at once (planPartsAtOnce) on more than one worker: the
// answer and the counts are the same on 1, 2 and 3 workers.
func TestPlanPartsAtOnceSameAnswer(t *testing.T) {
	if testing.Short() {
		t.Skip("plays a flow-fidelity plan three times")
	}
	args := []string{"plan", "--model", "llama3-8b", "--gpu", "h100-sxm", "--gpus", "64", "--tokens", "300B",
		"--set", "sim.fidelity=flow", "--top", "4", "--quiet", "--format", "json"}
	var first string
	for _, w := range []string{"1", "2", "3"} {
		before := partsAtOnce.Load()
		stdout, stderr, err := runCLI(t, append(args, "--workers", w)...)
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		if ran := partsAtOnce.Load() - before; (w == "1") != (ran == 0) {
			t.Errorf("%s workers: %d phases ran their parts at once", w, ran)
		}
		if first == "" {
			first = stdout
		} else if stdout != first {
			t.Errorf("%s workers: the answer differs from one worker's:\n%s\n%s", w, stdout, first)
		}
	}
}
