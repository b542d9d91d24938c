package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the real command.
func newCollectiveCmd() *cobra.Command {
	return &cobra.Command{Use: "collective", Short: "(not built yet)", RunE: func(*cobra.Command, []string) error { return errors.New("collective: not built yet") }}
}
