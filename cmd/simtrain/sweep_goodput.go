package main

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/simtrain/simtrain/sim/output"
	"github.com/simtrain/simtrain/sim/simulation"
	"github.com/simtrain/simtrain/sim/sweep"
)

// goodputSide is a sweep's goodput-summary file: one row per simulated
// point whose scenario has a goodput block, written and flushed with the
// summary. It is opened at the first such point, so a sweep without goodput
// blocks writes nothing new.
type goodputSide struct {
	path   string
	meta   map[string]string
	resume bool
	batch  int
	file   *output.AppendFile[output.GoodputSummaryRow]
}

// goodputSideFile is the goodput-summary file of a shard.
func goodputSideFile(i, n int) string {
	return "goodput-" + shardFile(i, n)
}

func compareGoodputRows(a, b output.GoodputSummaryRow) int {
	return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.RunID, b.RunID))
}

// add computes a point's goodput when its scenario asks for it.
func (g *goodputSide) add(pr sweep.PointResult) error {
	if pr.Result == nil || pr.Err != nil || pr.Point.Scenario.Goodput == nil {
		return nil
	}
	plan, err := simulation.GoodputPlan(pr.Result)
	if err != nil {
		return nil // no step time: the summary row says why
	}
	if g.file == nil {
		f, err := output.OpenAppendFile(g.path, g.meta, g.resume, func(a, b *output.GoodputSummaryRow) int { return compareGoodputRows(*a, *b) })
		if err != nil {
			return err
		}
		f.BatchRows = g.batch
		g.file = f
	}
	f := plan.EffectiveTrainingFraction()
	interval := plan.IntervalS
	if math.IsInf(interval, 1) {
		interval = 0
	}
	g.file.Add(output.GoodputSummaryRow{RunID: pr.Point.RunID, Name: pr.Point.Name,
		EffectiveTrainingFraction: f, GoodputTokensPerS: pr.Result.TokensPerS * f,
		FailuresPerDay: plan.FailuresPerHour * 24, CheckpointBytes: output.ByteCount(plan.CheckpointBytes),
		CheckpointWriteS: plan.WriteS, CheckpointStallS: plan.BlockingS, CheckpointIntervalS: interval,
		RestartS: plan.RestartS, SpareNodes: int64(plan.SpareNodes)})
	return nil
}

func (g *goodputSide) flush() error {
	if g.file == nil {
		return nil
	}
	return g.file.Flush()
}

// readGoodputSides reads the goodput-summary files of the sweep
// directories among args, by run id.
func readGoodputSides(args []string) (map[string]output.GoodputSummaryRow, error) {
	out := map[string]output.GoodputSummaryRow{}
	for _, a := range args {
		if st, err := os.Stat(a); err != nil || !st.IsDir() {
			continue
		}
		files, err := globIn(a, "goodput-summary.arrow", "goodput-summary.shard-*-of-*.arrow")
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			var rows []output.GoodputSummaryRow
			if _, err := output.ReadTable(f, &rows); err != nil {
				return nil, oldSchemaError(fmt.Errorf("%s: %w", f, err), f, func(meta map[string]string) string {
					return "rebuild it: " + rebuildSweep(meta, "", filepath.Clean(a)+"-v"+output.SchemaVersion)
				})
			}
			for _, r := range rows {
				out[r.RunID] = r
			}
		}
	}
	return out, nil
}
