// Package sim is simtrain's Go API in one import: load a scenario, simulate
// it, sweep it, compare it with a published run. It holds no logic of its
// own; each call is the owning package's, re-exported:
//
//	sim/scenario    parse and resolve a scenario file into a Plan (the knob registry)
//	sim/simulation  play a Plan's training steps → Result
//	sim/report      a Result → the rows of summary, memory, links, timeline, validation
//	sim/sweep       a sweep file → numbered points, evaluated on workers
//	sim/validation  simulated vs published runs, accuracy statistics
//
// No package of simtrain imports sim; the CLI uses the packages directly.
package sim

import (
	"context"

	"github.com/simtrain/simtrain/sim/output"
	"github.com/simtrain/simtrain/sim/report"
	"github.com/simtrain/simtrain/sim/scenario"
	"github.com/simtrain/simtrain/sim/simulation"
	"github.com/simtrain/simtrain/sim/sweep"
	"github.com/simtrain/simtrain/sim/validation"
)

type (
	// Plan is a resolved scenario (scenario.Plan).
	Plan = scenario.Plan
	// Override sets a scenario field from outside the file.
	Override = scenario.Override
	// Options adjust a run (simulation.Options).
	Options = simulation.Options
	// Result is what a run produced (simulation.Result).
	Result = simulation.Result
	// Sweep is a loaded sweep file (sweep.Sweep).
	Sweep = sweep.Sweep
	// Comparison is a run set against its published figure.
	Comparison = validation.Comparison
)

// Load reads and resolves a scenario file (scenario.Load).
func Load(path string, overrides ...Override) (*Plan, error) {
	return scenario.Load(path, overrides...)
}

// Parse resolves a scenario document (scenario.Parse).
func Parse(data []byte, overrides ...Override) (*Plan, error) {
	return scenario.Parse(data, overrides...)
}

// Run simulates a plan's steps (simulation.Run).
func Run(ctx context.Context, p *Plan, opt Options) (*Result, error) {
	return simulation.Run(ctx, p, opt)
}

// LoadSweep reads a sweep file (sweep.Load).
func LoadSweep(path string, opt sweep.Options) (*Sweep, error) { return sweep.Load(path, opt) }

// Compare sets a result against its scenario's expect: block
// (validation.Compare).
func Compare(res *Result) (Comparison, error) { return validation.Compare(res) }

// Summary is the summary.arrow row of a plan and its result
// (report.Summary).
func Summary(p *Plan, r *Result) output.SummaryRow { return report.Summary(p, r) }
