//go:build knobgen

package report

import (
	"github.com/simtrain/simtrain/sim/output"
	"github.com/simtrain/simtrain/sim/scenario"
)

// setKnobColumns stands in for knobcolumns_gen.go's under the tag knobgen,
// which `go generate ./sim/report` builds the package with, so that the
// generator runs even when the generated file no longer compiles. A
// package built so writes no summary row.
func setKnobColumns(*scenario.Plan, *output.SummaryRow) {
	panic("report: built with -tags knobgen, without knobcolumns_gen.go: only the generator runs")
}
