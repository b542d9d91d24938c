package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the real command.
func newTopologyCmd() *cobra.Command {
	return &cobra.Command{Use: "topology", Short: "(not built yet)", RunE: func(*cobra.Command, []string) error { return errors.New("topology: not built yet") }}
}
