package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the real command.
func newEstimateCmd() *cobra.Command {
	return &cobra.Command{Use: "estimate", Short: "(not built yet)", RunE: func(*cobra.Command, []string) error { return errors.New("estimate: not built yet") }}
}
