package sweep

import (
	"fmt"
	"strings"
)

// MaxSweepPoints bounds the combinations a sweep file may ask for. Loading
// enumerates and validates every point (about 50 µs each on the project's
// machines), so a million points take about a minute before the first
// simulation; a file with more is almost certainly a mistake (one list too
// many) and would otherwise run away at load.
const MaxSweepPoints = 1 << 20

// maxSweepPoints is the bound in force: MaxSweepPoints, lowered by the
// fuzz test so that each input stays quick.
var maxSweepPoints = MaxSweepPoints

// checkSize refuses, before enumerating, a sweep whose listed values alone
// multiply beyond MaxSweepPoints, naming each field's count.
func (sw *Sweep) checkSize() error {
	product := 1.0
	var parts []string
	for _, f := range sw.Fields {
		if f.Auto {
			continue
		}
		product *= float64(len(f.nodes))
		parts = append(parts, fmt.Sprintf("%s (%d)", f.Path, len(f.nodes)))
	}
	if product > float64(maxSweepPoints) {
		return fmt.Errorf("sweep: %s = %.3g combinations, more than the %d a sweep may hold; split it into several sweeps or list fewer values",
			strings.Join(parts, " × "), product, maxSweepPoints)
	}
	return nil
}

// checkProgress is called while enumerating: it stops a sweep whose auto
// fields multiply the points beyond MaxSweepPoints, and a cancelled load.
func (sw *Sweep) checkProgress() error {
	if len(sw.points) > maxSweepPoints {
		return fmt.Errorf("sweep: more than %d points with the auto fields' values; bound them with {auto: true, max: N} or list fewer values", maxSweepPoints)
	}
	if sw.ctx != nil {
		return sw.ctx.Err()
	}
	return nil
}
