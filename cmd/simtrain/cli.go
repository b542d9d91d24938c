package main

import (
	"bufio"
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

// newTable returns a tabwriter for aligned, right-padded table output,
// whose Flush writes the table to w in a few large writes.
func newTable(w io.Writer) *table {
	buf := bufio.NewWriterSize(w, 64<<10)
	return &table{tabwriter.NewWriter(buf, 0, 0, 2, ' ', tabwriter.AlignRight), buf}
}

// table is a tabwriter over a buffer. Why: a tabwriter hands its output
// on a cell and a pad at a time, each a write system call on an
// unbuffered os.Stdout: `sweep --dry-run` of the bundled 1,000-point 70B
// sweep spent ≈ 54% of its CPU in them (perf, issue 18).
type table struct {
	*tabwriter.Writer
	buf *bufio.Writer
}

// Flush writes the table's rows, aligned, to the underlying writer.
func (t *table) Flush() error {
	if err := t.Writer.Flush(); err != nil {
		return err
	}
	return t.buf.Flush()
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

// overridesFlow reports whether ovs set sim.fidelity to flow: the last
// override of the field decides, as scenario.Load applies them in order.
func overridesFlow(ovs []scenario.Override) bool {
	flow := false
	for _, o := range ovs {
		if o.Path == "sim.fidelity" {
			flow = strings.Trim(strings.TrimSpace(o.Value), `"'`) == network.Flow.String()
		}
	}
	return flow
}

// groupedInt formats an integer count with thousands separators (16,384).
func groupedInt[T ~int | ~int32 | ~int64](n T) string { return numfmt.Grouped(float64(n)) }
