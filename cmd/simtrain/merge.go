package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the real command.
func newMergeCmd() *cobra.Command {
	return &cobra.Command{Use: "merge", Short: "(not built yet)", RunE: func(*cobra.Command, []string) error { return errors.New("merge: not built yet") }}
}
