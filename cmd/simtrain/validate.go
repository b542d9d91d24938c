package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/simtrain/simtrain/sim/hugepages"
	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/output"
	"github.com/simtrain/simtrain/sim/output/numfmt"
	"github.com/simtrain/simtrain/sim/report"
	"github.com/simtrain/simtrain/sim/validation"
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
	sets       []string
	// cv is the cross-validation: "" (none) or "source" (leave one source
	// group out); maxCVMAPE bounds its MAPE (percent; 0 = no limit).
	cv        string
	maxCVMAPE float64
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
the peak-memory MAPE exceeds --max-memory-mape.

--cv source adds the out-of-sample figure: for each source group it refits the
constants fitted on published runs (as simtrain calibrate does) on the other
groups' rows, a constant with no row left taking its prior (0 for a stall),
and scores the held-out group with the refit values. In-sample and
out-of-sample MAPE are printed side by side per group (JSON summary: mape and
cv_mape); --max-cv-mape bounds the out-of-sample MAPE.`,
		Example: `  simtrain validate
  simtrain validate scenarios/validation --max-mape 12 --max-memory-mape 10 --format json
  simtrain validate --cv source --max-cv-mape 7
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
			if err := checkChoice("cv", o.cv, "", "source"); err != nil {
				return err
			}
			if o.maxCVMAPE < 0 || math.IsNaN(o.maxCVMAPE) {
				return usageErrorf("--max-cv-mape: %g must be a percentage >= 0 (0 = no limit)", o.maxCVMAPE)
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
	f.StringVar(&o.cv, "cv", "", "cross-validation: source (leave one source group out: refit on the others, score it)")
	f.Float64Var(&o.maxCVMAPE, "max-cv-mape", 0, "fail when the out-of-sample MAPE of --cv exceeds this many percent (0 = no limit)")
	o.budget.add(cmd)
	addSetFlag(cmd, &o.sets)
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

func runValidate(cmd *cobra.Command, paths []string, o validateOptions, fid *network.Fidelity) error {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	overrides, err := parseSets(o.sets)
	if err != nil {
		return err
	}
	overrides = append(overrides, fidelityOverride(fid)...)
	if o.cv == "" {
		// A short command whose workers' arenas are fresh memory: after
		// an idle spell, 2 MiB pages the host must fault back in cost
		// more than they save (hugepages.CloseWhenDear), as for a sweep.
		// Measured after 6 s idle on the 185 published runs: 0.967 s of
		// CPU against 1.075 s with the advice (6 alternating pairs,
		// −111 ± 40 ms). Not with --cv: its fit keeps the same memory
		// for ≈ 2,000 simulations, where huge pages paid on the AMD
		// machine of round 58 (5.26 s against 5.89 s with the gate
		// closing, 4 pairs; issue 18). Where they cannot pay at all, the
		// rule below turns them off for --cv too.
		hugepages.CloseWhenDear()
	}
	if !overridesFlow(overrides) {
		// Analytic plays, where huge pages cannot pay at all
		// (hugepages.CloseWhereUnpaid: a page's first touch is cheap
		// here): none from the start, --cv too. After 6 s idle on the
		// project's Intel machine the 185 runs took −81 ± 45 ms of CPU
		// (6 pairs), with --cv source −556 ± 134 ms (4 pairs); back to
		// back, in chains of runs, --cv the same with huge pages off
		// (5.64 and 5.67 s against 5.65 and 5.62 s; round 72).
		hugepages.CloseWhereUnpaid()
	}
	results := validation.Run(ctx, paths, o.workers, o.budget.budget(), overrides...)
	if err := ctx.Err(); err != nil {
		return err // interrupted: no table, no files
	}

	var rows []validation.Case
	failed, code := 0, exitFailed
	for _, v := range results {
		if v.NoExpect {
			fmt.Fprintf(cmd.ErrOrStderr(), "simtrain: %s: no expect: block, not validated\n", v.Path)
			continue
		}
		if v.Err != nil {
			if v.Plan == nil {
				v.Err = inputError(v.Err) // the file did not load
			}
			failed++
			code = max(code, exitCode(v.Err))
		}
		rows = append(rows, v)
	}
	if len(rows) == 0 {
		return usageErrorf("validate: none of the %d files has an expect: block", len(paths))
	}
	sum := validation.Summarise(rows)
	var cv *crossValidation
	if o.cv != "" && failed == 0 {
		if cv, err = runCrossValidation(ctx, rows, o, overrides); err != nil {
			return err
		}
	}
	w := cmd.OutOrStdout()
	if o.format == "json" {
		if err := printValidateJSON(w, rows, sum, cv); err != nil {
			return err
		}
	} else {
		printValidateTable(w, rows, sum, o.out)
		printCrossValidation(w, sum, cv)
	}
	for _, v := range rows {
		if v.Err != nil && o.format != "json" && len(rows) > 1 {
			fmt.Fprintf(cmd.ErrOrStderr(), "simtrain: %s\n", errorLine(v.Err))
		}
	}
	if err := writeValidationFiles(o.out, rows, sum); err != nil {
		return err
	}
	switch {
	case failed > 0 && len(rows) == 1:
		return &exitError{code, rows[0].Err} // one file: its error is the one line
	case failed > 0:
		return &exitError{code, fmt.Errorf("%d of %d scenarios failed to simulate", failed, len(rows))}
	}
	if o.maxMAPE > 0 && 100*sum.All.MAPE > o.maxMAPE {
		return fmt.Errorf("MAPE %.2f%% exceeds --max-mape %g%%", 100*sum.All.MAPE, o.maxMAPE)
	}
	if o.maxMemMAPE > 0 && 100*sum.Memory.MAPE > o.maxMemMAPE {
		return fmt.Errorf("peak-memory MAPE %.2f%% exceeds --max-memory-mape %g%%", 100*sum.Memory.MAPE, o.maxMemMAPE)
	}
	if cv != nil && o.maxCVMAPE > 0 && 100*cv.all > o.maxCVMAPE {
		return fmt.Errorf("out-of-sample (leave-one-source-out) MAPE %.2f%% exceeds --max-cv-mape %g%%", 100*cv.all, o.maxCVMAPE)
	}
	return nil
}

func pct(x float64) string { return fmt.Sprintf("%+.1f%%", 100*x) }

func printValidateTable(w io.Writer, rows []validation.Case, sum validation.Summary, out string) {
	tw := newTable(w)
	fmt.Fprintln(tw, "scenario\tGPU\tGPUs\tlayout\tmetric\tmeasured\tpredicted\tstep s (meas)\tstep s (sim)\terror\t")
	for _, v := range rows {
		if v.Err != nil {
			fmt.Fprintf(tw, "%s\t%s\t\t%s\tFAILED\t\t\t\t\t\t\n", v.Name, v.GPU, v.Style)
			continue
		}
		c := v.Comparison
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", v.Name, v.GPU, numfmt.Grouped(float64(v.Plan.GPUs())), v.Style,
			c.Metric, numfmt.Compact(c.Measured, 4), numfmt.Compact(c.Predicted, 4), numfmt.Compact(c.MeasuredStepTimeS, 4), numfmt.Compact(c.PredictedStepTimeS, 4), pct(c.Error))
	}
	tw.Flush()
	a := sum.All
	fid := ""
	for _, v := range rows {
		if v.Fidelity != "" {
			fid = v.Fidelity
			break
		}
	}
	fmt.Fprintf(w, "\n%d scenarios, %d simulated (%s fidelity): MAPE %.2f%%, median %.2f%%, worst %.1f%% (%s)\n",
		a.Rows, a.Simulated, fid, 100*a.MAPE, 100*a.Median, 100*a.Worst, a.WorstName)
	for gi, g := range validation.Groupings {
		fmt.Fprintf(w, "\n%s\n", g.Title)
		tw := newTable(w)
		fmt.Fprintln(tw, "group\trows\tMAPE\tmedian\tworst\t")
		for _, ns := range sum.Groups[gi] {
			fmt.Fprintf(tw, "%s\t%d\t%.1f%%\t%.1f%%\t%.1f%%\t\n", ns.Name, ns.Simulated, 100*ns.MAPE, 100*ns.Median, 100*ns.Worst)
		}
		tw.Flush()
	}
	printMemoryTable(w, rows, sum.Memory)
	if names := validation.NotFitting(rows); len(names) > 0 {
		fmt.Fprintf(w, "\npredicted not to fit in memory, though the published run ran: %d of %d (peak GiB / usable GiB)\n", len(names), a.Simulated)
		for _, v := range rows {
			if v.Err == nil && !v.Result.Fits {
				fmt.Fprintf(w, "  %s  %.1f / %.1f\n", v.Name, v.Result.PeakMemBytes/(1<<30), v.Result.MemCapacityBytes/(1<<30))
			}
		}
	}
	fmt.Fprintf(w, "\noutputs: %s, %s\n", filepath.Join(out, "validation.arrow"), filepath.Join(out, "validation.svg"))
}

// printMemoryTable prints the peak memory of the rows whose source
// published one, against the simulated peak of the largest rank, and their
// summary; nothing when no row has one.
func printMemoryTable(w io.Writer, rows []validation.Case, m validation.Stats) {
	if m.Rows == 0 {
		return
	}
	fmt.Fprintf(w, "\npeak memory per GPU (runs that publish it)\n")
	tw := newTable(w)
	fmt.Fprintln(tw, "scenario\tmeasured GiB\tpredicted GiB\terror\t")
	for _, v := range rows {
		if v.Err != nil || !v.Comparison.HasMemory {
			continue
		}
		c := v.Comparison
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%s\t\n", v.Name, c.MeasuredMemBytes/(1<<30), c.PredictedMemBytes/(1<<30), pct(c.MemError))
	}
	tw.Flush()
	fmt.Fprintf(w, "memory: %d runs: MAPE %.2f%%, median %.2f%%, worst %.1f%% (%s)\n",
		m.Simulated, 100*m.MAPE, 100*m.Median, 100*m.Worst, m.WorstName)
}

// printValidateJSON prints the contract of scenario-format.md: one object per
// scenario, then one summary object (errors as fractions).
func printValidateJSON(w io.Writer, rows []validation.Case, sum validation.Summary, cv *crossValidation) error {
	for _, v := range rows {
		var obj map[string]any
		if v.Err != nil {
			obj = map[string]any{"name": v.Name, "error": v.Err.Error()}
		} else {
			c := v.Comparison
			obj = map[string]any{
				"name": v.Name, "metric": c.Metric, "measured": c.Measured, "predicted": c.Predicted,
				"error": c.Error, "source": v.Plan.Expect.Source,
				"measured_step_time_s": c.MeasuredStepTimeS, "predicted_step_time_s": c.PredictedStepTimeS,
				"flops_convention": c.Convention, "group": v.Group, "gpu": v.GPU, "parallel_style": v.Style,
				"fidelity": v.Fidelity, "fits": v.Result.Fits,
				"peak_mem_bytes": v.Result.PeakMemBytes, "mem_capacity_bytes": v.Result.MemCapacityBytes, "mem_margin_bytes": v.Result.MemMarginBytes,
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
	for gi, g := range validation.Groupings {
		m := map[string]any{}
		for _, ns := range sum.Groups[gi] {
			st := statsJSON(ns.Stats)
			if f, ok := cv.fold(ns.Name); ok && g.Key == "source" {
				st["cv_mape"] = f.mape
				st["cv_refit"] = f.refit
			}
			m[ns.Name] = st
		}
		groups[g.Key] = m
	}
	obj := statsJSON(sum.All)
	if cv != nil {
		obj["cv"] = cv.kind
		obj["cv_mape"] = cv.all
	}
	obj["groups"] = groups
	if sum.Memory.Rows > 0 {
		obj["memory"] = statsJSON(sum.Memory)
	}
	obj["not_fitting"] = len(validation.NotFitting(rows))
	return writeJSONLine(w, obj)
}

func statsJSON(s validation.Stats) map[string]any {
	return map[string]any{"rows": s.Rows, "simulated": s.Simulated, "mape": s.MAPE, "median_ape": s.Median, "max_ape": s.Worst}
}

// writeValidationFiles writes validation.arrow and validation.svg under dir.
func writeValidationFiles(dir string, rows []validation.Case, sum validation.Summary) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := output.WriteTable(filepath.Join(dir, "validation.arrow"), report.Validation(rows), report.ValidationMeta(sum)); err != nil {
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
