package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/simtrain/simtrain/sim/output"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/sweep"
)

// smallSweep is 4 × 2 × 2 × 2 = 32 points of Llama 3 8B on 2 × 8 H100:
// tp 3 is invalid (it divides neither 32 heads nor 16 GPUs: 8 points); with
// ZeRO 0, tp 1 cannot fit (8.0e9 params × 16 bytes of bf16 weights and
// grads and fp32 Adam states = 128 GB > 80 GB: 4 points), and tp 2 pp 1
// holds 64 GB of those states plus its activations, which the accounting
// model puts above 80 GB too (2 points, 82 and 95 GB when written); the
// other 18 are simulated. Tests count the pruned points from the rows, so
// a change to the memory model moves points between pruned and simulated
// without failing them.
const smallSweep = `name: small
scenario:
  name: base
  model: {preset: llama3-8b}
  training: {seq_len: 4096, global_batch: 64}
  cluster: {gpu: h100-sxm, nodes: 2}
sweep:
  parallel.tp: [1, 2, 3, 8]
  parallel.pp: [1, 2]
  parallel.zero: [0, 3]
  training.micro_batch: [1, 2]
`

func writeSweep(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sweep.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readRows(t *testing.T, path string) []output.SummaryRow {
	t.Helper()
	var rows []output.SummaryRow
	var err error
	if strings.HasSuffix(path, ".parquet") {
		_, err = output.ReadParquet(path, &rows)
	} else {
		_, err = output.ReadTable(path, &rows)
	}
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// sameRows compares two tables row by row, ignoring the wall-clock column.
func sameRows(t *testing.T, what string, a, b []output.SummaryRow) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d rows against %d", what, len(a), len(b))
	}
	for i := range a {
		x, y := a[i], b[i]
		x.SimWallS, y.SimWallS = 0, 0
		if x != y {
			t.Errorf("%s: row %d differs:\n%+v\n%+v", what, i, x, y)
		}
	}
}

// TestSweepShardsMergeToTheUnshardedRun: the same sweep run whole on one
// worker, whole on three, and as four shards merged gives the same rows
// (by run id and value, apart from sim_wall_s), one per point, none dropped.
func TestSweepShardsMergeToTheUnshardedRun(t *testing.T) {
	path := writeSweep(t, smallSweep)
	dir := t.TempDir()
	whole, whole3, shards := filepath.Join(dir, "whole"), filepath.Join(dir, "whole3"), filepath.Join(dir, "shards")
	out, _, err := runCLI(t, "sweep", path, "--out", whole, "--workers", "1", "--quiet")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(t, "sweep", path, "--out", whole3, "--workers", "3", "--quiet", "--batch", "5"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		if _, _, err := runCLI(t, "sweep", path, "--out", shards, "--shard", fmt.Sprintf("%d/4", i), "--workers", "2", "--quiet"); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := summaryFiles(shards)
	if len(files) != 4 {
		t.Fatalf("shard files %v", files)
	}
	for _, f := range []string{"merged.arrow", "whole.arrow", "merged.parquet"} {
		src := shards
		if f == "whole.arrow" {
			src = whole
		}
		if _, _, err := runCLI(t, "merge", src, "--out", filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	ref := readRows(t, filepath.Join(whole, "summary.arrow"))
	sameRows(t, "1 worker / 3 workers", ref, readRows(t, filepath.Join(whole3, "summary.arrow")))
	sameRows(t, "unsharded / 4 shards merged", readRows(t, filepath.Join(dir, "whole.arrow")), readRows(t, filepath.Join(dir, "merged.arrow")))
	sameRows(t, "unsharded / merged parquet", ref, readRows(t, filepath.Join(dir, "merged.parquet")))

	// One row per point, in point order, with the sweep's run ids.
	sw, err := sweep.Load(path, sweep.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ref) != sw.Len() {
		t.Fatalf("%d rows for %d points", len(ref), sw.Len())
	}
	counts := map[string]int{}
	for i, r := range ref {
		if r.RunID != sw.RunID(i) || r.Name != sw.PointName(i) {
			t.Errorf("row %d: %s %s, want %s %s", i, r.Name, r.RunID, sw.PointName(i), sw.RunID(i))
		}
		switch {
		case r.Error != "":
			counts["error"]++
			if r.TP != 3 || !strings.Contains(r.Error, "parallel.tp: 3") {
				t.Errorf("row %d: error %q with tp %d", i, r.Error, r.TP)
			}
		case !r.Fits:
			counts["pruned"]++
			if r.TP*r.PP > 2 || r.Zero != 0 || r.StepTimeS != 0 || r.Events != 0 || r.PeakMemBytes <= r.MemCapacityBytes {
				t.Errorf("row %d: pruned tp %d zero %d step %g mem %d", i, r.TP, r.Zero, r.StepTimeS, r.PeakMemBytes)
			}
		default:
			counts["simulated"]++
			if r.StepTimeS <= 0 || r.Events == 0 || r.NumGPUs != 16 || r.DP != 16/(r.TP*r.PP) || r.PeakMemBytes > r.MemCapacityBytes {
				t.Errorf("row %d: %+v", i, r)
			}
		}
	}
	if counts["error"] != 8 || counts["pruned"] < 4 || counts["pruned"]+counts["simulated"] != 24 {
		t.Errorf("outcomes %v", counts)
	}
	want := fmt.Sprintf("ran 32: %d simulated, %d pruned (do not fit in memory), 8 invalid, 0 failed", counts["simulated"], counts["pruned"])
	if !strings.Contains(out, want) {
		t.Errorf("summary lacks %q:\n%s", want, out)
	}
}

// TestSweepRefusesToOverwrite: a second sweep into the same directory needs
// --resume, which then has nothing left to do.
func TestSweepRefusesToOverwrite(t *testing.T) {
	path := writeSweep(t, smallSweep)
	dir := t.TempDir()
	if _, _, err := runCLI(t, "sweep", path, "--out", dir, "--quiet"); err != nil {
		t.Fatal(err)
	}
	_, _, err := runCLI(t, "sweep", path, "--out", dir, "--quiet")
	var ue *usageError
	if err == nil || !asUsage(err, &ue) || !strings.Contains(err.Error(), "pass --resume") {
		t.Errorf("second run: %v", err)
	}
	out, _, err := runCLI(t, "sweep", path, "--out", dir, "--quiet", "--resume")
	if err != nil || !strings.Contains(out, "32 already done") || !strings.Contains(out, "ran 0:") {
		t.Errorf("resume of a finished sweep: %v\n%s", err, out)
	}
	if rows := readRows(t, filepath.Join(dir, "summary.arrow")); len(rows) != 32 {
		t.Errorf("%d rows after a no-op resume", len(rows))
	}
}

// TestSweepBadInput: a bad sweep file or flag is a one-line usage error
// (exit 2) naming the field, and nothing is written.
func TestSweepBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		body string
		args []string
		want string
	}{
		{strings.Replace(smallSweep, "parallel.pp:", "parallel.ppp:", 1), nil, `parallel.ppp: unknown field; did you mean "pp"?`},
		{strings.Replace(smallSweep, "[1, 2, 3, 8]", "[]", 1), nil, "parallel.tp: empty list"},
		{strings.Replace(smallSweep, "[0, 3]", "[0, three]", 1), nil, `parallel.zero[1]: expected an integer, got "three"`},
		{smallSweep, []string{"--shard", "4/4"}, "--shard: want I/N with 0 <= I < N"},
		{smallSweep, []string{"--shard", "x"}, "--shard: want I/N"},
		{smallSweep, []string{"--fidelity", "fast"}, `--fidelity: unknown fidelity "fast"`},
		{smallSweep, []string{"--batch", "0"}, "--batch: must be >= 1"},
		{smallSweep, []string{"--flush-every", "0s"}, "--flush-every: must be above 0"},
		{smallSweep, []string{"--print-point", "99"}, "--print-point: 99 is not a point (the sweep has 32: 0 to 31)"},
	} {
		path := writeSweep(t, tc.body)
		out := filepath.Join(dir, "out")
		_, _, err := runCLI(t, append([]string{"sweep", path, "--out", out}, tc.args...)...)
		var ue *usageError
		if err == nil || !asUsage(err, &ue) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: got %v, want a usage error with %q", tc.args, err, tc.want)
		}
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%v: output directory created", tc.args)
		}
	}
}

// TestSweepDryRunAndPrintPoint: --dry-run lists the points without running
// them; --print-point writes a scenario that `simtrain run` accepts and that
// has the point's run id.
func TestSweepDryRunAndPrintPoint(t *testing.T) {
	path := writeSweep(t, smallSweep)
	out, _, err := runCLI(t, "sweep", path, "--dry-run", "--shard", "1/4")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[0], "sweep small: 32 points (8 here, 6 valid)") || len(lines) != 2+8 ||
		!strings.Contains(lines[2], "small-01") || !strings.Contains(out, "error: parallel.tp: 3") {
		t.Errorf("dry run:\n%s", out)
	}
	y, _, err := runCLI(t, "sweep", path, "--print-point", "25") // tp 8 pp 1 zero 0 mb 2
	if err != nil {
		t.Fatal(err)
	}
	s, err := scenario.Parse([]byte(y))
	if err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	sw, _ := sweep.Load(path, sweep.Options{})
	if s.RunID() != sw.RunID(25) || s.Name != "small-25" || s.Parallel.TP != 8 || s.Training.MicroBatch != 2 {
		t.Errorf("point 25: %s %s", s.Name, s.RunID())
	}
}

// buildBinary compiles simtrain once per test binary run.
func buildBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the simtrain binary")
	}
	bin := filepath.Join(t.TempDir(), "simtrain")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go build: %v", err)
	}
	return bin
}

// killSweepAt200 starts bin with args, kills it with SIGKILL once the
// summary file holds at least 200 rows, and returns the rows on disk then
// (a complete table: the rename is atomic).
func killSweepAt200(t *testing.T, bin string, args []string, file string) []output.SummaryRow {
	t.Helper()
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case err := <-exited:
			// One that finished between two polls, whole, goes back as
			// one killed after its last rewrite (played again).
			if err == nil {
				if info, ierr := output.ReadTableInfo(file); ierr == nil && info.Rows >= 200 {
					return readRows(t, file)
				}
			}
			t.Fatalf("the sweep finished (%v) before it could be killed halfway", err)
		default:
		}
		if info, err := output.ReadTableInfo(file); err == nil && info.Rows >= 200 {
			// A sweep that ended between the read and the signal
			// (os.ErrProcessDone) wrote its last rewrite: its rows go
			// back as they are, which the caller plays again.
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
				t.Fatal(err)
			}
			<-exited
			return readRows(t, file)
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("no rows after 2 minutes")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSweepResumeAfterSIGKILL runs the real binary on half of the 1,000-point
// 70B example sweep (shard 0/2, 500 points), kills it with SIGKILL once at
// least 200 rows are on disk (40%), checks that the shard file is a complete
// table of finished points of the shard with exactly the rows the flush
// schedule puts there (--batch 20 and no time bound: rewrites at 20, 40, 80,
// 160 and 320 rows, so 320), resumes, and checks that every point of the
// shard is there exactly once, in point order, and that a resumed sweep's
// rows equal an uninterrupted run's.
func TestSweepResumeAfterSIGKILL(t *testing.T) {
	bin := buildBinary(t)
	sweepFile, err := filepath.Abs("../../scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The kill lands where the poll sees 200 rows; on a loaded machine the
	// poller can wake only after the sweep's last rewrite (all 500 rows,
	// ≈ 60 ms after the one of 320), which tests no interruption: that
	// run is played again in a fresh folder, up to three times.
	var (
		dir, file string
		args      []string
		killed    []output.SummaryRow
	)
	for attempt := 1; ; attempt++ {
		dir = t.TempDir()
		file = filepath.Join(dir, "summary.shard-0-of-2.arrow")
		args = []string{"sweep", sweepFile, "--out", dir, "--shard", "0/2", "--workers", "2", "--batch", "20", "--flush-every", "1h", "--quiet"}
		killed = killSweepAt200(t, bin, args, file)
		if len(killed) < 500 || attempt == 3 {
			break
		}
		t.Logf("attempt %d: killed after the last rewrite (500 rows on disk); again", attempt)
	}
	before := int64(len(killed))
	t.Logf("killed with %d of 500 rows on disk", before)
	if before != 320 {
		t.Fatalf("%d rows on disk after the kill, want 320 (the first rewrite of at least 200 rows: 20, 40, 80, 160, 320)", before)
	}
	inShard := map[string]bool{}
	if sw, err := sweep.Load(sweepFile, sweep.Options{}); err == nil {
		for _, i := range sw.ShardIndices(0, 2) {
			inShard[sw.RunID(i)+" "+sw.PointName(i)] = true
		}
	}
	ids := map[string]bool{}
	for k, r := range killed {
		if !inShard[r.RunID+" "+r.Name] || ids[r.RunID] {
			t.Errorf("row %d on disk after the kill (%s %s) is not a new point of the shard", k, r.Name, r.RunID)
		}
		ids[r.RunID] = true
		if k > 0 && compareRows(killed[k-1], r) >= 0 {
			t.Errorf("rows %d and %d on disk after the kill are not in point order", k-1, k)
		}
	}
	var stdout bytes.Buffer
	resume := exec.Command(bin, append(args, "--resume")...)
	resume.Stdout, resume.Stderr = &stdout, os.Stderr
	if err := resume.Run(); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if want := fmt.Sprintf("%d already done", before); !strings.Contains(stdout.String(), want) {
		t.Errorf("resume summary lacks %q:\n%s", want, stdout.String())
	}
	rows := readRows(t, file)
	sw, err := sweep.Load(sweepFile, sweep.Options{})
	if err != nil {
		t.Fatal(err)
	}
	idx := sw.ShardIndices(0, 2)
	if len(rows) != len(idx) {
		t.Fatalf("%d rows after resume, want %d", len(rows), len(idx))
	}
	seen := map[string]int{}
	for _, r := range rows {
		seen[r.RunID]++
	}
	for k, i := range idx {
		if seen[sw.RunID(i)] != 1 {
			t.Errorf("point %d appears %d times", i, seen[sw.RunID(i)])
		}
		if rows[k].Name != sw.PointName(i) {
			t.Errorf("row %d is %s, want %s (point order)", k, rows[k].Name, sw.PointName(i))
		}
	}
	// The rows written before the kill survive unchanged.
	byID := map[string]output.SummaryRow{}
	for _, r := range rows {
		byID[r.RunID] = r
	}
	for _, r := range killed {
		if byID[r.RunID] != r {
			t.Errorf("%s changed across the resume", r.Name)
		}
	}
	// No temporary file is left behind.
	if m, _ := filepath.Glob(filepath.Join(dir, "*.tmp-*")); len(m) > 0 {
		t.Errorf("left behind: %v", m)
	}
	// And the resumed result is the uninterrupted one.
	whole := t.TempDir()
	if err := exec.Command(bin, "sweep", sweepFile, "--out", whole, "--shard", "0/2", "--quiet").Run(); err != nil {
		t.Fatal(err)
	}
	sameRows(t, "resumed / uninterrupted", readRows(t, filepath.Join(whole, "summary.shard-0-of-2.arrow")), rows)

	// Ctrl-C (SIGINT) stops within a second, writes what finished, says
	// how to resume and exits with status 130 (interrupted).
	intr := t.TempDir()
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "sweep", sweepFile, "--out", intr, "--workers", "1", "--batch", "10", "--quiet")
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if info, err := output.ReadTableInfo(filepath.Join(intr, "summary.arrow")); err == nil && info.Rows >= 10 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("no rows before SIGINT")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted || !strings.Contains(stderr.String(), "rerun with --resume to finish") {
		t.Errorf("after SIGINT: %v, stderr %q", err, stderr.String())
	}
	if rows := readRows(t, filepath.Join(intr, "summary.arrow")); len(rows) == 0 || len(rows) == 1000 {
		t.Errorf("after SIGINT: %d rows written", len(rows))
	}

	// A bad sweep file exits with status 2.
	bad := writeSweep(t, strings.Replace(smallSweep, "parallel.pp:", "parallel.ppp:", 1))
	err = exec.Command(bin, "sweep", bad, "--out", t.TempDir()).Run()
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Errorf("bad sweep file: %v, want exit status 2", err)
	}
}

// TestMergeDeduplicates: merging a directory with itself keeps one row per
// run id; a repeat with different results is reported.
func TestMergeDeduplicates(t *testing.T) {
	path := writeSweep(t, smallSweep)
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	if _, _, err := runCLI(t, "sweep", path, "--out", run, "--quiet"); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runCLI(t, "merge", run, filepath.Join(run, "summary.arrow"), "--out", filepath.Join(dir, "m.parquet"))
	if err != nil || !strings.Contains(out, "merged 32 rows from 2 files") || !strings.Contains(out, "32 repeated run ids dropped") || errOut != "" {
		t.Errorf("merge: %v\n%s%s", err, out, errOut)
	}
	// A row of the same run id with a different step time is a conflict.
	rows := readRows(t, filepath.Join(run, "summary.arrow"))
	for i := range rows {
		if rows[i].StepTimeS > 0 {
			rows[i].StepTimeS *= 2
			rows = rows[i : i+1]
			break
		}
	}
	odd := filepath.Join(dir, "odd.arrow")
	if err := output.WriteTable(odd, rows, nil); err != nil {
		t.Fatal(err)
	}
	_, errOut, err = runCLI(t, "merge", run, odd, "--out", filepath.Join(dir, "m2.arrow"))
	if err != nil || !strings.Contains(errOut, "1 run ids have rows with different results") {
		t.Errorf("conflict: %v %q", err, errOut)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"merge", run}, "--out: required"},
		{[]string{"merge", run, "--out", "x.csv"}, "--out: x.csv is neither a directory nor a FILE.arrow / FILE.parquet"},
		{[]string{"merge", t.TempDir(), "--out", "x.arrow"}, "no summary.arrow"},
		{[]string{"merge", path, "--out", "x.arrow"}, "not a summary file"},
	} {
		_, _, err := runCLI(t, tc.args...)
		var ue *usageError
		if err == nil || !asUsage(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestProgress: plain lines off a terminal, at most one per interval and a
// final one; nothing with --quiet.
func TestProgress(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, false, 10, 2)
	if p.mode != progressLines {
		t.Fatalf("mode %d for a buffer", p.mode)
	}
	now := p.start
	p.now = func() time.Time { return now }
	row := output.SummaryRow{Name: "s-3", TokensPerS: 1.5e6, Fits: true, TP: 8, PP: 2, DP: 4, MicroBatch: 1}
	for i := 0; i < 4; i++ {
		now = now.Add(4 * time.Second) // lines every 10 s: one at 12 s
		p.update(sweep.Simulated, row)
	}
	p.finish()
	want := "sweep: 5/10 points (50%), 0.250/s, ETA 20s, best 1,500,000 tok/s tp8 pp2 dp4 mb1 z0\n" +
		"sweep: 6/10 points (60%), 0.250/s, ETA 16s, best 1,500,000 tok/s tp8 pp2 dp4 mb1 z0\n"
	if buf.String() != want {
		t.Errorf("lines:\n%s\nwant:\n%s", buf.String(), want)
	}
	buf.Reset()
	q := newProgress(&buf, true, 10, 0)
	q.update(sweep.Simulated, row)
	q.finish()
	if buf.Len() != 0 {
		t.Errorf("--quiet wrote %q", buf.String())
	}
	// The bar: fill in proportion, cut to the terminal's width.
	buf.Reset()
	b := &progress{w: &buf, mode: progressBar, total: 4, done: 1, ran: 1, width: 40, start: now, now: func() time.Time { return now.Add(time.Second) }}
	b.draw()
	if got := buf.String(); got != "\r\x1b[K[======>                 ] 1/4 points (" {
		t.Errorf("bar %q", got)
	}
}
