package main

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/simtrain/simtrain/sim/network"
	"github.com/simtrain/simtrain/sim/scenario"

	"github.com/simtrain/simtrain/sim/output/numfmt"
)

// usageError marks an error caused by the command line (bad flag, unknown
// name, out-of-range value); main exits with status 2 for it, 1 otherwise.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usageErrorf builds a usageError. Messages name the flag and the valid
// choices, on one line.
func usageErrorf(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// checkChoice returns a usage error unless value is one of choices.
func checkChoice(flag, value string, choices ...string) error {
	if slices.Contains(choices, value) {
		return nil
	}
	return usageErrorf("--%s: unknown value %q (valid: %s)", flag, value, strings.Join(choices, ", "))
}

// writeJSONLine writes v as one compact JSON object and a newline.
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// newTable returns a tabwriter for aligned, right-padded table output.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
}

// fidelityFlag parses an optional --fidelity override: nil when the flag is
// empty (each scenario's sim.fidelity applies).
func fidelityFlag(v string) (*network.Fidelity, error) {
	if v == "" {
		return nil, nil
	}
	f, err := network.ParseFidelity(v)
	if err != nil {
		return nil, usageErrorf("--fidelity: %v", err)
	}
	return &f, nil
}

// maxWorkersPerCPU bounds --workers: simulations are CPU-bound, so workers
// beyond a few per CPU only multiply memory (each holds a task graph).
const maxWorkersPerCPU = 4

// checkWorkers validates a --workers value: 0 (one per CPU) up to
// maxWorkersPerCPU per CPU, at least 8.
func checkWorkers(n int) error {
	limit := max(8, maxWorkersPerCPU*runtime.NumCPU())
	if n < 0 || n > limit {
		return usageErrorf("--workers: %d is not between 0 (one per CPU) and %d (%d per CPU on this machine)", n, limit, maxWorkersPerCPU)
	}
	return nil
}

// fidelityOverride turns a --fidelity override into the scenario override
// it is: nil when the flag is empty.
func fidelityOverride(f *network.Fidelity) []scenario.Override {
	if f == nil {
		return nil
	}
	return []scenario.Override{{Path: "sim.fidelity", Value: f.String()}}
}

// groupedInt formats an integer count with thousands separators (16,384).
func groupedInt[T ~int | ~int32 | ~int64](n T) string { return numfmt.Grouped(float64(n)) }
