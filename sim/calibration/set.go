package calibration

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"

	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/simulation"
	"github.com/simtrain/simtrain/sim/validation"
)

// uses says whether a scenario applies a calibration entry (fit rows
// {uses: true}): the stalls act only on the rows whose step has them.
var uses = map[string]func(*scenario.Plan) bool{
	"moe_host_sync":   func(s *scenario.Plan) bool { return s.MoEHostSync() > 0 },
	"host_sync_stall": func(s *scenario.Plan) bool { return s.UnpadHostSync() > 0 },
}

// FromCases builds the Problem of a validation set evaluated at the
// committed calibration: its rows are the cases that simulated, its
// parameters the calibration entries fitted on runs (hardware.FittedOnRuns),
// and a point is evaluated by simulating the row's scenario again with the
// values given (workers at once; ≤ 0: one per CPU). The cases' own errors
// seed the cache.
func FromCases(cases []validation.Case, budget simulation.Budget, workers int, overrides []scenario.Override) (*Problem, error) {
	return build(cases, hardware.FittedOnRuns(), budget, workers, overrides)
}

func build(cases []validation.Case, entries []hardware.FitEntry, budget simulation.Budget, workers int, overrides []scenario.Override) (*Problem, error) {
	p := &Problem{}
	var paths []string
	var base []Outcome
	for _, c := range cases {
		if c.NoExpect || c.Err != nil {
			continue
		}
		p.Names = append(p.Names, c.Name)
		p.Groups = append(p.Groups, c.Group)
		paths = append(paths, c.Path)
		base = append(base, Outcome{Err: c.Comparison.Error, OK: true})
	}
	if len(p.Names) == 0 {
		return nil, fmt.Errorf("calibration: no validation row simulated")
	}
	index := map[string]int{}
	for i, e := range entries {
		index[e.Name] = i
	}
	var kept []validation.Case
	for _, c := range cases {
		if !c.NoExpect && c.Err == nil {
			kept = append(kept, c)
		}
	}
	for _, e := range entries {
		q := Param{Name: e.Name, Init: e.Value, Prior: e.Fit.Prior, Grid: e.Fit.Grid, With: -1,
			Rows: make([]bool, len(kept))}
		if e.Fit.With != "" {
			j, ok := index[e.Fit.With]
			if !ok {
				return nil, fmt.Errorf("calibration %s: fit.with %q is not an entry with a fit: block", e.Name, e.Fit.With)
			}
			q.With = j
		}
		var probe func(*scenario.Plan) bool
		if e.Fit.Rows.Uses {
			var ok bool
			if probe, ok = uses[e.Name]; !ok {
				return nil, fmt.Errorf("calibration %s: fit.rows.uses: simtrain cannot tell which scenarios apply it (it can for: moe_host_sync, host_sync_stall)", e.Name)
			}
			q.Moves = make([]bool, len(kept))
		}
		for r, c := range kept {
			in := len(e.Fit.Rows.Arch) == 0 || slices.Contains(e.Fit.Rows.Arch, c.Arch)
			if probe != nil {
				q.Moves[r] = probe(c.Plan)
				in = in && q.Moves[r]
			}
			q.Rows[r] = in
		}
		p.Params = append(p.Params, q)
	}
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	// Each file read and parsed once for every evaluation of it
	// (scenario.File; its Resolve calls may run concurrently).
	files := make([]*scenario.File, len(paths))
	for r, path := range paths {
		files[r] = scenario.ReadFile(path)
	}
	// The workers' Reuses (validation.EvaluateWith: storage, clusters and
	// collective prices kept from case to case) are kept from one Eval to
	// the next too: a fit calls Eval once per block of parameters and
	// pass, ≈ 100 times for `validate --cv source`, and a fresh Reuse's
	// arena is fresh memory to populate (populating and clearing pages
	// were ≈ 20% of that command's perf samples, issue 18, round 58). A
	// worker takes one from the pool or makes one, and puts it back if
	// there is room: one goroutine uses a Reuse at a time, whatever
	// calls Eval concurrently.
	reuses := make(chan *simulation.Reuse, workers)
	p.Eval = func(ctx context.Context, pts []Point) []Outcome {
		out := make([]Outcome, len(pts))
		jobs := make(chan int)
		var wg sync.WaitGroup
		for w := 0; w < max(1, min(workers, len(pts))); w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var reuse *simulation.Reuse
				select {
				case reuse = <-reuses:
				default:
					reuse = new(simulation.Reuse)
				}
				defer func() {
					select {
					case reuses <- reuse:
					default:
					}
				}()
				for i := range jobs {
					cal := make(hardware.Calibration, len(p.Params))
					for k, q := range p.Params {
						cal[k] = hardware.Setting{Name: q.Name, Value: pts[i].Values[k]}
					}
					c := validation.EvaluateFile(ctx, files[pts[i].Row], budget, cal, reuse, overrides...)
					out[i] = Outcome{Err: c.Comparison.Error, OK: c.Err == nil}
				}
			}()
		}
		for i := range pts {
			if ctx.Err() != nil {
				break
			}
			jobs <- i
		}
		close(jobs)
		wg.Wait()
		return out
	}
	init := make([]string, len(p.Params))
	for i, q := range p.Params {
		init[i] = q.Init
	}
	pts := make([]Point, len(p.Names))
	for r := range pts {
		pts[r] = Point{Row: r, Values: init}
	}
	p.Seed(pts, base)
	return p, nil
}
