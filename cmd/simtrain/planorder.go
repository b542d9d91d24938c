package main

import (
	"cmp"
	"math"
	"slices"

	"github.com/simtrain/simtrain/sim/sweep"
)

// planGuide predicts which points of a plan's sweeps are likely among the
// best, from the points played so far, so that plan plays those first and
// its cutoff (planCutoff) reaches the rest close to its final value.
//
// The prediction is a ridge regression of the log of the ranked figure
// (days to train, or cost with --by cost) on the search's fields, one
// indicator per field and value ("parallel.tp=2") and one per pair of
// fields' values (features): a point's score is the sum of its
// indicators' coefficients (one never played counts 0), lower being
// better. Least squares, not each value's mean figure: the fields
// are not independent in a search (sp only with tp > 1, the larger
// micro-batches fitting at deeper pipelines), and a value's mean carries
// the others' effects (on mixtral-8x7b's first sweep the best layout, tp 1
// pp 1 ep 8, ranked 544th of 2,711 by the means).
//
// It is only an order: which points are played first. A point is ruled
// out only by the figures of points actually played (planCutoff), so the
// answer is the same in any order; the order decides how many points are
// cut, and so the CPU a plan takes. The fit reads its observations in
// (sweep, point) order, so the order is the same however the workers
// finished them.
//
// Why (issue 18, round 65): on mixtral-8x7b on 512 H100 the cutoff after
// the first sweep's sample was 5.36 days against a final 4.22 (the
// sample's best layouts are far from the search's), and the first
// sweep's other 2,700 points were played against it; given the final
// cutoff from the start, the plan took 31% less CPU.
type planGuide struct {
	cols  map[string]int // "field=value" → its coefficient
	names []string       // by coefficient
	obs   []planObs
	sweep int // the sweep the next observations are of (planRun counts them)
	key   []byte
	beta  []float64 // the fit (fit), by coefficient
}

// planObs is one played point: its sweep's number in the plan, its index
// there, its values' coefficients and the log of its figure.
type planObs struct {
	sweep, index int
	cols         []int
	y            float64
}

// planRidge is the fit's penalty on each coefficient's square, a value's
// and a pair's alike (the figures' logs differ by ≈ 0.1–1 between
// layouts): it keeps a value or pair seen on a few points from dominating
// and the indicators' collinearity (each field's sum to one, and each
// pair's to its fields') from leaving the system singular. Penalties of
// 3 and 10 on the pairs ranked mixtral-8x7b's best layout 84th and 160th
// among the first sweep's points after its sample, against 65th at 1
// (and 431st with no pairs).
const planRidge = 1.0

// observe adds point i of sw, played to a figure of metric (> 0).
func (g *planGuide) observe(sw *sweep.Sweep, i int, metric float64) {
	if !(metric > 0) || math.IsInf(metric, 1) {
		return
	}
	if g.cols == nil {
		g.cols = map[string]int{}
	}
	o := planObs{sweep: g.sweep, index: i, y: math.Log(metric)}
	g.features(sw, i, func(k []byte) {
		c, ok := g.cols[string(k)]
		if !ok {
			c = len(g.names)
			g.cols[string(k)] = c
			g.names = append(g.names, string(k))
		}
		o.cols = append(o.cols, c)
	})
	g.obs = append(g.obs, o)
}

// features calls use with the key of each of point i's features, in g's
// scratch (valid during the call): each field's value, "path=value", and
// each pair of fields' values, "path=value&path=value".
func (g *planGuide) features(sw *sweep.Sweep, i int, use func(key []byte)) {
	for f := range sw.Fields {
		g.key = append(append(append(g.key[:0], sw.Fields[f].Path...), '='), sw.Value(i, f)...)
		use(g.key)
		n := len(g.key)
		for h := f + 1; h < len(sw.Fields); h++ {
			g.key = append(append(append(append(g.key[:n], '&'), sw.Fields[h].Path...), '='), sw.Value(i, h)...)
			use(g.key)
		}
	}
}

// fit solves the ridge regression on the observations so far; false when
// there are none. The coefficients' numbering follows the order values
// were first observed in, which the workers' timing sets, so the
// coefficients are numbered again by name first and the observations
// sorted by (sweep, point): the system, and its rounding, are then the
// same on any number of workers.
func (g *planGuide) fit() bool {
	if len(g.obs) == 0 {
		return false
	}
	slices.SortFunc(g.obs, func(a, b planObs) int { return cmp.Or(cmp.Compare(a.sweep, b.sweep), cmp.Compare(a.index, b.index)) })
	byName := slices.Clone(g.names)
	slices.Sort(byName)
	renum := make([]int, len(g.names))
	for c, n := range byName {
		renum[g.cols[n]] = c
		g.cols[n] = c
	}
	g.names = byName
	for k := range g.obs {
		for f, c := range g.obs[k].cols {
			g.obs[k].cols[f] = renum[c]
		}
		slices.Sort(g.obs[k].cols) // (the sums over them in one order)
	}
	p := len(g.names)
	var mean float64
	for _, o := range g.obs {
		mean += o.y
	}
	mean /= float64(len(g.obs))
	// (XᵀX + λI) β = Xᵀ(y − ȳ), X the points' 0/1 indicators
	a := make([]float64, p*p)
	rhs := make([]float64, p)
	for _, o := range g.obs {
		for _, c := range o.cols {
			rhs[c] += o.y - mean
			for _, d := range o.cols {
				a[c*p+d]++
			}
		}
	}
	for c := 0; c < p; c++ {
		a[c*p+c] += planRidge
	}
	g.beta = solveSPD(a, rhs, p)
	return true
}

// solveSPD solves a x = b for a symmetric positive definite p×p matrix a
// (row-major) by Cholesky's factorisation, in place; a and b are spent.
func solveSPD(a, b []float64, p int) []float64 {
	for j := 0; j < p; j++ {
		d := a[j*p+j]
		for k := 0; k < j; k++ {
			d -= a[j*p+k] * a[j*p+k]
		}
		d = math.Sqrt(d)
		a[j*p+j] = d
		for i := j + 1; i < p; i++ {
			s := a[i*p+j]
			for k := 0; k < j; k++ {
				s -= a[i*p+k] * a[j*p+k]
			}
			a[i*p+j] = s / d
		}
	}
	for i := 0; i < p; i++ { // L y = b
		s := b[i]
		for k := 0; k < i; k++ {
			s -= a[i*p+k] * b[k]
		}
		b[i] = s / a[i*p+i]
	}
	for i := p - 1; i >= 0; i-- { // Lᵀ x = y
		s := b[i]
		for k := i + 1; k < p; k++ {
			s -= a[k*p+i] * b[k]
		}
		b[i] = s / a[i*p+i]
	}
	return b
}

// score is point i's predicted log figure less the mean (lower: better),
// from the last fit.
func (g *planGuide) score(sw *sweep.Sweep, i int) float64 {
	var s float64
	g.features(sw, i, func(k []byte) {
		if c, ok := g.cols[string(k)]; ok {
			s += g.beta[c]
		}
	})
	return s
}

// planSampleStride is the least stride of the sample of plan's first
// sweep (planPhase.next).
const planSampleStride = 16

// planLeadShare: planPhase.next plays the 1/planLeadShare of a sweep's valid
// points the guide scores best (at least planLeadMin) before the others.
const (
	planLeadShare = 16
	planLeadMin   = 32
)

// sampleStride is the least stride ≥ planSampleStride that shares no factor
// with the number of values of any field of sw: the points are enumerated
// with the last field varying fastest, so a stride that some field's count
// divides samples one value of that field only (a stride of 16 over
// mixtral-8x7b's search took every point at ep 1 and ZeRO 1).
func sampleStride(sw *sweep.Sweep) int {
	for s := planSampleStride; ; s++ {
		ok := true
		for _, f := range sw.Fields {
			if n := len(f.Values); n > 1 && gcd(s, n) > 1 {
				ok = false
				break
			}
		}
		if ok {
			return s
		}
	}
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// planSample splits indices (a sweep's points in order) into every
// stride-th point and the rest.
func planSample(indices []int, stride int) (sample, rest []int) {
	for k, i := range indices {
		if k%stride == 0 {
			sample = append(sample, i)
		} else {
			rest = append(rest, i)
		}
	}
	return sample, rest
}

// planLead splits indices into the valid points g scores best (the larger
// of 1/planLeadShare of them and planLeadMin; ties by index) and the
// rest, each in the sweep's order, which keeps a worker's consecutive
// points alike (sweep.Sweep.Run). With nothing observed, or under 8 times
// the lead's size of valid points, the lead is empty: a small sweep runs
// in one phase, its cutoff set by the sweeps before it. (Measured on
// llama3-405b at 131,072 GPUs, 13 sweeps of ≈ 80 points: leads of 32
// points in each took +194 ± 72 ms of the plan's 1.07 s of CPU, 4 runs.)
func planLead(g *planGuide, sw *sweep.Sweep, indices []int) (lead, rest []int) {
	type scored struct {
		i int
		s float64
	}
	var valid []scored
	for _, i := range indices {
		if sw.Valid(i) {
			valid = append(valid, scored{i: i})
		}
	}
	m := max(len(valid)/planLeadShare, planLeadMin)
	if len(valid) < 8*m || !g.fit() {
		return nil, indices
	}
	for k := range valid {
		valid[k].s = g.score(sw, valid[k].i)
	}
	slices.SortFunc(valid, func(a, b scored) int { return cmp.Or(cmp.Compare(a.s, b.s), cmp.Compare(a.i, b.i)) })
	chosen := make(map[int]bool, m)
	for _, v := range valid[:m] {
		chosen[v.i] = true
	}
	for _, i := range indices {
		if chosen[i] {
			lead = append(lead, i)
		} else {
			rest = append(rest, i)
		}
	}
	return lead, rest
}
