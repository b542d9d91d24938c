package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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
// mean --format?).
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		return &usageError{err}
	}
	best, bestD := "", 3 // suggest only within two edits, or a prefix
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		d := editDistance(name, f.Name)
		if strings.HasPrefix(f.Name, name) && len(name) >= 3 {
			d = min(d, 1)
		}
		if d < bestD || d == bestD && f.Name < best {
			best, bestD = f.Name, d
		}
	})
	if best == "" {
		return &usageError{fmt.Errorf("%s (see simtrain %s --help)", msg, cmd.Name())}
	}
	return &usageError{fmt.Errorf("%s; did you mean --%s?", msg, best)}
}

// editDistance is the Levenshtein distance between two flag names.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
