package hardware

import (
	"fmt"
	"maps"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Setting gives one calibration entry (data/calibration.yaml) another
// value, written as the file writes it (0.9, 2.5ms).
type Setting struct{ Name, Value string }

// Calibration is a set of settings applied when a GPU is resolved: what
// `simtrain calibrate` and `validate --cv` pass down with a scenario to
// evaluate a fitted constant at several values in one process. Nil is the
// committed table. It is a value passed along, never global state.
type Calibration []Setting

// FitSpec is how `simtrain calibrate` refits a calibration entry from
// published runs (the entry's fit: block): the grid of values it tries,
// the rows of the validation set it scores them on, the entry it is
// fitted jointly with, and the value it falls back to when no row is left
// to fit it on (a leave-one-source-out fold without its rows).
type FitSpec struct {
	Grid []string `yaml:"grid"`
	// Rows filters the validation rows: Arch keeps the rows on GPUs of
	// those architectures; Uses keeps the rows whose scenario applies the
	// entry (only those rows move with it).
	Rows struct {
		Arch []string `yaml:"arch,omitempty"`
		Uses bool     `yaml:"uses,omitempty"`
	} `yaml:"rows"`
	// With names an entry fitted on the same grid pass (the product of
	// both grids); it is declared on one of the two.
	With  string `yaml:"with,omitempty"`
	Prior string `yaml:"prior"`
}

// FitEntry is a calibration entry fitted on published runs.
type FitEntry struct {
	Name, Value string
	Fit         FitSpec
}

// FittedOnRuns lists the calibration entries with a fit: block, in the
// file's order.
func FittedOnRuns() []FitEntry {
	c := mustLoad()
	out := make([]FitEntry, 0, len(c.calOrder))
	for _, n := range c.calOrder {
		if e := c.cal[n]; e.fit != nil {
			out = append(out, FitEntry{Name: n, Value: e.raw.Value, Fit: *e.fit})
		}
	}
	return out
}

// CalibrationFile is data/calibration.yaml as built into the binary.
func CalibrationFile() []byte {
	data, err := dataFS.ReadFile("data/calibration.yaml")
	if err != nil {
		panic(err) // embedded: a build defect
	}
	return data
}

// withCalibration is the catalog with cal's settings in its table; c
// itself when cal is empty. Errors name the unknown entry or bad value.
func (c *catalog) withCalibration(cal Calibration) (*catalog, error) {
	if len(cal) == 0 {
		return c, nil
	}
	cc := *c
	cc.cal = maps.Clone(c.cal)
	for _, s := range cal {
		e, ok := cc.cal[s.Name]
		if !ok {
			return nil, fmt.Errorf("calibration %q: unknown entry (valid: %s)", s.Name, strings.Join(c.calOrder, ", "))
		}
		e.raw = yaml.Node{Kind: yaml.ScalarNode, Value: s.Value}
		cc.cal[s.Name] = e
	}
	return &cc, nil
}

// LookupGPUCalibrated is LookupGPU with cal applied to the calibration
// table (nil: LookupGPU).
func LookupGPUCalibrated(name string, cal Calibration) (GPU, error) {
	if len(cal) == 0 {
		return LookupGPU(name)
	}
	c := mustLoad()
	rec, err := c.gpuRecord(name)
	if err != nil {
		return GPU{}, err
	}
	cc, err := c.withCalibration(cal)
	if err != nil {
		return GPU{}, err
	}
	return cc.resolveGPU(rec, 0)
}

// ParseGPUCalibrated is ParseGPU with cal applied to the calibration table.
func ParseGPUCalibrated(data []byte, cal Calibration) (GPU, error) {
	var rec GPURecord
	if err := strictDecode(data, &rec); err != nil {
		return GPU{}, err
	}
	c, err := load()
	if err != nil {
		return GPU{}, err
	}
	cc, err := c.withCalibration(cal)
	if err != nil {
		return GPU{}, err
	}
	return cc.resolveGPU(rec, 0)
}
