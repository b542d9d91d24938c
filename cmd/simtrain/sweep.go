package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the real command.
func newSweepCmd() *cobra.Command {
	return &cobra.Command{Use: "sweep", Short: "(not built yet)", RunE: func(*cobra.Command, []string) error { return errors.New("sweep: not built yet") }}
}
