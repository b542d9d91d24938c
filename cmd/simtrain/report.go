package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/simtrain/simtrain/sim/output"
	"github.com/simtrain/simtrain/sim/output/htmlreport"
)

// reportFile is the name of the HTML report in an output directory.
const reportFile = "report.html"

func newReportCmd() *cobra.Command {
	var out, format string
	cmd := &cobra.Command{
		Use:   "report DIR",
		Short: "Write a self-contained HTML report of a run's or a sweep's output directory",
		Long: `report reads the files simtrain wrote into DIR and writes DIR/report.html
(or OUT/report.html with --out), one page that opens offline in any browser:

  a run's directory (simtrain run):   the summary, the step's Gantt chart per
      rank and stream, peak memory per pipeline stage, link utilisation;
  a sweep's directory (simtrain sweep): the Pareto plot of step time against
      cost per step, the layouts on the front, every layout fastest first.

Charts are inline SVG; the page loads nothing from the network. Big runs are
sampled (at most 8 ranks in the Gantt chart, one rectangle per pixel).`,
		Example: `  simtrain run scenarios/quickstart.yaml --report     # the same, while running
  simtrain report results/quickstart-llama3-8b-fsdp
  simtrain sweep scenarios/sweeps/llama3-70b-1024-h100-layouts.yaml --out results/l70 --quiet
  simtrain report results/l70
  simtrain report results/quickstart-llama3-8b-fsdp --format json   # {"kind":"run","report":"…/report.html"}`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("report: give one output directory (of simtrain run or simtrain sweep)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkChoice("format", format, "table", "json"); err != nil {
				return err
			}
			dst := out
			if dst == "" {
				dst = args[0]
			}
			kind, err := writeReport(args[0], dst)
			if err != nil {
				return err
			}
			path := filepath.Join(dst, reportFile)
			if format == "json" {
				return writeJSONLine(cmd.OutOrStdout(), map[string]string{"kind": kind, "report": path})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote the %s report %s\n", kind, path)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory to write report.html into (default: DIR)")
	cmd.Flags().StringVar(&format, "format", "table", "table (one line) or json (one object: kind, report)")
	return cmd
}

// writeReport writes outDir/report.html for the run or sweep directory dir
// and says which it was ("run" or "sweep").
func writeReport(dir, outDir string) (string, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return "", usageErrorf("%v", err)
	}
	if !st.IsDir() {
		return "", usageErrorf("%s is not a directory (give the output directory of simtrain run or simtrain sweep)", dir)
	}
	var render func(w io.Writer) error
	kind := "run"
	if _, err := os.Stat(filepath.Join(dir, "memory.arrow")); err == nil {
		run, err := htmlreport.LoadRun(dir)
		if err != nil {
			return "", oldSchemaError(err, dir, func(meta map[string]string) string { return "rebuild it: " + rebuildRun(meta, dir) })
		}
		render = func(w io.Writer) error { return htmlreport.RenderRun(w, run) }
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	} else {
		kind = "sweep"
		files, err := summaryFiles(dir)
		if err != nil {
			return "", err
		}
		if len(files) == 0 {
			return "", usageErrorf("%s: neither a run's directory (memory.arrow) nor a sweep's (summary.arrow or summary.shard-I-of-N.arrow)", dir)
		}
		rows, metas, _, err := readSummaries([]string{dir})
		if err != nil {
			return "", err
		}
		merged, _, _ := dedupeRows(rows)
		sw := &htmlreport.Sweep{Name: commonMeta(metas, "sweep"), Rows: merged}
		if sw.Name == "" {
			sw.Name = strings.TrimSuffix(filepath.Base(filepath.Clean(dir)), string(filepath.Separator))
		}
		render = func(w io.Writer) error { return htmlreport.RenderSweep(w, sw) }
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", err
	}
	return kind, output.WriteFileAtomic(filepath.Join(outDir, reportFile), render)
}

// runExtras writes the optional files of `simtrain run` into a finished
// run directory: Parquet copies of its Arrow tables (--parquet) and the
// HTML report (--report). It runs before the directory is committed, so
// they appear together with the rest.
func runExtras(dir string, parquet, report bool) error {
	if parquet {
		tables, err := filepath.Glob(filepath.Join(dir, "*.arrow"))
		if err != nil {
			return err
		}
		for _, t := range tables {
			if err := output.ArrowToParquet(t, strings.TrimSuffix(t, ".arrow")+".parquet"); err != nil {
				return err
			}
		}
	}
	if report {
		if _, err := writeReport(dir, dir); err != nil {
			return err
		}
	}
	return nil
}
