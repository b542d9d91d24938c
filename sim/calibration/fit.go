// Package calibration refits the calibration entries that were fitted on
// published runs (sim/hardware data/calibration.yaml, the entries with a
// fit: block) from a validation set, and estimates what they are worth on
// runs they were not fitted on by leaving one source group out at a time.
//
// The fit is coordinate descent, two passes over the entries in the file's
// order: each entry (or pair fitted jointly) takes the grid value with the
// lowest mean |step-time error| over its rows, the others fixed. An entry
// with no row left to fit on takes its prior (0 for a stall: the mechanism
// off). Predictions are cached per (row, values of the entries that move
// that row), so the leave-one-group-out folds reuse the fit's evaluations.
package calibration

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync"
)

// Param is one fitted constant as the fit sees it.
type Param struct {
	Name string
	// Init is the value the descent starts from (the committed one), Prior
	// the value it takes when no row is left to fit it on.
	Init, Prior string
	Grid        []string
	// With is the index of the parameter fitted jointly with this one (on
	// the product of both grids), -1 for none; set on one of the two.
	With int
	// Rows marks the rows it is scored on; Moves the rows whose prediction
	// can change with it (nil: every row).
	Rows, Moves []bool
}

// Point asks for the error of one row with the parameters at Values (one
// per Problem.Params entry).
type Point struct {
	Row    int
	Values []string
}

// Outcome is a point's signed step-time error; OK is false when the row
// did not simulate.
type Outcome struct {
	Err float64
	OK  bool
}

// EvalFunc evaluates points; the outcomes are in the points' order.
type EvalFunc func(ctx context.Context, pts []Point) []Outcome

// Problem is a set of rows, their source groups, the parameters fitted on
// them and how a row is evaluated at given values.
type Problem struct {
	Names, Groups []string
	Params        []Param
	Eval          EvalFunc

	mu    sync.Mutex
	cache map[string]Outcome
	evals int
}

// Seed records known outcomes (a validation run at the Init values).
func (p *Problem) Seed(pts []Point, out []Outcome) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cache == nil {
		p.cache = map[string]Outcome{}
	}
	for i, pt := range pts {
		p.cache[p.key(pt)] = out[i]
	}
}

// Evaluations is how many points were evaluated (not found in the cache).
func (p *Problem) Evaluations() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.evals
}

// key names a point by its row and the values of the parameters that move
// that row: two points that differ only elsewhere share an outcome.
func (p *Problem) key(pt Point) string {
	var b strings.Builder
	b.WriteString(p.Names[pt.Row])
	for i, q := range p.Params {
		if q.Moves == nil || q.Moves[pt.Row] {
			b.WriteByte(0)
			b.WriteString(pt.Values[i])
		}
	}
	return b.String()
}

// outcomes evaluates the points, each distinct one at most once over the
// Problem's life.
func (p *Problem) outcomes(ctx context.Context, pts []Point) []Outcome {
	p.mu.Lock()
	if p.cache == nil {
		p.cache = map[string]Outcome{}
	}
	keys := make([]string, len(pts))
	var todo []Point
	var todoKeys []string
	seen := map[string]bool{}
	for i, pt := range pts {
		keys[i] = p.key(pt)
		if _, ok := p.cache[keys[i]]; !ok && !seen[keys[i]] {
			seen[keys[i]] = true
			todo = append(todo, pt)
			todoKeys = append(todoKeys, keys[i])
		}
	}
	p.mu.Unlock()
	if len(todo) > 0 {
		got := p.Eval(ctx, todo)
		p.mu.Lock()
		for i, k := range todoKeys {
			p.cache[k] = got[i]
		}
		p.evals += len(todo)
		p.mu.Unlock()
	}
	out := make([]Outcome, len(pts))
	p.mu.Lock()
	for i, k := range keys {
		out[i] = p.cache[k]
	}
	p.mu.Unlock()
	return out
}

// Step is one block of a fit's last pass: the parameters set together,
// the rows they were scored on (nil: none left, the priors taken) and
// the mean |error| there at the values chosen.
type Step struct {
	Params    []int
	Rows      []int
	Objective float64
}

// Fit is the outcome of a fit: one value per parameter, and the last
// pass's steps.
type Fit struct {
	Values []string
	Steps  []Step
}

// blocks groups the parameters into what one descent step sets.
func (p *Problem) blocks() [][]int {
	var out [][]int
	joined := map[int]bool{}
	for _, q := range p.Params {
		if q.With >= 0 {
			joined[q.With] = true
		}
	}
	for i, q := range p.Params {
		if joined[i] {
			continue
		}
		b := []int{i}
		if q.With >= 0 {
			b = append(b, q.With)
		}
		out = append(out, b)
	}
	return out
}

// Fit refits the parameters on the rows use marks (nil: every row).
func (p *Problem) Fit(ctx context.Context, use []bool) (Fit, error) {
	vals := make([]string, len(p.Params))
	for i, q := range p.Params {
		vals[i] = q.Init
	}
	var steps []Step
	for pass := 0; pass < 2; pass++ {
		steps = steps[:0]
		for _, b := range p.blocks() {
			var rows []int
			for r := range p.Names {
				if use != nil && !use[r] {
					continue
				}
				for _, i := range b {
					if p.Params[i].Rows[r] {
						rows = append(rows, r)
						break
					}
				}
			}
			if len(rows) == 0 {
				for _, i := range b {
					vals[i] = p.Params[i].Prior
				}
				steps = append(steps, Step{Params: b})
				continue
			}
			cands := product(p.Params, b)
			pts := make([]Point, 0, len(cands)*len(rows))
			for _, c := range cands {
				v := slices.Clone(vals)
				for k, i := range b {
					v[i] = c[k]
				}
				for _, r := range rows {
					pts = append(pts, Point{Row: r, Values: v})
				}
			}
			out := p.outcomes(ctx, pts)
			if err := ctx.Err(); err != nil {
				return Fit{}, err
			}
			best, bestObj := 0, math.Inf(1)
			for ci := range cands {
				if obj := meanAbs(out[ci*len(rows) : (ci+1)*len(rows)]); obj < bestObj-1e-12 {
					best, bestObj = ci, obj
				}
			}
			for k, i := range b {
				vals[i] = cands[best][k]
			}
			steps = append(steps, Step{Params: b, Rows: rows, Objective: bestObj})
		}
	}
	return Fit{Values: vals, Steps: steps}, nil
}

// product lists the value tuples of block b's grids, the first
// parameter's slowest.
func product(ps []Param, b []int) [][]string {
	out := [][]string{nil}
	for _, i := range b {
		var next [][]string
		for _, prefix := range out {
			for _, v := range ps[i].Grid {
				next = append(next, append(slices.Clone(prefix), v))
			}
		}
		out = next
	}
	return out
}

// meanAbs is the mean |error| of the outcomes that simulated (+Inf when
// none did).
func meanAbs(out []Outcome) float64 {
	var s float64
	n := 0
	for _, o := range out {
		if o.OK {
			s += math.Abs(o.Err)
			n++
		}
	}
	if n == 0 {
		return math.Inf(1)
	}
	return s / float64(n)
}

// Score evaluates rows at values.
func (p *Problem) Score(ctx context.Context, rows []int, values []string) []Outcome {
	pts := make([]Point, len(rows))
	for i, r := range rows {
		pts[i] = Point{Row: r, Values: values}
	}
	return p.outcomes(ctx, pts)
}

// Fold is one group held out: the values refit without it and its rows'
// outcomes at those values.
type Fold struct {
	Group    string
	Rows     []int
	Values   []string
	Outcomes []Outcome
}

// CrossValidate leaves each source group out in turn (sorted by name):
// refits on the other groups' rows and scores the held-out rows with the
// refit values.
func (p *Problem) CrossValidate(ctx context.Context) ([]Fold, error) {
	groups := slices.Clone(p.Groups)
	slices.Sort(groups)
	groups = slices.Compact(groups)
	var folds []Fold
	for _, g := range groups {
		use := make([]bool, len(p.Names))
		var held []int
		for r, rg := range p.Groups {
			use[r] = rg != g
			if rg == g {
				held = append(held, r)
			}
		}
		f, err := p.Fit(ctx, use)
		if err != nil {
			return nil, err
		}
		folds = append(folds, Fold{Group: g, Rows: held, Values: f.Values, Outcomes: p.Score(ctx, held, f.Values)})
	}
	return folds, ctx.Err()
}
