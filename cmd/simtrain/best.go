package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// PLACEHOLDER: replaced by the real command.
func newBestCmd() *cobra.Command {
	return &cobra.Command{Use: "best", Short: "(not built yet)", RunE: func(*cobra.Command, []string) error { return errors.New("best: not built yet") }}
}
