// Package report turns what a run produced into the rows of simtrain's
// tables, the same rows the CLI writes: summary.arrow (one row per scenario
// or sweep point), memory.arrow (per rank), links.arrow (per link),
// timeline.arrow and trace.json (per executed task), validation.arrow (per
// validated scenario) and the JSON summary line of `simtrain run`. It
// computes nothing about the training step; every number is the Result's,
// the Plan's or the validation Case's, and the column schemas, units and
// meanings are sim/output's (results/README.md).
//
// # Knob columns
//
// summary.arrow has one column per input knob. Which knobs, under which
// name and with which value is the knob registry's (scenario.Knob.Column,
// Knob.Value). Summary fills those columns with setKnobColumns, code
// generated from the registry by the column's name (knobcolumns_gen.go:
// plain loads and stores, one a column), so adding a knob with a column is
// its registry entry, its field in output.SummaryRow and `go generate
// ./sim/report`; tests hold the three to each other and the generated
// code to reflection's reading of the registry. The other input columns
// are derived from the plan (parameter counts, GPU count, micro-batches
// per step), the result columns from the Result.
package report

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/simtrain/simtrain/sim/output"
	"github.com/simtrain/simtrain/sim/parallel"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/simulation"
	"github.com/simtrain/simtrain/sim/sweep"
	"github.com/simtrain/simtrain/sim/validation"
)

// Summary is the summary.arrow row of plan s and, when it ran, its result r
// (nil: the input columns only; the result columns stay 0).
func Summary(s *scenario.Plan, r *simulation.Result) output.SummaryRow {
	row := summary(s, r)
	row.RunID = s.RunID()
	return row
}

// summary is Summary without the run id (a sweep point has it already).
//
// The knob columns are set by setKnobColumns (knobcolumns_gen.go), code
// generated from the registry: plain loads and stores and direct calls of
// the typed Value functions, no reflection, no allocation, and the row
// stays on summary's stack. It replaced knobColumns, which walked every
// knob by reflection (Knob.Field, then Value.Set or Convert into a pooled
// row, copied out and cleared) and boxed every Value's result: 0.83–0.87%
// of the 1,000-point 70B sweep's CPU samples (≈ 41.5 k instructions a
// point, now ≈ 640), on the main goroutine, which the sweep's last points
// wait on (docs/design.md "Speed", knob43).
func summary(s *scenario.Plan, r *simulation.Result) output.SummaryRow {
	var row output.SummaryRow
	setKnobColumns(s, &row)
	row.NumGPUs, row.Microbatches = int64(s.GPUs()), int64(s.Microbatches())
	pc := s.Arch().Params()
	row.Params, row.ActiveParams = pc.Total, pc.Active
	if r == nil {
		return row
	}
	row.StepTimeS, row.TokensPerS, row.TokensPerSPerGPU = r.StepTimeS, r.TokensPerS, r.TokensPerSPerGPU
	row.StepP50S, row.StepP99S = r.StepP50S, r.StepP99S
	row.ModelFLOPsPerStep, row.HardwareFLOPsPerStep = r.ModelFLOPsPerStep, r.HardwareFLOPsPerStep
	row.MFU, row.HFU, row.TFLOPsPerGPU = r.MFU, r.HFU, r.TFLOPsPerGPU
	row.BubbleFraction, row.ComputeS, row.HostSyncS = r.BubbleFraction, r.ComputeS, r.HostSyncS
	row.HostBoundS, row.HostIssueS = r.HostBoundS, r.HostIssueS
	row.ExposedTPS, row.ExposedCPS, row.ExposedEPS, row.ExposedDPS, row.ExposedPPS =
		r.ExposedCommS[0], r.ExposedCommS[1], r.ExposedCommS[2], r.ExposedCommS[3], r.ExposedCommS[4]
	row.PeakMemBytes, row.MinPeakMemBytes = output.ByteCount(r.PeakMemBytes), output.ByteCount(r.MinPeakMemBytes)
	row.MemCapacityBytes, row.Fits = output.ByteCount(r.MemCapacityBytes), r.Fits
	row.MemMarginBytes = output.ByteCount(r.MemMarginBytes)
	row.CostUSDPerStep, row.EnergyKWhPerStep = r.CostUSDPerStep, r.EnergyKWhPerStep
	row.Events, row.SimWallS = int64(r.Events), r.SimWallS
	return row
}

// valueFunc is the Value function of the registry's knob path, as the
// func(*Plan) T it must be (T its column's type): the generated
// setKnobColumns calls it directly, with no boxed result. It panics at
// package init on a path or type the registry does not have, which
// TestKnobColumnsGenerated reports first.
func valueFunc[T int64 | float64 | bool | string](path string) func(*scenario.Plan) T {
	k, err := scenario.Lookup(path)
	if err != nil {
		panic("report: " + err.Error())
	}
	f, ok := k.Value.(func(*scenario.Plan) T)
	if !ok {
		panic(fmt.Sprintf("report: %s: Value is a %T, not a func(*scenario.Plan) %T", path, k.Value, *new(T)))
	}
	return f
}

// Steps is steps.arrow: one row per simulated step.
func Steps(r *simulation.Result) []output.StepRow {
	rows := make([]output.StepRow, len(r.Steps))
	for i, st := range r.Steps {
		rows[i] = output.StepRow{Step: int32(st.Step), StepTimeS: st.TimeS, BaseS: st.BaseS,
			SlowestRank: int32(st.SlowestRank), Slowdown: st.Slowdown}
	}
	return rows
}

// Point is a sweep point's summary.arrow row: Summary under the point's
// name and run id, with its error (on one line) when it did not simulate.
func Point(pr sweep.PointResult) output.SummaryRow {
	p := pr.Point
	row := summary(p.Scenario, pr.Result)
	row.Name, row.RunID = p.Name, p.RunID
	if pr.Err != nil {
		row.Error = strings.Join(strings.Fields(pr.Err.Error()), " ")
	}
	return row
}

// Meta is the schema metadata every output file of a run carries: run id,
// scenario name, fidelity and the canonical configuration.
func Meta(r *simulation.Result) map[string]string {
	return map[string]string{
		output.MetaRunID:    r.RunID,
		output.MetaScenario: r.Scenario.Name,
		output.MetaFidelity: r.Scenario.Sim.Fidelity,
		output.MetaConfig:   string(r.Scenario.CanonicalJSON()),
	}
}

// Memory is memory.arrow: every rank's breakdown at its peak (every rank
// of a pipeline stage holds the same).
//
// A stage's row is rounded once and copied to each of its ranks with the
// rank and node filled in: the table has a row per GPU (131,072 at the
// largest scale), its figures one set per stage.
func Memory(r *simulation.Result) []output.MemoryRow {
	stages := make([]output.MemoryRow, len(r.Memory))
	for st, m := range r.Memory {
		stages[st] = output.MemoryRow{Stage: int32(st),
			WeightsBytes: output.ByteCount(m.Weights), GradientsBytes: output.ByteCount(m.Gradients),
			OptimizerBytes: output.ByteCount(m.Optimizer), ActivationsBytes: output.ByteCount(m.Activations),
			BuffersBytes: output.ByteCount(m.Buffers), OverheadBytes: output.ByteCount(m.Overhead),
			TotalBytes: output.ByteCount(m.Total), CapacityBytes: output.ByteCount(r.MemCapacityBytes), Fits: m.Fits,
		}
	}
	rows := output.MappedRows[output.MemoryRow](r.Layout.World()) // every row written next
	for rank := range rows {
		row := &rows[rank]
		*row = stages[r.Layout.CoordOf(rank).PP]
		row.Rank, row.Node = int32(rank), int32(r.Cluster.NodeOf(rank))
	}
	return rows
}

// Links is links.arrow: every directed link's bytes, busy time and
// utilisation (bytes over what its line rate carries in the simulated time).
func Links(r *simulation.Result) []output.LinkRow {
	n, row, _ := LinkRows(r)
	rows := output.MappedRows[output.LinkRow](n) // every row written next
	for i := range rows {
		rows[i] = row(i)
	}
	return rows
}

// LinkRows is Links as a row count, a function giving row i and one giving
// row i's kind alone, for output.WriteLinks, which writes them without
// holding them all. The traffic is computed once, here.
func LinkRows(r *simulation.Result) (n int, row func(i int) output.LinkRow, kind func(i int) string) {
	links, devs := r.Cluster.Links(), r.Cluster.Devices()
	traffic := r.LinkTotals()
	total := r.StepTimeS * float64(r.Scenario.Sim.Steps)
	kind = func(i int) string { return links[i].Kind.String() }
	return len(links), func(i int) output.LinkRow {
		l := &links[i]
		bw := float64(l.Bandwidth)
		bytes, busy := traffic(i)
		u := 0.0
		if total > 0 && bw > 0 {
			u = bytes / (bw * total)
		}
		return output.LinkRow{Link: int32(i), From: devs[l.From].Name, To: devs[l.To].Name, Kind: l.Kind.String(),
			BandwidthBytesPerS: bw, Bytes: output.ByteCount(bytes), BusyNs: busy, Utilization: u}
	}, kind
}

// TimelineDicts are the fixed dictionaries of timeline.arrow's repeated
// strings.
func TimelineDicts() output.TimelineDicts {
	return output.TimelineDicts{Stream: parallel.StreamNames, Kind: parallel.KindNames,
		Group: []string{"", "tp", "cp", "ep", "dp", "pp", "edp"}}
}

// timelineBatch is how many rows Timeline hands over at a time.
const timelineBatch = 1 << 16

// Timeline streams the timeline rows of the given ranks (rank by rank,
// tasks in issue order) to write in batches; it stops at write's first
// error and returns it, and a cancelled ctx stops it between two batches.
func Timeline(ctx context.Context, r *simulation.Result, ranks []int, write func([]output.TimelineRow) error) error {
	buf := output.TimelineRows(timelineBatch)
	var werr error
	r.Tasks(ranks, func(t simulation.TaskRecord) {
		if werr != nil {
			return
		}
		buf = append(buf, output.TimelineRow{Step: int32(t.Step), Rank: int32(t.Rank), Node: int32(t.Node),
			Stream: t.Stream, Kind: t.Kind, Name: t.Name, Layer: int32(t.Layer), Microbatch: int32(t.Microbatch),
			Chunk: int32(t.Chunk), StartNs: t.StartNs, EndNs: t.EndNs, FLOPs: t.FLOPs, Bytes: output.ByteCount(t.Bytes), Group: t.Group})
		if len(buf) == timelineBatch {
			if werr = ctx.Err(); werr == nil {
				werr = write(buf)
			}
			buf = buf[:0]
		}
	})
	if werr != nil {
		return werr
	}
	if len(buf) > 0 {
		return write(buf)
	}
	return nil
}

// RunJSON is `simtrain run --format json`'s line for one result: exactly
// the keys docs/scenario-format.md lists ("Machine-readable results on
// stdout").
func RunJSON(r *simulation.Result) map[string]any {
	exposed := map[string]float64{}
	for i, k := range simulation.ExposedKinds {
		exposed[k] = r.ExposedCommS[i]
	}
	return map[string]any{
		"name":                    r.Scenario.Name,
		"run_id":                  r.RunID,
		"step_time_s":             r.StepTimeS,
		"tokens_per_s":            r.TokensPerS,
		"tokens_per_s_per_gpu":    r.TokensPerSPerGPU,
		"model_flops_per_step":    r.ModelFLOPsPerStep,
		"hardware_flops_per_step": r.HardwareFLOPsPerStep,
		"mfu":                     r.MFU,
		"hfu":                     r.HFU,
		"tflops_per_gpu":          r.TFLOPsPerGPU,
		"peak_mem_bytes":          r.PeakMemBytes,
		"mem_capacity_bytes":      r.MemCapacityBytes,
		"mem_margin_bytes":        r.MemMarginBytes,
		"fits":                    r.Fits,
		"bubble_fraction":         r.BubbleFraction,
		"exposed_comm_s":          exposed,
		"sim_wall_s":              r.SimWallS,
		"events":                  r.Events,
	}
}

// gib is bytes per GiB, the unit of the validation table's memory columns.
const gib = 1 << 30

// Validation is validation.arrow: one row per validated case, NaN figures
// for a case that did not simulate.
func Validation(cases []validation.Case) []output.ValidationRow {
	out := make([]output.ValidationRow, 0, len(cases))
	nan := math.NaN()
	for _, v := range cases {
		r := output.ValidationRow{Name: v.Name, Group: v.Group, GPU: v.GPU, ParallelStyle: v.Style}
		r.Measured, r.Predicted, r.MeasuredStepTimeS, r.PredictedStepTimeS, r.RelError, r.AbsError = nan, nan, nan, nan, nan, nan
		r.MeasuredPeakMemGiB, r.PredictedPeakMemGiB, r.MemRelError, r.MemMarginGiB = nan, nan, nan, nan
		if v.Plan != nil {
			r.RunID, r.Source, r.NumGPUs = v.Plan.RunID(), v.Plan.Expect.Source, int64(v.Plan.GPUs())
			r.Metric, _ = v.Plan.Expect.Metric()
			r.FLOPsConvention = v.Plan.Expect.FLOPsConvention
		}
		if v.Err != nil {
			r.Failure = v.Err.Error()
		} else {
			c := v.Comparison
			r.Fidelity, r.Metric, r.FLOPsConvention = v.Fidelity, c.Metric, c.Convention
			r.Measured, r.Predicted = c.Measured, c.Predicted
			r.MeasuredStepTimeS, r.PredictedStepTimeS = c.MeasuredStepTimeS, c.PredictedStepTimeS
			r.RelError, r.AbsError = c.Error, math.Abs(c.Error)
			r.Fits, r.SimWallS = v.Result.Fits, v.Result.SimWallS
			r.PredictedPeakMemGiB = v.Result.PeakReservedBytes / gib
			r.MemMarginGiB = v.Result.MemMarginBytes / gib
			if c.HasMemory {
				r.MeasuredPeakMemGiB, r.MemRelError = c.MeasuredMemBytes/gib, c.MemError
			}
		}
		out = append(out, r)
	}
	return out
}

// ValidationMeta is validation.arrow's schema metadata: the set's step-time
// MAPE, median and worst error, and the peak-memory MAPE and worst error
// when some case publishes a peak memory.
func ValidationMeta(sum validation.Summary) map[string]string {
	meta := map[string]string{
		"mape":       fmt.Sprintf("%g", sum.All.MAPE),
		"median_ape": fmt.Sprintf("%g", sum.All.Median),
		"max_ape":    fmt.Sprintf("%g", sum.All.Worst),
	}
	if sum.Memory.Rows > 0 {
		meta["memory_mape"] = fmt.Sprintf("%g", sum.Memory.MAPE)
		meta["memory_max_ape"] = fmt.Sprintf("%g", sum.Memory.Worst)
	}
	return meta
}
