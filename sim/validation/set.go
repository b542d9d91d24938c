package validation

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/simulation"
)

// Case is one scenario file of a validation set and what became of it.
type Case struct {
	Path string
	// Name is the scenario's name (the file's base name when it did not
	// load).
	Name string
	// NoExpect says the file has no expect: block: it is not validated.
	NoExpect bool
	// Err says why the scenario did not load, simulate or compare.
	Err error
	// Plan is the loaded scenario (nil when it did not load or has no
	// expect: block); Result and Comparison are set when Err is nil.
	Plan       *scenario.Plan
	Result     *simulation.Result
	Comparison Comparison
	// Group is expect.group, else expect.source; GPU the catalog name, Arch
	// its architecture family, Style the parallel style (ParallelStyle);
	// Fidelity the fidelity it ran at ("" when it did not run).
	Group, GPU, Arch, Style, Fidelity string
}

// Evaluate loads, simulates within budget and compares one scenario file,
// with the overrides applied (the CLI's --fidelity).
func Evaluate(ctx context.Context, path string, budget simulation.Budget, overrides ...scenario.Override) Case {
	return EvaluateCalibrated(ctx, path, budget, nil, overrides...)
}

// EvaluateCalibrated is Evaluate with the calibration entries of cal
// replaced (scenario.LoadCalibrated).
func EvaluateCalibrated(ctx context.Context, path string, budget simulation.Budget, cal hardware.Calibration, overrides ...scenario.Override) Case {
	return EvaluateWith(ctx, path, budget, cal, nil, overrides...)
}

// EvaluateWith is EvaluateCalibrated simulating with reuse
// (simulation.Options.Reuse: the storage, cluster and collective prices a
// goroutine keeps from one scenario to the next, as a sweep worker does;
// nil: none). With a reuse the Case's Result holds the figures only
// (simulation.Result.KeepFiguresOnly), which is all a Case is read for:
// its storage is the next case's. The figures are the same either way.
func EvaluateWith(ctx context.Context, path string, budget simulation.Budget, cal hardware.Calibration, reuse *simulation.Reuse, overrides ...scenario.Override) Case {
	return EvaluateFile(ctx, scenario.ReadFile(path), budget, cal, reuse, overrides...)
}

// EvaluateFile is EvaluateWith for a file read once (scenario.ReadFile)
// and evaluated many times, as calibrate's search does.
func EvaluateFile(ctx context.Context, f *scenario.File, budget simulation.Budget, cal hardware.Calibration, reuse *simulation.Reuse, overrides ...scenario.Override) Case {
	path := f.Path()
	c := Case{Path: path, Name: strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))}
	s, err := f.Resolve(cal, overrides...)
	if err != nil {
		c.Err = err
		return c
	}
	c.Name = s.Name
	if s.Expect == nil {
		c.NoExpect = true
		return c
	}
	c.Plan = s
	c.Group = s.Expect.Group
	if c.Group == "" {
		c.Group = s.Expect.Source
	}
	c.GPU = s.Cluster.GPU
	c.Arch = s.GPU().Arch
	c.Style = ParallelStyle(s)
	// Only the figures are compared: long steps may be replicated.
	res, err := simulation.Run(ctx, s, simulation.Options{Budget: budget, FiguresOnly: true, Reuse: reuse})
	if err != nil {
		c.Err = fmt.Errorf("%s: %w", path, err)
		return c
	}
	if reuse != nil {
		res.KeepFiguresOnly()
	}
	c.Result = res
	c.Fidelity = s.Sim.Fidelity
	c.Comparison, c.Err = Compare(res)
	return c
}

// Run evaluates every path on workers goroutines (≤ 0: one per CPU) and
// returns the cases in path order; they do not depend on workers. Each
// goroutine keeps one simulation.Reuse across its cases (EvaluateWith):
// `simtrain validate scenarios/validation` then takes 0.79 s of CPU
// instead of 1.85 (issue 18; a fresh arena and cluster per case was 94 k
// page faults and 0.67 s of system time).
func Run(ctx context.Context, paths []string, workers int, budget simulation.Budget, overrides ...scenario.Override) []Case {
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	workers = max(1, min(workers, len(paths)))
	cases := make([]Case, len(paths))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reuse := new(simulation.Reuse)
			for i := range jobs {
				cases[i] = EvaluateWith(ctx, paths[i], budget, nil, reuse, overrides...)
			}
		}()
	}
	for i := range paths {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return cases
}

// Stats are the accuracy figures of a set of cases (absolute errors as
// fractions).
type Stats struct {
	Rows, Simulated int
	MAPE, Median    float64
	Worst           float64
	WorstName       string
}

// StepStats summarises the step-time errors of the cases; Rows counts them
// all, Simulated those that compared.
func StepStats(cases []Case) Stats {
	st := statsBy(cases, func(c Case) (float64, bool) { return c.Comparison.Error, true })
	st.Rows = len(cases)
	return st
}

// MemoryStats summarises the peak-memory errors of the cases whose source
// published a peak memory.
func MemoryStats(cases []Case) Stats {
	st := statsBy(cases, func(c Case) (float64, bool) { return c.Comparison.MemError, c.Comparison.HasMemory })
	st.Rows = st.Simulated
	return st
}

// statsBy summarises the errors errOf gives for the simulated cases (those
// it reports as present); Rows is left for the caller to set.
func statsBy(cases []Case, errOf func(Case) (float64, bool)) Stats {
	var st Stats
	var abs []float64
	for _, c := range cases {
		if c.Err != nil {
			continue
		}
		e, ok := errOf(c)
		if !ok {
			continue
		}
		a := math.Abs(e)
		abs = append(abs, a)
		if a > st.Worst || st.WorstName == "" {
			st.Worst, st.WorstName = a, c.Name
		}
	}
	st.Simulated = len(abs)
	st.MAPE, st.Median = meanMedian(abs)
	return st
}

// meanMedian returns the mean and the median of xs (zeros when empty); it
// sorts xs.
func meanMedian(xs []float64) (mean, median float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	slices.Sort(xs)
	if n := len(xs); n%2 == 1 {
		median = xs[n/2]
	} else {
		median = (xs[n/2-1] + xs[n/2]) / 2
	}
	return mean, median
}

// Grouping is one way of splitting a set for the per-group report.
type Grouping struct {
	Key, Title string
	Of         func(Case) string
}

// Groupings are the per-group reports, in print order.
var Groupings = []Grouping{
	{"source", "by source", func(c Case) string { return c.Group }},
	{"gpu", "by GPU", func(c Case) string { return c.GPU }},
	{"model", "by GPU model", func(c Case) string { return GPUModel(c.GPU) }},
	{"arch", "by GPU architecture", func(c Case) string { return c.Arch }},
	{"parallel", "by parallel style", func(c Case) string { return c.Style }},
}

// GPUModel is the GPU model of a catalog name: the name up to its first '-'
// (a100-40gb and a100-80gb are A100s; h100-sxm, h100-96gb-500w and
// h100-pcie are H100s), the unit issue 5's per-GPU accuracy targets use.
func GPUModel(gpu string) string {
	m, _, _ := strings.Cut(gpu, "-")
	return m
}

// NamedStats are one group's figures.
type NamedStats struct {
	Name string
	Stats
}

// Summary is a set's figures: overall, of peak memory, and per Groupings
// entry (sorted by group name; "(none)" for an empty one).
type Summary struct {
	All    Stats
	Memory Stats
	Groups [][]NamedStats
}

// Summarise computes a set's Summary.
func Summarise(cases []Case) Summary {
	s := Summary{All: StepStats(cases), Memory: MemoryStats(cases)}
	for _, g := range Groupings {
		by := map[string][]Case{}
		for _, c := range cases {
			k := g.Of(c)
			if k == "" {
				k = "(none)"
			}
			by[k] = append(by[k], c)
		}
		names := make([]string, 0, len(by))
		for k := range by {
			names = append(names, k)
		}
		sort.Strings(names)
		var list []NamedStats
		for _, k := range names {
			list = append(list, NamedStats{k, StepStats(by[k])})
		}
		s.Groups = append(s.Groups, list)
	}
	return s
}

// NotFitting names the simulated cases whose memory model says some rank
// does not fit: every published run ran, so each is a miss of the model.
func NotFitting(cases []Case) []string {
	var names []string
	for _, c := range cases {
		if c.Err == nil && !c.Result.Fits {
			names = append(names, c.Name)
		}
	}
	return names
}
