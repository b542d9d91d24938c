package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/simtrain/simtrain/sim/hugepages"
	"github.com/simtrain/simtrain/sim/output"
	"github.com/simtrain/simtrain/sim/output/numfmt"
	"github.com/simtrain/simtrain/sim/report"
	"github.com/simtrain/simtrain/sim/sweep"
)

type sweepOptions struct {
	out        string
	workers    int
	fidelity   string
	shard      string
	resume     bool
	quiet      bool
	batch      int
	flushEvery time.Duration
	dryRun     bool
	printPoint int
	budget     budgetFlags
	sets       []string
	format     string
}

func newSweepCmd() *cobra.Command {
	var o sweepOptions
	cmd := &cobra.Command{
		Use:   "sweep SWEEP.yaml",
		Short: "Simulate every point of a sweep file (layouts × batch × GPUs …) and write summary.arrow",
		Long: `sweep runs the cross product of the values a sweep file lists for scenario
fields (docs/sweeps.md) on a base scenario and writes one summary.arrow row per
point: every knob as a column, the run id (UUIDv5 of the canonical scenario,
the same in every sweep), and the results. Nothing is dropped: a point that is
not a valid layout gets its reason in the error column, and one that cannot fit
in GPU memory (by the accounting model) gets fits=false without being simulated.

Points run on --workers goroutines; the rows do not depend on the number of
workers or shards. The file on disk is always a complete table of finished
points: it is rewritten to a temporary name and renamed when the points
waiting reach --batch and the rows already in it (so it doubles), or when
--flush-every has passed, and once at the end. A killed sweep loses only the
points since the last rewrite, and --resume skips every run id already in OUT.

--shard I/N runs only the points whose number is I modulo N, each shard
writing OUT/summary.shard-I-of-N.arrow (one Slurm array task or Kubernetes
Indexed Job pod per shard; docs/scale-out.md). simtrain merge joins them.`,
		Example: `  simtrain sweep scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml --out results/l70
  simtrain sweep SWEEP.yaml --out /shared/run1 --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT --resume
  simtrain sweep SWEEP.yaml --dry-run
  simtrain sweep SWEEP.yaml --print-point 17 > point17.yaml && simtrain run point17.yaml`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("sweep: give one sweep file (e.g. scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSweep(cmd, args[0], o)
		},
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return []string{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.out, "out", "", "output directory (default results/sweeps/<sweep name>, apart from the results/<name> of simtrain run)")
	f.IntVar(&o.workers, "workers", 0, "points simulated in parallel (0 = one per CPU)")
	f.StringVar(&o.fidelity, "fidelity", "", "override sim.fidelity of every point: analytic or flow")
	f.StringVar(&o.shard, "shard", "0/1", "run only the points whose number is I modulo N, given as I/N")
	f.BoolVar(&o.resume, "resume", false, "skip points whose run id is already in OUT and keep this shard's rows")
	f.BoolVar(&o.quiet, "quiet", false, "no progress on stderr")
	f.IntVar(&o.batch, "batch", 64, "fewest finished points per rewrite of the summary file (the points waiting must also reach the rows on disk)")
	f.DurationVar(&o.flushEvery, "flush-every", 5*time.Second, "longest a finished point waits for the summary file to be rewritten (checked as points finish)")
	f.BoolVar(&o.dryRun, "dry-run", false, "list the points (number, run id, values, validity) without simulating")
	f.IntVar(&o.printPoint, "print-point", -1, "print point N as a scenario file and exit")
	f.StringVar(&o.format, "format", "table", "what sweep prints when it ends: table or json (one object)")
	o.budget.add(cmd)
	cmd.Flags().StringArrayVar(&o.sets, "set", nil, "override a field of the base scenario: dotted.field=value (repeatable; changes every point; not a field the sweep varies)")
	return cmd
}

// parseShard parses --shard I/N.
func parseShard(s string) (int, int, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, usageErrorf("--shard: want I/N with 0 <= I < N (e.g. 3/16), got %q", clipFlag(s))
	}
	return i, n, nil
}

// shardFile is the summary file a shard writes in the sweep directory.
func shardFile(i, n int) string {
	if n == 1 {
		return "summary.arrow"
	}
	return fmt.Sprintf("summary.shard-%d-of-%d.arrow", i, n)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// compareRows orders summary rows by name (a sweep's points are named
// NAME-<zero-padded number>, so this is point order), then run id.
func compareRows(a, b output.SummaryRow) int { return compareRowRefs(&a, &b) }

// compareRowRefs is compareRows without copying the rows (≈ 1.2 KB each).
func compareRowRefs(a, b *output.SummaryRow) int {
	return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.RunID, b.RunID))
}

func runSweep(cmd *cobra.Command, path string, o sweepOptions) error {
	si, sn, err := parseShard(o.shard)
	if err != nil {
		return err
	}
	if err := checkChoice("format", o.format, "table", "json"); err != nil {
		return err
	}
	if o.batch < 1 {
		return usageErrorf("--batch: must be >= 1, got %d", o.batch)
	}
	if o.flushEvery <= 0 {
		return usageErrorf("--flush-every: must be above 0 (e.g. 5s, 1m), got %s", o.flushEvery)
	}
	if err := checkWorkers(o.workers); err != nil {
		return err
	}
	if cmd.Flags().Changed("print-point") && o.printPoint < 0 {
		return usageErrorf("--print-point: %d is not a point number (valid: 0 and up; the sweep's points are listed by --dry-run)", o.printPoint)
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
	lo := sweep.Options{Fidelity: fid, Budget: o.budget.budget(), Context: cmd.Context(), Overrides: overrides}
	loaded := startSweepLoad()
	sw, err := sweep.Load(path, lo)
	loaded(sw != nil && sw.PlaysEveryRank())
	if err != nil {
		if cmd.Context().Err() != nil {
			return err
		}
		return inputError(err)
	}
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if cmd.Flags().Changed("print-point") {
		if o.printPoint >= sw.Len() {
			return usageErrorf("--print-point: %d is not a point (the sweep has %d: 0 to %d)", o.printPoint, sw.Len(), sw.Len()-1)
		}
		b, err := sw.PointYAML(o.printPoint)
		if err != nil {
			return err
		}
		_, err = stdout.Write(b)
		return err
	}
	if sw.Duplicates > 0 {
		fmt.Fprintf(stderr, "simtrain: %s: %d combinations repeat an earlier point's configuration and are run once (e.g. %s)\n",
			path, sw.Duplicates, sw.DuplicateExample)
	}
	indices := sw.ShardIndices(si, sn)
	if o.dryRun {
		return printPoints(stdout, sw, indices)
	}
	dir := o.out
	if dir == "" {
		dir = filepath.Join("results", "sweeps", sw.Name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	file := filepath.Join(dir, shardFile(si, sn))
	// One process per shard file: a second sweep of the same shard into
	// the same directory would rewrite the file under the first one.
	lock, held, err := output.TryLock(filepath.Join(dir, "."+shardFile(si, sn)+".lock"))
	switch {
	case errors.Is(err, output.ErrLockUnsupported):
		fmt.Fprintf(stderr, "simtrain: warning: cannot lock %s (%v): run one sweep of this shard at a time\n", file, err)
	case err != nil:
		return err
	case !held:
		return usageErrorf("--out: another simtrain sweep is writing %s (shard %d/%d); wait for it to finish, or choose another --out", file, si, sn)
	}
	defer lock.Unlock()
	if _, err := os.Stat(file); err == nil && !o.resume {
		return usageErrorf("--out: %s already exists; pass --resume to continue that sweep, or choose another --out", file)
	}
	meta := map[string]string{
		"sweep": sw.Name, "shard": fmt.Sprintf("%d/%d", si, sn), "points": strconv.Itoa(sw.Len()),
	}
	if lo.Fidelity != nil {
		meta["fidelity_override"] = lo.Fidelity.String()
	}
	warn := func(msg string) { fmt.Fprintf(stderr, "simtrain: warning: %s\n", msg) }
	if o.resume {
		for _, f := range []string{file, filepath.Join(dir, goodputSideFile(si, sn))} {
			if err := setAsideDamaged(f, path, dir, si, sn, warn); err != nil {
				return err
			}
		}
	}
	af, err := output.OpenAppendFile(file, meta, o.resume, compareRowRefs)
	if err != nil {
		return oldSchemaError(err, file, func(old map[string]string) string {
			return "--resume cannot continue it; run the shard again in a new directory: " + rebuildSweep(old, path, filepath.Clean(dir)+"-v"+output.SchemaVersion)
		})
	}
	af.BatchRows = o.batch
	gp := &goodputSide{path: filepath.Join(dir, goodputSideFile(si, sn)), meta: meta, resume: o.resume, batch: o.batch}
	todo := indices
	already := 0
	if o.resume {
		done, err := doneRunIDs(dir, path, warn)
		if err != nil {
			return err
		}
		todo = todo[:0:0]
		for _, i := range indices {
			if done[sw.RunID(i)] {
				already++
				continue
			}
			todo = append(todo, i)
		}
	}
	workers := o.workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	af.Grow(len(todo)) // one row a point, in one array (AppendFile.Grow)
	prog := newProgress(stderr, o.quiet, len(indices), already)
	var stats sweepStats
	// docs/sweeps.md, "Interrupting and resuming": the summary (and the
	// goodput side file with it) is rewritten when it can double, or when
	// a finished point has waited --flush-every, and once at the end.
	sched := output.FlushSchedule{MinRows: o.batch, Every: o.flushEvery}
	lastFlush := time.Now()
	start := time.Now()
	// RunLent: pr's storage is the worker's again once this returns, and
	// nothing here keeps it (the row, goodput and stats are copies).
	runErr := sw.RunLent(cmd.Context(), todo, workers, func(pr sweep.PointResult) error {
		row := report.Point(pr)
		af.Add(row)
		if err := gp.add(pr); err != nil {
			return err
		}
		stats.add(pr.Outcome, row)
		prog.update(pr.Outcome, row)
		if af.Due(sched, time.Since(lastFlush)) {
			if err := af.Flush(); err != nil {
				return err
			}
			if err := gp.flush(); err != nil {
				return err
			}
			lastFlush = time.Now()
		}
		return nil
	})
	// The workers' storage (their simulation.Reuse: most of the ≈ 100 MB
	// the 1,000-point 70B sweep holds) is garbage now, and the exit hands
	// it back to the OS. It used to be released here first, by
	// debug.FreeOSMemory on the other CPU while the summary was
	// rewritten, to shorten the exit: measured at 21d9f23 that release
	// (a forced collection, then madvise span by span on a live,
	// two-threaded process, some of its memory in huge pages) cost
	// 22–27 ms more CPU than leaving the freeing to the exit, and 6–11 ms
	// more wall (timeit, 30 alternating pairs each way; docs/design.md
	// "Speed", flush42).
	flushErr := cmp.Or(af.Flush(), gp.flush())
	prog.finish()
	wall := time.Since(start)
	if flushErr != nil {
		return flushErr
	}
	if runErr != nil {
		if errors.Is(runErr, cmd.Context().Err()) {
			return &exitError{exitInterrupted, fmt.Errorf("sweep interrupted after %d of %d points; %s holds them, rerun with --resume to finish", already+stats.total(), len(indices), file)}
		}
		return runErr
	}
	if o.format == "json" {
		return writeJSONLine(stdout, stats.json(sw, si, sn, len(indices), already, workers, wall, file))
	}
	stats.print(stdout, sw, si, sn, len(indices), already, workers, wall, file)
	return nil
}

// doneRunIDs is the set of run ids in every summary file in dir. A damaged
// file (another shard's, killed while its disk failed, or copied badly) is
// skipped with a warning that names it and how to rebuild it: its points
// then count as not done here.
func doneRunIDs(dir, sweepFile string, warn func(string)) (map[string]bool, error) {
	files, err := summaryFiles(dir)
	if err != nil {
		return nil, err
	}
	done := map[string]bool{}
	for _, f := range files {
		var rows []runIDRow
		if _, err := output.ReadTable(f, &rows); err != nil {
			if errors.Is(err, output.ErrDamaged) {
				warn(fmt.Sprintf("%s is damaged, skipped (%s); to rebuild it, run its shard again: %s",
					f, damageReason(err), rebuildCommand(f, sweepFile, dir)))
				continue
			}
			return nil, err
		}
		for _, r := range rows {
			done[r.RunID] = true
		}
	}
	return done, nil
}

// runIDRow reads only the run_id column of a summary file.
type runIDRow struct {
	RunID string `arrow:"run_id"`
}

// summaryFiles lists the sweep summary files of dir (summary.arrow and
// summary.shard-I-of-N.arrow), sorted.
func summaryFiles(dir string) ([]string, error) {
	return globIn(dir, "summary.arrow", "summary.shard-*-of-*.arrow")
}

// globIn lists the files of dir matching each pattern, pattern by pattern.
func globIn(dir string, patterns ...string) ([]string, error) {
	var out []string
	for _, pat := range patterns {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return nil, err
		}
		out = append(out, m...)
	}
	return out, nil
}

// printPoints lists points for --dry-run.
func printPoints(w io.Writer, sw *sweep.Sweep, indices []int) error {
	valid := 0
	for _, i := range indices {
		if sw.Valid(i) {
			valid++
		}
	}
	fmt.Fprintf(w, "sweep %s: %s points (%s here, %s valid)\n", sw.Name, groupedInt(sw.Len()), groupedInt(len(indices)), groupedInt(valid))
	tw := newTable(w)
	head := []string{"point", "name", "run_id"}
	for _, f := range sw.Fields {
		head = append(head, f.Path)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t  status")
	for _, i := range indices {
		p := sw.Point(i)
		cells := []string{strconv.Itoa(i), p.Name, p.RunID}
		for _, v := range p.Values {
			if v == "" {
				v = "-"
			}
			cells = append(cells, v)
		}
		status := "ok"
		if p.Err != nil {
			status = "error: " + oneLine(p.Err.Error())
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t  "+status)
	}
	return tw.Flush()
}

// sweepStats counts outcomes and remembers the best point.
type sweepStats struct {
	counts [4]int
	best   *output.SummaryRow
}

func (s *sweepStats) total() int { return s.counts[0] + s.counts[1] + s.counts[2] + s.counts[3] }

func (s *sweepStats) add(o sweep.Outcome, row output.SummaryRow) {
	s.counts[o]++
	if o == sweep.Simulated && row.Fits && (s.best == nil || better(row, *s.best)) {
		// A copy taken here, not &row: the address of the parameter
		// itself would move every call's row (≈ 1.2 KB) to the heap,
		// fresh pages a point while the sweep's workers run (foot36).
		r := row
		s.best = &r
	}
}

// better orders by tokens/s, ties by name, so the best is deterministic.
func better(a, b output.SummaryRow) bool {
	if a.TokensPerS != b.TokensPerS {
		return a.TokensPerS > b.TokensPerS
	}
	return a.Name < b.Name
}

// layoutString is a short description of a row's layout.
func layoutString(r output.SummaryRow) string {
	s := fmt.Sprintf("tp %d pp %d dp %d", r.TP, r.PP, r.DP)
	if r.CP > 1 {
		s += fmt.Sprintf(" cp %d", r.CP)
	}
	if r.EP > 1 {
		s += fmt.Sprintf(" ep %d", r.EP)
	}
	s += fmt.Sprintf(" mb %d", r.MicroBatch)
	if r.VirtualStages > 1 {
		s += fmt.Sprintf(" v %d", r.VirtualStages)
	}
	if r.Zero > 0 {
		s += fmt.Sprintf(" zero %d", r.Zero)
	}
	return s
}

// json is what print says, as one object for scripts.
func (s *sweepStats) json(sw *sweep.Sweep, si, sn, here, already, workers int, wall time.Duration, file string) map[string]any {
	m := map[string]any{
		"sweep": sw.Name, "points": sw.Len(), "shard": fmt.Sprintf("%d/%d", si, sn), "shard_points": here,
		"already_done": already, "ran": s.total(), "simulated": s.counts[sweep.Simulated], "pruned": s.counts[sweep.Pruned],
		"invalid": s.counts[sweep.Invalid], "failed": s.counts[sweep.Failed], "wall_s": wall.Seconds(), "workers": workers, "wrote": file,
	}
	if b := s.best; b != nil {
		m["best"] = map[string]any{"name": b.Name, "layout": layoutString(*b), "gpu": b.GPU,
			"tokens_per_s": b.TokensPerS, "step_time_s": b.StepTimeS, "mfu": b.MFU}
	}
	return m
}

func (s *sweepStats) print(w io.Writer, sw *sweep.Sweep, si, sn, here, already, workers int, wall time.Duration, file string) {
	fmt.Fprintf(w, "sweep %s: %s points", sw.Name, groupedInt(sw.Len()))
	if sn > 1 {
		fmt.Fprintf(w, ", shard %d/%d has %d", si, sn, here)
	}
	if already > 0 {
		fmt.Fprintf(w, ", %s already done", groupedInt(already))
	}
	fmt.Fprintln(w)
	ran := s.total()
	fmt.Fprintf(w, "  ran %s: %s simulated, %s pruned (do not fit in memory), %s invalid, %s failed\n",
		groupedInt(ran), groupedInt(s.counts[sweep.Simulated]), groupedInt(s.counts[sweep.Pruned]), groupedInt(s.counts[sweep.Invalid]), groupedInt(s.counts[sweep.Failed]))
	rate := 0.0
	if wall > 0 {
		rate = float64(ran) / wall.Seconds()
	}
	fmt.Fprintf(w, "  wall %s, %s points/s on %d workers\n", numfmt.Seconds(wall.Seconds()), numfmt.Sig(rate), workers)
	if s.best != nil {
		b := s.best
		fmt.Fprintf(w, "  best here: %s (%s, %s): %s tokens/s, step %s, MFU %.1f%%\n",
			b.Name, layoutString(*b), b.GPU, numfmt.Grouped(b.TokensPerS), numfmt.Seconds4(b.StepTimeS), 100*b.MFU)
	}
	fmt.Fprintf(w, "  wrote %s\n", file)
}

// startSweepLoad readies the process's memory for a sweep about to be
// loaded, and returns what to call once it is loaded (once), before its
// points run, saying whether some point plays every rank
// (sweep.Sweep.PlaysEveryRank): what `simtrain sweep` and `simtrain plan`
// share.
//
// The huge-page advice stops once fresh 2 MiB pages are seen to be dear
// (hugepages.CloseWhenDear): a sweep's large arrays are populated ahead,
// point after point, and on 4 KiB pages that costs less than on huge
// pages the host must fault back in (a machine left idle a few seconds;
// after 6 s idle, the 70B sweep's CPU 0.714 s with the advice against
// 0.620 s without; docs/design.md "Speed", cold47). Where huge pages
// cannot pay at all (hugepages.CloseWhereUnpaid: a page's first touch is
// cheap here), a sweep of analytic points gives none once it is loaded
// (the 70B sweep after 6 s idle −68 ± 33 ms of CPU on the project's Intel
// machine, round 72); one whose points play every rank keeps them for
// the fabric's tables.
//
// Loading grows the heap from nothing to ≈ 15 MB (the hardware catalog,
// the resolved points and their plans), nearly all of it kept. The Go
// runtime's first heap goal is 4 MB × GOGC/100, so at the default 100 the
// load ran six collections, each marking what it keeps; at 400 it runs
// one (-48 M instructions, 0.7%, of the 1,000-point 70B sweep at
// GOMAXPROCS=1; docs/design.md "Speed"). The points then run at
// pointsGCPercent (one above 400, or off, applies to the load too).
func startSweepLoad() (loaded func(everyRank bool)) {
	hugepages.CloseWhenDear()
	gcp := debug.SetGCPercent(400)
	if gcp < 0 || gcp > 400 {
		debug.SetGCPercent(gcp)
	}
	return func(everyRank bool) {
		debug.SetGCPercent(pointsGCPercent(gcp, heapObjectBytes(), everyRank))
		if !everyRank {
			hugepages.CloseWhereUnpaid()
		}
	}
}

// pointsGCPercent is the GC percent a sweep's points run at: the user's
// GOGC when the environment sets it (user is the runtime's setting before
// the load changed it); else 100, the runtime's default, when some point
// plays every rank (everyRank); else 800 when the load left at most
// smallLoadBytes of heap objects (loaded), and 200 above that.
//
// Why 100 for every-rank points: the reasons for 800 and 200 below rest
// on a point's garbage being small beside the heap, which a play of every
// rank's tasks and flows is not (hundreds of megabytes a point), and at
// 800 the heap grew to about nine times what the plays keep live. The
// plan of Llama 3 70B on 512 H100 at flow fidelity (one run each,
// 2026-12-06, round 67): 194 s of CPU and 4.19 GB at 800, 217 s and
// 1.74 GB at 200, 205 s and 1.50 GB at 100 (issue 18, docs/design.md
// "Speed").
//
// Why 200: a point's garbage (≈ 41 KB on the 70B sweep) only paces
// collections, and at 200 they run half as often as at 100, for a peak
// heap of live + 2 × live instead of live + live. Measured on the
// 1,000-point 70B sweep when the workers' reserved arenas were on the
// heap (16 interleaved runs each against the binary without it, idle
// two-core machine, docs/design.md "Speed"): wall median 329 ms against
// 344, CPU median 0.633 s against 0.653, peak RSS median 135 MB against
// 127.
//
// Why 800 for a small load: since the reservations live outside the Go
// heap (sim/parallel fresh.go, reserve52) the heap after the load is the
// plans alone, 2.8 MB for the 70B sweep's 1,000 points and 2.4 MB for the
// 8B sweep's, and no collection has run yet, so the runtime's first goal
// is its minimum, 4 MB × GOGC/100: at 200 the points' first few megabytes
// of garbage set off a collection (≈ 5 ms of CPU by gctrace, and its
// sweep's fresh span-set pages) that finds nearly everything live. At 800
// the first goal is 32 MB and the 70B sweep runs none; a later goal is at
// most 9 × a live heap of this size (≈ 144 MB), while a larger load
// (≈ 5,000 points and up) keeps 200's bound on its peak. (Off Linux the
// reservations are on the heap and set off one collection at 800 too,
// which finds them live; the points' garbage then paces the next against
// 9 × that, memory the garbage must first fill.) (issue 18,
// docs/design.md "Speed", round 52).
func pointsGCPercent(user int, loaded uint64, everyRank bool) int {
	if _, set := os.LookupEnv("GOGC"); set {
		return user
	}
	if everyRank {
		return 100
	}
	if loaded <= smallLoadBytes {
		return 800
	}
	return 200
}

// smallLoadBytes is the largest heap a sweep's load may leave for its
// points to run at GOGC 800 (pointsGCPercent).
const smallLoadBytes = 16 << 20

// heapObjectBytes is the bytes of the heap's objects now, live or not yet
// collected (runtime/metrics; no stop of the world); the largest uint64
// where the runtime does not report it.
func heapObjectBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return math.MaxUint64 // unknown: not a small load
	}
	return s[0].Value.Uint64()
}
