package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/simtrain/simtrain/sim/scenario"
)

// countValue is a flag holding a positive count written as simtrain writes
// counts everywhere: 2T, 1.5B, 300M, 15e12 (parseCount). Every token and
// parameter count flag uses it, so `--tokens 2T` means the same on every
// command.
type countValue struct{ v *float64 }

func (c countValue) String() string {
	if c.v == nil || *c.v == 0 {
		return "0"
	}
	return fmtCount(*c.v)
}

func (c countValue) Set(s string) error {
	v, err := parseCount(s)
	if err != nil {
		return err
	}
	*c.v = v
	return nil
}

func (countValue) Type() string { return "count" }

// countVar defines a count flag (see countValue).
func countVar(f *pflag.FlagSet, p *float64, name, usage string) {
	f.Var(countValue{p}, name, usage)
}

// flagError turns a flag parsing error into a usage error, suggesting the
// closest flag the command has for an unknown one (`--fromat`: did you
// mean --format?), by the same rule as unknown scenario fields.
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		return &usageError{err}
	}
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	best := scenario.Closest(name, names)
	if best == "" {
		return &usageError{fmt.Errorf("%s (see simtrain %s --help)", msg, cmd.Name())}
	}
	return &usageError{fmt.Errorf("%s; did you mean --%s?", msg, best)}
}
