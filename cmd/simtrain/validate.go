package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the real command.
func newValidateCmd() *cobra.Command {
	return &cobra.Command{Use: "validate", Short: "(not built yet)", RunE: func(*cobra.Command, []string) error { return errors.New("validate: not built yet") }}
}
