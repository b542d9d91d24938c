package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/simtrain/simtrain/sim"
	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/output"
	"github.com/simtrain/simtrain/sim/scenario"
)

type validateOptions struct {
	fidelity string
	format   string
	out      string
	maxMAPE  float64
	// maxMemMAPE bounds the peak-memory MAPE of the rows that publish a
	// peak memory (percent; 0 = no limit).
	maxMemMAPE float64
	workers    int
	budget     budgetFlags
}

// defaultValidationDir is what `simtrain validate` checks without arguments.
const defaultValidationDir = "scenarios/validation"

func newValidateCmd() *cobra.Command {
	var o validateOptions
	cmd := &cobra.Command{
		Use:   "validate [DIR|FILE...]",
		Short: "Compare simulated step times with published training runs",
		Long: `validate simulates every scenario that carries an expect: block (a published
measurement) and compares the prediction with it.

Each published figure is first converted to a step time with the source's own
FLOPs convention (expect.flops_convention: model, hardware or megatron-sc21;
expect.attention_flops: full or causal), so runs reported as tokens/s, TFLOP/s
or MFU are all compared as seconds per optimizer step. The error of a row is
(predicted - measured) / measured step time: positive when the simulator is
slower than the real run.

It prints predicted vs measured and the signed error per scenario, then the
mean absolute percentage error (MAPE), median and worst error overall and per
group (the source, expect.group; the GPU type, its model — a100, h100, ... —
and its architecture; the parallel style), and writes OUT/validation.arrow (one row per scenario) and
OUT/validation.svg (predicted vs measured step time, log-log, with y = x and
a ±10% band). Scenarios whose source also published a peak memory per GPU
(expect.peak_memory_gib) get a second comparison, the simulated peak of the
largest rank against it, reported as its own table and MAPE.

Directories are searched for *.yaml and *.yml files (not recursively); with no
argument it validates ` + defaultValidationDir + `. The exit status is non-zero
when a scenario fails to simulate, when the MAPE exceeds --max-mape, or when
the peak-memory MAPE exceeds --max-memory-mape.`,
		Example: `  simtrain validate
  simtrain validate scenarios/validation --max-mape 12 --max-memory-mape 10 --format json
  simtrain validate scenarios/validation/r068-mpt-70b-h100-sxm-256gpu.yaml --fidelity flow`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkChoice("format", o.format, "table", "json"); err != nil {
				return err
			}
			fid, err := fidelityFlag(o.fidelity)
			if err != nil {
				return err
			}
			if o.maxMAPE < 0 || math.IsNaN(o.maxMAPE) {
				return usageErrorf("--max-mape: %g must be a percentage >= 0 (0 = no limit)", o.maxMAPE)
			}
			if o.maxMemMAPE < 0 || math.IsNaN(o.maxMemMAPE) {
				return usageErrorf("--max-memory-mape: %g must be a percentage >= 0 (0 = no limit)", o.maxMemMAPE)
			}
			if err := checkWorkers(o.workers); err != nil {
				return err
			}
			if err := o.budget.check(); err != nil {
				return err
			}
			if len(args) == 0 {
				args = []string{defaultValidationDir}
			}
			paths, err := scenarioPaths(args)
			if err != nil {
				return err
			}
			return runValidate(cmd, paths, o, fid)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.fidelity, "fidelity", "", "override sim.fidelity: analytic or flow")
	f.StringVar(&o.format, "format", "table", "stdout format: table, or json (one object per scenario, then a summary object)")
	f.StringVar(&o.out, "out", "results/validation", "directory for validation.arrow and validation.svg")
	f.Float64Var(&o.maxMAPE, "max-mape", 0, "fail when the MAPE exceeds this many percent (0 = no limit)")
	f.Float64Var(&o.maxMemMAPE, "max-memory-mape", 0, "fail when the peak-memory MAPE of the runs that publish one (expect.peak_memory_gib) exceeds this many percent (0 = no limit)")
	f.IntVar(&o.workers, "workers", 0, "scenarios simulated at once (0 = one per CPU); results do not depend on it")
	o.budget.add(cmd)
	return cmd
}

// scenarioPaths expands directories to their *.yaml/*.yml files, sorted by
// name; files are kept as given.
func scenarioPaths(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, usageErrorf("validate: %v", err)
		}
		if !st.IsDir() {
			out = append(out, a)
			continue
		}
		entries, err := os.ReadDir(a)
		if err != nil {
			return nil, err
		}
		var found []string
		for _, e := range entries {
			ext := strings.ToLower(filepath.Ext(e.Name()))
			if !e.IsDir() && (ext == ".yaml" || ext == ".yml") {
				found = append(found, filepath.Join(a, e.Name()))
			}
		}
		if len(found) == 0 {
			return nil, usageErrorf("validate: %s holds no .yaml scenario files", a)
		}
		slices.Sort(found)
		out = append(out, found...)
	}
	return out, nil
}

// validation is one scenario's outcome.
type validation struct {
	path   string
	name   string
	noExp  bool // the file has no expect: block (not validated)
	err    error
	scen   *scenario.Plan
	res    *sim.Result
	cmp    sim.Comparison
	group  string
	gpu    string
	arch   string // the GPU's architecture family (ampere, hopper, ...)
	style  string
	fidLbl string
}

func validateOne(ctx context.Context, path string, fid *network.Fidelity, budget sim.Budget) validation {
	v := validation{path: path, name: strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))}
	s, err := scenario.Load(path, fidelityOverride(fid)...)
	if err != nil {
		v.err = inputError(err)
		return v
	}
	v.name = s.Name
	if s.Expect == nil {
		v.noExp = true
		return v
	}
	v.scen = s
	v.group = s.Expect.Group
	if v.group == "" {
		v.group = s.Expect.Source
	}
	v.gpu = s.Cluster.GPU
	v.arch = s.GPU().Arch
	v.style = sim.ParallelStyle(s)
	res, err := sim.Run(ctx, s, sim.Options{Budget: budget})
	if err != nil {
		v.err = fmt.Errorf("%s: %w", path, err)
		return v
	}
	v.res = res
	v.fidLbl = s.Sim.Fidelity
	v.cmp, v.err = sim.Compare(res)
	return v
}

func runValidate(cmd *cobra.Command, paths []string, o validateOptions, fid *network.Fidelity) error {
	workers := o.workers
	if workers == 0 {
		workers = runtime.NumCPU()
	}
	workers = max(1, min(workers, len(paths)))
	results := make([]validation, len(paths))
	jobs := make(chan int)
	var wg sync.WaitGroup
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				results[i] = validateOne(ctx, paths[i], fid, o.budget.budget())
			}
		}()
	}
	for i := range paths {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err // interrupted: no table, no files
	}

	var rows []validation
	failed, code := 0, exitFailed
	for _, v := range results {
		if v.noExp {
			fmt.Fprintf(cmd.ErrOrStderr(), "simtrain: %s: no expect: block, not validated\n", v.path)
			continue
		}
		if v.err != nil {
			failed++
			code = max(code, exitCode(v.err))
		}
		rows = append(rows, v)
	}
	if len(rows) == 0 {
		return usageErrorf("validate: none of the %d files has an expect: block", len(paths))
	}
	sum := summarise(rows)
	w := cmd.OutOrStdout()
	if o.format == "json" {
		if err := printValidateJSON(w, rows, sum); err != nil {
			return err
		}
	} else {
		printValidateTable(w, rows, sum, o.out)
	}
	for _, v := range rows {
		if v.err != nil && o.format != "json" && len(rows) > 1 {
			fmt.Fprintf(cmd.ErrOrStderr(), "simtrain: %s\n", errorLine(v.err))
		}
	}
	if err := writeValidationFiles(o.out, rows, sum); err != nil {
		return err
	}
	switch {
	case failed > 0 && len(rows) == 1:
		return &exitError{code, rows[0].err} // one file: its error is the one line
	case failed > 0:
		return &exitError{code, fmt.Errorf("%d of %d scenarios failed to simulate", failed, len(rows))}
	}
	if o.maxMAPE > 0 && 100*sum.all.mape > o.maxMAPE {
		return fmt.Errorf("MAPE %.2f%% exceeds --max-mape %g%%", 100*sum.all.mape, o.maxMAPE)
	}
	if o.maxMemMAPE > 0 && 100*sum.memory.mape > o.maxMemMAPE {
		return fmt.Errorf("peak-memory MAPE %.2f%% exceeds --max-memory-mape %g%%", 100*sum.memory.mape, o.maxMemMAPE)
	}
	return nil
}

// stats are the accuracy figures of a set of rows (absolute errors as
// fractions).
type stats struct {
	rows, simulated int
	mape, median    float64
	worst           float64
	worstName       string
}

func statsOf(rows []validation) stats {
	st := statsBy(rows, func(v validation) (float64, bool) { return v.cmp.Error, true })
	st.rows = len(rows)
	return st
}

// memStatsOf is statsOf over the peak-memory errors of the rows whose
// source published a peak memory.
func memStatsOf(rows []validation) stats {
	st := statsBy(rows, func(v validation) (float64, bool) { return v.cmp.MemError, v.cmp.HasMemory })
	st.rows = st.simulated
	return st
}

// statsBy summarises the errors errOf gives for the simulated rows (those
// it reports as present); rows is left for the caller to set.
func statsBy(rows []validation, errOf func(validation) (float64, bool)) stats {
	var st stats
	var abs []float64
	for _, v := range rows {
		if v.err != nil {
			continue
		}
		e, ok := errOf(v)
		if !ok {
			continue
		}
		a := math.Abs(e)
		abs = append(abs, a)
		if a > st.worst || st.worstName == "" {
			st.worst, st.worstName = a, v.name
		}
	}
	st.simulated = len(abs)
	st.mape, st.median = meanMedian(abs)
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

// groupKinds are the groupings of the per-group report, in print order.
var groupKinds = []struct {
	key, title string
	of         func(validation) string
}{
	{"source", "by source", func(v validation) string { return v.group }},
	{"gpu", "by GPU", func(v validation) string { return v.gpu }},
	{"model", "by GPU model", func(v validation) string { return gpuModel(v.gpu) }},
	{"arch", "by GPU architecture", func(v validation) string { return v.arch }},
	{"parallel", "by parallel style", func(v validation) string { return v.style }},
}

// gpuModel is the GPU model of a catalog name: the name up to its first '-'
// (a100-40gb and a100-80gb are A100s; h100-sxm, h100-96gb-500w and
// h100-pcie are H100s), the unit issue 5's per-GPU accuracy targets use.
func gpuModel(gpu string) string {
	m, _, _ := strings.Cut(gpu, "-")
	return m
}

type namedStats struct {
	name string
	stats
}

type summary struct {
	all    stats
	memory stats          // peak-memory errors of the rows with a published peak
	groups [][]namedStats // per groupKinds entry, sorted by name
}

func summarise(rows []validation) summary {
	s := summary{all: statsOf(rows), memory: memStatsOf(rows)}
	for _, g := range groupKinds {
		by := map[string][]validation{}
		for _, v := range rows {
			k := g.of(v)
			if k == "" {
				k = "(none)"
			}
			by[k] = append(by[k], v)
		}
		names := make([]string, 0, len(by))
		for k := range by {
			names = append(names, k)
		}
		sort.Strings(names)
		var list []namedStats
		for _, k := range names {
			list = append(list, namedStats{k, statsOf(by[k])})
		}
		s.groups = append(s.groups, list)
	}
	return s
}

func pct(x float64) string { return fmt.Sprintf("%+.1f%%", 100*x) }

func printValidateTable(w io.Writer, rows []validation, sum summary, out string) {
	tw := newTable(w)
	fmt.Fprintln(tw, "scenario\tGPU\tGPUs\tlayout\tmetric\tmeasured\tpredicted\tstep s (meas)\tstep s (sim)\terror\t")
	for _, v := range rows {
		if v.err != nil {
			fmt.Fprintf(tw, "%s\t%s\t\t%s\tFAILED\t\t\t\t\t\t\n", v.name, v.gpu, v.style)
			continue
		}
		c := v.cmp
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%.4g\t%.4g\t%.4g\t%.4g\t%s\t\n", v.name, v.gpu, v.scen.GPUs(), v.style,
			c.Metric, c.Measured, c.Predicted, c.MeasuredStepTimeS, c.PredictedStepTimeS, pct(c.Error))
	}
	tw.Flush()
	a := sum.all
	fid := ""
	for _, v := range rows {
		if v.fidLbl != "" {
			fid = v.fidLbl
			break
		}
	}
	fmt.Fprintf(w, "\n%d scenarios, %d simulated (%s fidelity): MAPE %.2f%%, median %.2f%%, worst %.1f%% (%s)\n",
		a.rows, a.simulated, fid, 100*a.mape, 100*a.median, 100*a.worst, a.worstName)
	for gi, g := range groupKinds {
		fmt.Fprintf(w, "\n%s\n", g.title)
		tw := newTable(w)
		fmt.Fprintln(tw, "group\trows\tMAPE\tmedian\tworst\t")
		for _, ns := range sum.groups[gi] {
			fmt.Fprintf(tw, "%s\t%d\t%.1f%%\t%.1f%%\t%.1f%%\t\n", ns.name, ns.simulated, 100*ns.mape, 100*ns.median, 100*ns.worst)
		}
		tw.Flush()
	}
	printMemoryTable(w, rows, sum.memory)
	if names := notFitting(rows); len(names) > 0 {
		fmt.Fprintf(w, "\npredicted not to fit in memory, though the published run ran: %d of %d (%s)\n", len(names), a.simulated, strings.Join(names, ", "))
	}
	fmt.Fprintf(w, "\noutputs: %s, %s\n", filepath.Join(out, "validation.arrow"), filepath.Join(out, "validation.svg"))
}

// notFitting names the simulated rows whose memory model says some rank
// does not fit: every published run ran, so each is a miss of the model.
func notFitting(rows []validation) []string {
	var names []string
	for _, v := range rows {
		if v.err == nil && !v.res.Fits {
			names = append(names, v.name)
		}
	}
	return names
}

// printMemoryTable prints the peak memory of the rows whose source
// published one, against the simulated peak of the largest rank, and their
// summary; nothing when no row has one.
func printMemoryTable(w io.Writer, rows []validation, m stats) {
	if m.rows == 0 {
		return
	}
	fmt.Fprintf(w, "\npeak memory per GPU (runs that publish it)\n")
	tw := newTable(w)
	fmt.Fprintln(tw, "scenario\tmeasured GiB\tpredicted GiB\terror\t")
	for _, v := range rows {
		if v.err != nil || !v.cmp.HasMemory {
			continue
		}
		c := v.cmp
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%s\t\n", v.name, c.MeasuredMemBytes/(1<<30), c.PredictedMemBytes/(1<<30), pct(c.MemError))
	}
	tw.Flush()
	fmt.Fprintf(w, "memory: %d runs: MAPE %.2f%%, median %.2f%%, worst %.1f%% (%s)\n",
		m.simulated, 100*m.mape, 100*m.median, 100*m.worst, m.worstName)
}

// printValidateJSON prints the contract of scenario-format.md: one object per
// scenario, then one summary object (errors as fractions).
func printValidateJSON(w io.Writer, rows []validation, sum summary) error {
	for _, v := range rows {
		var obj map[string]any
		if v.err != nil {
			obj = map[string]any{"name": v.name, "error": v.err.Error()}
		} else {
			c := v.cmp
			obj = map[string]any{
				"name": v.name, "metric": c.Metric, "measured": c.Measured, "predicted": c.Predicted,
				"error": c.Error, "source": v.scen.Expect.Source,
				"measured_step_time_s": c.MeasuredStepTimeS, "predicted_step_time_s": c.PredictedStepTimeS,
				"flops_convention": c.Convention, "group": v.group, "gpu": v.gpu, "parallel_style": v.style,
				"fidelity": v.fidLbl, "fits": v.res.Fits,
			}
			if c.HasMemory {
				obj["measured_peak_memory_gib"] = c.MeasuredMemBytes / (1 << 30)
				obj["predicted_peak_memory_gib"] = c.PredictedMemBytes / (1 << 30)
				obj["memory_error"] = c.MemError
			}
		}
		if err := writeJSONLine(w, obj); err != nil {
			return err
		}
	}
	groups := map[string]any{}
	for gi, g := range groupKinds {
		m := map[string]any{}
		for _, ns := range sum.groups[gi] {
			m[ns.name] = statsJSON(ns.stats)
		}
		groups[g.key] = m
	}
	obj := statsJSON(sum.all)
	obj["groups"] = groups
	if sum.memory.rows > 0 {
		obj["memory"] = statsJSON(sum.memory)
	}
	obj["not_fitting"] = len(notFitting(rows))
	return writeJSONLine(w, obj)
}

func statsJSON(s stats) map[string]any {
	return map[string]any{"rows": s.rows, "simulated": s.simulated, "mape": s.mape, "median_ape": s.median, "max_ape": s.worst}
}

// writeValidationFiles writes validation.arrow and validation.svg under dir.
func writeValidationFiles(dir string, rows []validation, sum summary) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	out := make([]output.ValidationRow, 0, len(rows))
	for _, v := range rows {
		r := output.ValidationRow{Name: v.name, Group: v.group, GPU: v.gpu, ParallelStyle: v.style}
		nan := math.NaN()
		r.Measured, r.Predicted, r.MeasuredStepTimeS, r.PredictedStepTimeS, r.RelError, r.AbsError = nan, nan, nan, nan, nan, nan
		r.MeasuredPeakMemGiB, r.PredictedPeakMemGiB, r.MemRelError = nan, nan, nan
		if v.scen != nil {
			r.RunID, r.Source, r.NumGPUs = v.scen.RunID(), v.scen.Expect.Source, int64(v.scen.GPUs())
			r.Metric, _ = v.scen.Expect.Metric()
			r.FLOPsConvention = v.scen.Expect.FLOPsConvention
		}
		if v.err != nil {
			r.Failure = v.err.Error()
		} else {
			c := v.cmp
			r.Fidelity, r.Metric, r.FLOPsConvention = v.fidLbl, c.Metric, c.Convention
			r.Measured, r.Predicted = c.Measured, c.Predicted
			r.MeasuredStepTimeS, r.PredictedStepTimeS = c.MeasuredStepTimeS, c.PredictedStepTimeS
			r.RelError, r.AbsError = c.Error, math.Abs(c.Error)
			r.Fits, r.SimWallS = v.res.Fits, v.res.SimWallS
			r.PredictedPeakMemGiB = v.res.PeakMemBytes / (1 << 30)
			if c.HasMemory {
				r.MeasuredPeakMemGiB, r.MemRelError = c.MeasuredMemBytes/(1<<30), c.MemError
			}
		}
		out = append(out, r)
	}
	meta := map[string]string{
		"mape":       fmt.Sprintf("%g", sum.all.mape),
		"median_ape": fmt.Sprintf("%g", sum.all.median),
		"max_ape":    fmt.Sprintf("%g", sum.all.worst),
	}
	if sum.memory.rows > 0 {
		meta["memory_mape"] = fmt.Sprintf("%g", sum.memory.mape)
		meta["memory_max_ape"] = fmt.Sprintf("%g", sum.memory.worst)
	}
	if err := output.WriteTable(filepath.Join(dir, "validation.arrow"), out, meta); err != nil {
		return err
	}
	svg, err := scatterSVG(rows, sum)
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, "validation.svg"), svg)
}

// writeFileAtomic writes data to a temporary file beside path and renames it.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
