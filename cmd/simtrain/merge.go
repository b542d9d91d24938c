package main

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/simtrain/simtrain/sim/output"
)

func newMergeCmd() *cobra.Command {
	var (
		out, format string
		parquet     bool
	)
	cmd := &cobra.Command{
		Use:   "merge DIR|FILE... --out DIR",
		Short: "Join sweep shard files into one summary table, one row per run id",
		Long: `merge reads the summary files of sweep directories (summary.arrow and
summary.shard-I-of-N.arrow) and any .arrow or .parquet summary files given
directly, keeps one row per run id, and writes them sorted by point name (the
sweep's point order) into the directory --out as summary.arrow, and with
--parquet also as summary.parquet (zstd; DuckDB reads it natively, where Arrow
IPC needs an extension). simtrain best and report read that directory like a
sweep's. An --out ending in .arrow or .parquet is still taken as that one
file, as earlier versions did. Rows that repeat a run id are the same
configuration; a repeat whose results differ (other than the wall-clock
sim_wall_s) is reported, since simulations are deterministic. The sweep
directories' goodput-summary files (points with a goodput: block) are joined
the same way, one row per run id, into --out's goodput-summary.arrow, which
best --by goodput reads (an --out that names one file gets no goodput rows).`,
		Example: `  simtrain merge results/l70-shards --out results/l70
  simtrain merge /shared/run1 /shared/run2 --out results/all --parquet --format json
  simtrain merge results/l70 --out all.parquet        # one file`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("merge: give at least one sweep directory or summary file")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageErrorf("--out: required (a directory for summary.arrow)")
			}
			if err := checkChoice("format", format, "table", "json"); err != nil {
				return err
			}
			// The files to write: DIR/summary.arrow (and .parquet), or the
			// one file an --out ending in .arrow or .parquet names.
			var targets []string
			switch ext := strings.ToLower(filepath.Ext(out)); ext {
			case ".arrow", ".parquet":
				if parquet {
					return usageErrorf("--parquet: applies to an --out directory; %s is one file", out)
				}
				targets = []string{out}
			default:
				// A name with another extension is more likely a file name
				// than a directory (x.csv): refuse it unless it is a
				// directory already.
				if st, err := os.Stat(out); ext != "" && (err != nil || !st.IsDir()) {
					return usageErrorf("--out: %s is neither a directory nor a FILE.arrow / FILE.parquet", out)
				}
				targets = []string{filepath.Join(out, "summary.arrow")}
				if parquet {
					targets = append(targets, filepath.Join(out, "summary.parquet"))
				}
			}
			rows, metas, files, err := readSummaries(args)
			if err != nil {
				return err
			}
			merged, dups, differ := dedupeRows(rows)
			meta := map[string]string{"merged_files": strconv.Itoa(len(files)), "rows": strconv.Itoa(len(merged))}
			if name := commonMeta(metas, "sweep"); name != "" {
				meta["sweep"] = name
			}
			for _, t := range targets {
				if dir := filepath.Dir(t); dir != "." {
					if err := os.MkdirAll(dir, 0o755); err != nil {
						return err
					}
				}
				if strings.EqualFold(filepath.Ext(t), ".parquet") {
					err = output.WriteParquet(t, merged, meta)
				} else {
					err = output.WriteTable(t, merged, meta)
				}
				if err != nil {
					return err
				}
			}
			goodputRows := 0
			if len(targets) > 0 && filepath.Base(targets[0]) == "summary.arrow" {
				side, err := readGoodputSides(args)
				if err != nil {
					return err
				}
				if len(side) > 0 {
					t := filepath.Join(out, "goodput-summary.arrow")
					if err := output.WriteTable(t, sortedGoodputRows(side), meta); err != nil {
						return err
					}
					targets, goodputRows = append(targets, t), len(side)
				}
			}
			if format == "json" {
				if err := writeJSONLine(cmd.OutOrStdout(), map[string]any{"rows": len(merged), "goodput_rows": goodputRows, "files": len(files),
					"repeated_dropped": dups, "differing_results": len(differ), "wrote": targets}); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "merged %s rows from %d files into %s (%s repeated run ids dropped)\n", groupedInt(len(merged)), len(files), strings.Join(targets, " and "), groupedInt(dups))
			}
			if len(differ) > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "simtrain: merge: warning: %d run ids have rows with different results (first: %s); kept the first by name\n", len(differ), differ[0])
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "output directory for summary.arrow (or one FILE.arrow / FILE.parquet)")
	cmd.Flags().BoolVar(&parquet, "parquet", false, "also write summary.parquet (zstd) in the --out directory")
	cmd.Flags().StringVar(&format, "format", "table", "what merge prints: table or json (one object)")
	return cmd
}

// readSummaries reads summary rows from sweep directories and files.
func readSummaries(args []string) ([]output.SummaryRow, []map[string]string, []string, error) {
	var files []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, nil, nil, usageErrorf("%v", err)
		}
		if st.IsDir() {
			fs, err := summaryFiles(a)
			if err != nil {
				return nil, nil, nil, err
			}
			if len(fs) == 0 {
				return nil, nil, nil, usageErrorf("%s: no summary.arrow or summary.shard-I-of-N.arrow in this directory", a)
			}
			files = append(files, fs...)
			continue
		}
		files = append(files, a)
	}
	var rows []output.SummaryRow
	var metas []map[string]string
	for _, f := range files {
		var part []output.SummaryRow
		var meta map[string]string
		var err error
		switch strings.ToLower(filepath.Ext(f)) {
		case ".arrow":
			meta, err = output.ReadTable(f, &part)
		case ".parquet":
			meta, err = output.ReadParquet(f, &part)
		default:
			return nil, nil, nil, usageErrorf("%s: not a summary file (want .arrow or .parquet, or a sweep directory)", f)
		}
		if err != nil {
			return nil, nil, nil, oldSchemaError(err, f, func(meta map[string]string) string {
				return "rebuild it: " + rebuildSweep(meta, "", filepath.Dir(f)+"-v"+output.SchemaVersion)
			})
		}
		rows = append(rows, part...)
		metas = append(metas, meta)
	}
	return rows, metas, files, nil
}

// dedupeRows sorts rows by (name, run id, sim wall time) and keeps the first
// row of each run id. It returns the kept rows in point order, how many
// were dropped, and the run ids whose repeats had different results.
func dedupeRows(rows []output.SummaryRow) ([]output.SummaryRow, int, []string) {
	rows = slices.Clone(rows)
	slices.SortStableFunc(rows, func(a, b output.SummaryRow) int {
		return cmp.Or(compareRows(a, b), cmp.Compare(a.SimWallS, b.SimWallS))
	})
	first := map[string]int{}
	var out []output.SummaryRow
	var differ []string
	dups := 0
	for _, r := range rows {
		if j, ok := first[r.RunID]; ok {
			dups++
			if !sameResult(out[j], r) && !slices.Contains(differ, r.RunID) {
				differ = append(differ, r.RunID)
			}
			continue
		}
		first[r.RunID] = len(out)
		out = append(out, r)
	}
	return out, dups, differ
}

// sameResult compares two rows of one run id, ignoring the wall-clock
// column and the name (the same configuration may be a point of two sweeps).
func sameResult(a, b output.SummaryRow) bool {
	a.SimWallS, b.SimWallS = 0, 0
	a.Name, b.Name = "", ""
	return a == b
}

// sortedGoodputRows lists goodput-summary rows (one per run id) in the
// sweep's point order, as the summary's.
func sortedGoodputRows(byRun map[string]output.GoodputSummaryRow) []output.GoodputSummaryRow {
	rows := make([]output.GoodputSummaryRow, 0, len(byRun))
	for _, r := range byRun {
		rows = append(rows, r)
	}
	slices.SortFunc(rows, compareGoodputRows)
	return rows
}

// commonMeta is meta[key] when every file has the same value, else "".
func commonMeta(metas []map[string]string, key string) string {
	v := ""
	for i, m := range metas {
		if i == 0 {
			v = m[key]
		} else if m[key] != v {
			return ""
		}
	}
	return v
}
