package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/simtrain/simtrain/sim/goodput"
	"github.com/simtrain/simtrain/sim/output"
	"github.com/simtrain/simtrain/sim/output/numfmt"
	"github.com/simtrain/simtrain/sim/report"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/simulation"
)

type goodputOptions struct {
	tokens, days string
	trials       int
	seed         uint64
	format, out  string
	fidelity     string
	budget       budgetFlags
	sets         []string
}

func newGoodputCmd() *cobra.Command {
	var o goodputOptions
	cmd := &cobra.Command{
		Use:   "goodput SCENARIO.yaml --tokens N",
		Short: "Time and cost to train N tokens with failures, restarts and checkpoints",
		Long: `goodput simulates one step of the scenario, then the whole training run on top
of it: component failures at sourced rates scaled to the cluster's GPUs, NICs
and nodes, detection and restart (relaunch, spare nodes, communicator
bring-up, checkpoint load), planned maintenance, and checkpoints (size from
the model state, write and load time from node and storage bandwidth, sync or
async, at the Young/Daly interval or a given one). The scenario's optional
goodput block sets all of it (docs/scenario-format.md); without one the
defaults apply. docs/goodput.md has the model, its equations and sources.

It prints the closed-form expectation — effective training fraction, expected
interruptions, lost work, days and cost — and a seeded Monte Carlo of the run
(--trials runs, --seed) for the distribution of days (p10/p50/p90), and writes
OUT/<scenario>/goodput.arrow with one row per simulated interruption (every
trial). The file is written atomically; simtrain run replaces the directory.

--days D reports the interruptions of the run's first D days, to compare with
a published window (Llama 3's 54 days: 419 unexpected, 47 planned).`,
		Example: `  simtrain goodput scenarios/llama3-405b-16k-h100-goodput.yaml --tokens 15.6T
  simtrain goodput scenarios/llama3-405b-16k-h100-goodput.yaml --tokens 15.6T --days 54
  simtrain goodput scenarios/llama3-70b-1024-h100-3d.yaml --tokens 2T --trials 1000 --seed 7 --format json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("goodput: give one scenario file (e.g. scenarios/llama3-405b-16k-h100-goodput.yaml)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runGoodput(cmd, args[0], o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.tokens, "tokens", "", "tokens to train, with an optional K/M/B/T suffix (e.g. 15T, 2e12); required")
	f.StringVar(&o.days, "days", "", "count interruptions over the run's first D days (default: the whole run)")
	f.IntVar(&o.trials, "trials", 200, "Monte Carlo runs (0 skips the Monte Carlo and goodput.arrow)")
	f.Uint64Var(&o.seed, "seed", 1, "Monte Carlo seed; the same seed gives the same bytes")
	f.StringVar(&o.format, "format", "table", "table or json (one object)")
	f.StringVar(&o.out, "out", "results", "output directory; writes OUT/<scenario>/goodput.arrow")
	f.StringVar(&o.fidelity, "fidelity", "", "override sim.fidelity of the step simulation: analytic or flow")
	o.budget.add(cmd)
	addSetFlag(cmd, &o.sets)
	return cmd
}

func runGoodput(cmd *cobra.Command, path string, o goodputOptions) error {
	if err := checkChoice("format", o.format, "table", "json"); err != nil {
		return err
	}
	if o.tokens == "" {
		return usageErrorf("--tokens: required (e.g. --tokens 15T)")
	}
	tokens, err := parseCount(o.tokens)
	if err != nil {
		return usageErrorf("--tokens: %v", err)
	}
	window := math.Inf(1)
	if o.days != "" {
		d, err := strconv.ParseFloat(o.days, 64)
		if err != nil || !(d > 0) || math.IsInf(d, 0) {
			return usageErrorf("--days: %q is not a positive number of days", o.days)
		}
		window = d
	}
	if o.trials < 0 || o.trials > 1_000_000 {
		return usageErrorf("--trials: must be between 0 and 1000000, got %d", o.trials)
	}
	fid, err := fidelityFlag(o.fidelity)
	if err != nil {
		return err
	}
	if err := o.budget.check(); err != nil {
		return err
	}
	overrides, err := parseSets(o.sets)
	if err != nil {
		return err
	}
	s, err := scenario.Load(path, append(overrides, fidelityOverride(fid)...)...)
	if err != nil {
		return inputError(err)
	}
	for _, w := range s.Warnings {
		fmt.Fprintf(cmd.ErrOrStderr(), "simtrain: %s: warning: %s\n", path, w)
	}
	res, err := simulation.Run(cmd.Context(), s, simulation.Options{Budget: o.budget.budget()})
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	plan, err := simulation.GoodputPlan(res)
	if err != nil {
		return err
	}
	est := plan.Expect(tokens)
	if !(est.EffectiveTrainingFraction > 1e-6) || est.Days() > 100*365 {
		return fmt.Errorf("goodput: %s: the run does not finish (effective training fraction %.3g): failures every %.3g s against restarts of %.3g s", path, est.EffectiveTrainingFraction, 3600/plan.FailuresPerHour, plan.RestartS)
	}
	rep := goodputReport{plan: plan, est: est, tokens: tokens, windowDays: math.Min(window, est.Days())}
	if err := checkGoodputBudget(o, est.Interruptions+est.PlannedInterruptions); err != nil {
		return err
	}
	if o.trials > 0 {
		// room for the expected interruptions of every trial and a margin
		rows := make([]output.GoodputRow, 0, int(float64(o.trials)*1.2*(est.Interruptions+est.PlannedInterruptions))+16)
		windowNs := int64(math.MaxInt64) // the whole run of every trial
		if !math.IsInf(window, 1) {
			windowNs = int64(math.Min(window*86400e9, math.MaxInt64/2))
		}
		var inWindow int
		rep.dist = plan.Simulate(tokens, o.trials, o.seed, func(iv goodput.Interruption) {
			kind := "unplanned"
			if iv.Planned {
				kind = "planned"
			} else if iv.AtNs < windowNs {
				inWindow++
			}
			rows = append(rows, output.GoodputRow{Trial: int32(iv.Trial), Seq: int32(iv.Seq), AtNs: iv.AtNs,
				Kind: kind, Cause: iv.Cause, DuringRestart: iv.DuringRestart, LostWorkNs: iv.LostWorkNs,
				RestartNs: iv.RestartNs, SpareWaitNs: iv.SpareWaitNs})
		})
		rep.mcWindowInterruptions = float64(inWindow) / float64(o.trials)
		rep.simulated = true
		dir := filepath.Join(o.out, s.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		rep.file = filepath.Join(dir, "goodput.arrow")
		meta := report.Meta(res)
		meta["tokens"] = strconv.FormatFloat(tokens, 'g', -1, 64)
		meta["trials"] = strconv.Itoa(o.trials)
		meta["seed"] = strconv.FormatUint(o.seed, 10)
		if err := output.WriteTable(rep.file, rows, meta); err != nil {
			return err
		}
	}
	js := goodputJSON(res, rep)
	if err := checkFinite(js); err != nil {
		return err
	}
	if o.format == "json" {
		return writeJSONLine(cmd.OutOrStdout(), js)
	}
	printGoodputTable(cmd.OutOrStdout(), res, rep)
	return nil
}

// bytesPerGoodputRow is one simulated interruption held for goodput.arrow:
// the 80-byte output.GoodputRow and its share of the Arrow builders.
const bytesPerGoodputRow = 160

// checkGoodputBudget refuses a Monte Carlo whose interruption rows (trials
// × the expected interruptions of one run, with the 20% margin the rows
// are allocated with) would exceed --max-memory.
func checkGoodputBudget(o goodputOptions, perRun float64) error {
	limit := o.budget.budget().MaxMemoryBytes
	if limit == 0 {
		limit = simulation.DefaultMaxMemoryBytes
	}
	rows := float64(o.trials) * 1.2 * perRun
	if mem := rows * bytesPerGoodputRow; mem > float64(limit) {
		return fmt.Errorf("%w: about %.3g GiB for %.3g interruption rows (--trials %d × %.3g interruptions per run), more than --max-memory %.3g GiB (lower --trials or --tokens, or raise --max-memory)",
			simulation.ErrBudget, mem/(1<<30), rows, o.trials, perRun, float64(limit)/(1<<30))
	}
	return nil
}

// goodputReport is what the goodput command computed for one scenario.
type goodputReport struct {
	plan                  *goodput.Plan
	est                   goodput.Estimate
	tokens, windowDays    float64
	dist                  goodput.Distribution
	simulated             bool
	mcWindowInterruptions float64
	file                  string
}

// window is the expected unplanned and planned interruptions in the
// reported window.
func (r goodputReport) window() (unplanned, planned float64) {
	return r.plan.InterruptionsIn(r.est, r.windowDays*86400)
}

func goodputJSON(res *simulation.Result, r goodputReport) map[string]any {
	p, e := r.plan, r.est
	unplanned, planned := r.window()
	byClass := map[string]float64{}
	for i, c := range goodput.Classes {
		byClass[c.Name] = p.ClassPerHour[i] * r.windowDays * 24
	}
	m := map[string]any{
		"name":                        res.Scenario.Name,
		"run_id":                      res.RunID,
		"tokens":                      r.tokens,
		"steps":                       e.Steps,
		"step_time_s":                 res.StepTimeS,
		"failure_rates":               p.Set.Name,
		"failures_per_day":            p.FailuresPerHour * 24,
		"window_days":                 r.windowDays,
		"interruptions":               unplanned,
		"interruptions_by_component":  byClass,
		"planned_interruptions":       planned,
		"effective_training_fraction": e.EffectiveTrainingFraction,
		"checkpoint_bytes":            p.CheckpointBytes,
		"checkpoint_mode":             p.Config.Checkpoint.Mode,
		"checkpoint_format":           p.Config.Checkpoint.Format,
		"checkpoint_interval_s":       p.IntervalS,
		"checkpoint_write_s":          p.WriteS,
		"checkpoint_stall_s":          p.BlockingS,
		"checkpoint_load_s":           p.LoadS,
		"restart_s":                   p.RestartS,
		"spare_nodes":                 p.SpareNodes,
		"lost_work_h":                 e.LostWorkS / 3600,
		"time_to_train_days":          e.Days(),
		"cost_usd":                    e.CostUSD,
	}
	if math.IsInf(p.IntervalS, 1) {
		m["checkpoint_interval_s"] = e.TrainS
	}
	if r.simulated {
		d := r.dist
		m["trials"], m["seed"] = d.Trials, d.Seed
		m["time_to_train_days_mean"] = d.MeanDays
		m["time_to_train_days_p10"], m["time_to_train_days_p50"], m["time_to_train_days_p90"] = d.P10Days, d.P50Days, d.P90Days
		m["interruptions_mc"] = r.mcWindowInterruptions
	}
	return m
}

func printGoodputTable(w io.Writer, res *simulation.Result, r goodputReport) {
	p, e := r.plan, r.est
	s := res.Scenario
	fmt.Fprintf(w, "%s  (%d× %s, %s tokens, step %s)\n", s.Name, s.GPUs(), s.GPUName(), fmtCount(r.tokens), numfmt.Seconds4(res.StepTimeS))
	row := func(k, v string) { fmt.Fprintf(w, "  %-28s %s\n", k, v) }
	rs := "independent of Llama 3"
	if p.Set.InSample {
		rs = "fitted on Llama 3 Table 5"
	}
	row("failure rates", fmt.Sprintf("%s (%s): %s failures/day, MTBF %s h", p.Set.Name, rs, numfmt.Compact(p.FailuresPerHour*24, 3), numfmt.Compact(1/p.FailuresPerHour, 3)))
	unplanned, planned := r.window()
	what := fmt.Sprintf("in the first %s days", numfmt.Compact(r.windowDays, 4))
	if r.windowDays >= e.Days() {
		what = "over the run"
	}
	row("interruptions", fmt.Sprintf("%.1f unexpected, %.1f planned %s", unplanned, planned, what))
	var parts string
	for i, c := range goodput.Classes {
		if n := p.ClassPerHour[i] * r.windowDays * 24; n > 0 {
			if parts != "" {
				parts += ", "
			}
			parts += fmt.Sprintf("%s %.1f", c.Name, n)
		}
	}
	if parts != "" {
		row("  by component", parts)
	}
	ck := p.Config.Checkpoint
	row("checkpoint", fmt.Sprintf("%s %s, %s; write %s, load %s, step stall %s", ck.Format, ck.Mode, numfmt.GB(p.CheckpointBytes), numfmt.Seconds(p.WriteS), numfmt.Seconds(p.LoadS), numfmt.Seconds(p.BlockingS)))
	if math.IsInf(p.IntervalS, 1) {
		row("checkpoint interval", "none (nothing fails)")
	} else {
		row("checkpoint interval", fmt.Sprintf("%s (%s steps, %s)", numfmt.Seconds4(p.IntervalS), numfmt.Grouped(float64(p.IntervalSteps)), p.IntervalRule))
	}
	spares := fmt.Sprintf("%d", p.SpareNodes)
	if p.SpareAuto {
		spares += " (auto: p99 of nodes in repair)"
	}
	row("restart", fmt.Sprintf("%s (detect %s, relaunch %s, comm init %s, load %s); spare nodes %s", numfmt.Seconds4(p.RestartS), numfmt.Seconds(p.DetectS), numfmt.Seconds(p.RelaunchS), numfmt.Seconds(p.CommInitS), numfmt.Seconds(p.LoadS), spares))
	row("effective training fraction", numfmt.Pct(e.EffectiveTrainingFraction))
	row("lost work", fmt.Sprintf("%s h of training redone", numfmt.Compact(e.LostWorkS/3600, 4)))
	row("time to train", fmt.Sprintf("%.2f days (%.2f without failures)", e.Days(), e.TrainS/86400))
	row("cost", fmt.Sprintf("%s (%s GPUs incl. spares at %s/GPU-hour)", numfmt.USD(e.CostUSD), numfmt.Grouped(float64(e.GPUs)), numfmt.USD(p.Job.GPUHourUSD)))
	if r.simulated {
		d := r.dist
		row("Monte Carlo", fmt.Sprintf("%d runs, seed %d: days p10 %.2f, p50 %.2f, p90 %.2f (mean %.2f); %.1f unexpected interruptions %s", d.Trials, d.Seed, d.P10Days, d.P50Days, d.P90Days, d.MeanDays, r.mcWindowInterruptions, what))
		row("outputs", r.file)
	}
}
