package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the real command.
func newRunCmd() *cobra.Command {
	return &cobra.Command{Use: "run", Short: "(not built yet)", RunE: func(*cobra.Command, []string) error { return errors.New("run: not built yet") }}
}
