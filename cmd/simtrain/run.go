package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/simtrain/simtrain/sim/hardware"
	"github.com/simtrain/simtrain/sim/hugepages"
	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/output/numfmt"
	"github.com/simtrain/simtrain/sim/report"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/simulation"
)

type runOptions struct {
	out           string
	format        string
	fidelity      string
	links         string // --links: sim.links's override ("" keeps the scenario's)
	noTimeline    bool
	timelineRanks string
	traceRanks    string
	allRanks      bool
	quiet         bool
	parquet       bool // also write every table as Parquet
	report        bool // also write report.html

	tlRanks, trRanks rankSet // parsed --timeline-ranks, --trace-ranks
	budget           budgetFlags
	sets             []string
	overrides        []scenario.Override // parsed --set, then --fidelity
}

func newRunCmd() *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run FILE...",
		Short: "Simulate training steps of scenario files and write timelines",
		Long: `run simulates the optimizer steps a scenario file describes (model, training
settings, cluster, parallel layout) and prints a summary per scenario: step
time, tokens/s, MFU, where the time goes, peak memory per GPU.

For each scenario it writes, under OUT/<scenario name>/:
  summary.arrow   one row: every input knob and every result
  timeline.arrow  one row per executed task (default: the ranks of one
                  data-parallel replica; --timeline-ranks widens it)
  memory.arrow    per-rank memory breakdown
  links.arrow     per-link bytes and busy time (--links: auto writes it when
                  the cluster has at most 262,144 links, full always, off
                  never; a run above the bound says so on stderr)
  steps.arrow     with sim.variability: one row per step (its time, the
                  rank it waited for)
  trace.json      Chrome/Perfetto trace (open in ui.perfetto.dev)
  *.parquet       with --parquet: each table again as Parquet
  report.html     with --report: the run's HTML report (simtrain report)
The directory is replaced atomically: a failed or interrupted run leaves the
previous one. simtrain replaces OUT/<name> only if it holds nothing but these
files (anything else there is an error, exit status 2), takes turns with
another run writing the same directory (a lock file OUT/.<name>.lock), and
removes the temporary directories .<name>.tmp-* that killed runs left.

Exit status: 0 success, 1 a scenario could not be simulated or written, 2 bad
input (a flag, a file, a field; also work above --max-tasks or --max-memory),
130 interrupted.`,
		Example: `  simtrain run scenarios/quickstart.yaml
  simtrain run scenarios/quickstart.yaml --parquet --report
  simtrain run scenarios/*.yaml --format json --no-timeline
  simtrain run scenarios/llama3-405b-16k-h100.yaml --timeline-ranks 0-7,120-127`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("run: give at least one scenario file (e.g. scenarios/quickstart.yaml)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			// The heap's growth on 2 MiB pages while the run simulates and
			// writes (hugepages.WatchHeap): the 405B run's page faults
			// ≈ 15,000 → ≈ 6,000, its CPU ≈ −10%.
			defer hugepages.WatchHeap(new([64]byte), time.Millisecond)()
			if err := checkChoice("format", o.format, "table", "json"); err != nil {
				return err
			}
			fid, err := fidelityFlag(o.fidelity)
			if err != nil {
				return err
			}
			if o.tlRanks, err = parseRankSet(o.timelineRanks); err != nil {
				return usageErrorf("--timeline-ranks: %v", err)
			}
			if o.trRanks, err = parseRankSet(o.traceRanks); err != nil {
				return usageErrorf("--trace-ranks: %v", err)
			}
			if err := o.budget.check(); err != nil {
				return err
			}
			if o.overrides, err = parseSets(o.sets); err != nil {
				return err
			}
			o.overrides = append(o.overrides, fidelityOverride(fid)...)
			if o.links != "" {
				if err := checkChoice("links", o.links, scenario.LinksNames...); err != nil {
					return err
				}
				o.overrides = append(o.overrides, scenario.Overrides("sim.links", o.links)...)
			}
			// Each failed file: a JSON error object on stdout with --format
			// json, and one line on stderr (for a single file, the
			// command's own error). The exit status is the worst file's.
			failed, code := 0, exitOK
			var first error
			// One Reuse for the files in turn (simulation.Options.Reuse:
			// the arena, cluster and prices a sweep worker keeps): a run
			// has written its directory before the next one starts. Not
			// for one file: reserving the Reuse's storage up front costs
			// a single run more page faults than it saves (the 405B
			// scenario: ≈ 500 more, +24.8 ± 25.2 ms of CPU in 10 pairs).
			var reuse *simulation.Reuse
			if len(args) > 1 {
				reuse = new(simulation.Reuse)
				// Its arena is populated ahead, file after file, as a
				// sweep worker's: after an idle spell, 2 MiB pages the
				// host must fault back in cost more than they save
				// (hugepages.CloseWhenDear). The 188 validation files
				// after 6 s idle: 1.812 s of CPU against 2.054 s with the
				// advice (5 pairs, −203 ± 48 ms); back to back −82 ± 92
				// ms (6 pairs; issue 18, round 58).
				hugepages.CloseWhenDear()
			}
			for _, path := range args {
				err := runOne(cmd, path, o, fid, reuse)
				if err == nil {
					continue
				}
				if cmd.Context().Err() != nil {
					return err
				}
				failed++
				code = max(code, exitCode(err))
				if first == nil {
					first = err
				}
				if o.format == "json" {
					name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
					_ = writeJSONLine(cmd.OutOrStdout(), map[string]string{"name": name, "error": errorLine(err)})
				}
				if len(args) > 1 {
					fmt.Fprintf(cmd.ErrOrStderr(), "simtrain: %s\n", errorLine(err))
				}
			}
			switch {
			case failed == 0:
				return nil
			case len(args) == 1:
				return first
			}
			return &exitError{code, fmt.Errorf("%d of %d scenarios failed", failed, len(args))}
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.out, "out", "results", "output directory; each scenario writes OUT/<name>/")
	f.StringVar(&o.format, "format", "table", "summary format on stdout: table or json (one object per line)")
	f.StringVar(&o.fidelity, "fidelity", "", "override sim.fidelity: analytic or flow")
	f.BoolVar(&o.noTimeline, "no-timeline", false, "skip timeline.arrow and trace.json")
	f.StringVar(&o.links, "links", "", "links.arrow, one row per link: auto (only when the cluster has at most 262,144 links), full or off (default: the scenario's sim.links, auto)")
	f.StringVar(&o.timelineRanks, "timeline-ranks", "", "ranks in timeline.arrow: all, or a list like 0-7,64 (default: one data-parallel replica and the first node)")
	f.StringVar(&o.traceRanks, "trace-ranks", "", "ranks in trace.json: all, or a list (default: one data-parallel replica and the first node)")
	f.BoolVar(&o.quiet, "quiet", false, "no progress line on stderr (it is only drawn on a terminal, for runs longer than a second)")
	f.BoolVar(&o.parquet, "parquet", false, "also write every table as Parquet (zstd) next to its .arrow file, for DuckDB, polars and Spark")
	f.BoolVar(&o.report, "report", false, "also write report.html: summary, Gantt chart, memory and link charts in one offline page")
	f.BoolVar(&o.allRanks, "all-ranks", false, "play every rank at analytic fidelity too (default: one representative rank per pipeline stage, identical results)")
	o.budget.add(cmd)
	addSetFlag(cmd, &o.sets)
	return cmd
}

// runOne simulates one scenario file and writes its directory. Errors name
// the file; an invalid file or flag is bad input (exit status 2). reuse
// (nil: none) is what the command's runs keep from one file to the next;
// an every-rank play (--all-ranks) takes none.
func runOne(cmd *cobra.Command, path string, o runOptions, fid *network.Fidelity, reuse *simulation.Reuse) error {
	s, err := scenario.Load(path, o.overrides...)
	if err != nil {
		return inputError(err) // scenario.Load names the file
	}
	for _, w := range s.Warnings {
		fmt.Fprintf(cmd.ErrOrStderr(), "simtrain: %s: warning: %s\n", path, w)
	}
	if d := s.FrameworkDefaults(); len(d) > 0 && !o.quiet {
		used := make([]string, len(d))
		for i, f := range d {
			used[i] = f.Path + ": " + f.Value.Value
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "simtrain: %s: framework %s set %s (sources: sim/hardware/data/frameworks.yaml)\n",
			path, s.Training.Framework, strings.Join(used, ", "))
	}
	// Rank lists are checked against the cluster before simulating.
	for _, f := range []struct {
		name string
		rs   rankSet
	}{{"timeline-ranks", o.tlRanks}, {"trace-ranks", o.trRanks}} {
		if err := f.rs.check(s.GPUs()); err != nil {
			return usageErrorf("%s: --%s: %v", path, f.name, err)
		}
	}
	timeline := s.TimelineEnabled() && !o.noTimeline
	// An every-rank play keeps the task times of the ranks written only.
	keep := func(r *simulation.Result) []int {
		if !timeline {
			return []int{}
		}
		world := r.Layout.World()
		return append(o.tlRanks.ranks(world, r.TimelineRanks), o.trRanks.ranks(world, r.TimelineRanks)...)
	}
	if s.Fidelity() == network.Analytic {
		// An analytic play's arrays are written in order and read stage
		// by stage: where huge pages cannot pay here (a page's first
		// touch is cheap, and the host takes back free 2 MiB blocks),
		// none (hugepages.CloseWhereUnpaid). After 6 s idle on the
		// project's Intel machine: the 405B run −104 ± 62 ms of CPU,
		// every rank of it −417 ± 107 ms (round 72). A flow play keeps
		// them: its fabric tables, read at random for seconds, lose to
		// 4 KiB pages' TLB misses (the 405B step on every rank at flow
		// fidelity 22.6 s against 20.3 s). Once closed, the gate stays
		// closed for the command's later files.
		hugepages.CloseWhereUnpaid()
	}
	prog := newRunProgress(cmd.ErrOrStderr(), o.quiet, s.Name)
	if o.allRanks {
		reuse = nil
	}
	res, err := simulation.Run(cmd.Context(), s, simulation.Options{AllRanks: o.allRanks, Progress: prog.update, Budget: o.budget.budget(), KeepRanks: keep, Reuse: reuse})
	prog.finish()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := checkFinite(report.RunJSON(res)); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	extras := func(dir string) error { return runExtras(dir, o.parquet, o.report) }
	warn := func(msg string) { fmt.Fprintf(cmd.ErrOrStderr(), "simtrain: warning: %s\n", msg) }
	// links.arrow's size policy: a run above auto's bound says so, on
	// stderr and in its JSON line (links_not_written).
	noLinks := report.RunLinksSkipped(res)
	if noLinks != "" && s.LinksPolicy() == "auto" {
		fmt.Fprintf(cmd.ErrOrStderr(), "simtrain: %s: links.arrow not written: %s\n", path, noLinks)
	}
	if err := writeRunDir(cmd.Context(), o.out, res, timeline, noLinks == "", o.tlRanks, o.trRanks, warn, extras); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if o.format == "json" {
		j := report.RunJSON(res)
		if noLinks != "" {
			j["links_not_written"] = noLinks
		}
		return writeJSONLine(cmd.OutOrStdout(), j)
	}
	printRunTable(cmd.OutOrStdout(), res, filepath.Join(o.out, s.Name))
	return nil
}

func printRunTable(w io.Writer, r *simulation.Result, dir string) {
	s := r.Scenario
	p := s.Parallel
	fmt.Fprintf(w, "%s  (%d× %s, tp %d pp %d dp %d cp %d ep %d, zero %d, %s, %s fidelity)\n",
		s.Name, s.GPUs(), s.GPUName(), p.TP, p.PP, p.DP, p.CP, p.EP, p.Zero, p.Schedule, s.Sim.Fidelity)
	row := func(k, v string) { fmt.Fprintf(w, "  %-24s %s\n", k, v) }
	row("software", s.Software())
	if g := r.Cluster.GPU; g.Inherits != "" || s.GPUFile() != "" {
		row("hardware", hardwareNote(s, g))
	}
	if s.Heterogeneous() {
		row("placement", stagePlacement(s))
	}
	row("step time", numfmt.Seconds4(r.StepTimeS))
	if v := s.VariabilityModel(); v.Distribution != "none" {
		row("step p50 / p99", fmt.Sprintf("%s / %s over %d steps (%s variability, seed %d)", numfmt.Seconds4(r.StepP50S), numfmt.Seconds4(r.StepP99S), len(r.Steps), v.Distribution, s.Sim.Seed))
	}
	row("tokens/s", fmt.Sprintf("%s (%s per GPU)", numfmt.Grouped(r.TokensPerS), numfmt.Grouped(r.TokensPerSPerGPU)))
	row("MFU / HFU", fmt.Sprintf("%.1f%% / %.1f%%", 100*r.MFU, 100*r.HFU))
	row("TFLOP/s per GPU", fmt.Sprintf("%.1f", r.TFLOPsPerGPU))
	row("compute (busiest rank)", numfmt.Seconds4(r.ComputeS))
	row("pipeline bubble", fmt.Sprintf("%.1f%%", 100*r.BubbleFraction))
	if r.HostSyncS > 0 {
		row("host sync stalls", fmt.Sprintf("%s (%s)", numfmt.Seconds4(r.HostSyncS), s.HostSyncCauses()))
	}
	row("host thread", fmt.Sprintf("%s dispatch: busy %s, GPU waits %s", s.HostDispatchClass(), numfmt.Seconds(r.HostIssueS), numfmt.Seconds(r.HostBoundS)))
	var parts []string
	for i, k := range simulation.ExposedKinds {
		if r.ExposedCommS[i] > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", k, numfmt.Seconds(r.ExposedCommS[i])))
		}
	}
	if len(parts) == 0 {
		parts = []string{"none"}
	}
	row("exposed communication", strings.Join(parts, ", "))
	fits := "fits"
	if !r.Fits {
		fits = "DOES NOT FIT"
	}
	// The peak counts the caching allocator's cache, which it frees before
	// it fails: said, so that a zero margin reads as a full cache.
	cache := 0.0
	for _, m := range r.Memory {
		if m.Total == r.PeakMemBytes {
			cache = m.AllocatorReserve
		}
	}
	row("peak memory per GPU", fmt.Sprintf("%s of %s (%s, margin %s; allocator cache %s)", numfmt.GB(r.PeakMemBytes), numfmt.GB(r.MemCapacityBytes), fits, numfmt.GB(r.MemMarginBytes), numfmt.GB(cache)))
	row("simulated", fmt.Sprintf("%s events in %s", numfmt.Grouped(float64(r.Events)), numfmt.Seconds(r.SimWallS)))
	row("outputs", dir)
}

// stagePlacement says which node groups hold each run of pipeline stages
// and their layers ("stages 0-1 on h200 (21+21 layers), stages 2-3 on
// h100-sxm (19+19 layers)"); a stage on several groups runs at the slowest
// one's pace.
func stagePlacement(s *scenario.Plan) string {
	groups, masks, chunks := s.GPUGroups(), s.StageGroups(), s.Chunks()
	name := func(m uint64) string {
		var n []string
		for i, g := range groups {
			if m&(1<<i) != 0 {
				n = append(n, g.GPU.Name)
			}
		}
		return strings.Join(n, "+")
	}
	layers := func(st int) string {
		n := 0
		for _, c := range chunks[st] {
			n += c.Layers
		}
		return strconv.Itoa(n)
	}
	var parts []string
	for a := 0; a < len(masks); {
		b := a
		var ls []string
		for b < len(masks) && masks[b] == masks[a] {
			ls = append(ls, layers(b))
			b++
		}
		span := fmt.Sprintf("stage %d", a)
		if b-1 > a {
			span = fmt.Sprintf("stages %d-%d", a, b-1)
		}
		parts = append(parts, fmt.Sprintf("%s on %s (%s layers)", span, name(masks[a]), strings.Join(ls, "+")))
		a = b
	}
	out := strings.Join(parts, ", ")
	for _, m := range masks {
		if m&(m-1) != 0 {
			return out + "; a stage on several GPU types runs at the slowest one's pace (synchronous data parallelism)"
		}
	}
	return out
}

// hardwareNote says where the GPU's figures come from when that is not
// simply its catalog record: a record file, and the reference GPU whose
// measured efficiencies an unmeasured part takes (hardware.GPU.Inherits).
func hardwareNote(s *scenario.Plan, g hardware.GPU) string {
	var parts []string
	if f := s.GPUFile(); f != "" {
		parts = append(parts, g.Name+" from "+f)
	}
	if g.Inherits != "" {
		parts = append(parts, fmt.Sprintf("%d of %d figures inherited from %s (measured there, not on this part; simtrain list gpus %s)",
			g.InheritedFigures(), len(g.Sources), g.Inherits, g.Name))
	}
	return strings.Join(parts, "; ")
}
