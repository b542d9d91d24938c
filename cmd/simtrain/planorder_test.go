package main

import (
	"math"
	"slices"
	"testing"

	"github.com/simtrain/simtrain/sim/sweep"
)

// guideSweep is a small search for the guide's tests: 4 × 3 × 2 × 3 = 72
// points (some not valid layouts; the guide reads only their values).
func guideSweep(t *testing.T) *sweep.Sweep {
	t.Helper()
	doc := `name: guide
scenario:
  name: guide
  model: {preset: llama3-8b}
  training: {seq_len: 4096, global_batch: 64, micro_batch: 1}
  cluster: {gpu: "h100-sxm", nodes: 4, gpus_per_node: 8}
  parallel: {tp: 1, pp: 1, zero: 1}
sweep:
  parallel.tp: [1, 2, 4, 8]
  parallel.pp: [1, 2, 4]
  parallel.zero: [1, 3]
  training.micro_batch: [1, 2, 4]
`
	return parseSweep(t, doc)
}

// parseSweep parses a sweep document for the guide's tests.
func parseSweep(t *testing.T, doc string) *sweep.Sweep {
	t.Helper()
	sw, err := sweep.Parse([]byte(doc), ".", sweep.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return sw
}

// TestPlanGuideRanksTheBest: from a sample of a search whose figure has
// main effects and an interaction (tp 1 with micro-batch 4 far better
// than either alone says), the guide scores the best unplayed point first,
// where each value's mean figure would not; and it scores every point the
// same, to the bit, whatever order the sample was observed in (the
// workers' timing sets it).
func TestPlanGuideRanksTheBest(t *testing.T) {
	sw := guideSweep(t)
	field := func(i int, path string) string {
		for f := range sw.Fields {
			if sw.Fields[f].Path == path {
				return sw.Value(i, f)
			}
		}
		t.Fatalf("no field %s", path)
		return ""
	}
	figure := func(i int) float64 {
		y := map[string]float64{"1": 0.3, "2": 0, "4": 0.1, "8": 0.4}[field(i, "parallel.tp")]
		y += map[string]float64{"1": 0, "2": 0.1, "4": 0.3}[field(i, "parallel.pp")]
		y += map[string]float64{"1": 0, "3": 0.2}[field(i, "parallel.zero")]
		y += map[string]float64{"1": 0, "2": 0.05, "4": 0.15}[field(i, "training.micro_batch")]
		if field(i, "parallel.tp") == "1" && field(i, "training.micro_batch") == "4" {
			y -= 0.8 // the interaction
		}
		return 10 * math.Exp(y)
	}
	var sample, rest []int
	for i := range sw.Len() {
		if i%5 == 0 {
			sample = append(sample, i)
		} else {
			rest = append(rest, i)
		}
	}
	best := slices.MinFunc(rest, func(a, b int) int { return cmpFloat(figure(a), figure(b)) })
	scores := func(order []int) []float64 {
		var g planGuide
		for _, i := range order {
			g.observe(sw, i, figure(i))
		}
		if !g.fit() {
			t.Fatal("nothing to fit")
		}
		s := make([]float64, sw.Len())
		for i := range s {
			s[i] = g.score(sw, i)
		}
		return s
	}
	s := scores(sample)
	first := slices.MinFunc(rest, func(a, b int) int { return cmpFloat(s[a], s[b]) })
	if first != best {
		t.Errorf("scored first: point %d (figure %.3g), the best unplayed is %d (%.3g)", first, figure(first), best, figure(best))
	}
	// each value's mean figure ranks it lower (why the fit has pairs)
	mean := func(i int) float64 {
		var sum float64
		for f := range sw.Fields {
			var y float64
			var n int
			for _, j := range sample {
				if sw.Value(j, f) == sw.Value(i, f) {
					y += math.Log(figure(j))
					n++
				}
			}
			sum += y / float64(n)
		}
		return sum
	}
	if byMean := slices.MinFunc(rest, func(a, b int) int { return cmpFloat(mean(a), mean(b)) }); byMean == best {
		t.Errorf("the means find the best too (point %d): the search does not test the pairs", best)
	}
	reversed := slices.Clone(sample)
	slices.Reverse(reversed)
	if r := scores(reversed); !slices.Equal(s, r) {
		t.Errorf("the scores depend on the order the points were observed in")
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestSampleStride: the sample's stride shares no factor with any field's
// count of values, so it meets every value of the fastest fields.
func TestSampleStride(t *testing.T) {
	sw := guideSweep(t) // counts 4, 3, 2, 3
	s := sampleStride(sw)
	if s != 17 {
		t.Errorf("stride %d, want 17", s)
	}
	sample, rest := planSample(sw.ShardIndices(0, 1), s)
	if len(sample)+len(rest) != sw.Len() {
		t.Fatalf("%d + %d points of %d", len(sample), len(rest), sw.Len())
	}
	seen := map[string]bool{}
	for _, i := range sample {
		seen[sw.Value(i, 3)] = true // micro-batch, the fastest field
	}
	if len(seen) != 3 {
		t.Errorf("the sample meets micro-batches %v", seen)
	}
}

// TestPlanPhases: plan's first sweep runs a sample, then the lead the
// guide ranks best (a sixteenth of its valid points), then the rest; a
// later sweep, with figures to fit, its lead and the rest; a small sweep
// one run. The phases hold every point once, each in the sweep's order.
func TestPlanPhases(t *testing.T) {
	doc := `name: phases
scenario:
  name: phases
  model: {preset: llama3-8b}
  training: {seq_len: 4096, global_batch: 512, micro_batch: 1}
  cluster: {gpu: "h100-sxm", nodes: 16, gpus_per_node: 8}
  parallel: {tp: 1, pp: 1, zero: 1}
sweep:
  parallel.tp: [1, 2, 4, 8]
  parallel.pp: [1, 2, 4, 8]
  parallel.sp: [false, true]
  training.micro_batch: [1, 2, 4, 8]
  training.recompute: [none, selective, full]
  parallel.zero: [1, 2, 3]
`
	sw := parseSweep(t, doc)
	valid := 0
	for i := range sw.Len() {
		if sw.Valid(i) {
			valid++
		}
	}
	if valid < 8*max(valid/planLeadShare, planLeadMin) {
		t.Fatalf("%d valid points: too few for a lead", valid)
	}
	figure := func(i int) float64 { return 1 + float64(i%7) }
	run := func(g *planGuide, sw *sweep.Sweep) [][]int {
		var at planPhase
		var phases [][]int
		for rest := sw.ShardIndices(0, 1); len(rest) > 0; {
			var phase []int
			phase, rest = at.next(g, sw, rest)
			phases = append(phases, phase)
			for _, i := range phase {
				if sw.Valid(i) {
					g.observe(sw, i, figure(i))
				}
			}
		}
		return phases
	}
	check := func(label string, sw *sweep.Sweep, phases [][]int, sizes ...int) {
		t.Helper()
		var all []int
		for k, p := range phases {
			if !slices.IsSorted(p) {
				t.Errorf("%s: phase %d not in the sweep's order", label, k)
			}
			if k < len(sizes) && sizes[k] >= 0 && len(p) != sizes[k] {
				t.Errorf("%s: phase %d holds %d points, want %d", label, k, len(p), sizes[k])
			}
			all = append(all, p...)
		}
		if len(phases) != len(sizes) {
			t.Errorf("%s: %d phases, want %d", label, len(phases), len(sizes))
		}
		slices.Sort(all)
		if !slices.Equal(all, sw.ShardIndices(0, 1)) {
			t.Errorf("%s: the phases hold %d points, not each of the %d once", label, len(all), sw.Len())
		}
	}
	var g planGuide
	stride := sampleStride(sw)
	restValid := 0 // the valid points the sample leaves
	for i := range sw.Len() {
		if i%stride != 0 && sw.Valid(i) {
			restValid++
		}
	}
	sampled := (sw.Len() + stride - 1) / stride
	check("first sweep", sw, run(&g, sw), sampled, restValid/planLeadShare, -1)
	g.sweep++
	check("later sweep", sw, run(&g, sw), valid/planLeadShare, -1)
	small := guideSweep(t)
	g.sweep++
	check("small sweep", small, run(&g, small), small.Len())

}
