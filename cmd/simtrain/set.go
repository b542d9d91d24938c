package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/simtrain/simtrain/sim/scenario"
)

// setHelp is the --set flag's help line, the same on every command.
const setHelp = "override a scenario field: dotted.field=value, checked like the YAML (repeatable; e.g. parallel.tp=8, training.recompute=full, training.recompute_modules=[core_attn])"

// addSetFlag adds the repeatable --set flag to cmd.
func addSetFlag(cmd *cobra.Command, sets *[]string) {
	cmd.Flags().StringArrayVar(sets, "set", nil, setHelp)
}

// parseSets turns --set FIELD=VALUE flags into scenario overrides, in the
// order given (a later --set of the same field wins). The field must be one
// of the scenario format's; the value is YAML text, checked with the file's
// own fields when the scenario loads.
func parseSets(sets []string) ([]scenario.Override, error) {
	out := make([]scenario.Override, 0, len(sets))
	for _, s := range sets {
		path, value, ok := strings.Cut(s, "=")
		path = strings.TrimSpace(path)
		if !ok || path == "" {
			return nil, usageErrorf("--set: %q is not FIELD=VALUE (e.g. parallel.tp=8; the fields are in docs/scenario-format.md)", clipFlag(s))
		}
		if _, err := scenario.Lookup(path); err != nil {
			return nil, usageErrorf("--set: %v", err)
		}
		if strings.TrimSpace(value) == "" {
			return nil, usageErrorf("--set %s: give a value (FIELD=VALUE)", clipFlag(path))
		}
		out = append(out, scenario.Override{Path: path, Value: value})
	}
	return out, nil
}
